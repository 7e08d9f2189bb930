// Package a2ago checks the A2A task methods of a Supervaizer controller with
// the official A2A Go SDK client (github.com/a2aproject/a2a-go, 0.3 line),
// and the SDK's own safe client (package a2a/client) against the example
// binary and against a server built with that SDK. It is a module of its
// own so that the SDK never depends on that client.
package a2ago

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	sv "github.com/supervaize/supervaizer-go"
)

// apiKey adds the controller key to every request of the client.
type apiKey struct{ next http.RoundTripper }

func (k apiKey) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(sv.HeaderAPIKey, sv.LocalModeAPIKey)
	return k.next.RoundTrip(r)
}

type startInput struct {
	TopicID string `json:"topic_id"`
	Status  string `json:"status,omitempty"`
}

// jobs is the agent's job store: status by job id.
type jobs struct {
	mu     sync.Mutex
	status map[string]string
	starts int
}

func (j *jobs) result(req *sv.ActionRequest, effects ...sv.Effect) *sv.ActionResult {
	res := sv.OK(effects...)
	res.JobState = &sv.JobState{Job: sv.Job{ID: req.JobID, AgentSlug: "client-agent", MissionID: req.MissionID,
		Status: j.status[req.JobID], Source: sv.JobSource{Type: "fresh_start"}}, Cases: []sv.Case{}}
	return res
}

// newClient serves an agent with job.start, job.sync, job.stop and
// job.advance in local mode and returns a2a-go clients of it.
func newClient(t *testing.T) (exampleClients, *jobs) {
	t.Helper()
	a, err := sv.NewAgent(sv.AgentSpec{Name: "Client Agent", Version: "1.0.0", Registration: sv.RegistrationSpec{
		Surfaces: sv.Surfaces("job.start"), Actions: sv.Actions("job.start", "job.sync", "job.stop", "job.advance")}})
	require.NoError(t, err)
	j := &jobs{status: map[string]string{}}
	sv.HandleActionFor(a, "job.start", func(_ context.Context, req *sv.ActionRequest, in startInput) (*sv.ActionResult, error) {
		j.mu.Lock()
		defer j.mu.Unlock()
		j.starts++
		j.status[req.JobID] = in.Status
		return j.result(req, sv.JobStarted(req.JobID, nil)), nil
	})
	for _, id := range []string{"job.sync", "job.stop", "job.advance"} {
		a.HandleAction(id, func(_ context.Context, req *sv.ActionRequest) (*sv.ActionResult, error) {
			j.mu.Lock()
			defer j.mu.Unlock()
			switch req.Action {
			case "job.stop":
				j.status[req.JobID] = "stopped"
			case "job.advance":
				j.status[req.JobID] = "completed"
			}
			return j.result(req), nil
		})
	}
	srv, err := sv.NewServer([]*sv.Agent{a}, sv.WithLocalMode(true), sv.WithEnv(func(string) string { return "" }))
	require.NoError(t, err)
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return clientsOf(t, hs.URL), j
}

func call(action string, input map[string]any) *a2a.Message {
	return a2a.NewMessage(a2a.MessageRoleUser, a2a.DataPart{Data: map[string]any{"action": action, "input": input}})
}

// TestClientTaskMethods: message/send (non-blocking and blocking), the same
// message again, tasks/get, message/stream, tasks/resubscribe and
// tasks/cancel through the official Go client.
func TestClientTaskMethods(t *testing.T) {
	ctx := context.Background()
	cs, j := newClient(t)
	c := cs.nonBlocking

	msg := call("job.start", map[string]any{"topic_id": "t", "status": "active"})
	res, err := c.SendMessage(ctx, &a2a.MessageSendParams{Message: msg})
	require.NoError(t, err)
	task, ok := res.(*a2a.Task)
	require.True(t, ok, "a job is a task: %T", res)
	assert.Equal(t, a2a.TaskStateWorking, task.Status.State)
	require.Len(t, task.Artifacts, 1)
	assert.Equal(t, "job_state", task.Artifacts[0].Name)

	again, err := c.SendMessage(ctx, &a2a.MessageSendParams{Message: msg})
	require.NoError(t, err)
	assert.Equal(t, task, again, "the same messageId is the same task")
	assert.Equal(t, 1, j.starts, "the job started once")

	got, err := c.GetTask(ctx, &a2a.TaskQueryParams{ID: task.ID})
	require.NoError(t, err)
	assert.Equal(t, task.ID, got.ID)
	assert.Equal(t, a2a.TaskStateWorking, got.Status.State)

	// Blocking: a job started working is answered once it completes (here
	// by job.advance, sent when tasks/get shows the job working).
	blocking := true
	advanced := make(chan error, 1)
	go func() { advanced <- advanceWhenWorking(ctx, c, "job-blocking") }()
	start := call("job.start", map[string]any{"topic_id": "b", "status": "active"})
	start.TaskID = "job-blocking"
	res, err = cs.blocking.SendMessage(ctx, &a2a.MessageSendParams{Message: start, Config: &a2a.MessageSendConfig{Blocking: &blocking}})
	require.NoError(t, err)
	require.NoError(t, <-advanced)
	assert.Equal(t, a2a.TaskStateCompleted, res.(*a2a.Task).Status.State, "blocking: the state the job reaches")
	res, err = cs.blocking.SendMessage(ctx, &a2a.MessageSendParams{Message: call("job.start", map[string]any{"topic_id": "b", "status": "awaiting"}),
		Config: &a2a.MessageSendConfig{Blocking: &blocking}})
	require.NoError(t, err)
	assert.Equal(t, a2a.TaskStateInputRequired, res.(*a2a.Task).Status.State)

	var kinds []string
	for ev, err := range c.ResubscribeToTask(ctx, &a2a.TaskIDParams{ID: task.ID}) {
		require.NoError(t, err)
		switch ev := ev.(type) {
		case *a2a.Task:
			kinds = append(kinds, "task")
			// mid-job: the job completes while the client follows it
			_, err := c.SendMessage(ctx, &a2a.MessageSendParams{Message: a2a.NewMessageForTask(a2a.MessageRoleUser, ev,
				a2a.DataPart{Data: map[string]any{"action": "job.advance"}})})
			require.NoError(t, err)
		case *a2a.TaskArtifactUpdateEvent:
			kinds = append(kinds, "artifact-update")
		case *a2a.TaskStatusUpdateEvent:
			kinds = append(kinds, "status-update:"+string(ev.Status.State))
			if ev.Final {
				kinds = append(kinds, "final")
			}
		}
	}
	assert.Equal(t, []string{"task", "artifact-update", "status-update:completed", "final"}, kinds)

	var streamed []string
	for ev, err := range c.SendStreamingMessage(ctx, &a2a.MessageSendParams{Message: call("job.start", map[string]any{"topic_id": "s", "status": "awaiting"})}) {
		require.NoError(t, err)
		if tk, ok := ev.(*a2a.Task); ok {
			streamed = append(streamed, string(tk.Status.State))
		}
	}
	assert.Equal(t, []string{"input-required"}, streamed, "a stream ends at input-required")

	res, err = c.SendMessage(ctx, &a2a.MessageSendParams{Message: call("job.start", map[string]any{"topic_id": "c", "status": "active"})})
	require.NoError(t, err)
	canceled, err := c.CancelTask(ctx, &a2a.TaskIDParams{ID: res.(*a2a.Task).ID})
	require.NoError(t, err)
	assert.Equal(t, a2a.TaskStateCanceled, canceled.Status.State)
}

// advanceWhenWorking completes task id with job.advance once tasks/get shows
// it working (within a minute).
func advanceWhenWorking(ctx context.Context, c *a2aclient.Client, id a2a.TaskID) error {
	deadline := time.Now().Add(time.Minute)
	for {
		task, err := c.GetTask(ctx, &a2a.TaskQueryParams{ID: id})
		if err == nil && task.Status.State == a2a.TaskStateWorking {
			_, err = c.SendMessage(ctx, &a2a.MessageSendParams{Message: a2a.NewMessageForTask(a2a.MessageRoleUser, task,
				a2a.DataPart{Data: map[string]any{"action": "job.advance"}})})
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("task %s never showed working (last: %v, %v)", id, task, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
