package main

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/supervaize/supervaizer-go"
)

// The telemetry settings: SUPERVAIZER_METRICS_ADDR serves a Prometheus
// /metrics; OpenTelemetry's standard OTEL_EXPORTER_OTLP_ENDPOINT (or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) exports the traces over OTLP/HTTP.
const (
	envMetricsAddr     = "SUPERVAIZER_METRICS_ADDR"
	envOTLPEndpoint    = "OTEL_EXPORTER_OTLP_ENDPOINT"
	envOTLPTraces      = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	metricsPath        = "/metrics"
	telemetryShutdownT = 5 * time.Second
)

// telemetry is the agent's observability: the SDK option installing the
// OpenTelemetry observer (nil when nothing is configured) and what to stop.
type telemetry struct {
	option   supervaizer.Option
	shutdown []func(context.Context) error
}

// Shutdown flushes the exporters and stops the metrics server.
func (t *telemetry) Shutdown(ctx context.Context) error {
	var errs []error
	for _, f := range t.shutdown {
		errs = append(errs, f(ctx))
	}
	return errors.Join(errs...)
}

// setupTelemetry configures the observer from the environment: nothing at
// all when neither SUPERVAIZER_METRICS_ADDR nor an OTLP endpoint is set, so
// a run without them needs no OpenTelemetry (the build without the
// telemetry tag has none: telemetry_off.go). The metrics server listens at once and
// logs the address it bound. In local mode it stays local as the controller
// does (spec item 68): it listens only on a loopback address (a startup
// error names the address otherwise) and answers 403 to a request whose
// Host is not a loopback name or address.
func setupTelemetry(ctx context.Context, getenv func(string) string, localMode bool, logger *slog.Logger) (*telemetry, error) {
	t := &telemetry{}
	metricsAddr := strings.TrimSpace(getenv(envMetricsAddr))
	otlp := strings.TrimSpace(getenv(envOTLPEndpoint)) != "" || strings.TrimSpace(getenv(envOTLPTraces)) != ""
	if metricsAddr == "" && !otlp {
		return t, nil
	}
	if err := startTelemetry(ctx, t, metricsAddr, otlp, localMode, logger); err != nil {
		return nil, errors.Join(err, t.Shutdown(ctx))
	}
	return t, nil
}
