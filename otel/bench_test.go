package otel_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	supervaizer "github.com/supervaize/supervaizer-go"
	loadfixture "github.com/supervaize/supervaizer-go/internal/tools/loadcheck/fixture"
	svotel "github.com/supervaize/supervaizer-go/otel"
)

// countingExporter is a span exporter that keeps nothing: it counts the
// spans it is given, so that a benchmark checks that spans were recorded
// without its memory growing with b.N.
type countingExporter struct{ spans atomic.Int64 }

func (e *countingExporter) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	e.spans.Add(int64(len(spans)))
	return nil
}

func (e *countingExporter) Shutdown(context.Context) error { return nil }

// benchWriter is the cheapest ResponseWriter (the root's
// BenchmarkInvokeJobState uses the same): it keeps the status and the body
// of the last response and reuses its header map.
type benchWriter struct {
	header http.Header
	status int
	body   []byte
}

func (w *benchWriter) Header() http.Header { return w.header }
func (w *benchWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}

func (w *benchWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.body = append(w.body, p...)
	return len(p), nil
}

// BenchmarkObserver serves the loadcheck fixture controller's calls in
// process, as the root's BenchmarkInvoke (job.start) and
// BenchmarkInvokeJobState (job.sync answering the research agent's job
// state) do: API key, a real Ed25519 workspace token (a verifier cache hit),
// request model, handler, result validation, SSE publish and the response.
// observer=none has no observer; observer=otel has this package's observer
// on a real tracer provider (AlwaysSample, every span exported
// synchronously to an exporter that counts and drops it) and a real meter
// provider (a ManualReader, read once after the loop). Besides ns/op, B/op
// and allocs/op it reports cpu-ns/op, the CPU time of the whole process per
// call (the garbage collector's included), and with the observer spans/op.
// docs/performance.md records the figures ("The OpenTelemetry observer").
func BenchmarkObserver(b *testing.B) {
	calls := []struct {
		name    string
		body    []byte
		bodyCap int
		want    []byte
	}{
		{name: "job.start", body: loadfixture.Body(), bodyCap: 1024, want: []byte(`"type":"job.started"`)},
		{name: "job.sync", body: loadfixture.SyncBody(), bodyCap: 4096, want: []byte(`"job_state":{"job":`)},
	}
	for _, c := range calls {
		b.Run(c.name+"/observer=none", func(b *testing.B) {
			srv, err := loadfixture.NewController()
			if err != nil {
				b.Fatal(err)
			}
			benchServe(b, srv, c.body, c.bodyCap, c.want)
		})
		b.Run(c.name+"/observer=otel", func(b *testing.B) {
			spans := &countingExporter{}
			tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithSyncer(spans))
			reader := sdkmetric.NewManualReader()
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
			b.Cleanup(func() {
				_ = tp.Shutdown(context.Background())
				_ = mp.Shutdown(context.Background())
			})
			obs, err := svotel.New(svotel.Config{TracerProvider: tp, MeterProvider: mp})
			if err != nil {
				b.Fatal(err)
			}
			srv, err := loadfixture.NewController(supervaizer.WithObserver(obs))
			if err != nil {
				b.Fatal(err)
			}
			served := benchServe(b, srv, c.body, c.bodyCap, c.want)
			// Each call made its server span and its handler span (and one
			// per store operation), and was counted once.
			got := spans.spans.Load()
			if got < 2*served {
				b.Fatalf("%d spans exported for %d calls", got, served)
			}
			b.ReportMetric(float64(got)/float64(served), "spans/op")
			if got := callsCounted(b, reader); got != served {
				b.Fatalf("%s counted %d calls, %d served", svotel.MetricCalls, got, served)
			}
		})
	}
}

// benchServe serves body to srv in a loop, after checking that a first call
// succeeds with want in its result; it returns how many calls it served.
func benchServe(b *testing.B, srv http.Handler, body []byte, bodyCap int, want []byte) int64 {
	b.Helper()
	now := time.Now()
	token, err := loadfixture.Token("bench", now.Add(-time.Minute), now.Add(time.Hour))
	if err != nil {
		b.Fatal(err)
	}
	rd := bytes.NewReader(body)
	req, err := http.NewRequest(http.MethodPost, "http://127.0.0.1/a2a", io.NopCloser(rd))
	if err != nil {
		b.Fatal(err)
	}
	req.ContentLength = int64(len(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(supervaizer.HeaderAPIKey, loadfixture.APIKey)
	req.Header.Set(supervaizer.HeaderWorkspaceAuthorization, "Bearer "+token)
	w := &benchWriter{header: make(http.Header, 4), body: make([]byte, 0, bodyCap)}
	serve := func() {
		rd.Reset(body)
		clear(w.header)
		w.status, w.body = 0, w.body[:0]
		srv.ServeHTTP(w, req)
	}
	serve()
	if w.status != http.StatusOK || !bytes.Contains(w.body, []byte(`"result":{"status":"ok"`)) || !bytes.Contains(w.body, want) {
		b.Fatalf("status %d: %s", w.status, w.body)
	}
	served := int64(1)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	cpu := processCPU()
	for b.Loop() {
		serve()
		if w.status != http.StatusOK {
			b.Fatalf("status %d: %s", w.status, w.body)
		}
		served++
	}
	b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
	if !bytes.Contains(w.body, []byte(`"result":{"status":"ok"`)) {
		b.Fatalf("last response: %s", w.body)
	}
	return served
}

// callsCounted reads the sum of the supervaizer.calls counter.
func callsCounted(b *testing.B, reader *sdkmetric.ManualReader) int64 {
	b.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		b.Fatal(err)
	}
	var total int64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if sum, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name == svotel.MetricCalls {
				for _, dp := range sum.DataPoints {
					total += dp.Value
				}
			}
		}
	}
	return total
}
