package checkpoint

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/store"
	"github.com/supervaize/supervaizer-go/studio"
)

const (
	hoSlug       = "research-agent"
	hoJob        = "job-1"
	hoCase       = "case-1"
	hoOccurrence = "send-brief-job-1"
	hoStep       = "step-send"
	hoSnapshot   = "rs_1"
	hoCheckpoint = "cp-before-1"
	hoInputHash  = "ih-before"
	hoDecision   = "dec-1"
	hoWait       = 10 * time.Second
)

// handoffFixture is an agent whose previous run left occurrence hoOccurrence
// paused on its before checkpoint (the case announced), as a restart finds
// it, and a gate to run the occurrence again. Its Studio fails every call,
// which must be none until the effect ran.
type handoffFixture struct {
	agent *Runtime
	rt    *checkpointRuntime
	gate  *Gate
	step  Step[string]

	effects atomic.Int64 // runs of the effect

	mu      sync.Mutex
	decided []Decision // what the decision hooks received
}

func newHandoffFixture(t *testing.T) *handoffFixture {
	t.Helper()
	f := &handoffFixture{agent: NewRuntime(hoSlug, &contracts.RuleCheckpoints{Phases: []string{contracts.PhaseBefore, contracts.PhaseAfter}})}
	studioAPI := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != studio.RuleCheckpointsPath || f.effects.Load() == 0 {
			t.Errorf("unexpected Studio call %s %s", r.Method, r.URL.Path)
		}
		w.WriteHeader(http.StatusInternalServerError) // an after checkpoint once the effect ran
	}))
	t.Cleanup(studioAPI.Close)
	account, err := studio.NewClient(studio.Config{APIURL: studioAPI.URL, WorkspaceID: "ws", APIKey: "key", MaxRetries: studio.NoRetries})
	require.NoError(t, err)

	st := store.NewMemory()
	f.agent.Attach(Config{Store: st, Logger: slog.New(slog.DiscardHandler)})
	f.agent.OnDecision(func(_ context.Context, d Decision) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.decided = append(f.decided, d)
	})
	f.rt, err = f.agent.checkpointRuntime()
	require.NoError(t, err)
	f.gate, err = newGate(f.agent, account, hoJob, "", newRuleSnapshot(hoSnapshot, "tok-1"), nil)
	require.NoError(t, err)
	f.step = Step[string]{CaseID: hoCase, OccurrenceID: hoOccurrence, StepID: hoStep,
		BeforeContext: map[string]any{"operation": "send_brief"},
		Effect: func(context.Context) (string, error) {
			f.effects.Add(1)
			return "", nil
		},
		AfterContext: func(string) map[string]any { return map[string]any{} }}

	ctx := context.Background()
	_, hash, err := f.gate.encodeContext("the before context", f.step.BeforeContext)
	require.NoError(t, err)
	require.NoError(t, putJSON(ctx, st, caseKey(hoJob, hoCase), checkpointCase{AgentSlug: hoSlug, JobID: hoJob, CaseID: hoCase, Announced: true}))
	require.NoError(t, putJSON(ctx, st, occurrenceKey(hoSlug, hoOccurrence, contracts.PhaseBefore), checkpointRecord{
		OccurrenceID: hoOccurrence, Phase: contracts.PhaseBefore, AgentSlug: hoSlug, JobID: hoJob, CaseID: hoCase,
		SnapshotHash: hoSnapshot, StepID: hoStep, ContextHash: hash, Status: Pause,
		CheckpointID: hoCheckpoint, InputHash: hoInputHash}))
	return f
}

// resumeRequest is Studio's allow for the paused before checkpoint.
func (f *handoffFixture) resumeRequest(t *testing.T) *contracts.ActionRequest {
	t.Helper()
	input, err := json.Marshal(f.decision(Allow))
	require.NoError(t, err)
	return &contracts.ActionRequest{RequestID: "req-resume", AgentSlug: hoSlug, Action: "rule.checkpoint.resume",
		JobID: hoJob, CaseID: hoCase, Input: input}
}

// decision is Studio's decision status on the paused before checkpoint.
func (f *handoffFixture) decision(status string) map[string]any {
	return map[string]any{"checkpoint_id": hoCheckpoint, "occurrence_id": hoOccurrence,
		"phase": contracts.PhaseBefore, "status": status, "snapshot_hash": hoSnapshot, "input_hash": hoInputHash,
		"decision_id": hoDecision}
}

func (f *handoffFixture) decisions() []Decision {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Decision(nil), f.decided...)
}

// waitFor waits for ch to close or receive; after hoWait it ends the test.
func waitFor[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(hoWait):
		t.Fatalf("timed out waiting for %s", what)
		var zero T
		return zero
	}
}

// TestDecisionDuringHandoffIsNeverLost forces, through the runtime's test
// seams (no sleeps), each interleaving of Studio's decision on a paused
// checkpoint with a restarted guarded step that finds the occurrence paused
// and lets go of it. Whatever the order, the decision is persisted once and
// reaches the decision hooks at least once with Active false: nobody is left
// believing that a step of this process will take it. In "arrives while the
// step holds the occurrence", the decision sees the step active and is
// persisted only after the step read the records: without the hand-over lock
// (its arrival and the step's hand-over ordered by one lock) the step finds
// no decision to hand over and the hooks are told the step takes it, so the
// decision is lost.
func TestDecisionDuringHandoffIsNeverLost(t *testing.T) {
	tests := []struct {
		name string
		// decisionFirst: the decision reads the step's activity while the
		// step still holds the occurrence.
		decisionFirst bool
	}{
		{name: "arrives while the step holds the occurrence", decisionFirst: true},
		{name: "arrives after the step let go"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newHandoffFixture(t)
			stepAtBegin, releaseStep := make(chan struct{}), make(chan struct{})
			resumeChecked, releaseResume := make(chan struct{}), make(chan struct{})
			contended, read := make(chan struct{}), make(chan struct{})
			f.rt.seam = func(point string) {
				switch point {
				case seamHandoffBegin:
					close(stepAtBegin)
					<-releaseStep
				case seamResumeChecked:
					close(resumeChecked)
					<-releaseResume
				case seamHandoffContended:
					close(contended)
				case seamHandoffRead:
					close(read)
				}
			}
			ctx := context.Background()
			stepDone := make(chan error, 1)
			go func() {
				_, err := Run(ctx, f.gate, f.step)
				stepDone <- err
			}()
			resumeDone := make(chan error, 1)
			resume := func() {
				go func() {
					_, err := f.agent.Resume(ctx, f.resumeRequest(t))
					resumeDone <- err
				}()
			}

			waitFor(t, stepAtBegin, "the step to find the occurrence paused")
			if tt.decisionFirst {
				resume()
				waitFor(t, resumeChecked, "the decision to see the step active")
				close(releaseStep)
				// The step either waits for the decision's arrival to end
				// (the hand-over lock is held) or, without the lock, has
				// already let go and read the records.
				select {
				case <-contended:
				case <-read:
				case <-time.After(hoWait):
					t.Fatal("the step neither waited for the decision nor let go")
				}
				close(releaseResume)
			} else {
				close(releaseStep)
				waitFor(t, read, "the step to let go")
				close(releaseResume)
				resume()
			}
			require.NoError(t, waitFor(t, resumeDone, "the decision to be answered"))
			err := waitFor(t, stepDone, "the step to return")
			var rr *RecoveryRequiredError
			require.ErrorAs(t, err, &rr)
			assert.Equal(t, Pause, rr.Decision, "the step refused the occurrence it found paused")
			assert.Zero(t, f.effects.Load(), "the effect ran on a paused occurrence")

			rec, err := f.rt.loadRecord(ctx, occurrenceKey(hoSlug, hoOccurrence, contracts.PhaseBefore))
			require.NoError(t, err)
			assert.Equal(t, Allow, rec.Status)
			assert.Equal(t, hoDecision, rec.DecisionID)

			var handedOver int
			for _, d := range f.decisions() {
				assert.Equal(t, hoDecision, d.DecisionID)
				if !d.Active {
					handedOver++
				}
			}
			assert.Positive(t, handedOver, "the decision reached no hook as one that no step of this process takes: it is lost (%+v)", f.decisions())
		})
	}
}

// TestRetainedDecisionOfAPauseLeftByACrashIsApplied: Studio's decision arrived
// before the pause answer was recorded, so it was retained; the run that then
// recorded the pause died before taking it. The next run of the occurrence
// applies it instead of waiting for a decision Studio already delivered (the
// kill matrix of the example found jobs left active forever this way).
func TestRetainedDecisionOfAPauseLeftByACrashIsApplied(t *testing.T) {
	tests := []struct {
		status  string
		effects int64
		check   func(t *testing.T, err error)
	}{
		{status: Allow, effects: 1, check: func(t *testing.T, err error) {
			require.ErrorIs(t, err, ErrRequestFailed, "the effect ran; the after checkpoint reaches no Studio here")
		}},
		{status: Stop, check: func(t *testing.T, err error) {
			var rr *RecoveryRequiredError
			require.ErrorAs(t, err, &rr)
			assert.Equal(t, Stop, rr.Decision)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.status, func(t *testing.T) {
			f := newHandoffFixture(t)
			ctx := context.Background()
			d := f.decision(tt.status)
			d["agent_slug"], d["job_id"], d["case_id"] = hoSlug, hoJob, hoCase
			require.NoError(t, putJSON(ctx, f.rt.store, retainedKey(hoSlug, hoOccurrence, contracts.PhaseBefore), d))

			_, err := Run(ctx, f.gate, f.step)
			tt.check(t, err)
			assert.Equal(t, tt.effects, f.effects.Load())
			rec, err := f.rt.loadRecord(ctx, occurrenceKey(hoSlug, hoOccurrence, contracts.PhaseBefore))
			require.NoError(t, err)
			assert.Equal(t, tt.status, rec.Status)
			assert.Equal(t, hoDecision, rec.DecisionID)
			_, found, err := f.rt.store.Get(ctx, retainedKey(hoSlug, hoOccurrence, contracts.PhaseBefore))
			require.NoError(t, err)
			assert.False(t, found, "the retained decision is used up")
		})
	}
}
