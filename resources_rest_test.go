package supervaizer_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	supervaizer "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/errcode"
	"github.com/supervaize/supervaizer-go/resource"
)

func TestDataResourceAuthorization(t *testing.T) {
	const readKey = "res-read-key"
	f := newResFixture(t, supervaizer.WithAPIKey(readKey, supervaizer.ScopeRead))
	list := func(c resCall) resCall {
		c.method, c.ws = cmpOr(c.method, http.MethodGet), resAlpha
		if c.path == "" {
			c.path = resPath("contacts", "")
		}
		return c
	}
	tests := []struct {
		name       string
		call       resCall
		wantStatus int
		wantDetail string // substring of the detail
	}{
		{"accepted", list(resCall{scopes: []string{"resource.contacts.list"}}), 200, ""},
		{"read key reads", list(resCall{scopes: []string{"resource.contacts.list"}, apiKey: readKey}), 200, ""},
		{"extra scopes are fine", list(resCall{scopes: []string{supervaizer.MethodActionInvoke, "resource.contacts.list"}}), 200, ""},
		{"no API key", list(resCall{scopes: []string{"resource.contacts.list"}, header: map[string]string{supervaizer.HeaderAPIKey: ""}}), 401, "API key"},
		{"read key cannot write", resCall{method: http.MethodPost, path: resPath("contacts", ""), body: `{"email":"a@x"}`,
			ws: resAlpha, scopes: []string{"resource.contacts.create"}, apiKey: readKey}, 403, "Insufficient scope"},
		{"no token", list(resCall{}), 403, "Workspace-Authorization"},
		{"scope of another operation", list(resCall{scopes: []string{"resource.contacts.get"}}), 403, "resource.contacts.list"},
		{"action scopes are not enough", list(resCall{scopes: []string{supervaizer.MethodActionInvoke}}), 403, "resource.contacts.list"},
		{"scope of another resource", list(resCall{scopes: []string{"resource.notes.list"}}), 403, "resource.contacts.list"},
		{"no workspace header", list(resCall{scopes: []string{"resource.contacts.list"}, header: map[string]string{resource.HeaderWorkspaceID: ""}}), 403, ""},
		{"unknown agent in the route", list(resCall{scopes: []string{"resource.contacts.list"}, path: "/api/agents/other-agent/data/contacts/"}), 403, ""},
		{"token in a bad format", list(resCall{header: map[string]string{supervaizer.HeaderWorkspaceAuthorization: "Bearer x.y"}}), 403, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := f.contacts.calls.Load()
			w := f.do(t, tt.call)
			require.Equal(t, tt.wantStatus, w.Code, w.Body.String())
			if tt.wantStatus == http.StatusOK {
				assert.Equal(t, before+1, f.contacts.calls.Load())
				return
			}
			assert.Contains(t, decodeBody(t, w)["detail"], tt.wantDetail)
			assert.NotContains(t, w.Body.String(), "Bearer")
			assert.Equal(t, before, f.contacts.calls.Load(), "the handler was not called")
		})
	}
}

func TestDataResourceNeverBypassesInLocalMode(t *testing.T) {
	agent, err := supervaizer.NewAgent(supervaizer.AgentSpec{Name: resAgentName, Version: "1.0.0", Registration: resRegistration(t)})
	require.NoError(t, err)
	store := newResStore()
	supervaizer.RegisterResource(agent, "contacts", store.resource())
	// Local mode with no workspace-authorization setting at all: /a2a bypasses.
	srv, err := supervaizer.NewServer([]*supervaizer.Agent{agent}, supervaizer.WithEnv(func(string) string { return "" }),
		supervaizer.WithLocalMode(true), supervaizer.WithAPIKey("k", supervaizer.ScopeWrite), supervaizer.WithServerID("srv-1"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })

	r := httptest.NewRequest(http.MethodGet, "http://localhost"+resPath("contacts", ""), nil)
	r.Header.Set(supervaizer.HeaderAPIKey, "k")
	r.Header.Set(resource.HeaderWorkspaceID, "ws-1")
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, r)
	require.Equal(t, http.StatusForbidden, w.Code, w.Body.String())
	assert.NotEmpty(t, decodeBody(t, w)["detail"])
	assert.Zero(t, store.calls.Load())

	// The same call through /a2a runs in the bypass, keyed by the request's workspace.
	body := `{"jsonrpc":"2.0","id":1,"method":"supervaizer/action.invoke","params":{"action_request":{"request_id":"r1",
		"actor":{"user_id":"u"},"workspace":{"id":"ws-1"},"mission_id":"m","agent_slug":"contacts-agent",
		"surface":"s","action":"resource.contacts.list","input":{}}}}`
	r = httptest.NewRequest(http.MethodPost, "http://localhost/a2a", strings.NewReader(body))
	r.Header.Set(supervaizer.HeaderAPIKey, "k")
	r.Header.Set("Content-Type", "application/json")
	w = httptest.NewRecorder()
	srv.ServeHTTP(w, r)
	require.Equal(t, http.StatusOK, w.Code)
	assert.Contains(t, w.Body.String(), `"resource.listed"`)
	assert.Equal(t, resource.ScopeKey{Level: contracts.ScopeWorkspace, Workspace: "ws-1"}, store.lastContext(t).Scope)
}

func TestDataResourceRoutesNotMountedOutsideLocalOrAttached(t *testing.T) {
	agent, err := supervaizer.NewAgent(supervaizer.AgentSpec{Name: resAgentName, Version: "1.0.0", Registration: resRegistration(t)})
	require.NoError(t, err)
	srv, err := supervaizer.NewServer([]*supervaizer.Agent{agent}, supervaizer.WithEnv(func(string) string { return "" }),
		supervaizer.WithAPIKey("k", supervaizer.ScopeWrite), supervaizer.WithServerID("srv-1"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	r := httptest.NewRequest(http.MethodGet, "http://localhost"+resPath("contacts", ""), nil)
	r.Header.Set(supervaizer.HeaderAPIKey, "k")
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, r)
	assert.Equal(t, http.StatusNotFound, w.Code)
}

func TestDataResourceMissionMetadataHeader(t *testing.T) {
	meta := func(v string) string { return base64.RawURLEncoding.EncodeToString([]byte(v)) }
	tests := []struct {
		name       string
		header     map[string]string
		wantStatus int
		wantMeta   string // the metadata the handler saw; "" for no mission
	}{
		{"no metadata", map[string]string{resource.HeaderMissionID: "m-1"}, 200, ""},
		{"metadata", map[string]string{resource.HeaderMissionID: "m-1",
			resource.HeaderMissionMetadata: meta(`{"filter":{"contact":"c-1"}}`)}, 200, `{"filter":{"contact":"c-1"}}`},
		{"padded metadata", map[string]string{resource.HeaderMissionID: "m-1",
			resource.HeaderMissionMetadata: base64.URLEncoding.EncodeToString([]byte(`{"a":1}`))}, 200, `{"a":1}`},
		{"metadata without mission id", map[string]string{resource.HeaderMissionMetadata: meta(`{}`)}, 400, ""},
		{"too long", map[string]string{resource.HeaderMissionID: "m-1",
			resource.HeaderMissionMetadata: meta(`{"a":"` + strings.Repeat("x", 3100) + `"}`)}, 400, ""},
		{"not base64url", map[string]string{resource.HeaderMissionID: "m-1", resource.HeaderMissionMetadata: "e30+/w"}, 400, ""},
		{"not UTF-8", map[string]string{resource.HeaderMissionID: "m-1", resource.HeaderMissionMetadata: meta("{\"a\":\"\xff\"}")}, 400, ""},
		{"not JSON", map[string]string{resource.HeaderMissionID: "m-1", resource.HeaderMissionMetadata: meta(`{a:1}`)}, 400, ""},
		{"JSON string", map[string]string{resource.HeaderMissionID: "m-1", resource.HeaderMissionMetadata: meta(`"{\"a\":1}"`)}, 400, ""},
		{"JSON array", map[string]string{resource.HeaderMissionID: "m-1", resource.HeaderMissionMetadata: meta(`[1]`)}, 400, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newResFixture(t)
			w := f.do(t, resCall{method: http.MethodGet, path: resPath("notes", ""), ws: resAlpha,
				scopes: []string{"resource.notes.list"}, header: tt.header})
			require.Equal(t, tt.wantStatus, w.Code, w.Body.String())
			if tt.wantStatus != http.StatusOK {
				assert.NotEmpty(t, decodeBody(t, w)["detail"])
				assert.Zero(t, f.notes.calls.Load(), "the handler was not called")
				return
			}
			rc := f.notes.lastContext(t)
			assert.Equal(t, "m-1", rc.MissionID)
			assert.Equal(t, resAgentSlug, rc.AgentSlug)
			if tt.wantMeta == "" {
				assert.Nil(t, rc.Mission)
				return
			}
			require.NotNil(t, rc.Mission)
			assert.Equal(t, "m-1", rc.Mission.ID)
			assert.JSONEq(t, tt.wantMeta, string(rc.Mission.Metadata))
		})
	}
}

func TestDataResourceRequestContextReachesHandler(t *testing.T) {
	f := newResFixture(t)
	w := f.do(t, resCall{method: http.MethodGet, path: resPath("contacts", ""), ws: resAlpha, scopes: []string{"resource.contacts.list"},
		header: map[string]string{resource.HeaderRequestID: "req-42", resource.HeaderMissionID: "m-3"}})
	require.Equal(t, http.StatusOK, w.Code)
	rc := f.contacts.lastContext(t)
	assert.Equal(t, "req-42", rc.RequestID)
	assert.Equal(t, "m-3", rc.MissionID)
	assert.Equal(t, "list", rc.Operation)
	require.NotNil(t, rc.Workspace)
	assert.Equal(t, resAlpha.id, rc.Workspace.WorkspaceID)
	assert.Equal(t, []string{"resource.contacts.list"}, rc.Workspace.Scopes)
	assert.Equal(t, resource.ScopeKey{Level: contracts.ScopeWorkspace, Workspace: resAlphaRef, ByRef: true}, rc.Scope)
}

func TestDataResourceRouting(t *testing.T) {
	f := newResFixture(t)
	tests := []struct {
		name       string
		call       resCall
		wantStatus int
	}{
		{"undeclared resource", resCall{method: http.MethodGet, path: resPath("nope", ""), scopes: []string{"resource.nope.list"}}, 404},
		{"import fields checked before the file", resCall{method: http.MethodPost, path: resPath("leads", "import/"), body: "email\na\n",
			contentType: "text/csv", scopes: []string{"resource.leads.import"}}, 422}, // registered: campaign missing
		{"operation not implemented", resCall{method: http.MethodGet, path: resPath("leads", ""), scopes: []string{"resource.leads.list"}}, 405},
		{"escaped item id", resCall{method: http.MethodGet, path: resPath("contacts", "a%2Fb"), scopes: []string{"resource.contacts.get"}}, 404},
		{"import needs CSV", resCall{method: http.MethodPost, path: resPath("contacts", "import/"), body: `{"a":1}`,
			contentType: "application/json", scopes: []string{"resource.contacts.import"}}, 415},
		{"import needs UTF-8", resCall{method: http.MethodPost, path: resPath("contacts", "import/"), body: "email\na\n",
			contentType: "text/csv; charset=latin1", scopes: []string{"resource.contacts.import"}}, 415},
		{"method not allowed on import", resCall{method: http.MethodGet, path: resPath("contacts", "import/"), scopes: []string{"resource.contacts.list"}}, 405},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.call.ws = resAlpha
			w := f.do(t, tt.call)
			assert.Equal(t, tt.wantStatus, w.Code, w.Body.String())
			var body map[string]any
			require.NoError(t, json.Unmarshal(w.Body.Bytes(), &body))
			assert.NotEmpty(t, body["detail"])
		})
	}
	assert.Zero(t, f.leads.calls.Load())
	assert.EqualValues(t, 1, f.contacts.calls.Load(), "only the get of the escaped id reached a handler")
}

func TestDataResourceHandlerFailures(t *testing.T) {
	agent, err := supervaizer.NewAgent(supervaizer.AgentSpec{Name: resAgentName, Version: "1.0.0", Registration: resRegistration(t)})
	require.NoError(t, err)
	supervaizer.RegisterResource(agent, "contacts", resource.Handlers[resContact]{
		List: func(context.Context, resource.Context, resource.ListQuery) ([]resContact, error) {
			panic("secret detail")
		},
		Get: func(context.Context, resource.Context, string) (resContact, error) {
			return resContact{}, context.DeadlineExceeded
		},
	})
	f := &resFixture{contacts: newResStore()}
	f.ts = newResTestServer(t, agent)
	for _, c := range []resCall{
		{method: http.MethodGet, path: resPath("contacts", ""), ws: resAlpha, scopes: []string{"resource.contacts.list"}},
		{method: http.MethodGet, path: resPath("contacts", "x"), ws: resAlpha, scopes: []string{"resource.contacts.get"}},
	} {
		w := f.do(t, c)
		assert.Equal(t, http.StatusInternalServerError, w.Code)
		assert.Equal(t, `{"detail":"Resource handler failed"}`, w.Body.String())
	}
	_, err = f.ts.Invoke(context.Background(), f.ts.Request("resource.contacts.list", nil))
	assert.Equal(t, errcode.InternalError, supervaizer.CodeOf(err))
}
