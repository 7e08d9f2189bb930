package sse

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestServeRoutesByTopic: a stream of a topic is handed only the events
// published with its name (its Frame never sees another's), events
// published before the topic is set are still delivered, and Until ends
// the stream with Last's frames.
func TestServeRoutesByTopic(t *testing.T) {
	b := NewBroker(Options{Heartbeat: time.Hour})
	var seen atomic.Int64
	serve := func(topic string, until time.Duration) (*fakeWriter, chan struct{}) {
		w := newFakeWriter()
		r := httptest.NewRequest(http.MethodPost, "/a2a", nil)
		done := make(chan struct{})
		go func() {
			defer close(done)
			b.Serve(w, r, Stream{
				First: func() ([]byte, bool) { return []byte("data: first\n\n"), false },
				Topic: func() string { return topic },
				Until: func() time.Time {
					if until == 0 {
						return time.Time{}
					}
					return time.Now().Add(until)
				},
				Last: func() []byte { return []byte("data: last\n\n") },
				Frame: func(data []byte) ([]byte, bool) {
					seen.Add(1)
					return append(append([]byte("data: "), data...), "\n\n"...), string(data) == "end"
				},
			})
		}()
		return w, done
	}
	a, doneA := serve("task-a", 0)
	_, doneB := serve("task-b", 0)
	waitSubscribers(t, b, 2)
	require.Eventually(t, func() bool { return strings.Contains(a.output(), "first") }, 5*time.Second, time.Millisecond)
	b.Publish("task-b", []byte("b1"))
	b.Publish("task-a", []byte("a1"))
	b.Publish("task-a", []byte("end"))
	<-doneA
	assert.Contains(t, a.output(), "data: a1")
	assert.NotContains(t, a.output(), "b1", "another task's event")
	b.Publish("task-b", []byte("end"))
	<-doneB
	assert.Equal(t, int64(4), seen.Load(), "each event framed by the streams of its topic only")

	c, doneC := serve("task-c", 50*time.Millisecond)
	select {
	case <-doneC:
	case <-time.After(5 * time.Second):
		t.Fatal("the stream outlived Until")
	}
	assert.True(t, strings.HasSuffix(c.output(), "data: last\n\n"), "Last's frames end it: %q", c.output())
	assert.Equal(t, 0, b.Subscribers())
}

// TestLimiterPerHolder: brokers sharing a Limiter count their streams
// together, and one holder holds at most perHolder of them.
func TestLimiterPerHolder(t *testing.T) {
	l := NewLimiter(3, 2)
	one, two := NewBroker(Options{Limiter: l}), NewBroker(Options{Limiter: l})
	ctx := WithHolder(context.Background(), "key-0")
	s1, _, err := one.subscribe(ctx, nil, 0, false)
	require.NoError(t, err)
	_, _, err = two.subscribe(ctx, nil, 0, false)
	require.NoError(t, err)
	_, _, err = one.subscribe(ctx, nil, 0, false)
	assert.ErrorIs(t, err, errTooManyStreams, "the holder's third stream")
	_, _, err = two.subscribe(WithHolder(context.Background(), "key-1"), nil, 0, false)
	require.NoError(t, err, "another holder")
	_, _, err = one.subscribe(context.Background(), nil, 0, false)
	assert.ErrorIs(t, err, errTooManyStreams, "the total across both brokers")
	one.unsubscribe(s1)
	assert.Equal(t, 2, l.Open())
	_, _, err = two.subscribe(ctx, nil, 0, false)
	assert.NoError(t, err, "a released stream frees its holder's share")
}

// TestBrokerHold: a stream the broker does not serve holds a share of its
// limiter until released (once, however often release is called); beyond
// the limit it is answered 503 with Retry-After.
func TestBrokerHold(t *testing.T) {
	l := NewLimiter(2, 1)
	b := NewBroker(Options{Limiter: l})
	r := httptest.NewRequest(http.MethodPost, "/a2a", nil).WithContext(WithHolder(context.Background(), "key-0"))
	release, ok := b.Hold(httptest.NewRecorder(), r)
	require.True(t, ok)
	assert.Equal(t, 1, l.Open())
	w := httptest.NewRecorder()
	_, ok = b.Hold(w, r)
	assert.False(t, ok, "the holder's second stream")
	assert.Equal(t, http.StatusServiceUnavailable, w.Code)
	assert.NotEmpty(t, w.Header().Get("Retry-After"))
	_, _, err := b.subscribe(WithHolder(context.Background(), "key-0"), nil, 0, false)
	assert.ErrorIs(t, err, errTooManyStreams, "a held stream counts with served ones")
	release()
	release()
	assert.Equal(t, 0, l.Open(), "released once")
	release, ok = NewBroker(Options{}).Hold(httptest.NewRecorder(), r)
	assert.True(t, ok, "a broker without a limiter holds nothing")
	release()
}
