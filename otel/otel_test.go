package otel_test

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	supervaizer "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/conversation"
	"github.com/supervaize/supervaizer-go/errcode"
	svotel "github.com/supervaize/supervaizer-go/otel"
	svtest "github.com/supervaize/supervaizer-go/testing"
)

// fixture is a test server observed by an Observer recording to an
// in-memory span exporter and a manual metric reader.
type fixture struct {
	ts     *svtest.TestServer
	spans  *tracetest.InMemoryExporter
	reader *sdkmetric.ManualReader
	tp     *sdktrace.TracerProvider
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	obs, err := svotel.New(svotel.Config{TracerProvider: tp, MeterProvider: mp, Propagator: propagation.TraceContext{}})
	require.NoError(t, err)
	reg := supervaizer.RegistrationSpec{
		AgentSlug: "research-agent", DisplayName: "Research", A2UICatalogVersion: "research-catalog/1",
		Surfaces: supervaizer.Surfaces("job.start"), Actions: supervaizer.Actions("job.start", "job.sync"),
	}
	agent, err := supervaizer.NewAgent(supervaizer.AgentSpec{Name: "Research Agent", Version: "1.0.0", Registration: reg})
	require.NoError(t, err)
	ts := svtest.NewTestServer(t, []*supervaizer.Agent{agent}, supervaizer.WithObserver(obs))
	agent.HandleAction("job.start", func(ctx context.Context, req *supervaizer.ActionRequest) (*supervaizer.ActionResult, error) {
		conversation.ReportUsage(ctx, conversation.Usage{InputTokens: 5, OutputTokens: 2, CacheReadInputTokens: 3})
		conversation.ReportUsage(ctx, conversation.Usage{InputTokens: 2, OutputTokens: 1})
		return supervaizer.OK(supervaizer.JobStarted(req.JobID, nil)), nil
	})
	agent.HandleAction("job.sync", func(ctx context.Context, _ *supervaizer.ActionRequest) (*supervaizer.ActionResult, error) {
		return supervaizer.OK(), nil
	})
	return &fixture{ts: ts, spans: spans, reader: reader, tp: tp}
}

// post sends req as action.invoke with token and the extra headers; it
// returns the JSON-RPC error code (0 for a result) and the error data.
func (f *fixture) post(t *testing.T, req contracts.ActionRequest, token string, header http.Header) (int, json.RawMessage) {
	t.Helper()
	body, err := contracts.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": supervaizer.MethodActionInvoke,
		"params": map[string]any{"action_request": req}})
	require.NoError(t, err)
	r := httptest.NewRequest(http.MethodPost, "/a2a", strings.NewReader(string(body)))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set(supervaizer.HeaderAPIKey, f.ts.APIKey)
	r.Header.Set(supervaizer.HeaderWorkspaceAuthorization, "Bearer "+token)
	for k, vs := range header {
		r.Header[k] = vs
	}
	w := httptest.NewRecorder()
	f.ts.Server.ServeHTTP(w, r)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	var resp struct {
		Error *struct {
			Code int             `json:"code"`
			Data json.RawMessage `json:"data"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &resp))
	if resp.Error == nil {
		return 0, nil
	}
	return resp.Error.Code, resp.Error.Data
}

// metrics collects the metrics and indexes them by name.
func (f *fixture) metrics(t *testing.T) map[string]metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, f.reader.Collect(context.Background(), &rm))
	out := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			out[m.Name] = m
		}
	}
	return out
}

// sum is the value of the counter m's point whose attributes include want.
func sum(t *testing.T, m metricdata.Metrics, want ...attribute.KeyValue) int64 {
	t.Helper()
	data, ok := m.Data.(metricdata.Sum[int64])
	require.True(t, ok, "%s is not an int64 sum", m.Name)
	var total int64
	for _, dp := range data.DataPoints {
		if hasAll(dp.Attributes, want) {
			total += dp.Value
		}
	}
	return total
}

// count is the number of values the histogram m recorded with want.
func count(t *testing.T, m metricdata.Metrics, want ...attribute.KeyValue) uint64 {
	t.Helper()
	data, ok := m.Data.(metricdata.Histogram[float64])
	require.True(t, ok, "%s is not a float64 histogram", m.Name)
	var total uint64
	for _, dp := range data.DataPoints {
		if hasAll(dp.Attributes, want) {
			total += dp.Count
		}
	}
	return total
}

func hasAll(set attribute.Set, want []attribute.KeyValue) bool {
	for _, kv := range want {
		v, ok := set.Value(kv.Key)
		if !ok || v != kv.Value {
			return false
		}
	}
	return true
}

func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	out := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		out[kv.Key] = kv.Value
	}
	return out
}

// TestJobStartThenReplay: the documented spans and metric points of a
// job.start and of its replay.
func TestJobStartThenReplay(t *testing.T) {
	f := newFixture(t)
	req := f.ts.Request("job.start", nil)
	req.JobID, req.MissionID, req.IdempotencyKey = "job-1", "m-1", "setup-1"
	token := f.ts.Studio.TokenForAction(req)
	for range 2 {
		code, data := f.post(t, req, token, nil)
		require.Zero(t, code, string(data))
	}

	var servers, handlers, stores []sdktrace.ReadOnlySpan
	for _, s := range f.spans.GetSpans().Snapshots() {
		switch {
		case s.SpanKind() == trace.SpanKindServer:
			servers = append(servers, s)
		case s.Name() == "action job.start":
			handlers = append(handlers, s)
		case strings.HasPrefix(s.Name(), "store "):
			stores = append(stores, s)
		}
	}
	require.Len(t, servers, 2)
	require.Len(t, handlers, 1, "the replay runs no handler")
	for i, want := range []string{"ran", "replayed"} {
		s := servers[i]
		assert.Equal(t, supervaizer.MethodActionInvoke, s.Name())
		a := attrs(s)
		assert.Equal(t, "jsonrpc", a["rpc.system"].AsString())
		assert.Equal(t, supervaizer.MethodActionInvoke, a["rpc.method"].AsString())
		assert.EqualValues(t, 0, a["rpc.jsonrpc.error_code"].AsInt64())
		assert.EqualValues(t, 200, a["http.response.status_code"].AsInt64())
		assert.Equal(t, "research-agent", a["supervaizer.agent_slug"].AsString())
		assert.Equal(t, "job.start", a["supervaizer.name"].AsString())
		assert.Equal(t, req.Workspace.ID, a["supervaizer.workspace_id"].AsString())
		assert.Equal(t, want, a["supervaizer.idempotency"].AsString())
	}
	assert.Equal(t, servers[0].SpanContext().SpanID(), handlers[0].Parent().SpanID(), "the handler's span is the call's child")
	require.NotEmpty(t, stores)
	for _, s := range stores {
		assert.Equal(t, s.SpanContext().TraceID(), s.Parent().TraceID())
		assert.True(t, s.Parent().SpanID() == servers[0].SpanContext().SpanID() || s.Parent().SpanID() == servers[1].SpanContext().SpanID() ||
			s.Parent().SpanID() == handlers[0].SpanContext().SpanID(), "store span %s under a call", s.Name())
	}

	m := f.metrics(t)
	for _, name := range svotel.MetricNames {
		assert.Contains(t, m, name)
	}
	call := []attribute.KeyValue{attribute.String("rpc.method", supervaizer.MethodActionInvoke), attribute.String("supervaizer.name", "job.start"),
		attribute.Int("rpc.jsonrpc.error_code", 0)}
	assert.EqualValues(t, 2, sum(t, m[svotel.MetricCalls], call...))
	assert.EqualValues(t, 2, count(t, m[svotel.MetricCallDuration], call...))
	assert.EqualValues(t, 1, sum(t, m[svotel.MetricIdempotency], attribute.String("supervaizer.idempotency", "ran")))
	assert.EqualValues(t, 1, sum(t, m[svotel.MetricIdempotency], attribute.String("supervaizer.idempotency", "replayed")))
	assert.EqualValues(t, 2, sum(t, m[svotel.MetricTokenVerifications], attribute.String("supervaizer.token.outcome", "verified")))
	assert.Positive(t, count(t, m[svotel.MetricStoreDuration], attribute.String("supervaizer.store.operation", "put_if_absent")))

	// The usage job.start reported (the replay ran no handler): the GenAI
	// histogram by token type, input counting the cached tokens, and the
	// counter by kind.
	genAI := m[svotel.MetricGenAITokenUsage].Data.(metricdata.Histogram[int64])
	points := map[string]int64{}
	for _, dp := range genAI.DataPoints {
		typ, _ := dp.Attributes.Value("gen_ai.token.type")
		points[typ.AsString()] += dp.Sum
		assert.EqualValues(t, 1, dp.Count)
	}
	assert.Equal(t, map[string]int64{"input": 10, "output": 3}, points)
	job := attribute.String("supervaizer.name", "job.start")
	assert.EqualValues(t, 7, sum(t, m[svotel.MetricTokenUsage], job, attribute.String("supervaizer.token.kind", "input")))
	assert.EqualValues(t, 3, sum(t, m[svotel.MetricTokenUsage], job, attribute.String("supervaizer.token.kind", "output")))
	assert.EqualValues(t, 3, sum(t, m[svotel.MetricTokenUsage], job, attribute.String("supervaizer.token.kind", "cache_read_input")))

	// A different job with the key: a conflict.
	req.JobID = "job-2"
	code, data := f.post(t, req, f.ts.Studio.TokenForAction(req), nil)
	require.Zero(t, code, string(data))
	assert.EqualValues(t, 1, sum(t, f.metrics(t)[svotel.MetricIdempotency], attribute.String("supervaizer.idempotency", "conflict")))
}

// TestForgedToken: a token signed by another key counts as a verification
// with its code, and the call's span and counter carry -32030.
func TestForgedToken(t *testing.T) {
	f := newFixture(t)
	req := f.ts.Request("job.sync", nil)
	forged := svtest.NewFakeStudio(t).Mint(f.ts.Studio.ActionClaims(req))
	code, data := f.post(t, req, forged, nil)
	require.EqualValues(t, errcode.Unauthorized, code)
	var d struct{ Code string }
	require.NoError(t, json.Unmarshal(data, &d))
	require.NotEmpty(t, d.Code)

	m := f.metrics(t)
	assert.EqualValues(t, 1, sum(t, m[svotel.MetricTokenVerifications], attribute.String("supervaizer.token.outcome", d.Code)))
	assert.EqualValues(t, 0, sum(t, m[svotel.MetricTokenVerifications], attribute.String("supervaizer.token.outcome", "verified")))
	assert.EqualValues(t, 1, sum(t, m[svotel.MetricCalls], attribute.Int("rpc.jsonrpc.error_code", int(errcode.Unauthorized))))
	spans := f.spans.GetSpans().Snapshots()
	require.Len(t, spans, 1)
	assert.EqualValues(t, errcode.Unauthorized, attrs(spans[0])["rpc.jsonrpc.error_code"].AsInt64())
	assert.Equal(t, "Error", spans[0].Status().Code.String())
}

// TestCallerTraceIsTheParent: a trace the caller started (traceparent)
// is the parent of the call's span, itself the parent of the handler's.
func TestCallerTraceIsTheParent(t *testing.T) {
	f := newFixture(t)
	ctx, caller := f.tp.Tracer("caller").Start(context.Background(), "studio call", trace.WithSpanKind(trace.SpanKindClient))
	header := http.Header{}
	propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(header))
	require.NotEmpty(t, header.Get("traceparent"))
	req := f.ts.Request("job.sync", nil)
	code, data := f.post(t, req, f.ts.Studio.TokenForAction(req), header)
	require.Zero(t, code, string(data))
	caller.End()

	byName := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range f.spans.GetSpans().Snapshots() {
		byName[s.Name()] = s
	}
	server, handler := byName[supervaizer.MethodActionInvoke], byName["action job.sync"]
	require.NotNil(t, server)
	require.NotNil(t, handler)
	assert.Equal(t, caller.SpanContext().TraceID(), handler.SpanContext().TraceID())
	assert.Equal(t, caller.SpanContext().SpanID(), server.Parent().SpanID())
	assert.True(t, server.Parent().IsRemote())
	assert.Equal(t, server.SpanContext().SpanID(), handler.Parent().SpanID())
}

// TestTransportCarriesTheTraceContext: a request sent through Transport is
// a client span whose context the server receives.
func TestTransportCarriesTheTraceContext(t *testing.T) {
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	obs, err := svotel.New(svotel.Config{TracerProvider: tp, MeterProvider: sdkmetric.NewMeterProvider()})
	require.NoError(t, err)
	got := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get("traceparent")
	}))
	t.Cleanup(srv.Close)
	client := &http.Client{Transport: obs.Transport(http.DefaultTransport)}
	ctx, parent := tp.Tracer("test").Start(context.Background(), "handler")
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/w/ws-1/api/v1/events", nil)
	require.NoError(t, err)
	resp, err := client.Do(r)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	parent.End()
	assert.Empty(t, r.Header.Get("traceparent"), "the caller's request is not modified")
	tp0 := <-got
	var client0 sdktrace.ReadOnlySpan
	for _, s := range spans.GetSpans().Snapshots() {
		if s.SpanKind() == trace.SpanKindClient {
			client0 = s
		}
	}
	require.NotNil(t, client0)
	assert.Equal(t, parent.SpanContext().SpanID(), client0.Parent().SpanID())
	assert.Equal(t, "00-"+client0.SpanContext().TraceID().String()+"-"+client0.SpanContext().SpanID().String()+"-01", tp0)
}

// TestLabelsFromKnownSets (spec item 75): the method label is a served
// method or "other", the agent and action labels a served agent and an
// action it handles or "unknown". After one call of each shape, 5,000 calls
// with random method, action and agent names add no label set, and no label
// or span name is longer than 64 bytes.
func TestLabelsFromKnownSets(t *testing.T) {
	f := newFixture(t)
	rng := rand.New(rand.NewPCG(1, 2))
	random := func() string { // long enough to be cut if it ever became a label
		b := make([]byte, 80)
		for i := range b {
			b[i] = 'a' + byte(rng.IntN(26))
		}
		return string(b)
	}
	shapes := []func(name string){
		func(name string) { f.postMethod(t, "tasks/"+name) }, // a method not served
		func(name string) { // an action the agent does not handle
			req := f.ts.Request("job.sync", nil)
			req.Action = "job." + name
			f.post(t, req, f.ts.Studio.TokenForAction(req), nil)
		},
		func(name string) { // an agent not served
			req := f.ts.Request("job.sync", nil)
			req.AgentSlug = "agent-" + name
			f.post(t, req, f.ts.Studio.TokenForAction(req), nil)
		},
	}
	for _, shape := range shapes {
		shape(random())
	}
	sets := func() map[attribute.Distinct]attribute.Set {
		out := map[attribute.Distinct]attribute.Set{}
		data := f.metrics(t)[svotel.MetricCalls].Data.(metricdata.Sum[int64])
		for _, dp := range data.DataPoints {
			out[dp.Attributes.Equivalent()] = dp.Attributes
		}
		return out
	}
	before := sets()
	require.Len(t, before, len(shapes))
	for i := range 5000 {
		shapes[i%len(shapes)](random())
	}
	after := sets()
	assert.Len(t, after, len(before), "random names added label sets")
	for _, set := range after {
		for _, kv := range set.ToSlice() {
			assert.LessOrEqual(t, len(kv.Value.String()), 64, "label %s", kv.Key)
		}
		method, _ := set.Value("rpc.method")
		assert.Contains(t, []string{"other", supervaizer.MethodActionInvoke}, method.AsString())
		if agent, ok := set.Value("supervaizer.agent_slug"); ok {
			assert.Contains(t, []string{"unknown", "research-agent"}, agent.AsString())
		}
		if name, ok := set.Value("supervaizer.name"); ok {
			assert.Contains(t, []string{"unknown", "job.sync"}, name.AsString())
		}
	}
	for _, s := range f.spans.GetSpans().Snapshots() {
		assert.LessOrEqual(t, len(s.Name()), 64, "span name %q", s.Name())
	}
}

// postMethod sends a call of method with empty params.
func (f *fixture) postMethod(t *testing.T, method string) {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":` + strconv.Quote(method) + `,"params":{}}`
	r := httptest.NewRequest(http.MethodPost, "/a2a", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set(supervaizer.HeaderAPIKey, f.ts.APIKey)
	w := httptest.NewRecorder()
	f.ts.Server.ServeHTTP(w, r)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
}
