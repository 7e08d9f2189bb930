package supervaizer_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	sv "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/a2ui"
	"github.com/supervaize/supervaizer-go/internal/tools/proctest"
	svtest "github.com/supervaize/supervaizer-go/testing"
)

const previewKey = "preview-test-key-0123456789" // must never reach a page

// previewCall is what the handler saw of one call.
type previewCall struct {
	req   *sv.ActionRequest
	grant string // the workspace context's grant id
}

// previewAgent is an agent with a job.start form and a counting handler.
func previewAgent(t *testing.T, calls *atomic.Int64, seen chan<- previewCall) *sv.Agent {
	t.Helper()
	reg := mustRegistration(t, sv.RegistrationSpec{AgentSlug: "preview-agent", DisplayName: "Preview <Agent>", A2UICatalogVersion: "p.1",
		Surfaces: []sv.SurfaceSpec{{ID: "job.start", Label: "Start"}}, Actions: sv.Actions("job.start")})
	a, err := sv.NewAgent(sv.AgentSpec{Name: "Preview Agent", Version: "1", Registration: reg})
	require.NoError(t, err)
	type startInput struct {
		Topic string `json:"topic" sv:"nonblank,maxLen=10"`
	}
	fields := []a2ui.Field{a2ui.StringField("topic", "Topic", a2ui.Required(), a2ui.MaxLength(10))}
	sv.HandleActionFor(a, "job.start", func(ctx context.Context, req *sv.ActionRequest, _ startInput) (*sv.ActionResult, error) {
		calls.Add(1)
		if seen != nil {
			c := previewCall{req: req}
			if ws, ok := sv.WorkspaceFrom(ctx); ok {
				c.grant = ws.GrantID
			}
			seen <- c
		}
		return sv.OK(sv.JobStarted(req.JobID, nil)), nil
	})
	a.HandleSurface("job.start", func(ctx context.Context, req *sv.SurfaceRequest) (*sv.SurfaceResult, error) {
		return sv.NewSurfaceResult(ctx, req.Surface, a2ui.Form{ID: "f", Title: "Start", Fields: fields,
			Submit: a2ui.Submit{Action: "job.start", Label: "Go"}})
	})
	return a
}

func previewServer(t *testing.T, a *sv.Agent, opts ...sv.Option) *httptest.Server {
	t.Helper()
	// The Studio agent id a standalone controller verifying tokens is given.
	env := envOf(map[string]string{"SUPERVAIZER_STUDIO_AGENT_ID": svtest.DefaultStudioAgentID(a.Slug())})
	all := append([]sv.Option{sv.WithEnv(env), sv.WithAPIKey(previewKey, sv.ScopeWrite)}, opts...)
	srv, err := sv.NewServer([]*sv.Agent{a}, all...)
	require.NoError(t, err)
	require.NoError(t, srv.Start(t.Context()))
	ts := httptest.NewServer(srv)
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()); ts.Close() })
	return ts
}

func get(t *testing.T, url string, header http.Header) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header, string(b)
}

func postPreview(t *testing.T, url string, body any, header http.Header) (int, map[string]any) {
	t.Helper()
	b, err := json.Marshal(body)
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(string(b)))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out map[string]any
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NotContains(t, string(raw), previewKey, "the key never reaches the browser")
	require.NoError(t, json.Unmarshal(raw, &out), "%s", raw)
	return resp.StatusCode, out
}

func TestPreviewServedInLocalMode(t *testing.T) {
	var calls atomic.Int64
	ts := previewServer(t, previewAgent(t, &calls, nil), sv.WithLocalMode(true))
	for _, path := range []string{"/_preview/", "/_preview/" + "surface?agent=preview-agent&surface=job.start", "/_preview/" + "jobs"} {
		status, h, body := get(t, ts.URL+path, nil)
		require.Equal(t, http.StatusOK, status, path)
		assert.Equal(t, "text/html; charset=utf-8", h.Get("Content-Type"), path)
		csp := h.Get("Content-Security-Policy")
		assert.Contains(t, csp, "script-src 'self'", path)
		assert.Contains(t, csp, "default-src 'none'", path)
		assert.NotContains(t, csp, "unsafe-inline", path)
		assert.NotContains(t, body, previewKey, "%s shows no key", path)
		assert.NotContains(t, body, "<script>", "%s has no inline script", path)
		assert.NotContains(t, body, "Preview <Agent>", "%s escapes the display name", path)
	}
	_, _, form := get(t, ts.URL+"/_preview/"+"surface?agent=preview-agent&surface=job.start", nil)
	assert.Contains(t, form, `data-field="topic"`, "the form is rendered from surface.load")
	status, h, _ := get(t, ts.URL+"/_preview", nil)
	assert.Equal(t, http.StatusOK, status, "/_preview redirects to the page")
	assert.NotEmpty(t, h.Get("Content-Security-Policy"))
	status, _, js := get(t, ts.URL+"/_preview/"+"static/preview.js", nil)
	require.Equal(t, http.StatusOK, status)
	assert.NotContains(t, js, "innerHTML", "the script never writes HTML")
	assert.Zero(t, calls.Load(), "loading pages runs no action")
}

func TestPreviewNotServed(t *testing.T) {
	var calls atomic.Int64
	tests := []struct {
		name string
		opts []sv.Option
	}{
		{"outside local mode", []sv.Option{sv.WithWorkspaceAuth(testWorkspaceAuth(svtest.NewFakeStudio(t)))}},
		{"local mode, turned off", []sv.Option{sv.WithLocalMode(true), sv.WithPreview(false)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := previewServer(t, previewAgent(t, &calls, nil), tt.opts...)
			for _, path := range []string{"/_preview/", "/_preview/" + "jobs", "/_preview/" + "static/preview.js", "/_preview/" + "events", "/_preview"} {
				status, _, _ := get(t, ts.URL+path, nil)
				assert.Equal(t, http.StatusNotFound, status, path)
			}
			b, _ := json.Marshal(map[string]any{"agent": "preview-agent", "surface": "job.start", "action": "job.start", "input": map[string]any{"topic": "x"}})
			resp, err := http.Post(ts.URL+"/_preview/"+"api/invoke", "application/json", strings.NewReader(string(b)))
			require.NoError(t, err)
			resp.Body.Close()
			assert.Contains(t, []int{http.StatusNotFound, http.StatusMethodNotAllowed}, resp.StatusCode)
		})
	}
	assert.Zero(t, calls.Load())
}

func TestPreviewNeverServedWhenAttachedToStudio(t *testing.T) {
	var calls atomic.Int64
	for _, opts := range [][]sv.Option{nil, {sv.WithPreview(true)}} {
		ts := svtest.NewAttachedTestServer(t, []*sv.Agent{previewAgent(t, &calls, nil)}, opts...)
		status, _, _ := get(t, ts.URL()+"/_preview/", nil)
		assert.Equal(t, http.StatusNotFound, status)
	}
}

func TestPreviewAnswersOnlyLoopbackHosts(t *testing.T) {
	var calls atomic.Int64
	local := previewServer(t, previewAgent(t, &calls, nil), sv.WithLocalMode(true))
	status, _, _ := get(t, local.URL+"/_preview/", http.Header{"Host": {"attacker.example"}})
	require.Equal(t, http.StatusOK, status, "Go's client sets Host from the request, not the header map")

	req, err := http.NewRequest(http.MethodGet, local.URL+"/_preview/", nil)
	require.NoError(t, err)
	req.Host = "attacker.example:80" // a DNS-rebinding page
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, "a non-loopback Host is refused (local mode, spec item 68)")

	explicit := previewServer(t, previewAgent(t, &calls, nil), sv.WithPreview(true), sv.WithWorkspaceAuth(testWorkspaceAuth(svtest.NewFakeStudio(t))))
	req, err = http.NewRequest(http.MethodGet, explicit.URL+"/_preview/", nil)
	require.NoError(t, err)
	req.Host = "controller.internal"
	req.Header.Set(sv.HeaderAPIKey, previewKey)
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode, "WithPreview(true) serves any host, with the key")
}

// TestPreviewOutsideLocalModeNeedsTheKey: WithPreview(true) outside local
// mode requires a write-scoped API key on every preview route, the event
// stream included (spec item 68). Before the fix /_preview/events served the
// whole event stream to anyone.
func TestPreviewOutsideLocalModeNeedsTheKey(t *testing.T) {
	var calls atomic.Int64
	const readKey = "preview-read-key-0123456789"
	ts := previewServer(t, previewAgent(t, &calls, nil), sv.WithPreview(true), sv.WithAPIKey(readKey, sv.ScopeRead),
		sv.WithWorkspaceAuth(testWorkspaceAuth(svtest.NewFakeStudio(t))))
	for _, path := range []string{"/_preview", "/_preview/", "/_preview/events", "/_preview/api/invoke", "/_preview/agents/preview-agent"} {
		t.Run(path, func(t *testing.T) {
			status, _, _ := get(t, ts.URL+path, nil)
			assert.Equal(t, http.StatusUnauthorized, status, "no key")
			status, _, _ = get(t, ts.URL+path, http.Header{sv.HeaderAPIKey: {readKey}})
			assert.Equal(t, http.StatusForbidden, status, "a read key")
		})
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ts.URL+"/_preview/events", nil)
	require.NoError(t, err)
	req.Header.Set(sv.HeaderAPIKey, previewKey)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "the write key opens the stream")
	assert.Zero(t, calls.Load())
}

func TestPreviewInvokeGoesThroughTheA2APipeline(t *testing.T) {
	var calls atomic.Int64
	seen := make(chan previewCall, 4)
	ts := previewServer(t, previewAgent(t, &calls, seen), sv.WithLocalMode(true))
	url := ts.URL + "/_preview/" + "api/invoke"

	// Invalid input: the SDK's field errors, and the handler never runs.
	status, ans := postPreview(t, url, map[string]any{"agent": "preview-agent", "surface": "job.start", "action": "job.start",
		"input": map[string]any{"topic": "far too long a topic"}}, nil)
	require.Equal(t, http.StatusOK, status)
	rpcErr := ans["response"].(map[string]any)["error"].(map[string]any)
	assert.EqualValues(t, -32602, rpcErr["code"])
	errs := rpcErr["data"].(map[string]any)["errors"].([]any)
	require.Len(t, errs, 1)
	assert.Equal(t, []any{"input", "topic"}, errs[0].(map[string]any)["loc"])
	assert.Zero(t, calls.Load(), "no request reached the handler")

	// Valid input: a job id and an idempotency key are generated, the
	// handler runs once in the local-mode context.
	body := map[string]any{"agent": "preview-agent", "surface": "job.start", "action": "job.start", "input": map[string]any{"topic": "ok"}}
	_, first := postPreview(t, url, body, nil)
	require.Contains(t, first["response"], "result", "%v", first)
	key, jobID := first["idempotency_key"].(string), first["job_id"].(string)
	require.NotEmpty(t, key)
	require.True(t, strings.HasPrefix(jobID, "job-"))
	assert.Equal(t, false, first["replayed"])
	c := <-seen
	assert.Equal(t, key, c.req.IdempotencyKey)
	assert.Equal(t, jobID, c.req.JobID)
	assert.Equal(t, "local-mode", c.grant, "the handler has the local-mode workspace context")

	// The same key again: the stored result, replayed; the handler does not run.
	body["idempotency_key"], body["job_id"] = key, jobID
	_, second := postPreview(t, url, body, nil)
	assert.Equal(t, true, second["replayed"])
	assert.Equal(t, int64(1), calls.Load())

	// A new submit gets a new key.
	delete(body, "idempotency_key")
	delete(body, "job_id")
	_, third := postPreview(t, url, body, nil)
	assert.NotEqual(t, key, third["idempotency_key"])
	assert.Equal(t, false, third["replayed"])

	// The job started from the preview is in the jobs view.
	_, _, jobs := get(t, ts.URL+"/_preview/"+"jobs", nil)
	assert.Contains(t, jobs, jobID)
}

func TestPreviewRefusesCrossSiteCalls(t *testing.T) {
	var calls atomic.Int64
	ts := previewServer(t, previewAgent(t, &calls, nil), sv.WithLocalMode(true))
	url := ts.URL + "/_preview/" + "api/invoke"
	body := map[string]any{"agent": "preview-agent", "surface": "job.start", "action": "job.start", "input": map[string]any{"topic": "x"}}
	for name, h := range map[string]http.Header{
		"foreign origin":    {"Origin": {"http://attacker.example"}},
		"cross-site fetch":  {"Sec-Fetch-Site": {"cross-site"}},
		"same-site sibling": {"Sec-Fetch-Site": {"same-site"}},
	} {
		status, _ := postPreview(t, url, body, h)
		assert.Equal(t, http.StatusForbidden, status, name)
	}
	resp, err := http.Post(url, "text/plain", strings.NewReader(`{"agent":"preview-agent","action":"job.start"}`))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, "a simple (non-JSON) cross-site form post is refused")
	assert.Zero(t, calls.Load())
}

func TestPreviewRelaysTheEventStream(t *testing.T) {
	var calls atomic.Int64
	ts := previewServer(t, previewAgent(t, &calls, nil), sv.WithLocalMode(true))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ts.URL+"/_preview/"+"events", nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "no key is needed: the stream is relayed in-process")
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, "event: supervaizer.connected\n", line)
}

func TestPreviewURLInTheStartupLog(t *testing.T) {
	var calls atomic.Int64
	for _, tc := range []struct {
		name string
		opts []sv.Option
		want bool
	}{
		{"local mode", []sv.Option{sv.WithLocalMode(true)}, true},
		{"turned off", []sv.Option{sv.WithLocalMode(true), sv.WithPreview(false)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs proctest.Buffer
			opts := append([]sv.Option{sv.WithEnv(emptyEnv), sv.WithLogger(slog.New(slog.NewTextHandler(&logs, nil)))}, tc.opts...)
			srv, err := sv.NewServer([]*sv.Agent{previewAgent(t, &calls, nil)}, opts...)
			require.NoError(t, err)
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			ctx, cancel := context.WithCancel(t.Context())
			served := make(chan error, 1)
			go func() { served <- srv.Serve(ctx, ln) }()
			require.Eventually(t, func() bool { return strings.Contains(logs.String(), "controller ready") }, 10*time.Second, 10*time.Millisecond)
			cancel()
			require.NoError(t, <-served)
			line := `msg="local preview: open it in a browser to see and use the surfaces" url=http://` + ln.Addr().String() + `/_preview/`
			if tc.want {
				assert.Contains(t, logs.String(), line)
			} else {
				assert.NotContains(t, logs.String(), "local preview")
			}
		})
	}
}
