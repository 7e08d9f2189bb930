package sse

import (
	"bufio"
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// replayAll opens a stream on b with Last-Event-ID after, publishes a marker
// event live, and returns the replayed events (those before the marker).
func replayAll(t *testing.T, b *Broker, after string) []sseEvent {
	t.Helper()
	w := newFakeWriter()
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.Header.Set("Last-Event-ID", after)
	served := make(chan struct{})
	go func() {
		defer close(served)
		b.ServeHTTP(w, req)
	}()
	waitSubscribers(t, b, 1)
	marker := strconv.FormatUint(b.Publish("marker", []byte(`{}`)), 10)
	// output copies the whole buffer (up to the 16 MiB budget here), so poll
	// gently: a tight loop of copies would starve the replay it waits for.
	require.Eventually(t, func() bool { return strings.Contains(w.output(), "id: "+marker+"\n") },
		time.Minute, 20*time.Millisecond)
	require.NoError(t, b.Shutdown(context.Background()))
	<-served
	r := bufio.NewReader(strings.NewReader(w.output()))
	var out []sseEvent
	for {
		ev, err := readEvent(r)
		require.NoError(t, err)
		if ev.ID == marker {
			return out
		}
		if ev.ID != "" {
			out = append(out, ev)
		}
	}
}

// TestReplayBoundedInBytes: the replay buffer keeps the newest events that fit
// in its byte budget, whatever its count bound.
func TestReplayBoundedInBytes(t *testing.T) {
	t.Parallel()
	const size = 1 << 20 // 20 events of 1 MiB against the default 16 MiB
	b := NewBroker(Options{Heartbeat: time.Hour})
	var ids []string
	for i := range 20 {
		data := bytes.Repeat([]byte{'a' + byte(i)}, size)
		data[0], data[size-1] = '"', '"'
		ids = append(ids, strconv.FormatUint(b.Publish(EventEffect, data), 10))
	}
	got := replayAll(t, b, "0")
	total := 0
	for _, ev := range got {
		total += len(ev.Data)
	}
	assert.LessOrEqual(t, total, DefaultReplayBytes, "replay exceeds the byte budget")
	require.NotEmpty(t, got)
	assert.GreaterOrEqual(t, len(got), 14, "the budget is used, not just a few events")
	// The newest events are the ones kept, in order, without a gap.
	kept := ids[len(ids)-len(got):]
	for i, ev := range got {
		assert.Equal(t, kept[i], ev.ID)
	}
}

// TestOversizedEventLiveButNotRetained: an event larger than the byte budget
// reaches the open streams but is not kept for replay, and evicts nothing.
func TestOversizedEventLiveButNotRetained(t *testing.T) {
	t.Parallel()
	b, ts := newTestServer(t, Options{Heartbeat: time.Hour})
	small := b.Publish(EventEffect, []byte(`{"small":1}`))
	r := connect(t, testContext(t), ts.URL, "")
	waitSubscribers(t, b, 1)
	big := bytes.Repeat([]byte("x"), DefaultReplayBytes+1)
	big[0], big[len(big)-1] = '"', '"'
	bigID := b.Publish(EventEffect, big)
	ev, err := readEvent(r)
	require.NoError(t, err)
	assert.Equal(t, strconv.FormatUint(bigID, 10), ev.ID)
	assert.Len(t, ev.Data, len(big), "delivered live, whole")

	b.mu.Lock()
	retained := b.replay.after(0)
	b.mu.Unlock()
	require.Len(t, retained, 1, "the oversized event is not retained")
	assert.Equal(t, small, retained[0].id, "and it evicted nothing")
}

// TestIDsIncreaseAcrossRestarts: a broker created later (a restarted process)
// issues ids above every id of the earlier one, so a Last-Event-ID from the
// earlier boot replays everything the new one retains.
func TestIDsIncreaseAcrossRestarts(t *testing.T) {
	t.Parallel()
	first := NewBroker(Options{Heartbeat: time.Hour})
	var last uint64
	for range 5 {
		last = first.Publish(EventEffect, []byte(`{}`))
	}
	time.Sleep(2 * time.Millisecond) // the restart happens later in time
	second := NewBroker(Options{Heartbeat: time.Hour})
	var ids []string
	for range 3 {
		id := second.Publish(EventEffect, []byte(`{}`))
		assert.Greater(t, id, last)
		ids = append(ids, strconv.FormatUint(id, 10))
	}
	var got []string
	for _, ev := range replayAll(t, second, strconv.FormatUint(last, 10)) {
		got = append(got, ev.ID)
	}
	assert.Equal(t, ids, got)
}
