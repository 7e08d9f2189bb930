package sse

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/supervaize/supervaizer-go/internal/tools/proctest"
	"github.com/supervaize/supervaizer-go/testing/golden"
)

func TestNewBrokerDefaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		opts          Options
		queue, replay int
		heartbeat     time.Duration
	}{
		{"zero", Options{}, DefaultQueueSize, DefaultReplaySize, DefaultHeartbeat},
		{"negative", Options{QueueSize: -1, ReplaySize: -1, Heartbeat: -time.Second},
			DefaultQueueSize, DefaultReplaySize, DefaultHeartbeat},
		{"set", Options{QueueSize: 7, ReplaySize: 9, Heartbeat: time.Second}, 7, 9, time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := NewBroker(tt.opts)
			assert.Equal(t, tt.queue, b.queueSize)
			assert.Len(t, b.replay.buf, tt.replay)
			assert.Equal(t, tt.heartbeat, b.heartbeat)
			assert.NotNil(t, b.logger)
		})
	}
}

func TestStreamDeliversEventsInOrder(t *testing.T) {
	t.Parallel()
	b, ts := newTestServer(t, Options{Heartbeat: time.Hour})
	ctx := testContext(t)

	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ts.URL, nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	for k, v := range map[string]string{
		"Content-Type":      "text/event-stream",
		"Cache-Control":     "no-cache",
		"Connection":        "keep-alive",
		"X-Accel-Buffering": "no",
	} {
		assert.Equal(t, v, resp.Header.Get(k), k)
	}
	r := bufio.NewReader(resp.Body)
	ev, err := readEvent(r)
	require.NoError(t, err)
	assert.Equal(t, sseEvent{Name: EventConnected, Data: `{"status":"connected"}`}, ev)
	waitSubscribers(t, b, 1)

	want := []sseEvent{
		{ID: "1", Name: EventEffect, Data: `{"action":"job.start","effects":[]}`},
		{ID: "2", Name: EventEffect, Data: `{"action":"job.stop","effects":[{"type":"job.stopped"}]}`},
		{ID: "3", Name: "custom", Data: `{"n":3}`},
	}
	for i, w := range want {
		assert.Equal(t, uint64(i+1), b.Publish(w.Name, []byte(w.Data)))
	}
	for _, w := range want {
		ev, err := readEvent(r)
		require.NoError(t, err)
		assert.Equal(t, w, ev)
	}
}

func TestHeartbeat(t *testing.T) {
	t.Parallel()
	const hb = 50 * time.Millisecond
	_, ts := newTestServer(t, Options{Heartbeat: hb})
	start := time.Now()
	r := connect(t, testContext(t), ts.URL, "")
	ev, err := readEvent(r)
	require.NoError(t, err)
	assert.Equal(t, sseEvent{Name: EventHeartbeat, Data: `{"status":"ok"}`}, ev)
	assert.GreaterOrEqual(t, time.Since(start), hb)
}

func TestTwoSubscribersBothReceive(t *testing.T) {
	t.Parallel()
	b, ts := newTestServer(t, Options{Heartbeat: time.Hour})
	ctx := testContext(t)
	r1 := connect(t, ctx, ts.URL, "")
	r2 := connect(t, ctx, ts.URL, "")
	waitSubscribers(t, b, 2)
	b.Publish(EventEffect, []byte(`{"n":1}`))
	b.Publish(EventEffect, []byte(`{"n":2}`))
	for _, r := range []*bufio.Reader{r1, r2} {
		assert.Equal(t, []string{"1", "2"}, readUntil(t, r, "2"))
	}
}

func TestReplay(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, lastEventID string
		want              []string // replayed ids; the live event 6 follows
	}{
		{"no header", "", nil},
		{"middle", "2", []string{"3", "4", "5"}},
		{"surrounding spaces", " 2\t", []string{"3", "4", "5"}},
		{"leading zeros", "002", []string{"3", "4", "5"}},
		{"zero replays all", "0", []string{"1", "2", "3", "4", "5"}},
		{"up to date", "5", nil},
		{"ahead", "999", nil},
		{"max uint64", "18446744073709551615", nil},
		{"overflow", "18446744073709551616", nil},
		{"not a number", "abc", nil},
		{"negative", "-1", nil},
		{"plus sign", "+2", nil},
		{"decimal point", "2.0", nil},
		{"hex", "0x2", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, ts := newTestServer(t, Options{ReplaySize: 10, Heartbeat: time.Hour})
			for i := 1; i <= 5; i++ {
				b.Publish(EventEffect, []byte(`{"n":`+strconv.Itoa(i)+`}`))
			}
			r := connect(t, testContext(t), ts.URL, tt.lastEventID)
			waitSubscribers(t, b, 1)
			require.Equal(t, uint64(6), b.Publish(EventEffect, []byte(`{"n":6}`)))
			assert.Equal(t, append(tt.want, "6"), readUntil(t, r, "6"))
		})
	}
}

func TestReplayAfterEviction(t *testing.T) {
	t.Parallel()
	tests := []struct {
		lastEventID string
		want        []string
	}{
		{"1", []string{"4", "5", "6", "7"}}, // 2 and 3 were evicted: lost
		{"3", []string{"4", "5", "6", "7"}},
		{"4", []string{"5", "6", "7"}},
	}
	for _, tt := range tests {
		t.Run(tt.lastEventID, func(t *testing.T) {
			t.Parallel()
			b, ts := newTestServer(t, Options{ReplaySize: 3, Heartbeat: time.Hour})
			for range 6 {
				b.Publish(EventEffect, []byte(`{}`))
			}
			r := connect(t, testContext(t), ts.URL, tt.lastEventID)
			waitSubscribers(t, b, 1)
			b.Publish(EventEffect, []byte(`{}`))
			assert.Equal(t, tt.want, readUntil(t, r, "7"))
		})
	}
}

// TestReplayThenLiveHasNoGapOrDuplicate reconnects clients while events are being
// published: each must see every id after its Last-Event-ID exactly once, in order.
func TestReplayThenLiveHasNoGapOrDuplicate(t *testing.T) {
	t.Parallel()
	const total = 2000
	b, ts := newTestServer(t, Options{QueueSize: total, ReplaySize: total, Heartbeat: time.Hour})
	ctx := testContext(t)

	published := make(chan uint64, total)
	go func() { // about 200 ms of publishing, so that reconnects land in between
		for i := range total {
			published <- b.Publish(EventEffect, []byte(`{}`))
			if i%10 == 0 {
				time.Sleep(time.Millisecond)
			}
		}
	}()

	type result struct {
		from uint64
		ids  []string
		err  error
	}
	results := make(chan result, 8)
	var wg sync.WaitGroup
	for range cap(results) {
		from := <-published // resume after an id already published
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, ts.URL, nil)
		require.NoError(t, err)
		req.Header.Set("Last-Event-ID", strconv.FormatUint(from, 10))
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		t.Cleanup(func() { _ = resp.Body.Close() })
		wg.Go(func() {
			r := bufio.NewReader(resp.Body)
			res := result{from: from}
			defer func() { results <- res }()
			for {
				ev, err := readEvent(r)
				if err != nil {
					res.err = err
					return
				}
				if ev.ID == "" {
					continue
				}
				res.ids = append(res.ids, ev.ID)
				if ev.ID == strconv.Itoa(total) {
					return
				}
			}
		})
		for range 100 { // let the publisher move on before the next reconnect
			<-published
		}
	}
	wg.Wait()
	close(results)
	for res := range results {
		require.NoError(t, res.err)
		var want []string
		for id := res.from + 1; id <= total; id++ {
			want = append(want, strconv.FormatUint(id, 10))
		}
		assert.Equal(t, want, res.ids, "resumed after %d", res.from)
	}
}

// dialStuck opens a stream on a raw connection that never reads.
func dialStuck(t *testing.T, ts *httptest.Server) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", ts.Listener.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	require.NoError(t, c.(*net.TCPConn).SetReadBuffer(4096))
	_, err = io.WriteString(c, "GET / HTTP/1.1\r\nHost: "+ts.Listener.Addr().String()+"\r\n\r\n")
	require.NoError(t, err)
	return c
}

// floodUntilStuck publishes 64 KiB events in lockstep with the healthy reader (so that
// every stream has time to write each event) until the stuck stream is in a write and
// has dropped events. It returns the latency of each Publish.
//
// Dropping alone does not show that a stream is stuck: a stream writer that the
// scheduler left waiting drops events too, then drains its queue. stuckFixture's
// connection blocks the first event's write for good; publishPastStuckClient checks
// that the queue is then full.
func floodUntilStuck(t *testing.T, b *Broker, stuck *subscriber, healthy *bufio.Reader) []time.Duration {
	t.Helper()
	payload := []byte(`"` + strings.Repeat("x", 64<<10) + `"`)
	var lat []time.Duration
	deadline := time.Now().Add(15 * time.Second)
	for {
		dropped, queued := stuckQueue(stuck)
		require.LessOrEqual(t, queued, b.queueSize, "a queue holds at most QueueSize events")
		stuck.wmu.Lock()
		writing := stuck.writing
		stuck.wmu.Unlock()
		if dropped >= 8 && writing {
			return lat
		}
		require.True(t, time.Now().Before(deadline), "the stuck client never fell behind")
		start := time.Now()
		id := b.Publish("bulk", payload)
		lat = append(lat, time.Since(start))
		ev, err := readEvent(healthy)
		require.NoError(t, err)
		require.Equal(t, strconv.FormatUint(id, 10), ev.ID, "the healthy client gets every event")
	}
}

func percentile(d []time.Duration, p float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

// stuckQueue returns how many events sub's queue has dropped and holds.
func stuckQueue(sub *subscriber) (dropped uint64, queued int) {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	return sub.q.dropped, sub.q.len()
}

// stuckFixture starts a server with one client that never reads (subscribed first) and
// one healthy client. The stuck client's connection is a stuckConn on the server's
// side: once its first bytes are out, a write blocks as a full socket buffer makes it
// block, for good (the kernel's buffers, even shrunk, let a stream drain a few events
// now and then, which made the full-queue check fail on a loaded machine).
func stuckFixture(t *testing.T) (*Broker, *subscriber, *bufio.Reader) {
	t.Helper()
	b, ts := newTestServerWith(t, Options{QueueSize: 16, Heartbeat: time.Hour}, func(ts *httptest.Server) {
		ts.Listener = &stuckListener{Listener: ts.Listener}
	})
	dialStuck(t, ts)
	waitSubscribers(t, b, 1)
	b.mu.Lock()
	stuck := b.subs[0]
	b.mu.Unlock()
	healthy := connect(t, testContext(t), ts.URL, "")
	waitSubscribers(t, b, 2)
	return b, stuck, healthy
}

// stuckListener hands out its first accepted connection as a stuckConn.
type stuckListener struct {
	net.Listener
	accepted atomic.Int32
}

func (l *stuckListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil && l.accepted.Add(1) == 1 {
		return &stuckConn{Conn: c, allowance: stuckAllowance, wake: make(chan struct{}), closed: make(chan struct{})}, nil
	}
	return c, err
}

// stuckAllowance is what a stuckConn writes before it blocks: the response
// head and the connected event, less than one of the tests' 64 KiB events.
const stuckAllowance = 4 << 10

// stuckConn is the server's side of a client that never reads: after
// allowance bytes every write blocks until its write deadline passes (as the
// stream's WriteTimeout and Shutdown set it) or the connection closes.
type stuckConn struct {
	net.Conn
	mu        sync.Mutex
	allowance int
	deadline  time.Time
	wake      chan struct{} // closed when the deadline changes
	closed    chan struct{}
	closeOnce sync.Once
}

func (c *stuckConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	if len(p) <= c.allowance {
		c.allowance -= len(p)
		c.mu.Unlock()
		return c.Conn.Write(p)
	}
	c.allowance = 0
	for {
		deadline, wake := c.deadline, c.wake
		c.mu.Unlock()
		var expired <-chan time.Time
		if !deadline.IsZero() {
			timer := time.NewTimer(time.Until(deadline))
			expired = timer.C
			defer timer.Stop()
		}
		select {
		case <-c.closed:
			return 0, net.ErrClosed
		case <-expired:
			return 0, os.ErrDeadlineExceeded
		case <-wake:
		}
		c.mu.Lock()
	}
}

func (c *stuckConn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.deadline = t
	close(c.wake)
	c.wake = make(chan struct{})
	return c.Conn.SetWriteDeadline(t)
}

func (c *stuckConn) SetDeadline(t time.Time) error {
	if err := c.SetWriteDeadline(t); err != nil {
		return err
	}
	return c.Conn.SetReadDeadline(t)
}

func (c *stuckConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return c.Conn.Close()
}

// TestStuckClientDoesNotDelayPublish: while one stream is blocked in a write,
// every Publish returns and the healthy client gets every event (how long a
// Publish takes is TestLimitStuckClientPublishLatency's, in limits_test.go).
func TestStuckClientDoesNotDelayPublish(t *testing.T) {
	lat := publishPastStuckClient(t)
	assert.Greater(t, len(lat), 200)
}

// publishPastStuckClient floods a broker until one of its streams is blocked
// in a write, then publishes 200 more events, checking that a healthy client
// gets each; it returns how long each Publish took.
func publishPastStuckClient(t *testing.T) []time.Duration {
	t.Helper()
	b, stuck, healthy := stuckFixture(t)
	lat := floodUntilStuck(t, b, stuck, healthy)
	// The stuck stream is now blocked in a write; keep publishing.
	for range 200 {
		start := time.Now()
		id := b.Publish(EventEffect, []byte(`{"n":1}`))
		lat = append(lat, time.Since(start))
		ev, err := readEvent(healthy)
		require.NoError(t, err)
		require.Equal(t, strconv.FormatUint(id, 10), ev.ID)
	}
	dropped, queued := stuckQueue(stuck)
	assert.Equal(t, b.queueSize, queued, "a stuck stream keeps a full queue, dropping its oldest events (%d dropped, %d streams)", dropped, b.Subscribers())
	return lat
}

func TestShutdownEndsStreamBlockedInWrite(t *testing.T) {
	b, stuck, healthy := stuckFixture(t)
	floodUntilStuck(t, b, stuck, healthy)

	// A Shutdown that waited for the blocked write would end with the
	// deadline's error.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, b.Shutdown(ctx))
	assert.Zero(t, b.Subscribers())
	_, err := readEvent(healthy)
	assert.Error(t, err, "the healthy stream ended too")
}

func TestShutdown(t *testing.T) {
	t.Parallel()
	b, ts := newTestServer(t, Options{Heartbeat: time.Hour})
	ctx := testContext(t)
	r1 := connect(t, ctx, ts.URL, "")
	r2 := connect(t, ctx, ts.URL, "")
	waitSubscribers(t, b, 2)

	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	require.NoError(t, b.Shutdown(sctx))
	assert.Zero(t, b.Subscribers())
	for _, r := range []*bufio.Reader{r1, r2} {
		_, err := readEvent(r)
		assert.ErrorIs(t, err, io.EOF)
	}

	resp, err := http.Get(ts.URL)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	assert.JSONEq(t, `{"detail":"server is shutting down"}`, string(body))

	require.NoError(t, b.Shutdown(sctx), "idempotent")
	assert.NotZero(t, b.Publish(EventEffect, []byte(`{}`)), "publishing after shutdown is harmless")
}

func TestShutdownReturnsContextErrorWhileStreamsRemain(t *testing.T) {
	t.Parallel()
	b := NewBroker(Options{Heartbeat: time.Hour})
	w := newFakeWriter()
	w.block, w.writing = make(chan any), make(chan any)
	writing := w.writing
	served := make(chan struct{})
	go func() {
		defer close(served)
		b.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
	}()
	<-writing // blocked writing the connected event; no write deadline to interrupt it

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, b.Shutdown(ctx), context.DeadlineExceeded)
	assert.Equal(t, 1, b.Subscribers())

	close(w.block)
	<-served
	require.NoError(t, b.Shutdown(context.Background()))
	assert.Zero(t, b.Subscribers())
}

func TestClientDisconnectRemovesSubscriptionWithoutLeak(t *testing.T) {
	baseline := runtime.NumGoroutine()
	b := NewBroker(Options{Heartbeat: 20 * time.Millisecond})
	ts := httptest.NewServer(b)
	client := &http.Client{Transport: &http.Transport{}}

	var cancels []context.CancelFunc
	for range 5 {
		ctx, cancel := context.WithCancel(context.Background())
		cancels = append(cancels, cancel)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, ts.URL, nil)
		require.NoError(t, err)
		resp, err := client.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
	}
	waitSubscribers(t, b, 5)
	b.Publish(EventEffect, []byte(`{}`))
	for _, cancel := range cancels {
		cancel()
	}
	waitSubscribers(t, b, 0)

	client.CloseIdleConnections()
	ts.Close()
	require.NoError(t, b.Shutdown(context.Background()))
	// Polled here, not with assert.Eventually, which runs its condition in a goroutine.
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > baseline && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > baseline {
		buf := make([]byte, 1<<20)
		t.Fatalf("%d goroutines, baseline %d:\n%s", n, baseline, buf[:runtime.Stack(buf, true)])
	}
}

// unwrapOnly hides every optional interface of the ResponseWriter it wraps but Unwrap,
// like a logging middleware.
type unwrapOnly struct{ rw http.ResponseWriter }

func (u unwrapOnly) Header() http.Header         { return u.rw.Header() }
func (u unwrapOnly) Write(p []byte) (int, error) { return u.rw.Write(p) }
func (u unwrapOnly) WriteHeader(code int)        { u.rw.WriteHeader(code) }
func (u unwrapOnly) Unwrap() http.ResponseWriter { return u.rw }

// opaque hides every optional interface, Unwrap included.
type opaque struct{ rw http.ResponseWriter }

func (o opaque) Header() http.Header         { return o.rw.Header() }
func (o opaque) Write(p []byte) (int, error) { return o.rw.Write(p) }
func (o opaque) WriteHeader(code int)        { o.rw.WriteHeader(code) }

func TestStreamsBehindMiddlewareWithUnwrap(t *testing.T) {
	t.Parallel()
	b := NewBroker(Options{Heartbeat: time.Hour, IDs: NewSequence(0)})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.ServeHTTP(unwrapOnly{w}, r)
	}))
	t.Cleanup(ts.Close)
	t.Cleanup(func() { require.NoError(t, b.Shutdown(context.Background())) })

	r := connect(t, testContext(t), ts.URL, "")
	waitSubscribers(t, b, 1)
	b.Publish(EventEffect, []byte(`{}`))
	assert.Equal(t, []string{"1"}, readUntil(t, r, "1"))
}

func TestRefusesWriterThatCannotFlush(t *testing.T) {
	t.Parallel()
	b := NewBroker(Options{})
	rec := httptest.NewRecorder()
	b.ServeHTTP(opaque{rec}, httptest.NewRequest(http.MethodGet, "/", nil))
	assert.Equal(t, http.StatusInternalServerError, rec.Code)
	assert.JSONEq(t, `{"detail":"streaming is not supported"}`, rec.Body.String())
	assert.Zero(t, b.Subscribers())
}

// TestWireGolden checks the exact bytes of a stream: connected, a replay (including a
// multi-line payload and an event name with a line break) and a live event.
func TestWireGolden(t *testing.T) {
	t.Parallel()
	b := NewBroker(Options{Heartbeat: time.Hour, IDs: NewSequence(0)})
	b.Publish(EventEffect, []byte(`{"agent_slug":"research-agent","action":"job.start","request_id":"r-7","effects":[{"type":"job.started","job_id":"j-1"}]}`))
	b.Publish("name\r\nid: 99", []byte("{\r\n  \"multi\": \"line\"\n}"))
	b.Publish(EventEffect, []byte(`{}`))

	w := newFakeWriter()
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.Header.Set("Last-Event-ID", "0")
	served := make(chan struct{})
	go func() {
		defer close(served)
		b.ServeHTTP(w, req)
	}()
	waitSubscribers(t, b, 1)
	b.Publish(EventEffect, []byte(`{"live":true}`))
	require.Eventually(t, func() bool { return strings.Contains(w.output(), `{"live":true}`+"\n\n") },
		5*time.Second, time.Millisecond)
	require.NoError(t, b.Shutdown(context.Background()))
	<-served

	assert.Equal(t, http.StatusOK, w.status())
	golden.Bytes(t, filepath.Join("testdata", "stream.golden.txt"), []byte(w.output()))
}

func TestRingAfter(t *testing.T) {
	t.Parallel()
	r := ring{buf: make([]*event, 4)}
	assert.Nil(t, r.after(0), "empty")
	for id := uint64(1); id <= 6; id++ { // keeps 3..6, wrapped around
		r.add(&event{id: id})
	}
	ids := func(es []*event) []uint64 {
		var out []uint64
		for _, e := range es {
			out = append(out, e.id)
		}
		return out
	}
	assert.Equal(t, []uint64{3, 4, 5, 6}, ids(r.after(0)))
	assert.Equal(t, []uint64{3, 4, 5, 6}, ids(r.after(2)))
	assert.Equal(t, []uint64{5, 6}, ids(r.after(4)))
	assert.Nil(t, r.after(6))
	assert.Nil(t, r.after(1<<63))
}

func TestStreamEndsWhenWriteFails(t *testing.T) {
	t.Parallel()
	b := NewBroker(Options{Heartbeat: time.Hour})
	w := newFakeWriter()
	w.block = make(chan any)
	close(w.block) // every write fails at once
	b.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
	assert.Zero(t, b.Subscribers())
	assert.Equal(t, "text/event-stream", w.Header().Get("Content-Type"))
}

func TestLogsSlowClientAndClose(t *testing.T) {
	t.Parallel()
	var buf proctest.Buffer
	b := NewBroker(Options{QueueSize: 1, Heartbeat: time.Hour, Logger: newTextLogger(&buf)})
	w := newFakeWriter()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() {
		defer close(served)
		b.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil).WithContext(ctx))
	}()
	waitSubscribers(t, b, 1)
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
	require.Eventually(t, func() bool { return strings.Contains(buf.String(), "dropped=2") },
		5*time.Second, time.Millisecond)
	cancel()
	<-served
	assert.Contains(t, buf.String(), "sse stream closed")
	assert.Contains(t, buf.String(), "reason=\"client gone\"")
}

func TestNewBrokerStreamLimitDefaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		opts         Options
		queueBytes   int
		writeTimeout time.Duration
		maxStreams   int
	}{
		{"zero", Options{}, DefaultQueueBytes, DefaultWriteTimeout, DefaultMaxStreams},
		{"negative", Options{QueueBytes: -1, WriteTimeout: -time.Second, MaxStreams: -1},
			DefaultQueueBytes, DefaultWriteTimeout, DefaultMaxStreams},
		{"set", Options{QueueBytes: 1 << 10, WriteTimeout: time.Second, MaxStreams: 3}, 1 << 10, time.Second, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := NewBroker(tt.opts)
			assert.Equal(t, tt.queueBytes, b.queueBytes)
			assert.Equal(t, tt.writeTimeout, b.writeTimeout)
			assert.Equal(t, tt.maxStreams, b.maxStreams)
		})
	}
	assert.Equal(t, 4<<20, DefaultQueueBytes, "open questions item 67: 4 MiB")
	assert.Equal(t, 30*time.Second, DefaultWriteTimeout, "open questions item 67: 30 s")
}

// TestWriteTimeoutDisconnectsClientThatStopsReading: a client that reads nothing is
// disconnected once a write has waited WriteTimeout, its subscription and queue
// released, while a healthy client keeps receiving every event. It fails on the code
// before issue 27 row 5, where a write had no deadline: the stuck stream stayed
// subscribed, holding its queue, for as long as the client kept the connection.
func TestWriteTimeoutDisconnectsClientThatStopsReading(t *testing.T) {
	var logs proctest.Buffer
	b := NewBroker(Options{IDs: NewSequence(0), WriteTimeout: 300 * time.Millisecond, Heartbeat: time.Hour, Logger: newTextLogger(&logs)})
	var closed atomic.Int32
	ts := httptest.NewUnstartedServer(b)
	ts.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		if state == http.StateClosed {
			closed.Add(1)
		}
	}
	ts.Start()
	t.Cleanup(ts.Close)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, b.Shutdown(ctx))
	})
	dialStuck(t, ts)
	waitSubscribers(t, b, 1)
	healthy := connect(t, testContext(t), ts.URL, "")
	waitSubscribers(t, b, 2)

	payload := []byte(`"` + strings.Repeat("x", 64<<10) + `"`)
	deadline := time.Now().Add(15 * time.Second)
	for b.Subscribers() == 2 {
		require.True(t, time.Now().Before(deadline), "the client that stopped reading was never disconnected")
		id := b.Publish("bulk", payload)
		ev, err := readEvent(healthy)
		require.NoError(t, err)
		require.Equal(t, strconv.FormatUint(id, 10), ev.ID, "the healthy client gets every event")
	}
	id := b.Publish(EventEffect, []byte(`{"after":"drop"}`))
	ev, err := readEvent(healthy)
	require.NoError(t, err)
	assert.Equal(t, strconv.FormatUint(id, 10), ev.ID, "the healthy client keeps its stream")
	assert.Eventually(t, func() bool { return closed.Load() == 1 }, 5*time.Second, 10*time.Millisecond,
		"the server closed the connection of the client that stopped reading, and only that one")
	assert.Contains(t, logs.String(), "write timed out", "the log says why the stream ended")
}

// TestMaxStreams: beyond MaxStreams open streams a new one gets 503 with
// Retry-After; once a stream ends, a new one is accepted. It fails on the code
// before issue 27 row 10, which accepted any number of streams.
func TestMaxStreams(t *testing.T) {
	b, ts := newTestServer(t, Options{MaxStreams: 2, Heartbeat: time.Hour})
	first, cancelFirst := context.WithCancel(testContext(t))
	connect(t, first, ts.URL, "")
	connect(t, testContext(t), ts.URL, "")
	waitSubscribers(t, b, 2)

	resp, err := http.Get(ts.URL)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Equal(t, "5", resp.Header.Get("Retry-After"))
	assert.JSONEq(t, `{"detail":"too many event streams"}`, string(body))
	assert.Equal(t, 2, b.Subscribers(), "the refused stream was never counted")

	cancelFirst()
	waitSubscribers(t, b, 1)
	connect(t, testContext(t), ts.URL, "")
	waitSubscribers(t, b, 2)
}
