package main

import (
	"context"
	"maps"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/checkpoint"
	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/store"
	svtest "github.com/supervaize/supervaizer-go/testing"
)

// countingSender counts the briefs sent through it, on any instance.
type countingSender struct {
	outbox *outboxSender
	sends  *atomic.Int64
}

func (s *countingSender) Send(ctx context.Context, m message) (string, error) {
	s.sends.Add(1)
	return s.outbox.Send(ctx, m)
}

// TestPostgresCheckpointDecisionAtAnotherInstance: two instances of the agent
// share one PostgreSQL database; the governed delivery of a job approved on
// instance A waits there for its before decision, which Studio sends to
// instance B. The decision is applied once and the job completes, its brief
// sent once: by A, whose paused step re-reads its record, while B's hook is
// told A takes it; or, when A stopped before the decision came, by B, which
// resumes the delivery from the decision.
func TestPostgresCheckpointDecisionAtAnotherInstance(t *testing.T) {
	for _, tt := range []struct {
		name  string
		stopA bool
	}{
		{name: "the step waiting on A wakes"},
		{name: "A stopped, B resumes the delivery", stopA: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			studio := svtest.NewFakeStudio(t)
			api := newGovernedAPI(t, studio, checkpoint.Pause, checkpoint.Allow)
			env := governedEnv(t, studio, api)
			db := pgEnv(t, studio)
			env[envDatabase], env[envSchema] = db[envDatabase], db[envSchema]
			envA, envB := maps.Clone(env), maps.Clone(env)
			envA[envInstance], envB[envInstance] = "instance-a", "instance-b"
			var sendsA, sendsB atomic.Int64
			a, logsA := startGoverned(t, studio, envA, nil)
			b, logsB := startGoverned(t, studio, envB, nil)
			a.app.sender = &countingSender{outbox: &outboxSender{st: a.app.store, now: time.Now}, sends: &sendsA}
			b.app.sender = &countingSender{outbox: &outboxSender{st: b.app.store, now: time.Now}, sends: &sendsB}
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("logs of A:\n%s\nlogs of B:\n%s", logsA.String(), logsB.String())
				}
			})

			approveGoverned(t, a.client, api.RuleSnapshot(snapshotHash))
			before := api.WaitCheckpoints(t, 1)[0]
			require.Equal(t, contracts.PhaseBefore, before.Phase)
			poll(t, func() bool { return strings.Contains(logsA.String(), "rule checkpoint waiting for a decision") },
				"the delivery waits on A")
			if tt.stopA {
				a.stop()
			}

			resume := jobRequest(t, wsA, supervaizer.RuleCheckpointResumeAction, "job-g", before.ResumeInput(checkpoint.Allow, "dec-1"))
			resume.CaseID = before.CaseID
			res := b.client.invoke(resume)
			require.Equal(t, contracts.StatusOK, res.Status, "%+v", res.Errors)

			b.client.waitStatus(wsA, "job-g", jobCompleted)
			if tt.stopA {
				assert.Equal(t, [2]int64{0, 1}, [2]int64{sendsA.Load(), sendsB.Load()}, "the brief is sent once, by B")
			} else {
				assert.Equal(t, [2]int64{1, 0}, [2]int64{sendsA.Load(), sendsB.Load()}, "the brief is sent once, by A")
			}
			checkpoints := api.Checkpoints()
			require.Len(t, checkpoints, 2, "before and after, each asked once")
			assert.Equal(t, contracts.PhaseAfter, checkpoints[1].Phase)
			var recs []string
			require.NoError(t, b.app.store.Scan(t.Context(), store.Prefix("rule-checkpoints", "occurrence"), func(_ string, v []byte) error {
				recs = append(recs, string(v))
				return nil
			}))
			require.Len(t, recs, 2)
			assert.Contains(t, recs[0]+recs[1], `"decision_id":"dec-1"`, "the decision is persisted on the before checkpoint")
		})
	}
}
