package supervaizer_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	sv "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/checkpoint"
	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/store"
	svtest "github.com/supervaize/supervaizer-go/testing"
)

// Short sharing settings for the tests: a paused step re-reads its record
// every 20 ms, a dead instance's claim lasts 300 ms.
const (
	cpPoll  = 20 * time.Millisecond
	cpLease = 300 * time.Millisecond
)

// killableStore is a store shared by instances whose process can die: once
// killed, its writes fail (a dead process writes nothing, so its claims stay
// behind). Reads still answer.
type killableStore struct {
	store.Store
	dead atomic.Bool
}

var errKilled = errors.New("process killed")

func (s *killableStore) PutIfAbsent(ctx context.Context, key string, value []byte) ([]byte, bool, error) {
	if s.dead.Load() {
		return nil, false, errKilled
	}
	return s.Store.PutIfAbsent(ctx, key, value)
}

func (s *killableStore) CompareAndSwap(ctx context.Context, key string, old, new []byte) (bool, error) {
	if s.dead.Load() {
		return false, errKilled
	}
	return s.Store.CompareAndSwap(ctx, key, old, new)
}

func (s *killableStore) Delete(ctx context.Context, key string) error {
	if s.dead.Load() {
		return errKilled
	}
	return s.Store.Delete(ctx, key)
}

// sharedStores are the stores two in-process instances can share.
func sharedStores(t *testing.T) map[string]func() store.Store {
	return map[string]func() store.Store{
		"memory": func() store.Store { return store.NewMemory() },
		"bbolt": func() store.Store {
			st, err := store.Open(filepath.Join(t.TempDir(), "shared.db"))
			require.NoError(t, err)
			t.Cleanup(func() { _ = st.Close() })
			return st
		},
	}
}

// cpInstance is one controller instance named instance on the shared store
// st, posting to the fake Studio fake, with its decision hooks logged.
func cpInstance(t *testing.T, st store.Store, fake *svtest.FakeStudioAPI, instance string) (*cpFixture, *decisionLog) {
	t.Helper()
	f := newCPFixture(t, cpOptions{store: st, api: fake,
		server: []sv.Option{sv.WithInstanceID(instance), sv.WithCheckpointSharing(cpPoll, cpLease)}})
	var log decisionLog
	f.agent.OnRuleCheckpointDecision(log.hook)
	return f, &log
}

// TestCheckpointDecisionAtAnotherInstance: two controller instances share
// one store; a guarded step waits on instance A for its before decision,
// which Studio sends to instance B. B persists it, A's step wakes (it
// re-reads its record) and runs the effect once; B's hooks are told a step
// takes the decision (Active), so nothing else runs it; while A holds the
// occurrence, B refuses to run it. If A dies while waiting, its claim keeps
// the occurrence from B until its lease ends; then B runs it from the
// persisted decision, once. The same instance restarted takes over at once.
func TestCheckpointDecisionAtAnotherInstance(t *testing.T) {
	for name, open := range sharedStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Run("the waiting step wakes", func(t *testing.T) {
				fake := newCPAPI(t, checkpoint.Pause)
				st := open()
				a, _ := cpInstance(t, st, fake, "a")
				b, bLog := cpInstance(t, st, fake, "b")
				out := a.runAsync(t.Context(), a.step(cpOccurrence))
				a.logs.awaitWaiting(t)

				_, err := checkpoint.Run(t.Context(), b.gate, b.step(cpOccurrence))
				var rr *checkpoint.RecoveryRequiredError
				require.ErrorAs(t, err, &rr, "instance B runs the occurrence A holds")
				assert.Equal(t, checkpoint.RecoveryOccurrenceActive, rr.Reason)

				allow := a.apiDecision(t, contracts.PhaseBefore, checkpoint.Allow)
				require.Nil(t, b.resume(t, allow).Error)
				o := awaitOutcome(t, out)
				require.NoError(t, o.err)
				assert.Equal(t, "msg-42", o.result)
				assert.EqualValues(t, 1, a.effects.Load())
				assert.Zero(t, b.effects.Load())
				assert.EqualValues(t, 1, a.advances.Load())
				got, _ := bLog.all()
				assert.Equal(t, []checkpoint.Decision{wantDecisionAt(a.apiCall(t, contracts.PhaseBefore), checkpoint.Allow, false, true)}, got,
					"B's hooks hear that a step takes the decision")
				assert.Len(t, cpAPICalls(fake, contracts.PhaseBefore), 1, "the before checkpoint is asked once")
				assert.Len(t, cpAPICalls(fake, contracts.PhaseAfter), 1)

				// Studio delivering the decision again (to A this time) changes nothing.
				require.Nil(t, a.resume(t, allow).Error)
				_, err = checkpoint.Run(t.Context(), b.gate, b.step(cpOccurrence))
				require.ErrorAs(t, err, &rr)
				assert.Equal(t, checkpoint.RecoveryOccurrenceClaimed, rr.Reason)
				assert.EqualValues(t, 1, a.effects.Load()+b.effects.Load(), "the effect ran once")
			})
			for _, restart := range []struct {
				name, instance string
				waitsForLease  bool
			}{
				{name: "another instance after the lease", instance: "b", waitsForLease: true},
				{name: "the same instance restarted at once", instance: "a"},
			} {
				t.Run("A dies while waiting, "+restart.name, func(t *testing.T) {
					fake := newCPAPI(t, checkpoint.Pause)
					shared := open()
					aStore := &killableStore{Store: shared}
					a, _ := cpInstance(t, aStore, fake, "a")
					ctx, kill := context.WithCancel(t.Context())
					out := a.runAsync(ctx, a.step(cpOccurrence))
					a.logs.awaitWaiting(t)
					aStore.dead.Store(true) // kill -9: A writes nothing more, its claim stays
					killedAt := time.Now()
					kill()
					require.Error(t, awaitOutcome(t, out).err)

					b, bLog := cpInstance(t, shared, fake, restart.instance)
					require.Nil(t, b.resume(t, a.apiDecision(t, contracts.PhaseBefore, checkpoint.Allow)).Error)
					got, _ := bLog.all()
					require.Len(t, got, 1)
					assert.Equal(t, restart.waitsForLease, got[0].Active, "A's live claim holds the occurrence")

					var res string
					var err error
					require.Eventually(t, func() bool {
						res, err = checkpoint.Run(t.Context(), b.gate, b.step(cpOccurrence))
						var rr *checkpoint.RecoveryRequiredError
						return !errors.As(err, &rr) || rr.Reason != checkpoint.RecoveryOccurrenceActive
					}, cpWaitTimeout, 10*time.Millisecond)
					require.NoError(t, err)
					assert.Equal(t, "msg-42", res)
					if restart.waitsForLease {
						// From A's death, not from B's first try: on a loaded machine
						// B's setup can take a good part of the lease.
						assert.GreaterOrEqual(t, time.Since(killedAt), cpLease/2, "B waited for A's lease")
					}
					assert.Zero(t, a.effects.Load())
					assert.EqualValues(t, 1, b.effects.Load(), "the effect ran once")
					assert.Len(t, cpAPICalls(fake, contracts.PhaseBefore), 1, "the persisted decision is used, not asked again")
				})
			}
		})
	}
}
