package supervaizer_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	sv "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/errcode"
	"github.com/supervaize/supervaizer-go/store"
	svtest "github.com/supervaize/supervaizer-go/testing"
)

// doneWriteStore fails (or, with hang, holds until the caller's deadline)
// every write of a done idempotency record while broken, as a database does
// when it goes away after the handler ran; it counts those writes.
type doneWriteStore struct {
	store.Store
	broken, hang atomic.Bool
	writes       atomic.Int64
}

var errDoneWrite = errors.New("result write failed")

func (s *doneWriteStore) CompareAndSwap(ctx context.Context, key string, old, new []byte) (bool, error) {
	if strings.Contains(string(new), `"state":"done"`) && s.broken.Load() {
		s.writes.Add(1)
		if s.hang.Load() {
			<-ctx.Done() // a silent network drop: no answer, ever
			return false, ctx.Err()
		}
		return false, errDoneWrite
	}
	return s.Store.CompareAndSwap(ctx, key, old, new)
}

// Exclusive: the wrapped memory store belongs to this process.
func (s *doneWriteStore) Exclusive() bool { return store.IsExclusive(s.Store) }

// countRuns is a job.start handler that counts its runs in runs.
func countRuns(runs *atomic.Int64) sv.ActionHandler {
	return func(_ context.Context, req *sv.ActionRequest) (*sv.ActionResult, error) {
		n := runs.Add(1)
		return sv.OK(sv.JobStarted(req.JobID, map[string]any{"run": n})), nil
	}
}

// newKeptServer serves job.start with h on st with opts.
func newKeptServer(t *testing.T, st store.Store, h sv.ActionHandler, opts ...sv.Option) *svtest.TestServer {
	t.Helper()
	reg := mustRegistration(t, sv.RegistrationSpec{
		AgentSlug: "research-agent", DisplayName: "Research Agent", A2UICatalogVersion: "r.1",
		Surfaces: sv.Surfaces("job.start"), Actions: sv.Actions("job.start"),
	})
	a, err := sv.NewAgent(sv.AgentSpec{Name: "Research Agent", Version: "1.0.0", Registration: reg})
	require.NoError(t, err)
	ts := svtest.NewTestServer(t, []*sv.Agent{a}, append([]sv.Option{sv.WithStore(st)}, opts...)...)
	ts.Server.HandleAction("job.start", h)
	return ts
}

func keptStart(ts *svtest.TestServer, key string) (string, error) {
	req := ts.Request("job.start", map[string]any{"topic_id": "x"})
	req.MissionID, req.JobID, req.IdempotencyKey = "m-1", "job-"+key, key
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	raw, err := ts.InvokeRaw(ctx, req)
	return string(raw), err
}

// TestKeptResultsBounded (issue 35 row 4, spec item 73): with every result
// write failing, the results kept are capped (WithKeptResultLimit): the next
// start is refused before its handler with -32603 and data.retry true; and
// one loop, backing off, retries them all: 20 kept results cost a handful of
// failing writes in 3 s, not one retry loop each. On the code before the fix
// the results were unbounded (1,500 starts kept 1,500) and each retried on
// its own (20 results: about 140 failing writes in 3 s); WithKeptResultLimit
// did not exist.
func TestKeptResultsBounded(t *testing.T) {
	st := &doneWriteStore{Store: store.NewMemory()}
	st.broken.Store(true)
	var runs atomic.Int64
	const limit = 20
	ts := newKeptServer(t, st, countRuns(&runs), sv.WithKeptResultLimit(limit))
	for i := range limit {
		res, err := keptStart(ts, "k-"+string(rune('a'+i)))
		require.NoError(t, err)
		assert.Contains(t, res, `"status":"ok"`, "the caller gets the result it was kept for")
	}
	res, err := keptStart(ts, "k-over")
	var e *sv.Error
	require.ErrorAs(t, err, &e, "over the limit: %s", res)
	assert.Equal(t, errcode.InternalError, sv.CodeOf(err))
	data, _ := e.Data().(map[string]any)
	assert.Equal(t, true, data["retry"], "data.retry tells the caller to send it again: %v", e.Data())
	assert.EqualValues(t, limit, runs.Load(), "refused before the handler")

	before := st.writes.Load()
	time.Sleep(3 * time.Second)
	failed := st.writes.Load() - before
	t.Logf("%d kept results: %d failing writes in 3 s", limit, failed)
	assert.LessOrEqual(t, failed, int64(12), "one loop with backoff, not one per result")

	st.broken.Store(false)
	require.Eventually(t, func() bool {
		res, err := keptStart(ts, "k-a")
		return err == nil && strings.Contains(res, `"run":1`)
	}, 30*time.Second, 100*time.Millisecond, "the kept result is recorded once the store is back")
	res, err = keptStart(ts, "k-over")
	require.NoError(t, err)
	assert.Contains(t, res, `"status":"ok"`, "room again once the kept results are recorded")
	assert.EqualValues(t, limit+1, runs.Load())
}

// TestResultWriteDeadline (issue 35 row 12, spec item 73): the store stops
// answering (a silent network drop) as the result is written: after the
// store deadline (WithStoreTimeout) the caller gets its result and the result
// is kept; a retry meanwhile is told the attempt is in progress, then replays
// it once the store answers again; the handler ran once. On the code before
// the fix the write had no deadline and the call hung until the client gave
// up (20 s here); WithStoreTimeout did not exist.
func TestResultWriteDeadline(t *testing.T) {
	st := &doneWriteStore{Store: store.NewMemory()}
	st.broken.Store(true)
	st.hang.Store(true)
	var runs atomic.Int64
	ts := newKeptServer(t, st, countRuns(&runs), sv.WithStoreTimeout(300*time.Millisecond))
	began := time.Now()
	first, err := keptStart(ts, "k-drop")
	require.NoError(t, err, "the call is answered, not held until the client gives up")
	assert.Contains(t, first, `"run":1`)
	assert.Less(t, time.Since(began), 10*time.Second)

	retry, err := keptStart(ts, "k-drop")
	require.NoError(t, err)
	assert.Contains(t, retry, `"idempotency_in_progress"`)

	st.broken.Store(false)
	require.Eventually(t, func() bool {
		res, err := keptStart(ts, "k-drop")
		return err == nil && res == first
	}, 30*time.Second, 100*time.Millisecond, "the kept result is recorded and replayed")
	assert.EqualValues(t, 1, runs.Load(), "the handler ran once")
}
