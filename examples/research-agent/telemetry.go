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
	"github.com/supervaize/supervaizer-go/internal/loopback"
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
// The metrics server listens at once and logs the address it bound. In local
// mode it stays local as the controller does (spec item 68): it listens only
// on a loopback address (a startup error names the address otherwise) and
// answers 403 to a request whose Host is not a loopback name or address.
func setupTelemetry(ctx context.Context, getenv func(string) string, localMode bool, logger *slog.Logger) (*telemetry, error) {
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
		if host, _, err := net.SplitHostPort(metricsAddr); localMode && (err != nil || (host != "localhost" && !loopback.Addr(host))) {
			return nil, errors.Join(fmt.Errorf("%s=%q: local mode listens only on a loopback address: use 127.0.0.1:PORT, or turn local mode off (%s)",
				envMetricsAddr, metricsAddr, envLocalMode), t.Shutdown(ctx))
		}
		ln, err := net.Listen("tcp", metricsAddr)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("%s=%q: %w", envMetricsAddr, metricsAddr, err), t.Shutdown(ctx))
		}
		if localMode && !loopback.Addr(ln.Addr().String()) {
			_ = ln.Close()
			return nil, errors.Join(fmt.Errorf("%s=%q: local mode listens only on a loopback address, not on %s", envMetricsAddr, metricsAddr, ln.Addr()), t.Shutdown(ctx))
		}
		mux := http.NewServeMux()
		mux.Handle("GET "+metricsPath, promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		var handler http.Handler = mux
		if localMode {
			handler = localHostsOnly(mux)
		}
		srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
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

// localHostsOnly answers 403 to a request whose Host is not a loopback name
// or address, as the controller does in local mode (DNS rebinding).
func localHostsOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !loopback.Host(r.Host) {
			http.Error(w, "local mode serves only requests addressed to localhost or a loopback IP address", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}
