// Command research-agent is a complete Supervaizer v2 agent built on the
// public API of supervaizer-go: a research agent that drafts a brief on a
// topic, has an operator review it, and sends the approved brief to the
// workspace's contacts.
//
// Run it in local mode, with no Studio and no configuration:
//
//	make run    # SUPERVAIZER_LOCAL_MODE=true go run -C examples/research-agent .
//
// The OpenTelemetry exporters (OTLP traces, Prometheus /metrics) are built
// in with -tags telemetry only: they bring gRPC and protobuf, whose package
// initialisation alone costs the process about 5 MiB of memory, used or not.
// make run adds the tag when SUPERVAIZER_METRICS_ADDR or an OTLP endpoint is
// set; a build without it that is asked for telemetry stops and says so.
//
// It is configured from the environment only: SUPERVAIZER_ADDR (default
// 127.0.0.1:8080), SUPERVAIZER_DATA_DIR (default: the agent's own folder in
// the OS temp dir, store.ControllerPath), SUPERVAIZER_DATABASE_URL (a PostgreSQL URL: the state and the event
// stream are then shared by every instance started with it, instead of the
// local file; SUPERVAIZER_DATABASE_SCHEMA, SUPERVAIZER_INSTANCE_ID and
// SUPERVAIZER_IDEMPOTENCY_LEASE go with it), SUPERVAIZER_STORE (memory keeps
// nothing across restarts), SUPERVAIZER_LOCAL_MODE, RESEARCH_AGENT_SEND_DELAY
// (how long an approved brief waits before it is sent; job.stop recalls it
// meanwhile), RESEARCH_AGENT_DELEGATE_URL (another A2A agent the gathering
// of sources is delegated to, delegate.go; RESEARCH_AGENT_DELEGATE_API_KEY
// and RESEARCH_AGENT_DELEGATE_ALLOW_LOOPBACK go with it), and the variables
// the SDK reads
// (SUPERVAIZER_API_KEY, SUPERVAIZER_SERVER_ID, SUPERVAIZER_PUBLIC_URL, the
// SUPERVAIZER_WORKSPACE_AUTH_* settings, and SUPERVAIZE_API_URL,
// SUPERVAIZE_API_KEY, SUPERVAIZE_WORKSPACE_ID to attach it to Studio).
// SUPERVAIZER_METRICS_ADDR serves a Prometheus /metrics at that address, and
// OpenTelemetry's OTEL_EXPORTER_OTLP_ENDPOINT exports the traces over
// OTLP/HTTP (telemetry.go, docs/observability.md).
//
// It is a Go module of its own, so that its PostgreSQL support
// (github.com/supervaize/supervaizer-go/store/postgres) stays out of the SDK's
// build.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/store"
)

// shutdownTimeout bounds the stop of the background deliveries after the
// SDK server has stopped.
const shutdownTimeout = 15 * time.Second

// crashpoints wraps the local store in a crashpoint build (crashpoint.go,
// go build -tags crashpoint, for the crash tests); nil otherwise.
var crashpoints func(getenv func(string) string, st store.Store) store.Store

func main() {
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(logger, os.Getenv, os.Stdout); err != nil {
		logger.Error("research agent stopped", "error", err)
		os.Exit(1)
	}
}

// run serves the agent until SIGINT or SIGTERM, then shuts down cleanly.
func run(logger *slog.Logger, getenv func(string) string, out io.Writer) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	cfg, err := loadConfig(getenv)
	if err != nil {
		return err
	}
	cfg.Logger = logger
	tel, err := setupTelemetry(ctx, getenv, cfg.LocalMode, logger) // telemetry.go
	if err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), telemetryShutdownT)
		defer cancel()
		_ = tel.Shutdown(sctx)
	}()
	cfg.Observer = tel.option
	if crashpoints != nil {
		cfg.wrapStore = func(st store.Store) store.Store { return crashpoints(getenv, st) }
	}
	a, err := newApp(cfg)
	if err != nil {
		return err
	}
	defer a.Close()
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return errors.Join(err, a.Shutdown(context.Background()))
	}
	// Registers with Studio when attached (and checks the handshake), refuses a
	// configuration that could never authorize a call, and logs the mode, the
	// API key to send and what is not configured.
	// Then resumes the deliveries a previous run left unfinished.
	if err := a.Start(ctx); err != nil {
		return errors.Join(err, ln.Close(), a.Shutdown(context.Background()))
	}
	if a.srv.Mode() == supervaizer.ModeLocal {
		printTryIt(out, "http://"+ln.Addr().String(), a.srv.APIKey())
	}
	// Serve applies the SDK's HTTP limits (header, read and idle timeouts, header
	// size) and, once ctx is cancelled, closes the event streams and drains the
	// calls in progress.
	serveErr := a.srv.Serve(ctx, ln)
	stop() // a second signal kills the process
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	return errors.Join(serveErr, a.Shutdown(sctx)) // the background deliveries
}

// printTryIt prints a few curl commands to try the agent in local mode. The
// key is printed only when it is the well-known local-mode key.
func printTryIt(w io.Writer, base, apiKey string) {
	key := "$SUPERVAIZER_API_KEY"
	if apiKey == supervaizer.LocalModeAPIKey {
		key = apiKey
	}
	// The workspace is the one A2A calls get in local mode ("local"), so
	// that the text message below sees the job the job.start curl starts.
	const request = `"request_id":"try-%d","actor":{"user_id":"you"},"workspace":{"id":"local"},"mission_id":"mission-1","agent_slug":"research-agent"`
	rpc := func(n int, method, params string) string {
		return fmt.Sprintf(`curl -s %s/a2a -H 'X-API-Key: %s' -H 'Content-Type: application/json' \
  -d '{"jsonrpc":"2.0","id":%d,"method":"%s","params":%s}'`, base, key, n, method, params)
	}
	fmt.Fprintf(w, `
Research agent running in local mode (no Studio). Try it:

  # see and use its surfaces in your browser (the local preview)
  #   %s/_preview/

  # the Agent Card
  curl -s %s/.well-known/agent-card.json

  # load the job.start form
  %s

  # start a job (retrying with the same idempotency_key returns the same result)
  %s

  # ask it about its jobs (an A2A text message, in the same local workspace)
  %s

  # watch the effects
  curl -sN %s/a2a/events -H 'X-API-Key: %s'

`, base, base,
		rpc(1, supervaizer.MethodSurfaceLoad, `{"surface_request":{`+fmt.Sprintf(request, 1)+`,"surface":"job.start","input":{}}}`),
		rpc(2, supervaizer.MethodActionInvoke, `{"action_request":{`+fmt.Sprintf(request, 2)+`,"surface":"job.start","action":"job.start","job_id":"job-1","idempotency_key":"try-job-1","input":{"topic_id":"eu-battery-market"}}}`),
		rpc(3, "message/send", `{"message":{"kind":"message","role":"user","messageId":"try-3","parts":[{"kind":"text","text":"How many jobs are there?"}]}}`),
		base, key)
}
