package a2ago

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2asrv"
	"github.com/a2aproject/a2a-go/a2asrv/eventqueue"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	sv "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/a2a/client"
	"github.com/supervaize/supervaizer-go/a2atask"
	"github.com/supervaize/supervaizer-go/errcode"
	"github.com/supervaize/supervaizer-go/internal/tools/proctest"
)

// startBrief is the data part that starts a research job.
func startBrief(t *testing.T, topic string) []a2atask.Part {
	t.Helper()
	b, err := json.Marshal(map[string]any{"action": "job.start", "input": map[string]any{"topic_id": topic}})
	require.NoError(t, err)
	return []a2atask.Part{{Kind: "data", Data: b}}
}

// TestSafeClientAgainstExample: the SDK's safe client against the running
// research agent binary, on each binding: discovery, a non-blocking send,
// the same request id again (the same task: the remote's idempotency, not a
// resend of the client's), read back, cancel, read back.
func TestSafeClientAgainstExample(t *testing.T) {
	bin := buildExample(t)
	proc := proctest.Start(t, bin, localEnv(t.TempDir()))
	base := proc.AwaitURL(t)
	for _, b := range []client.Binding{client.Binding10, client.Binding03} {
		t.Run(string(b), func(t *testing.T) {
			ctx := callCtx(t)
			c, err := client.New(ctx, base, client.AllowLoopback(), client.WithBinding(b),
				client.WithHeader(sv.HeaderAPIKey, sv.LocalModeAPIKey))
			require.NoError(t, err)
			assert.Equal(t, b, c.Binding())
			assert.NotEmpty(t, c.Card().Name)
			assert.NotEmpty(t, c.Card().Skills)

			req := client.SendRequest{RequestID: "delegate-" + string(b), Parts: startBrief(t, "ev-batteries")}
			ans, err := c.Send(ctx, req)
			require.NoError(t, err)
			require.NotNil(t, ans.Task, "a job is a task")
			task := ans.Task
			assert.NotEmpty(t, task.ContextID)
			assert.Contains(t, []a2atask.TaskState{a2atask.StateSubmitted, a2atask.StateWorking, a2atask.StateInputRequired}, task.Status.State)

			again, err := c.Send(ctx, req)
			require.NoError(t, err)
			assert.Equal(t, task.ID, again.Task.ID, "the same request id is the same task")

			got, err := c.GetTask(ctx, task.ID)
			require.NoError(t, err)
			assert.Equal(t, task.ID, got.ID)
			assert.Equal(t, a2atask.StateInputRequired, got.Status.State, "the draft brief awaits review")
			require.Len(t, got.Artifacts, 1, "the job_state artifact")
			assert.Equal(t, a2atask.ArtifactJobState, got.Artifacts[0].Name)

			canceled, err := c.Cancel(ctx, task.ID)
			require.NoError(t, err)
			assert.Equal(t, a2atask.StateCanceled, canceled.Status.State)
			got, err = c.GetTask(ctx, task.ID)
			require.NoError(t, err)
			assert.Equal(t, a2atask.StateCanceled, got.Status.State)

			_, err = c.GetTask(ctx, "no-such-task")
			var e *client.Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, errcode.TaskNotFound, e.Code)
			for _, op := range []client.Operation{client.OpSend, client.OpGet, client.OpCancel} {
				assert.Equal(t, client.CapabilityAccepted, c.Capability(op), op)
			}
		})
	}
}

// waitingAgent is an a2a-go agent whose tasks work until canceled.
type waitingAgent struct{}

func (waitingAgent) Execute(ctx context.Context, reqCtx *a2asrv.RequestContext, q eventqueue.Queue) error {
	if reqCtx.StoredTask == nil {
		if err := q.Write(ctx, a2a.NewSubmittedTask(reqCtx, reqCtx.Message)); err != nil {
			return err
		}
	}
	return q.Write(ctx, a2a.NewStatusUpdateEvent(reqCtx, a2a.TaskStateWorking, nil))
}

func (waitingAgent) Cancel(ctx context.Context, reqCtx *a2asrv.RequestContext, q eventqueue.Queue) error {
	ev := a2a.NewStatusUpdateEvent(reqCtx, a2a.TaskStateCanceled, nil)
	ev.Final = true
	return q.Write(ctx, ev)
}

// a2aGoServer serves waitingAgent with a2a-go's own JSON-RPC handler and
// card handler; serve wraps the JSON-RPC handler.
func a2aGoServer(t *testing.T, serve func(http.Handler) http.Handler) *httptest.Server {
	t.Helper()
	card := &a2a.AgentCard{Name: "a2a-go agent", Description: "works until canceled", ProtocolVersion: "0.3.0",
		PreferredTransport: a2a.TransportProtocolJSONRPC, DefaultInputModes: []string{"text"}, DefaultOutputModes: []string{"text"},
		Skills: []a2a.AgentSkill{{ID: "wait", Name: "Wait", Description: "works until canceled", Tags: []string{"test"}}}}
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	card.URL = srv.URL + "/invoke"
	mux.Handle("/invoke", serve(a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(waitingAgent{}))))
	mux.Handle(a2asrv.WellKnownAgentCardPath, a2asrv.NewStaticAgentCardHandler(card))
	return srv
}

// TestSafeClientAgainstA2AGoServer: the SDK's safe client against a server
// built with the official A2A Go SDK (0.3): discovery, a non-blocking send,
// read back, cancel.
func TestSafeClientAgainstA2AGoServer(t *testing.T) {
	srv := a2aGoServer(t, func(h http.Handler) http.Handler { return h })
	ctx := callCtx(t)
	c, err := client.New(ctx, srv.URL, client.AllowLoopback())
	require.NoError(t, err)
	assert.Equal(t, client.Binding03, c.Binding())
	assert.Equal(t, "a2a-go agent", c.Card().Name)

	ans, err := c.Send(ctx, client.SendRequest{RequestID: "req-a2a-go-1", Parts: []a2atask.Part{{Kind: "text", Text: "wait"}}})
	require.NoError(t, err)
	require.NotNil(t, ans.Task)
	id := ans.Task.ID
	assert.Contains(t, []a2atask.TaskState{a2atask.StateSubmitted, a2atask.StateWorking}, ans.Task.Status.State)

	got, err := c.GetTask(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, id, got.ID)
	assert.Nil(t, got.History, "history length 0")

	canceled, err := c.Cancel(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, a2atask.StateCanceled, canceled.Status.State)
	got, err = c.GetTask(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, a2atask.StateCanceled, got.Status.State)
}

// withoutCancel is a front of the a2a-go handler that does not route
// tasks/cancel: it renames the method, so that a2a-go itself answers
// method-not-found.
func withoutCancel(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req map[string]any
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		if req["method"] == "tasks/cancel" {
			req["method"] = "tasks/cancel-not-served"
		}
		body, _ := json.Marshal(req)
		r2 := r.Clone(r.Context())
		r2.Body = io.NopCloser(bytes.NewReader(body))
		r2.ContentLength = int64(len(body))
		next.ServeHTTP(w, r2)
	})
}

// TestSafeClientMarksCancelUnavailable: against an a2a-go remote without
// tasks/cancel, the first cancel meets method-not-found and marks the
// operation unavailable; the next sends nothing; the task is still read.
func TestSafeClientMarksCancelUnavailable(t *testing.T) {
	var calls atomic.Int64
	srv := a2aGoServer(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			calls.Add(1)
			withoutCancel(h).ServeHTTP(w, r)
		})
	})
	ctx := callCtx(t)
	c, err := client.New(ctx, srv.URL, client.AllowLoopback())
	require.NoError(t, err)
	ans, err := c.Send(ctx, client.SendRequest{RequestID: "req-a2a-go-2", Parts: []a2atask.Part{{Kind: "text", Text: "wait"}}})
	require.NoError(t, err)

	_, err = c.Cancel(ctx, ans.Task.ID)
	require.ErrorIs(t, err, client.ErrUnavailable)
	var amb *client.AmbiguousError
	assert.False(t, errors.As(err, &amb), "method-not-found is a definite answer")
	assert.Equal(t, client.CapabilityUnavailable, c.Capability(client.OpCancel))
	before := calls.Load()
	_, err = c.Cancel(ctx, ans.Task.ID)
	require.ErrorIs(t, err, client.ErrUnavailable)
	assert.Equal(t, before, calls.Load(), "nothing sent")

	got, err := c.GetTask(ctx, ans.Task.ID)
	require.NoError(t, err)
	assert.NotEqual(t, a2atask.StateCanceled, got.Status.State)
}
