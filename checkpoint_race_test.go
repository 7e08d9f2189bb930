package supervaizer_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/checkpoint"
	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/store"
)

// decisionDuringRead delivers a decision while a guarded step holds the
// occurrence: on the first read of a paused record once armed, it runs deliver
// and then returns the value it read (still "pause").
type decisionDuringRead struct {
	store.Store
	armed   atomic.Bool
	deliver func()
}

func (s *decisionDuringRead) Get(ctx context.Context, key string) ([]byte, bool, error) {
	v, ok, err := s.Store.Get(ctx, key)
	if err == nil && ok && strings.Contains(string(v), `"status":"pause"`) && s.armed.CompareAndSwap(true, false) {
		s.deliver()
	}
	return v, ok, err
}

// TestDecisionArrivingWhileAStepRefuses: a decision that arrives while a
// restarted step reads its paused record (the hook sees the occurrence active
// and leaves it to the step) is handed to the hooks again once the step has
// refused and released the occurrence, so it is never lost.
func TestDecisionArrivingWhileAStepRefuses(t *testing.T) {
	mem := &decisionDuringRead{Store: store.NewMemory()}
	f := newCPFixture(t, cpOptions{store: mem, api: newCPAPI(t, checkpoint.Pause)})

	// A first attempt pauses, then gives up waiting (as a stopped process would).
	ctx, stop := context.WithCancel(t.Context())
	done := f.runAsync(ctx, f.step(cpOccurrence))
	f.logs.awaitWaiting(t)
	stop()
	require.ErrorIs(t, awaitOutcome(t, done).err, context.Canceled)

	var mu sync.Mutex
	var seen []checkpoint.Decision
	f.agent.OnRuleCheckpointDecision(func(_ context.Context, d checkpoint.Decision) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, d)
	})
	decision := f.apiDecision(t, contracts.PhaseBefore, checkpoint.Allow)
	mem.deliver = func() { require.Nil(t, f.resume(t, decision).Error) }
	mem.armed.Store(true)

	_, err := checkpoint.Run(t.Context(), f.gate, f.step(cpOccurrence))
	var rr *checkpoint.RecoveryRequiredError
	require.ErrorAs(t, err, &rr, "the step read the record before the decision: it refuses")
	assert.Equal(t, checkpoint.Pause, rr.Decision)

	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(seen) == 2 }, 5*time.Second, 10*time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	assert.True(t, seen[0].Active, "during the read the occurrence is held by the step")
	assert.False(t, seen[1].Active, "handed again once the step released it")
	assert.Equal(t, checkpoint.Allow, seen[1].Status)
	assert.Equal(t, seen[0].DecisionID, seen[1].DecisionID)

	// The hook can now run the step, which proceeds on the persisted allow.
	_, err = checkpoint.Run(t.Context(), f.gate, f.step(cpOccurrence))
	require.NoError(t, err)
	assert.EqualValues(t, 1, f.effects.Load())
}
