package supervaizer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	sv "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/checkpoint"
	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/store"
	"github.com/supervaize/supervaizer-go/studio"
	svtest "github.com/supervaize/supervaizer-go/testing"
)

// Identities of the rule-checkpoint tests, from the spec examples.
const (
	cpAgentName   = "Research Agent"
	cpAgentSlug   = "research-agent"
	cpOtherName   = "Audit Agent"
	cpOtherSlug   = "audit-agent"
	cpWorkspace   = "ws-1"
	cpAPIKey      = "studio-api-key-3b7e"
	cpToken       = "cpt-SECRET-9f1c2e7a"
	cpSnapshot    = "rs_9a41c0"
	cpJob         = "job-77"
	cpCase        = "case-1"
	cpOccurrence  = "send-brief-job-77-case-1"
	cpStep        = "step-send"
	cpSecretRef   = "case.metadata.customer_reference"
	cpMsgWaiting  = "rule checkpoint waiting for a decision"
	cpWaitTimeout = 10 * time.Second
)

// cpCall is one request received by the fake Studio.
type cpCall struct {
	Path   string
	Header http.Header
	Raw    []byte
	Body   map[string]any
}

func (c cpCall) str(key string) string { s, _ := c.Body[key].(string); return s }

// cpStudio is a fake Studio: POST /api/v1/rule-checkpoints/ and the ctrl-events
// endpoint. Checkpoints are answered with the status set for their phase
// (default allow), checkpoint id "cp-<phase>-<occurrence>" and input hash
// "ih-<phase>".
type cpStudio struct {
	srv *httptest.Server

	mu         sync.Mutex
	status     map[string]string         // phase -> decision
	fail       map[string]int            // phase -> HTTP status to answer instead
	override   http.HandlerFunc          // replaces the whole fake when set
	hook       func(c cpCall)            // runs before a checkpoint is answered
	answer     func(c cpCall) (int, any) // replaces the default answer when set
	checks     []cpCall                  // checkpoint calls
	events     []cpCall                  // controller events
	unexpected []string                  // other paths
}

func newCPStudio(t testing.TB) *cpStudio {
	s := &cpStudio{status: map[string]string{}, fail: map[string]int{}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *cpStudio) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	override := s.override
	s.mu.Unlock()
	if override != nil {
		override(w, r)
		return
	}
	s.handle(w, r)
}

// handle is the default behaviour of the fake.
func (s *cpStudio) handle(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	c := cpCall{Path: r.URL.Path, Header: r.Header.Clone(), Raw: raw}
	_ = json.Unmarshal(raw, &c.Body)
	switch {
	case r.Method == http.MethodPost && r.URL.Path == studio.RuleCheckpointsPath:
		s.mu.Lock()
		s.checks = append(s.checks, c)
		hook, answer := s.hook, s.answer
		status, fail := s.status[c.str("phase")], s.fail[c.str("phase")]
		s.mu.Unlock()
		if hook != nil {
			hook(c)
		}
		if answer != nil {
			code, body := answer(c)
			writeCPJSON(w, code, body)
			return
		}
		if fail != 0 {
			writeCPJSON(w, fail, map[string]any{"detail": "checkpoint service unavailable"})
			return
		}
		if status == "" {
			status = checkpoint.Allow
		}
		writeCPJSON(w, http.StatusOK, cpAnswer(c, status))
	case r.Method == http.MethodPost && r.URL.Path == "/w/"+cpWorkspace+"/api/v1/ctrl-events/":
		s.mu.Lock()
		s.events = append(s.events, c)
		s.mu.Unlock()
		writeCPJSON(w, http.StatusOK, map[string]any{"ok": true})
	default:
		s.mu.Lock()
		s.unexpected = append(s.unexpected, r.Method+" "+r.URL.Path)
		s.mu.Unlock()
		writeCPJSON(w, http.StatusNotFound, map[string]any{"detail": "Not Found"})
	}
}

// cpAnswer is the default checkpoint answer to c.
func cpAnswer(c cpCall, status string) map[string]any {
	phase := c.str("phase")
	return map[string]any{"checkpoint_id": "cp-" + phase + "-" + c.str("occurrence_id"), "status": status,
		"snapshot_hash": c.str("snapshot_hash"), "input_hash": "ih-" + phase}
}

func writeCPJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func (s *cpStudio) set(fn func(s *cpStudio)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fn(s)
}

// calls returns the checkpoint calls of phase ("" for all).
func (s *cpStudio) calls(phase string) []cpCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []cpCall
	for _, c := range s.checks {
		if phase == "" || c.str("phase") == phase {
			out = append(out, c)
		}
	}
	return out
}

func (s *cpStudio) caseEvents() []cpCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []cpCall
	for _, c := range s.events {
		if c.str("event_type") == string(studio.EventCaseStart) {
			out = append(out, c)
		}
	}
	return out
}

// cpLogs captures every log line (JSON, debug level) and signals each
// "waiting for a decision" line.
type cpLogs struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	waiting chan struct{}
}

func newCPLogs() *cpLogs { return &cpLogs{waiting: make(chan struct{}, 64)} }

func (l *cpLogs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if bytes.Contains(p, []byte(`"msg":"`+cpMsgWaiting+`"`)) {
		select {
		case l.waiting <- struct{}{}:
		default:
		}
	}
	return l.buf.Write(p)
}

func (l *cpLogs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func (l *cpLogs) logger() *slog.Logger {
	return slog.New(slog.NewJSONHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// awaitWaiting waits until a guarded step waits for a decision.
func (l *cpLogs) awaitWaiting(t testing.TB) {
	t.Helper()
	select {
	case <-l.waiting:
	case <-time.After(cpWaitTimeout):
		t.Fatal("the guarded step never waited for a decision")
	}
}

// cpFixture is a local-mode server with two agents declaring rule
// checkpoints, a Studio account on the fake Studio and a gate for job-77.
type cpFixture struct {
	studio   *cpStudio             // the private fake, unless api is set
	api      *svtest.FakeStudioAPI // svtest's fake Studio API, when the test gave one
	token    string                // the snapshot's checkpoint token
	logs     *cpLogs
	store    store.Store
	agent    *sv.Agent
	other    *sv.Agent
	srv      *sv.Server
	account  *studio.Client
	gate     *checkpoint.Gate
	effects  atomic.Int64
	advances atomic.Int64
}

type cpOptions struct {
	store        store.Store
	studio       *cpStudio             // default: a new fake Studio
	api          *svtest.FakeStudioAPI // svtest's fake instead of studio (see newCPAPI)
	checkpointTo string                // the snapshot's checkpoint_url
	server       []sv.Option
}

func cpRegistration(t testing.TB, slug, name string) *sv.Agent {
	t.Helper()
	reg := sv.RegistrationSpec{
		AgentSlug: slug, DisplayName: name, A2UICatalogVersion: slug + ".1",
		Surfaces: sv.Surfaces("job.start"), Actions: sv.Actions("job.start"),
		RuleCheckpoints: &contracts.RuleCheckpoints{Phases: []string{contracts.PhaseBefore, contracts.PhaseAfter},
			SecretRefs: []string{cpSecretRef}},
	}
	a, err := sv.NewAgent(sv.AgentSpec{Name: name, Version: "1.0.0", Registration: reg})
	require.NoError(t, err)
	return a
}

func newCPFixture(t testing.TB, opt cpOptions) *cpFixture {
	t.Helper()
	f := &cpFixture{studio: opt.studio, api: opt.api, logs: newCPLogs(), store: opt.store, token: cpToken}
	if f.studio == nil && f.api == nil {
		f.studio = newCPStudio(t)
	}
	if f.store == nil {
		f.store = store.NewMemory()
	}
	f.agent, f.other = cpRegistration(t, cpAgentSlug, cpAgentName), cpRegistration(t, cpOtherSlug, cpOtherName)
	var err error
	f.srv, err = sv.NewServer([]*sv.Agent{f.agent, f.other}, append([]sv.Option{sv.WithEnv(func(string) string { return "" }),
		sv.WithLocalMode(true), sv.WithStore(f.store), sv.WithLogger(f.logs.logger())}, opt.server...)...)
	require.NoError(t, err)
	require.NoError(t, f.srv.Start(context.Background())) // guarded steps call Studio only once the server started
	to := opt.checkpointTo
	if to == "" {
		to = "https://checkpoints.invalid/api/v1/rule-checkpoints/"
	}
	cfg, snapshot := studio.Config{WorkspaceID: cpWorkspace, APIKey: cpAPIKey}, cpSnapshotInput(cpSnapshot, to)
	if f.api != nil {
		require.Empty(t, opt.checkpointTo, "svtest's snapshot names its own checkpoint_url")
		cfg, snapshot = f.api.ClientConfig(), f.api.RuleSnapshot(cpSnapshot)
		f.token = snapshot["checkpoint_token"].(string)
	} else {
		cfg.APIURL = f.studio.srv.URL
	}
	cfg.MaxRetries, cfg.Logger = studio.NoRetries, f.logs.logger()
	f.account, err = studio.NewClient(cfg)
	require.NoError(t, err)
	f.gate = f.newGate(t, f.agent, cpJobStart(t, cpAgentSlug, cpJob, snapshot))
	return f
}

// newCPAPI is svtest's fake Studio API for the rule-checkpoint tests: the
// workspace and account key of the fixture, the before checkpoints of every
// occurrence answered beforeStatus ("" for allow).
func newCPAPI(t testing.TB, beforeStatus string) *svtest.FakeStudioAPI {
	t.Helper()
	api := svtest.NewFakeStudioAPI(t, svtest.NewFakeStudio(t), svtest.WithWorkspaceID(cpWorkspace), svtest.WithAccountKey(cpAPIKey))
	api.SetDecision(svtest.AnyOccurrence, contracts.PhaseBefore, beforeStatus)
	return api
}

// cpAPIToken returns the checkpoint token of a new rule snapshot of
// cpSnapshot issued by svtest's fake.
func cpAPIToken(api *svtest.FakeStudioAPI) string {
	return api.RuleSnapshot(cpSnapshot)["checkpoint_token"].(string)
}

// cpAPICalls returns the checkpoint calls of phase svtest's fake answered.
func cpAPICalls(api *svtest.FakeStudioAPI, phase string) []svtest.CheckpointCall {
	var out []svtest.CheckpointCall
	for _, c := range api.Checkpoints() {
		if c.Phase == phase {
			out = append(out, c)
		}
	}
	return out
}

// apiCall returns the first checkpoint of phase of the standard occurrence
// that svtest's fake answered.
func (f *cpFixture) apiCall(t testing.TB, phase string) svtest.CheckpointCall {
	t.Helper()
	for _, c := range cpAPICalls(f.api, phase) {
		if c.OccurrenceID == cpOccurrence {
			return c
		}
	}
	t.Fatalf("svtest's fake Studio answered no %s checkpoint of %s", phase, cpOccurrence)
	return svtest.CheckpointCall{}
}

// apiDecision is the valid resume input delivering status for the checkpoint
// of phase of the standard occurrence, as answered by svtest's fake.
func (f *cpFixture) apiDecision(t testing.TB, phase, status string) map[string]any {
	t.Helper()
	return f.apiCall(t, phase).ResumeInput(status, "dec_03")
}

func (f *cpFixture) newGate(t testing.TB, a *sv.Agent, req *sv.ActionRequest, opts ...checkpoint.GateOption) *checkpoint.Gate {
	t.Helper()
	g, err := checkpoint.NewGate(a.Checkpoints(), f.account, req, opts...)
	require.NoError(t, err)
	return g
}

// cpSnapshotInput is a rule_snapshot as Studio sends it.
func cpSnapshotInput(hash, checkpointURL string) map[string]any {
	return map[string]any{"hash": hash, "checkpoint_url": checkpointURL, "version": 1, "checkpoint_token": cpToken}
}

// cpJobStart is the job.start request of a governed job.
func cpJobStart(t testing.TB, slug, job string, snapshot any) *sv.ActionRequest {
	t.Helper()
	input := map[string]any{"topic_id": "battery"}
	if snapshot != nil {
		input["rule_snapshot"] = snapshot
	}
	raw, err := json.Marshal(input)
	require.NoError(t, err)
	return &sv.ActionRequest{RequestID: "req-start", Actor: contracts.Actor{UserID: "u-1"}, Workspace: contracts.WorkspaceRef{ID: cpWorkspace},
		MissionID: "mis-3", AgentSlug: slug, Surface: "job.start", Action: "job.start", JobID: job, Input: raw}
}

// step is the standard guarded step: an effect that returns "msg-42".
func (f *cpFixture) step(occurrence string) checkpoint.Step[string] {
	return checkpoint.Step[string]{
		CaseID: cpCase, CaseDetails: map[string]any{"name": "Case 1"}, OccurrenceID: occurrence, StepID: cpStep,
		BeforeContext: map[string]any{"operation": "send_brief", "channel": "email"},
		Effect: func(context.Context) (string, error) {
			f.effects.Add(1)
			return "msg-42", nil
		},
		AfterContext: cpAfterContext,
		Advance: func(context.Context, string) error {
			f.advances.Add(1)
			return nil
		},
	}
}

func cpAfterContext(result string) map[string]any {
	return map[string]any{"operation": "send_brief", "outcome": result}
}

type cpOutcome struct {
	result string
	err    error
}

// runAsync runs a guarded step on another goroutine.
func (f *cpFixture) runAsync(ctx context.Context, step checkpoint.Step[string]) <-chan cpOutcome {
	out := make(chan cpOutcome, 1)
	go func() {
		res, err := checkpoint.Run(ctx, f.gate, step)
		out <- cpOutcome{res, err}
	}()
	return out
}

func awaitOutcome(t testing.TB, ch <-chan cpOutcome) cpOutcome {
	t.Helper()
	select {
	case o := <-ch:
		return o
	case <-time.After(cpWaitTimeout):
		t.Fatal("the guarded step did not finish")
		return cpOutcome{}
	}
}

// decision is the valid resume input for the checkpoint of phase of the
// standard occurrence, as answered by the fake Studio.
func cpDecision(phase, status string) map[string]any {
	return map[string]any{"checkpoint_id": "cp-" + phase + "-" + cpOccurrence, "occurrence_id": cpOccurrence,
		"phase": phase, "status": status, "snapshot_hash": cpSnapshot, "input_hash": "ih-" + phase, "decision_id": "dec_03"}
}

// resumeParams is the rule.checkpoint.resume request for input.
func resumeParams(slug, job, caseID string, input map[string]any) map[string]any {
	return map[string]any{"request_id": "req-resume-1", "actor": map[string]any{"user_id": "studio"},
		"workspace": map[string]any{"id": cpWorkspace}, "mission_id": "mis-3", "agent_slug": slug,
		"surface": "mission.agent", "action": sv.RuleCheckpointResumeAction, "job_id": job, "case_id": caseID, "input": input}
}

// cpRPC is a decoded JSON-RPC response.
type cpRPC struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// invoke calls supervaizer/action.invoke on the server.
func (f *cpFixture) invoke(t testing.TB, params map[string]any) cpRPC {
	t.Helper()
	out, err := f.tryInvoke(params)
	require.NoError(t, err)
	return out
}

// tryInvoke is invoke for goroutines other than the test's.
func (f *cpFixture) tryInvoke(params map[string]any) (cpRPC, error) {
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": sv.MethodActionInvoke, "params": params})
	if err != nil {
		return cpRPC{}, err
	}
	r := httptest.NewRequest(http.MethodPost, "/a2a", bytes.NewReader(body))
	r.Host = "localhost" // local mode answers only loopback hosts
	r.Header.Set(sv.HeaderAPIKey, sv.LocalModeAPIKey)
	r.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	f.srv.ServeHTTP(w, r)
	var out cpRPC
	if w.Code != http.StatusOK {
		return out, fmt.Errorf("HTTP %d: %s", w.Code, w.Body.String())
	}
	if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil {
		return out, fmt.Errorf("%w: %s", err, w.Body.String())
	}
	return out, nil
}

// resume delivers a decision for the standard job and case.
func (f *cpFixture) resume(t testing.TB, input map[string]any) cpRPC {
	t.Helper()
	return f.invoke(t, resumeParams(cpAgentSlug, cpJob, cpCase, input))
}
