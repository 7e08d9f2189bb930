package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/checkpoint"
	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/internal/tools/proctest"
	"github.com/supervaize/supervaizer-go/store"
	"github.com/supervaize/supervaizer-go/studio"
	svtest "github.com/supervaize/supervaizer-go/testing"
)

// snapshotHash is the hash of the rule snapshot of the governed jobs.
const snapshotHash = "rs_9a41c0"

// governedEnv is the environment of an agent attached to the fake Studio API.
func governedEnv(t *testing.T, studio *svtest.FakeStudio, api *svtest.FakeStudioAPI) map[string]string {
	t.Helper()
	env := studioEnv(studio, t.TempDir())
	maps.Copy(env, api.Env()) // SUPERVAIZE_API_URL, SUPERVAIZE_API_KEY, SUPERVAIZE_WORKSPACE_ID
	env["SUPERVAIZER_PUBLIC_URL"] = "http://127.0.0.1:8080"
	env["SUPERVAIZER_PRIVATE_KEY"] = svtest.ControllerKeyPEM(t)
	return env
}

// newGovernedAPI is a fake Studio API answering the before and after
// checkpoints with the given decisions.
func newGovernedAPI(t *testing.T, studio *svtest.FakeStudio, before, after string) *svtest.FakeStudioAPI {
	t.Helper()
	api := svtest.NewFakeStudioAPI(t, studio)
	api.SetDecision(svtest.AnyOccurrence, contracts.PhaseBefore, before)
	api.SetDecision(svtest.AnyOccurrence, contracts.PhaseAfter, after)
	return api
}

// governedHarness starts the agent attached to a fake Studio API deciding
// before and after, with its logs captured.
func governedHarness(t *testing.T, before, after string) (*harness, *svtest.FakeStudioAPI, *proctest.Buffer) {
	t.Helper()
	studio := svtest.NewFakeStudio(t)
	api := newGovernedAPI(t, studio, before, after)
	h, logs := startGoverned(t, studio, governedEnv(t, studio, api), nil)
	return h, api, logs
}

// startGoverned starts the agent with env, registers it with the fake Studio
// API and returns it with its logs. A non-nil sender replaces the outbox
// sender before any delivery can run... except those newApp resumes: use it
// only on a fresh store.
func startGoverned(t *testing.T, studio *svtest.FakeStudio, env map[string]string, snd sender) (*harness, *proctest.Buffer) {
	t.Helper()
	return startGovernedWith(t, studio, env, snd, nil)
}

// startGovernedWith is startGoverned with its local store wrapped by wrap
// (nil: not wrapped).
func startGovernedWith(t *testing.T, studio *svtest.FakeStudio, env map[string]string, snd sender, wrap func(store.Store) store.Store) (*harness, *proctest.Buffer) {
	t.Helper()
	logs := &proctest.Buffer{}
	cfg, err := loadConfig(func(k string) string { return env[k] })
	require.NoError(t, err)
	cfg.wrapStore = wrap
	cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	a, err := newApp(cfg)
	require.NoError(t, err)
	h := &harness{t: t, app: a, studio: studio, srv: httptest.NewServer(a.Handler()), dbPath: cfg.DBPath}
	h.client = &client{t: t, base: h.srv.URL, studio: studio}
	t.Cleanup(h.stop)
	require.NotNil(t, a.srv.Studio(), "attached to Studio")
	// As main does: register with Studio, which links the agent to its id,
	// then resume the unfinished deliveries.
	require.NoError(t, a.Start(t.Context()))
	id, linked := a.agent.StudioAgentID()
	require.True(t, linked)
	require.Equal(t, studio.StudioAgentID(agentSlug), id)
	if snd != nil {
		a.sender = snd
	}
	return h, logs
}

// approveGoverned starts a governed job with one contact and approves its
// brief; snapshot is the job's rule_snapshot.
func approveGoverned(t *testing.T, c *client, snapshot map[string]any) *contracts.JobState {
	t.Helper()
	res := c.invoke(actionRequest(t, wsA, "resource.contacts.create", map[string]any{"item": map[string]any{"name": "Ada", "email": "ada@example.com"}}))
	require.Equal(t, contracts.StatusOK, res.Status, "%+v", res.Errors)
	req := actionRequest(t, wsA, actionStart, map[string]any{"topic_id": "t-1", "rule_snapshot": snapshot})
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

// billedKeys returns the idempotency keys of every consumption record the
// fake Studio API received.
func billedKeys(api *svtest.FakeStudioAPI) []string {
	var keys []string
	for _, r := range api.BillingRecords() {
		keys = append(keys, r.IdempotencyKey)
	}
	return keys
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
	h, api, logs := governedHarness(t, checkpoint.Allow, checkpoint.Allow)
	snapshot := api.RuleSnapshot(snapshotHash)
	checkpointToken := snapshot["checkpoint_token"].(string)
	st := approveGoverned(t, h.client, snapshot)
	res := h.client.waitStatus(wsA, "job-g", jobCompleted)
	assert.Equal(t, "completed", res.JobState.Cases[1].Steps[0].Status)
	assert.True(t, outboxHas(t, h, "job-g"))

	api.WaitBilling(t, 1)
	checkpoints, events, billed := api.Checkpoints(), api.Events(), billedKeys(api)
	require.Len(t, checkpoints, 2)
	assert.Equal(t, []string{contracts.PhaseBefore, contracts.PhaseAfter}, []string{checkpoints[0].Phase, checkpoints[1].Phase})
	for _, c := range checkpoints {
		assert.Equal(t, "send-brief-job-g", c.OccurrenceID)
		assert.Equal(t, snapshotHash, c.SnapshotHash)
		assert.Equal(t, st.Cases[1].ID, c.CaseID)
		assert.Equal(t, st.Cases[1].Steps[0].ID, c.StepID)
	}
	assert.Equal(t, map[string]any{"operation": "send_brief", "channel": "email", "recipients": float64(1)}, checkpoints[0].Context)
	assert.Equal(t, []string{string(studio.EventServerRegister), string(studio.EventCaseStart)}, api.EventTypes(),
		"the case is the only event after the registration")
	require.Len(t, events, 2)
	assert.Less(t, events[1].Seq, checkpoints[0].Seq, "the case is announced before any checkpoint")
	assert.Equal(t, []string{"brief-job-g"}, billed)
	poll(t, func() bool {
		rec, err := h.app.jobs.get(t.Context(), mustScope(t, wsA.id), "job-g")
		require.NoError(t, err)
		return rec.Delivery.Billed
	}, "the report is recorded on the job")

	assert.Zero(t, api.SnapshotURLCalls(), "checkpoints never go to the snapshot's checkpoint_url")
	assert.NotContains(t, logs.String(), checkpointToken)
	raw, rerr := h.client.invokeRaw(jobRequest(t, wsA, actionSync, "job-g", nil))
	require.Nil(t, rerr)
	assert.NotContains(t, string(raw), checkpointToken, "the snapshot never reaches a job_state")
}

// TestGovernedDeliveryStopped: Studio stops the brief before it is sent.
func TestGovernedDeliveryStopped(t *testing.T) {
	h, api, _ := governedHarness(t, checkpoint.Stop, checkpoint.Stop)
	approveGoverned(t, h.client, api.RuleSnapshot(snapshotHash))
	res := h.client.waitStatus(wsA, "job-g", jobFailed)
	assert.Equal(t, "a rule checkpoint stopped the brief before it was sent", res.JobState.Cases[1].Metadata["failure"])
	assert.False(t, outboxHas(t, h, "job-g"), "the effect never ran")
	assert.Len(t, api.Checkpoints(), 1)
	assert.Empty(t, billedKeys(api))
}

// TestGovernedDeliveryPausedThenResumed: the before checkpoint pauses; the
// delivery waits (no polling) until Studio pushes its decision through
// rule.checkpoint.resume.
func TestGovernedDeliveryPausedThenResumed(t *testing.T) {
	h, api, _ := governedHarness(t, checkpoint.Pause, checkpoint.Allow)
	approveGoverned(t, h.client, api.RuleSnapshot(snapshotHash))
	before := api.WaitCheckpoints(t, 1)[0]
	res := h.client.invoke(jobRequest(t, wsA, actionSync, "job-g", nil))
	assert.Equal(t, jobActive, res.JobState.Job.Status, "waiting for the decision")
	assert.False(t, outboxHas(t, h, "job-g"))

	resume := jobRequest(t, wsA, supervaizer.RuleCheckpointResumeAction, "job-g", before.ResumeInput(checkpoint.Allow, "dec-1"))
	resume.CaseID = before.CaseID
	res = h.client.invoke(resume)
	require.Equal(t, contracts.StatusOK, res.Status, "%+v", res.Errors)
	assert.Equal(t, "rule.checkpoint.resumed", res.Effects[0].Type)

	h.client.waitStatus(wsA, "job-g", jobCompleted)
	assert.True(t, outboxHas(t, h, "job-g"))
}

// TestGovernedStartNeedsStudio: a governed job cannot be gated without a
// Studio account; it is refused at job.start rather than failing later.
func TestGovernedStartNeedsStudio(t *testing.T) {
	_, ts := newTestServer(t)
	api := svtest.NewFakeStudioAPI(t, ts.Studio) // only for a valid snapshot: the agent is not attached
	snapshot := api.RuleSnapshot(snapshotHash)
	req := ts.Request(actionStart, map[string]any{"topic_id": "t-1", "rule_snapshot": snapshot})
	req.JobID = "job-1"
	res, err := ts.Invoke(t.Context(), req)
	require.NoError(t, err)
	assert.Equal(t, codeGovernance, errorCode(res))
	assert.False(t, strings.Contains(fmt.Sprint(res.Errors), snapshot["checkpoint_token"].(string)))
}

// TestGovernedPauseSurvivesRestart: the agent stops while its delivery waits
// for a paused before checkpoint. After the restart, Studio's decision is
// persisted by the SDK's rule.checkpoint.resume handler, and the resumed
// delivery finds it.
func TestGovernedPauseSurvivesRestart(t *testing.T) {
	studio := svtest.NewFakeStudio(t)
	api := newGovernedAPI(t, studio, checkpoint.Pause, checkpoint.Allow)
	env := governedEnv(t, studio, api)
	h, logs1 := startGoverned(t, studio, env, nil)
	approveGoverned(t, h.client, api.RuleSnapshot(snapshotHash))
	before := api.WaitCheckpoints(t, 1)[0]
	require.Eventually(t, func() bool { return strings.Contains(logs1.String(), "rule checkpoint waiting for a decision") },
		5*time.Second, 5*time.Millisecond, "the pause is persisted")
	h.stop()

	h2, logs := startGoverned(t, studio, env, nil)
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(logs.String())
		}
	})
	// The restarted app resumes the delivery in the background (a.Start); the
	// decision is sent once it is parked on the paused checkpoint, the order
	// this test is about (a decision arriving first is TestGovernedDeliveryKillMatrix's).
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), errAwaitingDecision.Error()) },
		10*time.Second, 5*time.Millisecond, "the restarted delivery waits for the decision")
	resume := jobRequest(t, wsA, supervaizer.RuleCheckpointResumeAction, "job-g", before.ResumeInput(checkpoint.Allow, "dec-1"))
	resume.CaseID = before.CaseID
	res := h2.client.invoke(resume)
	require.Equal(t, contracts.StatusOK, res.Status, "%+v", res.Errors)
	h2.client.waitStatus(wsA, "job-g", jobCompleted)
	checkpoints := api.Checkpoints()
	phases := make([]string, len(checkpoints))
	for i, c := range checkpoints {
		phases[i] = c.Phase
	}
	assert.Equal(t, []string{contracts.PhaseBefore, contracts.PhaseAfter}, phases, "the paused before checkpoint is not asked again")
	assert.True(t, outboxHas(t, h2, "job-g"))
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

// interruptAfterTheBrief runs a governed delivery (both checkpoints allow)
// whose agent stops after the brief went out but before the outcome was
// recorded; it returns the fake Studio, its API and the environment to
// restart the agent with.
func interruptAfterTheBrief(t *testing.T) (*svtest.FakeStudio, *svtest.FakeStudioAPI, map[string]string) {
	t.Helper()
	studio := svtest.NewFakeStudio(t)
	api := newGovernedAPI(t, studio, checkpoint.Allow, checkpoint.Allow)
	env := governedEnv(t, studio, api)
	h, _ := startGoverned(t, studio, env, nil)
	snd := &interruptedSender{outbox: &outboxSender{st: h.app.store, now: time.Now}, sent: make(chan struct{})}
	h.app.sender = snd
	approveGoverned(t, h.client, api.RuleSnapshot(snapshotHash))
	waitClosed(t, snd.sent, "the brief sent")
	h.stop()
	return studio, api, env
}

// TestGovernedRecoveryAfterInterruptedEffect: the agent stops after the
// brief went out but before the outcome was recorded. After the restart the
// delivery is recovered from the outbox: the brief is not sent again, only
// the after checkpoint is asked.
func TestGovernedRecoveryAfterInterruptedEffect(t *testing.T) {
	studio, api, env := interruptAfterTheBrief(t)

	h2, _ := startGoverned(t, studio, env, nil)
	res := h2.client.waitStatus(wsA, "job-g", jobCompleted)
	assert.Equal(t, "completed", res.JobState.Cases[1].Steps[0].Status)
	checkpoints := api.Checkpoints()
	require.Len(t, checkpoints, 2)
	assert.Equal(t, contracts.PhaseAfter, checkpoints[1].Phase)
}

// crashingJobStore fails, once armed, the job write that records a delivery:
// the write waits until the test "kills" the process, then fails, leaving
// the state a crash between the SDK's "advancement started" and the job's
// own record leaves. A killed process writes nothing more: every later write
// through this store fails too, so the dying app cannot record anything (such
// as a failed job) that a real kill -9 would never have let it write.
type crashingJobStore struct {
	store.Store
	entered, kill chan struct{}
	once          sync.Once
	dead          atomic.Bool
}

var errProcessKilled = errors.New("process killed")

func (s *crashingJobStore) CompareAndSwap(ctx context.Context, key string, old, new []byte) (bool, error) {
	if s.dead.Load() {
		return false, errProcessKilled
	}
	if strings.Contains(key, "jobs") && bytes.Contains(new, []byte(`"delivery":`)) {
		s.once.Do(func() { close(s.entered) })
		<-s.kill
		s.dead.Store(true)
		return false, errProcessKilled
	}
	return s.Store.CompareAndSwap(ctx, key, old, new)
}

func (s *crashingJobStore) PutIfAbsent(ctx context.Context, key string, value []byte) ([]byte, bool, error) {
	if s.dead.Load() {
		return nil, false, errProcessKilled
	}
	return s.Store.PutIfAbsent(ctx, key, value)
}

func (s *crashingJobStore) Delete(ctx context.Context, key string) error {
	if s.dead.Load() {
		return errProcessKilled
	}
	return s.Store.Delete(ctx, key)
}

// TestGovernedRecoveryAfterAmbiguousAdvancement: the process dies after
// Studio allowed the sent brief and the SDK recorded "advancement started",
// before the job recorded the delivery. After the restart the job is not left
// active: the agent repeats its idempotent advance, the job completes, the
// brief is billed once and the gate of the finished step is forgotten. The
// brief is not sent again and no checkpoint is asked again.
func TestGovernedRecoveryAfterAmbiguousAdvancement(t *testing.T) {
	studio := svtest.NewFakeStudio(t)
	api := newGovernedAPI(t, studio, checkpoint.Allow, checkpoint.Allow)
	env := governedEnv(t, studio, api)
	h, _ := startGoverned(t, studio, env, nil)
	crash := &crashingJobStore{Store: h.app.jobs.st, entered: make(chan struct{}), kill: make(chan struct{})}
	h.app.jobs.st = crash
	approveGoverned(t, h.client, api.RuleSnapshot(snapshotHash))
	waitClosed(t, crash.entered, "the delivery record is being written")
	close(crash.kill)
	h.stop()

	h2, logs := startGoverned(t, studio, env, nil)
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(logs.String())
		}
	})
	res := h2.client.waitStatus(wsA, "job-g", jobCompleted)
	require.NotNil(t, res.JobState)
	assert.Len(t, api.Checkpoints(), 2, "before and after, each asked once")
	require.Eventually(t, func() bool { return len(billedKeys(api)) == 1 }, 5*time.Second, 5*time.Millisecond, "billed once")
	rec, err := h2.app.jobs.get(t.Context(), mustScope(t, wsA.id), "job-g")
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		_, err := h2.app.gate(t.Context(), rec)
		return errors.Is(err, checkpoint.ErrGateNotFound)
	}, 5*time.Second, 5*time.Millisecond, "the gate of the finished step is forgotten")
	sent := 0
	require.NoError(t, h2.app.store.Scan(t.Context(), store.Prefix(keyRoot, "outbox"), func(string, []byte) error {
		sent++
		return nil
	}))
	assert.Equal(t, 1, sent, "the brief is sent once")
}

// TestGovernedRecoveryAfterHandshake: a restarted agent recovers its
// interrupted governed delivery only once the registration handshake
// succeeded: building the app asks Studio nothing, and the recovery's first
// rule-checkpoint call comes after the new registration.
func TestGovernedRecoveryAfterHandshake(t *testing.T) {
	studio, api, env := interruptAfterTheBrief(t)
	seen := len(api.Requests())

	cfg, err := loadConfig(func(k string) string { return env[k] })
	require.NoError(t, err)
	a, err := newApp(cfg)
	require.NoError(t, err)
	h2 := &harness{t: t, app: a, studio: studio, srv: httptest.NewServer(a.Handler()), dbPath: cfg.DBPath}
	h2.client = &client{t: t, base: h2.srv.URL, studio: studio}
	t.Cleanup(h2.stop)
	time.Sleep(200 * time.Millisecond) // what newApp might have started
	assert.Len(t, api.Requests(), seen, "the app talked to Studio before Start")

	require.NoError(t, a.Start(t.Context()))
	h2.client.waitStatus(wsA, "job-g", jobCompleted)
	register, checkpoint := -1, -1
	for i, r := range api.Requests()[seen:] {
		switch {
		case register < 0 && strings.HasSuffix(r.Path, svtest.EventsPath): // server.register comes first
			register = i
		case checkpoint < 0 && strings.Contains(r.Path, "rule-checkpoints"):
			checkpoint = i
		}
	}
	require.GreaterOrEqual(t, register, 0, "registered")
	require.GreaterOrEqual(t, checkpoint, 0, "the after checkpoint was asked")
	assert.Less(t, register, checkpoint, "the recovery asked Studio before the handshake")
}
