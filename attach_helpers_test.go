package supervaizer

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/internal/tools/proctest"
	"github.com/supervaize/supervaizer-go/internal/tools/studiotest"
	"github.com/supervaize/supervaizer-go/studio"
)

// testClient is a Studio client on f with the test account key; retries are fast.
func testClient(tb testing.TB, f *studiotest.Fake, mod ...func(*studio.Config)) *studio.Client {
	cfg := studio.Config{APIURL: f.URL(), WorkspaceID: studiotest.Workspace, APIKey: studiotest.AccountKey, RetryDelay: time.Millisecond}
	for _, m := range mod {
		m(&cfg)
	}
	c, err := studio.NewClient(cfg)
	require.NoError(tb, err)
	return c
}

// stAgent builds an agent declaring job.start and context.assign.
func stAgent(tb testing.TB, name string, mod ...func(*AgentSpec)) *Agent {
	tb.Helper()
	slug := strings.ToLower(strings.ReplaceAll(name, " ", "-"))
	reg := RegistrationSpec{
		AgentSlug: slug, DisplayName: name, A2UICatalogVersion: slug + ".2026-05-16",
		Actions: Actions("job.start", studio.ContextAssignAction),
	}
	spec := AgentSpec{Name: name, Version: "1.0.0", Description: "Turns a question into a sourced brief.", Registration: reg}
	for _, m := range mod {
		m(&spec)
	}
	a, err := NewAgent(spec)
	require.NoError(tb, err)
	return a
}

// studioServer builds a controller attached to f with workspace
// authorization on, isolated from the process environment.
func studioServer(t *testing.T, f *studiotest.Fake, agents []*Agent, opts ...Option) (*Server, *proctest.Buffer) {
	t.Helper()
	key, _ := studiotest.ControllerRSA(t)
	logger, sink := studiotest.NewLogSink()
	if agents == nil {
		agents = []*Agent{stAgent(t, studiotest.AgentName)}
	}
	base := []Option{
		WithStudio(testClient(t, f)), WithLogger(logger),
		WithEnv(func(k string) string { return map[string]string{"SUPERVAIZER_SERVER_ID": studiotest.LocalServer}[k] }),
		WithWorkspaceAuth(WorkspaceAuthSettings{Enabled: true, Issuer: studiotest.Issuer, PublicKeyPEM: studiotest.SigningPEM}),
		WithAPIKey(studiotest.ControllerKey, ScopeWrite), WithAPIKey(studiotest.ReadKey, ScopeRead),
		WithPublicURL(studiotest.PublicURL), WithControllerKey(key),
	}
	srv, err := NewServer(agents, append(base, opts...)...)
	require.NoError(t, err)
	return srv, sink
}

// assertNoSecrets checks that no account or controller key leaks into s.
func assertNoSecrets(t *testing.T, s string) {
	t.Helper()
	assert.NotContains(t, s, studiotest.AccountKey)
	assert.NotContains(t, s, studiotest.ControllerKey)
}

// stToken mints a workspace token signed by studiotest.SigningKey (golang-jwt, EdDSA).
func stToken(tb testing.TB, mod func(c map[string]any)) string {
	tb.Helper()
	now := time.Now().Unix()
	c := map[string]any{
		"iss": studiotest.Issuer, "aud": studiotest.Audience, "grant_id": "grant-01",
		"workspace_id": studiotest.Workspace, "workspace_slug": "acme",
		"agent_id": studiotest.StudioAgent, "agent_slug": studiotest.AgentSlug, "server_id": studiotest.StudioServer,
		"scopes": []string{MethodActionInvoke, "job.start"}, "iat": now - 10, "exp": now + 600,
	}
	if mod != nil {
		mod(c)
	}
	return mintEdDSA(tb, c)
}

// stInvoke posts a job.start action.invoke with the token and returns the
// HTTP status and the decoded JSON-RPC response.
func stInvoke(tb testing.TB, srv *Server, token string) (int, map[string]any) {
	tb.Helper()
	req := contracts.ActionRequest{
		RequestID: "req-1", Actor: contracts.Actor{UserID: "u-1"}, Workspace: contracts.WorkspaceRef{ID: studiotest.Workspace, Slug: "acme"},
		MissionID: "mis-3", AgentSlug: studiotest.AgentSlug, Surface: "job.start", Action: "job.start", Input: json.RawMessage(`{}`),
	}
	body, err := contracts.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": MethodActionInvoke, "params": map[string]any{"action_request": req}})
	require.NoError(tb, err)
	r := httptest.NewRequest(http.MethodPost, "/a2a", bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set(HeaderAPIKey, studiotest.ControllerKey)
	r.Header.Set(HeaderWorkspaceAuthorization, "Bearer "+token)
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, r)
	var out map[string]any
	require.NoError(tb, json.Unmarshal(w.Body.Bytes(), &out), w.Body.String())
	return w.Code, out
}

// mintEdDSA signs claims with studiotest.SigningKey.
func mintEdDSA(tb testing.TB, claims map[string]any) string {
	tb.Helper()
	s, err := jwt.NewWithClaims(jwt.SigningMethodEdDSA, jwt.MapClaims(claims)).SignedString(studiotest.SigningKey)
	require.NoError(tb, err)
	return s
}
