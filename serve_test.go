package supervaizer_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	supervaizer "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/internal/tools/proctest"
)

// serveAgent is a one-agent local-mode controller: job.start answers at once,
// job.slow waits for release.
type serveAgent struct {
	srv     *supervaizer.Server
	release chan struct{}
	started chan struct{}
}

func newServeAgent(t *testing.T, opts ...supervaizer.Option) *serveAgent {
	t.Helper()
	reg := supervaizer.RegistrationSpec{
		AgentSlug: "serve-agent", DisplayName: "Serve Agent", A2UICatalogVersion: "serve.1",
		Surfaces: supervaizer.Surfaces("job.start"), Actions: supervaizer.Actions("job.start", "job.slow"),
	}
	agent, err := supervaizer.NewAgent(supervaizer.AgentSpec{Name: "Serve Agent", Version: "1.0.0", Registration: reg})
	require.NoError(t, err)
	base := []supervaizer.Option{supervaizer.WithEnv(emptyEnv), supervaizer.WithLocalMode(true),
		supervaizer.WithLogger(slog.New(slog.DiscardHandler))}
	srv, err := supervaizer.NewServer([]*supervaizer.Agent{agent}, append(base, opts...)...)
	require.NoError(t, err)
	sa := &serveAgent{srv: srv, release: make(chan struct{}), started: make(chan struct{}, 1)}
	srv.HandleAction("job.start", func(_ context.Context, req *supervaizer.ActionRequest) (*supervaizer.ActionResult, error) {
		return supervaizer.OK(supervaizer.JobStarted(req.JobID, nil)), nil
	})
	srv.HandleAction("job.slow", func(_ context.Context, req *supervaizer.ActionRequest) (*supervaizer.ActionResult, error) {
		sa.started <- struct{}{}
		<-sa.release
		return supervaizer.OK(supervaizer.JobStarted(req.JobID, nil)), nil
	})
	srv.HandleSurface("job.start", func(ctx context.Context, req *supervaizer.SurfaceRequest) (*supervaizer.SurfaceResult, error) {
		return supervaizer.NewSurfaceResult(ctx, req.Surface, map[string]any{"type": "Form"})
	})
	return sa
}

// serve runs Serve on a loopback listener; stop cancels it and returns what
// Serve returned.
func (sa *serveAgent) serve(t *testing.T) (base string, stop func() error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sa.srv.Serve(ctx, ln) }()
	var once sync.Once
	var serveErr error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case serveErr = <-done:
			case <-time.After(20 * time.Second):
				serveErr = errors.New("Serve did not return within 20s of the cancel")
			}
		})
		return serveErr
	}
	t.Cleanup(func() { _ = stop() })
	return "http://" + ln.Addr().String(), stop
}

// startJob posts action on base in local mode and returns the HTTP status and
// the JSON-RPC result's status.
func startJob(t *testing.T, client *http.Client, base, action, jobID string) (int, string) {
	t.Helper()
	params := map[string]any{"action_request": map[string]any{
		"request_id": "req-" + jobID, "actor": map[string]any{"user_id": "you"}, "workspace": map[string]any{"id": "ws-local"},
		"mission_id": "m-1", "agent_slug": "serve-agent", "surface": "job.start", "action": action,
		"job_id": jobID, "idempotency_key": "key-" + jobID, "input": map[string]any{},
	}}
	req, err := http.NewRequest(http.MethodPost, base+"/a2a", bytes.NewReader(rpcBody(t, 1, supervaizer.MethodActionInvoke, params)))
	require.NoError(t, err)
	req.Header.Set(supervaizer.HeaderAPIKey, supervaizer.LocalModeAPIKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out struct {
		Result struct {
			Status string `json:"status"`
		} `json:"result"`
		Error json.RawMessage `json:"error"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	require.Empty(t, out.Error)
	return resp.StatusCode, out.Result.Status
}

// TestServeHeaderLimit: headers beyond MaxHeaderBytes are refused (431).
func TestServeHeaderLimit(t *testing.T) {
	sa := newServeAgent(t)
	base, stop := sa.serve(t)
	req, err := http.NewRequest(http.MethodGet, base+"/.well-known/agent-card.json", nil)
	require.NoError(t, err)
	req.Header.Set("X-Padding", strings.Repeat("a", 64<<10+8<<10))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusRequestHeaderFieldsTooLarge, resp.StatusCode)
	require.NoError(t, stop())
}

// TestServeStopsCleanly: cancelling the context closes the event streams,
// lets a call in progress finish and be answered, then Serve returns nil.
func TestServeStopsCleanly(t *testing.T) {
	sa := newServeAgent(t)
	base, stop := sa.serve(t)
	client := &http.Client{}
	events := openEvents(t, client, base, supervaizer.LocalModeAPIKey, nil)
	require.Equal(t, http.StatusOK, events.resp.StatusCode)

	type answer struct {
		code   int
		status string
	}
	answered := make(chan answer, 1)
	go func() {
		code, status := startJob(t, client, base, "job.slow", "job-slow")
		answered <- answer{code, status}
	}()
	<-sa.started

	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	select {
	case <-events.done: // the stream was closed by the stop
	case <-time.After(10 * time.Second):
		require.FailNow(t, "the event stream is still open after the stop began")
	}
	select {
	case err := <-stopped:
		require.FailNowf(t, "Serve returned before the call in progress finished", "err=%v", err)
	case <-time.After(200 * time.Millisecond):
	}
	close(sa.release)
	a := <-answered
	assert.Equal(t, http.StatusOK, a.code)
	assert.Equal(t, "ok", a.status)
	require.NoError(t, <-stopped)
}

// TestServeStreamOutlivesReadTimeout: an accepted event stream is not cut when
// ReadTimeout has passed since its request began.
func TestServeStreamOutlivesReadTimeout(t *testing.T) {
	const readTimeout = 300 * time.Millisecond
	sa := newServeAgent(t, supervaizer.WithHTTPSettings(supervaizer.HTTPSettings{ReadTimeout: readTimeout}))
	base, stop := sa.serve(t)
	client := &http.Client{}
	events := openEvents(t, client, base, supervaizer.LocalModeAPIKey, nil)
	require.Equal(t, http.StatusOK, events.resp.StatusCode)
	require.Equal(t, "supervaizer.connected", events.next(t).Name)
	time.Sleep(3 * readTimeout)
	_, status := startJob(t, client, base, "job.start", "job-late")
	require.Equal(t, "ok", status)
	ev := events.nextEffect(t)
	assert.Contains(t, ev.Data, "job-late")
	require.NoError(t, stop())
}

// TestServeRefusesUnauthorizableConfiguration: Serve runs Start's checks and
// closes the listener when they fail.
func TestServeRefusesUnauthorizableConfiguration(t *testing.T) {
	agent := newTestAgent(t, "Research Agent")
	srv, err := supervaizer.NewServer([]*supervaizer.Agent{agent}, supervaizer.WithEnv(emptyEnv),
		supervaizer.WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	err = srv.Serve(t.Context(), ln)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "SUPERVAIZER_LOCAL_MODE")
	_, err = ln.Accept()
	assert.ErrorIs(t, err, net.ErrClosed, "the listener is closed")
}

// TestListenAndServeAddress: WithAddr wins over SUPERVAIZER_ADDR, which wins
// over the loopback default; ListenAndServe listens there and logs it.
func TestListenAndServeAddress(t *testing.T) {
	agent := newTestAgent(t, "Research Agent")
	for _, tc := range []struct {
		name string
		env  map[string]string
		opts []supervaizer.Option
		want string
	}{
		{"default", nil, nil, "127.0.0.1:8080"},
		{"env", map[string]string{"SUPERVAIZER_ADDR": ":9090"}, nil, ":9090"},
		{"option wins", map[string]string{"SUPERVAIZER_ADDR": ":9090"}, []supervaizer.Option{supervaizer.WithAddr("127.0.0.1:7070")}, "127.0.0.1:7070"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := append([]supervaizer.Option{supervaizer.WithEnv(envOf(tc.env)), supervaizer.WithLocalMode(true),
				supervaizer.WithLogger(slog.New(slog.DiscardHandler))}, tc.opts...)
			srv, err := supervaizer.NewServer([]*supervaizer.Agent{agent}, opts...)
			require.NoError(t, err)
			assert.Equal(t, tc.want, srv.NewHTTPServer().Addr)
			hs := srv.NewHTTPServer()
			assert.Equal(t, tc.want, hs.Addr)
			assert.Equal(t, 10*time.Second, hs.ReadHeaderTimeout)
			assert.LessOrEqual(t, hs.ReadHeaderTimeout, 10*time.Second)
			assert.Equal(t, 60*time.Second, hs.ReadTimeout)
			assert.Equal(t, 120*time.Second, hs.IdleTimeout)
			assert.Equal(t, 64<<10, hs.MaxHeaderBytes)
			assert.Zero(t, hs.WriteTimeout, "event streams are long-lived")
		})
	}

	var logs proctest.Buffer
	srv, err := supervaizer.NewServer([]*supervaizer.Agent{agent}, supervaizer.WithLocalMode(true),
		supervaizer.WithEnv(envOf(map[string]string{"SUPERVAIZER_ADDR": "127.0.0.1:0"})),
		supervaizer.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- srv.ListenAndServe(ctx) }()
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "controller ready") }, 10*time.Second, 10*time.Millisecond)
	assert.Regexp(t, `url=http://127\.0\.0\.1:\d+`, logs.String())
	cancel()
	require.NoError(t, <-done)
	assert.Contains(t, logs.String(), "controller stopped")

	_, err = supervaizer.NewServer([]*supervaizer.Agent{agent}, supervaizer.WithEnv(emptyEnv), supervaizer.WithLocalMode(true),
		supervaizer.WithHTTPSettings(supervaizer.HTTPSettings{IdleTimeout: -time.Second}))
	require.ErrorContains(t, err, "must not be negative")
}

// TestServeConnectionLimit: Serve keeps at most HTTPSettings.MaxConnections
// connections open; a further one is served only once another closes. It
// fails on the code before issue 27 row 10, which served every connection.
func TestServeConnectionLimit(t *testing.T) {
	sa := newServeAgent(t, supervaizer.WithHTTPSettings(supervaizer.HTTPSettings{MaxConnections: 2}))
	base, stop := sa.serve(t)
	addr := strings.TrimPrefix(base, "http://")
	get := func(c net.Conn) {
		_, err := io.WriteString(c, "GET /.well-known/agent-card.json HTTP/1.1\r\nHost: "+addr+"\r\n\r\n")
		require.NoError(t, err)
	}
	status := func(c net.Conn, wait time.Duration) (string, error) {
		require.NoError(t, c.SetReadDeadline(time.Now().Add(wait)))
		return bufio.NewReader(c).ReadString('\n')
	}
	dial := func() net.Conn {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	open := []net.Conn{dial(), dial()}
	for _, c := range open {
		get(c)
		line, err := status(c, 10*time.Second)
		require.NoError(t, err)
		assert.Equal(t, "HTTP/1.1 200 OK\r\n", line)
	}

	third := dial() // the kernel completes the handshake; Serve does not accept it yet
	get(third)
	_, err := status(third, 300*time.Millisecond)
	var ne net.Error
	require.ErrorAs(t, err, &ne, "a third connection was served beyond MaxConnections: 2")
	assert.True(t, ne.Timeout())

	require.NoError(t, open[0].Close())
	line, err := status(third, 10*time.Second)
	require.NoError(t, err, "the waiting connection is served once another closes")
	assert.Equal(t, "HTTP/1.1 200 OK\r\n", line)
	require.NoError(t, stop())
}
