package resource_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/resource"
)

// restFixture mounts the routes of one contacts resource on a router, with
// a verifier that accepts the token "good" for any scope.
type restFixture struct {
	router http.Handler
	failed atomic.Int32
	scopes []string
}

func newRESTFixture(t *testing.T) *restFixture {
	t.Helper()
	def := contracts.ResourceDefinition{
		ID: "contacts", Label: "Contacts", Operations: []string{"list", "get", "create", "delete"},
		Fields: []contracts.ResourceField{{ID: "email", Label: "E-mail", Type: contracts.FieldString, Required: true}},
	}
	store := &contacts{items: map[resource.ScopeKey][]contact{}}
	h := store.handlers()
	h.Delete = func(context.Context, resource.Context, string) error { panic("delete is broken") }
	b, err := resource.Bind(def, h)
	require.NoError(t, err)
	f := &restFixture{}
	rt := &resource.Routes{
		Find: func(ctx context.Context, agentSlug, id string, _ *contracts.VerifiedWorkspaceContext) (context.Context, *resource.Binding) {
			if agentSlug != "contacts-agent" || id != b.ID() {
				return ctx, nil
			}
			return ctx, b
		},
		Verify: func(_ context.Context, r *http.Request, agentSlug, scope string) (*contracts.VerifiedWorkspaceContext, error) {
			f.scopes = append(f.scopes, scope)
			if r.Header.Get("Authorization") != "good" {
				return nil, errors.New("workspace token refused")
			}
			return &contracts.VerifiedWorkspaceContext{WorkspaceID: "ws-1", AgentSlug: agentSlug}, nil
		},
		ReadJSON: func(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
			if ct := r.Header.Get("Content-Type"); ct != "" && ct != "application/json" {
				w.WriteHeader(http.StatusUnsupportedMediaType)
				return nil, false
			}
			b, err := io.ReadAll(r.Body)
			return b, err == nil
		},
		Failed: func(context.Context, string, string, string, error) { f.failed.Add(1) },
	}
	r := chi.NewRouter()
	pass := func(next http.Handler) http.Handler { return next }
	rt.Mount(r, pass, pass)
	f.router = r
	return f
}

func (f *restFixture) do(method, path, token, contentType, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", token)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	w := httptest.NewRecorder()
	f.router.ServeHTTP(w, req)
	return w
}

func TestRoutes(t *testing.T) {
	const base = "/api/agents/contacts-agent/data/contacts/"
	tests := []struct {
		name               string
		method, path, auth string
		contentType, body  string
		wantStatus         int
		wantBody           string // a substring of the answer
		wantScope          string // the scope verified
	}{
		{"token refused", http.MethodGet, base, "bad", "", "", 403, `"detail":"workspace token refused"`, "resource.contacts.list"},
		{"unknown resource", http.MethodGet, "/api/agents/contacts-agent/data/leads/", "good", "", "", 404, "Resource not found", "resource.leads.list"},
		{"unknown agent", http.MethodGet, "/api/agents/other/data/contacts/", "good", "", "", 404, "Resource not found", "resource.contacts.list"},
		{"operation not implemented", http.MethodPut, base + "c-1", "good", "application/json", `{"email":"a@b"}`, 405, "Operation not supported: resource.contacts.update", "resource.contacts.update"},
		{"create", http.MethodPost, base, "good", "application/json", `{"email":"ann@example.com"}`, 201, `"id":"c-1"`, "resource.contacts.create"},
		{"create refused by the fields", http.MethodPost, base, "good", "", `{}`, 422, `"code":"required"`, "resource.contacts.create"},
		{"create not JSON", http.MethodPost, base, "good", "text/plain", `x`, 415, "", "resource.contacts.create"},
		{"list", http.MethodGet, base + "?limit=10", "good", "", "", 200, `"count":0`, "resource.contacts.list"},
		{"list bad limit", http.MethodGet, base + "?limit=0", "good", "", "", 400, "limit must be an integer between 1 and 1000", "resource.contacts.list"},
		{"get not found", http.MethodGet, base + "c-9", "good", "", "", 404, `"code":"not_found"`, "resource.contacts.get"},
		{"handler panic", http.MethodDelete, base + "c-1", "good", "", "", 500, "Resource handler failed", "resource.contacts.delete"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newRESTFixture(t)
			w := f.do(tt.method, tt.path, tt.auth, tt.contentType, tt.body)
			assert.Equal(t, tt.wantStatus, w.Code, w.Body.String())
			assert.Contains(t, w.Body.String(), tt.wantBody)
			assert.Equal(t, []string{tt.wantScope}, f.scopes)
			assert.Equal(t, int32(map[bool]int{true: 1}[tt.wantStatus == 500]), f.failed.Load(), "a failure is logged, a refusal is not")
		})
	}
}

func TestRoutesMissionMetadataHeader(t *testing.T) {
	f := newRESTFixture(t)
	req := httptest.NewRequest(http.MethodGet, "/api/agents/contacts-agent/data/contacts/", nil)
	req.Header.Set("Authorization", "good")
	req.Header.Set(resource.HeaderMissionMetadata, "e30") // {} without a mission id
	w := httptest.NewRecorder()
	f.router.ServeHTTP(w, req)
	assert.Equal(t, http.StatusBadRequest, w.Code)
	assert.Contains(t, w.Body.String(), "requires "+resource.HeaderMissionID)

	req.Header.Set(resource.HeaderWorkspaceID, "ws-2") // contradicts the verified workspace
	req.Header.Del(resource.HeaderMissionMetadata)
	w = httptest.NewRecorder()
	f.router.ServeHTTP(w, req)
	assert.Equal(t, http.StatusForbidden, w.Code)
}
