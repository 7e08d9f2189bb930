package supervaizer_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	supervaizer "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/studio"
)

// TestAPIKeyCheckedBeforeBody checks the protocol: a missing, unknown or
// under-scoped key is a plain HTTP 401/403 with an exact body, decided before
// anything reads the request body, and no handler runs.
func TestAPIKeyCheckedBeforeBody(t *testing.T) {
	h := newHarness(t)
	tok := "Bearer " + h.validToken()
	valid := rpcBody(t, 1, supervaizer.MethodActionInvoke, actionParams("job.sync", nil))
	tests := []struct {
		name   string
		key    []string // X-API-Key values; nil sends none
		body   []byte
		status int
		detail string
	}{
		{"missing key", nil, valid, http.StatusUnauthorized, `{"detail":"Invalid or missing API key"}`},
		{"empty key", []string{""}, valid, http.StatusUnauthorized, `{"detail":"Invalid or missing API key"}`},
		{"unknown key", []string{"not-the-key"}, valid, http.StatusUnauthorized, `{"detail":"Invalid or missing API key"}`},
		{"key with a suffix", []string{testWriteKey + "x"}, valid, http.StatusUnauthorized, `{"detail":"Invalid or missing API key"}`},
		{"key prefix", []string{testWriteKey[:4]}, valid, http.StatusUnauthorized, `{"detail":"Invalid or missing API key"}`},
		{"non-ASCII key", []string{"clé-secrète-€"}, valid, http.StatusUnauthorized, `{"detail":"Invalid or missing API key"}`},
		{"invalid UTF-8 key", []string{"\xff\xfe"}, valid, http.StatusUnauthorized, `{"detail":"Invalid or missing API key"}`},
		{"key in another letter case", []string{strings.ToUpper(testWriteKey)}, valid, http.StatusUnauthorized, `{"detail":"Invalid or missing API key"}`},
		{"malformed body without key", nil, []byte(`{not json`), http.StatusUnauthorized, `{"detail":"Invalid or missing API key"}`},
		{"read key on POST /a2a", []string{testReadKey}, valid, http.StatusForbidden, `{"detail":"Insufficient scope"}`},
		{"read key, malformed body", []string{testReadKey}, []byte(`{not json`), http.StatusForbidden, `{"detail":"Insufficient scope"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := &readGuard{r: bytes.NewReader(tt.body)}
			r := httptest.NewRequest(http.MethodPost, "/a2a", g)
			r.Header.Set("Content-Type", "application/json")
			r.Header.Set(supervaizer.HeaderWorkspaceAuthorization, tok)
			if tt.key != nil {
				r.Header[http.CanonicalHeaderKey(supervaizer.HeaderAPIKey)] = tt.key
			}
			w := httptest.NewRecorder()
			h.srv.ServeHTTP(w, r)
			assert.Equal(t, tt.status, w.Code)
			assert.Equal(t, tt.detail, w.Body.String())
			assert.Equal(t, "application/json", w.Header().Get("Content-Type"))
			assert.False(t, g.read.Load(), "the body was read before the key was checked")
		})
	}
	assert.Zero(t, h.calls.Load())
}

// TestAPIKeyScopes checks that write satisfies read and not the reverse.
func TestAPIKeyScopes(t *testing.T) {
	h := newHarness(t)
	ts, client := newHTTPServer(t, h.srv)
	tok := "Bearer " + h.validToken()

	t.Run("write key invokes", func(t *testing.T) {
		resp := h.invoke(t, tok, actionParams("job.sync", nil))
		assert.Nil(t, resp.Error)
	})
	for _, key := range []string{testReadKey, testWriteKey} {
		t.Run("events with the "+key, func(t *testing.T) {
			s := openEvents(t, client, ts.URL, key, nil)
			require.Equal(t, http.StatusOK, s.resp.StatusCode)
			assert.Equal(t, "supervaizer.connected", s.next(t).Name)
			s.close()
		})
	}
	for _, c := range []struct {
		name, key string
	}{{"no key", ""}, {"unknown key", "nope"}} {
		t.Run("events with "+c.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, ts.URL+"/a2a/events", nil)
			require.NoError(t, err)
			if c.key != "" {
				req.Header.Set(supervaizer.HeaderAPIKey, c.key)
			}
			resp, err := client.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
			assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
		})
	}
	t.Run("several keys of each scope", func(t *testing.T) {
		h2 := newHarness(t, withServerOptions(supervaizer.WithAPIKey("second-write", supervaizer.ScopeWrite), supervaizer.WithAPIKey("second-read", supervaizer.ScopeRead)))
		for key, want := range map[string]int{testWriteKey: 200, "second-write": 200, testReadKey: 403, "second-read": 403, "third": 401} {
			w := h2.serve(rpcCall{body: rpcBody(t, 1, supervaizer.MethodActionInvoke, actionParams("job.sync", nil)), key: key, token: "Bearer " + h2.validToken()})
			assert.Equal(t, want, w.Code, key)
		}
		assert.Equal(t, testWriteKey, h2.srv.APIKey(), "the first write key is the effective key")
	})
}

// TestAPIKeyDefaults checks the protocol: a generated key, the
// environment key and the local-mode key.
func TestAPIKeyDefaults(t *testing.T) {
	agent := func(t *testing.T) []*supervaizer.Agent {
		return []*supervaizer.Agent{newTestAgent(t, testAgentName)}
	}

	t.Run("generated key", func(t *testing.T) {
		srv, err := supervaizer.NewServer(agent(t), supervaizer.WithEnv(emptyEnv), supervaizer.WithServerID(testServerID))
		require.NoError(t, err)
		key := srv.APIKey()
		assert.Regexp(t, `^[A-Za-z0-9_-]{43}$`, key)
		other, err := supervaizer.NewServer(agent(t), supervaizer.WithEnv(emptyEnv), supervaizer.WithServerID(testServerID))
		require.NoError(t, err)
		assert.NotEqual(t, key, other.APIKey(), "every generated key is random")
	})
	t.Run("environment key", func(t *testing.T) {
		srv, err := supervaizer.NewServer(agent(t), supervaizer.WithServerID(testServerID),
			supervaizer.WithEnv(envOf(map[string]string{"SUPERVAIZER_API_KEY": "env-key"})))
		require.NoError(t, err)
		assert.Equal(t, "env-key", srv.APIKey())
	})
	t.Run("local mode key", func(t *testing.T) {
		srv, err := supervaizer.NewServer(agent(t), supervaizer.WithEnv(emptyEnv), supervaizer.WithLocalMode(true), supervaizer.WithServerID(testServerID))
		require.NoError(t, err)
		assert.Equal(t, supervaizer.LocalModeAPIKey, srv.APIKey())
	})
	t.Run("fingerprint", func(t *testing.T) {
		assert.Equal(t, "215345834bf2", studio.KeyFingerprint("example-controller-key"))
	})
	t.Run("invalid keys fail startup", func(t *testing.T) {
		for name, opt := range map[string]supervaizer.Option{
			"blank key":     supervaizer.WithAPIKey("  ", supervaizer.ScopeWrite),
			"unknown scope": supervaizer.WithAPIKey("k", supervaizer.KeyScope("admin")),
			"no write key":  supervaizer.WithAPIKey("read-only", supervaizer.ScopeRead),
		} {
			_, err := supervaizer.NewServer(agent(t), supervaizer.WithEnv(emptyEnv), supervaizer.WithServerID(testServerID), opt)
			assert.Error(t, err, name)
		}
	})
}
