package supervaizer_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	sv "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/checkpoint"
	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/store"
	svtest "github.com/supervaize/supervaizer-go/testing"
)

// decisionLog records the decisions a hook receives, with the workspace of
// the call.
type decisionLog struct {
	mu         sync.Mutex
	decisions  []checkpoint.Decision
	workspaces []string
}

func (l *decisionLog) hook(ctx context.Context, d checkpoint.Decision) {
	ws := ""
	if w, ok := sv.WorkspaceFrom(ctx); ok {
		ws = w.WorkspaceID
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.decisions, l.workspaces = append(l.decisions, d), append(l.workspaces, ws)
}

func (l *decisionLog) all() ([]checkpoint.Decision, []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]checkpoint.Decision(nil), l.decisions...), append([]string(nil), l.workspaces...)
}

// wantDecision is the decision of cpDecision(phase, status) as a hook sees it.
func wantDecision(phase, status string, retained, active bool) checkpoint.Decision {
	return checkpoint.Decision{AgentSlug: cpAgentSlug, JobID: cpJob, CaseID: cpCase, CheckpointID: "cp-" + phase + "-" + cpOccurrence,
		OccurrenceID: cpOccurrence, Phase: phase, Status: status, SnapshotHash: cpSnapshot, InputHash: "ih-" + phase, DecisionID: "dec_03",
		Retained: retained, Active: active}
}

// wantDecisionAt is the decision status for the checkpoint c answered by
// svtest's fake, as a hook sees it.
func wantDecisionAt(c svtest.CheckpointCall, status string, retained, active bool) checkpoint.Decision {
	d := wantDecision(c.Phase, status, retained, active)
	d.CheckpointID, d.InputHash = c.CheckpointID, c.InputHash
	return d
}

func TestDecisionHookLiveWaiter(t *testing.T) {
	for _, phase := range []string{contracts.PhaseBefore, contracts.PhaseAfter} {
		t.Run(phase, func(t *testing.T) {
			t.Parallel()
			api := newCPAPI(t, "")
			api.SetDecision(svtest.AnyOccurrence, phase, checkpoint.Pause)
			f := newCPFixture(t, cpOptions{api: api})
			var log decisionLog
			f.agent.OnRuleCheckpointDecision(log.hook)
			done := f.runAsync(t.Context(), f.step(cpOccurrence))
			f.logs.awaitWaiting(t)

			call := f.apiCall(t, phase)
			require.Nil(t, f.resume(t, call.ResumeInput(checkpoint.Allow, "dec_03")).Error)
			require.NoError(t, awaitOutcome(t, done).err)
			got, workspaces := log.all()
			assert.Equal(t, []checkpoint.Decision{wantDecisionAt(call, checkpoint.Allow, false, true)}, got,
				"called once, and the step waiting in this process is active")
			assert.Equal(t, []string{cpWorkspace}, workspaces, "ctx is the call's")

			require.Nil(t, f.resume(t, call.ResumeInput(checkpoint.Allow, "dec_03")).Error)
			got, _ = log.all()
			require.Len(t, got, 2, "a decision delivered again is passed again")
			assert.Equal(t, wantDecisionAt(call, checkpoint.Allow, false, false), got[1])
		})
	}
}

func TestDecisionHookRetainedAndRejected(t *testing.T) {
	f := newCPFixture(t, cpOptions{})
	var log decisionLog
	f.agent.OnRuleCheckpointDecision(log.hook)

	rejected := cpDecision(contracts.PhaseBefore, checkpoint.Pause)
	require.NotNil(t, f.resume(t, rejected).Error)
	otherAgent := resumeParams(cpOtherSlug, cpJob, cpCase, cpDecision(contracts.PhaseBefore, checkpoint.Allow))
	require.Nil(t, f.invoke(t, otherAgent).Error, "retained for the other agent")
	got, _ := log.all()
	assert.Empty(t, got, "a rejected decision, or one for another agent, calls nothing")

	require.Nil(t, f.resume(t, cpDecision(contracts.PhaseBefore, checkpoint.Stop)).Error)
	got, _ = log.all()
	assert.Equal(t, []checkpoint.Decision{wantDecision(contracts.PhaseBefore, checkpoint.Stop, true, false)}, got,
		"a decision for an unknown case is retained")
}

func TestDecisionHookPanics(t *testing.T) {
	f := newCPFixture(t, cpOptions{})
	var log decisionLog
	f.agent.OnRuleCheckpointDecision(func(context.Context, checkpoint.Decision) { panic("hook bug") })
	f.agent.OnRuleCheckpointDecision(log.hook)
	rpc := f.resume(t, cpDecision(contracts.PhaseBefore, checkpoint.Allow))
	require.Nil(t, rpc.Error, "the decision stays accepted")
	var res sv.ActionResult
	require.NoError(t, contracts.Unmarshal(rpc.Result, &res))
	assert.Equal(t, "rule.checkpoint.resumed", res.Effects[0].Type)
	got, _ := log.all()
	assert.Len(t, got, 1, "the next hook is still called")
	assert.Contains(t, f.logs.String(), "rule checkpoint decision hook panicked")
	assert.Contains(t, f.logs.String(), "hook bug")
}

func TestOnRuleCheckpointDecisionSetup(t *testing.T) {
	t.Run("registered before NewServer", func(t *testing.T) {
		a := cpRegistration(t, cpAgentSlug, cpAgentName)
		var log decisionLog
		a.OnRuleCheckpointDecision(log.hook)
		srv, err := sv.NewServer([]*sv.Agent{a}, sv.WithEnv(func(string) string { return "" }), sv.WithLocalMode(true), sv.WithStore(store.NewMemory()))
		require.NoError(t, err)
		f := &cpFixture{srv: srv}
		require.Nil(t, f.resume(t, cpDecision(contracts.PhaseBefore, checkpoint.Allow)).Error)
		got, _ := log.all()
		assert.Len(t, got, 1)
	})
	t.Run("not called with a replaced handler", func(t *testing.T) {
		f := newCPFixture(t, cpOptions{})
		var log decisionLog
		f.agent.OnRuleCheckpointDecision(log.hook)
		f.agent.HandleRuleCheckpointResume(func(context.Context, *sv.ActionRequest) (*sv.ActionResult, error) { return sv.OK(), nil })
		require.Nil(t, f.resume(t, cpDecision(contracts.PhaseBefore, checkpoint.Allow)).Error)
		got, _ := log.all()
		assert.Empty(t, got)
	})
	t.Run("setup errors panic", func(t *testing.T) {
		a := cpRegistration(t, cpAgentSlug, cpAgentName)
		assert.PanicsWithValue(t, `supervaizer: OnRuleCheckpointDecision on agent "research-agent": nil function`,
			func() { a.OnRuleCheckpointDecision(nil) })
		reg := sv.RegistrationSpec{AgentSlug: "plain-agent", DisplayName: "Plain", A2UICatalogVersion: "p.1",
			Surfaces: sv.Surfaces("job.start"), Actions: sv.Actions("job.start")}
		plain, err := sv.NewAgent(sv.AgentSpec{Name: "Plain Agent", Version: "1", Registration: reg})
		require.NoError(t, err)
		assert.PanicsWithValue(t, `supervaizer: OnRuleCheckpointDecision: agent "plain-agent" does not declare capabilities.rule_checkpoints`,
			func() { plain.OnRuleCheckpointDecision(func(context.Context, checkpoint.Decision) {}) })
	})
}

// TestDecisionHookAfterRestart: a run stops while its guarded step waits for
// a paused checkpoint. After a restart on the same file, the step is refused
// with Decision pause; the decision Studio pushes later is persisted, the hook
// is called with Active false, and the agent runs the step again from a
// restored gate: it goes on from the decision (allow) without asking the
// checkpoint again, or is refused with Decision stop.
func TestDecisionHookAfterRestart(t *testing.T) {
	tests := []struct {
		name, phase, decision     string
		wantEffects, wantAdvances int64
		wantReason                string
	}{
		{"before allow", contracts.PhaseBefore, checkpoint.Allow, 1, 1, ""},
		{"before stop", contracts.PhaseBefore, checkpoint.Stop, 0, 0, checkpoint.RecoveryOccurrenceClaimed},
		{"after allow", contracts.PhaseAfter, checkpoint.Allow, 1, 1, ""},
		{"after stop", contracts.PhaseAfter, checkpoint.Stop, 1, 0, checkpoint.RecoveryNotReady},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "state.db")
			fake := newCPAPI(t, "")
			fake.SetDecision(svtest.AnyOccurrence, tt.phase, checkpoint.Pause)

			// First run: the step waits, then the controller stops.
			st, err := store.Open(path, store.WithLockTimeout(5*time.Second))
			require.NoError(t, err)
			f := newCPFixture(t, cpOptions{store: st, api: fake})
			require.NoError(t, f.gate.Save(t.Context()))
			ctx, stop := context.WithCancel(t.Context())
			done := f.runAsync(ctx, f.step(cpOccurrence))
			f.logs.awaitWaiting(t)
			stop()
			require.ErrorIs(t, awaitOutcome(t, done).err, context.Canceled)
			require.NoError(t, st.Close())

			// Second run on the same file.
			st, err = store.Open(path, store.WithLockTimeout(5*time.Second))
			require.NoError(t, err)
			t.Cleanup(func() { _ = st.Close() })
			g := newCPFixture(t, cpOptions{store: st, api: fake})
			g.effects.Store(f.effects.Load())
			gate, err := checkpoint.RestoreGate(t.Context(), g.agent.Checkpoints(), g.account, cpJob)
			require.NoError(t, err)
			recoverStep := func(ctx context.Context) error {
				_, err := checkpoint.Recover(ctx, gate, checkpoint.Recovery[string]{CaseID: cpCase, OccurrenceID: cpOccurrence,
					Result: "msg-42", AfterContext: cpAfterContext, Advance: g.step(cpOccurrence).Advance})
				return err
			}
			rerun := func(ctx context.Context) error {
				_, err := checkpoint.Run(ctx, gate, g.step(cpOccurrence))
				var rr *checkpoint.RecoveryRequiredError
				if errors.As(err, &rr) && rr.EffectCompleted { // the after checkpoint holds it
					return recoverStep(ctx)
				}
				return err
			}
			err = rerun(t.Context())
			var rr *checkpoint.RecoveryRequiredError
			require.ErrorAs(t, err, &rr)
			assert.Equal(t, checkpoint.Pause, rr.Decision, "the step waits for a decision")
			assert.Equal(t, tt.phase == contracts.PhaseAfter, rr.EffectCompleted)

			outcome := make(chan error, 1)
			g.agent.OnRuleCheckpointDecision(func(ctx context.Context, d checkpoint.Decision) {
				assert.False(t, d.Active, "no step of this process waits")
				assert.False(t, d.Retained)
				go func() { outcome <- rerun(context.Background()) }() // never block the resume call
			})
			require.Nil(t, g.resume(t, g.apiDecision(t, tt.phase, tt.decision)).Error)
			var final error
			select {
			case final = <-outcome:
			case <-time.After(cpWaitTimeout):
				t.Fatal("the hook did not run the step again")
			}
			if tt.wantReason == "" {
				require.NoError(t, final)
			} else {
				require.ErrorAs(t, final, &rr)
				assert.Equal(t, tt.wantReason, rr.Reason)
				assert.Equal(t, checkpoint.Stop, rr.Decision)
			}
			assert.Equal(t, tt.wantEffects, g.effects.Load(), "effects")
			assert.Equal(t, tt.wantAdvances, g.advances.Load(), "advances")
			assert.Len(t, cpAPICalls(fake, contracts.PhaseBefore), 1, "the before checkpoint is asked once")
			assert.NotContains(t, f.logs.String()+g.logs.String(), f.token)
			assert.NotContains(t, f.logs.String()+g.logs.String(), g.token)
			assert.Zero(t, fake.SnapshotURLCalls())
		})
	}
}
