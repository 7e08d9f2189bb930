package supervaizer_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	supervaizer "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/a2atask"
	"github.com/supervaize/supervaizer-go/store"
)

// TestA2ATaskViewAcrossInstances: instances sharing a store keep one view.
// Instance A and instance B poll the same job with supervaizer/action.invoke
// job.sync, each answering what its own backend says; after each poll,
// instance C (an agent without job.sync, so its tasks/get answers from the
// view alone) reads the view. A poll that changes what its instance last
// reported is written; a poll repeating it costs A no store operation at
// all (issue 40 item 2, A's store counts them) and leaves what the other
// instance wrote in between: A, whose backend lags behind, never takes the
// view back to the state it reported before.
func TestA2ATaskViewAcrossInstances(t *testing.T) {
	for name, open := range sharedStores(t) {
		t.Run(name, func(t *testing.T) {
			st := open()
			counted := &countingStore{Store: st}
			instance := func(id string, st store.Store, with ...string) (*supervaizer.Server, *taskJobs) {
				return serveTaskAgent(t, newTaskAgent(t, with...), supervaizer.WithLocalMode(true),
					supervaizer.WithStore(st), supervaizer.WithInstanceID(id))
			}
			a, jobsA := instance("a", counted, "job.sync")
			b, jobsB := instance("b", st, "job.sync")
			c, _ := instance("c", st)
			startTask(t, a, "job-x", "active", "")
			setStatus := func(jobs *taskJobs, status string) {
				jobs.mu.Lock()
				defer jobs.mu.Unlock()
				if jobs.jobs["job-x"] == nil {
					jobs.jobs["job-x"] = &taskJob{mission: "mission-job-x"}
				}
				jobs.jobs["job-x"].status = status
			}
			setStatus(jobsB, "completed")

			sync := func(srv http.Handler, id string) {
				t.Helper()
				body := rpcBody(t, id, supervaizer.MethodActionInvoke, map[string]any{
					"request_id": id, "actor": map[string]any{"user_id": "local"}, "workspace": map[string]any{"id": "local"},
					"mission_id": "mission-job-x", "agent_slug": taskAgentSlug, "surface": "job.start", "action": "job.sync", "job_id": "job-x",
				})
				w := postA2A(t, srv, a2aCall{raw: body})
				require.Equal(t, http.StatusOK, w.Code)
				require.Contains(t, w.Body.String(), `"job_state"`)
			}
			seen := func() a2atask.TaskState {
				t.Helper()
				return taskOf(t, callA2A(t, c, a2aCall{method: a2atask.MethodTasksGet, params: map[string]any{"id": "job-x"}})).Status.State
			}
			require.Equal(t, a2atask.StateWorking, seen(), "A's job.start")
			for i, step := range []struct {
				srv     http.Handler
				set     func() // the instance's backend changes before the poll
				want    a2atask.TaskState
				storeOp bool // A's poll reads (and may write) the view
			}{
				{srv: b, want: a2atask.StateCompleted},
				{srv: a, want: a2atask.StateCompleted}, // A repeats its job.start's state: B's write stays
				{srv: a, want: a2atask.StateCompleted},
				{srv: a, set: func() { setStatus(jobsA, "failed") }, want: a2atask.StateFailed, storeOp: true}, // A's state changed
				{srv: a, want: a2atask.StateFailed},
				{srv: b, want: a2atask.StateFailed}, // B repeats its last poll: A's write stays
				{srv: b, set: func() { setStatus(jobsB, "stopped") }, want: a2atask.StateCanceled},
			} {
				if step.set != nil {
					step.set()
				}
				before := counted.ops.Load()
				sync(step.srv, "sync-"+string(rune('1'+i)))
				assert.Equal(t, step.want, seen(), "after poll %d", i+1)
				if step.srv == a {
					assert.Equal(t, step.storeOp, counted.ops.Load() != before, "A's store operations in poll %d", i+1)
				}
			}
			assert.Equal(t, "job.sync", jobsA.last().Action)
		})
	}
}
