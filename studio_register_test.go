package supervaizer

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/contracts"
)

var macURI = regexp.MustCompile(`^server:[0-9A-F]{2}(-[0-9A-F]{2}){5}$`)

func TestStudioStartupHappyPath(t *testing.T) {
	t.Parallel()
	f := newFakeStudio(t)
	srv, sink := studioServer(t, f, nil)
	a, _ := srv.Agent(stAgentSlug)
	a.HandleAction("job.start", func(context.Context, *ActionRequest) (*ActionResult, error) {
		return OK(JobStarted("job-1", nil)), nil
	})
	require.Same(t, srv.Account(), srv.studio.account)

	require.NoError(t, srv.Start(context.Background()))

	reqs := f.recorded()
	require.Len(t, reqs, 2, "server.register, then one agent lookup")
	reg := reqs[0]
	assert.Equal(t, stEventsPath, reg.Path)
	assert.Equal(t, "Api-Key "+stAccountKey, reg.Header.Get("Authorization"))
	body := reg.json(t)
	assert.Equal(t, "server.register", body["event_type"])
	assert.Equal(t, "server", body["object_type"])
	assert.Equal(t, stWorkspace, body["workspace"])
	details := body["details"].(map[string]any)
	assert.Equal(t, stLocalServer, details["server_id"])
	assert.Equal(t, stControllerKey, details["api_key"], "the effective controller key is sent")
	assert.Regexp(t, macURI, details["uri"])
	assert.Equal(t, map[string]any{"server": details["uri"]}, body["source"])

	// The handshake linked the agent, so the lookup goes by Studio id.
	assert.Equal(t, "/w/ws-1/api/v1/agents/"+stStudioAgent, reqs[1].Path)
	assert.Equal(t, http.MethodGet, reqs[1].Method)
	id, ok := a.StudioAgentID()
	require.True(t, ok)
	assert.Equal(t, stStudioAgent, id)
	sa, ok := srv.Account().StudioAgent(stAgentSlug)
	require.True(t, ok)
	assert.Equal(t, StudioAgent{ID: stStudioAgent, Status: "active", OnboardingStatus: "pending"}, sa)

	// Studio's audience is adopted: its tokens carry Studio's server id, not the local one.
	status, resp := stInvoke(t, srv, stToken(t, nil))
	require.Equal(t, http.StatusOK, status)
	require.Nil(t, resp["error"], resp)
	assert.Equal(t, "ok", resp["result"].(map[string]any)["status"])

	_, resp = stInvoke(t, srv, stToken(t, func(c map[string]any) {
		c["aud"], c["server_id"] = "supervaizer-server:"+stLocalServer, stLocalServer
	}))
	require.NotNil(t, resp["error"], "the local audience is replaced by Studio's")
	_, resp = stInvoke(t, srv, stToken(t, func(c map[string]any) { c["agent_id"] = "studio-agent-other" }))
	require.NotNil(t, resp["error"], "the agent_id claim must be the linked Studio id")

	logs := sink.String()
	assert.Contains(t, logs, "registered with Studio")
	assert.Contains(t, logs, "server_id="+stStudioServer)
	assert.Contains(t, logs, "api_key_fingerprint="+KeyFingerprint(stControllerKey))
	assertNoSecrets(t, logs)

	require.NoError(t, srv.Start(context.Background()))
	assert.Len(t, f.recorded(), 2, "Start registers once")
}

func TestServerRegisterGolden(t *testing.T) {
	t.Parallel()
	f := newFakeStudio(t)
	full := stAgent(t, stAgentName, func(s *AgentSpec) {
		s.Author, s.Developer, s.Tags = "Supervaize", "Alan Turing", []string{"research", "briefs"}
		s.ReleaseNotesURL = "https://example.com/research-agent/releases"
		s.Introduction = &contracts.Introduction{Tagline: "Sourced briefs", Summary: "Turns a question into a sourced brief.", ExampleGoals: []string{"Brief me on EU AI rules"}}
		s.FullDescription = &contracts.FullDescription{Content: "# Research Agent\nReads, cites, summarises."}
		s.BillingCatalog = contracts.BillingCatalog{{SKU: "brief_generated", Unit: "brief", Description: "One generated brief"}}
	})
	minimal, err := NewAgent(AgentSpec{Name: "Minimal Agent", Version: "0.1.0", BillingCatalog: contracts.BillingCatalog{}})
	require.NoError(t, err)
	f.setHandshake(func(hs map[string]any) {
		hs["workspace_authorization"].(map[string]any)["agents"] = []any{
			map[string]any{"id": stStudioAgent, "slug": stAgentSlug}, map[string]any{"id": "studio-agent-43", "slug": "minimal-agent"},
		}
	})
	srv, _ := studioServer(t, f, []*Agent{full, minimal}, WithEnv(func(k string) string {
		return map[string]string{"SUPERVAIZER_SERVER_ID": stLocalServer, EnvEnvironment: "staging"}[k]
	}))

	payloads, err := json.Marshal([]agentRegistration{srv.agentRegistration(full), srv.agentRegistration(minimal)})
	require.NoError(t, err)
	studioGolden(t, "agent_registration.golden.json", payloads)

	require.NoError(t, srv.Start(context.Background()))
	body := f.recorded()[0].Body
	require.Regexp(t, macURI, srv.studio.uri)
	require.Equal(t, 2, bytes.Count(body, []byte(`"`+srv.studio.uri+`"`)), "source.server and details.uri")
	// The host's MAC varies: the golden file has the spec's example address.
	studioGolden(t, "server_register.golden.json", bytes.ReplaceAll(body, []byte(srv.studio.uri), []byte("server:00-1A-2B-3C-4D-5E")))
	var event map[string]any
	require.NoError(t, json.Unmarshal(body, &event))
	details := event["details"].(map[string]any)

	contract, err := json.Marshal(ControllerContract())
	require.NoError(t, err)
	sent, err := json.Marshal(map[string]any{"controller_contract_version": details["controller_contract_version"],
		"api_base_path": details["api_base_path"], "endpoints": details["endpoints"]})
	require.NoError(t, err)
	assert.JSONEq(t, string(contract), string(sent), "server.register sends the served controller contract")

	// After the handshake and lookup, a refresh sends the Studio ids and statuses.
	again := srv.agentRegistration(full)
	require.NotNil(t, again.ServerAgentID)
	assert.Equal(t, stStudioAgent, *again.ServerAgentID)
	assert.Equal(t, "active", *again.ServerAgentStatus)
	assert.Equal(t, "pending", *again.ServerAgentOnboardingStatus)
}

func TestHandshakeFailures(t *testing.T) {
	t.Parallel()
	bindings := func(b ...any) func(hs map[string]any) {
		return func(hs map[string]any) { hs["workspace_authorization"].(map[string]any)["agents"] = b }
	}
	waSet := func(k string, v any) func(hs map[string]any) {
		return func(hs map[string]any) { hs["workspace_authorization"].(map[string]any)[k] = v }
	}
	tests := []struct {
		name     string
		raw      string                  // the whole server.register answer, when set
		edit     func(hs map[string]any) // else: an edit of the default handshake
		agents   []string                // extra local agents besides research-agent
		prelink  string                  // Studio id already linked to research-agent
		opts     []Option
		want     []string
		wantLogs []string
	}{
		{name: "body not an object", raw: `["srv_01"]`, want: []string{"not a JSON object", "cannot be verified"}},
		{name: "body null", raw: `null`, want: []string{"not a JSON object"}},
		{name: "no handshake", raw: `{"id":"srv_01","status":"registered"}`,
			want: []string{"no supervaizer_handshake object", "top-level keys received: [id, status]", "SUPERVAIZE_API_URL"}},
		{name: "handshake not an object", raw: `{"supervaizer_handshake":"v2"}`,
			want: []string{"no supervaizer_handshake object", "[supervaizer_handshake]"}},
		{name: "key mismatch", edit: func(hs map[string]any) {
			hs["controller_api_key_match"] = false
			hs["stored_controller_api_key_fingerprint"] = "000000000000"
			hs["reason"] = "stored_controller_api_key_mismatch"
		}, want: []string{"did not confirm it stored this controller's API key", "stored_controller_api_key_mismatch",
			KeyFingerprint(stControllerKey), "000000000000"},
			wantLogs: []string{"api_key_fingerprint=" + KeyFingerprint(stControllerKey), "stored_controller_api_key_fingerprint=000000000000",
				"reason=stored_controller_api_key_mismatch", "server_id=" + stStudioServer}},
		{name: "key match not exactly true", edit: func(hs map[string]any) { hs["controller_api_key_match"] = "true" },
			want: []string{"controller_api_key_match is not true"}},
		{name: "key match missing", edit: func(hs map[string]any) { delete(hs, "controller_api_key_match") },
			want: []string{"controller_api_key_match is not true"}},
		{name: "workspace_authorization missing", edit: func(hs map[string]any) { delete(hs, "workspace_authorization") },
			want: []string{"workspace_authorization is missing or not an object"}},
		{name: "workspace_authorization not an object", edit: func(hs map[string]any) { hs["workspace_authorization"] = []any{} },
			want: []string{"workspace_authorization is missing or not an object"}},
		{name: "audience missing", edit: func(hs map[string]any) { delete(hs["workspace_authorization"].(map[string]any), "audience") },
			want: []string{"audience is missing, not a string or blank"}},
		{name: "audience blank", edit: waSet("audience", "  "), want: []string{"audience is missing, not a string or blank"}},
		{name: "audience not a string", edit: waSet("audience", 7), want: []string{"audience is missing, not a string or blank"}},
		{name: "local audience differs",
			opts: []Option{WithWorkspaceAuth(WorkspaceAuthSettings{Enabled: true, Issuer: stIssuer, PublicKeyPEM: stSigningPEM, Audience: "supervaizer-server:mine"})},
			want: []string{`configured workspace audience (SUPERVAIZER_WORKSPACE_AUTH_AUDIENCE) "supervaizer-server:mine" differs from Studio's "` + stAudience + `"`}},
		{name: "agents missing", edit: func(hs map[string]any) { delete(hs["workspace_authorization"].(map[string]any), "agents") },
			want: []string{"agents is missing or not an array"}},
		{name: "agents not an array", edit: waSet("agents", map[string]any{"research-agent": stStudioAgent}),
			want: []string{"agents is missing or not an array"}},
		{name: "binding not an object", edit: bindings(map[string]any{"id": stStudioAgent, "slug": stAgentSlug}, "research-agent"),
			want: []string{"agents[1] must be an object with non-blank string id and slug"}},
		{name: "binding with blank id", edit: bindings(map[string]any{"id": " ", "slug": stAgentSlug}),
			want: []string{"agents[0] must be an object"}},
		{name: "binding with numeric id", edit: bindings(map[string]any{"id": 42, "slug": stAgentSlug}),
			want: []string{"agents[0] must be an object"}},
		{name: "bad binding checked before agents", edit: bindings(map[string]any{"id": "x", "slug": "someone-else"}, map[string]any{"slug": "y"}),
			want: []string{"agents[1] must be an object"}},
		{name: "conflicting bindings", edit: bindings(map[string]any{"id": "a", "slug": stAgentSlug}, map[string]any{"id": "b", "slug": stAgentSlug}),
			want: []string{`binds the slug "research-agent" twice`}},
		{name: "missing slugs listed", agents: []string{"Second Agent", "Third Agent"},
			want: []string{"no workspace-authorization binding for the agents: second-agent, third-agent"}},
		{name: "agent id mismatch", prelink: "studio-agent-old",
			want: []string{`agent id mismatch for agent "research-agent"`, "studio-agent-old", stStudioAgent}},
		{name: "agent id mismatch wins over missing", prelink: "studio-agent-old", agents: []string{"Second Agent"},
			want: []string{"agent id mismatch"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeStudio(t)
			if tt.raw != "" {
				f.answer("POST /ctrl-events/", http.StatusOK, tt.raw)
			}
			if tt.edit != nil {
				f.setHandshake(tt.edit)
			}
			agents := []*Agent{stAgent(t, stAgentName)}
			for _, n := range tt.agents {
				agents = append(agents, stAgent(t, n))
			}
			if tt.prelink != "" {
				require.NoError(t, agents[0].LinkStudioAgent(tt.prelink))
			}
			srv, sink := studioServer(t, f, agents, tt.opts...)
			err := srv.Start(context.Background())
			require.ErrorIs(t, err, ErrStudioHandshake)
			for _, w := range tt.want {
				assert.Contains(t, err.Error(), w)
			}
			if strings.Contains(tt.name, "mismatch wins") {
				assert.NotContains(t, err.Error(), "second-agent")
			}
			for _, w := range tt.wantLogs {
				assert.Contains(t, sink.String(), w)
			}
			assertNoSecrets(t, err.Error())
			assertNoSecrets(t, sink.String())
			assert.Equal(t, 0, f.count(http.MethodGet, "/w/ws-1/api/v1/agents/"+stStudioAgent), "no lookup after a failed handshake")
			id, _ := agents[0].StudioAgentID()
			assert.Equal(t, tt.prelink, id, "a failed handshake links nothing")
		})
	}
}

func TestServerRegisterHTTPErrorStopsStartup(t *testing.T) {
	t.Parallel()
	f := newFakeStudio(t)
	f.answer("POST /ctrl-events/", http.StatusInternalServerError, `{"detail":"database unavailable"}`)
	srv, sink := studioServer(t, f, nil)
	err := srv.Start(context.Background())
	var se *StudioError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, http.StatusInternalServerError, se.StatusCode)
	assert.Contains(t, err.Error(), "server.register")
	assert.Contains(t, err.Error(), "database unavailable")
	assertNoSecrets(t, err.Error())
	assertNoSecrets(t, sink.String())
	assert.Equal(t, 1, f.count(http.MethodPost, stEventsPath), "HTTP answers are not retried")

	// Calling Start again retries.
	f.on("POST /ctrl-events/", nil)
	require.NoError(t, srv.Start(context.Background()))
	assert.Equal(t, 2, f.count(http.MethodPost, stEventsPath))
}

func TestServerRegisterRetriesTransportErrors(t *testing.T) {
	t.Parallel()
	f := newFakeStudio(t)
	tr := &flakyTransport{fail: 2}
	logger, sink := newLogSink()
	acct := f.account(t, func(c *AccountConfig) { c.HTTPClient, c.Logger = &http.Client{Transport: tr}, logger })
	srv, _ := studioServer(t, f, nil, WithAccount(acct))
	require.NoError(t, srv.Start(context.Background()))
	assert.Equal(t, int32(4), tr.calls.Load(), "two failures, server.register, lookup")
	assert.Contains(t, sink.String(), "retrying")
	assertNoSecrets(t, sink.String())

	f2 := newFakeStudio(t)
	tr2 := &flakyTransport{fail: 100}
	acct2 := f2.account(t, func(c *AccountConfig) { c.HTTPClient = &http.Client{Transport: tr2} })
	srv2, _ := studioServer(t, f2, nil, WithAccount(acct2))
	err := srv2.Start(context.Background())
	require.ErrorContains(t, err, "server.register")
	assert.Equal(t, int32(1+DefaultStudioMaxRetries), tr2.calls.Load(), "bounded retries")
	assertNoSecrets(t, err.Error())
}

// encryptParameters encrypts plaintext for pub like Studio does (studio.md §7).
func encryptParameters(tb testing.TB, pub *rsa.PublicKey, plaintext []byte) string {
	tb.Helper()
	aesKey, iv := make([]byte, 32), make([]byte, aes.BlockSize)
	_, _ = rand.Read(aesKey)
	_, _ = rand.Read(iv)
	n := aes.BlockSize - len(plaintext)%aes.BlockSize
	padded := append(bytes.Clone(plaintext), bytes.Repeat([]byte{byte(n)}, n)...)
	block, err := aes.NewCipher(aesKey)
	require.NoError(tb, err)
	ct := make([]byte, len(padded))
	cipher.NewCBCEncrypter(block, iv).CryptBlocks(ct, padded)
	ek, err := rsa.EncryptOAEP(sha256.New(), rand.Reader, pub, aesKey, nil)
	require.NoError(tb, err)
	return base64.StdEncoding.EncodeToString(append(append(ek, iv...), ct...))
}

func TestDecryptParameters(t *testing.T) {
	t.Parallel()
	key, _ := stControllerRSA(t)
	plain := `[{"name":"OPENAI_API_KEY","value":"sk-1"},{"name":"MAX_SOURCES","value":12},{"name":"NOTES","value":null},{"name":"FLAGS","value":{"a": true}}]`
	got, err := decryptParameters(key, encryptParameters(t, &key.PublicKey, []byte(plain)))
	require.NoError(t, err)
	assert.Equal(t, []AgentParameter{{"OPENAI_API_KEY", "sk-1"}, {"MAX_SOURCES", "12"}, {"NOTES", ""}, {"FLAGS", `{"a":true}`}}, got)

	valid := encryptParameters(t, &key.PublicKey, []byte(`[]`))
	raw, _ := base64.StdEncoding.DecodeString(valid)
	tamperedKey := bytes.Clone(raw)
	tamperedKey[10] ^= 0xff
	tamperedPad := bytes.Clone(raw)
	tamperedPad[len(tamperedPad)-1] ^= 0xff
	tests := []struct {
		name, in, want string
	}{
		{"not base64", "***", "not standard base64"},
		{"too short", base64.StdEncoding.EncodeToString(raw[:100]), "is not an encrypted key"},
		{"not whole blocks", base64.StdEncoding.EncodeToString(append(bytes.Clone(raw), 1)), "is not an encrypted key"},
		{"wrong key", base64.StdEncoding.EncodeToString(tamperedKey), "cannot be decrypted"},
		{"bad padding", base64.StdEncoding.EncodeToString(tamperedPad), "padding"},
		{"not an array", encryptParameters(t, &key.PublicKey, []byte(`{"name":"a"}`)), "not a JSON array"},
		{"item without name", encryptParameters(t, &key.PublicKey, []byte(`[{"value":"a"}]`)), "non-blank string name"},
		{"duplicate names", encryptParameters(t, &key.PublicKey, []byte(`[{"name":"a"},{"name":"a"}]`)), "listed twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := decryptParameters(key, tt.in)
			require.ErrorContains(t, err, tt.want)
		})
	}
}

func TestAgentLookup(t *testing.T) {
	t.Parallel()
	key, _ := stControllerRSA(t)
	byID := "GET /agents/" + stStudioAgent
	tests := []struct {
		name       string
		status     int
		body       string
		wantErr    string
		wantAgent  *StudioAgent
		wantLogged string
	}{
		{name: "object member", status: 200, body: `{"object":{"id":"studio-agent-42","status":"active","onboarding_status":"configured"}}`,
			wantAgent: &StudioAgent{ID: stStudioAgent, Status: "active", OnboardingStatus: "configured"}},
		{name: "agent member", status: 200, body: `{"agent":{"id":"studio-agent-42","status":"paused"}}`,
			wantAgent: &StudioAgent{ID: stStudioAgent, Status: "paused"}},
		{name: "data member", status: 200, body: `{"data":{"id":"studio-agent-42","onboarding_status":"pending"}}`,
			wantAgent: &StudioAgent{ID: stStudioAgent, OnboardingStatus: "pending"}},
		{name: "body itself", status: 200, body: `{"id":"studio-agent-42","status":"active","object":"agent"}`,
			wantAgent: &StudioAgent{ID: stStudioAgent, Status: "active"}},
		{name: "no id keeps the linked one", status: 200, body: `{"object":{"status":"active"}}`,
			wantAgent: &StudioAgent{ID: stStudioAgent, Status: "active"}},
		{name: "id mismatch", status: 200, body: `{"object":{"id":"studio-agent-99"}}`, wantErr: "agent ID mismatch"},
		{name: "body not an object", status: 200, body: `"studio-agent-42"`, wantErr: "not a JSON object"},
		{name: "non-2xx leaves the agent unchanged", status: 404, body: `{"detail":"Not found"}`, wantLogged: "agent lookup failed"},
		{name: "configured parameters decrypted", status: 200,
			body: `{"object":{"id":"studio-agent-42","onboarding_status":"configured","parameters_encrypted":"` +
				encryptParameters(t, &key.PublicKey, []byte(`[{"name":"REGION","value":"eu"}]`)) + `"}}`,
			wantAgent: &StudioAgent{ID: stStudioAgent, OnboardingStatus: "configured", Parameters: []AgentParameter{{"REGION", "eu"}}}},
		{name: "parameters ignored unless configured", status: 200,
			body:      `{"object":{"id":"studio-agent-42","onboarding_status":"pending","parameters_encrypted":"garbage"}}`,
			wantAgent: &StudioAgent{ID: stStudioAgent, OnboardingStatus: "pending"}},
		{name: "undecryptable parameters", status: 200,
			body: `{"object":{"id":"studio-agent-42","onboarding_status":"configured","parameters_encrypted":"garbage"}}`, wantErr: "parameters_encrypted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeStudio(t)
			f.answer(byID, tt.status, tt.body)
			srv, sink := studioServer(t, f, nil)
			err := srv.Start(context.Background())
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			sa, ok := srv.Account().StudioAgent(stAgentSlug)
			if tt.wantAgent == nil {
				assert.False(t, ok)
				assert.Contains(t, sink.String(), tt.wantLogged)
				return
			}
			require.True(t, ok)
			assert.Equal(t, *tt.wantAgent, sa)
			assert.NotContains(t, sink.String(), "eu\"", "parameter values are not logged")
		})
	}
}

func TestAgentLookupBySlug(t *testing.T) {
	t.Parallel()
	f := newFakeStudio(t)
	srv, _ := studioServer(t, f, nil)
	a, _ := srv.Agent(stAgentSlug)

	f.answer("GET /agents/by-slug/research-agent", http.StatusOK, `{"data":{"slug":"research-agent","status":"active"}}`)
	err := srv.lookupAgent(context.Background(), a)
	require.ErrorContains(t, err, `"research-agent": Studio returned no agent id`)
	assert.Contains(t, err.Error(), "keys received: [slug, status]")

	f.answer("GET /agents/by-slug/research-agent", http.StatusOK, `{"data":{"id":42,"status":"active"}}`)
	require.NoError(t, srv.lookupAgent(context.Background(), a))
	id, _ := a.StudioAgentID()
	assert.Equal(t, "42", id, "a numeric id is stringified")
}

func TestRegistrationRefreshRoute(t *testing.T) {
	t.Parallel()
	f := newFakeStudio(t)
	srv, sink := studioServer(t, f, nil)
	require.NoError(t, srv.Start(context.Background()))

	post := func(key, body string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, RegistrationRefreshPath, strings.NewReader(body))
		if key != "" {
			r.Header.Set(HeaderAPIKey, key)
		}
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, r)
		return w
	}
	w := post("", "")
	assert.Equal(t, http.StatusUnauthorized, w.Code)
	w = post(stReadKey, "")
	assert.Equal(t, http.StatusForbidden, w.Code, "write scope")
	w = post(stControllerKey, `"refresh"`)
	assert.Equal(t, http.StatusUnprocessableEntity, w.Code)
	w = post(stControllerKey, `{"reason": 7}`)
	assert.Equal(t, http.StatusUnprocessableEntity, w.Code)
	assert.Equal(t, 1, f.count(http.MethodPost, stEventsPath), "refused requests trigger nothing")

	w = post(stControllerKey, `{"reason":"agent configured","requested_at":"2026-10-11T09:00:00Z"}`)
	assert.Equal(t, http.StatusAccepted, w.Code)
	assert.JSONEq(t, `{"status":"accepted","reason":"agent configured"}`, w.Body.String())
	require.Eventually(t, func() bool { return f.count(http.MethodPost, stEventsPath) == 2 }, 5*time.Second, 5*time.Millisecond)
	require.Eventually(t, func() bool { return strings.Contains(sink.String(), "registration refreshed") }, 5*time.Second, 5*time.Millisecond)

	w = post(stControllerKey, "")
	assert.Equal(t, http.StatusAccepted, w.Code)
	assert.JSONEq(t, `{"status":"accepted","reason":null}`, w.Body.String())
	require.Eventually(t, func() bool { return f.count(http.MethodPost, stEventsPath) == 3 }, 5*time.Second, 5*time.Millisecond)

	// A failing refresh is logged, not returned.
	f.answer("POST /ctrl-events/", http.StatusBadGateway, `{}`)
	assert.Equal(t, http.StatusAccepted, post(stControllerKey, `{"reason":"again"}`).Code)
	require.Eventually(t, func() bool { return strings.Contains(sink.String(), "registration refresh failed") }, 5*time.Second, 5*time.Millisecond)
	assertNoSecrets(t, sink.String())
}

func TestRegistrationRefreshNotAttached(t *testing.T) {
	t.Parallel()
	srv, err := NewServer([]*Agent{stAgent(t, stAgentName)}, WithEnv(func(string) string { return "" }),
		WithAPIKey(stControllerKey, ScopeWrite))
	require.NoError(t, err)
	assert.Nil(t, srv.Account())
	r := httptest.NewRequest(http.MethodPost, RegistrationRefreshPath, nil)
	r.Header.Set(HeaderAPIKey, stControllerKey)
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, r)
	assert.Equal(t, http.StatusServiceUnavailable, w.Code)
	assert.JSONEq(t, `{"detail":"No supervisor account configured"}`, w.Body.String())
	require.NoError(t, srv.Start(context.Background()))
}

func TestRefresherCoalesces(t *testing.T) {
	t.Parallel()
	var r refresher
	var runs atomic.Int32
	release := make(chan struct{})
	started := make(chan struct{}, 10)
	run := func() {
		runs.Add(1)
		started <- struct{}{}
		<-release
	}
	r.trigger(run)
	<-started
	for range 10 {
		r.trigger(run) // while the first run is blocked
	}
	close(release)
	<-started
	require.Eventually(t, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return !r.running
	}, 5*time.Second, time.Millisecond)
	assert.Equal(t, int32(2), runs.Load(), "one run at a time, later requests coalesce into one")
}

func TestStudioAttachmentConfig(t *testing.T) {
	t.Parallel()
	key, keyPEM := stControllerRSA(t)
	agents := func() []*Agent { return []*Agent{stAgent(t, stAgentName)} }
	wsAuth := WithWorkspaceAuth(WorkspaceAuthSettings{Enabled: true, Issuer: stIssuer, PublicKeyPEM: stSigningPEM})
	studioEnv := map[string]string{EnvStudioAPIURL: "https://studio.example.com", EnvStudioAPIKey: stAccountKey,
		EnvStudioWorkspaceID: stWorkspace, "SUPERVAIZER_PUBLIC_URL": stPublicURL}
	envWith := func(extra map[string]string) Option {
		m := map[string]string{}
		for k, v := range studioEnv {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return WithEnv(func(k string) string { return m[k] })
	}

	t.Run("from the environment", func(t *testing.T) {
		t.Parallel()
		srv, err := NewServer(agents(), envWith(nil), wsAuth, WithControllerKey(key))
		require.NoError(t, err)
		require.NotNil(t, srv.Account())
		assert.Equal(t, "https://studio.example.com/w/ws-1/api/v1", srv.Account().WorkspaceAPIBase())
		assert.True(t, srv.cfg.studioAttached)
		assert.Equal(t, DefaultEnvironment, srv.studio.environment)
	})
	t.Run("partial environment", func(t *testing.T) {
		t.Parallel()
		_, err := NewServer(agents(), WithEnv(func(k string) string {
			return map[string]string{EnvStudioAPIURL: "https://studio.example.com"}[k]
		}), wsAuth)
		require.ErrorContains(t, err, "missing WorkspaceID (SUPERVAIZE_WORKSPACE_ID), APIKey (SUPERVAIZE_API_KEY)")
	})
	t.Run("attaching requires workspace authorization", func(t *testing.T) {
		t.Parallel()
		_, err := NewServer(agents(), envWith(nil), WithControllerKey(key))
		require.ErrorContains(t, err, "SUPERVAIZER_WORKSPACE_AUTH_REQUIRED")
	})
	t.Run("attaching requires the public URL", func(t *testing.T) {
		t.Parallel()
		_, err := NewServer(agents(), envWith(map[string]string{"SUPERVAIZER_PUBLIC_URL": ""}), wsAuth, WithControllerKey(key))
		require.ErrorContains(t, err, "SUPERVAIZER_PUBLIC_URL")
	})
	t.Run("local mode ignores the account", func(t *testing.T) {
		t.Parallel()
		srv, err := NewServer(agents(), envWith(map[string]string{"SUPERVAIZER_LOCAL_MODE": "true"}))
		require.NoError(t, err)
		assert.Nil(t, srv.Account())
		assert.False(t, srv.cfg.studioAttached)
		require.NoError(t, srv.Start(context.Background()))
	})
	t.Run("private key from the environment", func(t *testing.T) {
		t.Parallel()
		for _, v := range []string{keyPEM, strings.ReplaceAll(strings.TrimSpace(keyPEM), "\n", `\n`)} {
			srv, err := NewServer(agents(), envWith(map[string]string{EnvPrivateKey: v}), wsAuth)
			require.NoError(t, err)
			assert.True(t, key.Equal(srv.studio.key))
			assert.Contains(t, srv.studio.publicPEM, "-----BEGIN PUBLIC KEY-----")
		}
	})
	t.Run("invalid private key", func(t *testing.T) {
		t.Parallel()
		_, err := NewServer(agents(), envWith(map[string]string{EnvPrivateKey: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----"}), wsAuth)
		require.ErrorContains(t, err, EnvPrivateKey)
		assert.NotContains(t, err.Error(), "AAAA")
	})
	t.Run("generated key is not exported under WithEnv", func(t *testing.T) {
		t.Parallel()
		before, had := os.LookupEnv(EnvPrivateKey)
		srv, err := NewServer(agents(), envWith(nil), wsAuth)
		require.NoError(t, err)
		assert.Equal(t, ControllerKeyBits, srv.studio.key.N.BitLen())
		after, has := os.LookupEnv(EnvPrivateKey)
		assert.Equal(t, had, has)
		assert.Equal(t, before, after)
	})
}

func TestServerURI(t *testing.T) {
	t.Parallel()
	assert.Regexp(t, macURI, serverURI("srv"))
	a, b := fallbackMAC("srv-1"), fallbackMAC("srv-1")
	assert.Equal(t, a, b, "deterministic")
	assert.NotEqual(t, a, fallbackMAC("srv-2"))
	assert.Regexp(t, macURI, "server:"+a)
	first, _ := hexByte(a[:2])
	assert.Equal(t, byte(0x02), first&0x03, "locally administered, unicast")
}

func hexByte(s string) (byte, error) {
	var b byte
	for _, c := range s {
		b <<= 4
		switch {
		case c >= '0' && c <= '9':
			b |= byte(c - '0')
		case c >= 'A' && c <= 'F':
			b |= byte(c-'A') + 10
		default:
			return 0, errors.New("not hex")
		}
	}
	return b, nil
}

func TestStartAndRefreshDoNotOverlap(t *testing.T) {
	t.Parallel()
	f := newFakeStudio(t)
	var inFlight, maxInFlight atomic.Int32
	f.on("POST /ctrl-events/", func(w http.ResponseWriter, _ []byte) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		if n > maxInFlight.Load() {
			maxInFlight.Store(n)
		}
		time.Sleep(20 * time.Millisecond)
		f.mu.Lock()
		hs := f.handshake
		f.mu.Unlock()
		writeJSON(w, http.StatusOK, map[string]any{"supervaizer_handshake": hs})
	})
	srv, _ := studioServer(t, f, nil)
	r := httptest.NewRequest(http.MethodPost, RegistrationRefreshPath, nil)
	r.Header.Set(HeaderAPIKey, stControllerKey)
	srv.ServeHTTP(httptest.NewRecorder(), r)
	require.NoError(t, srv.Start(context.Background()))
	require.Eventually(t, func() bool { return inFlight.Load() == 0 && f.count(http.MethodPost, stEventsPath) >= 1 }, 5*time.Second, time.Millisecond)
	assert.Equal(t, int32(1), maxInFlight.Load())
}

func FuzzParseHandshake(f *testing.F) {
	f.Add([]byte(`{"id":"srv_01","supervaizer_handshake":{"server_id":"studio-server-1","controller_api_key_match":true,"workspace_authorization":{"audience":"supervaizer-server:studio-server-1","agents":[{"id":"studio-agent-42","slug":"research-agent"},{"id":"studio-agent-43","slug":"second-agent"}]}}}`))
	f.Add([]byte(`{"supervaizer_handshake":{"controller_api_key_match":false,"reason":"stored_controller_api_key_mismatch"}}`))
	f.Add([]byte(`{"supervaizer_handshake":{"controller_api_key_match":true,"workspace_authorization":{"audience":" ","agents":{}}}}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`[{"supervaizer_handshake":1}]`))
	local := []localAgent{{slug: "research-agent"}, {slug: "second-agent", studioID: "studio-agent-43"}}
	f.Fuzz(func(t *testing.T, body []byte) {
		hs, err := parseHandshake(body, "215345834bf2", "", local)
		if err != nil {
			if !errors.Is(err, ErrStudioHandshake) {
				t.Fatalf("error %v does not wrap ErrStudioHandshake", err)
			}
			return
		}
		if strings.TrimSpace(hs.audience) == "" || len(hs.links) != len(local) {
			t.Fatalf("accepted handshake %+v", hs)
		}
		for i, l := range hs.links {
			if l.slug != local[i].slug || strings.TrimSpace(l.id) == "" || (local[i].studioID != "" && l.id != local[i].studioID) {
				t.Fatalf("bad link %+v for %+v", l, local[i])
			}
		}
	})
}

func FuzzParseAgentDetail(f *testing.F) {
	f.Add([]byte(`{"object":{"id":"studio-agent-42","status":"active","onboarding_status":"configured","parameters_encrypted":"AAAA"}}`))
	f.Add([]byte(`{"data":{"id":42}}`))
	f.Add([]byte(`{"agent":[],"id":-1.5e3}`))
	f.Add([]byte(`"x"`))
	f.Fuzz(func(t *testing.T, body []byte) {
		d, err := parseAgentDetail(body)
		if err == nil && d.id != strings.TrimSpace(d.id) {
			t.Fatalf("id %q not trimmed", d.id)
		}
	})
}

func FuzzParseParameters(f *testing.F) {
	f.Add([]byte(`[{"name":"REGION","value":"eu"},{"name":"N","value":3},{"name":"X","value":null}]`))
	f.Add([]byte(`[{"name":"a"},{"name":"a"}]`))
	f.Add([]byte(`{"name":"a"}`))
	f.Fuzz(func(t *testing.T, plain []byte) {
		ps, err := parseParameters(plain)
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, p := range ps {
			if strings.TrimSpace(p.Name) == "" || seen[p.Name] {
				t.Fatalf("bad parameter list %v", ps)
			}
			seen[p.Name] = true
		}
	})
}

func BenchmarkParseHandshake(b *testing.B) {
	body := []byte(`{"id":"srv_01","supervaizer_handshake":{"server_id":"studio-server-1","controller_api_key_match":true,"stored_controller_api_key_fingerprint":"215345834bf2","reason":null,"workspace_authorization":{"audience":"supervaizer-server:studio-server-1","studio_server_id":"studio-server-1","agents":[{"id":"studio-agent-42","slug":"research-agent"}]}}}`)
	local := []localAgent{{slug: "research-agent"}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := parseHandshake(body, "215345834bf2", "", local); err != nil {
			b.Fatal(err)
		}
	}
}

func TestRegistrationRefreshDuringShutdown(t *testing.T) {
	t.Parallel()
	f := newFakeStudio(t)
	srv, sink := studioServer(t, f, nil)
	require.NoError(t, srv.Start(context.Background()))
	require.Equal(t, 1, f.count(http.MethodPost, stEventsPath))
	require.NoError(t, srv.Shutdown(context.Background()))

	r := httptest.NewRequest(http.MethodPost, RegistrationRefreshPath, strings.NewReader(`{"reason":"late"}`))
	r.Header.Set(HeaderAPIKey, stControllerKey)
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, r)
	assert.Equal(t, http.StatusServiceUnavailable, w.Code)

	// A refresh already queued when Shutdown begins does not register again.
	srv.refreshRegistration("queued")
	assert.Contains(t, sink.String(), "registration refresh skipped")
	assert.Equal(t, 1, f.count(http.MethodPost, stEventsPath), "no server.register after Shutdown")
}

func TestRefresherRunsLatestPending(t *testing.T) {
	t.Parallel()
	var r refresher
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	var (
		mu   sync.Mutex
		seen []string
	)
	run := func(name string) func() {
		return func() {
			mu.Lock()
			seen = append(seen, name)
			mu.Unlock()
			started <- struct{}{}
			<-release
		}
	}
	r.trigger(run("first"))
	<-started
	r.trigger(run("second"))
	r.trigger(run("third"))
	close(release)
	<-started
	require.Eventually(t, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return !r.running
	}, 5*time.Second, time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{"first", "third"}, seen, "the coalesced run is the latest request's")
}

// TestShutdownCancelsRegistrationRefresh checks that Shutdown cancels a
// refresh blocked on server.register, waits for it to end, and leaves no
// goroutine behind.
func TestShutdownCancelsRegistrationRefresh(t *testing.T) {
	// Not parallel: it counts the process's goroutines.
	baseline := runtime.NumGoroutine()
	t.Run("refresh", func(t *testing.T) {
		f := newFakeStudio(t)
		var block atomic.Bool
		entered, cancelled, unblock := make(chan struct{}), make(chan struct{}), make(chan struct{})
		var registers atomic.Int32
		// Studio in front of f whose server.register blocks, once block is
		// set, until the controller gives up on the request.
		studio := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/ctrl-events/") {
				f.serve(w, r)
				return
			}
			registers.Add(1)
			if !block.Load() {
				f.serve(w, r)
				return
			}
			// The server notices a closed connection only once the body is read.
			_, _ = io.Copy(io.Discard, r.Body)
			close(entered)
			select {
			case <-r.Context().Done(): // the controller closed the connection
				close(cancelled)
			case <-unblock: // the test failed: let studio.Close return
			}
		}))
		t.Cleanup(studio.Close)
		t.Cleanup(func() { close(unblock) }) // runs before studio.Close
		acct := f.account(t, func(c *AccountConfig) { c.APIURL = studio.URL })
		srv, sink := studioServer(t, f, nil, WithAccount(acct))
		require.NoError(t, srv.Start(context.Background()))
		block.Store(true)

		refresh := func() int {
			r := httptest.NewRequest(http.MethodPost, RegistrationRefreshPath, strings.NewReader(`{"reason":"blocked"}`))
			r.Header.Set(HeaderAPIKey, stControllerKey)
			w := httptest.NewRecorder()
			srv.ServeHTTP(w, r)
			return w.Code
		}
		require.Equal(t, http.StatusAccepted, refresh())
		select {
		case <-entered:
		case <-time.After(5 * time.Second):
			require.FailNow(t, "the refresh never reached server.register")
		}
		require.Equal(t, http.StatusAccepted, refresh(), "queued behind the blocked run, dropped by Shutdown")

		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		began := time.Now()
		require.NoError(t, srv.Shutdown(ctx))
		assert.Less(t, time.Since(began), 2*time.Second, "Shutdown returns promptly")
		select {
		case <-cancelled:
		case <-time.After(5 * time.Second):
			require.FailNow(t, "the in-flight server.register was not cancelled")
		}
		// Shutdown returned only after the refresh goroutine ended.
		assert.Contains(t, sink.String(), "registration refresh cancelled: the server is shutting down")
		assert.NotContains(t, sink.String(), "registration refresh failed")
		srv.studio.refresh.mu.Lock()
		assert.False(t, srv.studio.refresh.running)
		srv.studio.refresh.mu.Unlock()
		assert.Equal(t, http.StatusServiceUnavailable, refresh())
		assert.Equal(t, int32(2), registers.Load(), "Start and the cancelled refresh only: no retry, the queued run dropped")
		assertNoSecrets(t, sink.String())
	})
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > baseline {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			require.FailNowf(t, "goroutine leak", "%d goroutines, baseline %d:\n%s", runtime.NumGoroutine(), baseline, buf)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestShutdownBoundedByContext checks that Shutdown stops waiting for a
// refresh that cannot end (it waits for the registration lock held here) when
// its context ends.
func TestShutdownBoundedByContext(t *testing.T) {
	t.Parallel()
	f := newFakeStudio(t)
	srv, _ := studioServer(t, f, nil)
	l := srv.studio
	l.syncMu.Lock()
	require.True(t, l.refresh.trigger(func() { srv.refreshRegistration("stuck") }))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := srv.Shutdown(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	idle := l.refresh.close()
	l.syncMu.Unlock() // the refresh now sees the shutdown and ends
	select {
	case <-idle:
	case <-time.After(5 * time.Second):
		require.FailNow(t, "the refresh did not end")
	}
	assert.Equal(t, 0, f.count(http.MethodPost, stEventsPath))
}

func TestRefresherClose(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		running bool // a run is blocked when close is called
	}{
		{name: "idle", running: false},
		{name: "running", running: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var r refresher
			var runs atomic.Int32
			release := make(chan struct{})
			started := make(chan struct{}, 1)
			run := func() {
				runs.Add(1)
				started <- struct{}{}
				<-release
			}
			if tt.running {
				require.True(t, r.trigger(run))
				<-started
				require.True(t, r.trigger(run), "pending")
			}
			idle := r.close()
			assert.False(t, r.trigger(run), "closed")
			if tt.running {
				select {
				case <-idle:
					require.FailNow(t, "idle before the run ended")
				default:
				}
				close(release)
			}
			select {
			case <-idle:
			case <-time.After(5 * time.Second):
				require.FailNow(t, "the background goroutine did not end")
			}
			want := int32(0)
			if tt.running {
				want = 1 // the pending run is dropped
			}
			assert.Equal(t, want, runs.Load())
			assert.Equal(t, idle, r.close(), "close is idempotent")
		})
	}
}
