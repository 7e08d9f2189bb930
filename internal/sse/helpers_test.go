package sse

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/supervaize/supervaizer-go/internal/tools/ssetest"
)

// sseEvent is one event as a client sees it.
type sseEvent = ssetest.Event

// readEvent reads the next event the way an EventSource does.
func readEvent(r *bufio.Reader) (sseEvent, error) { return ssetest.Read(r) }

// newTestServer serves b over a real HTTP server. Cleanup shuts b down before closing
// the server, which waits for its handlers. Unless opts names an id source, ids count
// from 1 so that tests can name them.
func newTestServer(t testing.TB, opts Options) (*Broker, *httptest.Server) {
	t.Helper()
	return newTestServerWith(t, opts, nil)
}

// newTestServerWith is newTestServer calling configure, when not nil, on the
// server before it starts.
func newTestServerWith(t testing.TB, opts Options, configure func(*httptest.Server)) (*Broker, *httptest.Server) {
	t.Helper()
	if opts.IDs == nil {
		opts.IDs = NewSequence(0)
	}
	b := NewBroker(opts)
	ts := httptest.NewUnstartedServer(b)
	if configure != nil {
		configure(ts)
	}
	ts.Start()
	t.Cleanup(ts.Close)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, b.Shutdown(ctx))
	})
	return b, ts
}

// connect opens a stream and checks its status, headers and first event.
func connect(t testing.TB, ctx context.Context, url, lastEventID string) *bufio.Reader {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	require.NoError(t, err)
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { _ = resp.Body.Close() })
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	r := bufio.NewReader(resp.Body)
	ev, err := readEvent(r)
	require.NoError(t, err)
	require.Equal(t, sseEvent{Name: EventConnected, Data: `{"status":"connected"}`}, ev)
	return r
}

// readUntil reads events until one has the given id and returns the ids of the published
// events read, in order. Events without an id (heartbeats) are skipped.
func readUntil(t testing.TB, r *bufio.Reader, id string) []string {
	t.Helper()
	var ids []string
	for {
		ev, err := readEvent(r)
		require.NoError(t, err)
		if ev.ID == "" {
			continue
		}
		ids = append(ids, ev.ID)
		if ev.ID == id {
			return ids
		}
	}
}

func waitSubscribers(t testing.TB, b *Broker, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return b.Subscribers() == n },
		10*time.Second, time.Millisecond, "want %d subscribers", n)
}

func testContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// fakeWriter is a ResponseWriter that flushes, records what it is sent and is safe to
// read while a stream writes to it. It does not support write deadlines.
type fakeWriter struct {
	header http.Header

	mu      sync.Mutex
	code    int
	buf     bytes.Buffer
	flushed int      // bytes flushed so far
	block   chan any // if set, Write waits until it is closed, then fails
	writing chan any // if set, closed by the first blocked Write
}

func newFakeWriter() *fakeWriter { return &fakeWriter{header: http.Header{}} }

func (f *fakeWriter) Header() http.Header { return f.header }

func (f *fakeWriter) WriteHeader(code int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.code == 0 {
		f.code = code
	}
}

func (f *fakeWriter) Write(p []byte) (int, error) {
	if f.block != nil {
		if f.writing != nil {
			close(f.writing)
			f.writing = nil
		}
		<-f.block
		return 0, errors.New("fake writer closed")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.code == 0 {
		f.code = http.StatusOK
	}
	return f.buf.Write(p)
}

func (f *fakeWriter) Flush() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.flushed = f.buf.Len()
}

// output returns what has been flushed so far.
func (f *fakeWriter) output() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return string(f.buf.Bytes()[:f.flushed])
}

func (f *fakeWriter) status() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.code
}

func newTextLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}
