package supervaizer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-chi/chi/v5"

	supervaizer "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/internal/jsonrpc"
	svtest "github.com/supervaize/supervaizer-go/testing"
)

// securityHeaders are the baseline headers of the protocol.
var securityHeaders = map[string]string{
	"X-Content-Type-Options":    "nosniff",
	"X-Frame-Options":           "SAMEORIGIN",
	"Referrer-Policy":           "no-referrer",
	"Strict-Transport-Security": "max-age=63072000; includeSubDomains",
}

// TestBodySizeLimit checks the 413 of the protocol, whatever the
// Content-Length says.
func TestBodySizeLimit(t *testing.T) {
	const limit = 1024
	h := newHarness(t, withServerOptions(supervaizer.WithMaxBodyBytes(limit)))
	tok := "Bearer " + h.validToken()
	valid := rpcBody(t, 1, supervaizer.MethodActionInvoke, actionParams("job.sync", nil))
	require.Less(t, len(valid), limit)
	exact := append(bytes.Clone(valid), bytes.Repeat([]byte(" "), limit-len(valid))...)
	over := append(bytes.Clone(exact), ' ')

	tests := []struct {
		name          string
		body          []byte
		contentLength int64 // as announced; -1: unknown (chunked)
		status        int
		bodyRead      bool // whether the server may read the body at all
	}{
		{"exactly the limit", exact, int64(len(exact)), http.StatusOK, true},
		{"one byte over, announced", over, int64(len(over)), http.StatusRequestEntityTooLarge, false},
		{"far over, announced", bytes.Repeat([]byte("x"), 1<<20), 1 << 20, http.StatusRequestEntityTooLarge, false},
		{"over, length understated", over, 10, http.StatusRequestEntityTooLarge, true},
		{"over, length unknown", over, -1, http.StatusRequestEntityTooLarge, true},
		{"exactly the limit, length unknown", exact, -1, http.StatusOK, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := &readGuard{r: bytes.NewReader(tt.body)}
			r := httptest.NewRequest(http.MethodPost, "http://localhost/a2a", g)
			r.ContentLength = tt.contentLength
			r.Header.Set("Content-Type", "application/json")
			r.Header.Set(supervaizer.HeaderAPIKey, testWriteKey)
			r.Header.Set(supervaizer.HeaderWorkspaceAuthorization, tok)
			w := httptest.NewRecorder()
			h.srv.ServeHTTP(w, r)
			require.Equal(t, tt.status, w.Code, "body: %s", w.Body)
			if tt.status == http.StatusRequestEntityTooLarge {
				assert.JSONEq(t, `{"detail":"Request body too large"}`, w.Body.String())
			} else {
				assert.Nil(t, decodeRPC(t, w).Error)
			}
			if !tt.bodyRead {
				assert.False(t, g.read.Load(), "an announced oversize body must be refused before it is read")
			}
		})
	}

	t.Run("over HTTP", func(t *testing.T) {
		ts, client := newHTTPServer(t, h.srv)
		for name, body := range map[string]io.Reader{
			"with Content-Length": bytes.NewReader(over),
			"chunked":             io.MultiReader(bytes.NewReader(over)), // not a *bytes.Reader: no length
		} {
			req, err := http.NewRequest(http.MethodPost, ts.URL+"/a2a", body)
			require.NoError(t, err)
			req.Header.Set(supervaizer.HeaderAPIKey, testWriteKey)
			resp, err := client.Do(req)
			require.NoError(t, err, name)
			_ = resp.Body.Close()
			assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode, name)
		}
	})
	t.Run("default limit is 4 MiB", func(t *testing.T) {
		d := newHarness(t)
		for length, want := range map[int64]int{4 << 20: http.StatusOK, 4<<20 + 1: http.StatusRequestEntityTooLarge} {
			r := httptest.NewRequest(http.MethodPost, "http://localhost/a2a", strings.NewReader("{}"))
			r.ContentLength = length // announced, refused before the body is read when above the limit
			r.Header.Set(supervaizer.HeaderAPIKey, testWriteKey)
			w := httptest.NewRecorder()
			d.srv.ServeHTTP(w, r)
			assert.Equal(t, want, w.Code, "Content-Length %d", length)
		}
	})
	assert.EqualValues(t, 2, h.calls.Load(), "only the two calls within the limit ran")
}

// TestContentType checks the protocol: JSON or +json, or none at all.
func TestContentType(t *testing.T) {
	h := newHarness(t)
	tok := "Bearer " + h.validToken()
	body := rpcBody(t, 1, supervaizer.MethodActionInvoke, actionParams("job.sync", nil))
	for ct, want := range map[string]int{
		"":                                  http.StatusOK,
		"application/json":                  http.StatusOK,
		"application/json; charset=utf-8":   http.StatusOK,
		"Application/JSON":                  http.StatusOK,
		"application/vnd.api+json":          http.StatusOK,
		"text/plain":                        http.StatusUnsupportedMediaType,
		"application/x-www-form-urlencoded": http.StatusUnsupportedMediaType,
		"not a media type;;":                http.StatusUnsupportedMediaType,
	} {
		r := newRPCRequest(context.Background(), rpcCall{body: body, key: testWriteKey, token: tok})
		if ct == "" {
			r.Header.Del("Content-Type")
		} else {
			r.Header.Set("Content-Type", ct)
		}
		w := httptest.NewRecorder()
		h.srv.ServeHTTP(w, r)
		assert.Equal(t, want, w.Code, "Content-Type %q", ct)
	}
}

// TestSecurityHeaders checks the baseline headers on every kind of response.
func TestSecurityHeaders(t *testing.T) {
	h := newHarness(t, withServerOptions(supervaizer.WithMaxBodyBytes(64)))
	ts, client := newHTTPServer(t, h.srv)
	tok := "Bearer " + h.validToken()
	requests := []struct {
		name, method, path, key string
		body                    string
		status                  int
	}{
		{"agents list", http.MethodGet, "/.well-known/agents.json", "", "", http.StatusOK},
		{"health", http.MethodGet, "/.well-known/health", "", "", http.StatusOK},
		{"card", http.MethodGet, "/.well-known/agents/research-agent_agent.json", "", "", http.StatusOK},
		{"standard card", http.MethodGet, "/.well-known/agent-card.json", "", "", http.StatusOK},
		{"unknown card", http.MethodGet, "/.well-known/agents/nobody_agent.json", "", "", http.StatusNotFound},
		{"unknown path", http.MethodGet, "/nowhere", "", "", http.StatusNotFound},
		{"wrong method", http.MethodGet, "/a2a", testWriteKey, "", http.StatusMethodNotAllowed},
		{"no key", http.MethodPost, "/a2a", "", "{}", http.StatusUnauthorized},
		{"read key", http.MethodPost, "/a2a", testReadKey, "{}", http.StatusForbidden},
		{"too large", http.MethodPost, "/a2a", testWriteKey, strings.Repeat(" ", 65), http.StatusRequestEntityTooLarge},
		{"JSON-RPC error", http.MethodPost, "/a2a", testWriteKey, "[]", http.StatusOK},
		{"events without key", http.MethodGet, "/a2a/events", "", "", http.StatusUnauthorized},
	}
	for _, rq := range requests {
		t.Run(rq.name, func(t *testing.T) {
			req, err := http.NewRequest(rq.method, ts.URL+rq.path, strings.NewReader(rq.body))
			require.NoError(t, err)
			if rq.key != "" {
				req.Header.Set(supervaizer.HeaderAPIKey, rq.key)
			}
			req.Header.Set(supervaizer.HeaderWorkspaceAuthorization, tok)
			resp, err := client.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			assert.Equal(t, rq.status, resp.StatusCode)
			for k, v := range securityHeaders {
				assert.Equal(t, v, resp.Header.Get(k), k)
			}
		})
	}
	t.Run("successful action", func(t *testing.T) {
		w := h.serve(rpcCall{body: []byte(`{"method":"m"}`), key: testWriteKey})
		require.Equal(t, http.StatusOK, w.Code)
		for k, v := range securityHeaders {
			assert.Equal(t, v, w.Header().Get(k), k)
		}
	})
	t.Run("event stream still streams", func(t *testing.T) {
		h := newHarness(t)
		ts, client := newHTTPServer(t, h.srv)
		s := openEvents(t, client, ts.URL, testReadKey, nil)
		require.Equal(t, http.StatusOK, s.resp.StatusCode)
		for k, v := range securityHeaders {
			assert.Equal(t, v, s.resp.Header.Get(k), k)
		}
		assert.Equal(t, "supervaizer.connected", s.next(t).Name)
		require.Nil(t, h.invoke(t, "Bearer "+h.validToken(), actionParams("job.empty", nil)).Error)
		assert.Equal(t, supervaizer.EventEffect, s.nextEffect(t).Name)
	})
	t.Run("can be turned off", func(t *testing.T) {
		off := newHarness(t, withServerOptions(supervaizer.WithSecurityHeaders(false)))
		w := httptest.NewRecorder()
		off.srv.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "http://localhost/.well-known/health", nil))
		require.Equal(t, http.StatusOK, w.Code)
		for k := range securityHeaders {
			assert.Empty(t, w.Header().Get(k), k)
		}
	})
}

// TestNotFoundAndMethodNotAllowed checks the JSON bodies of the router's errors.
func TestNotFoundAndMethodNotAllowed(t *testing.T) {
	h := newHarness(t)
	for _, c := range []struct {
		method, path string
		status       int
		detail       string
	}{
		{http.MethodGet, "/", http.StatusNotFound, "Not Found"},
		{http.MethodGet, "/api/supervaizer/contract", http.StatusNotFound, "Not Found"}, // neither local nor attached
		{http.MethodPut, "/a2a", http.StatusMethodNotAllowed, "Method Not Allowed"},
		{http.MethodPost, "/.well-known/health", http.StatusMethodNotAllowed, "Method Not Allowed"},
	} {
		w := httptest.NewRecorder()
		h.srv.ServeHTTP(w, httptest.NewRequest(c.method, "http://localhost"+c.path, nil))
		assert.Equal(t, c.status, w.Code, "%s %s", c.method, c.path)
		assert.JSONEq(t, `{"detail":"`+c.detail+`"}`, w.Body.String())
	}
}

// TestControllerContractRoute checks GET /api/supervaizer/contract in local mode.
func TestControllerContractRoute(t *testing.T) {
	h := newHarness(t, withoutWorkspaceAuth(), withServerOptions(supervaizer.WithLocalMode(true)))
	get := func(key string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodGet, "http://localhost/api/supervaizer/contract", nil)
		if key != "" {
			r.Header.Set(supervaizer.HeaderAPIKey, key)
		}
		w := httptest.NewRecorder()
		h.srv.ServeHTTP(w, r)
		return w
	}
	assert.Equal(t, http.StatusUnauthorized, get("").Code)
	w := get(testReadKey)
	require.Equal(t, http.StatusOK, w.Code)
	var got map[string]any
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &got))
	assert.Equal(t, "/api", got["api_base_path"])
	assert.Contains(t, got["endpoints"], "CONTROLLER_CONTRACT")
}

// TestServerIdentity checks the server id sources.
func TestServerIdentity(t *testing.T) {
	agents := func(t *testing.T) []*supervaizer.Agent {
		return []*supervaizer.Agent{newTestAgent(t, testAgentName)}
	}
	t.Run("option", func(t *testing.T) {
		srv, err := supervaizer.NewServer(agents(t), supervaizer.WithEnv(emptyEnv), supervaizer.WithServerID("abc"))
		require.NoError(t, err)
		assert.Equal(t, "abc", srv.ServerID(), "any non-blank value, even short")
	})
	t.Run("environment", func(t *testing.T) {
		srv, err := supervaizer.NewServer(agents(t), supervaizer.WithEnv(envOf(map[string]string{"SUPERVAIZER_SERVER_ID": " srv-9 "})))
		require.NoError(t, err)
		assert.Equal(t, "srv-9", srv.ServerID())
	})
	t.Run("generated", func(t *testing.T) {
		srv, err := supervaizer.NewServer(agents(t), supervaizer.WithEnv(emptyEnv))
		require.NoError(t, err)
		assert.Regexp(t, `^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`, srv.ServerID())
	})
	t.Run("tokens are bound to it", func(t *testing.T) {
		h := newHarness(t, withServerOptions(supervaizer.WithServerID("studio-server-2")))
		resp := h.invoke(t, "Bearer "+h.validToken(), actionParams("job.sync", nil))
		require.NotNil(t, resp.Error)
		assert.JSONEq(t, `{"code":"workspace_authorization_wrong_audience"}`, string(resp.Error.Data))
	})
}

// TestNewServerErrors checks configuration errors that stop startup.
func TestNewServerErrors(t *testing.T) {
	a := newTestAgent(t, testAgentName)
	tests := []struct {
		name   string
		agents []*supervaizer.Agent
		opts   []supervaizer.Option
		want   string
	}{
		{"no agent", nil, nil, "at least one agent"},
		{"nil agent", []*supervaizer.Agent{nil}, nil, "agents[0] is nil"},
		{"duplicate slug", []*supervaizer.Agent{a, newTestAgent(t, testAgentName)}, nil, `"research-agent"`},
		{"unknown primary", []*supervaizer.Agent{a}, []supervaizer.Option{supervaizer.WithPrimaryAgent("nobody")}, `"nobody"`},
		{"bad body limit", []*supervaizer.Agent{a}, []supervaizer.Option{supervaizer.WithMaxBodyBytes(0)}, "WithMaxBodyBytes"},
		{"bad public URL", []*supervaizer.Agent{a}, []supervaizer.Option{supervaizer.WithPublicURL("ftp://x")}, "public URL"},
		{"auth without issuer", []*supervaizer.Agent{a}, []supervaizer.Option{supervaizer.WithWorkspaceAuth(supervaizer.WorkspaceAuthSettings{Enabled: true, PublicKeyPEM: svtest.NewFakeStudio(t).PublicKeyPEM()})}, "ISSUER"},
		{"auth with a bad key", []*supervaizer.Agent{a}, []supervaizer.Option{supervaizer.WithWorkspaceAuth(supervaizer.WorkspaceAuthSettings{Enabled: true, Issuer: testIssuer, PublicKeyPEM: "nope"})}, "PUBLIC_KEY"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := append([]supervaizer.Option{supervaizer.WithEnv(emptyEnv), supervaizer.WithServerID(testServerID)}, tt.opts...)
			_, err := supervaizer.NewServer(tt.agents, opts...)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

// TestA2AServedAlikeRoutedOrNot checks that POST /a2a answers the same whether
// ServeHTTP serves it directly or through the router (the server mounted under
// a parent chi router), with the security headers on and off.
func TestA2AServedAlikeRoutedOrNot(t *testing.T) {
	for _, headers := range []bool{true, false} {
		h := newHarness(t, withServerOptions(supervaizer.WithSecurityHeaders(headers)))
		parent := chi.NewRouter()
		parent.Mount("/ctl", h.srv)
		valid := rpcBody(t, 1, supervaizer.MethodActionInvoke, actionParams("job.empty", nil))
		for _, tt := range []struct {
			name   string
			call   rpcCall
			status int
		}{
			{"valid call", rpcCall{body: valid, key: testWriteKey, token: "Bearer " + h.validToken()}, http.StatusOK},
			{"read key", rpcCall{body: valid, key: testReadKey}, http.StatusForbidden},
			{"no key", rpcCall{body: valid}, http.StatusUnauthorized},
		} {
			t.Run(fmt.Sprintf("%s, headers %v", tt.name, headers), func(t *testing.T) {
				direct := h.serve(tt.call)
				routed := httptest.NewRecorder()
				r := newRPCRequest(context.Background(), tt.call)
				r.URL.Path, r.RequestURI = "/ctl/a2a", "/ctl/a2a"
				parent.ServeHTTP(routed, r)
				require.Equal(t, tt.status, direct.Code, direct.Body.String())
				assert.Equal(t, direct.Code, routed.Code)
				assert.Equal(t, direct.Header(), routed.Header())
				assert.JSONEq(t, direct.Body.String(), routed.Body.String())
				for k, v := range securityHeaders {
					if !headers {
						v = ""
					}
					assert.Equal(t, v, direct.Header().Get(k), k)
				}
			})
		}
	}
}

// TestMethodNamesMatchTheParser: the public method names are the ones the
// dispatcher's parser recognizes.
func TestMethodNamesMatchTheParser(t *testing.T) {
	assert.Equal(t, jsonrpc.MethodActionInvoke, supervaizer.MethodActionInvoke)
	assert.Equal(t, jsonrpc.MethodSurfaceLoad, supervaizer.MethodSurfaceLoad)
}
