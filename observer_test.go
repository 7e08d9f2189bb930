package supervaizer_test

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/errcode"
	"github.com/supervaize/supervaizer-go/observe"
	svtest "github.com/supervaize/supervaizer-go/testing"
)

// fakeObserver records everything the SDK reports: it is an interceptor
// (each call, each handler) and the observer hooks. Its call wrappers put
// the incoming traceparent in the call's context, its handler wrapper marks
// the handler's.
type fakeObserver struct {
	mu       sync.Mutex
	calls    []supervaizer.Call
	handlers []string // "kind name: error"
	tokens   []observe.Token
	streams  []observe.Stream
	stores   []observe.StoreOp
}

type traceKey struct{}

type handlerKey struct{}

func (f *fakeObserver) WrapUnary(next supervaizer.UnaryFunc) supervaizer.UnaryFunc {
	return func(ctx context.Context, c *supervaizer.Call) {
		next(context.WithValue(ctx, traceKey{}, c.Header.Get("traceparent")), c)
		f.record(c)
	}
}

func (f *fakeObserver) WrapStream(next supervaizer.StreamFunc) supervaizer.StreamFunc {
	return func(ctx context.Context, c *supervaizer.Call) {
		next(context.WithValue(ctx, traceKey{}, c.Header.Get("traceparent")), c)
		f.record(c)
	}
}

func (f *fakeObserver) record(c *supervaizer.Call) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, supervaizer.Call{ // what an interceptor reads, without the server's state
		Method: c.Method, Streaming: c.Streaming, Kind: c.Kind, AgentSlug: c.AgentSlug, Name: c.Name,
		WorkspaceID: c.WorkspaceID, Code: c.Code, HTTPStatus: c.HTTPStatus, Idempotency: c.Idempotency,
		Start: c.Start, Duration: c.Duration,
	})
}

func (f *fakeObserver) WrapHandler(next supervaizer.HandlerFunc) supervaizer.HandlerFunc {
	return func(ctx context.Context, c *supervaizer.Call) error {
		name := c.Kind + " " + c.Name
		err := next(context.WithValue(ctx, handlerKey{}, name), c)
		f.mu.Lock()
		defer f.mu.Unlock()
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		f.handlers = append(f.handlers, name+": "+msg)
		return err
	}
}

func (f *fakeObserver) Token(_ context.Context, t observe.Token) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tokens = append(f.tokens, t)
}

func (f *fakeObserver) Stream(_ context.Context, s observe.Stream) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.streams = append(f.streams, s)
}

func (f *fakeObserver) Store(_ context.Context, op observe.StoreOp) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stores = append(f.stores, op)
}

func (f *fakeObserver) Transport(base http.RoundTripper) http.RoundTripper { return base }

// take returns what f recorded since the last take and forgets it.
func (f *fakeObserver) take() (calls []supervaizer.Call, handlers []string, tokens []observe.Token, stores []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	calls, handlers, tokens = f.calls, f.handlers, f.tokens
	for _, op := range f.stores {
		stores = append(stores, op.Kind)
	}
	f.calls, f.handlers, f.tokens, f.stores = nil, nil, nil, nil
	return calls, handlers, tokens, stores
}

// TestObserverSeesEachCall: one call each way through POST /a2a, and what
// the observer is told of it: the call (method, agent, action or surface,
// workspace, code, HTTP status, idempotency), the handler, the token
// verification and the store operations.
func TestObserverSeesEachCall(t *testing.T) {
	obs := &fakeObserver{}
	h := newHarness(t, withServerOptions(supervaizer.WithObserver(obs)))
	token := "Bearer " + h.validToken()
	start := actionParams("job.start", func(p map[string]any) { p["idempotency_key"] = "setup-1" })
	otherJob := actionParams("job.start", func(p map[string]any) { p["idempotency_key"] = "setup-1"; p["job_id"] = "job-78" })
	verified := []observe.Token{{AgentSlug: testAgentSlug}}
	forged := "Bearer " + mintToken(svtest.NewFakeStudio(t), nil) // signed by another key
	for _, tt := range []struct {
		name     string
		call     rpcCall
		want     supervaizer.Call
		handlers []string
		tokens   []observe.Token
		stores   []string
	}{
		{
			name: "job.start runs",
			call: rpcCall{body: rpcBody(t, 1, supervaizer.MethodActionInvoke, start), key: testWriteKey, token: token},
			want: supervaizer.Call{Method: supervaizer.MethodActionInvoke, AgentSlug: testAgentSlug, Kind: "action", Name: "job.start",
				WorkspaceID: testWorkspaceID, HTTPStatus: http.StatusOK, Idempotency: observe.IdempotencyRan},
			handlers: []string{"action job.start: "}, tokens: verified,
			// the record taken, the result recorded, then the task view
			stores: []string{observe.StorePutIfAbsent, observe.StoreCompareAndSwap},
		},
		{
			name: "job.start replayed",
			call: rpcCall{body: rpcBody(t, 2, supervaizer.MethodActionInvoke, start), key: testWriteKey, token: token},
			want: supervaizer.Call{Method: supervaizer.MethodActionInvoke, AgentSlug: testAgentSlug, Kind: "action", Name: "job.start",
				WorkspaceID: testWorkspaceID, HTTPStatus: http.StatusOK, Idempotency: observe.IdempotencyReplayed},
			tokens: verified, stores: []string{observe.StorePutIfAbsent},
		},
		{
			name: "job.start conflict",
			call: rpcCall{body: rpcBody(t, 3, supervaizer.MethodActionInvoke, otherJob), key: testWriteKey, token: token},
			want: supervaizer.Call{Method: supervaizer.MethodActionInvoke, AgentSlug: testAgentSlug, Kind: "action", Name: "job.start",
				WorkspaceID: testWorkspaceID, HTTPStatus: http.StatusOK, Idempotency: observe.IdempotencyConflict},
			tokens: verified, stores: []string{observe.StorePutIfAbsent},
		},
		{
			name: "handler error",
			call: rpcCall{body: rpcBody(t, 4, supervaizer.MethodActionInvoke, actionParams("fail.error", nil)), key: testWriteKey, token: token},
			want: supervaizer.Call{Method: supervaizer.MethodActionInvoke, AgentSlug: testAgentSlug, Kind: "action", Name: "fail.error",
				WorkspaceID: testWorkspaceID, Code: int(errcode.InternalError), HTTPStatus: http.StatusOK},
			handlers: []string{"action fail.error: database password=hunter2 rejected"}, tokens: verified,
		},
		{
			name: "forged token",
			call: rpcCall{body: rpcBody(t, 5, supervaizer.MethodActionInvoke, actionParams("job.sync", nil)), key: testWriteKey, token: forged},
			want: supervaizer.Call{Method: supervaizer.MethodActionInvoke, AgentSlug: testAgentSlug, Kind: "action", Name: "job.sync",
				WorkspaceID: testWorkspaceID, Code: int(errcode.Unauthorized), HTTPStatus: http.StatusOK},
			tokens: []observe.Token{{AgentSlug: testAgentSlug, Code: "workspace_authorization_bad_signature"}},
		},
		{
			name: "malformed token",
			call: rpcCall{body: rpcBody(t, 5, supervaizer.MethodActionInvoke, actionParams("job.sync", nil)), key: testWriteKey, token: "Bearer not-a-jwt"},
			want: supervaizer.Call{Method: supervaizer.MethodActionInvoke, AgentSlug: testAgentSlug, Kind: "action", Name: "job.sync",
				WorkspaceID: testWorkspaceID, Code: int(errcode.Unauthorized), HTTPStatus: http.StatusOK},
			tokens: []observe.Token{{AgentSlug: testAgentSlug, Code: "workspace_authorization_malformed"}},
		},
		{
			name: "surface",
			call: rpcCall{body: rpcBody(t, 6, supervaizer.MethodSurfaceLoad, surfaceParams("job.start", nil)), key: testWriteKey, token: token},
			want: supervaizer.Call{Method: supervaizer.MethodSurfaceLoad, AgentSlug: testAgentSlug, Kind: "surface", Name: "job.start",
				WorkspaceID: testWorkspaceID, HTTPStatus: http.StatusOK},
			handlers: []string{"surface job.start: "}, tokens: verified,
		},
		{
			name: "unknown method",
			call: rpcCall{body: rpcBody(t, 7, "tasks/unknown", map[string]any{}), key: testWriteKey},
			want: supervaizer.Call{Method: "other", Code: int(errcode.MethodNotFound), HTTPStatus: http.StatusOK},
		},
		{
			name: "no API key",
			call: rpcCall{body: rpcBody(t, 8, supervaizer.MethodActionInvoke, start)},
			want: supervaizer.Call{HTTPStatus: http.StatusUnauthorized},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := h.serve(tt.call)
			require.Equal(t, tt.want.HTTPStatus, w.Code, w.Body.String())
			if w.Code == http.StatusOK {
				var resp rpcResponse
				require.NoError(t, json.Unmarshal(w.Body.Bytes(), &resp))
				if tt.want.Code != 0 {
					require.NotNil(t, resp.Error, w.Body.String())
					assert.Equal(t, tt.want.Code, resp.Error.Code)
				}
			}
			calls, handlers, tokens, stores := obs.take()
			require.Len(t, calls, 1)
			got := calls[0]
			assert.False(t, got.Start.IsZero())
			assert.Positive(t, got.Duration)
			got.Start, got.Duration = time.Time{}, 0
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.handlers, handlers)
			for i := range tokens {
				tokens[i].Duration = 0
			}
			assert.Equal(t, tt.tokens, tokens)
			if tt.stores != nil {
				assert.Subset(t, stores, tt.stores)
			}
		})
	}
}

// TestObserverTraceContextReachesTheHandler: the context StartCall derives
// from the incoming headers is the handler's, through StartHandler's.
func TestObserverTraceContextReachesTheHandler(t *testing.T) {
	obs := &fakeObserver{}
	h := newHarness(t, withServerOptions(supervaizer.WithObserver(obs)))
	const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	w := h.serve(rpcCall{body: rpcBody(t, 1, supervaizer.MethodActionInvoke, actionParams("job.sync", nil)), key: testWriteKey,
		token: "Bearer " + h.validToken(), header: http.Header{"Traceparent": {traceparent}}})
	decodeRPC(t, w)
	ctx := h.lastCall(t).ctx
	assert.Equal(t, traceparent, ctx.Value(traceKey{}))
	assert.Equal(t, "action job.sync", ctx.Value(handlerKey{}))
	ws, ok := supervaizer.WorkspaceFrom(ctx)
	require.True(t, ok, "the handler's context still carries the verified workspace")
	assert.Equal(t, testWorkspaceID, ws.WorkspaceID)
}

// TestObserverSeesEventStreams: an event stream's subscribe and disconnect.
func TestObserverSeesEventStreams(t *testing.T) {
	obs := &fakeObserver{}
	h := newHarness(t, withServerOptions(supervaizer.WithObserver(obs)))
	ts, client := newHTTPServer(t, h.srv)
	c := openEvents(t, client, ts.URL, testReadKey, nil)
	require.Equal(t, "supervaizer.connected", c.next(t).Name)
	c.close()
	require.Eventually(t, func() bool {
		obs.mu.Lock()
		defer obs.mu.Unlock()
		return len(obs.streams) == 2
	}, 5*time.Second, time.Millisecond)
	obs.mu.Lock()
	defer obs.mu.Unlock()
	assert.Equal(t, []observe.Stream{{Change: observe.StreamSubscribe}, {Change: observe.StreamDisconnect, Reason: "client gone"}}, obs.streams)
}
