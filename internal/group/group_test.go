package group

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type call struct {
	n     int
	runs  int // how many runs included it
	group int // the size of its run
}

// TestDoGroupsWithoutDelay: a call alone runs at once and alone; calls made
// while a run is in progress run together afterwards, in the order they
// queued, each exactly once.
func TestDoGroupsWithoutDelay(t *testing.T) {
	var q Queue[*call]
	gate := make(chan struct{})
	var runs []int
	var mu sync.Mutex
	run := func(_ context.Context, group []*call) {
		if group[0].n == 0 {
			<-gate // the first run holds the queue
		}
		mu.Lock()
		runs = append(runs, len(group))
		mu.Unlock()
		for _, c := range group {
			c.runs++
			c.group = len(group)
		}
	}
	first := &call{n: 0}
	firstDone := make(chan error)
	go func() { firstDone <- q.Do(t.Context(), first, run) }()
	require.Eventually(t, func() bool { q.mu.Lock(); defer q.mu.Unlock(); return q.busy }, time.Second, time.Millisecond)

	const n = 8
	calls := make([]*call, n)
	var wg sync.WaitGroup
	for i := range n {
		calls[i] = &call{n: i + 1}
		wg.Go(func() { assert.NoError(t, q.Do(t.Context(), calls[i], run)) })
	}
	require.Eventually(t, func() bool { return q.Queued() == n }, time.Second, time.Millisecond)
	close(gate)
	require.NoError(t, <-firstDone)
	wg.Wait()
	assert.Equal(t, []int{1, n}, runs, "the first alone, then the queue in one run")
	for _, c := range calls {
		assert.Equal(t, 1, c.runs)
		assert.Equal(t, n, c.group)
	}

	alone := &call{n: 100}
	require.NoError(t, q.Do(t.Context(), alone, run))
	assert.Equal(t, 1, alone.group, "nothing in progress: alone, at once")
}

// TestDoCancelledWhileQueued: a queued call whose context ends returns at
// once; its group still runs, led by it when it is first in the queue.
func TestDoCancelledWhileQueued(t *testing.T) {
	var q Queue[*call]
	gate := make(chan struct{})
	var ran atomic.Int64
	var leadCtxErr atomic.Value
	run := func(ctx context.Context, group []*call) {
		if group[0].n == 0 {
			<-gate
		}
		if group[0].n == 1 {
			leadCtxErr.Store(ctx.Err() == nil)
		}
		ran.Add(int64(len(group)))
	}
	go func() { _ = q.Do(t.Context(), &call{n: 0}, run) }()
	require.Eventually(t, func() bool { q.mu.Lock(); defer q.mu.Unlock(); return q.busy }, time.Second, time.Millisecond)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { done <- q.Do(ctx, &call{n: 1}, run) }()
	require.Eventually(t, func() bool { return q.Queued() == 1 }, time.Second, time.Millisecond)
	cancel()
	assert.ErrorIs(t, <-done, context.Canceled, "returns at once")
	close(gate)
	require.Eventually(t, func() bool { return ran.Load() == 2 }, time.Second, time.Millisecond, "its group still ran")
	assert.Equal(t, true, leadCtxErr.Load(), "led under a context without the cancellation")
	require.Eventually(t, func() bool { q.mu.Lock(); defer q.mu.Unlock(); return !q.busy }, time.Second, time.Millisecond)
}
