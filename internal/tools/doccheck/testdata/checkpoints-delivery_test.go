package delivery

// The companion test of docs/checkpoints.md's two delivery blocks (the doc
// check compiles them into this package and runs it): SendGuarded sends once
// between allowed checkpoints, advances and forgets the gate; a stop before
// never sends; a delivery left on a paused checkpoint by a cancelled run is
// restarted by ResumeOnDecision's hook once Studio's decision arrives.

import (
	"context"
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

func governedAgent(t *testing.T) *supervaizer.Agent {
	t.Helper()
	agent, err := supervaizer.NewAgent(supervaizer.AgentSpec{Name: "Research Agent", Version: "1.0.0",
		Registration: supervaizer.RegistrationSpec{
			Actions:         supervaizer.Actions("job.start"),
			RuleCheckpoints: &contracts.RuleCheckpoints{Phases: []string{contracts.PhaseBefore, contracts.PhaseAfter}},
		}})
	require.NoError(t, err)
	agent.HandleAction("job.start", func(context.Context, *supervaizer.ActionRequest) (*supervaizer.ActionResult, error) {
		return supervaizer.OK(), nil
	})
	return agent
}

// saveGate saves the gate of jobID, as the job.start handler does.
func saveGate(t *testing.T, ts *svtest.TestServer, agent *supervaizer.Agent, jobID string) {
	t.Helper()
	start := ts.Request("job.start", map[string]any{"topic_id": "t-1", "rule_snapshot": ts.API.RuleSnapshot("rs_1")})
	start.JobID = jobID
	gate, err := checkpoint.NewGate(agent.Checkpoints(), ts.Server.Studio(), &start)
	require.NoError(t, err)
	require.NoError(t, gate.Save(t.Context()))
}

// outbox counts the sends and records the advancement.
type outbox struct {
	sends    atomic.Int32
	advanced atomic.Pointer[Sent]
}

func (o *outbox) send(context.Context) (string, error) {
	o.sends.Add(1)
	return "msg-1", nil
}

func (o *outbox) advance(_ context.Context, s Sent) error {
	o.advanced.Store(&s)
	return nil
}

func TestSendGuarded(t *testing.T) {
	agent := governedAgent(t)
	ts := svtest.NewAttachedTestServer(t, []*supervaizer.Agent{agent})
	account := ts.Server.Studio()
	recipients := []string{"ada@example.com", "bob@example.com"}

	saveGate(t, ts, agent, "job-1")
	var o outbox
	s, err := SendGuarded(t.Context(), agent, account, "job-1", recipients, o.send, o.advance)
	require.NoError(t, err)
	assert.Equal(t, Sent{Receipt: "msg-1", Recipients: 2}, s)
	assert.EqualValues(t, 1, o.sends.Load())
	require.NotNil(t, o.advanced.Load())
	assert.Equal(t, s, *o.advanced.Load())
	_, err = SendGuarded(t.Context(), agent, account, "job-1", recipients, o.send, o.advance)
	require.ErrorIs(t, err, checkpoint.ErrGateNotFound, "the settled job's gate is forgotten")

	ts.API.SetDecision("send-brief-job-2", contracts.PhaseBefore, checkpoint.Stop)
	saveGate(t, ts, agent, "job-2")
	var stopped outbox
	_, err = SendGuarded(t.Context(), agent, account, "job-2", recipients, stopped.send, stopped.advance)
	require.ErrorIs(t, err, checkpoint.ErrBlocked)
	assert.Zero(t, stopped.sends.Load(), "stopped before: never sent")
}

func TestResumeOnDecision(t *testing.T) {
	// Two runs of the controller on one store and one Studio: the first
	// leaves the delivery on a paused checkpoint, the second registers the
	// hook at start-up and gets Studio's decision.
	st := store.NewMemory()
	api := svtest.NewFakeStudioAPI(t, svtest.NewFakeStudio(t))
	api.SetDecision(svtest.AnyOccurrence, contracts.PhaseBefore, checkpoint.Pause)
	first := governedAgent(t)
	ts1 := svtest.NewAttachedTestServerWithAPI(t, api, []*supervaizer.Agent{first}, supervaizer.WithStore(st))
	saveGate(t, ts1, first, "job-3")
	var o outbox
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := SendGuarded(ctx, first, ts1.Server.Studio(), "job-3", []string{"ada@example.com"}, o.send, o.advance)
		done <- err
	}()
	before := api.WaitCheckpoints(t, 1)[0]
	waitStored(t, st, before.CheckpointID) // the first run recorded Studio's pause
	cancel()                               // then stops while the checkpoint is paused
	require.Error(t, <-done)

	second := governedAgent(t)
	ts2 := svtest.NewAttachedTestServerWithAPI(t, api, []*supervaizer.Agent{second}, supervaizer.WithStore(st))
	resumed := make(chan error, 1)
	ResumeOnDecision(t.Context(), second, func(ctx context.Context, jobID string) {
		_, err := SendGuarded(ctx, second, ts2.Server.Studio(), jobID, []string{"ada@example.com"}, o.send, o.advance)
		resumed <- err
	})
	res, err := ts2.Invoke(t.Context(), ts2.ResumeRequest(before, checkpoint.Allow, "dec-1"))
	require.NoError(t, err)
	require.Equal(t, "ok", res.Status)
	select {
	case err := <-resumed:
		require.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("the decision hook did not restart the delivery")
	}
	assert.EqualValues(t, 1, o.sends.Load(), "sent once, by the second run")
	assert.NotNil(t, o.advanced.Load())
}

// waitStored waits until a record of st holds text.
func waitStored(t *testing.T, st store.Store, text string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		found := false
		require.NoError(t, st.Scan(t.Context(), "", func(_ string, v []byte) error {
			found = found || strings.Contains(string(v), text)
			return nil
		}))
		if found {
			return
		}
		require.True(t, time.Now().Before(deadline), "no record holds %s", text)
	}
}
