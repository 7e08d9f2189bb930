package supervaizer_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	supervaizer "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/a2atask"
)

// TestA2ATaskViewAcrossInstances: instances sharing a store keep one view,
// the last job_state any of them validated. Instance A and instance B poll
// the same job with supervaizer/action.invoke job.sync, each answering what
// its own backend says; after each poll, instance C (an agent without
// job.sync, so its tasks/get answers from the view alone) sees that poll's
// state. A poll repeating what its instance wrote before, after the other
// instance wrote something else, is written again: nothing an instance
// remembers masks another instance's write.
func TestA2ATaskViewAcrossInstances(t *testing.T) {
	for name, open := range sharedStores(t) {
		t.Run(name, func(t *testing.T) {
			st := open()
			instance := func(id string, with ...string) (*supervaizer.Server, *taskJobs) {
				return serveTaskAgent(t, newTaskAgent(t, with...), supervaizer.WithLocalMode(true),
					supervaizer.WithStore(st), supervaizer.WithInstanceID(id))
			}
			a, jobsA := instance("a", "job.sync")
			b, jobsB := instance("b", "job.sync")
			c, _ := instance("c")
			startTask(t, a, "job-x", "active", "")
			jobsB.mu.Lock()
			jobsB.jobs["job-x"] = &taskJob{mission: "mission-job-x", status: "completed"}
			jobsB.mu.Unlock()

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
				srv  http.Handler
				want a2atask.TaskState
			}{
				{b, a2atask.StateCompleted},
				{a, a2atask.StateWorking}, // A wrote this state before; B wrote since
				{a, a2atask.StateWorking},
				{b, a2atask.StateCompleted}, // B's state again, after A's
				{a, a2atask.StateWorking},
			} {
				sync(step.srv, "sync-"+string(rune('1'+i)))
				assert.Equal(t, step.want, seen(), "after poll %d", i+1)
			}
			assert.Equal(t, "job.sync", jobsA.last().Action)
		})
	}
}
