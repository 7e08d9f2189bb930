package a2ago

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"iter"
	"mime"
	"net/http"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/internal/tools/proctest"
)

// sendDelay is the example's RESEARCH_AGENT_SEND_DELAY in these tests: an
// approved brief is sent that long after its approval, so its job is
// observably working (active) in between. Generous: the machine running the
// tests may be loaded, and every mid-job check happens within it.
const sendDelay = "5s"

// streamTimeout bounds each call and stream of these tests: a stream that
// never ends fails the test instead of hanging it.
const streamTimeout = 2 * time.Minute

// recorder keeps the body of every JSON response the client receives, as
// received (the client decodes its own copy).
type recorder struct {
	next http.RoundTripper

	mu     sync.Mutex
	bodies [][]byte
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "application/json" {
		return resp, nil // an event stream is read by the client as it arrives
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.bodies = append(r.bodies, body)
	r.mu.Unlock()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, nil
}

// last is the body of the last JSON response.
func (r *recorder) last(t *testing.T) []byte {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	require.NotEmpty(t, r.bodies, "no JSON response recorded")
	return r.bodies[len(r.bodies)-1]
}

// exampleClients are a2a-go clients of one running example: nonBlocking
// (Polling: the client asks configuration.blocking false) and blocking (sends
// the configuration the call gives), both through rec.
type exampleClients struct {
	nonBlocking, blocking *a2aclient.Client
	rec                   *recorder
}

func clientsOf(t *testing.T, base string) exampleClients {
	t.Helper()
	rec := &recorder{next: http.DefaultTransport}
	hc := &http.Client{Transport: apiKey{rec}}
	mk := func(cfg a2aclient.Config) *a2aclient.Client {
		c, err := a2aclient.NewFromEndpoints(t.Context(), []a2a.AgentInterface{{URL: base + "/a2a", Transport: a2a.TransportProtocolJSONRPC}},
			a2aclient.WithJSONRPCTransport(hc), a2aclient.WithConfig(cfg))
		require.NoError(t, err)
		return c
	}
	return exampleClients{nonBlocking: mk(a2aclient.Config{Polling: true}), blocking: mk(a2aclient.Config{}), rec: rec}
}

// runExample runs the example binary with env and returns a2a-go clients of
// it.
func runExample(t *testing.T, bin string, env []string) (*proctest.Process, exampleClients) {
	t.Helper()
	proc := proctest.Start(t, bin, env)
	return proc, clientsOf(t, proc.AwaitURL(t))
}

// callCtx is the context of one call or stream of a test.
func callCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), streamTimeout)
	t.Cleanup(cancel)
	return ctx
}

// sameAnswer asserts that two JSON-RPC response bodies are byte-identical but
// for their id, which each request of the client chooses.
func sameAnswer(t *testing.T, first, again []byte) {
	t.Helper()
	var a, b struct {
		ID     json.RawMessage `json:"id"`
		Result json.RawMessage `json:"result"`
	}
	require.NoError(t, json.Unmarshal(first, &a), "%s", first)
	require.NoError(t, json.Unmarshal(again, &b), "%s", again)
	require.NotEmpty(t, a.Result, "%s", first)
	require.NotEqual(t, string(a.ID), string(b.ID), "two requests, two ids")
	assert.Equal(t, string(first), string(bytes.Replace(again, append([]byte(`"id":`), b.ID...), append([]byte(`"id":`), a.ID...), 1)),
		"the same message again: the same answer, byte for byte")
}

// startJob starts a research job on topic (non-blocking): its draft brief
// awaits review.
func startJob(t *testing.T, c *a2aclient.Client, topic string) *a2a.Task {
	t.Helper()
	res, err := c.SendMessage(callCtx(t), &a2a.MessageSendParams{Message: call("job.start", map[string]any{"topic_id": topic})})
	require.NoError(t, err)
	task, ok := res.(*a2a.Task)
	require.True(t, ok, "a job is a task: %T", res)
	require.Equal(t, a2a.TaskStateInputRequired, task.Status.State, "the draft brief awaits review")
	return task
}

// approval answers the input-required task: the review step's submission,
// approving the brief (step.awaiting.submit, the task's id and context).
func approval(task *a2a.Task) *a2a.Message {
	return a2a.NewMessageForTask(a2a.MessageRoleUser, task, a2a.DataPart{Data: map[string]any{
		"action": "step.awaiting.submit",
		"input":  map[string]any{"review_text": "# Brief\n\nApproved as drafted.", "approve_review": true},
	}})
}

// event is what a test asserts of one streamed event.
type event struct {
	Kind  string // task, artifact-update or status-update
	State a2a.TaskState
	Final bool
}

// collect reads a stream to its end: every event of task id, in order, and
// the job_state of the last artifact-update.
func collect(t *testing.T, id a2a.TaskID, stream iter.Seq2[a2a.Event, error]) ([]event, map[string]any) {
	t.Helper()
	var got []event
	var jobState map[string]any
	for ev, err := range stream {
		require.NoError(t, err)
		switch ev := ev.(type) {
		case *a2a.Task:
			assert.Equal(t, id, ev.ID)
			got = append(got, event{Kind: "task", State: ev.Status.State})
		case *a2a.TaskArtifactUpdateEvent:
			assert.Equal(t, id, ev.TaskID)
			require.Len(t, ev.Artifact.Parts, 1)
			data, ok := ev.Artifact.Parts[0].(a2a.DataPart)
			require.True(t, ok, "the job_state artifact is a data part: %T", ev.Artifact.Parts[0])
			jobState = data.Data
			got = append(got, event{Kind: "artifact-update"})
		case *a2a.TaskStatusUpdateEvent:
			assert.Equal(t, id, ev.TaskID)
			got = append(got, event{Kind: "status-update", State: ev.Status.State, Final: ev.Final})
		default:
			t.Fatalf("unexpected event %T", ev)
		}
	}
	return got, jobState
}

// sendStatus is the status of the send step (the work case) in a job_state.
func sendStatus(t *testing.T, jobState map[string]any) string {
	t.Helper()
	cases, _ := jobState["cases"].([]any)
	require.Len(t, cases, 3, "setup, delivery and deliverable cases: %v", jobState)
	work, _ := cases[1].(map[string]any)
	steps, _ := work["steps"].([]any)
	require.Len(t, steps, 1, "%v", work)
	step, _ := steps[0].(map[string]any)
	status, _ := step["status"].(string)
	return status
}

// toTheEnd is the rest of an approved job's life as a stream shows it from
// the working task: the job_state with the brief sent, then completed, final.
var toTheEnd = []event{{Kind: "task", State: a2a.TaskStateWorking}, {Kind: "artifact-update"},
	{Kind: "status-update", State: a2a.TaskStateCompleted, Final: true}}

// TestExampleTaskLifecycle: the official Go client drives the research agent
// binary (local mode, bbolt) through a whole job, as any A2A client would:
// job.start and the same message again (byte-identical answers), the answer
// to the input-required task (the review's approval) non-blocking (working,
// byte-identical again), tasks/get while the brief waits its send delay,
// tasks/resubscribe from then to the final event; message/stream of an
// approval (the task, the updates in order, final); blocking message/send
// (the state the job reaches); tasks/cancel during the send delay; and
// tasks/get of each after a restart.
func TestExampleTaskLifecycle(t *testing.T) {
	bin, env := buildExample(t), localEnv(t.TempDir(), "RESEARCH_AGENT_SEND_DELAY="+sendDelay)
	proc, c := runExample(t, bin, env)

	// job.start, twice with the same messageId: the same task, byte for byte.
	msg := call("job.start", map[string]any{"topic_id": "ev-batteries"})
	res, err := c.nonBlocking.SendMessage(callCtx(t), &a2a.MessageSendParams{Message: msg})
	require.NoError(t, err)
	task := res.(*a2a.Task)
	assert.Equal(t, a2a.TaskStateInputRequired, task.Status.State)
	first := c.rec.last(t)
	_, err = c.nonBlocking.SendMessage(callCtx(t), &a2a.MessageSendParams{Message: msg})
	require.NoError(t, err)
	sameAnswer(t, first, c.rec.last(t))

	// The approval, non-blocking: the job is working (its brief waits the
	// send delay); again with the same messageId: the same answer.
	approve := approval(task)
	res, err = c.nonBlocking.SendMessage(callCtx(t), &a2a.MessageSendParams{Message: approve})
	require.NoError(t, err)
	working, ok := res.(*a2a.Task)
	require.True(t, ok, "the approval answers the task: %T %+v", res, res)
	assert.Equal(t, task.ID, working.ID)
	assert.Equal(t, task.ContextID, working.ContextID)
	assert.Equal(t, a2a.TaskStateWorking, working.Status.State, "a non-blocking send answers at once")
	first = c.rec.last(t)
	_, err = c.nonBlocking.SendMessage(callCtx(t), &a2a.MessageSendParams{Message: approve})
	require.NoError(t, err)
	sameAnswer(t, first, c.rec.last(t))

	// Mid-job: tasks/get refreshes through the agent's job.sync, so the job
	// is still working in the agent; a resubscription from here sees the
	// rest of its life and ends with the final event.
	got, err := c.nonBlocking.GetTask(callCtx(t), &a2a.TaskQueryParams{ID: task.ID})
	require.NoError(t, err)
	require.Equal(t, a2a.TaskStateWorking, got.Status.State, "the brief waits its send delay (%s)", sendDelay)
	events, jobState := collect(t, task.ID, c.nonBlocking.ResubscribeToTask(callCtx(t), &a2a.TaskIDParams{ID: task.ID}))
	assert.Equal(t, toTheEnd, events)
	assert.Equal(t, "completed", sendStatus(t, jobState), "the brief was sent")
	got, err = c.nonBlocking.GetTask(callCtx(t), &a2a.TaskQueryParams{ID: task.ID})
	require.NoError(t, err)
	assert.Equal(t, a2a.TaskStateCompleted, got.Status.State)

	// message/stream of an approval: the task, the updates in order, final.
	streamed := startJob(t, c.nonBlocking, "solid-state")
	events, jobState = collect(t, streamed.ID, c.nonBlocking.SendStreamingMessage(callCtx(t), &a2a.MessageSendParams{Message: approval(streamed)}))
	assert.Equal(t, toTheEnd, events)
	assert.Equal(t, "completed", sendStatus(t, jobState))

	// Blocking: job.start answers the state the job reaches (input-required,
	// at once); the approval waits the send delay and answers completed.
	blocking := true
	cfg := &a2a.MessageSendConfig{Blocking: &blocking}
	res, err = c.blocking.SendMessage(callCtx(t), &a2a.MessageSendParams{Message: call("job.start", map[string]any{"topic_id": "sodium-ion"}), Config: cfg})
	require.NoError(t, err)
	blocked := res.(*a2a.Task)
	assert.Equal(t, a2a.TaskStateInputRequired, blocked.Status.State)
	res, err = c.blocking.SendMessage(callCtx(t), &a2a.MessageSendParams{Message: approval(blocked), Config: cfg})
	require.NoError(t, err)
	done := res.(*a2a.Task)
	assert.Equal(t, blocked.ID, done.ID)
	assert.Equal(t, a2a.TaskStateCompleted, done.Status.State, "blocking: the state the job reaches")

	// tasks/cancel during the send delay recalls the brief.
	recalled := startJob(t, c.nonBlocking, "hydrogen")
	res, err = c.nonBlocking.SendMessage(callCtx(t), &a2a.MessageSendParams{Message: approval(recalled)})
	require.NoError(t, err)
	require.Equal(t, a2a.TaskStateWorking, res.(*a2a.Task).Status.State)
	canceled, err := c.nonBlocking.CancelTask(callCtx(t), &a2a.TaskIDParams{ID: recalled.ID})
	require.NoError(t, err)
	assert.Equal(t, a2a.TaskStateCanceled, canceled.Status.State)
	require.Len(t, canceled.Artifacts, 1)
	data, ok := canceled.Artifacts[0].Parts[0].(a2a.DataPart)
	require.True(t, ok)
	assert.Equal(t, "cancelled", sendStatus(t, data.Data), "the brief was never sent")

	// After a restart on the same store, each task in the state it reached.
	proc.Stop(t, syscall.SIGTERM)
	_, c = runExample(t, bin, env)
	for id, want := range map[a2a.TaskID]a2a.TaskState{task.ID: a2a.TaskStateCompleted, streamed.ID: a2a.TaskStateCompleted,
		blocked.ID: a2a.TaskStateCompleted, recalled.ID: a2a.TaskStateCanceled} {
		got, err := c.nonBlocking.GetTask(callCtx(t), &a2a.TaskQueryParams{ID: id})
		require.NoError(t, err)
		assert.Equal(t, want, got.Status.State, "task %s after a restart", id)
	}
}
