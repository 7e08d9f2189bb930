package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	sv "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/a2ui"
)

// testAgent is the agent of the in-process controllers: job.start with a
// form, as supervaizer new writes it.
func testAgent(t *testing.T) *sv.Agent {
	t.Helper()
	type startInput struct {
		Name string `json:"name" sv:"nonblank"`
	}
	agent, err := sv.NewAgent(sv.AgentSpec{Name: "Test Agent", Version: "1.2.3"})
	require.NoError(t, err)
	agent.HandleSurface("job.start", sv.StaticSurface(a2ui.NewForm("test-agent.start", "Start", "job.start",
		a2ui.StringField("name", "Name", a2ui.Required()))))
	sv.HandleActionFor(agent, "job.start", func(_ context.Context, req *sv.ActionRequest, in startInput) (*sv.ActionResult, error) {
		return sv.OK(sv.JobStarted(req.JobID, map[string]any{"greeting": "Hello, " + in.Name})), nil
	})
	return agent
}

// startController serves testAgent in-process with the environment env and
// a heartbeat every 100 ms, wrapped by wrap when not nil, and returns its URL.
func startController(t *testing.T, env map[string]string, wrap func(http.Handler) http.Handler) string {
	t.Helper()
	srv, err := sv.NewServer([]*sv.Agent{testAgent(t)}, sv.WithEnv(func(k string) string { return env[k] }),
		sv.WithSSEHeartbeat(100*time.Millisecond))
	require.NoError(t, err)
	require.NoError(t, srv.Start(t.Context()))
	h := srv.NewHTTPServer().Handler
	if wrap != nil {
		h = wrap(h)
	}
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) }) // runs first: closes the event streams
	return hs.URL
}

// localEnv is a controller in local mode.
var localEnv = map[string]string{"SUPERVAIZER_LOCAL_MODE": "true"}

// standaloneEnv is docs/deploying.md's standalone controller trusting the
// public key beside priv, with token's defaults.
func standaloneEnv(t *testing.T, priv string) map[string]string {
	t.Helper()
	pub, err := os.ReadFile(publicKeyFile(priv))
	require.NoError(t, err)
	return map[string]string{
		"SUPERVAIZER_API_KEY": "check-test-key", "SUPERVAIZER_SERVER_ID": defaultServerID,
		"SUPERVAIZER_WORKSPACE_AUTH_REQUIRED": "true", "SUPERVAIZER_WORKSPACE_AUTH_ISSUER": defaultIssuer,
		"SUPERVAIZER_WORKSPACE_AUTH_PUBLIC_KEY": string(pub), "SUPERVAIZER_STUDIO_AGENT_ID": defaultStudioAgentID,
	}
}

// runCheckJSON runs check -json with args and returns its exit status and
// the status of each case by name.
func runCheckJSON(t *testing.T, args ...string) (int, map[string]caseResult, report) {
	t.Helper()
	out, errOut, code := cli(t, append([]string{"check", "-json"}, args...)...)
	var r report
	require.NoError(t, json.Unmarshal([]byte(out), &r), "stdout:\n%s\nstderr:\n%s", out, errOut)
	byName := map[string]caseResult{}
	for _, c := range r.Cases {
		require.NotContains(t, byName, c.Name, "one line per case")
		byName[c.Name] = c
	}
	return code, byName, r
}

// failed returns the names of the failed cases.
func failed(cases map[string]caseResult) []string {
	var out []string
	for _, n := range slices.Sorted(maps.Keys(cases)) {
		if cases[n].Status == statusFail {
			out = append(out, n)
		}
	}
	return out
}

// faulty breaks three answers of a conforming controller: the unknown
// method's error code, the job.start surface result (its document becomes a
// string) and the event stream, which never sends a heartbeat.
func faulty(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/a2a/events" && r.Header.Get("X-API-Key") == "local-dev" {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, "event: supervaizer.connected\ndata: {\"status\":\"connected\"}\n\n")
			w.(http.Flusher).Flush()
			<-r.Context().Done()
			return
		}
		if r.URL.Path != "/a2a" || r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		var env struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.Unmarshal(body, &env)
		if env.Method == "supervaizer/check.unknown" && r.Header.Get("X-API-Key") == "local-dev" {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(env.ID)+`,"error":{"code":-32600,"message":"Invalid Request"}}`)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		out := rec.Body.Bytes()
		if env.Method == "supervaizer/surface.load" {
			out = bytes.Replace(out, []byte(`"document":{`), []byte(`"document":"broken","was":{`), 1)
		}
		maps.Copy(w.Header(), rec.Header())
		w.Header().Del("Content-Length")
		w.WriteHeader(rec.Code)
		_, _ = w.Write(out)
	})
}

// TestCheckNamesTheFaults: against a controller with deliberate faults
// check exits 1 and fails exactly the faulty cases, naming them; against the
// same controller without the faults every case passes.
func TestCheckNamesTheFaults(t *testing.T) {
	t.Parallel()
	t.Run("conforming", func(t *testing.T) {
		t.Parallel()
		url := startController(t, localEnv, nil)
		code, cases, r := runCheckJSON(t, "-api-key", "local-dev", "-write", "-heartbeat-wait", "2s", url)
		assert.Equal(t, 0, code)
		assert.Empty(t, failed(cases))
		for _, n := range []string{"discovery.agents", "card.versioned:test-agent", "card.unversioned:test-agent", "health",
			"rpc.missing-key", "rpc.wrong-key", "events.missing-key", "rpc.parse-error", "rpc.invalid-request", "rpc.unknown-method",
			"surface.load:test-agent/job.start", "job.start:test-agent", "job.start.replay:test-agent", "job.start.conflict:test-agent",
			"events.connected", "events.effect:test-agent", "events.heartbeat"} {
			assert.Equal(t, statusPass, cases[n].Status, "%s: %s", n, cases[n].Detail)
		}
		assert.Equal(t, 6, r.Skipped, "the token cases, without -key")
		for n, c := range cases {
			if c.Status == statusSkip {
				assert.True(t, strings.HasPrefix(n, "token."), n)
				assert.Contains(t, c.Detail, "no -key FILE")
			}
		}
	})
	t.Run("faulty", func(t *testing.T) {
		t.Parallel()
		url := startController(t, localEnv, faulty)
		code, cases, _ := runCheckJSON(t, "-api-key", "local-dev", "-heartbeat-wait", "500ms", url)
		assert.Equal(t, 1, code)
		assert.Equal(t, []string{"events.heartbeat", "rpc.unknown-method", "surface.load:test-agent/job.start"}, failed(cases))
		assert.Contains(t, cases["rpc.unknown-method"].Detail, "error -32600")
		assert.Contains(t, cases["surface.load:test-agent/job.start"].Detail, "SurfaceResult contract")
		assert.Contains(t, cases["events.heartbeat"].Detail, "no supervaizer.heartbeat")

		out, _, code := cli(t, "check", "-api-key", "local-dev", "-heartbeat-wait", "500ms", url)
		assert.Equal(t, 1, code)
		assert.Contains(t, out, "FAIL    rpc.unknown-method: ")
		assert.Contains(t, out, "failed: rpc.unknown-method, surface.load:test-agent/job.start, events.heartbeat\n")
		assert.Regexp(t, `check http://\S+: 1\d passed, 3 failed, \d+ skipped\n`, out)
	})
}

// TestCheckTokenCases: with -key the token cases run against a standalone
// controller trusting keygen's key; a good token refused fails every token
// case; a controller that accepts any token (local mode) fails the bad ones.
func TestCheckTokenCases(t *testing.T) {
	t.Parallel()
	priv := keygen(t)
	url := startController(t, standaloneEnv(t, priv), nil)
	tokenNames := []string{"token.good", "token.missing", "token.expired", "token.wrong-audience", "token.wrong-scope", "token.other-workspace"}

	t.Run("accepted then refused", func(t *testing.T) {
		t.Parallel()
		code, cases, _ := runCheckJSON(t, "-api-key", "check-test-key", "-key", priv, "-write", "-heartbeat-wait", "2s", url)
		assert.Equal(t, 0, code)
		assert.Empty(t, failed(cases))
		for _, n := range tokenNames {
			assert.Equal(t, statusPass, cases[n].Status, n)
		}
		assert.Equal(t, "-32030 workspace_authorization_wrong_audience", cases["token.wrong-audience"].Detail)
		assert.Equal(t, statusPass, cases["job.start.conflict:test-agent"].Status)
	})
	t.Run("good token refused", func(t *testing.T) {
		t.Parallel()
		code, cases, _ := runCheckJSON(t, "-api-key", "check-test-key", "-key", priv, "-issuer", "someone-else", "-heartbeat-wait", "2s", url)
		assert.Equal(t, 1, code)
		assert.Contains(t, cases["token.good"].Detail, "workspace_authorization_wrong_issuer")
		for _, n := range tokenNames {
			assert.Equal(t, statusFail, cases[n].Status, n)
		}
		assert.Contains(t, cases["token.expired"].Detail, "not tried: the good token was refused")
	})
	t.Run("without -key", func(t *testing.T) {
		t.Parallel()
		code, cases, _ := runCheckJSON(t, "-api-key", "check-test-key", "-heartbeat-wait", "2s", url)
		assert.Equal(t, 0, code)
		assert.Equal(t, statusSkip, cases["surface.load:test-agent/job.start"].Status)
		assert.Contains(t, cases["surface.load:test-agent/job.start"].Detail, "workspace_authorization_missing")
	})
	t.Run("a controller that verifies nothing", func(t *testing.T) {
		t.Parallel()
		local := startController(t, localEnv, nil)
		code, cases, _ := runCheckJSON(t, "-api-key", "local-dev", "-key", priv, "-heartbeat-wait", "2s", local)
		assert.Equal(t, 1, code)
		assert.Equal(t, statusPass, cases["token.good"].Status)
		for _, n := range tokenNames[1:] {
			assert.Equal(t, statusFail, cases[n].Status, n)
			assert.Contains(t, cases[n].Detail, "accepted, want -32030", n)
		}
	})
}

func TestReadEvents(t *testing.T) {
	t.Parallel()
	in := ": ping\r\nid: 7\r\nevent: supervaizer.effect\r\ndata: {\"a\":\r\ndata: 1}\r\n\r\nevent: supervaizer.heartbeat\ndata: {\"status\":\"ok\"}\n\n"
	var got []sseEvent
	readEvents(strings.NewReader(in), func(e sseEvent) bool { got = append(got, e); return true })
	require.Len(t, got, 2)
	assert.Equal(t, "7", got[0].id)
	assert.Equal(t, "supervaizer.effect", got[0].name)
	assert.JSONEq(t, `{"a":1}`, string(got[0].data))
	assert.Equal(t, "supervaizer.heartbeat", got[1].name)
}

func TestStartInput(t *testing.T) {
	t.Parallel()
	form := json.RawMessage(`{"type":"Form","fields":[{"id":"a","type":"string","required":true},{"id":"b","type":"number","required":true},
		{"id":"c","type":"select","required":true,"options":[{"value":"x"},{"value":"y"}]},{"id":"d","type":"string"}]}`)
	in := startInput(form)
	assert.Equal(t, map[string]any{"a": "supervaizer-check", "b": 1, "c": "x"}, in)
	assert.Equal(t, map[string]any{"a": "supervaizer-check-conflict", "b": 1, "c": "x"}, conflicting(in))
	assert.Equal(t, map[string]any{"supervaizer_check": "conflict"}, conflicting(startInput(nil)))
}

// FuzzReadEvents: the event-stream parser never panics, and every event it
// emits has a name without a line break.
func FuzzReadEvents(f *testing.F) {
	f.Add("event: supervaizer.connected\ndata: {\"status\":\"connected\"}\n\n")
	f.Add(": ping\r\nid: 1\r\nevent: x\r\ndata: a\r\ndata: b\r\n\r\n")
	f.Add("data\n\nevent\n\n:\n")
	f.Fuzz(func(t *testing.T, in string) {
		readEvents(strings.NewReader(in), func(e sseEvent) bool {
			assert.NotEmpty(t, e.name)
			assert.NotContains(t, e.name, "\n")
			return true
		})
	})
}

// rewrite answers like next, with from replaced by to in the answers to
// requests on path whose body contains marker ("" for any body).
func rewrite(path, marker, from, to string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			if r.URL.Path != path || !bytes.Contains(body, []byte(marker)) {
				next.ServeHTTP(w, r)
				return
			}
			rec := httptest.NewRecorder()
			next.ServeHTTP(rec, r)
			maps.Copy(w.Header(), rec.Header())
			w.Header().Del("Content-Length")
			w.WriteHeader(rec.Code)
			_, _ = w.Write(bytes.ReplaceAll(rec.Body.Bytes(), []byte(from), []byte(to)))
		})
	}
}

// TestCheckFailsEachFault: each fault of a controller fails the case that
// checks it, and only that one.
func TestCheckFailsEachFault(t *testing.T) {
	t.Parallel()
	var served atomicCounter
	tests := []struct {
		name   string
		wrap   func(http.Handler) http.Handler
		failed []string
		detail string
	}{
		{"unversioned card differs", rewrite("/.well-known/agents/test-agent_agent.json", "", `"Test Agent"`, `"Other Agent"`),
			[]string{"card.unversioned:test-agent"}, "differs from the versioned card"},
		{"health status outside the spec", rewrite("/.well-known/health", "", `"status":"available"`, `"status":"fine"`),
			[]string{"health"}, `status "fine"`},
		{"an unknown key answered 403", func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if k := r.Header.Get("X-API-Key"); k != "" && k != "local-dev" {
					http.Error(w, `{"detail":"Insufficient scope"}`, http.StatusForbidden)
					return
				}
				next.ServeHTTP(w, r)
			})
		}, []string{"rpc.wrong-key"}, "HTTP 403"},
		{"a parse error answered -32600", rewrite("/a2a", `"check-1",`, `-32700`, `-32600`), []string{"rpc.parse-error"}, "error -32600"},
		{"invalid params answered without errors", rewrite("/a2a", `"request_id":"check-5"`, `"data":{"errors"`, `"data":{"problems"`),
			[]string{"rpc.invalid-params"}, `want {"errors"`},
		{"a replay answered anew", func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				rewrite("/a2a", `"action":"job.start"`, `"status":"ok"`, fmt.Sprintf(`"status":"ok","served":%d`, served.next()))(next).ServeHTTP(w, r)
			})
		}, []string{"job.start.replay:test-agent"}, "differs from the first one's"},
		{"a conflict not detected", rewrite("/a2a", `-conflict"`, `idempotency_conflict`, `other_error`),
			[]string{"job.start.conflict:test-agent"}, "want error idempotency_conflict"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			url := startController(t, localEnv, tt.wrap)
			code, cases, _ := runCheckJSON(t, "-api-key", "local-dev", "-write", "-heartbeat-wait", "2s", url)
			assert.Equal(t, 1, code)
			require.Equal(t, tt.failed, failed(cases))
			assert.Contains(t, cases[tt.failed[0]].Detail, tt.detail)
		})
	}
}

// atomicCounter counts calls.
type atomicCounter struct{ n atomic.Int64 }

func (c *atomicCounter) next() int64 { return c.n.Add(1) }
