package supervaizer_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	supervaizer "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/a2atask"
	"github.com/supervaize/supervaizer-go/store"
	svtest "github.com/supervaize/supervaizer-go/testing"
)

// The A2A task streams of the third review (issue 35 rows 6, 7, 13; spec
// item 72): one refresher per task, events routed by task, streams counted
// in MaxEventStreams and per API key, streams that end with their token or
// at the blocking bound, and refreshes under the SDK's own authority.

// countingStore counts the store operations the server makes.
type countingStore struct {
	store.Store
	ops atomic.Int64
}

func (s *countingStore) Get(ctx context.Context, key string) ([]byte, bool, error) {
	s.ops.Add(1)
	return s.Store.Get(ctx, key)
}

func (s *countingStore) PutIfAbsent(ctx context.Context, key string, value []byte) ([]byte, bool, error) {
	s.ops.Add(1)
	return s.Store.PutIfAbsent(ctx, key, value)
}

func (s *countingStore) CompareAndSwap(ctx context.Context, key string, old, value []byte) (bool, error) {
	s.ops.Add(1)
	return s.Store.CompareAndSwap(ctx, key, old, value)
}

func (s *countingStore) Delete(ctx context.Context, key string) error {
	s.ops.Add(1)
	return s.Store.Delete(ctx, key)
}

// streamOpts are the headers of a stream opened by openStreamAs.
type streamOpts struct {
	key, token string
}

// openStreamAs is openStream with the API key and workspace token of o;
// the caller reads resp.StatusCode (a refused stream's events channel is
// closed at once).
func openStreamAs(t testing.TB, base, method string, params any, o streamOpts) (<-chan streamEvent, *http.Response) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/a2a", bytes.NewReader(rpcBody(t, "s-1", method, params)))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(supervaizer.HeaderAPIKey, cmpOr(o.key, testWriteKey))
	if o.token != "" {
		req.Header.Set(supervaizer.HeaderWorkspaceAuthorization, o.token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { _ = resp.Body.Close() })
	events := make(chan streamEvent, 16)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var ev streamEvent
			if json.Unmarshal([]byte(data), &ev) == nil && ev.Result != nil {
				var k struct{ Kind string }
				_ = json.Unmarshal(ev.Result, &k)
				ev.Kind = k.Kind
			}
			events <- ev
		}
	}()
	return events, resp
}

// TestA2AStreamsPerKey (issue 35 row 6): one API key holds at most 100
// open streams (HTTPSettings.MaxStreamsPerKey); the 101st gets 503 with
// Retry-After, another key still opens one; task streams count in
// MaxEventStreams with GET /a2a/events. The code before the fix had no
// per-key bound and a cap of its own for task streams: this test failed.
func TestA2AStreamsPerKey(t *testing.T) {
	const otherKey = "second-write-key"
	srv, _ := newTaskServer(t, supervaizer.WithLocalMode(true), supervaizer.WithAPIKey(otherKey, supervaizer.ScopeWrite))
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	startTask(t, srv, "job-open", "running", "")
	resume := map[string]any{"id": "job-open"}
	for i := range 100 {
		events, resp := openStreamAs(t, hs.URL, a2atask.MethodTasksResubscribe, resume, streamOpts{})
		require.Equal(t, http.StatusOK, resp.StatusCode, "stream %d", i+1)
		require.Equal(t, "task", next(t, events).Kind)
	}
	_, resp := openStreamAs(t, hs.URL, a2atask.MethodTasksResubscribe, resume, streamOpts{})
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "the 101st stream of one key")
	assert.NotEmpty(t, resp.Header.Get("Retry-After"))
	req, err := http.NewRequest(http.MethodGet, hs.URL+"/a2a/events", nil)
	require.NoError(t, err)
	req.Header.Set(supervaizer.HeaderAPIKey, testWriteKey)
	ev, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = ev.Body.Close()
	assert.Equal(t, http.StatusServiceUnavailable, ev.StatusCode, "/a2a/events counts in the same key's streams")
	events, resp := openStreamAs(t, hs.URL, a2atask.MethodTasksResubscribe, resume, streamOpts{key: otherKey})
	assert.Equal(t, http.StatusOK, resp.StatusCode, "another key")
	assert.Equal(t, "task", next(t, events).Kind)

	t.Run("task streams count in MaxEventStreams", func(t *testing.T) {
		srv, _ := newTaskServer(t, supervaizer.WithLocalMode(true), supervaizer.WithHTTPSettings(supervaizer.HTTPSettings{MaxEventStreams: 2}))
		hs := httptest.NewServer(srv)
		t.Cleanup(hs.Close)
		startTask(t, srv, "job-open", "running", "")
		events, resp := openStreamAs(t, hs.URL, a2atask.MethodTasksResubscribe, resume, streamOpts{})
		require.Equal(t, http.StatusOK, resp.StatusCode)
		next(t, events)
		req, err := http.NewRequest(http.MethodGet, hs.URL+"/a2a/events", nil)
		require.NoError(t, err)
		req.Header.Set(supervaizer.HeaderAPIKey, testWriteKey)
		ev, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		t.Cleanup(func() { _ = ev.Body.Close() })
		require.Equal(t, http.StatusOK, ev.StatusCode)
		_, resp = openStreamAs(t, hs.URL, a2atask.MethodTasksResubscribe, resume, streamOpts{})
		assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "the third stream, of either kind")
	})
}

// sendP50 is the median duration of n non-blocking message/send calls,
// each starting a new task.
func sendP50(t *testing.T, srv http.Handler, prefix string, n int) time.Duration {
	t.Helper()
	ds := make([]time.Duration, n)
	for i := range ds {
		params := taskMessage(fmt.Sprintf("%s-%d", prefix, i), "job.start", map[string]any{"topic_id": "t", "status": "running"}, nil)
		start := time.Now()
		w := postA2A(t, srv, a2aCall{method: a2atask.MethodMessageSend, params: params})
		ds[i] = time.Since(start)
		require.Equal(t, http.StatusOK, w.Code)
	}
	slices.Sort(ds)
	return ds[n/2]
}

// TestA2AIdleStreamsCostNothing (issue 35 row 6): 1,000 idle task streams
// on 10 tasks leave message/send's median within 2x of none (+1 ms; in one
// of three attempts), and make no
// more store operations per second than one stream per task: one refresher
// per task, task events routed by task. The code before the fix polled
// job.sync every 500 ms per stream (2,000 refreshes a second) and parsed
// every task update in every stream: this test failed.
func TestA2AIdleStreamsCostNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("opens 1,000 streams: skipped with -short only, which make test and .ci/run do not pass")
	}
	const tasks = 10
	// measure opens perTask streams on each of the tasks of a fresh server
	// and returns the store operations of a 3 s window once they are open,
	// and the server.
	measure := func(t *testing.T, perTask int) (int64, http.Handler) {
		cs := &countingStore{Store: store.NewMemory()}
		srv, _ := newTaskServer(t, supervaizer.WithLocalMode(true), supervaizer.WithStore(cs),
			supervaizer.WithHTTPSettings(supervaizer.HTTPSettings{MaxEventStreams: 2 * tasks * perTask, MaxStreamsPerKey: 2 * tasks * perTask}))
		hs := httptest.NewServer(srv)
		t.Cleanup(hs.Close)
		for i := range tasks {
			startTask(t, srv, fmt.Sprintf("job-idle-%d", i), "running", "")
		}
		for i := range tasks * perTask {
			events, resp := openStreamAs(t, hs.URL, a2atask.MethodTasksResubscribe, map[string]any{"id": fmt.Sprintf("job-idle-%d", i%tasks)}, streamOpts{})
			require.Equal(t, http.StatusOK, resp.StatusCode)
			require.Equal(t, "task", next(t, events).Kind)
		}
		before := cs.ops.Load()
		time.Sleep(3 * time.Second)
		return cs.ops.Load() - before, srv
	}
	one, _ := measure(t, 1)
	many, srv := measure(t, 100)
	t.Logf("store operations in 3 s: %d with one stream per task, %d with 100", one, many)
	assert.LessOrEqual(t, many, 2*one+20, "idle streams multiply store operations")

	// The two medians are measured one after the other, so a machine that
	// other tests load meanwhile can make them differ: the comparison is
	// made up to three times, and fails only when every attempt does (the
	// code before the fix was several times slower on each).
	quiet, _ := newTaskServer(t, supervaizer.WithLocalMode(true))
	var idle, none time.Duration
	for attempt := range 3 {
		idle = sendP50(t, srv, fmt.Sprintf("busy-%d", attempt), 200)
		none = sendP50(t, quiet, fmt.Sprintf("quiet-%d", attempt), 200)
		t.Logf("message/send p50: %v with 1,000 idle streams, %v with none", idle, none)
		if idle <= 2*none+time.Millisecond {
			break
		}
	}
	assert.LessOrEqual(t, idle, 2*none+time.Millisecond, "idle streams slow message/send, in three attempts")
}

// leastPrivilege is a server verifying tokens, its job store, and a token
// scoped as docs/a2a.md says for message/send: supervaizer/action.invoke
// and the action, no job.sync.
func leastPrivilege(t *testing.T, opts ...supervaizer.Option) (*supervaizer.Server, *taskJobs, *svtest.FakeStudio, string) {
	t.Helper()
	fake := svtest.NewFakeStudio(t)
	a := newTaskAgent(t, "job.stop", "job.sync")
	fake.Link(a, testStudioAgentID)
	srv, jobs := serveTaskAgent(t, a, append([]supervaizer.Option{supervaizer.WithWorkspaceAuth(testWorkspaceAuth(fake))}, opts...)...)
	return srv, jobs, fake, mintToken(fake, taskClaims(supervaizer.MethodActionInvoke, "job.start"))
}

// finishLater completes job id in the agent, as its background work does,
// after d; it returns when the job ends.
func finishLater(jobs *taskJobs, id string, d time.Duration) <-chan time.Time {
	done := make(chan time.Time, 1)
	time.AfterFunc(d, func() {
		jobs.mu.Lock()
		jobs.jobs[id].status = "completed"
		jobs.mu.Unlock()
		done <- time.Now()
	})
	return done
}

// TestA2ALeastPrivilegeRefresh (issue 35 row 13): with a token carrying
// only supervaizer/action.invoke and the action, a blocking message/send
// and a message/stream see the job's final state within 2 s of its end:
// the SDK refreshes the task through job.sync in process with its own
// authority. The code before the fix refreshed with the caller's token,
// which job.sync refused: the blocking send answered working at the bound
// and the stream sent only heartbeats. This test failed.
func TestA2ALeastPrivilegeRefresh(t *testing.T) {
	t.Run("blocking message/send", func(t *testing.T) {
		srv, jobs, _, token := leastPrivilege(t, supervaizer.WithHTTPSettings(supervaizer.HTTPSettings{A2ABlocking: 10 * time.Second}))
		params := taskMessage("m-block", "job.start", map[string]any{"topic_id": "t", "status": "running"}, func(p, m map[string]any) {
			m["taskId"] = "job-block"
			p["configuration"] = map[string]any{"blocking": true}
		})
		ended := finishLater(jobs, "job-block", 300*time.Millisecond)
		task := taskOf(t, callA2A(t, srv, a2aCall{method: a2atask.MethodMessageSend, params: params, token: token}))
		answered := time.Now()
		assert.Equal(t, a2atask.StateCompleted, task.Status.State)
		assert.WithinDuration(t, <-ended, answered, 2*time.Second)
		assert.Equal(t, "a2a:grant-01", jobs.last().Actor.UserID, "job.sync ran as the caller's actor")
	})
	t.Run("message/stream", func(t *testing.T) {
		srv, jobs, _, token := leastPrivilege(t)
		hs := httptest.NewServer(srv)
		t.Cleanup(hs.Close)
		params := taskMessage("m-stream", "job.start", map[string]any{"topic_id": "t", "status": "running"}, func(_, m map[string]any) { m["taskId"] = "job-stream" })
		events, resp := openStreamAs(t, hs.URL, a2atask.MethodMessageStream, params, streamOpts{token: token})
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Equal(t, "task", next(t, events).Kind)
		ended := finishLater(jobs, "job-stream", 300*time.Millisecond)
		var final a2atask.StatusUpdateEvent
		timeout := time.After(10 * time.Second)
	read:
		for {
			select {
			case ev, ok := <-events:
				if !ok {
					break read
				}
				if ev.Kind == "status-update" {
					if final = statusUpdate(t, ev); final.Final {
						break read
					}
				}
			case <-timeout:
				break read
			}
		}
		seen := time.Now()
		require.True(t, final.Final, "the stream ended without a final update")
		assert.Equal(t, a2atask.StateCompleted, final.Status.State)
		assert.WithinDuration(t, <-ended, seen, 2*time.Second)
	})
}

// TestA2AStreamEnds (issue 35 row 7): a stream ends when its token expires
// (plus the leeway) or at the blocking bound, its last event a
// status-update with the state it knows (final true in 0.3). The code
// before the fix kept the stream open as long as the client: this test
// failed.
func TestA2AStreamEnds(t *testing.T) {
	t.Run("token expiry", func(t *testing.T) {
		zero := time.Duration(0)
		fake := svtest.NewFakeStudio(t)
		a := newTaskAgent(t, "job.stop", "job.sync")
		fake.Link(a, testStudioAgentID)
		auth := testWorkspaceAuth(fake)
		auth.Leeway = &zero
		srv, _ := serveTaskAgent(t, a, supervaizer.WithWorkspaceAuth(auth))
		hs := httptest.NewServer(srv)
		t.Cleanup(hs.Close)
		long := mintToken(fake, taskClaims(supervaizer.MethodActionInvoke, "job.start", "job.sync"))
		startTask(t, srv, "job-exp", "running", long)
		short := mintToken(fake, func(c *svtest.Claims) {
			taskClaims(supervaizer.MethodActionInvoke, "job.sync")(c)
			c.ExpiresAt = time.Now().Add(2 * time.Second)
		})
		opened := time.Now()
		events, resp := openStreamAs(t, hs.URL, a2atask.MethodTasksResubscribe, map[string]any{"id": "job-exp"}, streamOpts{token: short})
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Equal(t, "task", next(t, events).Kind)
		last := statusUpdate(t, next(t, events))
		assert.True(t, last.Final)
		assert.Equal(t, a2atask.StateWorking, last.Status.State, "the state it knows")
		assert.Less(t, time.Since(opened), 4*time.Second, "ended at the token's exp (whole seconds)")
		ended(t, events)
	})
	t.Run("blocking bound", func(t *testing.T) {
		srv, _ := newTaskServer(t, supervaizer.WithLocalMode(true), supervaizer.WithHTTPSettings(supervaizer.HTTPSettings{A2ABlocking: time.Second}))
		hs := httptest.NewServer(srv)
		t.Cleanup(hs.Close)
		startTask(t, srv, "job-bound", "running", "")
		for _, method := range []string{a2atask.MethodTasksResubscribe, a2atask.MethodSubscribeToTask} {
			events, resp := openStreamAs(t, hs.URL, method, map[string]any{"id": "job-bound"}, streamOpts{})
			require.Equal(t, http.StatusOK, resp.StatusCode)
			first := next(t, events)
			last := next(t, events)
			assert.Contains(t, strings.ToLower(string(last.Result)), "working", "%s: the last event carries the state it knows", method)
			if method == a2atask.MethodTasksResubscribe {
				assert.Equal(t, "task", first.Kind)
				assert.True(t, statusUpdate(t, last).Final)
			}
			ended(t, events)
		}
	})
}
