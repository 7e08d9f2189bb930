// Package otel observes a Supervaizer controller with OpenTelemetry: its
// [Observer] is an interceptor ([supervaizer.Interceptor]) and implements
// the observer hooks ([observe.Observer]);
// [github.com/supervaize/supervaizer-go.WithObserver] installs both.
//
// Each POST /a2a call is a server span following the RPC semantic
// conventions (rpc.system "jsonrpc", rpc.method, rpc.jsonrpc.error_code),
// child of the caller's span when the request carries a W3C trace context;
// the handler and each store operation are child spans; the Studio
// client's outgoing calls are client spans whose context is sent along.
// The metrics are listed in docs/observability.md, whose table
// [MetricNames] follows.
//
// This package is a module of its own, so that the SDK's module depends on
// no telemetry library. Import it under another name than
// go.opentelemetry.io/otel's, svotel for example.
package otel

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"unicode/utf8"

	otelapi "go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	supervaizer "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/observe"
)

// ScopeName is the instrumentation scope of the tracer and the meter.
const ScopeName = "github.com/supervaize/supervaizer-go/otel"

// The metric names (OpenTelemetry form; a Prometheus exporter writes them
// with underscores, a unit suffix and _total for counters).
const (
	MetricCalls              = "supervaizer.calls"                // counter: POST /a2a calls
	MetricCallDuration       = "supervaizer.call.duration"        // histogram, s: POST /a2a call duration
	MetricTokenVerifications = "supervaizer.token.verifications"  // counter: workspace token verifications
	MetricIdempotency        = "supervaizer.idempotency.outcomes" // counter: idempotency layer outcomes
	MetricEventSubscribers   = "supervaizer.event.subscribers"    // up-down counter: open event streams
	MetricEventsDropped      = "supervaizer.event.dropped"        // counter: events dropped for slow clients
	MetricStoreDuration      = "supervaizer.store.duration"       // histogram, s: store operation duration
	MetricTokenUsage         = "supervaizer.token.usage"          // counter: tokens handlers reported, by agent, action and kind
	// MetricGenAITokenUsage is the GenAI semantic conventions' histogram of
	// the tokens a call used, by gen_ai.token.type (input, output).
	MetricGenAITokenUsage = "gen_ai.client.token.usage"
)

// MetricNames lists every metric this package records, in the order of
// docs/observability.md's table.
var MetricNames = []string{
	MetricCalls, MetricCallDuration, MetricTokenVerifications, MetricIdempotency,
	MetricEventSubscribers, MetricEventsDropped, MetricStoreDuration, MetricTokenUsage, MetricGenAITokenUsage,
}

// The attribute keys this package sets, besides the semantic conventions'.
const (
	AttrAgent          = attribute.Key("supervaizer.agent_slug")         // the call's agent
	AttrKind           = attribute.Key("supervaizer.kind")               // action or surface
	AttrName           = attribute.Key("supervaizer.name")               // the action or surface id
	AttrWorkspace      = attribute.Key("supervaizer.workspace_id")       // spans only (unbounded)
	AttrIdempotency    = attribute.Key("supervaizer.idempotency")        // ran, replayed, conflict, in_progress
	AttrTokenOutcome   = attribute.Key("supervaizer.token.outcome")      // verified, or the workspace_authorization_* code
	AttrStreamReason   = attribute.Key("supervaizer.event.close_reason") // spans only
	AttrStoreOp        = attribute.Key("supervaizer.store.operation")    // get, put_if_absent, compare_and_swap, delete, scan, write_atomic
	AttrRPCSystem      = attribute.Key("rpc.system")                     // "jsonrpc"
	AttrRPCMethod      = attribute.Key("rpc.method")                     // the JSON-RPC method
	AttrJSONRPCCode    = attribute.Key("rpc.jsonrpc.error_code")         // the JSON-RPC error code, 0 for a result
	AttrJSONRPCVer     = attribute.Key("rpc.jsonrpc.version")            // "2.0"
	AttrHTTPStatus     = attribute.Key("http.response.status_code")      // the HTTP status
	AttrErrorType      = attribute.Key("error.type")                     // a failed store operation's error type
	AttrHTTPMethod     = attribute.Key("http.request.method")            // client spans
	AttrServerAddress  = attribute.Key("server.address")                 // client spans
	AttrTokenKind      = attribute.Key("supervaizer.token.kind")         // input, output, cache_creation_input, cache_read_input
	AttrGenAITokenType = attribute.Key("gen_ai.token.type")              // input or output
	AttrGenAIOperation = attribute.Key("gen_ai.operation.name")          // "chat"
)

// Config configures [New]. The zero value uses OpenTelemetry's global
// providers and propagator.
type Config struct {
	// TracerProvider provides the tracer. Default: otel.GetTracerProvider().
	TracerProvider trace.TracerProvider
	// MeterProvider provides the meter. Default: otel.GetMeterProvider().
	MeterProvider metric.MeterProvider
	// Propagator extracts the incoming trace context and injects the
	// outgoing one. Default: otel.GetTextMapPropagator(); when that is the
	// global no-op, W3C trace context and baggage.
	Propagator propagation.TextMapPropagator
}

// Observer is the OpenTelemetry [observe.Observer]. Create it with [New].
type Observer struct {
	tracer     trace.Tracer
	propagator propagation.TextMapPropagator

	calls        metric.Int64Counter
	callDuration metric.Float64Histogram
	tokens       metric.Int64Counter
	idempotency  metric.Int64Counter
	subscribers  metric.Int64UpDownCounter
	dropped      metric.Int64Counter
	storeDur     metric.Float64Histogram
	tokenUsage   metric.Int64Counter
	genAITokens  metric.Int64Histogram
}

var _ observe.Observer = (*Observer)(nil)

// New returns an Observer recording to the providers of cfg.
func New(cfg Config) (*Observer, error) {
	tp, mp, prop := cfg.TracerProvider, cfg.MeterProvider, cfg.Propagator
	if tp == nil {
		tp = otelapi.GetTracerProvider()
	}
	if mp == nil {
		mp = otelapi.GetMeterProvider()
	}
	if prop == nil {
		prop = otelapi.GetTextMapPropagator()
		if len(prop.Fields()) == 0 { // the global no-op
			prop = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
		}
	}
	o := &Observer{tracer: tp.Tracer(ScopeName), propagator: prop}
	m := mp.Meter(ScopeName)
	var err error
	set := func(f func() error) {
		if err == nil {
			err = f()
		}
	}
	set(func() (e error) {
		o.calls, e = m.Int64Counter(MetricCalls, metric.WithUnit("{call}"),
			metric.WithDescription("POST /a2a calls, by method, agent, action or surface, JSON-RPC code and HTTP status"))
		return e
	})
	set(func() (e error) {
		o.callDuration, e = m.Float64Histogram(MetricCallDuration, metric.WithUnit("s"),
			metric.WithDescription("Duration of POST /a2a calls, until the answer is decided"),
			metric.WithExplicitBucketBoundaries(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60))
		return e
	})
	set(func() (e error) {
		o.tokens, e = m.Int64Counter(MetricTokenVerifications, metric.WithUnit("{verification}"),
			metric.WithDescription("Workspace token verifications, by outcome: verified or the workspace_authorization_* code"))
		return e
	})
	set(func() (e error) {
		o.idempotency, e = m.Int64Counter(MetricIdempotency, metric.WithUnit("{call}"),
			metric.WithDescription("Calls through the idempotency layer, by outcome: ran, replayed, conflict, in_progress"))
		return e
	})
	set(func() (e error) {
		o.subscribers, e = m.Int64UpDownCounter(MetricEventSubscribers, metric.WithUnit("{stream}"),
			metric.WithDescription("Open event streams (GET /a2a/events)"))
		return e
	})
	set(func() (e error) {
		o.dropped, e = m.Int64Counter(MetricEventsDropped, metric.WithUnit("{event}"),
			metric.WithDescription("Events dropped from the queue of an event stream whose client reads too slowly"))
		return e
	})
	set(func() (e error) {
		o.storeDur, e = m.Float64Histogram(MetricStoreDuration, metric.WithUnit("s"),
			metric.WithDescription("Duration of store operations, by operation and error type"),
			metric.WithExplicitBucketBoundaries(0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5))
		return e
	})
	set(func() (e error) {
		o.tokenUsage, e = m.Int64Counter(MetricTokenUsage, metric.WithUnit("{token}"),
			metric.WithDescription("Tokens the handlers reported (conversation.ReportUsage), by agent, action and kind"))
		return e
	})
	set(func() (e error) {
		o.genAITokens, e = m.Int64Histogram(MetricGenAITokenUsage, metric.WithUnit("{token}"),
			metric.WithDescription("Number of input and output tokens used, per call"),
			metric.WithExplicitBucketBoundaries(1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864))
		return e
	})
	if err != nil {
		return nil, err
	}
	// The series that may stay at zero for long exist from the start, so
	// that a scrape lists them.
	ctx := context.Background()
	o.subscribers.Add(ctx, 0)
	o.dropped.Add(ctx, 0)
	o.tokens.Add(ctx, 0, metric.WithAttributes(AttrTokenOutcome.String(tokenVerified)))
	return o, nil
}

// a2aSpanName names the server span until the method is known.
const a2aSpanName = "POST /a2a"

// maxLabel bounds every label and span name (spec item 75): the SDK's
// labels come from known sets, and none is longer.
const maxLabel = 64

// label is s cut to maxLabel bytes, on a character boundary.
func label(s string) string {
	if len(s) <= maxLabel {
		return s
	}
	n := maxLabel
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

var _ supervaizer.Interceptor = (*Observer)(nil)

// WrapUnary records each unary POST /a2a call: a server span, child of the
// caller's span when the request carries a trace context, and the call
// metrics.
func (o *Observer) WrapUnary(next supervaizer.UnaryFunc) supervaizer.UnaryFunc {
	return func(ctx context.Context, c *supervaizer.Call) {
		ctx, span := o.startCall(ctx, c)
		next(ctx, c)
		o.endCall(ctx, span, c)
	}
}

// WrapStream records each streaming call as WrapUnary does: its duration
// is the stream's.
func (o *Observer) WrapStream(next supervaizer.StreamFunc) supervaizer.StreamFunc {
	return func(ctx context.Context, c *supervaizer.Call) {
		ctx, span := o.startCall(ctx, c)
		next(ctx, c)
		o.endCall(ctx, span, c)
	}
}

// startCall starts the server span of a call, at its arrival.
func (o *Observer) startCall(ctx context.Context, c *supervaizer.Call) (context.Context, trace.Span) {
	ctx = o.propagator.Extract(ctx, propagation.HeaderCarrier(c.Header))
	return o.tracer.Start(ctx, a2aSpanName, trace.WithSpanKind(trace.SpanKindServer), trace.WithTimestamp(c.Start),
		trace.WithAttributes(AttrRPCSystem.String("jsonrpc"), AttrJSONRPCVer.String("2.0")))
}

func (o *Observer) endCall(ctx context.Context, span trace.Span, c *supervaizer.Call) {
	if c.Method != "" {
		span.SetName(label(c.Method))
	}
	attrs := make([]attribute.KeyValue, 0, 10)
	attrs = append(attrs, AttrRPCMethod.String(label(c.Method)), AttrJSONRPCCode.Int(c.Code), AttrHTTPStatus.Int(c.HTTPStatus))
	if c.AgentSlug != "" {
		attrs = append(attrs, AttrAgent.String(label(c.AgentSlug)))
	}
	if c.Kind != "" {
		attrs = append(attrs, AttrKind.String(label(c.Kind)), AttrName.String(label(c.Name)))
	}
	metricAttrs := attrs
	if c.WorkspaceID != "" {
		attrs = append(attrs, AttrWorkspace.String(c.WorkspaceID))
	}
	if c.Idempotency != observe.IdempotencyNone {
		attrs = append(attrs, AttrIdempotency.String(string(c.Idempotency)))
	}
	span.SetAttributes(attrs...)
	switch {
	case c.Code != 0:
		span.SetStatus(codes.Error, "JSON-RPC error "+strconv.Itoa(c.Code))
	case c.HTTPStatus >= 500:
		span.SetStatus(codes.Error, "HTTP "+strconv.Itoa(c.HTTPStatus))
	}
	span.End(trace.WithTimestamp(c.Start.Add(c.Duration)))

	set := metric.WithAttributeSet(attribute.NewSet(metricAttrs...))
	o.calls.Add(ctx, 1, set)
	o.callDuration.Record(ctx, c.Duration.Seconds(), set)
	if c.Idempotency != observe.IdempotencyNone {
		o.idempotency.Add(ctx, 1, metric.WithAttributes(AttrIdempotency.String(string(c.Idempotency)),
			AttrAgent.String(label(c.AgentSlug)), AttrName.String(label(c.Name))))
	}
	if !c.Usage.IsZero() {
		o.recordUsage(ctx, c)
	}
}

// recordUsage records the tokens a call's handlers reported: the GenAI
// histogram (input counts every input token, cached ones included, as the
// semantic conventions ask) and the counter by kind.
func (o *Observer) recordUsage(ctx context.Context, c *supervaizer.Call) {
	u := c.Usage
	agent, name := AttrAgent.String(label(c.AgentSlug)), AttrName.String(label(c.Name))
	op := AttrGenAIOperation.String("chat")
	input := u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens
	o.genAITokens.Record(ctx, input, metric.WithAttributes(op, AttrGenAITokenType.String("input"), agent, name))
	o.genAITokens.Record(ctx, u.OutputTokens, metric.WithAttributes(op, AttrGenAITokenType.String("output"), agent, name))
	for _, k := range [...]struct {
		kind string
		n    int64
	}{
		{"input", u.InputTokens}, {"output", u.OutputTokens},
		{"cache_creation_input", u.CacheCreationInputTokens}, {"cache_read_input", u.CacheReadInputTokens},
	} {
		if k.n > 0 {
			o.tokenUsage.Add(ctx, k.n, metric.WithAttributes(agent, name, AttrTokenKind.String(k.kind)))
		}
	}
}

// WrapHandler records the span of the agent's handler, child of the call's.
func (o *Observer) WrapHandler(next supervaizer.HandlerFunc) supervaizer.HandlerFunc {
	return func(ctx context.Context, c *supervaizer.Call) error {
		ctx, span := o.tracer.Start(ctx, label(c.Kind+" "+c.Name), trace.WithSpanKind(trace.SpanKindInternal),
			trace.WithAttributes(AttrAgent.String(label(c.AgentSlug)), AttrKind.String(label(c.Kind)), AttrName.String(label(c.Name))))
		err := next(ctx, c)
		if err != nil {
			span.SetStatus(codes.Error, "handler failed")
			span.SetAttributes(AttrErrorType.String(errorType(err)))
		}
		span.End()
		return err
	}
}

// tokenVerified is the token outcome of a verified token.
const tokenVerified = "verified"

// Token counts a workspace token verification by its outcome.
func (o *Observer) Token(ctx context.Context, t observe.Token) {
	outcome := t.Code
	if outcome == "" {
		outcome = tokenVerified
	}
	o.tokens.Add(ctx, 1, metric.WithAttributes(AttrTokenOutcome.String(outcome)))
	trace.SpanFromContext(ctx).AddEvent("workspace token", trace.WithAttributes(AttrTokenOutcome.String(outcome)))
}

// Stream counts the open event streams and the dropped events.
func (o *Observer) Stream(ctx context.Context, s observe.Stream) {
	switch s.Change {
	case observe.StreamSubscribe:
		o.subscribers.Add(ctx, 1)
	case observe.StreamDisconnect:
		o.subscribers.Add(ctx, -1)
	case observe.StreamDrop:
		o.dropped.Add(ctx, int64(s.Dropped))
	}
}

// Store records the duration of a store operation, and its span (child of
// the call's when a call caused it).
func (o *Observer) Store(ctx context.Context, op observe.StoreOp) {
	attrs := []attribute.KeyValue{AttrStoreOp.String(op.Kind)}
	if op.Err != nil {
		attrs = append(attrs, AttrErrorType.String(errorType(op.Err)))
	}
	o.storeDur.Record(ctx, op.Duration.Seconds(), metric.WithAttributes(attrs...))
	if !trace.SpanFromContext(ctx).SpanContext().IsValid() {
		return // a store operation outside any call: no lone root span
	}
	_, span := o.tracer.Start(ctx, "store "+op.Kind, trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithTimestamp(op.Start), trace.WithAttributes(attrs...))
	if op.Err != nil {
		span.SetStatus(codes.Error, op.Err.Error())
	}
	span.End(trace.WithTimestamp(op.Start.Add(op.Duration)))
}

// Transport wraps base (http.DefaultTransport when nil): each request is a
// client span, and carries its trace context in its headers.
func (o *Observer) Transport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &transport{o: o, base: base}
}

type transport struct {
	o    *Observer
	base http.RoundTripper
}

func (t *transport) RoundTrip(r *http.Request) (*http.Response, error) {
	ctx, span := t.o.tracer.Start(r.Context(), r.Method, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(AttrHTTPMethod.String(r.Method), AttrServerAddress.String(r.URL.Hostname())))
	defer span.End()
	r = r.Clone(ctx) // a RoundTripper must not modify the request it is given
	t.o.propagator.Inject(ctx, propagation.HeaderCarrier(r.Header))
	resp, err := t.base.RoundTrip(r)
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
		span.SetAttributes(AttrErrorType.String(errorType(err)))
		return resp, err
	}
	span.SetAttributes(AttrHTTPStatus.Int(resp.StatusCode))
	if resp.StatusCode >= 400 {
		span.SetStatus(codes.Error, resp.Status)
	}
	return resp, nil
}

// errorType is the error.type of err: its Go type.
func errorType(err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "deadline_exceeded"
	case errors.Is(err, context.Canceled):
		return "canceled"
	}
	return fmt.Sprintf("%T", err)
}
