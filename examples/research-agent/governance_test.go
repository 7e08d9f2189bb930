package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/contracts"
	svtest "github.com/supervaize/supervaizer-go/testing"
)

// The Studio account of the governed tests.
const (
	studioKey       = "studio-account-key"
	ownerWorkspace  = "ws-owner"
	checkpointToken = "rule-checkpoint-token-secret"
	snapshotHash    = "rs_9a41c0"
)

// controllerKeyPEM is an RSA key for the controller, generated once: attached
// to Studio, the server needs one and generating it per test is slow.
var controllerKeyPEM = sync.OnceValues(func() (string, error) {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return "", err
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return "", err
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})), nil
})

// checkpointCall is one checkpoint request the fake Studio API received.
type checkpointCall struct {
	OccurrenceID string         `json:"occurrence_id"`
	Phase        string         `json:"phase"`
	SnapshotHash string         `json:"snapshot_hash"`
	JobID        string         `json:"job_id"`
	CaseID       string         `json:"case_id"`
	StepID       string         `json:"step_id"`
	Context      map[string]any `json:"context"`
	CheckpointID string         `json:"-"`
	InputHash    string         `json:"-"`
}

// studioAPI fakes the Studio endpoints a governed delivery calls: controller
// events (the case announcement), rule checkpoints and billing.
type studioAPI struct {
	t        *testing.T
	decide   func(phase string) string // allow, pause or stop
	serverID string                    // the controller Studio registers
	agentID  string                    // the agent's Studio id

	mu          sync.Mutex
	checkpoints []checkpointCall
	events      []string
	billed      []string
	checked     chan checkpointCall
}

func newStudioAPI(t *testing.T, studio *svtest.FakeStudio, decide func(phase string) string) (*studioAPI, *httptest.Server) {
	f := &studioAPI{t: t, decide: decide, serverID: studio.ServerID(), agentID: studio.StudioAgentID(agentSlug), checked: make(chan checkpointCall, 8)}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv
}

func (f *studioAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Api-Key "+studioKey {
		http.Error(w, `{"detail":"bad key"}`, http.StatusUnauthorized)
		return
	}
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	defer f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch r.URL.Path {
	case supervaizer.RuleCheckpointsPath:
		if r.Header.Get(supervaizer.HeaderRuleCheckpointToken) != checkpointToken {
			http.Error(w, `{"detail":"bad checkpoint token"}`, http.StatusForbidden)
			return
		}
		var c checkpointCall
		if err := json.Unmarshal(body, &c); err != nil {
			http.Error(w, `{"detail":"bad body"}`, http.StatusBadRequest)
			return
		}
		// Checkpoint calls are idempotent per (occurrence, phase).
		c.CheckpointID = "cp-" + c.OccurrenceID + "-" + c.Phase
		c.InputHash = "ih-" + c.Phase
		f.checkpoints = append(f.checkpoints, c)
		select {
		case f.checked <- c:
		default: // nobody is reading: the call is still in f.checkpoints
		}
		_ = json.NewEncoder(w).Encode(map[string]string{"checkpoint_id": c.CheckpointID, "status": f.decide(c.Phase),
			"snapshot_hash": c.SnapshotHash, "input_hash": c.InputHash})
	case "/w/" + ownerWorkspace + "/api/v1/ctrl-events/":
		var ev struct {
			EventType string `json:"event_type"`
		}
		_ = json.Unmarshal(body, &ev)
		if ev.EventType == string(supervaizer.EventServerRegister) {
			// The registration handshake (studio.md §5).
			_ = json.NewEncoder(w).Encode(map[string]any{"supervaizer_handshake": map[string]any{
				"server_id": f.serverID, "controller_api_key_match": true,
				"workspace_authorization": map[string]any{"audience": "supervaizer-server:" + f.serverID,
					"agents": []map[string]string{{"id": f.agentID, "slug": agentSlug}}},
			}})
			return
		}
		f.events = append(f.events, ev.EventType)
		_, _ = io.WriteString(w, `{}`)
	case "/w/" + ownerWorkspace + "/api/v1/agents/" + f.agentID:
		_ = json.NewEncoder(w).Encode(map[string]string{"id": f.agentID, "status": "online"})
	case "/w/" + ownerWorkspace + "/api/v1" + supervaizer.BillingConsumptionPath:
		var rep struct {
			Records []struct {
				IdempotencyKey string `json:"idempotency_key"`
			} `json:"records"`
		}
		_ = json.Unmarshal(body, &rep)
		receipts := []map[string]string{}
		for _, rec := range rep.Records {
			f.billed = append(f.billed, rec.IdempotencyKey)
			receipts = append(receipts, map[string]string{"idempotency_key": rec.IdempotencyKey, "status": supervaizer.ReceiptAccepted, "receipt_id": "rcpt-" + rec.IdempotencyKey})
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"receipts": receipts})
	default:
		http.NotFound(w, r)
	}
}

// next returns the next checkpoint call.
func (f *studioAPI) next(t *testing.T) checkpointCall {
	t.Helper()
	select {
	case c := <-f.checked:
		return c
	case <-time.After(5 * time.Second):
		t.Fatal("no checkpoint call within 5 s")
		return checkpointCall{}
	}
}

func (f *studioAPI) snapshot() (checkpoints []checkpointCall, events, billed []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]checkpointCall(nil), f.checkpoints...), append([]string(nil), f.events...), append([]string(nil), f.billed...)
}

// lockedBuffer collects the agent's logs.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// governedEnv is the environment of an agent attached to the fake Studio API.
func governedEnv(t *testing.T, studio *svtest.FakeStudio, apiURL string) map[string]string {
	t.Helper()
	keyPEM, err := controllerKeyPEM()
	require.NoError(t, err)
	env := studioEnv(studio, t.TempDir())
	env["SUPERVAIZE_API_URL"] = apiURL
	env["SUPERVAIZE_API_KEY"] = studioKey
	env["SUPERVAIZE_WORKSPACE_ID"] = ownerWorkspace
	env["SUPERVAIZER_PUBLIC_URL"] = "http://127.0.0.1:8080"
	env["SUPERVAIZER_PRIVATE_KEY"] = keyPEM
	return env
}

// governedHarness starts the agent attached to the fake Studio API, with its
// logs captured.
func governedHarness(t *testing.T, decide func(string) string) (*harness, *studioAPI, *lockedBuffer) {
	t.Helper()
	studio := svtest.NewFakeStudio(t)
	api, apiSrv := newStudioAPI(t, studio, decide)
	h, logs := startGoverned(t, studio, governedEnv(t, studio, apiSrv.URL), nil)
	return h, api, logs
}

// startGoverned starts the agent with env, registers it with the fake Studio
// API and returns it with its logs. A non-nil sender replaces the outbox
// sender before any delivery can run... except those newApp resumes: use it
// only on a fresh store.
func startGoverned(t *testing.T, studio *svtest.FakeStudio, env map[string]string, snd sender) (*harness, *lockedBuffer) {
	t.Helper()
	logs := &lockedBuffer{}
	cfg, err := loadConfig(func(k string) string { return env[k] })
	require.NoError(t, err)
	cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cfg.RecheckDecision = 20 * time.Millisecond
	a, err := newApp(cfg)
	require.NoError(t, err)
	h := &harness{t: t, app: a, studio: studio, srv: httptest.NewServer(a.Handler()), dbPath: cfg.DBPath}
	h.client = &client{t: t, base: h.srv.URL, studio: studio}
	t.Cleanup(h.stop)
	require.NotNil(t, a.srv.Account(), "attached to Studio")
	// As main does: register with Studio, which links the agent to its id.
	require.NoError(t, a.srv.Start(t.Context()))
	id, linked := a.agent.StudioAgentID()
	require.True(t, linked)
	require.Equal(t, studio.StudioAgentID(agentSlug), id)
	if snd != nil {
		a.sender = snd
	}
	return h, logs
}

func ruleSnapshot() map[string]any {
	return map[string]any{"hash": snapshotHash, "version": 1, "checkpoint_token": checkpointToken,
		"checkpoint_url": "https://attacker.example/steal"}
}

// approveGoverned starts a governed job with one contact and approves its brief.
func approveGoverned(t *testing.T, c *client) *contracts.JobState {
	t.Helper()
	res := c.invoke(actionRequest(t, wsA, "resource.contacts.create", map[string]any{"item": map[string]any{"name": "Ada", "email": "ada@example.com"}}))
	require.Equal(t, contracts.StatusOK, res.Status, "%+v", res.Errors)
	req := actionRequest(t, wsA, actionStart, map[string]any{"topic_id": "t-1", "rule_snapshot": ruleSnapshot()})
	req.JobID, req.IdempotencyKey = "job-g", "setup-g"
	res = c.invoke(req)
	require.Equal(t, contracts.StatusOK, res.Status, "%+v", res.Errors)
	st := res.JobState
	sub := jobRequest(t, wsA, actionSubmit, "job-g", map[string]any{"review_text": "# Governed brief", "approve_review": true})
	sub.CaseID, sub.StepID = st.Cases[0].ID, st.Cases[0].Steps[0].ID
	res = c.invoke(sub)
	require.Equal(t, contracts.StatusOK, res.Status, "%+v", res.Errors)
	return res.JobState
}

func outboxHas(t *testing.T, h *harness, jobID string) bool {
	t.Helper()
	_, found, err := h.app.store.Get(t.Context(), outboxKey(mustScope(t, wsA.id), jobID))
	require.NoError(t, err)
	return found
}

// TestGovernedDeliveryAllowed: both checkpoints allow; the case is announced
// first, the brief is sent once and billed once, and the snapshot's token is
// never logged.
func TestGovernedDeliveryAllowed(t *testing.T) {
	h, api, logs := governedHarness(t, func(string) string { return supervaizer.CheckpointAllow })
	st := approveGoverned(t, h.client)
	res := h.client.waitStatus(wsA, "job-g", jobCompleted)
	assert.Equal(t, "completed", res.JobState.Cases[1].Steps[0].Status)
	assert.True(t, outboxHas(t, h, "job-g"))

	require.Eventually(t, func() bool { _, _, billed := api.snapshot(); return len(billed) == 1 }, 5*time.Second, 5*time.Millisecond)
	checkpoints, events, billed := api.snapshot()
	require.Len(t, checkpoints, 2)
	assert.Equal(t, []string{contracts.PhaseBefore, contracts.PhaseAfter}, []string{checkpoints[0].Phase, checkpoints[1].Phase})
	for _, c := range checkpoints {
		assert.Equal(t, "send-brief-job-g", c.OccurrenceID)
		assert.Equal(t, snapshotHash, c.SnapshotHash)
		assert.Equal(t, st.Cases[1].ID, c.CaseID)
		assert.Equal(t, st.Cases[1].Steps[0].ID, c.StepID)
	}
	assert.Equal(t, map[string]any{"operation": "send_brief", "channel": "email", "recipients": float64(1)}, checkpoints[0].Context)
	assert.Equal(t, []string{"agent.case.start"}, events, "the case is announced before any checkpoint")
	assert.Equal(t, []string{"brief-job-g"}, billed)
	poll(t, func() bool {
		rec, err := h.app.jobs.get(t.Context(), mustScope(t, wsA.id), "job-g")
		require.NoError(t, err)
		return rec.Delivery.Billed
	}, "the report is recorded on the job")

	assert.NotContains(t, logs.String(), checkpointToken)
	raw, rerr := h.client.invokeRaw(jobRequest(t, wsA, actionSync, "job-g", nil))
	require.Nil(t, rerr)
	assert.NotContains(t, string(raw), checkpointToken, "the snapshot never reaches a job_state")
}

// TestGovernedDeliveryStopped: Studio stops the brief before it is sent.
func TestGovernedDeliveryStopped(t *testing.T) {
	h, api, _ := governedHarness(t, func(string) string { return supervaizer.CheckpointStop })
	approveGoverned(t, h.client)
	res := h.client.waitStatus(wsA, "job-g", jobFailed)
	assert.Equal(t, "a rule checkpoint stopped the brief before it was sent", res.JobState.Cases[1].Metadata["failure"])
	assert.False(t, outboxHas(t, h, "job-g"), "the effect never ran")
	checkpoints, _, billed := api.snapshot()
	assert.Len(t, checkpoints, 1)
	assert.Empty(t, billed)
}

// TestGovernedDeliveryPausedThenResumed: the before checkpoint pauses; the
// delivery waits (no polling) until Studio pushes its decision through
// rule.checkpoint.resume.
func TestGovernedDeliveryPausedThenResumed(t *testing.T) {
	h, api, _ := governedHarness(t, func(phase string) string {
		if phase == contracts.PhaseBefore {
			return supervaizer.CheckpointPause
		}
		return supervaizer.CheckpointAllow
	})
	approveGoverned(t, h.client)
	before := api.next(t)
	res := h.client.invoke(jobRequest(t, wsA, actionSync, "job-g", nil))
	assert.Equal(t, jobActive, res.JobState.Job.Status, "waiting for the decision")
	assert.False(t, outboxHas(t, h, "job-g"))

	resume := jobRequest(t, wsA, supervaizer.RuleCheckpointResumeAction, "job-g", map[string]any{
		"checkpoint_id": before.CheckpointID, "occurrence_id": before.OccurrenceID, "phase": contracts.PhaseBefore,
		"status": supervaizer.CheckpointAllow, "snapshot_hash": snapshotHash, "input_hash": before.InputHash, "decision_id": "dec-1"})
	resume.CaseID = before.CaseID
	res = h.client.invoke(resume)
	require.Equal(t, contracts.StatusOK, res.Status, "%+v", res.Errors)
	assert.Equal(t, supervaizer.EffectRuleCheckpointResumed, res.Effects[0].Type)

	h.client.waitStatus(wsA, "job-g", jobCompleted)
	assert.True(t, outboxHas(t, h, "job-g"))
}

// TestGovernedStartNeedsStudio: a governed job cannot be gated without a
// Studio account; it is refused at job.start rather than failing later.
func TestGovernedStartNeedsStudio(t *testing.T) {
	_, ts := newTestServer(t)
	req := ts.Request(actionStart, map[string]any{"topic_id": "t-1", "rule_snapshot": ruleSnapshot()})
	req.JobID = "job-1"
	res, err := ts.Invoke(t.Context(), req)
	require.NoError(t, err)
	assert.Equal(t, codeGovernance, errorCode(res))
	assert.False(t, strings.Contains(fmt.Sprint(res.Errors), checkpointToken))
}

// TestGovernedPauseSurvivesRestart: the agent stops while its delivery waits
// for a paused before checkpoint. After the restart, Studio's decision is
// persisted by the SDK's rule.checkpoint.resume handler, and the resumed
// delivery finds it.
func TestGovernedPauseSurvivesRestart(t *testing.T) {
	studio := svtest.NewFakeStudio(t)
	api, apiSrv := newStudioAPI(t, studio, func(phase string) string {
		if phase == contracts.PhaseBefore {
			return supervaizer.CheckpointPause
		}
		return supervaizer.CheckpointAllow
	})
	env := governedEnv(t, studio, apiSrv.URL)
	h, logs1 := startGoverned(t, studio, env, nil)
	approveGoverned(t, h.client)
	before := api.next(t)
	require.Eventually(t, func() bool { return strings.Contains(logs1.String(), "rule checkpoint waiting for a decision") },
		5*time.Second, 5*time.Millisecond, "the pause is persisted")
	h.stop()

	h2, logs := startGoverned(t, studio, env, nil)
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(logs.String())
		}
	})
	resume := jobRequest(t, wsA, supervaizer.RuleCheckpointResumeAction, "job-g", map[string]any{
		"checkpoint_id": before.CheckpointID, "occurrence_id": before.OccurrenceID, "phase": contracts.PhaseBefore,
		"status": supervaizer.CheckpointAllow, "snapshot_hash": snapshotHash, "input_hash": before.InputHash, "decision_id": "dec-1"})
	resume.CaseID = before.CaseID
	res := h2.client.invoke(resume)
	require.Equal(t, contracts.StatusOK, res.Status, "%+v", res.Errors)
	h2.client.waitStatus(wsA, "job-g", jobCompleted)
	checkpoints, _, _ := api.snapshot()
	phases := make([]string, len(checkpoints))
	for i, c := range checkpoints {
		phases[i] = c.Phase
	}
	assert.Equal(t, []string{contracts.PhaseBefore, contracts.PhaseAfter}, phases, "the paused before checkpoint is not asked again")
	assert.True(t, outboxHas(t, h2, "job-g"))
	assert.Contains(t, logs.String(), errAwaitingDecision.Error())
}

// interruptedSender sends the brief, then hangs until the agent stops: the
// effect happened but its completion was never recorded.
type interruptedSender struct {
	outbox *outboxSender
	sent   chan struct{}
}

func (s *interruptedSender) Send(ctx context.Context, m message) (string, error) {
	r, err := s.outbox.Send(ctx, m)
	if err != nil {
		return "", err
	}
	close(s.sent)
	<-ctx.Done()
	return r, ctx.Err()
}

// TestGovernedRecoveryAfterInterruptedEffect: the agent stops after the
// brief went out but before the outcome was recorded. After the restart the
// delivery is recovered from the outbox: the brief is not sent again, only
// the after checkpoint is asked.
func TestGovernedRecoveryAfterInterruptedEffect(t *testing.T) {
	studio := svtest.NewFakeStudio(t)
	api, apiSrv := newStudioAPI(t, studio, func(string) string { return supervaizer.CheckpointAllow })
	env := governedEnv(t, studio, apiSrv.URL)
	h, _ := startGoverned(t, studio, env, nil)
	snd := &interruptedSender{outbox: &outboxSender{st: h.app.store, now: time.Now}, sent: make(chan struct{})}
	h.app.sender = snd
	approveGoverned(t, h.client)
	waitClosed(t, snd.sent, "the brief sent")
	h.stop()

	h2, _ := startGoverned(t, studio, env, nil)
	res := h2.client.waitStatus(wsA, "job-g", jobCompleted)
	assert.Equal(t, "completed", res.JobState.Cases[1].Steps[0].Status)
	checkpoints, _, _ := api.snapshot()
	require.Len(t, checkpoints, 2)
	assert.Equal(t, contracts.PhaseAfter, checkpoints[1].Phase)
}
