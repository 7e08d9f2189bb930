package taskview

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/internal/sse"
	"github.com/supervaize/supervaizer-go/store"
)

// TestFollowOneRefresher: however many follow a task, one refresher runs
// it, through the oldest follower's function; it backs off while the task
// does not change, stops when a refresh is done, and the last release
// stops it.
func TestFollowOneRefresher(t *testing.T) {
	tv := New(store.NewMemory(), slog.New(slog.DiscardHandler), sse.Options{})
	var first, second atomic.Int64
	releases := []func(){tv.Follow("k", func(context.Context) (bool, bool) { first.Add(1); return false, false })}
	for range 50 {
		releases = append(releases, tv.Follow("k", func(context.Context) (bool, bool) { second.Add(1); return false, false }))
	}
	assert.Equal(t, 1, tv.Refreshers())
	time.Sleep(1600 * time.Millisecond) // 500 ms, then 1 s: two refreshes, not 3 (no backoff) nor 150 (per follower)
	assert.InDelta(t, 2, first.Load(), 1)
	assert.Zero(t, second.Load(), "the oldest follower refreshes")
	releases[0]()
	for _, r := range releases[1:] {
		r()
	}
	assert.Zero(t, tv.Refreshers(), "the last release stops it")

	var done atomic.Int64
	release := tv.Follow("d", func(context.Context) (bool, bool) { done.Add(1); return true, true })
	defer release()
	require.Eventually(t, func() bool { return done.Load() == 1 && tv.Refreshers() == 0 }, 5*time.Second, 10*time.Millisecond)
}
