package supervaizer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	supervaizer "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/a2atask"
	"github.com/supervaize/supervaizer-go/contracts"
	svtest "github.com/supervaize/supervaizer-go/testing"
)

// The A2A task agent of the a2atasks tests: jobs whose status the test sets.
const (
	taskAgentName = "Task Agent"
	taskAgentSlug = "task-agent"
)

// taskJobs is the task agent's job store: status and status text by job id.
type taskJobs struct {
	mu   sync.Mutex
	jobs map[string]*taskJob
	// calls counts the requests the handlers received and lastReq holds the
	// last one: no list of them, which would grow with a benchmark's b.N
	// (and its copying and GC with it).
	calls   int
	lastReq supervaizer.ActionRequest
}

type taskJob struct {
	mission, status, text string
	awaiting              bool
}

// taskStartInput is job.start's typed input.
type taskStartInput struct {
	TopicID  string `json:"topic_id"`
	Status   string `json:"status,omitempty"`
	Text     string `json:"text,omitempty"`
	Awaiting bool   `json:"awaiting,omitempty"`
}

// taskSetInput is job.advance's typed input.
type taskSetInput struct {
	Status string `json:"status"`
	Effect bool   `json:"effect,omitempty"` // answer with an effect only, no job_state
}

func (j *taskJobs) seen(req *supervaizer.ActionRequest) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.calls++
	j.lastReq = *req
}

func (j *taskJobs) last() supervaizer.ActionRequest {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.lastReq
}

// count is the number of requests the handlers received.
func (j *taskJobs) count() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.calls
}

// state is the job_state of job id (locked by the caller).
func (j *taskJobs) state(id string) *supervaizer.JobState {
	job := j.jobs[id]
	st := &supervaizer.JobState{Job: supervaizer.Job{ID: id, AgentSlug: taskAgentSlug, MissionID: job.mission, Status: job.status,
		Source: supervaizer.JobSource{Type: "fresh_start"}}}
	if job.text != "" {
		st.Job.Display = &contracts.JobDisplay{StateLabel: job.text}
	}
	step := supervaizer.Step{ID: "step-1", Activity: "operation", Status: "completed", Title: "Draft"}
	if job.awaiting {
		step.Status = "awaiting"
		step.Awaiting = &supervaizer.Awaiting{Reason: "review", Surface: "case.step.awaiting", Action: "step.awaiting.submit"}
	}
	st.Cases = []supervaizer.Case{{ID: "case-1", Lane: "work", Title: "Draft", Steps: []supervaizer.Step{step}}}
	return st
}

// newTaskServer serves the task agent with opts (local mode when none
// configures authorization) and returns it with its job store.
func newTaskServer(tb testing.TB, opts ...supervaizer.Option) (*supervaizer.Server, *taskJobs) {
	tb.Helper()
	return serveTaskAgent(tb, newTaskAgent(tb, "job.stop", "job.sync"), opts...)
}

// newTaskAgent builds the task agent; with declares job.stop and job.sync
// when listed.
func newTaskAgent(tb testing.TB, with ...string) *supervaizer.Agent {
	tb.Helper()
	a, err := supervaizer.NewAgent(supervaizer.AgentSpec{
		Name: taskAgentName, Version: "1.0.0", Description: "Runs jobs for A2A clients.",
		Registration: supervaizer.RegistrationSpec{
			Surfaces: supervaizer.Surfaces("job.start"),
			Actions: append(supervaizer.Actions(append([]string{"job.start", "job.advance", "note.fail", "note.echo"}, with...)...),
				supervaizer.HelpAction("topic.help", "")),
		},
	})
	require.NoError(tb, err)
	return a
}

// serveTaskAgent registers the task agent's handlers on a.
func serveTaskAgent(tb testing.TB, a *supervaizer.Agent, opts ...supervaizer.Option) (*supervaizer.Server, *taskJobs) {
	tb.Helper()
	srv, err := supervaizer.NewServer([]*supervaizer.Agent{a}, append([]supervaizer.Option{
		supervaizer.WithEnv(emptyEnv), supervaizer.WithServerID(testServerID),
		supervaizer.WithAPIKey(testWriteKey, supervaizer.ScopeWrite)}, opts...)...)
	require.NoError(tb, err)
	jobs := &taskJobs{jobs: map[string]*taskJob{}}
	handleTaskJobs(a, jobs)
	return srv, jobs
}

// handleTaskJobs registers the task agent's handlers.
func handleTaskJobs(a *supervaizer.Agent, jobs *taskJobs) {
	supervaizer.HandleActionFor(a, "job.start", func(_ context.Context, req *supervaizer.ActionRequest, in taskStartInput) (*supervaizer.ActionResult, error) {
		jobs.seen(req)
		if in.TopicID == "reject" {
			return supervaizer.Fail("topic_rejected", "the topic %q is refused", in.TopicID), nil
		}
		jobs.mu.Lock()
		defer jobs.mu.Unlock()
		status := in.Status
		if status == "" {
			status = "pending"
		}
		jobs.jobs[req.JobID] = &taskJob{mission: req.MissionID, status: status, text: in.Text, awaiting: in.Awaiting}
		res := supervaizer.OK(supervaizer.JobStarted(req.JobID, map[string]any{"topic_id": in.TopicID}))
		res.JobState = jobs.state(req.JobID)
		return res, nil
	})
	handle := func(id string, h supervaizer.ActionHandler) {
		if a.Registration().Capabilities.HasAction(id) {
			a.HandleAction(id, h)
		}
	}
	handle("job.sync", func(_ context.Context, req *supervaizer.ActionRequest) (*supervaizer.ActionResult, error) {
		jobs.seen(req)
		jobs.mu.Lock()
		defer jobs.mu.Unlock()
		if jobs.jobs[req.JobID] == nil {
			return supervaizer.Fail("job_not_found", "no job %s", req.JobID), nil
		}
		res := supervaizer.OK(supervaizer.Effect{Type: "job.synced", JobID: req.JobID, Status: jobs.jobs[req.JobID].status})
		res.JobState = jobs.state(req.JobID)
		return res, nil
	})
	handle("job.stop", func(_ context.Context, req *supervaizer.ActionRequest) (*supervaizer.ActionResult, error) {
		jobs.seen(req)
		jobs.mu.Lock()
		defer jobs.mu.Unlock()
		job := jobs.jobs[req.JobID]
		if job == nil {
			return supervaizer.Fail("job_not_found", "no job %s", req.JobID), nil
		}
		if job.mission == "unstoppable" {
			return supervaizer.Fail("job_busy", "job %s cannot stop now", req.JobID), nil
		}
		if job.status == "completed" { // it finished first: nothing to stop
			res := supervaizer.OK(supervaizer.Effect{Type: "job.stop.ignored", JobID: req.JobID, Status: job.status})
			res.JobState = jobs.state(req.JobID)
			return res, nil
		}
		job.status, job.awaiting = "stopped", false
		res := supervaizer.OK(supervaizer.Effect{Type: "job.stopped", JobID: req.JobID, Status: "stopped"})
		res.JobState = jobs.state(req.JobID)
		return res, nil
	})
	supervaizer.HandleActionFor(a, "job.advance", func(_ context.Context, req *supervaizer.ActionRequest, in taskSetInput) (*supervaizer.ActionResult, error) {
		jobs.seen(req)
		jobs.mu.Lock()
		defer jobs.mu.Unlock()
		job := jobs.jobs[req.JobID]
		if job == nil {
			return supervaizer.Fail("job_not_found", "no job %s", req.JobID), nil
		}
		job.status = in.Status
		res := supervaizer.OK(supervaizer.Effect{Type: "job.progressed", JobID: req.JobID, Status: in.Status, Message: "now " + in.Status})
		if !in.Effect {
			res.JobState = jobs.state(req.JobID)
		}
		return res, nil
	})
	a.HandleAction("topic.help", func(_ context.Context, req *supervaizer.ActionRequest) (*supervaizer.ActionResult, error) {
		jobs.seen(req)
		return supervaizer.OK(supervaizer.Effect{Type: "help.given", Data: map[string]any{"text": "pick a topic"}}), nil
	})
	a.HandleAction("note.fail", func(_ context.Context, req *supervaizer.ActionRequest) (*supervaizer.ActionResult, error) {
		jobs.seen(req)
		return supervaizer.Fail("note_refused", "no notes today"), nil
	})
	a.HandleAction("note.echo", func(_ context.Context, req *supervaizer.ActionRequest) (*supervaizer.ActionResult, error) {
		jobs.seen(req)
		return supervaizer.OK(supervaizer.Effect{Type: "note.echoed", Data: map[string]any{"input": req.Input}}), nil
	})
}

// taskMessage is message/send params calling action with input (nil: none).
func taskMessage(messageID, action string, input any, mod func(params, message map[string]any)) map[string]any {
	data := map[string]any{"action": action}
	if input != nil {
		data["input"] = input
	}
	msg := map[string]any{"kind": "message", "role": "user", "messageId": messageID,
		"parts": []any{map[string]any{"kind": "data", "data": data}}}
	p := map[string]any{"message": msg}
	if mod != nil {
		mod(p, msg)
	}
	return p
}

// a2aCall is one POST /a2a of the a2atasks tests.
type a2aCall struct {
	method string
	params any
	token  string // workspace token; "" sends none
	raw    []byte // the body, instead of method and params
}

// postA2A serves c through srv and returns the HTTP response.
func postA2A(tb testing.TB, srv http.Handler, c a2aCall) *httptest.ResponseRecorder {
	tb.Helper()
	body := c.raw
	if body == nil {
		body = rpcBody(tb, "a2a-1", c.method, c.params)
	}
	r := httptest.NewRequest(http.MethodPost, "http://localhost/a2a", bytes.NewReader(body)) // local mode serves loopback hosts only
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set(supervaizer.HeaderAPIKey, testWriteKey)
	if c.token != "" {
		r.Header.Set(supervaizer.HeaderWorkspaceAuthorization, c.token)
	}
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, r)
	return w
}

// callA2A serves c and decodes the JSON-RPC response.
func callA2A(tb testing.TB, srv http.Handler, c a2aCall) rpcResponse {
	tb.Helper()
	return decodeRPC(tb, postA2A(tb, srv, c))
}

// taskOf decodes a result that must be a Task.
func taskOf(tb testing.TB, resp rpcResponse) a2atask.Task {
	tb.Helper()
	require.Nil(tb, resp.Error, "error: %+v", resp.Error)
	var task a2atask.Task
	require.NoError(tb, json.Unmarshal(resp.Result, &task))
	require.Equal(tb, "task", task.Kind, "result: %s", resp.Result)
	return task
}

// taskClaims are claims for the task agent: its slug, workspace ws-1, the
// given scopes.
func taskClaims(scopes ...string) func(*svtest.Claims) {
	return func(c *svtest.Claims) {
		c.AgentSlug = taskAgentSlug
		c.Scopes = scopes
	}
}

// assertRefused checks that resp is the JSON-RPC error code and, when reason
// is set, that its data names that reason code (the -32030 token codes).
func assertRefused(t *testing.T, resp rpcResponse, code int, reason string) {
	t.Helper()
	require.NotNil(t, resp.Error, "result: %s", resp.Result)
	assert.Equal(t, code, resp.Error.Code)
	if reason != "" {
		var data struct{ Code string }
		require.NoError(t, json.Unmarshal(resp.Error.Data, &data))
		assert.Equal(t, reason, data.Code)
	}
}
