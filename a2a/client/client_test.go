package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/a2a/client"
	"github.com/supervaize/supervaizer-go/a2atask"
	"github.com/supervaize/supervaizer-go/observe"
	"github.com/supervaize/supervaizer-go/testing/golden"
)

// TestBindings: send, read back and cancel on each binding; the requests
// on the wire are pinned by golden files, the answers come back in the
// A2A 0.3 form whatever the binding.
func TestBindings(t *testing.T) {
	tests := []struct {
		name    string
		card    string
		task    string
		binding client.Binding
		methods []string
	}{
		{"1.0", card10, task10, client.Binding10, []string{"SendMessage", "GetTask", "CancelTask"}},
		{"0.3", card03, task03, client.Binding03, []string{"message/send", "tasks/get", "tasks/cancel"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRemote(t, true, tt.card, tasks(tt.task))
			c := r.dial(t, client.WithHeader("X-API-Key", "key-1"))
			assert.Equal(t, tt.binding, c.Binding())
			ctx := context.Background()
			ans, err := c.Send(ctx, client.SendRequest{
				RequestID: "req-1", ContextID: "ctx-1",
				Parts: []a2atask.Part{
					{Kind: "data", Data: json.RawMessage(`{"action":"job.start","input":{"topic_id":"ev"}}`)},
					{Kind: "text", Text: "for the review"},
				},
				Metadata: map[string]any{"supervaizer/agent_slug": "research-agent"},
			})
			require.NoError(t, err)
			require.NotNil(t, ans.Task)
			assert.Nil(t, ans.Message)
			want := &a2atask.Task{Kind: "task", ID: "task-1", ContextID: "ctx-1", Status: a2atask.TaskStatus{State: a2atask.StateWorking}}
			assert.Equal(t, want, ans.Task, "the history is dropped")
			got, err := c.GetTask(ctx, "task-1")
			require.NoError(t, err)
			assert.Equal(t, want, got)
			got, err = c.Cancel(ctx, "task-1")
			require.NoError(t, err)
			assert.Equal(t, want, got)
			for _, op := range []client.Operation{client.OpSend, client.OpGet, client.OpCancel} {
				assert.Equal(t, client.CapabilityAccepted, c.Capability(op), op)
			}

			calls := r.received()
			require.Len(t, calls, 3)
			for i, call := range calls {
				assert.Equal(t, tt.methods[i], call.Method)
				assert.Equal(t, "key-1", call.Header.Get("X-API-Key"))
				assert.Equal(t, string(tt.binding), call.Header.Get("A2A-Version"))
				golden.JSON(t, filepath.Join("testdata", "requests-"+tt.name, []string{"send", "get", "cancel"}[i]+".json"), call.Params)
			}
		})
	}
}

// TestSendAnswersAMessage: a remote may answer a send with an agent
// message instead of a task.
func TestSendAnswersAMessage(t *testing.T) {
	for card, result := range map[string]string{
		card03: `{"kind":"message","role":"agent","messageId":"r-1","parts":[{"kind":"data","data":{"status":"ok"}}]}`,
		card10: `{"message":{"messageId":"r-1","role":"ROLE_AGENT","parts":[{"data":{"status":"ok"}}]}}`,
	} {
		r := newRemote(t, true, card, func(w http.ResponseWriter, call rpcCall) { reply(w, call, result) })
		ans, err := r.dial(t).Send(context.Background(), dataPart(t, map[string]any{"action": "help"}))
		require.NoError(t, err)
		assert.Nil(t, ans.Task)
		assert.Equal(t, &a2atask.Message{Kind: "message", Role: "agent", MessageID: "r-1",
			Parts: []a2atask.Part{{Kind: "data", Data: json.RawMessage(`{"status":"ok"}`)}}}, ans.Message)
	}
}

// TestSendRefusesInvalidRequests: nothing is sent for an invalid request.
func TestSendRefusesInvalidRequests(t *testing.T) {
	r := newRemote(t, true, card10, tasks(task10))
	c := r.dial(t)
	long := make([]byte, 257)
	for i := range long {
		long[i] = 'a'
	}
	part := []a2atask.Part{{Kind: "text", Text: "hi"}}
	for name, req := range map[string]client.SendRequest{
		"no request id":      {Parts: part},
		"long request id":    {RequestID: string(long), Parts: part},
		"control characters": {RequestID: "a\nb", Parts: part},
		"line separator":     {RequestID: "a\u2028b", Parts: part},
		"bad task id":        {RequestID: "r", TaskID: "a\x00", Parts: part},
		"no part":            {RequestID: "r"},
		"invalid data":       {RequestID: "r", Parts: []a2atask.Part{{Kind: "data", Data: json.RawMessage(`{`)}}},
		"file part":          {RequestID: "r", Parts: []a2atask.Part{{Kind: "file", File: &a2atask.File{URI: "https://x"}}}},
	} {
		_, err := c.Send(context.Background(), req)
		assert.ErrorIs(t, err, client.ErrInvalidRequest, name)
	}
	_, err := c.GetTask(context.Background(), "")
	assert.ErrorIs(t, err, client.ErrInvalidRequest)
	_, err = c.Cancel(context.Background(), "a\tb")
	assert.ErrorIs(t, err, client.ErrInvalidRequest)
	assert.Empty(t, r.received())
}

// TestInvalidAnswers: answers that are not the expected JSON-RPC response
// are refused; after a send, ambiguously.
func TestInvalidAnswers(t *testing.T) {
	tests := []struct {
		name, card, body string
		want             error
	}{
		{"not json", card10, `<html>`, client.ErrInvalidAnswer},
		{"wrong id", card10, `{"jsonrpc":"2.0","id":999,"result":{"task":` + task10 + `}}`, client.ErrInvalidAnswer},
		{"no version", card10, `{"id":1,"result":{"task":` + task10 + `}}`, client.ErrInvalidAnswer},
		{"empty", card10, `{"jsonrpc":"2.0","id":1}`, client.ErrInvalidAnswer},
		{"both", card10, `{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1}}`, client.ErrInvalidAnswer},
		{"error without code", card10, `{"jsonrpc":"2.0","id":1,"error":{"message":"x"}}`, client.ErrInvalidAnswer},
		{"task and message", card10, `{"jsonrpc":"2.0","id":1,"result":{"task":` + task10 + `,"message":{"messageId":"m","parts":[]}}}`, client.ErrInvalidAnswer},
		{"task without id", card10, `{"jsonrpc":"2.0","id":1,"result":{"task":{"status":{"state":"TASK_STATE_WORKING"}}}}`, client.ErrInvalidAnswer},
		{"0.3 task without kind", card03, `{"jsonrpc":"2.0","id":1,"result":{"id":"t","status":{"state":"working"}}}`, client.ErrInvalidAnswer},
		{"0.3 unknown part", card03, `{"jsonrpc":"2.0","id":1,"result":{"kind":"task","id":"t","status":{"state":"working"},"artifacts":[{"artifactId":"a","parts":[{"kind":"video"}]}]}}`, client.ErrInvalidAnswer},
		{"1.0 part of two kinds", card10, `{"jsonrpc":"2.0","id":1,"result":{"task":{"id":"t","status":{"state":"TASK_STATE_WORKING"},"artifacts":[{"artifactId":"a","parts":[{"text":"a","url":"https://x"}]}]}}}`, client.ErrInvalidAnswer},
		{"too many artifacts", card10, `{"jsonrpc":"2.0","id":1,"result":{"task":{"id":"t","status":{"state":"TASK_STATE_WORKING"},"artifacts":[{"artifactId":"a","parts":[]},{"artifactId":"b","parts":[]},{"artifactId":"c","parts":[]}]}}}`, client.ErrTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRemote(t, true, tt.card, func(w http.ResponseWriter, _ rpcCall) { _, _ = w.Write([]byte(tt.body)) })
			c := r.dial(t, client.WithMaxArtifacts(2))
			_, err := c.Send(context.Background(), dataPart(t, map[string]any{"action": "job.start"}))
			require.ErrorIs(t, err, tt.want)
			var amb *client.AmbiguousError
			require.ErrorAs(t, err, &amb)
			assert.Equal(t, client.CapabilityTentative, c.Capability(client.OpSend), "a malformed answer proves nothing")
		})
	}
}

// TestTaskStates: the states of both bindings, in the 0.3 form; an unknown
// one is "unknown".
func TestTaskStates(t *testing.T) {
	tests := []struct{ v10, v03 string }{
		{"TASK_STATE_SUBMITTED", "submitted"}, {"TASK_STATE_WORKING", "working"},
		{"TASK_STATE_INPUT_REQUIRED", "input-required"}, {"TASK_STATE_COMPLETED", "completed"},
		{"TASK_STATE_FAILED", "failed"}, {"TASK_STATE_CANCELED", "canceled"}, {"TASK_STATE_CANCELLED", "canceled"},
		{"TASK_STATE_REJECTED", "rejected"}, {"TASK_STATE_AUTH_REQUIRED", "auth-required"},
		{"TASK_STATE_UNSPECIFIED", "unknown"}, {"TASK_STATE_EXPLODED", "unknown"}, {"working", "unknown"},
	}
	for _, tt := range tests {
		t.Run(tt.v10, func(t *testing.T) {
			for card, task := range map[string]string{
				card10: `{"id":"t","status":{"state":"` + tt.v10 + `"}}`,
				card03: `{"kind":"task","id":"t","status":{"state":"` + tt.v03 + `"}}`,
			} {
				r := newRemote(t, true, card, func(w http.ResponseWriter, call rpcCall) { reply(w, call, task) })
				got, err := r.dial(t).GetTask(context.Background(), "t")
				require.NoError(t, err)
				assert.Equal(t, a2atask.TaskState(tt.v03), got.Status.State)
			}
		})
	}
}

// traceObserver injects a traceparent taken from the request's context,
// as an OpenTelemetry observer's transport does.
type traceObserver struct{ observe.Nop }

type traceKey struct{}

func (traceObserver) Transport(base http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if tp, ok := r.Context().Value(traceKey{}).(string); ok {
			r = r.Clone(r.Context())
			r.Header.Set("traceparent", tp)
		}
		return base.RoundTrip(r)
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestTraceContext: the caller's trace context reaches the remote through
// the observer's transport; headers from WithHeaderFunc are set per call.
func TestTraceContext(t *testing.T) {
	r := newRemote(t, true, card10, tasks(task10))
	n := 0
	c := r.dial(t, client.WithObserver(traceObserver{}), client.WithHeaderFunc(func(_ context.Context, h http.Header) error {
		n++
		h.Set("X-Supervaize-Workspace-Authorization", "token-"+itoa(n))
		return nil
	}))
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	_, err := c.GetTask(context.WithValue(context.Background(), traceKey{}, tp), "task-1")
	require.NoError(t, err)
	calls := r.received()
	require.Len(t, calls, 1)
	assert.Equal(t, tp, calls[0].Header.Get("traceparent"))
	assert.Equal(t, "token-2", calls[0].Header.Get("X-Supervaize-Workspace-Authorization"), "discovery was the first request")

	_, err = client.New(context.Background(), r.srv.URL, r.opts(client.WithHeaderFunc(func(context.Context, http.Header) error { return errors.New("no token") }))...)
	require.ErrorContains(t, err, "no token")
	assert.Equal(t, 1, r.hit("/.well-known/agent-card.json"), "the failing request was not sent")
}

// TestOptionsRefuseInvalidValues: every timeout finite and positive, every
// cap positive.
func TestOptionsRefuseInvalidValues(t *testing.T) {
	for name, o := range map[string]client.Option{
		"discovery timeout": client.WithDiscoveryTimeout(0),
		"call timeout":      client.WithCallTimeout(-time.Second),
		"dial timeout":      client.WithDialTimeout(0),
		"response cap":      client.WithMaxResponseBytes(0),
		"artifacts":         client.WithMaxArtifacts(0),
		"header":            client.WithHeader("", "x"),
		"header func":       client.WithHeaderFunc(nil),
		"observer":          client.WithObserver(nil),
		"root CAs":          client.WithRootCAs(nil),
	} {
		_, err := client.New(context.Background(), "https://agent.example.com", o)
		assert.Error(t, err, name)
	}
}
