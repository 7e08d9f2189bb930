package supervaizer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	sv "github.com/supervaize/supervaizer-go"
)

// newLoopbackServer is a local-mode server of the preview agent, not yet
// serving; calls counts its handler's runs.
func newLoopbackServer(t *testing.T, calls *atomic.Int64, opts ...sv.Option) *sv.Server {
	t.Helper()
	all := append([]sv.Option{sv.WithEnv(emptyEnv), sv.WithLocalMode(true), sv.WithLogger(slog.New(slog.DiscardHandler))}, opts...)
	srv, err := sv.NewServer([]*sv.Agent{previewAgent(t, calls, nil)}, all...)
	require.NoError(t, err)
	return srv
}

// TestLocalModeServesOnlyLoopbackHosts: in local mode every route answers
// 403 to a request whose Host is not a loopback name or address, and no
// handler runs (spec item 68). Before the fix a DNS-rebinding page
// (Host: rebind.example) could call /a2a and read /a2a/events with the
// published development key.
func TestLocalModeServesOnlyLoopbackHosts(t *testing.T) {
	var calls atomic.Int64
	srv := newLoopbackServer(t, &calls)
	require.NoError(t, srv.Start(t.Context()))
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	invoke := rpcBody(t, 1, sv.MethodActionInvoke, map[string]any{"action_request": map[string]any{
		"request_id": "r-1", "agent_slug": "preview-agent", "action": "job.start", "job_id": "j-1", "mission_id": "m-1", "surface": "job.start",
		"workspace": map[string]any{"id": "w"}, "actor": map[string]any{"user_id": "u"}, "input": map[string]any{"topic": "x"},
	}})
	routes := []struct {
		method, path string
		body         []byte
	}{
		{http.MethodPost, "/a2a", invoke},
		{http.MethodGet, "/a2a/events", nil},
		{http.MethodGet, "/.well-known/agent.json", nil},
		{http.MethodGet, "/_preview/", nil},
	}
	hosts := []struct {
		host string
		want int
	}{
		{"rebind.example", http.StatusForbidden},
		{"rebind.example:8080", http.StatusForbidden},
		{"localhost.rebind.example", http.StatusForbidden},
		{"10.0.0.7:8080", http.StatusForbidden},
		{"", http.StatusForbidden},
		{"localhost:8080", 0},
		{"127.0.0.1:8080", 0},
		{"[::1]:8080", 0},
	}
	for _, rt := range routes {
		for _, h := range hosts {
			t.Run(rt.path+" "+h.host, func(t *testing.T) {
				ctx, cancel := context.WithCancel(t.Context())
				r := httptest.NewRequestWithContext(ctx, rt.method, rt.path, bytes.NewReader(rt.body))
				r.Host = h.host
				r.RemoteAddr = "127.0.0.1:50000"
				r.Header.Set("Content-Type", "application/json")
				r.Header.Set(sv.HeaderAPIKey, sv.LocalModeAPIKey)
				w := httptest.NewRecorder()
				if rt.path == "/a2a/events" && h.want == 0 {
					cancel() // the stream ends at once
				}
				srv.ServeHTTP(w, r)
				cancel()
				if h.want != 0 {
					assert.Equal(t, h.want, w.Code)
					assert.Contains(t, w.Body.String(), "loopback")
				} else {
					assert.NotEqual(t, http.StatusForbidden, w.Code)
					if rt.path == "/a2a" {
						assert.Contains(t, w.Body.String(), `"status":"ok"`)
					}
				}
			})
		}
	}
	assert.EqualValues(t, 3, calls.Load(), "the handler ran only for the loopback hosts")
}

// TestLocalModeListensOnlyOnLoopback: local mode refuses to listen on a
// non-loopback address, with a startup error naming it and the variable
// (spec item 68). Before the fix it served on 0.0.0.0 without a word.
func TestLocalModeListensOnlyOnLoopback(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0", "example.com:0"} {
		t.Run("ListenAndServe "+addr, func(t *testing.T) {
			var calls atomic.Int64
			srv := newLoopbackServer(t, &calls, sv.WithAddr(addr))
			err := srv.ListenAndServe(t.Context())
			require.Error(t, err)
			assert.ErrorContains(t, err, "local mode listens only on a loopback address")
			assert.ErrorContains(t, err, addr)
			assert.ErrorContains(t, err, "SUPERVAIZER_ADDR")
		})
	}
	t.Run("Serve on every interface", func(t *testing.T) {
		ln, err := net.Listen("tcp", "0.0.0.0:0")
		require.NoError(t, err)
		var calls atomic.Int64
		srv := newLoopbackServer(t, &calls)
		err = srv.Serve(t.Context(), ln)
		require.Error(t, err)
		assert.ErrorContains(t, err, "local mode listens only on a loopback address")
		_, err = ln.Accept()
		assert.Error(t, err, "the listener was closed")
	})
	t.Run("loopback is served", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		var calls atomic.Int64
		srv := newLoopbackServer(t, &calls)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- srv.Serve(ctx, ln) }()
		require.Eventually(t, func() bool {
			resp, err := http.Get("http://" + ln.Addr().String() + "/.well-known/agent.json")
			if err != nil {
				return false
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK
		}, 10*time.Second, 10*time.Millisecond)
		cancel()
		require.NoError(t, <-done)
	})
}

// TestLocalModeInjectsNoAgent is spec item 80: local mode adds no agent of
// its own (the Python reference adds a Hello World agent unless
// SUPERVAIZER_DISABLE_HELLO_WORLD is true; examples/hello is the Go
// equivalent). The variable is not read: whatever its value, the controller
// serves exactly its agents. docs/protocol.md records the difference.
func TestLocalModeInjectsNoAgent(t *testing.T) {
	for _, disable := range []string{"", "false", "true"} {
		env := map[string]string{"SUPERVAIZER_LOCAL_MODE": "true", "SUPERVAIZER_DISABLE_HELLO_WORLD": disable}
		srv, err := sv.NewServer([]*sv.Agent{previewAgent(t, new(atomic.Int64), nil)},
			sv.WithEnv(func(k string) string { return env[k] }), sv.WithLogger(slog.New(slog.DiscardHandler)))
		require.NoError(t, err)
		assert.Equal(t, sv.ModeLocal, srv.Mode(), "SUPERVAIZER_LOCAL_MODE is read")
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "http://127.0.0.1/.well-known/agents.json", nil))
		require.Equal(t, http.StatusOK, w.Code, w.Body.String())
		var list struct {
			Agents []map[string]any `json:"agents"`
		}
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &list), w.Body.String())
		assert.Len(t, list.Agents, 1, "DISABLE_HELLO_WORLD=%q: only the server's own agent", disable)
		require.NoError(t, srv.Shutdown(t.Context()))
	}

	// No file of the SDK reads the variable; the protocol reference says why.
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.NotContains(t, string(b), "DISABLE_HELLO_WORLD", path)
		return nil
	})
	require.NoError(t, err)
	doc, err := os.ReadFile(filepath.Join("docs", "protocol.md"))
	require.NoError(t, err)
	assert.Contains(t, string(doc), "No injected Hello World agent")
	assert.Contains(t, string(doc), "`SUPERVAIZER_DISABLE_HELLO_WORLD` is not read")
}
