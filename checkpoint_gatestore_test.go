package supervaizer_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	sv "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/checkpoint"
	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/store"
	"github.com/supervaize/supervaizer-go/studio"
)

// gateStorePrefix is where the SDK saves gates; only these records may hold
// the checkpoint token.
var gateStorePrefix = store.Prefix("rule-checkpoints", "gate")

// assertTokenOnlyInGateRecords checks that the checkpoint token appears in no
// store record but a saved gate, and reports how many gates hold it.
func assertTokenOnlyInGateRecords(t *testing.T, st store.Store, token string) int {
	t.Helper()
	holders := 0
	require.NoError(t, st.Scan(t.Context(), "", func(key string, value []byte) error {
		if strings.Contains(string(value), token) {
			assert.True(t, strings.HasPrefix(key, gateStorePrefix), "the token leaked into %s", key)
			holders++
		}
		return nil
	}))
	return holders
}

func TestGateSaveRestore(t *testing.T) {
	f := newCPFixture(t, cpOptions{api: newCPAPI(t, "")})
	require.NoError(t, f.gate.Save(t.Context()))
	require.NoError(t, f.gate.Save(t.Context()), "saving the same gate again does nothing")
	assert.Equal(t, 1, assertTokenOnlyInGateRecords(t, f.store, f.token))

	g, err := checkpoint.RestoreGate(t.Context(), f.agent.Checkpoints(), f.account, cpJob)
	require.NoError(t, err)
	assert.Equal(t, cpAgentSlug, g.AgentSlug())
	assert.Equal(t, cpJob, g.JobID())
	assert.Equal(t, cpSnapshot, g.SnapshotHash())
	assert.Equal(t, []string{cpSecretRef}, g.SecretRefs())

	_, err = checkpoint.Run(t.Context(), g, f.step(cpOccurrence))
	require.NoError(t, err)
	calls := f.api.Checkpoints() // the fake answers only the token it issued for the snapshot
	require.Len(t, calls, 2, "the restored gate posts the saved token")
	for _, c := range calls {
		assert.Equal(t, []string{cpSecretRef}, c.SecretRefs)
	}
	assert.NotContains(t, f.logs.String(), f.token)
}

func TestGateSaveKeepsSecretRefs(t *testing.T) {
	f := newCPFixture(t, cpOptions{})
	start := cpJobStart(t, cpAgentSlug, "job-refs", cpSnapshotInput(cpSnapshot, "https://x.invalid/"))
	g := f.newGate(t, f.agent, start, checkpoint.WithSecretRefs("job.fields.iban"))
	require.NoError(t, g.Save(t.Context()))
	restored, err := checkpoint.RestoreGate(t.Context(), f.agent.Checkpoints(), f.account, "job-refs")
	require.NoError(t, err)
	assert.Equal(t, []string{"job.fields.iban"}, restored.SecretRefs())
}

func TestGateSaveConflicts(t *testing.T) {
	snap := func(mod func(map[string]any)) map[string]any {
		s := cpSnapshotInput(cpSnapshot, "https://x.invalid/")
		mod(s)
		return s
	}
	tests := []struct {
		name    string
		snap    map[string]any
		opts    []checkpoint.GateOption
		forgets bool // the other gate holds the same token: it may forget the saved one
	}{
		{"another snapshot hash", snap(func(s map[string]any) { s["hash"] = "rs_other" }), nil, true},
		{"another token", snap(func(s map[string]any) { s["checkpoint_token"] = "cpt-other" }), nil, false},
		{"other secret paths", snap(func(map[string]any) {}), []checkpoint.GateOption{checkpoint.WithSecretRefs("job.fields.iban")}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newCPFixture(t, cpOptions{})
			require.NoError(t, f.gate.Save(t.Context()))
			other := f.newGate(t, f.agent, cpJobStart(t, cpAgentSlug, cpJob, tt.snap), tt.opts...)
			err := other.Save(t.Context())
			require.ErrorIs(t, err, checkpoint.ErrInvalidState)
			assert.Contains(t, err.Error(), "already has a saved gate")
			assert.NotContains(t, err.Error(), cpToken)

			kept, err := checkpoint.RestoreGate(t.Context(), f.agent.Checkpoints(), f.account, cpJob)
			require.NoError(t, err)
			assert.Equal(t, cpSnapshot, kept.SnapshotHash(), "the first gate is kept")
			assert.Equal(t, []string{cpSecretRef}, kept.SecretRefs())
			require.NoError(t, other.Forget(t.Context()))
			_, err = checkpoint.RestoreGate(t.Context(), f.agent.Checkpoints(), f.account, cpJob)
			if tt.forgets {
				require.ErrorIs(t, err, checkpoint.ErrGateNotFound)
			} else {
				require.NoError(t, err, "a gate with another token does not forget the saved one")
			}
		})
	}
}

func TestRestoreRuleCheckpointGateErrors(t *testing.T) {
	f := newCPFixture(t, cpOptions{})
	require.NoError(t, f.gate.Save(t.Context()))
	unserved := cpRegistration(t, cpAgentSlug, cpAgentName)
	tests := []struct {
		name    string
		agent   *sv.Agent
		account *studio.Client
		job     string
		wantIs  error
		want    string
	}{
		{"unknown job", f.agent, f.account, "job-unknown", checkpoint.ErrGateNotFound, `job "job-unknown"`},
		{"the job of another agent", f.other, f.account, cpJob, checkpoint.ErrGateNotFound, `agent "audit-agent"`},
		{"no agent", nil, f.account, cpJob, checkpoint.ErrInvalidState, "needs the agent"},
		{"no account", f.agent, nil, cpJob, checkpoint.ErrInvalidState, "need a Studio account"},
		{"blank job", f.agent, f.account, " ", checkpoint.ErrInvalidState, "needs the job id"},
		{"agent not served", unserved, f.account, cpJob, checkpoint.ErrInvalidState, "is not served"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := checkpoint.RestoreGate(t.Context(), tt.agent.Checkpoints(), tt.account, tt.job)
			require.ErrorIs(t, err, tt.wantIs)
			assert.Nil(t, g)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
	g := f.newGate(t, unserved, cpJobStart(t, cpAgentSlug, cpJob, cpSnapshotInput(cpSnapshot, "https://x.invalid/")))
	require.ErrorIs(t, g.Save(t.Context()), checkpoint.ErrInvalidState, "Save needs a served agent")
	require.ErrorIs(t, g.Forget(t.Context()), checkpoint.ErrInvalidState, "Forget needs a served agent")
}

func TestRestoreCorruptGate(t *testing.T) {
	key := store.Key("rule-checkpoints", "gate", cpAgentSlug, cpJob)
	tests := []struct {
		name, record, want string
		otherToken         bool // the record holds another token: the gate does not forget it
	}{
		{"not JSON", `{"checkpoint_token":"` + cpToken + `"`, "is corrupt", false},
		{"unknown version", `{"version":2,"agent_slug":"research-agent","job_id":"job-77","snapshot_hash":"rs","checkpoint_token":"` + cpToken + `"}`, "has version 2", false},
		{"another job", `{"version":1,"agent_slug":"research-agent","job_id":"job-78","snapshot_hash":"rs","checkpoint_token":"` + cpToken + `"}`, "is corrupt", false},
		{"blank hash", `{"version":1,"agent_slug":"research-agent","job_id":"job-77","snapshot_hash":" ","checkpoint_token":"` + cpToken + `"}`, "is corrupt", false},
		{"token with a newline", `{"version":1,"agent_slug":"research-agent","job_id":"job-77","snapshot_hash":"rs","checkpoint_token":"` + cpToken + `\n"}`, "is corrupt", true},
		{"invalid secret path", `{"version":1,"agent_slug":"research-agent","job_id":"job-77","snapshot_hash":"rs","checkpoint_token":"` + cpToken + `","secret_refs":["x.y"]}`, "invalid path", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newCPFixture(t, cpOptions{})
			_, stored, err := f.store.PutIfAbsent(t.Context(), key, []byte(tt.record))
			require.NoError(t, err)
			require.True(t, stored)
			_, err = checkpoint.RestoreGate(t.Context(), f.agent.Checkpoints(), f.account, cpJob)
			require.ErrorIs(t, err, checkpoint.ErrInvalidState)
			assert.Contains(t, err.Error(), tt.want)
			assert.NotContains(t, err.Error(), cpToken)
			require.NoError(t, f.gate.Forget(t.Context()))
			_, found, err := f.store.Get(t.Context(), key)
			require.NoError(t, err)
			assert.Equal(t, tt.otherToken, found, "a corrupt record with the gate's token is forgotten")
		})
	}
}

func TestGateForget(t *testing.T) {
	f := newCPFixture(t, cpOptions{api: newCPAPI(t, "")})
	require.NoError(t, f.gate.Save(t.Context()))
	_, err := checkpoint.Run(t.Context(), f.gate, f.step(cpOccurrence))
	require.NoError(t, err)

	require.NoError(t, f.gate.Forget(t.Context()))
	assert.Zero(t, assertTokenOnlyInGateRecords(t, f.store, f.token), "the token left the store")
	_, err = checkpoint.RestoreGate(t.Context(), f.agent.Checkpoints(), f.account, cpJob)
	require.ErrorIs(t, err, checkpoint.ErrGateNotFound)
	require.NoError(t, f.gate.Forget(t.Context()), "forgetting again does nothing")

	// The occurrence records stay: the effect is still never run twice.
	_, err = checkpoint.Run(t.Context(), f.gate, f.step(cpOccurrence))
	require.ErrorIs(t, err, checkpoint.ErrRecoveryRequired)
	assert.EqualValues(t, 1, f.effects.Load())

	// A job.start delivered again after Forget saves the gate again.
	require.NoError(t, f.gate.Save(t.Context()))
	_, err = checkpoint.RestoreGate(t.Context(), f.agent.Checkpoints(), f.account, cpJob)
	require.NoError(t, err)
}

// TestGateRestoreAcrossRestart saves the gate on a durable store, closes it,
// and rebuilds the gate on a new agent and server over the reopened file.
func TestGateRestoreAcrossRestart(t *testing.T) {
	fake := newCPAPI(t, "")
	path := filepath.Join(t.TempDir(), "state.db")
	logs := newCPLogs()
	open := func() (*sv.Agent, *studio.Client, store.Store) {
		st, err := store.Open(path, store.WithLockTimeout(5*time.Second))
		require.NoError(t, err)
		a := cpRegistration(t, cpAgentSlug, cpAgentName)
		srv, err := sv.NewServer([]*sv.Agent{a}, sv.WithEnv(func(string) string { return "" }), sv.WithLocalMode(true),
			sv.WithStore(st), sv.WithLogger(logs.logger()))
		require.NoError(t, err)
		require.NoError(t, srv.Start(t.Context()))
		cfg := fake.ClientConfig()
		cfg.MaxRetries, cfg.Logger = studio.NoRetries, logs.logger()
		account, err := studio.NewClient(cfg)
		require.NoError(t, err)
		return a, account, st
	}

	a, account, st := open()
	snapshot := fake.RuleSnapshot(cpSnapshot)
	token := snapshot["checkpoint_token"].(string)
	gate, err := checkpoint.NewGate(a.Checkpoints(), account, cpJobStart(t, cpAgentSlug, cpJob, snapshot))
	require.NoError(t, err)
	require.NoError(t, gate.Save(t.Context()))
	require.NoError(t, st.Close())

	a, account, st = open()
	t.Cleanup(func() { _ = st.Close() })
	restored, err := checkpoint.RestoreGate(t.Context(), a.Checkpoints(), account, cpJob)
	require.NoError(t, err)
	assert.Equal(t, cpSnapshot, restored.SnapshotHash())
	_, err = checkpoint.Run(t.Context(), restored, checkpoint.Step[string]{
		CaseID: cpCase, OccurrenceID: cpOccurrence, StepID: cpStep,
		Effect:       func(context.Context) (string, error) { return "msg-42", nil },
		AfterContext: cpAfterContext,
	})
	require.NoError(t, err)
	calls := fake.Checkpoints() // the fake answers only the token it issued for the snapshot
	for _, c := range calls {
		assert.Equal(t, cpSnapshot, c.SnapshotHash)
	}
	assert.Len(t, calls, 2)
	assert.Equal(t, 1, assertTokenOnlyInGateRecords(t, st, token))
	assert.NotContains(t, logs.String(), token)
}

// startRequest is a job.start call from workspace ws with snapshot.
func startRequest(ws, job string, snapshot map[string]any) map[string]any {
	p := resumeParams(cpAgentSlug, job, "", map[string]any{"topic_id": "battery", "rule_snapshot": snapshot})
	p["action"], p["workspace"] = "job.start", map[string]any{"id": ws}
	delete(p, "case_id")
	return p
}

// TestGateWorkspaceBinding: a gate saved from a job.start is bound to its
// verified workspace. A call from another workspace can neither restore it,
// nor take it over with another job.start, nor resume its checkpoints.
func TestGateWorkspaceBinding(t *testing.T) {
	f := newCPFixture(t, cpOptions{api: newCPAPI(t, checkpoint.Pause)})
	snapshot := f.api.RuleSnapshot(cpSnapshot)
	type outcome struct {
		saveErr, restoreErr error
		restored            *checkpoint.Gate
	}
	var last outcome
	restoreJob := ""
	f.agent.HandleAction("job.start", func(ctx context.Context, req *sv.ActionRequest) (*sv.ActionResult, error) {
		last = outcome{}
		if restoreJob != "" {
			last.restored, last.restoreErr = checkpoint.RestoreGate(ctx, f.agent.Checkpoints(), f.account, restoreJob)
			return sv.OK(), nil
		}
		g, err := checkpoint.NewGate(f.agent.Checkpoints(), f.account, req)
		if err == nil {
			err = g.Save(ctx)
		}
		last.saveErr = err
		return sv.OK(), nil
	})
	call := func(params map[string]any) {
		t.Helper()
		f.invoke(t, params)
	}

	call(startRequest(cpWorkspace, cpJob, snapshot))
	require.NoError(t, last.saveErr)
	call(startRequest(cpWorkspace, cpJob, snapshot))
	require.NoError(t, last.saveErr, "a job.start delivered again")
	call(startRequest("ws-2", cpJob, snapshot))
	require.ErrorIs(t, last.saveErr, checkpoint.ErrInvalidState, "another workspace cannot take the job's gate over")

	restoreJob = cpJob
	call(startRequest("ws-2", "job-x", snapshot))
	require.ErrorIs(t, last.restoreErr, checkpoint.ErrGateNotFound, "another workspace does not see the gate")
	call(startRequest(cpWorkspace, "job-x", snapshot))
	require.NoError(t, last.restoreErr)
	assert.Equal(t, cpJob, last.restored.JobID())
	_, err := checkpoint.RestoreGate(context.Background(), f.agent.Checkpoints(), f.account, cpJob)
	require.NoError(t, err, "the agent's background work restores any of its gates")

	// A paused checkpoint of the job is resumed from its workspace only.
	f.gate = last.restored
	done := f.runAsync(t.Context(), f.step(cpOccurrence))
	f.logs.awaitWaiting(t)
	allow := f.apiDecision(t, contracts.PhaseBefore, checkpoint.Allow)
	foreign := resumeParams(cpAgentSlug, cpJob, cpCase, allow)
	foreign["workspace"] = map[string]any{"id": "ws-2"}
	require.NotNil(t, f.invoke(t, foreign).Error)
	assert.Contains(t, f.logs.String(), "does not come from the workspace that started job")
	assert.Zero(t, f.effects.Load())
	require.Nil(t, f.resume(t, allow).Error)
	require.NoError(t, awaitOutcome(t, done).err)
	assert.EqualValues(t, 1, f.effects.Load())
}
