package testing_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	supervaizer "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/contracts"
	svtest "github.com/supervaize/supervaizer-go/testing"
)

// Test agents: "Research Agent" (slug research-agent) declares job.start,
// launch, echo, boom and the surface dashboard.
const (
	agentName  = "Research Agent"
	agentSlug  = "research-agent"
	surfaceID  = "dashboard"
	echoAction = "echo"
	boomAction = "boom"
	// launchAction is a start-like action outside the SDK's idempotency layer
	// (which always covers job.start), so the handler's own behaviour shows.
	launchAction = "launch"
)

// startInput is the typed input of job.start.
type startInput struct {
	TopicID string `json:"topic_id"`
}

// newAgent builds an agent declaring job.start, launch, echo, boom and the
// dashboard surface, without handlers.
func newAgent(t testing.TB, name string) *supervaizer.Agent {
	t.Helper()
	slug := strings.ReplaceAll(strings.ToLower(name), " ", "-")
	reg := supervaizer.RegistrationSpec{
		AgentSlug:          slug,
		DisplayName:        name,
		A2UICatalogVersion: "1.0.0",
		Actions:            supervaizer.Actions(contracts.DefaultStartAction, launchAction, echoAction, boomAction),
		Surfaces:           supervaizer.Surfaces(surfaceID),
	}
	a, err := supervaizer.NewAgent(supervaizer.AgentSpec{Name: name, Version: "1.0.0", Registration: reg})
	require.NoError(t, err)
	return a
}

// handlers selects the job.start behaviour of a test agent.
type startBehaviour int

const (
	startIdempotent    startBehaviour = iota // the protocol
	startFresh                               // a new job on every call
	startAppend                              // the retry appends an effect
	startLoose                               // replays by key, ignores input changes, not strictly idempotent
	startConflictAsRPC                       // a changed input is a JSON-RPC error
	startFewer                               // the retry drops an effect
	startRefuse                              // a business failure (status "error")
)

// newServedAgent returns a test agent with every handler registered; the
// handlers of job.start and launch (one each) behave as b.
func newServedAgent(t testing.TB, b startBehaviour) *supervaizer.Agent {
	t.Helper()
	a := newAgent(t, agentName)
	for _, id := range []string{contracts.DefaultStartAction, launchAction} {
		s := &starter{behaviour: b, results: map[string]stored{}}
		supervaizer.HandleActionFor(a, id, s.start)
	}
	a.HandleAction(echoAction, echo)
	a.HandleAction(boomAction, func(context.Context, *supervaizer.ActionRequest) (*supervaizer.ActionResult, error) {
		return nil, fmt.Errorf("boom")
	})
	a.HandleSurface(surfaceID, dashboard)
	return a
}

// echo returns the verified workspace context as an effect.
func echo(ctx context.Context, req *supervaizer.ActionRequest) (*supervaizer.ActionResult, error) {
	ws, ok := supervaizer.WorkspaceFrom(ctx)
	if !ok {
		return supervaizer.Fail("no_workspace", "no verified workspace"), nil
	}
	data := map[string]any{"grant_id": ws.GrantID, "agent_id": ws.AgentID, "scopes": ws.Scopes}
	if ws.AgentWorkspaceRef != nil {
		data["agent_workspace_ref"] = *ws.AgentWorkspaceRef
	}
	return supervaizer.OK(supervaizer.Effect{Type: "echoed", Data: data}), nil
}

func dashboard(ctx context.Context, req *supervaizer.SurfaceRequest) (*supervaizer.SurfaceResult, error) {
	return supervaizer.NewSurfaceResult(ctx, req.Surface, map[string]any{"type": contracts.DocumentConfigurator, "surface": req.Surface})
}

// stored is a job.start outcome remembered by idempotency key.
type stored struct {
	input  string // canonical input
	jobID  string
	result *supervaizer.ActionResult
}

// starter is a job.start handler with a selectable behaviour.
type starter struct {
	behaviour startBehaviour
	mu        sync.Mutex
	calls     int
	results   map[string]stored
}

func (s *starter) start(_ context.Context, req *supervaizer.ActionRequest, in startInput) (*supervaizer.ActionResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	canon, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	key := req.AgentSlug + "|" + req.Action + "|" + req.IdempotencyKey
	prev, seen := s.results[key]
	switch s.behaviour {
	case startFresh:
		return s.result(req, fmt.Sprintf("job-%d", s.calls), in, true), nil
	case startAppend:
		res := s.result(req, req.JobID, in, true)
		for i := 1; i < s.calls; i++ {
			res.Effects = append(res.Effects, supervaizer.Effect{Type: "job.retried", JobID: req.JobID})
		}
		return res, nil
	case startFewer:
		res := s.result(req, req.JobID, in, true)
		if s.calls == 1 {
			res.Effects = append(res.Effects, supervaizer.Effect{Type: "job.noted", JobID: req.JobID})
		}
		return res, nil
	case startRefuse:
		res := supervaizer.Fail("quota_exceeded", "no quota left")
		res.ReplaySafety = s.result(req, req.JobID, in, true).ReplaySafety
		return res, nil
	case startLoose:
		if seen {
			return prev.result, nil
		}
		res := s.result(req, req.JobID, in, false)
		s.results[key] = stored{input: string(canon), jobID: req.JobID, result: res}
		return res, nil
	}
	if req.IdempotencyKey != "" && seen {
		if prev.input == string(canon) && prev.jobID == req.JobID {
			return prev.result, nil
		}
		if s.behaviour == startConflictAsRPC {
			return nil, errors.New("conflict") // sent as -32603, like any handler error
		}
		res := supervaizer.Fail(contracts.ErrorIdempotencyConflict,
			"idempotency_key %s was already used with a different input or job", req.IdempotencyKey)
		rs := contracts.DefaultReplaySafety()
		rs.DedupeKeys, rs.StrictlyIdempotentResponse = []string{req.IdempotencyKey}, true
		res.ReplaySafety = &rs
		return res, nil
	}
	res := s.result(req, req.JobID, in, true)
	if req.IdempotencyKey != "" {
		s.results[key] = stored{input: string(canon), jobID: req.JobID, result: res}
	}
	return res, nil
}

func (s *starter) result(req *supervaizer.ActionRequest, jobID string, in startInput, strict bool) *supervaizer.ActionResult {
	res := supervaizer.OK(supervaizer.JobStarted(jobID, map[string]any{"topic_id": in.TopicID}))
	rs := contracts.DefaultReplaySafety()
	rs.StrictlyIdempotentResponse = strict
	if req.IdempotencyKey != "" {
		rs.DedupeKeys = []string{req.IdempotencyKey}
	}
	res.ReplaySafety = &rs
	return res
}

// startRequest is a request for the start-like action with an idempotency
// key and a job id.
func startRequest(ts *svtest.TestServer, action, topic string) contracts.ActionRequest {
	req := ts.Request(action, startInput{TopicID: topic})
	req.IdempotencyKey, req.JobID = "setup-7f3c", "job-77"
	return req
}

// recordingTB records failures instead of failing the test; every other
// method goes to the real test.
type recordingTB struct {
	testing.TB
	mu     sync.Mutex
	errors []string
	logged []string
	failed bool
}

func newRecordingTB(t testing.TB) *recordingTB { return &recordingTB{TB: t} }

func (r *recordingTB) Helper() {}

func (r *recordingTB) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
	r.failed = true
}

func (r *recordingTB) Error(args ...any) { r.Errorf("%s", fmt.Sprint(args...)) }

func (r *recordingTB) Fail() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failed = true
}

func (r *recordingTB) Failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failed
}

// Fatalf records the failure without stopping the goroutine: use it only
// with code that returns after Fatalf.
func (r *recordingTB) Fatalf(format string, args ...any) { r.Errorf(format, args...) }

func (r *recordingTB) Logf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logged = append(r.logged, fmt.Sprintf(format, args...))
}

func (r *recordingTB) logs() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.logged...)
}

func (r *recordingTB) messages() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.errors...)
}
