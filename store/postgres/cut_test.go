package postgres

import (
	"context"
	"io"
	"log/slog"
	"net"
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
type cutProxy struct {
	ln     net.Listener
	target string
	down   atomic.Bool

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
		go func() { _, _ = io.Copy(up, c); _ = up.Close() }()
		go func() { _, _ = io.Copy(c, up); _ = c.Close() }()
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
