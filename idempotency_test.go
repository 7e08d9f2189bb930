package supervaizer_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	sv "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/errcode"
	"github.com/supervaize/supervaizer-go/store"
	svtest "github.com/supervaize/supervaizer-go/testing"
)

type idemFixture struct {
	ts    *svtest.TestServer
	srv   *sv.Server
	calls atomic.Int64
	fail  atomic.Bool
	delay atomic.Int64 // nanoseconds job.start takes
}

// newIdemFixture serves the research agent through svtest, on st when not nil.
func newIdemFixture(t testing.TB, st store.Store) *idemFixture {
	t.Helper()
	reg := mustRegistration(t, sv.RegistrationSpec{
		AgentSlug: "research-agent", DisplayName: "Research Agent", A2UICatalogVersion: "r.1",
		Surfaces: sv.Surfaces("job.start"), Actions: sv.Actions("job.start", "job.start.preview", "job.stop"),
	})
	a, err := sv.NewAgent(sv.AgentSpec{Name: "Research Agent", Version: "1.0.0", Registration: reg})
	require.NoError(t, err)
	var opts []sv.Option
	if st != nil {
		opts = append(opts, sv.WithStore(st))
	}
	ts := svtest.NewTestServer(t, []*sv.Agent{a}, opts...)
	f := &idemFixture{ts: ts, srv: ts.Server}
	type start struct {
		TopicID string `json:"topic_id" sv:"nonblank"`
		Depth   int    `json:"depth,omitempty"` // optional
	}
	sv.HandleActionFor(f.srv, "job.start", func(_ context.Context, req *sv.ActionRequest, in start) (*sv.ActionResult, error) {
		n := f.calls.Add(1)
		time.Sleep(time.Duration(f.delay.Load()))
		if f.fail.Load() {
			return nil, errors.New("backend down")
		}
		// Each real run creates a new case id: a replay must not.
		return sv.OK(sv.JobStarted(req.JobID, map[string]any{"topic_id": in.TopicID, "run": n})), nil
	})
	f.srv.HandleAction("job.start.preview", func(context.Context, *sv.ActionRequest) (*sv.ActionResult, error) {
		return sv.OK(contracts.Effect{Type: "job.start.previewed"}), nil
	})
	f.srv.HandleAction("job.stop", func(context.Context, *sv.ActionRequest) (*sv.ActionResult, error) {
		f.calls.Add(1)
		return sv.OK(), nil
	})
	return f
}

// request returns the call of action in mission m-1 with the idempotency key
// ("" for none), job and input (JSON).
func (f *idemFixture) request(action, key, jobID, input string) contracts.ActionRequest {
	req := f.ts.Request(action, json.RawMessage(input))
	req.RequestID, req.MissionID, req.Surface = "r-1", "m-1", "job.start"
	req.JobID, req.IdempotencyKey = jobID, key
	return req
}

// invoke sends the call and returns its result exactly as sent; a JSON-RPC
// error fails the test.
func (f *idemFixture) invoke(t testing.TB, action, key, jobID, input string) string {
	t.Helper()
	return f.send(t, f.request(action, key, jobID, input))
}

func (f *idemFixture) send(t testing.TB, req contracts.ActionRequest) string {
	t.Helper()
	raw, err := f.ts.InvokeRaw(context.Background(), req)
	require.NoError(t, err)
	return string(raw)
}

func TestIdempotentJobStart(t *testing.T) {
	f := newIdemFixture(t, nil)
	first := f.invoke(t, "job.start", "setup-7f3c", "job-77", `{"topic_id":"battery","depth":2}`)
	assert.Contains(t, first, `"strictly_idempotent_response":true`)
	assert.Contains(t, first, `"dedupe_keys":["setup-7f3c"]`)
	assert.Contains(t, first, `"run":1`)

	// Same key, identities and input (other key order): the original bytes, handler not called.
	again := f.invoke(t, "job.start", "setup-7f3c", "job-77", `{"depth":2,"topic_id":"battery"}`)
	assert.Equal(t, first, again)
	assert.EqualValues(t, 1, f.calls.Load())

	// Different input or identities: exactly the conflict result of the protocol,
	// handler not called.
	const conflict = `{"status":"error","effects":[],` +
		`"replay_safety":{"dedupe_keys":["setup-7f3c"],"stable_external_ids_required":true,"strictly_idempotent_response":true,"convergent":true},` +
		`"errors":[{"code":"idempotency_conflict","message":"idempotency_key setup-7f3c was already used with a different input or job"}]}`
	for _, tc := range []struct{ name, mission, job, input string }{
		{"other input", "m-1", "job-77", `{"topic_id":"solar"}`},
		{"other job", "m-1", "job-78", `{"topic_id":"battery","depth":2}`},
		{"other mission", "m-2", "job-77", `{"topic_id":"battery","depth":2}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := f.request("job.start", "setup-7f3c", tc.job, tc.input)
			req.MissionID = tc.mission
			res := f.send(t, req)
			assert.JSONEq(t, conflict, res)
			assert.EqualValues(t, 1, f.calls.Load())
		})
	}

	// The preview with the same key is scoped separately and never counts as the start.
	assert.Contains(t, f.invoke(t, "job.start.preview", "setup-new", "job-9", `{}`), "job.start.previewed")
	fresh := f.invoke(t, "job.start", "setup-new", "job-9", `{"topic_id":"x"}`)
	assert.Contains(t, fresh, `"run":2`)

	// Without a key nothing is deduplicated.
	f.invoke(t, "job.start", "", "job-1", `{"topic_id":"x"}`)
	f.invoke(t, "job.start", "", "job-1", `{"topic_id":"x"}`)
	assert.EqualValues(t, 4, f.calls.Load())

	// Actions not opted in are not deduplicated.
	f.invoke(t, "job.stop", "k", "job-1", `{}`)
	f.invoke(t, "job.stop", "k", "job-1", `{}`)
	assert.EqualValues(t, 6, f.calls.Load())
}

func TestIdempotencyFailedAttemptIsNotRecorded(t *testing.T) {
	f := newIdemFixture(t, nil)
	f.fail.Store(true)
	_, err := f.ts.InvokeRaw(context.Background(), f.request("job.start", "k-1", "job-1", `{"topic_id":"x"}`))
	assert.Equal(t, errcode.InternalError, sv.CodeOf(err))
	f.fail.Store(false)
	ok := f.invoke(t, "job.start", "k-1", "job-1", `{"topic_id":"x"}`)
	assert.Contains(t, ok, `"status":"ok"`)
	assert.EqualValues(t, 2, f.calls.Load(), "the retry after a failure runs the handler again")

	// Invalid input is refused before the layer records anything.
	_, err = f.ts.InvokeRaw(context.Background(), f.request("job.start", "k-2", "job-2", `{"topic_id":""}`))
	assert.Equal(t, errcode.InvalidParams, sv.CodeOf(err))
	assert.Contains(t, f.invoke(t, "job.start", "k-2", "job-2", `{"topic_id":"y"}`), `"status":"ok"`)
}

func TestIdempotencyConcurrentDuplicatesRunOnce(t *testing.T) {
	f := newIdemFixture(t, nil)
	const n = 100
	results := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { results[i] = f.invoke(t, "job.start", "same", "job-1", `{"topic_id":"x"}`) })
	}
	wg.Wait()
	assert.EqualValues(t, 1, f.calls.Load())
	for _, r := range results {
		assert.Equal(t, results[0], r)
	}
}

// databaseStore hides the exclusivity of the store it wraps, as a database
// shared by several instances would.
type databaseStore struct{ store.Store }

// TestIdempotencyDuplicatesAcrossInstances spreads concurrent duplicates of
// job.start over three instances sharing a store: each key's handler runs
// once, and every call gets its bytes, also those that arrived on another
// instance while it ran.
func TestIdempotencyDuplicatesAcrossInstances(t *testing.T) {
	st := databaseStore{store.NewMemory()}
	fs := []*idemFixture{newIdemFixture(t, st), newIdemFixture(t, st), newIdemFixture(t, st)}
	for _, f := range fs {
		f.delay.Store(int64(50 * time.Millisecond))
	}
	const keys, copies = 5, 6
	results := make([][]string, keys)
	var wg sync.WaitGroup
	for k := range keys {
		results[k] = make([]string, copies)
		for c := range copies {
			wg.Go(func() {
				results[k][c] = fs[c%len(fs)].invoke(t, "job.start", "key-"+strconv.Itoa(k), "job-"+strconv.Itoa(k), `{"topic_id":"x"}`)
			})
		}
	}
	wg.Wait()
	var runs int64
	for _, f := range fs {
		runs += f.calls.Load()
	}
	assert.EqualValues(t, keys, runs, "one handler run per key")
	for k := range keys {
		assert.Contains(t, results[k][0], `"status":"ok"`, "key %d", k)
		for c := 1; c < copies; c++ {
			assert.Equal(t, results[k][0], results[k][c], "key %d, call %d", k, c)
		}
	}
}

func TestIdempotencySurvivesRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	st, err := store.Open(path)
	require.NoError(t, err)
	f := newIdemFixture(t, st)
	first := f.invoke(t, "job.start", "k", "job-1", `{"topic_id":"x"}`)
	require.NoError(t, st.Close())

	st2, err := store.Open(path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st2.Close() })
	g := newIdemFixture(t, st2)
	assert.Equal(t, first, g.invoke(t, "job.start", "k", "job-1", `{"topic_id":"x"}`))
	assert.EqualValues(t, 0, g.calls.Load(), "the restarted controller answers from the durable record")
}

func TestIdempotentOptIn(t *testing.T) {
	f := newIdemFixture(t, nil)
	a, _ := f.srv.Agent("research-agent")
	a.Idempotent("job.stop")
	f.invoke(t, "job.stop", "k", "job-1", `{}`)
	f.invoke(t, "job.stop", "k", "job-1", `{}`)
	assert.EqualValues(t, 1, f.calls.Load())
	assert.Panics(t, func() { a.Idempotent("job.nope") })
}

// BenchmarkIdempotentJobStart measures job.start through the idempotency
// layer: a replay (hit), a new key (miss) and no key. The workspace token is
// minted once, so its verification is a cache hit.
func BenchmarkIdempotentJobStart(b *testing.B) {
	run := func(b *testing.B, key func() string) {
		f := newIdemFixture(b, nil)
		req := f.request("job.start", "", "job-1", `{"topic_id":"x"}`)
		tok := f.ts.Studio.TokenForAction(req)
		invoke := func() {
			req.IdempotencyKey = key()
			if _, err := f.ts.Call(context.Background(), sv.MethodActionInvoke, map[string]any{"action_request": req}, tok); err != nil {
				b.Fatal(err)
			}
		}
		invoke()
		b.ReportAllocs()
		for b.Loop() {
			invoke()
		}
	}
	b.Run("hit", func(b *testing.B) { run(b, func() string { return "k" }) })
	b.Run("miss", func(b *testing.B) {
		i := 0
		run(b, func() string { i++; return "k-" + strconv.Itoa(i) })
	})
	b.Run("no key", func(b *testing.B) { run(b, func() string { return "" }) })
}
