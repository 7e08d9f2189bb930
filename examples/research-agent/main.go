// Command research-agent is a complete Supervaizer v2 agent built on the
// public API of supervaizer-go: a research agent that drafts a brief on a
// topic, has an operator review it, and sends the approved brief to the
// workspace's contacts.
//
// Run it in local mode, with no Studio and no configuration:
//
//	make run    # SUPERVAIZER_LOCAL_MODE=true go run ./examples/research-agent
//
// It is configured from the environment only: SUPERVAIZER_ADDR (default
// 127.0.0.1:8080), SUPERVAIZER_DATA_DIR (default: a folder in the OS temp
// dir), SUPERVAIZER_LOCAL_MODE, and the variables the SDK reads
// (SUPERVAIZER_API_KEY, SUPERVAIZER_SERVER_ID, SUPERVAIZER_PUBLIC_URL, the
// SUPERVAIZER_WORKSPACE_AUTH_* settings, and SUPERVAIZE_API_URL,
// SUPERVAIZE_API_KEY, SUPERVAIZE_WORKSPACE_ID to attach it to Studio).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/studio"
)

// HTTP server timeouts. WriteTimeout stays 0: GET /a2a/events is a
// long-lived stream.
const (
	readHeaderTimeout = 10 * time.Second
	readTimeout       = 60 * time.Second
	idleTimeout       = 120 * time.Second
	shutdownTimeout   = 15 * time.Second
)

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
	a, err := newApp(cfg)
	if err != nil {
		return err
	}
	defer a.Close()
	// Registers with Studio when attached (and checks the handshake); logs
	// the mode and the declared actions without a handler.
	if err := a.srv.Start(ctx); err != nil {
		return errors.Join(err, a.Shutdown(context.Background()))
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return errors.Join(err, a.Shutdown(context.Background()))
	}
	hs := &http.Server{
		Handler:           a.Handler(),
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		IdleTimeout:       idleTimeout,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	base := "http://" + ln.Addr().String()
	logger.Info("research agent listening", "url", base, "mode", a.mode(),
		"key_fingerprint", studio.KeyFingerprint(a.srv.APIKey()), "data", cfg.DBPath)
	if cfg.LocalMode {
		printTryIt(out, base, a.srv.APIKey())
	}

	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return errors.Join(err, a.Shutdown(context.Background()))
	case <-ctx.Done():
	}
	stop() // a second signal kills the process
	logger.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	// The SDK server first: it closes the event streams, which would otherwise
	// keep http.Server.Shutdown waiting, and drains the /a2a calls.
	err = errors.Join(a.Shutdown(sctx), hs.Shutdown(sctx))
	if err == nil {
		logger.Info("stopped")
	}
	return err
}

// printTryIt prints a few curl commands to try the agent in local mode. The
// key is printed only when it is the well-known local-mode key.
func printTryIt(w io.Writer, base, apiKey string) {
	key := "$SUPERVAIZER_API_KEY"
	if apiKey == supervaizer.LocalModeAPIKey {
		key = apiKey
	}
	const request = `"request_id":"try-%d","actor":{"user_id":"you"},"workspace":{"id":"ws-local"},"mission_id":"mission-1","agent_slug":"research-agent"`
	rpc := func(n int, method, params string) string {
		return fmt.Sprintf(`curl -s %s/a2a -H 'X-API-Key: %s' -H 'Content-Type: application/json' \
  -d '{"jsonrpc":"2.0","id":%d,"method":"%s","params":%s}'`, base, key, n, method, params)
	}
	fmt.Fprintf(w, `
Research agent running in local mode (no Studio, workspace authorization bypassed). Try it:

  # the Agent Card
  curl -s %s/.well-known/agent-card.json

  # load the job.start form
  %s

  # start a job (retrying with the same idempotency_key returns the same result)
  %s

  # watch the effects
  curl -sN %s/a2a/events -H 'X-API-Key: %s'

`, base,
		rpc(1, supervaizer.MethodSurfaceLoad, `{"surface_request":{`+fmt.Sprintf(request, 1)+`,"surface":"job.start","input":{}}}`),
		rpc(2, supervaizer.MethodActionInvoke, `{"action_request":{`+fmt.Sprintf(request, 2)+`,"surface":"job.start","action":"job.start","job_id":"job-1","idempotency_key":"try-job-1","input":{"topic_id":"eu-battery-market"}}}`),
		base, key)
}
