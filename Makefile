# supervaizer-go: the Go SDK for Supervaizer v2 agent controllers.
GO ?= go
FUZZTIME ?= 30s

.DEFAULT_GOAL := help

help: ## List targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN{FS=":.*## "}{printf "%-12s %s\n",$$1,$$2}'

test: lint ## Vet, gofmt, unit and end-to-end tests with the race detector, every benchmark run once
	$(GO) test -race -count=1 ./...
	@out=$$($(GO) test -run '^$$' -bench . -benchtime 1x ./... 2>&1) || { printf '%s\n' "$$out"; exit 1; }

lint: ## go vet, gofmt, and go.mod/go.sum tidy
	$(GO) vet ./...
	@$(GO) mod tidy -diff || { echo "go.mod/go.sum are not tidy: run go mod tidy"; exit 1; }
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || { gofmt -l .; echo "gofmt would change the files above"; exit 1; }

fuzz: ## Run every fuzz target for FUZZTIME (default 30s) each
	@for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "== $$pkg $$f"; $(GO) test $$pkg -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) || exit 1; \
	  done; \
	done

bench: ## Benchmarks with allocations
	$(GO) test -run '^$$' -bench . -benchmem ./...

cover: ## Test coverage per package
	$(GO) test -cover ./...

# run builds the example and execs it (not go run, which exits 1 on an
# interrupt even when the program stopped cleanly): Ctrl-C ends with the
# agent's own exit status.
run: ## Run examples/research-agent on 127.0.0.1:8080 in local mode (no Studio needed)
	@mkdir -p .bin && $(GO) build -o .bin/research-agent ./examples/research-agent
	SUPERVAIZER_LOCAL_MODE=$${SUPERVAIZER_LOCAL_MODE:-true} exec .bin/research-agent

loadcheck: ## Loopback load check: /a2a against a bare net/http baseline
	$(GO) run ./internal/loadcheck

.PHONY: help test lint fuzz bench cover run loadcheck
