package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	promclient "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/supervaize/supervaizer-go"
	svotel "github.com/supervaize/supervaizer-go/otel"
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
// all when neither SUPERVAIZER_METRICS_ADDR nor an OTLP endpoint is set.
// The metrics server listens at once and logs the address it bound.
func setupTelemetry(ctx context.Context, getenv func(string) string, logger *slog.Logger) (*telemetry, error) {
	t := &telemetry{}
	metricsAddr := strings.TrimSpace(getenv(envMetricsAddr))
	otlp := strings.TrimSpace(getenv(envOTLPEndpoint)) != "" || strings.TrimSpace(getenv(envOTLPTraces)) != ""
	if metricsAddr == "" && !otlp {
		return t, nil
	}
	cfg := svotel.Config{Propagator: propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})}
	cfg.TracerProvider = noop.NewTracerProvider()
	if otlp {
		exp, err := otlptracehttp.New(ctx) // reads the OTEL_EXPORTER_OTLP_* variables
		if err != nil {
			return nil, fmt.Errorf("%s: %w", envOTLPEndpoint, err)
		}
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp))
		cfg.TracerProvider = tp
		t.shutdown = append(t.shutdown, tp.Shutdown)
		logger.Info("traces are exported over OTLP/HTTP", slog.String("endpoint_variable", envOTLPEndpoint))
	}
	var mp *sdkmetric.MeterProvider
	if metricsAddr != "" {
		reg := promclient.NewRegistry()
		exp, err := prometheus.New(prometheus.WithRegisterer(reg))
		if err != nil {
			return nil, errors.Join(fmt.Errorf("%s: %w", envMetricsAddr, err), t.Shutdown(ctx))
		}
		mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))
		t.shutdown = append(t.shutdown, mp.Shutdown)
		ln, err := net.Listen("tcp", metricsAddr)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("%s=%q: %w", envMetricsAddr, metricsAddr, err), t.Shutdown(ctx))
		}
		mux := http.NewServeMux()
		mux.Handle("GET "+metricsPath, promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		t.shutdown = append(t.shutdown, srv.Shutdown)
		logger.Info("metrics listening", slog.String("url", "http://"+ln.Addr().String()+metricsPath))
	} else {
		mp = sdkmetric.NewMeterProvider() // no reader: metrics are not recorded
		t.shutdown = append(t.shutdown, mp.Shutdown)
	}
	cfg.MeterProvider = mp
	obs, err := svotel.New(cfg)
	if err != nil {
		return nil, errors.Join(err, t.Shutdown(ctx))
	}
	t.option = supervaizer.WithObserver(obs)
	return t, nil
}
