package supervaizer

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/errcode"
	"github.com/supervaize/supervaizer-go/internal/canon"
	"github.com/supervaize/supervaizer-go/store"
)

// gatedStore holds the next PutIfAbsent, once armed, until release is closed.
type gatedStore struct {
	store.Store
	armed   atomic.Bool
	entered chan struct{}
	release chan struct{}
}

func (g *gatedStore) PutIfAbsent(ctx context.Context, key string, value []byte) ([]byte, bool, error) {
	if g.armed.CompareAndSwap(true, false) {
		close(g.entered)
		<-g.release
	}
	return g.Store.PutIfAbsent(ctx, key, value)
}

// TestIdempotencyWaiterDoesNotShareAnotherInputsOutcome: a retry with the
// recorded input that arrives while a conflicting request with the same key is
// in flight gets the original result, not that request's conflict.
func TestIdempotencyWaiterDoesNotShareAnotherInputsOutcome(t *testing.T) {
	st := &gatedStore{Store: store.NewMemory(), entered: make(chan struct{}), release: make(chan struct{})}
	l := newIdempotency(st, slog.New(slog.DiscardHandler), idemConfig{})
	var runs atomic.Int64
	exec := func(context.Context) ([]byte, *Error) {
		runs.Add(1)
		return []byte(`{"status":"ok","effects":[]}`), nil
	}
	request := func(input string) *ActionRequest {
		return &ActionRequest{AgentSlug: "a", Action: "job.start", IdempotencyKey: "k", MissionID: "m", JobID: "j", Input: json.RawMessage(input)}
	}
	ctx := t.Context()

	original, rpcErr := l.run(ctx, request(`{"x":1}`), exec)
	require.Nil(t, rpcErr)

	st.armed.Store(true)
	conflicting := make(chan []byte, 1)
	go func() {
		raw, _ := l.run(ctx, request(`{"x":2}`), exec)
		conflicting <- raw
	}()
	<-st.entered // the conflicting request is in flight

	retried := make(chan []byte, 1)
	go func() {
		raw, _ := l.run(ctx, request(`{"x":1}`), exec)
		retried <- raw
	}()
	var retry []byte
	select {
	case retry = <-retried:
	case <-time.After(2 * time.Second): // it waited on the conflicting attempt
	}
	close(st.release)
	if retry == nil {
		retry = <-retried
	}
	assert.Equal(t, string(original), string(retry))
	assert.Contains(t, string(<-conflicting), contracts.ErrorIdempotencyConflict)
	assert.EqualValues(t, 1, runs.Load())
}

// TestIdempotencyFailuresCarryActionData: the layer's own -32603 errors carry
// the data of the protocol, like a failed handler's.
func TestIdempotencyFailuresCarryActionData(t *testing.T) {
	l := newIdempotency(store.NewMemory(), slog.New(slog.DiscardHandler), idemConfig{})
	req := &ActionRequest{AgentSlug: "a", Action: "job.start", IdempotencyKey: "k", MissionID: "m", JobID: "j", Input: json.RawMessage(`{`)}
	_, rpcErr := l.run(t.Context(), req, func(context.Context) ([]byte, *Error) { return nil, nil })
	require.NotNil(t, rpcErr)
	assert.Equal(t, errcode.InternalError, CodeOf(rpcErr))
	assert.Equal(t, "Action handler failed", rpcErr.Error())
	assert.Equal(t, map[string]any{"agent_slug": "a", "action": "job.start"}, rpcErr.Data())
	assert.Error(t, rpcErr.Unwrap())
}

// idemClock is a settable clock safe to read from the background sweep.
type idemClock struct{ ns atomic.Int64 }

func newIdemClock(t time.Time) *idemClock {
	c := &idemClock{}
	c.ns.Store(t.UnixNano())
	return c
}
func (c *idemClock) now() time.Time          { return time.Unix(0, c.ns.Load()).UTC() }
func (c *idemClock) advance(d time.Duration) { c.ns.Add(int64(d)) }

// sharedStore hides the exclusivity of the store it wraps, like a database
// several instances share.
type sharedStore struct{ store.Store }

func okExec(runs *atomic.Int64) func(context.Context) ([]byte, *Error) {
	return func(context.Context) ([]byte, *Error) {
		runs.Add(1)
		return []byte(`{"status":"ok","effects":[]}`), nil
	}
}

func idemRequest(ws, key string) *ActionRequest {
	return &ActionRequest{AgentSlug: "a", Action: "job.start", IdempotencyKey: key, MissionID: "m", JobID: "j",
		Workspace: contracts.WorkspaceRef{ID: ws}, Input: json.RawMessage(`{}`)}
}

// leavePending writes the pending record an attempt of l would leave if its
// process died mid-handler.
func leavePending(t *testing.T, l *idempotency, req *ActionRequest) {
	t.Helper()
	hash, err := canon.Hash(req.Input)
	require.NoError(t, err)
	now := l.now()
	raw, err := json.Marshal(idemRecord{State: recordPending, MissionID: req.MissionID, JobID: req.JobID, InputHash: hash,
		CreatedAt: now, LeaseUntil: now.Add(l.lease), Instance: l.instance, Boot: l.boot})
	require.NoError(t, err)
	_, stored, err := l.store.PutIfAbsent(t.Context(), recordKey(recordWorkspace(req), req.AgentSlug, req.Action, req.IdempotencyKey), raw)
	require.NoError(t, err)
	require.True(t, stored)
}

// TestIdempotencyTakeover: a record left pending by a crashed process is taken
// over at once by the same instance's next boot; another instance (or an
// instance of unknown identity on a shared store) waits for the lease.
func TestIdempotencyTakeover(t *testing.T) {
	logger := slog.New(slog.DiscardHandler)
	tests := []struct {
		name        string
		shared      bool
		before, now string // instance ids of the crashed and the running process
		lease       time.Duration
		claim       bool // the running process holds its instance id's claim
		wantWait    bool
	}{
		{name: "exclusive store, next boot", wantWait: false},
		{name: "shared store, same instance id", shared: true, before: "pod-0", now: "pod-0", claim: true, wantWait: false},
		{name: "shared store, same instance id, claim not held", shared: true, before: "pod-0", now: "pod-0", wantWait: true},
		{name: "shared store, another instance", shared: true, before: "pod-0", now: "pod-1", wantWait: true},
		{name: "shared store, no instance id", shared: true, wantWait: true},
		{name: "shared store, short lease", shared: true, lease: time.Minute, wantWait: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var st store.Store = store.NewMemory()
			if tt.shared {
				st = sharedStore{st}
			}
			clock := newIdemClock(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
			crashed := newIdempotency(st, logger, idemConfig{instance: tt.before, lease: tt.lease})
			crashed.now = clock.now
			req := idemRequest("ws-1", "k")
			leavePending(t, crashed, req)

			restarted := newIdempotency(st, logger, idemConfig{instance: tt.now, lease: tt.lease})
			restarted.now = clock.now
			if tt.claim {
				require.NoError(t, restarted.holder.claim(t.Context()))
				t.Cleanup(func() { restarted.holder.release(context.Background()) })
			}
			var runs atomic.Int64
			raw, rpcErr := restarted.run(t.Context(), req, okExec(&runs))
			require.Nil(t, rpcErr)
			if !tt.wantWait {
				assert.Contains(t, string(raw), `"status":"ok"`)
				assert.EqualValues(t, 1, runs.Load())
				return
			}
			assert.Contains(t, string(raw), contracts.ErrorIdempotencyInProgress)
			assert.Zero(t, runs.Load())
			lease := cmp.Or(tt.lease, defaultIdempotencyLease)
			clock.advance(lease - time.Second)
			raw, _ = restarted.run(t.Context(), req, okExec(&runs))
			assert.Contains(t, string(raw), contracts.ErrorIdempotencyInProgress, "within the lease")
			clock.advance(time.Second)
			raw, _ = restarted.run(t.Context(), req, okExec(&runs))
			assert.Contains(t, string(raw), `"status":"ok"`, "after the lease")
			assert.EqualValues(t, 1, runs.Load())
		})
	}
}

// TestIdempotencyRetentionSweep: the sweep removes done records older than
// the retention, pending records whose lease ended longer ago than the
// retention and records keyed without the workspace; it keeps everything
// else, above all an attempt in progress whatever its age.
func TestIdempotencyRetentionSweep(t *testing.T) {
	st := store.NewMemory()
	c := newIdemClock(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	clock := c.now()
	l := newIdempotency(st, slog.New(slog.DiscardHandler), idemConfig{retention: 24 * time.Hour, lease: 100 * 24 * time.Hour})
	l.now = c.now
	ctx := t.Context()
	put := func(key string, rec idemRecord) {
		raw, err := json.Marshal(rec)
		require.NoError(t, err)
		_, _, err = st.PutIfAbsent(ctx, key, raw)
		require.NoError(t, err)
	}
	day := 24 * time.Hour
	put(recordKey("w", "a", "job.start", "old-done"), idemRecord{State: recordDone, CreatedAt: clock.Add(-25 * time.Hour)})
	put(recordKey("w", "a", "job.start", "new-done"), idemRecord{State: recordDone, CreatedAt: clock.Add(-23 * time.Hour)})
	put(recordKey("w", "a", "job.start", "old-running"), idemRecord{State: recordPending, CreatedAt: clock.Add(-30 * day), LeaseUntil: clock.Add(time.Hour)})
	put(recordKey("w", "a", "job.start", "dead-long-ago"), idemRecord{State: recordPending, CreatedAt: clock.Add(-30 * day), LeaseUntil: clock.Add(-2 * day)})
	put(recordKey("w", "a", "job.start", "dead-recently"), idemRecord{State: recordPending, CreatedAt: clock.Add(-30 * day), LeaseUntil: clock.Add(-time.Hour)})
	put(store.Key(legacyIdemNamespace, "a", "job.start", "legacy-old"), idemRecord{State: recordDone, CreatedAt: clock.Add(-8 * day)})
	put(store.Key(legacyIdemNamespace, "a", "job.start", "legacy-new"), idemRecord{State: recordDone, CreatedAt: clock.Add(-time.Hour)})
	put(store.Key("other", "x"), idemRecord{State: recordDone, CreatedAt: clock.Add(-100 * day)})

	removed, err := l.sweep(ctx)
	require.NoError(t, err)
	assert.Equal(t, 3, removed)
	var left []string
	require.NoError(t, st.Scan(ctx, "", func(k string, _ []byte) error {
		parts, err := store.ParseKey(k)
		require.NoError(t, err)
		left = append(left, parts[len(parts)-1])
		return nil
	}))
	assert.ElementsMatch(t, []string{"=new-done", "=old-running", "=dead-recently", "legacy-new", "x"}, left)

	// A sweep starts with the first attempt after startup, then at most hourly.
	var runs atomic.Int64
	_, rpcErr := l.run(ctx, idemRequest("w", "fresh"), okExec(&runs))
	require.Nil(t, rpcErr)
	require.Eventually(t, func() bool {
		l.sweepMu.Lock()
		defer l.sweepMu.Unlock()
		return !l.sweeping && !l.lastSweep.IsZero()
	}, 5*time.Second, time.Millisecond)
	first := l.lastSweep
	c.advance(59 * time.Minute)
	_, _ = l.run(ctx, idemRequest("w", "fresh2"), okExec(&runs))
	l.sweepMu.Lock()
	assert.Equal(t, first, l.lastSweep)
	l.sweepMu.Unlock()
}

// TestIdempotencyKeyNamespaces: a long key or workspace id is hashed into a
// namespace no literal reaches, and parts never run into each other.
func TestIdempotencyKeyNamespaces(t *testing.T) {
	long := strings.Repeat("x", maxLiteralKeyPart+1)
	d := sha256.Sum256([]byte(long))
	hashed := hex.EncodeToString(d[:])
	keys := map[string]string{}
	for _, c := range [][2]string{
		{"w", long}, {"w", "sha256:" + hashed}, {"w", "#" + hashed}, {"w", hashed}, {"w", "=" + long},
		{long, "k"}, {"#" + hashed, "k"}, {"w", strings.Repeat("x", maxLiteralKeyPart)},
		{"w/a", "k"}, {"w", "a/k"},
	} {
		k := recordKey(c[0], "a", "job.start", c[1])
		require.LessOrEqual(t, len(k), store.MaxKeyLen)
		if prev, dup := keys[k]; dup {
			t.Errorf("%q and %q share the record key %s", prev, c, k)
		}
		keys[k] = fmt.Sprint(c)
	}
}

func TestParseRetention(t *testing.T) {
	for in, want := range map[string]time.Duration{"7d": 7 * 24 * time.Hour, "168h": 168 * time.Hour, "90m": 90 * time.Minute, "1d": 24 * time.Hour} {
		got, err := parseRetention(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "0", "-1h", "0d", "-3d", "7", "d", "1.5d", "soon"} {
		_, err := parseRetention(in)
		assert.Error(t, err, in)
	}
}

// FuzzIdempotencyRecordKey: two requests share a record only when their
// workspace and idempotency key are both equal (cross-workspace keys and
// long-key aliases never collide), and every record key fits the store.
func FuzzIdempotencyRecordKey(f *testing.F) {
	long := strings.Repeat("k", maxLiteralKeyPart+1)
	d := sha256.Sum256([]byte(long))
	f.Add("ws-a", "setup-1", "ws-b", "setup-1")
	f.Add("ws-a", long, "ws-a", "sha256:"+hex.EncodeToString(d[:]))
	f.Add("ws-a", long, "ws-a", "#"+hex.EncodeToString(d[:]))
	f.Add("ws/a", "k", "ws", "a/k")
	f.Add(long, "k", "#"+hex.EncodeToString(d[:]), "k")
	f.Fuzz(func(t *testing.T, ws1, key1, ws2, key2 string) {
		k1, k2 := recordKey(ws1, "research-agent", "job.start", key1), recordKey(ws2, "research-agent", "job.start", key2)
		assert.LessOrEqual(t, len(k1), store.MaxKeyLen)
		same := ws1 == ws2 && key1 == key2
		assert.Equal(t, same, k1 == k2, "(%q, %q) and (%q, %q)", ws1, key1, ws2, key2)
	})
}

// TestInstanceClaimOfADeadBoot: a claim left by a crashed boot (never renewed
// again) is taken over once it has stayed unchanged for instanceDeadAfter, or
// at once when its last beat is older than instanceStaleAfter; a claim that is
// renewed meanwhile is a live process's, and refused.
func TestInstanceClaimOfADeadBoot(t *testing.T) {
	logger := slog.New(slog.DiscardHandler)
	tests := []struct {
		name    string
		beatAge time.Duration
		renewed bool
		wantErr bool
		minWait time.Duration
		maxWait time.Duration
	}{
		{name: "recent beat, never renewed", beatAge: time.Second, minWait: instanceDeadAfter, maxWait: instanceDeadAfter + 2*time.Second},
		{name: "stale beat", beatAge: 2 * instanceStaleAfter, maxWait: time.Second},
		{name: "renewed: alive", beatAge: time.Second, renewed: true, wantErr: true, maxWait: instanceDeadAfter + 2*time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			st := sharedStore{store.NewMemory()}
			other := newInstanceHolder(st, "pod-0", "boot-before", logger)
			other.now = func() time.Time { return time.Now().Add(-tt.beatAge) }
			_, stored, err := st.PutIfAbsent(t.Context(), other.key(), other.record(1, false))
			require.NoError(t, err)
			require.True(t, stored)
			if tt.renewed {
				stop := make(chan struct{})
				defer close(stop)
				go func() {
					tick := time.NewTicker(instanceBeat / 4)
					defer tick.Stop()
					for {
						select {
						case <-stop:
							return
						case <-tick.C:
							cur, _, _ := st.Get(context.Background(), other.key())
							other.now = time.Now
							_, _ = st.CompareAndSwap(context.Background(), other.key(), cur, other.record(1, false))
						}
					}
				}()
			}
			h := newInstanceHolder(st, "pod-0", "boot-now", logger)
			began := time.Now()
			err = h.claim(t.Context())
			took := time.Since(began)
			if tt.wantErr {
				require.ErrorIs(t, err, ErrInstanceInUse)
			} else {
				require.NoError(t, err)
				assert.True(t, h.held.Load())
				h.release(context.Background())
				raw, found, err := st.Get(t.Context(), h.key())
				require.NoError(t, err)
				require.True(t, found)
				var c instanceClaim
				require.NoError(t, json.Unmarshal(raw, &c))
				assert.True(t, c.Released, "a clean stop releases the claim")
				assert.EqualValues(t, 2, c.Epoch, "the takeover raised the epoch")
			}
			assert.GreaterOrEqual(t, took, tt.minWait)
			assert.Less(t, took, tt.maxWait)
		})
	}
}

// TestKeptResultFenced: the kept-result retry writes nothing under an old
// epoch. A holder paused between the write path's fencing check and its write
// finds, when it runs again, its store deadline gone: the result is kept, and
// the retry must check the claim again. Fails on the code before this test,
// whose retry wrote the result under the old epoch once another boot had taken
// the instance id over (TestPostgresPausedHolder in examples/research-agent
// saw it as "the paused holder's late write was not refused").
func TestKeptResultFenced(t *testing.T) {
	tests := []struct {
		name      string
		claimBoot string // the boot holding the instance id in the store
		epoch     uint64
		recorded  bool
	}{
		{name: "taken over: forgotten, not written", claimBoot: "boot-newcomer", epoch: 2, recorded: false},
		{name: "still ours: written", claimBoot: "boot-paused", epoch: 1, recorded: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := sharedStore{store.NewMemory()}
			logger := slog.New(slog.DiscardHandler)
			h := newInstanceHolder(st, "pod-0", "boot-paused", logger)
			h.held.Store(true)
			h.claimed.Store(true)
			h.epoch = 1
			h.origin = time.Now().Add(-time.Minute) // not renewed for a minute: paused
			owner := newInstanceHolder(st, "pod-0", tt.claimBoot, logger)
			_, stored, err := st.PutIfAbsent(t.Context(), h.key(), owner.record(tt.epoch, false))
			require.NoError(t, err)
			require.True(t, stored)

			l := newIdempotency(st, logger, idemConfig{})
			l.holder = h
			u := &unrecordedResult{Key: "rec", Pending: []byte(`{"state":"pending"}`), Done: []byte(`{"state":"done"}`),
				JobID: "job-1", Agent: "agent", Action: "job.start"}
			_, stored, err = st.PutIfAbsent(t.Context(), u.Key, u.Pending)
			require.NoError(t, err)
			require.True(t, stored)

			assert.True(t, l.retryKept(t.Context(), u), "the kept result is settled")
			raw, found, err := st.Get(t.Context(), u.Key)
			require.NoError(t, err)
			require.True(t, found)
			if tt.recorded {
				assert.Equal(t, string(u.Done), string(raw))
			} else {
				assert.Equal(t, string(u.Pending), string(raw), "nothing is written under the old epoch")
			}
		})
	}
}

// lateStore writes a PutIfAbsent, then reports its deadline run out, once
// armed: the write landed but the caller never learnt it (a process paused
// between sending the statement and reading its answer).
type lateStore struct {
	store.Store
	armed atomic.Bool
}

func (s *lateStore) PutIfAbsent(ctx context.Context, key string, value []byte) ([]byte, bool, error) {
	existing, stored, err := s.Store.PutIfAbsent(ctx, key, value)
	if err == nil && s.armed.CompareAndSwap(true, false) {
		return nil, false, context.DeadlineExceeded
	}
	return existing, stored, err
}

// TestIdempotencyOwnRecordLeftPending: a pending record this very process
// left without running its handler (the store wrote it but the round trip
// failed) is taken over by the retry at once, on an exclusive store and on a
// shared one, with or without an instance id. On the code before, the retry
// waited for the record to change, then answered idempotency_in_progress
// until the lease ended (10 minutes by default) for a start that never ran.
func TestIdempotencyOwnRecordLeftPending(t *testing.T) {
	tests := []struct {
		name     string
		shared   bool
		instance string
	}{
		{name: "exclusive store"},
		{name: "shared store, no instance id", shared: true},
		{name: "shared store, instance id", shared: true, instance: "pod-0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			late := &lateStore{Store: store.NewMemory()}
			var st store.Store = late
			if tt.shared {
				st = sharedStore{late}
			}
			l := newIdempotency(st, slog.New(slog.DiscardHandler), idemConfig{instance: tt.instance, awaitOther: time.Minute})
			req := idemRequest("ws-1", "k")
			var runs atomic.Int64
			late.armed.Store(true)
			_, rpcErr := l.run(t.Context(), req, okExec(&runs))
			require.NotNil(t, rpcErr, "the store round trip failed")
			require.Zero(t, runs.Load(), "the handler did not run")

			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			raw, rpcErr := l.run(ctx, req, okExec(&runs))
			require.Nil(t, rpcErr)
			assert.Contains(t, string(raw), `"status":"ok"`, "the retry runs the start at once")
			assert.EqualValues(t, 1, runs.Load())
			again, rpcErr := l.run(t.Context(), req, okExec(&runs))
			require.Nil(t, rpcErr)
			assert.Equal(t, string(raw), string(again), "and records it")
		})
	}
}

// TestStoreDeadlineSkipsInProcessStores: the stores that run in the process
// take no per-operation deadline (a timer each, for nothing: they read no
// context once an operation began); any other store is wrapped.
func TestStoreDeadlineSkipsInProcessStores(t *testing.T) {
	bolt, err := store.Open(filepath.Join(t.TempDir(), "s.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = bolt.Close() })
	mem := store.NewMemory()
	assert.Same(t, mem, withStoreDeadline(mem, time.Second))
	assert.Same(t, bolt, withStoreDeadline(bolt, time.Second))
	other := sharedStore{mem}
	wrapped, ok := withStoreDeadline(other, time.Second).(*deadlineStore)
	require.True(t, ok, "a store of unknown kind gets the deadline")
	assert.Equal(t, time.Second, wrapped.d)
}
