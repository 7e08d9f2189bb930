# supervaizer-go: the Go SDK for Supervaizer v2 agent controllers.
GO ?= go
FUZZTIME ?= 30s
FUZZPKGS ?= ./...
# Folder of the published A2A JSON Schemas (a2a-0.2.6.schema.json,
# a2a-0.3.0.schema.json) that make conformance validates the cards against.
# They are third-party files, never copied into this repository.
A2A_SCHEMAS ?= ../shared/schemas/a2a
# Packages whose card tests (every test with Card in its name) also validate
# against the published schemas in a build with the conformance tag.
CONFORMANCE_A2A_PKGS = . ./a2a ./internal/tools/cardcheck
# The example is a module of its own (it imports store/postgres): its card tests
# run from its directory.
EXAMPLE := examples/research-agent
# The interpreter that runs python-slugify for make conformance-slug: the system
# one, where the Debian packages python3-slugify and python3-text-unidecode go.
SLUG_PYTHON ?= /usr/bin/python3
# Every Go module of the repository: the SDK, then the nested modules, which
# have a go.mod of their own so that the SDK's build never includes their
# dependencies (store/postgres: the PostgreSQL driver; examples/research-agent,
# which uses it when SUPERVAIZER_DATABASE_URL is set; e2e/preview: chromedp,
# whose browser tests make test lists as not run, make browser-test runs;
# otel: the OpenTelemetry observer).
# ./... stops at a nested module, so each is tested from its own directory.
MODULES := . store/postgres otel examples/research-agent e2e/preview
# staticcheck, a pinned version run through the Go module proxy (go run
# pkg@version), so that it never enters the go.mod of any module.
STATICCHECK_VERSION ?= v0.8.2
STATICCHECK = $(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -c
# The A2A JavaScript SDK check: its package.json pins @a2a-js/sdk, and
# `npm ci` in this folder installs it (.ci/run does).
A2A_JS_DIR = conformance/a2a-js
# The A2A Go SDK client check: a module of its own (conformance/a2a-go/go.mod),
# so the SDK's go.mod never requires the client.
A2A_GO_DIR = conformance/a2a-go

.DEFAULT_GOAL := help

help: ## List targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN{FS=":.*## "}{n[NR]=$$1; d[NR]=$$2; if (length($$1)>w) w=length($$1)}END{for(i=1;i<=NR;i++) printf "%-*s  %s\n",w,n[i],d[i]}'

# make test collects the tests that did not run in each module in a file of
# its own run (mktemp, removed on exit), listed last: two runs at once never
# share or delete each other's list.
test: lint ## Vet, staticcheck, gofmt, unit and end-to-end tests of every module with the race detector, every benchmark run once; lists the tests that did not run
	@echo "make test: cards checked against the A2A 0.2.6 and 0.3.0 structure; the published A2A schemas and SDK clients are checked by make conformance"
	@skipped=$$(mktemp "$${TMPDIR:-/tmp}/supervaizer-make-test-skipped.XXXXXX") && trap 'rm -f "$$skipped"' EXIT && \
	for m in $(MODULES); do \
	  echo "== go test -race ./... in $$m"; \
	  (cd $$m && $(GO) test -race -count=1 -json ./...) | $(GO) run ./internal/tools/testreport -summary "$$skipped" || exit 1; \
	done && \
	echo "== go test -race -tags telemetry -run '^TestTelemetry' in $(EXAMPLE) (the tests of its OpenTelemetry exporters, built in with that tag only)" && \
	(cd $(EXAMPLE) && $(GO) test -race -count=1 -tags telemetry -run '^TestTelemetry' -json .) | $(GO) run ./internal/tools/testreport -summary "$$skipped" || exit 1; \
	for m in $(MODULES); do \
	  echo "== go test -run '^TestLimit' ./... in $$m (timing and memory limits: limits_test.go files, built only without -race)"; \
	  (cd $$m && $(GO) test -count=1 -run '^TestLimit' ./...) | { grep -v -e 'no test files' -e 'no tests to run' || true; } || exit 1; \
	done && \
	for m in $(MODULES); do \
	  out=$$(cd $$m && $(GO) test -run '^$$' -bench . -benchtime 1x ./... 2>&1) || { printf '%s\n' "$$out"; exit 1; }; \
	done && \
	if [ -s "$$skipped" ]; then printf '\nmake test: every test passed; these did not run (skipped):\n'; cat "$$skipped"; else echo "make test: every test passed and every test ran"; fi

lint: ## go vet and staticcheck (every module, and the conformance, telemetry and test-tool builds), gofmt, go.mod/go.sum tidy (every module), and no tracked executable or file over 2 MB
	@for m in $(MODULES); do \
	  echo "== go vet ./... and staticcheck ./... in $$m"; (cd $$m && $(GO) vet ./... && $(STATICCHECK) ./...) || exit 1; \
	  (cd $$m && $(GO) mod tidy -diff) || { echo "$$m: go.mod/go.sum are not tidy: run go mod tidy there"; exit 1; }; \
	done
	$(GO) vet -tags conformance $(CONFORMANCE_A2A_PKGS) ./internal/slug
	$(STATICCHECK) -tags conformance $(CONFORMANCE_A2A_PKGS) ./internal/slug
	cd $(EXAMPLE) && $(GO) vet -tags conformance . && $(STATICCHECK) -tags conformance .
	cd $(EXAMPLE) && $(GO) vet -tags telemetry . && $(STATICCHECK) -tags telemetry .
	cd $(EXAMPLE) && $(GO) vet -tags crashpoint,pprof . && $(STATICCHECK) -tags crashpoint,pprof .
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || { gofmt -l .; echo "gofmt would change the files above"; exit 1; }
	@bad=$$(git ls-files -z 2>/dev/null | xargs -0 -r sh -c 'elf=$$(printf "\177ELF"); for f; do [ -f "$$f" ] || continue; \
	  if [ "$$(head -c 4 "$$f")" = "$$elf" ] || [ "$$(wc -c < "$$f")" -gt 2000000 ]; then echo "$$f"; fi; done' sh); \
	test -z "$$bad" || { echo "$$bad"; echo "tracked files above are executables or larger than 2 MB: build outputs go untracked (.gitignore)"; exit 1; }

fuzz: ## Run every fuzz target of FUZZPKGS (default ./...) for FUZZTIME (default 30s) each; stops at a failing input (written to testdata/fuzz)
	@out=$$(mktemp); trap 'rm -f $$out' EXIT; \
	for pkg in $$($(GO) list $(FUZZPKGS)); do \
	  dir=$$($(GO) list -f '{{.Dir}}' $$pkg); \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "== $$pkg $$f"; \
	    before=$$(ls "$$dir/testdata/fuzz/$$f" 2>/dev/null | wc -l); \
	    $(GO) test $$pkg -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) 2>&1 | tee $$out; \
	    [ $${PIPESTATUS[0]} -eq 0 ] && continue; \
	    after=$$(ls "$$dir/testdata/fuzz/$$f" 2>/dev/null | wc -l); \
	    if [ "$$after" -eq "$$before" ] && grep -q '^    context deadline exceeded$$' $$out; then \
	      echo "   (no failing input written: Go 1.26's race at the end of -fuzztime, golang/go#75804; continuing)"; continue; \
	    fi; \
	    exit 1; \
	  done; \
	done

conformance: conformance-a2a conformance-a2a-js conformance-a2a-go conformance-slug ## Checks against third-party specifications and SDKs (run by .ci/run after make test)

conformance-a2a: ## Agent Cards against the published A2A JSON Schemas in A2A_SCHEMAS (default ../shared/schemas/a2a)
	@test -f "$(A2A_SCHEMAS)/a2a-0.2.6.schema.json" && test -f "$(A2A_SCHEMAS)/a2a-0.3.0.schema.json" || { \
	  echo "conformance-a2a: the published A2A JSON Schemas are not in A2A_SCHEMAS=$(A2A_SCHEMAS)" >&2; \
	  echo "  set A2A_SCHEMAS to the folder holding a2a-0.2.6.schema.json and a2a-0.3.0.schema.json" >&2; exit 1; }
	SUPERVAIZER_A2A_SCHEMAS="$(abspath $(A2A_SCHEMAS))" $(GO) test -tags conformance -count=1 -run Card $(CONFORMANCE_A2A_PKGS)
	cd $(EXAMPLE) && SUPERVAIZER_A2A_SCHEMAS="$(abspath $(A2A_SCHEMAS))" $(GO) test -tags conformance -count=1 -run Card .

conformance-a2a-js: ## The example's Agent Card through the official A2A JavaScript SDK (node >= 20; npm ci in conformance/a2a-js first)
	@test -d "$(A2A_JS_DIR)/node_modules/@a2a-js/sdk" || { \
	  echo "conformance-a2a-js: @a2a-js/sdk is not installed: run (cd $(A2A_JS_DIR) && npm ci)" >&2; exit 1; }
	@mkdir -p .bin && $(GO) build -C $(EXAMPLE) -o $(CURDIR)/.bin/research-agent .
	cd $(A2A_JS_DIR) && RESEARCH_AGENT_BIN="$(abspath .bin/research-agent)" node --test card.test.mjs

conformance-a2a-go: ## The A2A task methods through the official A2A Go SDK client (github.com/a2aproject/a2a-go v0.3.3), a module of its own
	cd $(A2A_GO_DIR) && $(GO) vet ./... && $(GO) test -race -count=1 ./...

conformance-slug: ## Slugs against the real python-slugify 4.0.0 (Debian python3-slugify, python3-text-unidecode; installed when missing)
	@$(SLUG_PYTHON) -c 'import slugify, text_unidecode' 2>/dev/null || { \
	  echo "conformance-slug: installing python3-slugify and python3-text-unidecode"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-slugify python3-text-unidecode >/dev/null; } || { \
	  echo "conformance-slug: install the Debian packages python3-slugify and python3-text-unidecode (as root)" >&2; exit 1; }
	@dir=$$(mktemp -d) && trap 'rm -rf "$$dir"' EXIT && \
	  $(SLUG_PYTHON) internal/slug/pyref/slugref.py check internal/slug/testdata/python_slugify.json && \
	  $(SLUG_PYTHON) internal/slug/pyref/slugref.py corpus "$$dir/python_slugify_scripts.json" && \
	  $(SLUG_PYTHON) internal/slug/pyref/slugref.py sweep "$$dir/sweep.json" && \
	  SUPERVAIZER_SLUG_REFERENCE="$$dir" $(GO) test -tags conformance -count=1 -run Conformance -v ./internal/slug

apicheck: ## Fail on an incompatible change of the exported API since api/supervaizer-go.apidiff that CHANGELOG.md's Unreleased section does not record under Breaking (internal/tools/apicheck)
	$(GO) run ./internal/tools/apicheck

apibaseline: ## Record the exported API as the baseline of make apicheck (at release time, after CHANGELOG.md gets its release section)
	@mkdir -p api && $(GO) run ./internal/tools/apicheck -record

bench: ## Benchmarks with allocations, every module
	@for m in $(MODULES); do (cd $$m && $(GO) test -run '^$$' -bench . -benchmem ./...) || exit 1; done

cover: ## Test coverage per package, every module
	@for m in $(MODULES); do (cd $$m && $(GO) test -cover ./...) || exit 1; done

# run builds the example and execs it (not go run, which exits 1 on an
# interrupt even when the program stopped cleanly): Ctrl-C ends with the
# agent's own exit status. It builds only what the run needs: the
# OpenTelemetry exporters (-tags telemetry, which brings gRPC and protobuf)
# only when the environment asks for telemetry; make test builds and tests
# both builds.
RUN_TAGS = $(if $(SUPERVAIZER_METRICS_ADDR)$(OTEL_EXPORTER_OTLP_ENDPOINT)$(OTEL_EXPORTER_OTLP_TRACES_ENDPOINT),-tags telemetry)
run: ## Run examples/research-agent on 127.0.0.1:8080 in local mode (no Studio needed)
	@mkdir -p .bin && $(GO) build -C $(EXAMPLE) $(RUN_TAGS) -o $(CURDIR)/.bin/research-agent .
	SUPERVAIZER_LOCAL_MODE=$${SUPERVAIZER_LOCAL_MODE:-true} exec .bin/research-agent

browser-test: ## Browser tests of the local preview in headless Chromium (module e2e/preview; fails without Chromium)
	cd e2e/preview && SUPERVAIZER_TEST_BROWSER=$${SUPERVAIZER_TEST_BROWSER:-1} $(GO) test -race -count=1 ./...

screenshots: ## Regenerate docs/images/preview-*.png from the browser tests
	cd e2e/preview && SUPERVAIZER_TEST_BROWSER=$${SUPERVAIZER_TEST_BROWSER:-1} SUPERVAIZER_SCREENSHOTS=$(CURDIR)/docs/images \
	  $(GO) test -count=1 -run 'TestBrowser(JobStartFlow|InvalidInput|Dashboard|ContactImport)' ./...

loadcheck: ## Loopback load check: /a2a against a bare net/http baseline (PROFILE=dir: a CPU profile of every server and round there; AGENT_TAGS=telemetry: the research agent built with its OpenTelemetry exporters)
	$(GO) run ./internal/tools/loadcheck -go "$(GO)" $(if $(PROFILE),-profile "$(PROFILE)") $(if $(AGENT_TAGS),-agent-tags "$(AGENT_TAGS)")

loadcheck-backends: ## job.start (new key per call) and job.sync of the research agent on memory, bbolt, PostgreSQL x1 and x3 (SUPERVAIZER_TEST_DATABASE_URL, psql; about 2 min; PROFILE=dir: CPU profiles of the agents)
	$(GO) run ./internal/tools/loadcheck -backends -go "$(GO)" -database-url "$$SUPERVAIZER_TEST_DATABASE_URL" $(if $(PROFILE),-profile "$(PROFILE)")

.PHONY: help test lint apicheck apibaseline fuzz bench cover run loadcheck loadcheck-backends conformance conformance-a2a conformance-a2a-js browser-test screenshots conformance-slug
