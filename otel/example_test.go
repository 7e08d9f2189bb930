package otel_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	supervaizer "github.com/supervaize/supervaizer-go"
	svotel "github.com/supervaize/supervaizer-go/otel"
)

func Example() {
	spans := tracetest.NewInMemoryExporter()
	reader := sdkmetric.NewManualReader()
	obs, err := svotel.New(svotel.Config{
		TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans)),
		MeterProvider:  sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)),
	})
	if err != nil {
		log.Fatal(err)
	}
	agent, err := supervaizer.NewAgent(supervaizer.AgentSpec{Name: "Research Agent", Version: "1.0.0",
		Registration: supervaizer.RegistrationSpec{AgentSlug: "research-agent", DisplayName: "Research",
			A2UICatalogVersion: "research-catalog/1", Surfaces: supervaizer.Surfaces("job.start"), Actions: supervaizer.Actions("job.start")}})
	if err != nil {
		log.Fatal(err)
	}
	srv, err := supervaizer.NewServer([]*supervaizer.Agent{agent}, supervaizer.WithLocalMode(true),
		supervaizer.WithServerID("example-server"), supervaizer.WithEnv(func(string) string { return "" }),
		supervaizer.WithObserver(obs))
	if err != nil {
		log.Fatal(err)
	}
	agent.HandleAction("job.start", func(_ context.Context, req *supervaizer.ActionRequest) (*supervaizer.ActionResult, error) {
		return supervaizer.OK(supervaizer.JobStarted(req.JobID, nil)), nil
	})
	body := `{"jsonrpc":"2.0","id":1,"method":"supervaizer/action.invoke","params":{"request_id":"r-7","actor":{"user_id":"u-1"},
		"workspace":{"id":"w-1"},"mission_id":"m-1","agent_slug":"research-agent","surface":"job.start","action":"job.start","job_id":"j-1"}}`
	r := httptest.NewRequest(http.MethodPost, "http://localhost/a2a", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set(supervaizer.HeaderAPIKey, supervaizer.LocalModeAPIKey)
	srv.ServeHTTP(httptest.NewRecorder(), r)

	for _, s := range spans.GetSpans().Snapshots() {
		fmt.Println("span:", s.Name())
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		log.Fatal(err)
	}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		fmt.Println("metric:", m.Name)
	}
	// Unordered output:
	// span: action job.start
	// span: supervaizer/action.invoke
	// metric: supervaizer.token.verifications
	// metric: supervaizer.calls
	// metric: supervaizer.call.duration
	// metric: supervaizer.event.subscribers
	// metric: supervaizer.event.dropped
}
