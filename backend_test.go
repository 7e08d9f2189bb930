package supervaizer_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	supervaizer "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/internal/tools/proctest"
	"github.com/supervaize/supervaizer-go/store"
)

// memLog is an EventLog in memory shared by several servers, as a database
// would share it between instances. Ids start at 100, so that they cannot be
// mistaken for a broker's own.
type memLog struct {
	mu     sync.Mutex
	events []loggedEvent
	wake   chan struct{} // closed and replaced on each append
	fail   atomic.Bool   // Append fails
}

type loggedEvent struct {
	id         uint64
	name, data string
}

func newMemLog() *memLog { return &memLog{wake: make(chan struct{})} }

func (l *memLog) Append(_ context.Context, name string, data []byte) (uint64, error) {
	if l.fail.Load() {
		return 0, errors.New("log unreachable")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	id := uint64(100 + len(l.events))
	l.events = append(l.events, loggedEvent{id, name, string(data)})
	close(l.wake)
	l.wake = make(chan struct{})
	return id, nil
}

func (l *memLog) Follow(ctx context.Context, after uint64, deliver func(uint64, string, []byte), caughtUp func()) error {
	for {
		l.mu.Lock()
		var batch []loggedEvent
		for _, e := range l.events {
			if e.id > after {
				batch = append(batch, e)
			}
		}
		wake := l.wake
		l.mu.Unlock()
		for _, e := range batch {
			deliver(e.id, e.name, []byte(e.data))
			after = e.id
		}
		if caughtUp != nil {
			caughtUp()
			caughtUp = nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-wake:
		}
	}
}

// memBackend is a Backend in memory.
type memBackend struct {
	st   store.Store
	log  *memLog
	down atomic.Bool // Ping fails
}

func (b *memBackend) Store() store.Store       { return b.st }
func (b *memBackend) EventLog() store.EventLog { return b.log }
func (b *memBackend) Name() string             { return "memtest" }
func (b *memBackend) Ping(ctx context.Context) error {
	if b.down.Load() {
		return errors.New("dial tcp 10.0.0.1:5432: connection refused")
	}
	return ctx.Err()
}

func newMemBackend() *memBackend { return &memBackend{st: store.NewMemory(), log: newMemLog()} }

// shutdownOnCleanup shuts the server down when the test ends.
func shutdownOnCleanup(t *testing.T, srv *supervaizer.Server) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		assert.NoError(t, srv.Shutdown(ctx))
	})
}

// TestBackendEventsAcrossServers runs two servers on one backend: an action on
// either reaches the subscribers of both, with the log's ids, once each and in
// order, and a client resumes on the other server with Last-Event-ID.
func TestBackendEventsAcrossServers(t *testing.T) {
	b := newMemBackend()
	var hs [2]*harness
	var urls [2]string
	var clients [2]*http.Client
	for i := range hs {
		hs[i] = newHarness(t, withServerOptions(supervaizer.WithBackend(b)))
		shutdownOnCleanup(t, hs[i].srv)
		ts, c := newHTTPServer(t, hs[i].srv)
		urls[i], clients[i] = ts.URL, c
	}
	waitReady(t, clients[0], urls[0])
	waitReady(t, clients[1], urls[1])
	subs := [2]*sseClient{
		openEvents(t, clients[0], urls[0], testReadKey, nil),
		openEvents(t, clients[1], urls[1], testReadKey, nil),
	}
	for _, s := range subs {
		require.Equal(t, http.StatusOK, s.resp.StatusCode)
		require.Equal(t, "supervaizer.connected", s.next(t).Name)
	}
	for i := range 4 {
		resp := hs[i%2].invoke(t, "Bearer "+hs[i%2].validToken(), actionParams("job.start", func(p map[string]any) {
			p["request_id"] = fmt.Sprintf("req-%d", i)
		}))
		require.Nil(t, resp.Error)
	}
	for n, s := range subs {
		for i := range 4 {
			ev := s.nextEffect(t)
			assert.Equal(t, strconv.Itoa(100+i), ev.ID, "subscriber %d", n)
			assert.Contains(t, ev.Data, fmt.Sprintf(`"request_id":"req-%d"`, i), "subscriber %d", n)
		}
	}
	// A client of server 0 that saw id 101 resumes on server 1.
	resumed := openEvents(t, clients[1], urls[1], testReadKey, http.Header{"Last-Event-Id": {"101"}})
	require.Equal(t, "supervaizer.connected", resumed.next(t).Name)
	assert.Equal(t, "102", resumed.nextEffect(t).ID)
	assert.Equal(t, "103", resumed.nextEffect(t).ID)

	// A server started later replays the retained events too.
	late := newHarness(t, withServerOptions(supervaizer.WithBackend(b)))
	shutdownOnCleanup(t, late.srv)
	ts, c := newHTTPServer(t, late.srv)
	waitReady(t, c, ts.URL)
	fromStart := openEvents(t, c, ts.URL, testReadKey, http.Header{"Last-Event-Id": {"0"}})
	require.Equal(t, "supervaizer.connected", fromStart.next(t).Name)
	for i := range 4 {
		assert.Equal(t, strconv.Itoa(100+i), fromStart.nextEffect(t).ID)
	}
}

// TestBackendAppendFailureIsLogged keeps the action's result when the event
// log fails, and logs the lost event.
func TestBackendAppendFailureIsLogged(t *testing.T) {
	b := newMemBackend()
	var logs proctest.Buffer
	h := newHarness(t, withServerOptions(supervaizer.WithBackend(b),
		supervaizer.WithLogger(slog.New(slog.NewTextHandler(&logs, nil)))))
	shutdownOnCleanup(t, h.srv)
	b.log.fail.Store(true)
	resp := h.invoke(t, "Bearer "+h.validToken(), actionParams("job.start", nil))
	require.Nil(t, resp.Error)
	assert.Contains(t, logs.String(), "event not published")
}

func TestReadiness(t *testing.T) {
	t.Run("without backend", func(t *testing.T) {
		h := newHarness(t)
		ts, c := newHTTPServer(t, h.srv)
		code, body := getBody(t, c, ts.URL+supervaizer.ReadinessPath)
		assert.Equal(t, http.StatusOK, code)
		assert.JSONEq(t, `{"status":"ready"}`, body)
		require.NoError(t, h.srv.Shutdown(context.Background()))
		code, body = getBody(t, c, ts.URL+supervaizer.ReadinessPath)
		assert.Equal(t, http.StatusServiceUnavailable, code)
		assert.JSONEq(t, `{"detail":"shutting down"}`, body)
	})
	t.Run("backend unreachable", func(t *testing.T) {
		b := newMemBackend()
		var logs proctest.Buffer
		h := newHarness(t, withServerOptions(supervaizer.WithBackend(b),
			supervaizer.WithLogger(slog.New(slog.NewTextHandler(&logs, nil)))))
		shutdownOnCleanup(t, h.srv)
		ts, c := newHTTPServer(t, h.srv)
		waitReady(t, c, ts.URL)
		b.down.Store(true)
		code, body := getBody(t, c, ts.URL+supervaizer.ReadinessPath)
		assert.Equal(t, http.StatusServiceUnavailable, code)
		assert.JSONEq(t, `{"detail":"backend unreachable"}`, body, "the answer names no host")
		assert.Contains(t, logs.String(), "connection refused", "the cause goes to the log")
		b.down.Store(false)
		code, _ = getBody(t, c, ts.URL+supervaizer.ReadinessPath)
		assert.Equal(t, http.StatusOK, code)
	})
}

// TestBackendEventsWaitForCatchUp answers 503 on the event stream and
// readiness until the retained events have been read.
func TestBackendEventsWaitForCatchUp(t *testing.T) {
	b := newMemBackend()
	blocked := &blockingLog{memLog: b.log, release: make(chan struct{})}
	h := newHarness(t, withServerOptions(supervaizer.WithBackend(&swapLog{memBackend: b, log: blocked})))
	shutdownOnCleanup(t, h.srv)
	ts, c := newHTTPServer(t, h.srv)
	code, _ := getBody(t, c, ts.URL+supervaizer.ReadinessPath)
	assert.Equal(t, http.StatusServiceUnavailable, code)
	s := openEvents(t, c, ts.URL, testReadKey, nil)
	assert.Equal(t, http.StatusServiceUnavailable, s.resp.StatusCode)
	assert.Equal(t, "1", s.resp.Header.Get("Retry-After"))
	_ = s.resp.Body.Close()
	close(blocked.release)
	waitReady(t, c, ts.URL)
}

func TestBackendExcludesWithStore(t *testing.T) {
	_, err := supervaizer.NewServer([]*supervaizer.Agent{newTestAgent(t, testAgentName)},
		supervaizer.WithEnv(emptyEnv), supervaizer.WithStore(store.NewMemory()), supervaizer.WithBackend(newMemBackend()))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "WithStore and WithBackend")
}

// TestStartupLogNamesStoreAndEvents checks the controller-ready record.
func TestStartupLogNamesStoreAndEvents(t *testing.T) {
	tests := []struct {
		name       string
		opt        supervaizer.Option
		wantStore  string
		wantEvents string
	}{
		{"default", nil, "store=memory", "events=in-process"},
		{"backend", supervaizer.WithBackend(newMemBackend()), "store=memtest", `events="memtest (shared by the instances)"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs proctest.Buffer
			opts := []supervaizer.Option{supervaizer.WithLogger(slog.New(slog.NewTextHandler(&logs, nil)))}
			if tt.opt != nil {
				opts = append(opts, tt.opt)
			}
			h := newHarness(t, withServerOptions(opts...))
			shutdownOnCleanup(t, h.srv)
			require.NoError(t, h.srv.Start(t.Context()))
			assert.Contains(t, logs.String(), tt.wantStore)
			assert.Contains(t, logs.String(), tt.wantEvents)
		})
	}
}

// blockingLog holds Follow back until release is closed.
type blockingLog struct {
	*memLog
	release chan struct{}
}

func (l *blockingLog) Follow(ctx context.Context, after uint64, deliver func(uint64, string, []byte), caughtUp func()) error {
	select {
	case <-l.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	return l.memLog.Follow(ctx, after, deliver, caughtUp)
}

// swapLog is a memBackend with another event log.
type swapLog struct {
	*memBackend
	log store.EventLog
}

func (b *swapLog) EventLog() store.EventLog { return b.log }

func waitReady(t *testing.T, c *http.Client, base string) {
	t.Helper()
	require.Eventually(t, func() bool {
		code, _ := getBody(t, c, base+supervaizer.ReadinessPath)
		return code == http.StatusOK
	}, 10*time.Second, 5*time.Millisecond, "not ready")
}

// getBody returns the status and body of a GET.
func getBody(t *testing.T, c *http.Client, url string) (int, string) {
	t.Helper()
	code, _, body := httpGet(t, c, url)
	return code, string(body)
}

// TestNoCheckpointStoreWarningWithABackend: rule checkpoints use the store of
// WithBackend (PostgreSQL), so the startup log does not warn that they have
// none, as it does without any store (issue 27 row 9: before the fix it
// warned with a backend too).
func TestNoCheckpointStoreWarningWithABackend(t *testing.T) {
	const warning = "rule checkpoints are declared but no store is configured"
	for _, tc := range []struct {
		name string
		opts []supervaizer.Option
		warn bool
	}{
		{"no store", nil, true},
		{"WithStore", []supervaizer.Option{supervaizer.WithStore(store.NewMemory())}, false},
		{"WithBackend", []supervaizer.Option{supervaizer.WithBackend(newMemBackend())}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logs := newCPLogs()
			opts := append([]supervaizer.Option{supervaizer.WithEnv(emptyEnv), supervaizer.WithLocalMode(true), supervaizer.WithLogger(logs.logger())}, tc.opts...)
			srv, err := supervaizer.NewServer([]*supervaizer.Agent{cpRegistration(t, cpAgentSlug, cpAgentName)}, opts...)
			require.NoError(t, err)
			t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
			assert.Equal(t, tc.warn, strings.Contains(logs.String(), warning), logs.String())
		})
	}
}
