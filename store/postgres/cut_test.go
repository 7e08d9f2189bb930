package postgres

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	sv "github.com/supervaize/supervaizer-go"
	svtest "github.com/supervaize/supervaizer-go/testing"
)

// cutProxy forwards TCP connections to a PostgreSQL server until cut: then it
// closes every connection it carries and refuses new ones, as a network
// partition between the controller and its database would, until resumed.
// While blackholed it drops every byte in both directions without closing
// anything, as a network whose path lost the connection's state (a NAT or
// firewall entry gone) does: the connections carried then never answer.
type cutProxy struct {
	ln     net.Listener
	target string
	down   atomic.Bool
	hole   atomic.Bool

	mu    sync.Mutex
	conns []net.Conn
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &cutProxy{ln: ln, target: target}
	t.Cleanup(func() { _ = ln.Close(); p.cut() })
	go p.serve()
	return p
}

func (p *cutProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if p.down.Load() {
			_ = c.Close()
			continue
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, up)
		p.mu.Unlock()
		go func() { _, _ = io.Copy(up, droppingReader{c, &p.hole}); _ = up.Close() }()
		go func() { _, _ = io.Copy(c, droppingReader{up, &p.hole}); _ = c.Close() }()
	}
}

// droppingReader drops what it reads while hole is set.
type droppingReader struct {
	r    io.Reader
	hole *atomic.Bool
}

func (d droppingReader) Read(b []byte) (int, error) {
	for {
		n, err := d.r.Read(b)
		if err != nil || !d.hole.Load() {
			return n, err
		}
	}
}

// cut closes every carried connection and refuses new ones.
func (p *cutProxy) cut() {
	p.down.Store(true)
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
}

func (p *cutProxy) resume() { p.down.Store(false) }

// pgTarget returns the host:port a PostgreSQL URL names (port 5432 when it
// names none).
func pgTarget(t *testing.T, u *url.URL) string {
	t.Helper()
	if _, _, err := net.SplitHostPort(u.Host); err != nil {
		return net.JoinHostPort(u.Host, "5432")
	}
	return u.Host
}

// TestStoreCutAfterHandler: the connection to PostgreSQL is cut while a
// job.start handler runs, so its result cannot be recorded (spec item 69,
// issue 27 row 3). The caller still gets the handler's result; a retry while
// the database is unreachable is told the attempt is in progress; once the
// database is back the kept result is recorded, a retry gets it byte for
// byte, and the handler ran once. Before the fix the caller got a bare
// -32603 and, after the lease, the handler ran again.
func TestStoreCutAfterHandler(t *testing.T) {
	raw := testURL(t)
	u, err := url.Parse(raw)
	require.NoError(t, err)
	proxy := newCutProxy(t, pgTarget(t, u))
	u.Host = proxy.ln.Addr().String()
	db, err := Open(t.Context(), u.String(), WithSchema(testSchema(t)), WithMaxConns(2))
	require.NoError(t, err)
	t.Cleanup(db.Close)

	spec := sv.RegistrationSpec{AgentSlug: "research-agent", DisplayName: "Research Agent", A2UICatalogVersion: "r.1",
		Surfaces: sv.Surfaces("job.start"), Actions: sv.Actions("job.start")}
	a, err := sv.NewAgent(sv.AgentSpec{Name: "Research Agent", Version: "1.0.0", Registration: spec})
	require.NoError(t, err)
	ts := svtest.NewTestServer(t, []*sv.Agent{a}, sv.WithStore(db.Store()), sv.WithLogger(slog.New(slog.DiscardHandler)))
	var calls atomic.Int64
	var once sync.Once
	ts.Server.HandleAction("job.start", func(_ context.Context, req *sv.ActionRequest) (*sv.ActionResult, error) {
		n := calls.Add(1)
		once.Do(proxy.cut) // the database goes away while the handler runs
		return sv.OK(sv.JobStarted(req.JobID, map[string]any{"run": n})), nil
	})
	invoke := func() (string, error) {
		req := ts.Request("job.start", map[string]any{"topic_id": "x"})
		req.MissionID, req.JobID, req.IdempotencyKey = "m-1", "job-1", "k-cut"
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		defer cancel()
		out, err := ts.InvokeRaw(ctx, req)
		return string(out), err
	}

	first, err := invoke()
	require.NoError(t, err, "the caller gets the result of the handler that ran")
	assert.Contains(t, first, `"run":1`)

	retry, err := invoke()
	require.NoError(t, err)
	assert.Contains(t, retry, `"idempotency_in_progress"`, "a retry while the result is not recorded")

	proxy.resume()
	var last string
	require.Eventually(t, func() bool {
		last, err = invoke()
		return err == nil && last == first
	}, 20*time.Second, 50*time.Millisecond, "the kept result is recorded and replayed; last answer %q, %v", last, err)
	assert.EqualValues(t, 1, calls.Load(), "the handler ran once")
}

// TestFollowerBlackhole: the network between a controller and PostgreSQL
// drops every packet for a while (issue 35 row 5, spec item 73). Readiness
// turns 503 (the event log follower's query has a deadline, and Ping reports
// a follower not reading the log), and once the network returns the follower
// reconnects: an event appended meanwhile by another instance is delivered,
// and readiness is 200 again. On the code before the fix the catch-up query
// had no deadline: the follower hung for good, /readyz kept answering 200 as
// soon as the pool reconnected, and no event was delivered again.
func TestFollowerBlackhole(t *testing.T) {
	raw := testURL(t)
	u, err := url.Parse(raw)
	require.NoError(t, err)
	proxy := newCutProxy(t, pgTarget(t, u))
	u.Host = proxy.ln.Addr().String()
	schema := testSchema(t)
	db, err := Open(t.Context(), u.String(), WithSchema(schema), WithMaxConns(2))
	require.NoError(t, err)
	t.Cleanup(db.Close)
	direct, err := Open(t.Context(), raw, WithSchema(schema), WithMaxConns(2)) // another instance, on a sound network
	require.NoError(t, err)
	t.Cleanup(direct.Close)

	spec := sv.RegistrationSpec{AgentSlug: "research-agent", DisplayName: "Research Agent", A2UICatalogVersion: "r.1",
		Surfaces: sv.Surfaces("job.start"), Actions: sv.Actions("job.start")}
	a, err := sv.NewAgent(sv.AgentSpec{Name: "Research Agent", Version: "1.0.0", Registration: spec})
	require.NoError(t, err)
	srv, err := sv.NewServer([]*sv.Agent{a}, sv.WithBackend(db), sv.WithLocalMode(true),
		sv.WithEnv(func(string) string { return "" }), sv.WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	require.NoError(t, srv.Start(t.Context()))
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	ready := func() int {
		resp, err := http.Get(hs.URL + sv.ReadinessPath)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}

	// A follower of the log through the proxy, as the server's own.
	got := make(chan string, 16)
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	go func() {
		_ = db.EventLog().Follow(ctx, 0, func(_ uint64, name string, _ []byte) { got <- name }, nil)
	}()
	_, err = direct.EventLog().Append(t.Context(), "before", []byte(`{}`))
	require.NoError(t, err)
	awaitEvent(t, got, "before")
	require.Eventually(t, func() bool { return ready() == http.StatusOK }, 30*time.Second, 100*time.Millisecond)

	proxy.hole.Store(true)
	_, err = direct.EventLog().Append(t.Context(), "during", []byte(`{}`))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return ready() == http.StatusServiceUnavailable }, 60*time.Second, 200*time.Millisecond,
		"readiness reports the unreachable database and the follower")
	// Longer than any follower's poll (30 s before the fix), so that its
	// catch-up query is lost in the hole.
	time.Sleep(35 * time.Second)

	proxy.hole.Store(false)
	awaitEvent(t, got, "during")
	_, err = direct.EventLog().Append(t.Context(), "after", []byte(`{}`))
	require.NoError(t, err)
	awaitEvent(t, got, "after")
	require.Eventually(t, func() bool { return ready() == http.StatusOK }, 60*time.Second, 200*time.Millisecond,
		"ready again once the followers read the log")
}

// awaitEvent waits for the event named name among those delivered to got.
func awaitEvent(t *testing.T, got <-chan string, name string) {
	t.Helper()
	timeout := time.After(90 * time.Second)
	for {
		select {
		case n := <-got:
			if n == name {
				return
			}
		case <-timeout:
			t.Fatalf("event %q was not delivered", name)
		}
	}
}
