package supervaizer_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
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

// panicsOnMarshal is a result value whose encoding panics.
type panicsOnMarshal struct{}

func (panicsOnMarshal) MarshalJSON() ([]byte, error) { panic("MarshalJSON exploded") }

// TestIdempotencyEncodingPanic: a result whose encoding panics (spec item 69)
// fails every one of three concurrent duplicates with -32603, and the record
// is released as for an invalid result, so the next retry runs the handler
// at once. On the code before the fix the first call's connection dropped
// without an answer, the duplicates got HTTP 200 with `"result":` and no
// value, and the record stayed pending until its lease ended (the retry
// waited 30 s, then got idempotency_in_progress).
// newStartServer serves an agent declaring job.start alone, with h as its
// handler, on st when not nil.
func newStartServer(t *testing.T, st store.Store, h sv.ActionHandler) *svtest.TestServer {
	t.Helper()
	reg := mustRegistration(t, sv.RegistrationSpec{
		AgentSlug: "research-agent", DisplayName: "Research Agent", A2UICatalogVersion: "r.1",
		Surfaces: sv.Surfaces("job.start"), Actions: sv.Actions("job.start"),
	})
	a, err := sv.NewAgent(sv.AgentSpec{Name: "Research Agent", Version: "1.0.0", Registration: reg})
	require.NoError(t, err)
	var opts []sv.Option
	if st != nil {
		opts = append(opts, sv.WithStore(st))
	}
	ts := svtest.NewTestServer(t, []*sv.Agent{a}, opts...)
	ts.Server.HandleAction("job.start", h)
	return ts
}

func TestIdempotencyEncodingPanic(t *testing.T) {
	var calls atomic.Int64
	var broken atomic.Bool
	broken.Store(true)
	ts := newStartServer(t, nil, func(_ context.Context, req *sv.ActionRequest) (*sv.ActionResult, error) {
		calls.Add(1)
		time.Sleep(50 * time.Millisecond) // the duplicates arrive while it runs
		if broken.Load() {
			return sv.OK(sv.JobStarted(req.JobID, map[string]any{"bad": panicsOnMarshal{}})), nil
		}
		return sv.OK(sv.JobStarted(req.JobID, map[string]any{"ok": true})), nil
	})
	req := ts.Request("job.start", map[string]any{"topic_id": "x"})
	req.MissionID, req.JobID, req.IdempotencyKey = "m-1", "job-1", "k-panic"

	errs := make([]error, 3)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Go(func() { _, errs[i] = ts.InvokeRaw(t.Context(), req) })
	}
	wg.Wait()
	for i, err := range errs {
		var e *sv.Error
		require.ErrorAs(t, err, &e, "call %d: a JSON-RPC error, not a dropped connection or a broken answer", i)
		assert.Equal(t, errcode.InternalError, sv.CodeOf(err), "call %d", i)
		assert.Equal(t, "Action handler failed", e.Error(), "call %d", i)
	}
	assert.EqualValues(t, 1, calls.Load(), "the duplicates shared the one attempt")

	broken.Store(false)
	start := time.Now()
	raw, err := ts.InvokeRaw(t.Context(), req)
	require.NoError(t, err)
	assert.Contains(t, string(raw), `"status":"ok"`)
	assert.EqualValues(t, 2, calls.Load(), "the retry ran the handler again: the record was released")
	assert.Less(t, time.Since(start), 5*time.Second, "the retry did not wait for a lease")
}

// TestIdempotencyStoreCutAfterHandler: the store becomes unreachable while
// the handler runs (spec item 69). The caller still gets the handler's
// result; a retry meanwhile is told the attempt is in progress; once the
// store is back the kept result is recorded and a retry replays it byte for
// byte, and the handler ran once in all. On the code before the fix the
// caller got a bare -32603 and the handler ran again after the lease.
func TestIdempotencyStoreCutAfterHandler(t *testing.T) {
	st := &killableStore{Store: store.NewMemory()} // checkpoint_instances_test.go: writes fail while dead
	var calls atomic.Int64
	var once sync.Once
	ts := newStartServer(t, st, func(_ context.Context, req *sv.ActionRequest) (*sv.ActionResult, error) {
		n := calls.Add(1)
		once.Do(func() { st.dead.Store(true) }) // the database goes away mid-call
		return sv.OK(sv.JobStarted(req.JobID, map[string]any{"run": n})), nil
	})
	invoke := func(jobID string) string {
		req := ts.Request("job.start", map[string]any{"topic_id": "x"})
		req.MissionID, req.JobID, req.IdempotencyKey = "m-1", jobID, "k-cut"
		raw, err := ts.InvokeRaw(t.Context(), req)
		require.NoError(t, err)
		return string(raw)
	}

	first := invoke("job-1")
	assert.Contains(t, first, `"run":1`, "the caller gets the result of the handler that ran")

	retry := invoke("job-1")
	assert.Contains(t, retry, `"idempotency_in_progress"`, "a retry while the result is not recorded")
	conflict := invoke("job-2")
	assert.Contains(t, conflict, `"idempotency_conflict"`)

	st.dead.Store(false)
	require.Eventually(t, func() bool {
		return invoke("job-1") == first
	}, 10*time.Second, 20*time.Millisecond, "the kept result is recorded and replayed")
	assert.EqualValues(t, 1, calls.Load(), "the handler ran once")
}

// TestInstanceIDClaim: two live servers given one instance id on a shared
// store (spec item 69): the second refuses to start, naming the variable, and
// starts once the first has stopped (its claim released). On the code before
// the fix both started, and the second took the first's pending records over
// as "an earlier boot of this instance", running their handlers twice.
func TestInstanceIDClaim(t *testing.T) {
	shared := databaseStore{store.NewMemory()}
	newServer := func() *sv.Server {
		srv, err := sv.NewServer([]*sv.Agent{newTestAgent(t, "writer")}, sv.WithStore(shared), sv.WithLocalMode(true),
			sv.WithEnv(emptyEnv), sv.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))),
			sv.WithInstanceID("pod-0"))
		require.NoError(t, err)
		return srv
	}
	first, second := newServer(), newServer()
	ctx := t.Context()
	require.NoError(t, first.Start(ctx))
	t.Cleanup(func() { _ = first.Shutdown(context.Background()) })

	began := time.Now()
	err := second.Start(ctx)
	require.ErrorIs(t, err, sv.ErrInstanceInUse)
	assert.ErrorContains(t, err, "SUPERVAIZER_INSTANCE_ID")
	assert.ErrorContains(t, err, `"pod-0"`)
	assert.Less(t, time.Since(began), 10*time.Second)

	require.NoError(t, first.Shutdown(ctx))
	began = time.Now()
	require.NoError(t, second.Start(ctx), "the claim was released at shutdown")
	assert.Less(t, time.Since(began), time.Second, "a released claim is taken at once")
	require.NoError(t, second.Shutdown(ctx))
}
