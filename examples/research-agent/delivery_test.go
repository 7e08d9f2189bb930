package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/checkpoint"
	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/internal/tools/proctest"
	svtest "github.com/supervaize/supervaizer-go/testing"
)

// tokenHolders returns the keys of the store records that hold token.
func tokenHolders(t *testing.T, h *harness, token string) []string {
	t.Helper()
	var keys []string
	require.NoError(t, h.app.store.Scan(t.Context(), "", func(key string, value []byte) error {
		if strings.Contains(string(value), token) {
			keys = append(keys, key)
		}
		return nil
	}))
	return keys
}

// pauseOn returns the before and after decisions when phase pauses.
func pauseOn(phase string) (before, after string) {
	if phase == contracts.PhaseBefore {
		return checkpoint.Pause, checkpoint.Allow
	}
	return checkpoint.Allow, checkpoint.Pause
}

// resumeRequest is Studio's decision on checkpoint c, pushed from ws.
func resumeRequest(t *testing.T, ws workspace, c svtest.CheckpointCall, status string) contracts.ActionRequest {
	t.Helper()
	req := jobRequest(t, ws, supervaizer.RuleCheckpointResumeAction, c.JobID, c.ResumeInput(status, "dec-1"))
	req.CaseID = c.CaseID
	return req
}

// TestGovernedGateKeptBySDK: the agent keeps no snapshot of its own. Until the
// job is over the token is only in the SDK's gate record; once the brief is
// delivered, the gate is forgotten and the token is gone from the store.
func TestGovernedGateKeptBySDK(t *testing.T) {
	h, api, logs := governedHarness(t, checkpoint.Allow, checkpoint.Allow)
	snapshot := api.RuleSnapshot(snapshotHash)
	token := snapshot["checkpoint_token"].(string)
	req := actionRequest(t, wsA, actionStart, map[string]any{"topic_id": "t-1", "rule_snapshot": snapshot})
	req.JobID, req.IdempotencyKey = "job-g", "setup-g"
	res := h.client.invoke(req)
	require.Equal(t, contracts.StatusOK, res.Status, "%+v", res.Errors)

	holders := tokenHolders(t, h, token)
	require.Len(t, holders, 1)
	assert.True(t, strings.HasPrefix(holders[0], "rule-checkpoints/gate/"), "only the SDK's gate record holds the token, got %s", holders[0])

	approveGoverned(t, h.client, snapshot) // job.start again (replayed by its idempotency key), then the approval
	h.client.waitStatus(wsA, "job-g", jobCompleted)
	poll(t, func() bool { return len(tokenHolders(t, h, token)) == 0 }, "the gate of the finished job is forgotten")
	assert.NotContains(t, logs.String(), token)
}

// TestGovernedStartAnotherSnapshot: a job.start that brings another snapshot
// for a job whose gate is saved is refused; the saved gate is kept.
func TestGovernedStartAnotherSnapshot(t *testing.T) {
	h, api, _ := governedHarness(t, checkpoint.Pause, checkpoint.Allow)
	approveGoverned(t, h.client, api.RuleSnapshot(snapshotHash))
	before := api.WaitCheckpoints(t, 1)[0]
	req := actionRequest(t, wsA, actionStart, map[string]any{"topic_id": "t-1", "rule_snapshot": api.RuleSnapshot("rs_other")})
	req.JobID, req.IdempotencyKey = "job-g", "setup-g-2"
	assert.Equal(t, codeGovernance, errorCode(h.client.invoke(req)))

	res := h.client.invoke(resumeRequest(t, wsA, before, checkpoint.Allow))
	require.Equal(t, contracts.StatusOK, res.Status, "%+v", res.Errors)
	h.client.waitStatus(wsA, "job-g", jobCompleted)
	for _, c := range api.Checkpoints() {
		assert.Equal(t, snapshotHash, c.SnapshotHash, "the saved gate was kept")
	}
}

// restartPaused approves a governed job whose phase checkpoint pauses, stops
// the agent while the delivery waits, and restarts it on the same store. It
// returns the restarted agent, the paused checkpoint, the fake Studio API, the
// snapshot's token and the logs of the restarted agent.
func restartPaused(t *testing.T, phase string) (*harness, svtest.CheckpointCall, *svtest.FakeStudioAPI, string, *proctest.Buffer) {
	t.Helper()
	studio := svtest.NewFakeStudio(t)
	before, after := pauseOn(phase)
	api := newGovernedAPI(t, studio, before, after)
	env := governedEnv(t, studio, api)
	h, logs1 := startGoverned(t, studio, env, nil)
	snapshot := api.RuleSnapshot(snapshotHash)
	approveGoverned(t, h.client, snapshot)
	n := 1
	if phase == contracts.PhaseAfter {
		n = 2
	}
	paused := api.WaitCheckpoints(t, n)[n-1]
	require.Equal(t, phase, paused.Phase)
	require.Eventually(t, func() bool { return strings.Contains(logs1.String(), "rule checkpoint waiting for a decision") },
		5*time.Second, 5*time.Millisecond, "the pause is persisted")
	h.stop()

	h2, logs := startGoverned(t, studio, env, nil)
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), errAwaitingDecision.Error()) },
		5*time.Second, 5*time.Millisecond, "the resumed delivery is parked, not polling")
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(logs.String())
		}
	})
	return h2, paused, api, snapshot["checkpoint_token"].(string), logs
}

// TestGovernedDecisionAfterRestart: a delivery left on a paused checkpoint by
// a previous run goes on as soon as Studio's decision arrives (no polling),
// whichever the phase and the decision.
func TestGovernedDecisionAfterRestart(t *testing.T) {
	tests := []struct {
		name, phase, decision, wantStatus, wantFailure string
		wantSent                                       bool
		wantPhases                                     []string
	}{
		{"before allow", contracts.PhaseBefore, checkpoint.Allow, jobCompleted, "", true,
			[]string{contracts.PhaseBefore, contracts.PhaseAfter}},
		{"before stop", contracts.PhaseBefore, checkpoint.Stop, jobFailed, "a rule checkpoint stopped the brief before it was sent", false,
			[]string{contracts.PhaseBefore}},
		{"after allow", contracts.PhaseAfter, checkpoint.Allow, jobCompleted, "", true,
			[]string{contracts.PhaseBefore, contracts.PhaseAfter}},
		{"after stop", contracts.PhaseAfter, checkpoint.Stop, jobFailed, "a rule checkpoint refused the brief after it was sent", true,
			[]string{contracts.PhaseBefore, contracts.PhaseAfter}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h, paused, api, token, logs := restartPaused(t, tt.phase)
			res := h.client.invoke(resumeRequest(t, wsA, paused, tt.decision))
			require.Equal(t, contracts.StatusOK, res.Status, "%+v", res.Errors)

			res = h.client.waitStatus(wsA, "job-g", tt.wantStatus)
			if tt.wantFailure != "" {
				assert.Equal(t, tt.wantFailure, res.JobState.Cases[1].Metadata["failure"])
			}
			assert.Equal(t, tt.wantSent, outboxHas(t, h, "job-g"))
			checkpoints := api.Checkpoints()
			phases := make([]string, len(checkpoints))
			for i, c := range checkpoints {
				phases[i] = c.Phase
			}
			assert.Equal(t, tt.wantPhases, phases, "the paused checkpoint is not asked again")
			poll(t, func() bool { return len(tokenHolders(t, h, token)) == 0 }, "the gate of the finished job is forgotten")
			assert.NotContains(t, logs.String(), token)
		})
	}
}

// TestGovernedDecisionFromAnotherWorkspace: a decision pushed from another
// workspace than the job's is refused and releases nothing.
func TestGovernedDecisionFromAnotherWorkspace(t *testing.T) {
	h, api, _ := governedHarness(t, checkpoint.Pause, checkpoint.Allow)
	approveGoverned(t, h.client, api.RuleSnapshot(snapshotHash))
	before := api.WaitCheckpoints(t, 1)[0]
	_, rerr := h.client.invokeRaw(resumeRequest(t, wsB, before, checkpoint.Allow))
	require.NotNil(t, rerr, "refused")
	res := h.client.invoke(jobRequest(t, wsA, actionSync, "job-g", nil))
	assert.Equal(t, jobActive, res.JobState.Job.Status, "still waiting for the decision")
	assert.False(t, outboxHas(t, h, "job-g"))

	res = h.client.invoke(resumeRequest(t, wsA, before, checkpoint.Allow))
	require.Equal(t, contracts.StatusOK, res.Status, "%+v", res.Errors)
	h.client.waitStatus(wsA, "job-g", jobCompleted)
}
