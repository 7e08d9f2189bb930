package otel_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/supervaize/supervaizer-go/a2a/client"
	svotel "github.com/supervaize/supervaizer-go/otel"
)

// TestA2AClientContinuesTheTrace: the SDK's safe A2A client, given this
// observer (client.WithObserver), sends the W3C trace context of the
// caller's context: a delegation continues the handler's trace.
func TestA2AClientContinuesTheTrace(t *testing.T) {
	tp := sdktrace.NewTracerProvider()
	obs, err := svotel.New(svotel.Config{TracerProvider: tp, MeterProvider: sdkmetric.NewMeterProvider()})
	require.NoError(t, err)
	got := make(chan string, 4)
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/.well-known/agent-card.json" {
			fmt.Fprintf(w, `{"name":"Remote","skills":[],"url":"%s/a2a","protocolVersion":"0.3.0"}`, srv.URL)
			return
		}
		got <- r.Header.Get("traceparent")
		fmt.Fprint(w, `{"jsonrpc":"2.0","id":1,"result":{"kind":"task","id":"t-1","status":{"state":"working"}}}`)
	}))
	t.Cleanup(srv.Close)

	c, err := client.New(context.Background(), srv.URL, client.AllowLoopback(), client.WithObserver(obs))
	require.NoError(t, err)
	ctx, handler := tp.Tracer("test").Start(context.Background(), "handler")
	_, err = c.GetTask(ctx, "t-1")
	require.NoError(t, err)
	handler.End()
	traceparent := <-got
	parts := strings.Split(traceparent, "-")
	require.Len(t, parts, 4, "a W3C traceparent: %q", traceparent)
	assert.Equal(t, handler.SpanContext().TraceID().String(), parts[1], "the handler's trace")
}
