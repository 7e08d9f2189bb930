package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/checkpoint"
	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/store"
	"github.com/supervaize/supervaizer-go/studio"
	svtest "github.com/supervaize/supervaizer-go/testing"
)

// The kill -9 matrix of the governed delivery: for every Studio decision
// sequence, a first run without a crash (the probe) lists the writes of the
// delivery, from the approval of the brief until the job is settled; then one
// run per write dies just before it (the write and everything after it never
// reach the store: a dead process writes nothing), and a restart on the same
// data dir must settle the job. "Before write k+1" is "after write k": the
// cells cover both sides of every saved state, and the probe is the cell
// after the last one.

// crashTally counts, over both runs of a cell, what the store saw happen.
type crashTally struct {
	effects   atomic.Int64 // outbox writes performed: the brief sent
	advances  atomic.Int64 // job writes that recorded a delivery
	decisions atomic.Int64 // paused checkpoint records changed to allow or stop
}

// dyingStore counts the delivery's writes made once the governed job is
// approved and dies at the dieAt-th (1-based; 0 never): that write and every
// later one fail, reads still answer. keys lists the counted writes.
//
// Only the agent's own records and the rule checkpoints' are counted
// (deliveryKey, as the crashpoint build counts them): the SDK's other bookkeeping (the instance claim's
// heartbeat, the A2A task view updated by each job result, the idempotency
// record of the approval, written when its handler returns while the delivery
// already runs) lands between them at moments that depend on timing, so
// counting it made the n-th write of a run differ from the probe's n-th
// (a flake under load). Those writes still fail once the process is dead.
type dyingStore struct {
	store.Store
	dieAt int
	tally *crashTally
	died  chan struct{}

	mu    sync.Mutex
	armed bool
	dead  bool
	keys  []string
}

func newDyingStore(st store.Store, dieAt int, tally *crashTally) *dyingStore {
	return &dyingStore{Store: st, dieAt: dieAt, tally: tally, died: make(chan struct{})}
}

// Exclusive forwards to the wrapped store (bbolt: one process at a time), so
// the restarted app takes over what the dead one left in progress at once.
func (s *dyingStore) Exclusive() bool { return store.IsExclusive(s.Store) }

// write runs one write unless the process is dead or dies at it now.
func (s *dyingStore) write(key string, do func() error) error {
	s.mu.Lock()
	if s.dead {
		s.mu.Unlock()
		return errProcessKilled
	}
	if s.armed && deliveryKey(key) {
		s.keys = append(s.keys, key)
		if len(s.keys) == s.dieAt {
			s.dead = true
			close(s.died)
			s.mu.Unlock()
			return errProcessKilled
		}
	}
	s.mu.Unlock()
	return do()
}

func (s *dyingStore) PutIfAbsent(ctx context.Context, key string, value []byte) ([]byte, bool, error) {
	var (
		existing []byte
		stored   bool
	)
	err := s.write(key, func() (err error) {
		existing, stored, err = s.Store.PutIfAbsent(ctx, key, value)
		if err == nil && strings.Contains(key, "outbox") {
			s.tally.effects.Add(1) // one Send, stored or not: the effect ran
		}
		return err
	})
	return existing, stored, err
}

func (s *dyingStore) CompareAndSwap(ctx context.Context, key string, old, new []byte) (bool, error) {
	var swapped bool
	err := s.write(key, func() (err error) {
		swapped, err = s.Store.CompareAndSwap(ctx, key, old, new)
		if err != nil || !swapped {
			return err
		}
		switch {
		case strings.Contains(key, "jobs") && !bytes.Contains(old, []byte(`"delivery":`)) && bytes.Contains(new, []byte(`"delivery":`)):
			s.tally.advances.Add(1)
		case strings.Contains(key, "occurrence") && bytes.Contains(old, []byte(`"status":"pause"`)) &&
			(bytes.Contains(new, []byte(`"status":"allow"`)) || bytes.Contains(new, []byte(`"status":"stop"`))):
			s.tally.decisions.Add(1)
		}
		return nil
	})
	if err == nil && swapped && strings.Contains(key, "jobs") && bytes.Contains(new, []byte(`"approved":true`)) {
		s.mu.Lock()
		s.armed = true // the delivery starts with the approval
		s.mu.Unlock()
	}
	return swapped, err
}

func (s *dyingStore) Delete(ctx context.Context, key string) error {
	return s.write(key, func() error { return s.Store.Delete(ctx, key) })
}

func (s *dyingStore) isDead() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dead
}

// counted returns the keys of the counted writes.
func (s *dyingStore) counted() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.keys...)
}

// crashMode is a sequence of Studio decisions on the delivery.
type crashMode struct {
	name          string
	before, after string            // answers to the checkpoints
	decide        map[string]string // phase -> decision pushed by rule.checkpoint.resume after a pause
	want          string            // final job status
	failure       string            // its reason, when failed
	effect        bool              // the brief goes out
	// early: Studio's decision arrives while its pause answer is still on
	// its way to the app, so the SDK retains it for the waiter; otherwise it
	// arrives once the pause is recorded.
	early bool
}

// crashModes are the decision sequences; pauseModes are added twice, with
// the decision arriving before and after the pause is recorded.
var crashModes = func() []crashMode {
	modes := []crashMode{
		{name: "allow", before: checkpoint.Allow, after: checkpoint.Allow, want: jobCompleted, effect: true},
		{name: "stop before", before: checkpoint.Stop, after: checkpoint.Allow, want: jobFailed,
			failure: "a rule checkpoint stopped the brief before it was sent"},
		{name: "stop after", before: checkpoint.Allow, after: checkpoint.Stop, want: jobFailed,
			failure: "a rule checkpoint refused the brief after it was sent", effect: true},
	}
	for _, m := range pauseModes {
		early := m
		early.name, early.early = m.name+" (decision before the pause is recorded)", true
		modes = append(modes, m, early)
	}
	return modes
}()

var pauseModes = []crashMode{
	{name: "pause before then allow", before: checkpoint.Pause, after: checkpoint.Allow,
		decide: map[string]string{contracts.PhaseBefore: checkpoint.Allow}, want: jobCompleted, effect: true},
	{name: "pause before then stop", before: checkpoint.Pause, after: checkpoint.Allow,
		decide: map[string]string{contracts.PhaseBefore: checkpoint.Stop}, want: jobFailed,
		failure: "a rule checkpoint stopped the brief before it was sent"},
	{name: "pause after then allow", before: checkpoint.Allow, after: checkpoint.Pause,
		decide: map[string]string{contracts.PhaseAfter: checkpoint.Allow}, want: jobCompleted, effect: true},
	{name: "pause after then stop", before: checkpoint.Allow, after: checkpoint.Pause,
		decide: map[string]string{contracts.PhaseAfter: checkpoint.Stop}, want: jobFailed,
		failure: "a rule checkpoint refused the brief after it was sent", effect: true},
}

// interruptedFailure is the reason of a job whose process died after the
// SDK recorded "effect started" and before the brief went out.
const interruptedFailure = "the delivery was interrupted before the brief was sent; start a new job"

// crashCell is one run of the matrix: the fake Studio, the shared tally and
// the decisions Studio delivered (acknowledged).
type crashCell struct {
	t         *testing.T
	mode      crashMode
	studio    *svtest.FakeStudio
	api       *svtest.FakeStudioAPI
	env       map[string]string
	tally     crashTally
	delivered map[string]bool // phase -> decision acknowledged

	// A pause answer on its way to the app in an early mode: the proxy
	// sends on held and waits on release until the decision was delivered.
	held    chan struct{}
	release chan struct{}
}

func newCrashCell(t *testing.T, mode crashMode) *crashCell {
	studio := svtest.NewFakeStudio(t)
	api := newGovernedAPI(t, studio, mode.before, mode.after)
	return &crashCell{t: t, mode: mode, studio: studio, api: api, env: governedEnv(t, studio, api), delivered: map[string]bool{},
		held: make(chan struct{}), release: make(chan struct{})}
}

// start starts the app on the cell's data dir with its store dying at dieAt.
// The app reaches the fake Studio API through a proxy that dies with the
// store: a dead process calls Studio no more than it writes.
func (c *crashCell) start(dieAt int) (*harness, *dyingStore, *lockedLogs) {
	ds := (*dyingStore)(nil)
	target, err := url.Parse(c.env[studio.EnvAPIURL])
	require.NoError(c.t, err)
	forward := httputil.NewSingleHostReverseProxy(target)
	forward.ModifyResponse = func(resp *http.Response) error {
		if !c.mode.early || resp.Request.URL.Path != studio.RuleCheckpointsPath {
			return nil
		}
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
		if !bytes.Contains(body, []byte(`"status":"pause"`)) {
			return nil
		}
		select { // the test delivers the decision first
		case c.held <- struct{}{}:
			<-c.release
		case <-time.After(30 * time.Second):
		}
		return nil
	}
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ds != nil && ds.isDead() {
			http.Error(w, "the process is dead", http.StatusServiceUnavailable)
			return
		}
		forward.ServeHTTP(w, r)
	}))
	c.t.Cleanup(proxy.Close)
	env := maps.Clone(c.env)
	env[studio.EnvAPIURL] = proxy.URL
	h, logs := startGovernedWith(c.t, c.studio, env, nil, func(st store.Store) store.Store {
		ds = newDyingStore(st, dieAt, &c.tally)
		return ds
	})
	return h, ds, &lockedLogs{logs.String}
}

// lockedLogs reads the logs of one app.
type lockedLogs struct{ read func() string }

// decide delivers, as Studio does, the decision of every paused checkpoint
// Studio answered and whose decision was not acknowledged yet: in an early
// mode while the pause answer is held, else once the app recorded the pause.
// A decision the app failed to take (it died meanwhile) is delivered again
// later.
func (c *crashCell) decide(h *harness, held bool) {
	for _, cp := range c.api.Checkpoints() {
		status, ok := c.mode.decide[cp.Phase]
		if !ok || cp.Status != checkpoint.Pause || c.delivered[cp.Phase] {
			continue
		}
		if !held {
			raw, _, err := h.app.store.Get(c.t.Context(), store.Key("rule-checkpoints", "occurrence", agentSlug, cp.OccurrenceID, cp.Phase))
			require.NoError(c.t, err)
			if !bytes.Contains(raw, []byte(`"status":"pause"`)) {
				continue
			}
		}
		req := jobRequest(c.t, wsA, supervaizer.RuleCheckpointResumeAction, "job-g", cp.ResumeInput(status, "dec-"+cp.Phase))
		req.CaseID = cp.CaseID
		if _, rerr := h.client.invokeRaw(req); rerr == nil {
			c.delivered[cp.Phase] = true
		}
	}
}

// job reads the job record.
func (c *crashCell) job(h *harness) *jobRecord {
	rec, err := h.app.jobs.get(c.t.Context(), mustScope(c.t, wsA.id), "job-g")
	require.NoError(c.t, err)
	return rec
}

// settled reports whether the job is over: a final status, the gate
// forgotten and a sent brief billed.
func (c *crashCell) settled(h *harness) bool {
	rec := c.job(h)
	if rec.Status != jobCompleted && rec.Status != jobFailed {
		return false
	}
	if rec.Delivery != nil && !rec.Delivery.Billed {
		return false
	}
	_, err := h.app.gate(c.t.Context(), rec)
	return errors.Is(err, checkpoint.ErrGateNotFound)
}

// drive delivers decisions until done or the deadline.
func (c *crashCell) drive(h *harness, what string, done func() bool) {
	deadline := time.Now().Add(30 * time.Second)
	for !done() {
		select {
		case <-c.held:
			c.decide(h, true)
			c.release <- struct{}{}
		default:
			c.decide(h, false)
		}
		require.True(c.t, time.Now().Before(deadline), "timed out: %s", what)
		time.Sleep(5 * time.Millisecond)
	}
}

// check asserts the outcome of the cell once the job settled. interrupted
// reports that the process died between "effect started" and the brief.
func (c *crashCell) check(h *harness, interrupted bool) {
	t := c.t
	rec := c.job(h)
	effects, advances, decisions := c.tally.effects.Load(), c.tally.advances.Load(), c.tally.decisions.Load()
	assert.LessOrEqual(t, effects, int64(1), "the brief was sent more than once")
	assert.LessOrEqual(t, advances, int64(1), "the delivery was recorded more than once")
	assert.Len(t, slices.Compact(billedKeys(c.api)), map[bool]int{true: 1}[rec.Delivery != nil],
		"a sent brief is billed once (reported again with the same idempotency key after a crash)")
	wantDecisions := len(c.mode.decide)
	if _, after := c.mode.decide[contracts.PhaseAfter]; after && interrupted {
		wantDecisions-- // the after checkpoint of an interrupted effect is never asked
	}
	assert.Equal(t, int64(wantDecisions), decisions, "each decision is applied exactly once")
	if interrupted {
		assert.Equal(t, jobFailed, rec.Status)
		assert.Equal(t, interruptedFailure, rec.Failure, "failed visibly")
		assert.Zero(t, effects)
		return
	}
	assert.Equal(t, c.mode.want, rec.Status)
	assert.Equal(t, c.mode.failure, rec.Failure)
	assert.Equal(t, map[bool]int64{true: 1}[c.mode.effect], effects, "the brief goes out once, or never")
	assert.Equal(t, c.mode.effect, rec.Delivery != nil, "the delivery is recorded exactly when the brief went out")
	assert.Equal(t, map[bool]int64{true: 1}[c.mode.effect], advances)
}

// TestGovernedDeliveryKillMatrix: kill -9 (simulated: the dying app's store
// refuses every write from the chosen one on) before every write of the
// governed delivery, for Studio decisions allow, stop (before and after the
// effect) and pause-then-decide (allow or stop, on either checkpoint); a
// restart on the same data dir settles every job: the brief goes out at most
// once, each decision is applied once, and the job ends completed (recorded
// once, billed once) or failed with a visible reason; its gate is forgotten.
func TestGovernedDeliveryKillMatrix(t *testing.T) {
	for _, mode := range crashModes {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			probe := newCrashCell(t, mode)
			h, ds, _ := probe.start(0)
			approveGoverned(t, h.client, probe.api.RuleSnapshot(snapshotHash))
			probe.drive(h, "the probe settles", func() bool { return probe.settled(h) })
			probe.check(h, false)
			writes := ds.counted()
			h.stop()
			require.NotEmpty(t, writes)

			for k := 1; k <= len(writes); k++ {
				t.Run(fmt.Sprintf("die before write %02d %s", k, crashKeyLabel(writes[k-1])), func(t *testing.T) {
					t.Parallel()
					c := newCrashCell(t, mode)
					h, ds, _ := c.start(k)
					approveGoverned(t, h.client, c.api.RuleSnapshot(snapshotHash))
					c.drive(h, "the process dies", func() bool {
						select {
						case <-ds.died:
							return true
						default:
							return false
						}
					})
					died := ds.counted()
					h.stop()

					h2, _, logs := c.start(0)
					t.Cleanup(func() {
						if t.Failed() {
							t.Logf("writes of the dead run: %q\nlogs after the restart:\n%s", died, logs.read())
						}
					})
					c.drive(h2, "the restarted app settles the job", func() bool { return c.settled(h2) })
					c.check(h2, strings.Contains(died[len(died)-1], "outbox"))
				})
			}
		})
	}
}

// crashKeyLabel names a written key by its kind, without scope or ids.
func crashKeyLabel(key string) string {
	parts, err := store.ParseKey(key)
	if err != nil || len(parts) < 2 {
		return "write"
	}
	switch {
	case parts[0] == keyRoot:
		return parts[1]
	case len(parts) >= 5 && parts[1] == "occurrence":
		return "checkpoint-" + parts[4]
	default:
		return "checkpoint-" + parts[1]
	}
}
