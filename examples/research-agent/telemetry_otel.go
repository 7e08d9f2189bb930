//go:build telemetry

package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
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

// startTelemetry installs the OpenTelemetry observer on t: OTLP/HTTP traces
// when otlp, a Prometheus /metrics at metricsAddr when it is set (loopback
// only in local mode). What it started is in t.shutdown, even when it fails.
func startTelemetry(ctx context.Context, t *telemetry, metricsAddr string, otlp, localMode bool, logger *slog.Logger) error {
	cfg := svotel.Config{Propagator: propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})}
	cfg.TracerProvider = noop.NewTracerProvider()
	if otlp {
		exp, err := otlptracehttp.New(ctx) // reads the OTEL_EXPORTER_OTLP_* variables
		if err != nil {
			return fmt.Errorf("%s: %w", envOTLPEndpoint, err)
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
			return errors.Join(fmt.Errorf("%s: %w", envMetricsAddr, err))
		}
		mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))
		t.shutdown = append(t.shutdown, mp.Shutdown)
		if host, _, err := net.SplitHostPort(metricsAddr); localMode && (err != nil || (host != "localhost" && !loopback.Addr(host))) {
			return errors.Join(fmt.Errorf("%s=%q: local mode listens only on a loopback address: use 127.0.0.1:PORT, or turn local mode off (%s)",
				envMetricsAddr, metricsAddr, envLocalMode))
		}
		ln, err := net.Listen("tcp", metricsAddr)
		if err != nil {
			return errors.Join(fmt.Errorf("%s=%q: %w", envMetricsAddr, metricsAddr, err))
		}
		if localMode && !loopback.Addr(ln.Addr().String()) {
			_ = ln.Close()
			return errors.Join(fmt.Errorf("%s=%q: local mode listens only on a loopback address, not on %s", envMetricsAddr, metricsAddr, ln.Addr()))
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
		return err
	}
	t.option = supervaizer.WithObserver(obs)
	return nil
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
