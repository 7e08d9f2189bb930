package supervaizer

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
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
	"github.com/supervaize/supervaizer-go/internal/redact"
	"github.com/supervaize/supervaizer-go/internal/tools/studiotest"
	"github.com/supervaize/supervaizer-go/studio"
	"github.com/supervaize/supervaizer-go/testing/golden"
)

var macURI = regexp.MustCompile(`^server:[0-9A-F]{2}(-[0-9A-F]{2}){5}$`)

func TestStudioStartupHappyPath(t *testing.T) {
	t.Parallel()
	f := studiotest.New(t)
	srv, sink := studioServer(t, f, nil)
	a, _ := srv.Agent(studiotest.AgentSlug)
	a.HandleAction("job.start", func(context.Context, *ActionRequest) (*ActionResult, error) {
		return OK(JobStarted("job-1", nil)), nil
	})
	require.Same(t, srv.Studio(), srv.studio.client)

	require.NoError(t, srv.Start(context.Background()))

	reqs := f.Recorded()
	require.Len(t, reqs, 2, "server.register, then one agent lookup")
	reg := reqs[0]
	assert.Equal(t, studiotest.EventsPath, reg.Path)
	assert.Equal(t, "Api-Key "+studiotest.AccountKey, reg.Header.Get("Authorization"))
	body := reg.JSON(t)
	assert.Equal(t, "server.register", body["event_type"])
	assert.Equal(t, "server", body["object_type"])
	assert.Equal(t, studiotest.Workspace, body["workspace"])
	details := body["details"].(map[string]any)
	assert.Equal(t, studiotest.LocalServer, details["server_id"])
	assert.Equal(t, studiotest.ControllerKey, details["api_key"], "the effective controller key is sent")
	assert.Regexp(t, macURI, details["uri"])
	assert.Equal(t, map[string]any{"server": details["uri"]}, body["source"])

	// The handshake linked the agent, so the lookup goes by Studio id.
	assert.Equal(t, "/w/ws-1/api/v1/agents/"+studiotest.StudioAgent, reqs[1].Path)
	assert.Equal(t, http.MethodGet, reqs[1].Method)
	id, ok := a.StudioAgentID()
	require.True(t, ok)
	assert.Equal(t, studiotest.StudioAgent, id)
	sa, ok := srv.Studio().Agent(studiotest.AgentSlug)
	require.True(t, ok)
	assert.Equal(t, studio.Agent{ID: studiotest.StudioAgent, Status: "active", OnboardingStatus: "pending"}, sa)

	// Studio's audience is adopted: its tokens carry Studio's server id, not the local one.
	status, resp := stInvoke(t, srv, stToken(t, nil))
	require.Equal(t, http.StatusOK, status)
	require.Nil(t, resp["error"], resp)
	assert.Equal(t, "ok", resp["result"].(map[string]any)["status"])

	_, resp = stInvoke(t, srv, stToken(t, func(c map[string]any) {
		c["aud"], c["server_id"] = "supervaizer-server:"+studiotest.LocalServer, studiotest.LocalServer
	}))
	require.NotNil(t, resp["error"], "the local audience is replaced by Studio's")
	_, resp = stInvoke(t, srv, stToken(t, func(c map[string]any) { c["agent_id"] = "studio-agent-other" }))
	require.NotNil(t, resp["error"], "the agent_id claim must be the linked Studio id")

	logs := sink.String()
	assert.Contains(t, logs, "registered with Studio")
	assert.Contains(t, logs, "server_id="+studiotest.StudioServer)
	assert.Contains(t, logs, "api_key_fingerprint="+studio.KeyFingerprint(studiotest.ControllerKey))
	assertNoSecrets(t, logs)

	require.NoError(t, srv.Start(context.Background()))
	assert.Len(t, f.Recorded(), 2, "Start registers once")
}

func TestServerRegisterGolden(t *testing.T) {
	t.Parallel()
	f := studiotest.New(t)
	full := stAgent(t, studiotest.AgentName, func(s *AgentSpec) {
		s.Author, s.Developer, s.Tags = "Supervaize", "Alan Turing", []string{"research", "briefs"}
		s.ReleaseNotesURL = "https://example.com/research-agent/releases"
		s.Introduction = &contracts.Introduction{Tagline: "Sourced briefs", Summary: "Turns a question into a sourced brief.", ExampleGoals: []string{"Brief me on EU AI rules"}}
		s.FullDescription = &contracts.FullDescription{Content: "# Research Agent\nReads, cites, summarises."}
		s.BillingCatalog = contracts.BillingCatalog{{SKU: "brief_generated", Unit: "brief", Description: "One generated brief"}}
	})
	minimal, err := NewAgent(AgentSpec{Name: "Minimal Agent", Version: "0.1.0", BillingCatalog: contracts.BillingCatalog{}})
	require.NoError(t, err)
	f.SetHandshake(func(hs map[string]any) {
		hs["workspace_authorization"].(map[string]any)["agents"] = []any{
			map[string]any{"id": studiotest.StudioAgent, "slug": studiotest.AgentSlug}, map[string]any{"id": "studio-agent-43", "slug": "minimal-agent"},
		}
	})
	srv, _ := studioServer(t, f, []*Agent{full, minimal}, WithEnv(func(k string) string {
		return map[string]string{"SUPERVAIZER_SERVER_ID": studiotest.LocalServer, studio.EnvEnvironment: "staging"}[k]
	}))

	payloads, err := contracts.Marshal([]studio.AgentRegistration{srv.studio.agentRegistration(full), srv.studio.agentRegistration(minimal)})
	require.NoError(t, err)
	golden.JSON(t, filepath.Join("testdata", "studio", "agent_registration.golden.json"), payloads)

	require.NoError(t, srv.Start(context.Background()))
	body := f.Recorded()[0].Body
	require.Regexp(t, macURI, srv.studio.uri)
	require.Equal(t, 2, bytes.Count(body, []byte(`"`+srv.studio.uri+`"`)), "source.server and details.uri")
	// The host's MAC varies: the golden file has the spec's example address.
	golden.JSON(t, filepath.Join("testdata", "studio", "server_register.golden.json"), bytes.ReplaceAll(body, []byte(srv.studio.uri), []byte("server:00-1A-2B-3C-4D-5E")))
	var event map[string]any
	require.NoError(t, json.Unmarshal(body, &event))
	details := event["details"].(map[string]any)

	contract, err := json.Marshal(controllerContract())
	require.NoError(t, err)
	sent, err := json.Marshal(map[string]any{"controller_contract_version": details["controller_contract_version"],
		"api_base_path": details["api_base_path"], "endpoints": details["endpoints"]})
	require.NoError(t, err)
	assert.JSONEq(t, string(contract), string(sent), "server.register sends the served controller contract")

	// After the handshake and lookup, a refresh sends the Studio ids and statuses.
	again := srv.studio.agentRegistration(full)
	require.NotNil(t, again.ServerAgentID)
	assert.Equal(t, studiotest.StudioAgent, *again.ServerAgentID)
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
			studio.KeyFingerprint(studiotest.ControllerKey), "000000000000"},
			wantLogs: []string{"api_key_fingerprint=" + studio.KeyFingerprint(studiotest.ControllerKey), "stored_controller_api_key_fingerprint=000000000000",
				"reason=stored_controller_api_key_mismatch", "server_id=" + studiotest.StudioServer}},
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
			opts: []Option{WithWorkspaceAuth(WorkspaceAuthSettings{Enabled: true, Issuer: studiotest.Issuer, PublicKeyPEM: studiotest.SigningPEM, Audience: "supervaizer-server:mine"})},
			want: []string{`configured workspace audience (SUPERVAIZER_WORKSPACE_AUTH_AUDIENCE) "supervaizer-server:mine" differs from Studio's "` + studiotest.Audience + `"`}},
		{name: "agents missing", edit: func(hs map[string]any) { delete(hs["workspace_authorization"].(map[string]any), "agents") },
			want: []string{"agents is missing or not an array"}},
		{name: "agents not an array", edit: waSet("agents", map[string]any{"research-agent": studiotest.StudioAgent}),
			want: []string{"agents is missing or not an array"}},
		{name: "binding not an object", edit: bindings(map[string]any{"id": studiotest.StudioAgent, "slug": studiotest.AgentSlug}, "research-agent"),
			want: []string{"agents[1] must be an object with non-blank string id and slug"}},
		{name: "binding with blank id", edit: bindings(map[string]any{"id": " ", "slug": studiotest.AgentSlug}),
			want: []string{"agents[0] must be an object"}},
		{name: "binding with numeric id", edit: bindings(map[string]any{"id": 42, "slug": studiotest.AgentSlug}),
			want: []string{"agents[0] must be an object"}},
		{name: "bad binding checked before agents", edit: bindings(map[string]any{"id": "x", "slug": "someone-else"}, map[string]any{"slug": "y"}),
			want: []string{"agents[1] must be an object"}},
		{name: "conflicting bindings", edit: bindings(map[string]any{"id": "a", "slug": studiotest.AgentSlug}, map[string]any{"id": "b", "slug": studiotest.AgentSlug}),
			want: []string{`binds the slug "research-agent" twice`}},
		{name: "missing slugs listed", agents: []string{"Second Agent", "Third Agent"},
			want: []string{"no workspace-authorization binding for the agents: second-agent, third-agent"}},
		{name: "agent id mismatch", prelink: "studio-agent-old",
			want: []string{`agent id mismatch for agent "research-agent"`, "studio-agent-old", studiotest.StudioAgent}},
		{name: "agent id mismatch wins over missing", prelink: "studio-agent-old", agents: []string{"Second Agent"},
			want: []string{"agent id mismatch"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := studiotest.New(t)
			if tt.raw != "" {
				f.Answer("POST /ctrl-events/", http.StatusOK, tt.raw)
			}
			if tt.edit != nil {
				f.SetHandshake(tt.edit)
			}
			agents := []*Agent{stAgent(t, studiotest.AgentName)}
			for _, n := range tt.agents {
				agents = append(agents, stAgent(t, n))
			}
			if tt.prelink != "" {
				require.NoError(t, agents[0].linkStudioAgent(tt.prelink))
			}
			srv, sink := studioServer(t, f, agents, tt.opts...)
			err := srv.Start(context.Background())
			require.ErrorIs(t, err, studio.ErrHandshake)
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
			assert.Equal(t, 0, f.Count(http.MethodGet, "/w/ws-1/api/v1/agents/"+studiotest.StudioAgent), "no lookup after a failed handshake")
			id, _ := agents[0].StudioAgentID()
			assert.Equal(t, tt.prelink, id, "a failed handshake links nothing")
		})
	}
}

func TestServerRegisterHTTPErrorStopsStartup(t *testing.T) {
	t.Parallel()
	f := studiotest.New(t)
	f.Answer("POST /ctrl-events/", http.StatusInternalServerError, `{"detail":"database unavailable"}`)
	srv, sink := studioServer(t, f, nil)
	err := srv.Start(context.Background())
	var se *studio.StatusError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, http.StatusInternalServerError, se.StatusCode)
	assert.Contains(t, err.Error(), "server.register")
	assert.Contains(t, err.Error(), "database unavailable")
	assertNoSecrets(t, err.Error())
	assertNoSecrets(t, sink.String())
	assert.Equal(t, 1, f.Count(http.MethodPost, studiotest.EventsPath), "HTTP answers are not retried")

	// Calling Start again retries.
	f.On("POST /ctrl-events/", nil)
	require.NoError(t, srv.Start(context.Background()))
	assert.Equal(t, 2, f.Count(http.MethodPost, studiotest.EventsPath))
}

func TestServerRegisterRetriesTransportErrors(t *testing.T) {
	t.Parallel()
	f := studiotest.New(t)
	tr := &studiotest.FlakyTransport{Fail: 2}
	logger, sink := studiotest.NewLogSink()
	acct := testClient(t, f, func(c *studio.Config) { c.HTTPClient, c.Logger = &http.Client{Transport: tr}, logger })
	srv, _ := studioServer(t, f, nil, WithStudio(acct))
	require.NoError(t, srv.Start(context.Background()))
	assert.Equal(t, int32(4), tr.Calls.Load(), "two failures, server.register, lookup")
	assert.Contains(t, sink.String(), "retrying")
	assertNoSecrets(t, sink.String())

	f2 := studiotest.New(t)
	tr2 := &studiotest.FlakyTransport{Fail: 100}
	acct2 := testClient(t, f2, func(c *studio.Config) { c.HTTPClient = &http.Client{Transport: tr2} })
	srv2, _ := studioServer(t, f2, nil, WithStudio(acct2))
	err := srv2.Start(context.Background())
	require.ErrorContains(t, err, "server.register")
	assert.Equal(t, int32(1+studio.DefaultMaxRetries), tr2.Calls.Load(), "bounded retries")
	assertNoSecrets(t, err.Error())
}

func TestAgentLookup(t *testing.T) {
	t.Parallel()
	key, _ := studiotest.ControllerRSA(t)
	byID := "GET /agents/" + studiotest.StudioAgent
	tests := []struct {
		name       string
		status     int
		body       string
		wantErr    string
		wantAgent  *studio.Agent
		wantLogged string
	}{
		{name: "object member", status: 200, body: `{"object":{"id":"studio-agent-42","status":"active","onboarding_status":"configured"}}`,
			wantAgent: &studio.Agent{ID: studiotest.StudioAgent, Status: "active", OnboardingStatus: "configured"}},
		{name: "agent member", status: 200, body: `{"agent":{"id":"studio-agent-42","status":"paused"}}`,
			wantAgent: &studio.Agent{ID: studiotest.StudioAgent, Status: "paused"}},
		{name: "data member", status: 200, body: `{"data":{"id":"studio-agent-42","onboarding_status":"pending"}}`,
			wantAgent: &studio.Agent{ID: studiotest.StudioAgent, OnboardingStatus: "pending"}},
		{name: "body itself", status: 200, body: `{"id":"studio-agent-42","status":"active","object":"agent"}`,
			wantAgent: &studio.Agent{ID: studiotest.StudioAgent, Status: "active"}},
		{name: "no id keeps the linked one", status: 200, body: `{"object":{"status":"active"}}`,
			wantAgent: &studio.Agent{ID: studiotest.StudioAgent, Status: "active"}},
		{name: "id mismatch", status: 200, body: `{"object":{"id":"studio-agent-99"}}`, wantErr: "agent ID mismatch"},
		{name: "body not an object", status: 200, body: `"studio-agent-42"`, wantErr: "not a JSON object"},
		{name: "non-2xx leaves the agent unchanged", status: 404, body: `{"detail":"Not found"}`, wantLogged: "agent lookup failed"},
		{name: "configured parameters decrypted", status: 200,
			body: `{"object":{"id":"studio-agent-42","onboarding_status":"configured","parameters_encrypted":"` +
				studiotest.EncryptParameters(t, &key.PublicKey, []byte(`[{"name":"REGION","value":"eu"}]`)) + `"}}`,
			wantAgent: &studio.Agent{ID: studiotest.StudioAgent, OnboardingStatus: "configured", Parameters: []studio.AgentParameter{{Name: "REGION", Value: "eu"}}}},
		{name: "parameters ignored unless configured", status: 200,
			body:      `{"object":{"id":"studio-agent-42","onboarding_status":"pending","parameters_encrypted":"garbage"}}`,
			wantAgent: &studio.Agent{ID: studiotest.StudioAgent, OnboardingStatus: "pending"}},
		{name: "undecryptable parameters", status: 200,
			body: `{"object":{"id":"studio-agent-42","onboarding_status":"configured","parameters_encrypted":"garbage"}}`, wantErr: "parameters_encrypted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := studiotest.New(t)
			f.Answer(byID, tt.status, tt.body)
			srv, sink := studioServer(t, f, nil)
			err := srv.Start(context.Background())
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			sa, ok := srv.Studio().Agent(studiotest.AgentSlug)
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
	f := studiotest.New(t)
	srv, _ := studioServer(t, f, nil)
	a, _ := srv.Agent(studiotest.AgentSlug)

	f.Answer("GET /agents/by-slug/research-agent", http.StatusOK, `{"data":{"slug":"research-agent","status":"active"}}`)
	err := srv.studio.lookupAgent(context.Background(), srv.logger, srv.APIKey(), a)
	require.ErrorContains(t, err, `"research-agent": Studio returned no agent id`)
	assert.Contains(t, err.Error(), "keys received: [slug, status]")

	f.Answer("GET /agents/by-slug/research-agent", http.StatusOK, `{"data":{"id":42,"status":"active"}}`)
	require.NoError(t, srv.studio.lookupAgent(context.Background(), srv.logger, srv.APIKey(), a))
	id, _ := a.StudioAgentID()
	assert.Equal(t, "42", id, "a numeric id is stringified")
}

func TestRegistrationRefreshRoute(t *testing.T) {
	t.Parallel()
	f := studiotest.New(t)
	srv, sink := studioServer(t, f, nil)
	require.NoError(t, srv.Start(context.Background()))

	post := func(key, body string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, studio.RegistrationRefreshPath, strings.NewReader(body))
		if key != "" {
			r.Header.Set(HeaderAPIKey, key)
		}
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, r)
		return w
	}
	w := post("", "")
	assert.Equal(t, http.StatusUnauthorized, w.Code)
	w = post(studiotest.ReadKey, "")
	assert.Equal(t, http.StatusForbidden, w.Code, "write scope")
	w = post(studiotest.ControllerKey, `"refresh"`)
	assert.Equal(t, http.StatusUnprocessableEntity, w.Code)
	w = post(studiotest.ControllerKey, `{"reason": 7}`)
	assert.Equal(t, http.StatusUnprocessableEntity, w.Code)
	assert.Equal(t, 1, f.Count(http.MethodPost, studiotest.EventsPath), "refused requests trigger nothing")

	w = post(studiotest.ControllerKey, `{"reason":"agent configured","requested_at":"2026-10-11T09:00:00Z"}`)
	assert.Equal(t, http.StatusAccepted, w.Code)
	assert.JSONEq(t, `{"status":"accepted","reason":"agent configured"}`, w.Body.String())
	require.Eventually(t, func() bool { return f.Count(http.MethodPost, studiotest.EventsPath) == 2 }, 5*time.Second, 5*time.Millisecond)
	require.Eventually(t, func() bool { return strings.Contains(sink.String(), "registration refreshed") }, 5*time.Second, 5*time.Millisecond)

	w = post(studiotest.ControllerKey, "")
	assert.Equal(t, http.StatusAccepted, w.Code)
	assert.JSONEq(t, `{"status":"accepted","reason":null}`, w.Body.String())
	require.Eventually(t, func() bool { return f.Count(http.MethodPost, studiotest.EventsPath) == 3 }, 5*time.Second, 5*time.Millisecond)

	// A failing refresh is logged, not returned.
	f.Answer("POST /ctrl-events/", http.StatusBadGateway, `{}`)
	assert.Equal(t, http.StatusAccepted, post(studiotest.ControllerKey, `{"reason":"again"}`).Code)
	require.Eventually(t, func() bool { return strings.Contains(sink.String(), "registration refresh failed") }, 5*time.Second, 5*time.Millisecond)
	assertNoSecrets(t, sink.String())
}

func TestRegistrationRefreshNotAttached(t *testing.T) {
	t.Parallel()
	srv, err := NewServer([]*Agent{stAgent(t, studiotest.AgentName)}, WithEnv(func(string) string { return "" }),
		WithAPIKey(studiotest.ControllerKey, ScopeWrite))
	require.NoError(t, err)
	assert.Nil(t, srv.Studio())
	r := httptest.NewRequest(http.MethodPost, studio.RegistrationRefreshPath, nil)
	r.Header.Set(HeaderAPIKey, studiotest.ControllerKey)
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, r)
	assert.Equal(t, http.StatusServiceUnavailable, w.Code)
	assert.JSONEq(t, `{"detail":"No supervisor account configured"}`, w.Body.String())
	// Neither attached, nor in local mode, nor verifying tokens: Start refuses.
	require.ErrorContains(t, srv.Start(context.Background()), "SUPERVAIZER_LOCAL_MODE")
}

// blockingRun is a refresher run that counts itself, says it started and
// waits until release is closed.
type blockingRun struct {
	runs    atomic.Int32
	started chan struct{}
	release chan struct{}
}

// newBlockingRun returns a blockingRun whose started channel holds buffer
// signals.
func newBlockingRun(buffer int) *blockingRun {
	return &blockingRun{started: make(chan struct{}, buffer), release: make(chan struct{})}
}

func (b *blockingRun) run() {
	b.runs.Add(1)
	b.started <- struct{}{}
	<-b.release
}

func TestRefresherCoalesces(t *testing.T) {
	t.Parallel()
	var r refresher
	b := newBlockingRun(10)
	run := b.run
	r.trigger(run)
	<-b.started
	for range 10 {
		r.trigger(run) // while the first run is blocked
	}
	close(b.release)
	<-b.started
	require.Eventually(t, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return !r.running
	}, 5*time.Second, time.Millisecond)
	assert.Equal(t, int32(2), b.runs.Load(), "one run at a time, later requests coalesce into one")
}

func TestStudioAttachmentConfig(t *testing.T) {
	t.Parallel()
	key, keyPEM := studiotest.ControllerRSA(t)
	agents := func() []*Agent { return []*Agent{stAgent(t, studiotest.AgentName)} }
	wsAuth := WithWorkspaceAuth(WorkspaceAuthSettings{Enabled: true, Issuer: studiotest.Issuer, PublicKeyPEM: studiotest.SigningPEM})
	studioEnv := map[string]string{studio.EnvAPIURL: "https://studio.example.com", studio.EnvAPIKey: studiotest.AccountKey,
		studio.EnvWorkspaceID: studiotest.Workspace, "SUPERVAIZER_PUBLIC_URL": studiotest.PublicURL}
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
		require.NotNil(t, srv.Studio())
		assert.Equal(t, "https://studio.example.com/w/ws-1/api/v1", srv.Studio().WorkspaceAPIBase())
		assert.True(t, srv.cfg.studioAttached)
		assert.Equal(t, studio.DefaultEnvironment, srv.studio.environment)
	})
	t.Run("partial environment", func(t *testing.T) {
		t.Parallel()
		_, err := NewServer(agents(), WithEnv(func(k string) string {
			return map[string]string{studio.EnvAPIURL: "https://studio.example.com"}[k]
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
		assert.Nil(t, srv.Studio())
		assert.False(t, srv.cfg.studioAttached)
		require.NoError(t, srv.Start(context.Background()))
	})
	t.Run("private key from the environment", func(t *testing.T) {
		t.Parallel()
		for _, v := range []string{keyPEM, strings.ReplaceAll(strings.TrimSpace(keyPEM), "\n", `\n`)} {
			srv, err := NewServer(agents(), envWith(map[string]string{studio.EnvPrivateKey: v}), wsAuth)
			require.NoError(t, err)
			assert.True(t, key.Equal(srv.studio.key))
			assert.Contains(t, srv.studio.publicPEM, "-----BEGIN PUBLIC KEY-----")
		}
	})
	t.Run("invalid private key", func(t *testing.T) {
		t.Parallel()
		_, err := NewServer(agents(), envWith(map[string]string{studio.EnvPrivateKey: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----"}), wsAuth)
		require.ErrorContains(t, err, studio.EnvPrivateKey)
		assert.NotContains(t, err.Error(), "AAAA")
	})
	t.Run("generated key is not exported", func(t *testing.T) {
		t.Parallel()
		before, had := os.LookupEnv(studio.EnvPrivateKey)
		srv, err := NewServer(agents(), envWith(nil), wsAuth)
		require.NoError(t, err)
		assert.Equal(t, studio.ControllerKeyBits, srv.studio.key.N.BitLen())
		after, has := os.LookupEnv(studio.EnvPrivateKey)
		assert.Equal(t, had, has)
		assert.Equal(t, before, after)
	})
}

func TestStartAndRefreshDoNotOverlap(t *testing.T) {
	t.Parallel()
	f := studiotest.New(t)
	var inFlight, maxInFlight atomic.Int32
	f.On("POST /ctrl-events/", func(w http.ResponseWriter, _ []byte) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		if n > maxInFlight.Load() {
			maxInFlight.Store(n)
		}
		time.Sleep(20 * time.Millisecond)
		hs := f.Handshake()
		writeJSON(w, http.StatusOK, map[string]any{"supervaizer_handshake": hs})
	})
	srv, _ := studioServer(t, f, nil)
	r := httptest.NewRequest(http.MethodPost, studio.RegistrationRefreshPath, nil)
	r.Header.Set(HeaderAPIKey, studiotest.ControllerKey)
	srv.ServeHTTP(httptest.NewRecorder(), r)
	require.NoError(t, srv.Start(context.Background()))
	require.Eventually(t, func() bool { return inFlight.Load() == 0 && f.Count(http.MethodPost, studiotest.EventsPath) >= 1 }, 5*time.Second, time.Millisecond)
	assert.Equal(t, int32(1), maxInFlight.Load())
}

func TestRegistrationRefreshDuringShutdown(t *testing.T) {
	t.Parallel()
	f := studiotest.New(t)
	srv, sink := studioServer(t, f, nil)
	require.NoError(t, srv.Start(context.Background()))
	require.Equal(t, 1, f.Count(http.MethodPost, studiotest.EventsPath))
	require.NoError(t, srv.Shutdown(context.Background()))

	r := httptest.NewRequest(http.MethodPost, studio.RegistrationRefreshPath, strings.NewReader(`{"reason":"late"}`))
	r.Header.Set(HeaderAPIKey, studiotest.ControllerKey)
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, r)
	assert.Equal(t, http.StatusServiceUnavailable, w.Code)

	// A refresh already queued when Shutdown begins does not register again.
	srv.refreshRegistration("queued")
	assert.Contains(t, sink.String(), "registration refresh skipped")
	assert.Equal(t, 1, f.Count(http.MethodPost, studiotest.EventsPath), "no server.register after Shutdown")
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
		f := studiotest.New(t)
		var block atomic.Bool
		entered, cancelled, unblock := make(chan struct{}), make(chan struct{}), make(chan struct{})
		var registers atomic.Int32
		// Studio in front of f whose server.register blocks, once block is
		// set, until the controller gives up on the request.
		front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/ctrl-events/") {
				f.Server.Config.Handler.ServeHTTP(w, r)
				return
			}
			registers.Add(1)
			if !block.Load() {
				f.Server.Config.Handler.ServeHTTP(w, r)
				return
			}
			// The server notices a closed connection only once the body is read.
			_, _ = io.Copy(io.Discard, r.Body)
			close(entered)
			select {
			case <-r.Context().Done(): // the controller closed the connection
				close(cancelled)
			case <-unblock: // the test failed: let front.Close return
			}
		}))
		t.Cleanup(front.Close)
		t.Cleanup(func() { close(unblock) }) // runs before front.Close
		acct := testClient(t, f, func(c *studio.Config) { c.APIURL = front.URL })
		srv, sink := studioServer(t, f, nil, WithStudio(acct))
		require.NoError(t, srv.Start(context.Background()))
		block.Store(true)

		refresh := func() int {
			r := httptest.NewRequest(http.MethodPost, studio.RegistrationRefreshPath, strings.NewReader(`{"reason":"blocked"}`))
			r.Header.Set(HeaderAPIKey, studiotest.ControllerKey)
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

		// The blocked server.register never ends on its own: a Shutdown
		// that waited for it would end with the deadline's error.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, srv.Shutdown(ctx), "Shutdown does not wait for the blocked server.register")
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
	f := studiotest.New(t)
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
	assert.Equal(t, 0, f.Count(http.MethodPost, studiotest.EventsPath))
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
			b := newBlockingRun(1)
			run := b.run
			if tt.running {
				require.True(t, r.trigger(run))
				<-b.started
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
				close(b.release)
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
			assert.Equal(t, want, b.runs.Load())
			assert.Equal(t, idle, r.close(), "close is idempotent")
		})
	}
}

// TestNewServerNeverChangesTheEnvironment: values the server generates (API
// key, server id, controller key) live for the process only; startup logs
// their fingerprints and the variables that make them stable.
func TestNewServerNeverChangesTheEnvironment(t *testing.T) {
	// Not parallel: it reads the process environment (t.Setenv).
	vars := []string{"SUPERVAIZER_API_KEY", "SUPERVAIZER_SERVER_ID", studio.EnvPrivateKey,
		studio.EnvAPIURL, studio.EnvAPIKey, studio.EnvWorkspaceID, "SUPERVAIZER_LOCAL_MODE"}
	for _, v := range vars {
		t.Setenv(v, "")
	}
	f := studiotest.New(t)
	logger, sink := studiotest.NewLogSink()
	srv, err := NewServer([]*Agent{stAgent(t, studiotest.AgentName)}, WithLogger(logger), WithStudio(testClient(t, f)),
		WithWorkspaceAuth(WorkspaceAuthSettings{Enabled: true, Issuer: studiotest.Issuer, PublicKeyPEM: studiotest.SigningPEM}),
		WithPublicURL(studiotest.PublicURL))
	require.NoError(t, err)
	for _, v := range vars {
		assert.Empty(t, os.Getenv(v), "%s was changed", v)
	}
	logs := sink.String()
	assert.Contains(t, logs, "SUPERVAIZER_API_KEY is not set")
	assert.Contains(t, logs, "api_key_fingerprint="+redact.Fingerprint(srv.APIKey()))
	assert.NotContains(t, logs, srv.APIKey())
	assert.Contains(t, logs, "SUPERVAIZER_SERVER_ID is not set")
	assert.Contains(t, logs, "server_id="+srv.ServerID())
	assert.Contains(t, logs, "SUPERVAIZER_PRIVATE_KEY is not set")
	assert.Contains(t, logs, "controller_public_key_fingerprint=")
}
