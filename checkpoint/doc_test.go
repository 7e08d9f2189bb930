package checkpoint_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	sv "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/checkpoint"
	"github.com/supervaize/supervaizer-go/contracts"
	svtest "github.com/supervaize/supervaizer-go/testing"
)

// Receipt is what the package comment's guarded step returns.
type Receipt struct{ MessageID string }

// TestPackageDocGate runs the package comment's gate calls as written,
// against a fake Studio that allows both checkpoints: the gate is saved,
// restored, runs the step once and is forgotten.
func TestPackageDocGate(t *testing.T) {
	agent, err := sv.NewAgent(sv.AgentSpec{Name: "Research Agent", Version: "1.0.0", Registration: sv.RegistrationSpec{
		Actions:         sv.Actions("job.start"),
		RuleCheckpoints: &contracts.RuleCheckpoints{Phases: []string{contracts.PhaseBefore, contracts.PhaseAfter}},
	}})
	require.NoError(t, err)
	ts := svtest.NewAttachedTestServer(t, []*sv.Agent{agent})
	ctx, account, jobID := t.Context(), ts.Server.Studio(), "job-77"
	start := ts.Request("job.start", map[string]any{"topic_id": "t-1", "rule_snapshot": ts.API.RuleSnapshot("rs_1")})
	start.JobID = jobID
	req := &start
	sent := 0
	step := checkpoint.Step[Receipt]{
		CaseID: jobID + "-delivery", OccurrenceID: "send-brief-" + jobID, StepID: jobID + "-send",
		Effect: func(context.Context) (Receipt, error) {
			sent++
			return Receipt{MessageID: "msg-1"}, nil
		},
		AfterContext: func(r Receipt) map[string]any { return map[string]any{"outcome": "sent"} },
	}

	gate, err := checkpoint.NewGate(agent.Checkpoints(), account, req) // in job.start
	require.NoError(t, err)
	err = gate.Save(ctx)
	require.NoError(t, err)
	// later, after a restart too:
	gate, err = checkpoint.RestoreGate(ctx, agent.Checkpoints(), account, jobID)
	require.NoError(t, err)
	receipt, err := checkpoint.Run(ctx, gate, step) // step is a checkpoint.Step[Receipt]
	require.NoError(t, err)
	assert.Equal(t, Receipt{MessageID: "msg-1"}, receipt)
	assert.Equal(t, 1, sent)
	err = gate.Forget(ctx) // once the job needs no more checkpoints
	require.NoError(t, err)
	_, err = checkpoint.RestoreGate(ctx, agent.Checkpoints(), account, jobID)
	require.ErrorIs(t, err, checkpoint.ErrGateNotFound)
}
