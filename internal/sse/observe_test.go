package sse

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestObserveStreamChanges: Options.Observe sees a stream open, its queue
// drop events for a slow client (the number dropped), and the stream close
// with its reason.
func TestObserveStreamChanges(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen []string
	observe := func(_ context.Context, change string, dropped uint64, reason string) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, fmt.Sprintf("%s %d %s", change, dropped, reason))
	}
	snapshot := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}
	b := NewBroker(Options{QueueSize: 1, Heartbeat: time.Hour, Observe: observe})
	w := newFakeWriter()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() {
		defer close(served)
		b.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil).WithContext(ctx))
	}()
	waitSubscribers(t, b, 1)
	require.Eventually(t, func() bool { return len(snapshot()) == 1 }, 5*time.Second, time.Millisecond)
	// Fill the one-slot queue faster than the stream can drain it, under its lock.
	b.mu.Lock()
	sub := b.subs[0]
	b.mu.Unlock()
	sub.mu.Lock()
	for i := range 3 {
		sub.q.push(&event{id: uint64(i + 1), head: []byte("id: x\nevent: e\ndata: "), data: []byte("{}")})
	}
	sub.mu.Unlock()
	select {
	case sub.wake <- struct{}{}:
	default:
	}
	require.Eventually(t, func() bool { return len(snapshot()) == 2 }, 5*time.Second, time.Millisecond)
	cancel()
	<-served
	assert.Equal(t, []string{"subscribe 0 ", "drop 2 ", "disconnect 0 client gone"}, snapshot())
}
