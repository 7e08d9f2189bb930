package supervaizer_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	supervaizer "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/a2ui"
	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/errcode"
	"github.com/supervaize/supervaizer-go/resource"
	svtest "github.com/supervaize/supervaizer-go/testing"
)

// One agent declares its resources and a dataset once; the tests exercise
// them through POST /a2a and the DataResource REST routes, with the same
// stores, under tokens of two workspaces.

const (
	resAgentName = "Contacts Agent"
	resAgentSlug = "contacts-agent"
	resAlphaRef  = "alpha-prod" // agent_workspace_ref of workspace alpha
)

type resWorkspace struct{ id, slug string }

var (
	resAlpha = resWorkspace{"ws-a", "alpha"} // bound to resAlphaRef
	resBeta  = resWorkspace{"ws-b", "beta"}  // not bound: keyed by workspace id
)

// resContact is the item type of every test resource.
type resContact struct {
	ID    string `json:"id"`
	Email string `json:"email"`
	Name  string `json:"name,omitempty"`
	Age   int    `json:"age,omitempty"`
}

// resStore is an agent's storage: items partitioned by the verified scope
// key, and nothing else.
type resStore struct {
	mu      sync.Mutex
	seq     int
	items   map[resource.ScopeKey]map[string]resContact
	batches []resource.ImportBatch[resContact]
	seen    []resource.Context
	calls   atomic.Int64
}

func newResStore() *resStore {
	return &resStore{items: map[resource.ScopeKey]map[string]resContact{}}
}

func (s *resStore) record(rc resource.Context) {
	s.calls.Add(1)
	s.seen = append(s.seen, rc)
}

func (s *resStore) lastContext(t *testing.T) resource.Context {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	require.NotEmpty(t, s.seen)
	return s.seen[len(s.seen)-1]
}

func (s *resStore) add(rc resource.Context, c resContact) resContact {
	s.seq++
	c.ID = fmt.Sprintf("c-%04d", s.seq)
	if s.items[rc.Scope] == nil {
		s.items[rc.Scope] = map[string]resContact{}
	}
	s.items[rc.Scope][c.ID] = c
	return c
}

func (s *resStore) scopes() []resource.ScopeKey {
	s.mu.Lock()
	defer s.mu.Unlock()
	var keys []resource.ScopeKey
	for k := range s.items {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b resource.ScopeKey) int { return strings.Compare(a.String(), b.String()) })
	return keys
}

// resource implements every operation on the store.
func (s *resStore) resource() resource.Handlers[resContact] {
	return resource.Handlers[resContact]{
		List: func(_ context.Context, rc resource.Context, q resource.ListQuery) ([]resContact, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.record(rc)
			var out []resContact
			for _, c := range s.items[rc.Scope] {
				if q.Search == "" || strings.Contains(c.Email, q.Search) {
					out = append(out, c)
				}
			}
			slices.SortFunc(out, func(a, b resContact) int { return strings.Compare(a.ID, b.ID) })
			out = out[min(q.Offset, len(out)):]
			return out[:min(q.Limit, len(out))], nil
		},
		Get: func(_ context.Context, rc resource.Context, id string) (resContact, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.record(rc)
			c, ok := s.items[rc.Scope][id]
			if !ok {
				return c, resource.ErrNotFound
			}
			return c, nil
		},
		Create: func(_ context.Context, rc resource.Context, c resContact) (resContact, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.record(rc)
			if c.Email == "taken@example.com" {
				return c, &resource.RefusalError{Code: "duplicate_email", Message: "this e-mail is already a contact", Field: "email", Status: http.StatusConflict}
			}
			return s.add(rc, c), nil
		},
		Update: func(_ context.Context, rc resource.Context, id string, c resContact) (resContact, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.record(rc)
			if _, ok := s.items[rc.Scope][id]; !ok {
				return c, fmt.Errorf("update %s: %w", id, resource.ErrNotFound)
			}
			c.ID = id
			s.items[rc.Scope][id] = c
			return c, nil
		},
		Delete: func(_ context.Context, rc resource.Context, id string) error {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.record(rc)
			if _, ok := s.items[rc.Scope][id]; !ok {
				return resource.ErrNotFound
			}
			delete(s.items[rc.Scope], id)
			return nil
		},
		Import: func(_ context.Context, rc resource.Context, b resource.ImportBatch[resContact]) (resource.ImportReport[resContact], error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.record(rc)
			s.batches = append(s.batches, b)
			rep := resource.ImportReport[resContact]{Summary: map[string]any{"created": len(b.Items)}}
			for _, c := range b.Items {
				rep.Items = append(rep.Items, s.add(rc, c))
			}
			return rep, nil
		},
		ImportDocument: &a2ui.ResourceImport{
			ID: "contacts.import", Title: "Import contacts", Resource: "contacts",
			AcceptedFormats: []string{contracts.ImportFormatCSV, contracts.ImportFormatXLSX},
			Fields:          a2ui.ResourceFields(a2ui.StringField("source", "Source")),
			Columns: []a2ui.ImportColumn{
				{ID: "email", Label: "E-mail", Required: true},
				{ID: "name", Label: "Name"},
				{ID: "age", Label: "Age", Type: contracts.FieldInteger},
			},
			Submit: a2ui.Submit{Action: "resource.contacts.import", Label: "Import"},
		},
	}
}

// resStat is the row type of the contact_stats dataset.
type resStat struct {
	Label string `json:"label"`
	Value int    `json:"value"`
	JobID string `json:"job_id,omitempty"`
}

// resFixture is the test agent served by a test server in local mode (so
// the /api routes are mounted) with workspace verification on.
type resFixture struct {
	ts                            *svtest.TestServer
	contacts, notes, tasks, leads *resStore
	statsCalls                    atomic.Int64
	statsExtra                    int // extra rows the dataset returns beyond the count row
}

func resRegistration(tb testing.TB) supervaizer.RegistrationSpec {
	tb.Helper()
	reg := supervaizer.RegistrationSpec{
		AgentSlug: resAgentSlug, DisplayName: "Contacts", A2UICatalogVersion: "contacts-catalog/1",
		Resources: []contracts.ResourceDefinition{
			{ID: "contacts", Label: "Contacts", Operations: []string{"list", "get", "create", "update", "delete", "import"},
				Fields: a2ui.ResourceFields(
					a2ui.StringField("id", "ID", a2ui.ReadOnly(), a2ui.Required()),
					a2ui.StringField("email", "E-mail", a2ui.Required()),
					a2ui.StringField("name", "Name"),
					a2ui.IntegerField("age", "Age", a2ui.Min(0)))},
			{ID: "notes", Label: "Notes", Scope: contracts.ScopeMission, RequiresContext: []string{"workspace.id", "mission.id"},
				Operations: []string{"list", "create"}},
			{ID: "tasks", Label: "Tasks", Scope: contracts.ScopeJob, Operations: []string{"list", "create"}},
			{ID: "leads", Label: "Leads", Operations: []string{"import", "reconcile"}},
		},
		Datasets: []contracts.DatasetDefinition{{ID: "contact_stats", Label: "Contact stats"}},
		Dashboards: []contracts.DashboardDefinition{{ID: "overview", Label: "Overview", Widgets: []contracts.Widget{
			{ID: "count", Title: "Contacts", Data: &contracts.WidgetData{Mode: contracts.DataModeRef, DatasetID: new("contact_stats")}},
		}}},
	}
	return reg
}

func newResFixture(tb testing.TB, opts ...supervaizer.Option) *resFixture {
	tb.Helper()
	agent, err := supervaizer.NewAgent(supervaizer.AgentSpec{Name: resAgentName, Version: "1.0.0", Registration: resRegistration(tb)})
	require.NoError(tb, err)
	f := &resFixture{contacts: newResStore(), notes: newResStore(), tasks: newResStore(), leads: newResStore()}
	supervaizer.RegisterResource(agent, "contacts", f.contacts.resource())
	notes := f.notes.resource()
	supervaizer.RegisterResource(agent, "notes", resource.Handlers[resContact]{List: notes.List, Create: notes.Create})
	tasks := f.tasks.resource()
	supervaizer.RegisterResource(agent, "tasks", resource.Handlers[resContact]{List: tasks.List})
	leads := f.leads.resource()
	doc := *leads.ImportDocument
	doc.ID, doc.Resource, doc.Submit.Action = "leads.import", "leads", "resource.leads.import"
	doc.AcceptedFormats = []string{contracts.ImportFormatCSV} // CSV only
	doc.Fields = a2ui.ResourceFields(a2ui.IntegerField("campaign", "Campaign", a2ui.Required()))
	supervaizer.RegisterResource(agent, "leads", resource.Handlers[resContact]{
		Import: leads.Import, ImportDocument: &doc, PartialImport: true,
		ImportLimits: resource.ImportLimits{MaxBytes: 256, MaxRows: 4},
	})
	supervaizer.RegisterDataset(agent, "contact_stats", func(_ context.Context, rc resource.Context, q resource.DatasetQuery) ([]resStat, error) {
		f.statsCalls.Add(1)
		f.contacts.mu.Lock()
		n := len(f.contacts.items[rc.Scope])
		f.contacts.mu.Unlock()
		rows := []resStat{{Label: "Contacts", Value: n, JobID: q.JobID}}
		for i := range f.statsExtra {
			rows = append(rows, resStat{Label: fmt.Sprintf("extra %d", i), Value: i})
		}
		return rows[min(q.Offset, len(rows)):], nil
	})
	f.ts = newResTestServer(tb, agent, opts...)
	return f
}

// newResTestServer serves agent in local mode (which mounts the /api routes)
// with workspace verification on, alpha bound to resAlphaRef.
func newResTestServer(tb testing.TB, agent *supervaizer.Agent, opts ...supervaizer.Option) *svtest.TestServer {
	tb.Helper()
	ts := svtest.NewTestServer(tb, []*supervaizer.Agent{agent}, append([]supervaizer.Option{supervaizer.WithLocalMode(true)}, opts...)...)
	ts.Studio.BindWorkspace(resAgentSlug, resAlpha.id, resAlphaRef)
	return ts
}

// invoke calls action in workspace ws through POST /a2a with a token minted
// for exactly that call; mod adjusts the request first.
func (f *resFixture) invoke(tb testing.TB, ws resWorkspace, action string, input any, mod ...func(*contracts.ActionRequest)) *contracts.ActionResult {
	tb.Helper()
	req := f.ts.Request(action, input)
	req.Workspace = contracts.WorkspaceRef{ID: ws.id, Slug: ws.slug}
	for _, m := range mod {
		m(&req)
	}
	res, err := f.ts.Invoke(context.Background(), req)
	require.NoError(tb, err)
	return res
}

// resCall is one DataResource REST call.
type resCall struct {
	method, path string
	body         string
	contentType  string
	ws           resWorkspace
	scopes       []string          // the token's scopes; nil: none minted
	header       map[string]string // set after the defaults ("" deletes)
	apiKey       string            // default: the write key
}

// do serves c and returns the recorder.
func (f *resFixture) do(tb testing.TB, c resCall) *httptest.ResponseRecorder {
	tb.Helper()
	var body io.Reader = http.NoBody
	if c.body != "" {
		body = strings.NewReader(c.body)
	}
	r := httptest.NewRequest(c.method, "http://localhost"+c.path, body)
	if c.contentType == "" && c.body != "" {
		c.contentType = "application/json"
	}
	if c.contentType != "" {
		r.Header.Set("Content-Type", c.contentType)
	}
	r.Header.Set(supervaizer.HeaderAPIKey, cmpOr(c.apiKey, f.ts.APIKey))
	r.Header.Set(resource.HeaderWorkspaceID, c.ws.id)
	r.Header.Set(resource.HeaderWorkspaceSlug, c.ws.slug)
	if c.scopes != nil {
		tok := f.ts.Studio.Mint(f.ts.Studio.Claims(svtest.Grant{
			WorkspaceID: c.ws.id, WorkspaceSlug: c.ws.slug, AgentSlug: resAgentSlug, Scopes: c.scopes}))
		r.Header.Set(supervaizer.HeaderWorkspaceAuthorization, "Bearer "+tok)
	}
	for k, v := range c.header {
		if v == "" {
			r.Header.Del(k)
		} else {
			r.Header.Set(k, v)
		}
	}
	w := httptest.NewRecorder()
	f.ts.Server.ServeHTTP(w, r)
	return w
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// rest is do for the usual call: op on resource path in ws with the single
// scope resource.<name>.<op>.
func (f *resFixture) rest(tb testing.TB, ws resWorkspace, method, name, op, suffix, body string) *httptest.ResponseRecorder {
	tb.Helper()
	return f.do(tb, resCall{method: method, path: resPath(name, suffix), body: body, ws: ws,
		scopes: []string{"resource." + name + "." + op}})
}

func resPath(name, suffix string) string {
	return "/api/agents/" + resAgentSlug + "/data/" + name + "/" + suffix
}

// decodeBody decodes a JSON response body.
func decodeBody(tb testing.TB, w *httptest.ResponseRecorder) map[string]any {
	tb.Helper()
	var m map[string]any
	require.NoError(tb, json.Unmarshal(w.Body.Bytes(), &m), w.Body.String())
	return m
}

// emails returns the sorted e-mails of items.
func emails(items []map[string]any) []string {
	out := []string{}
	for _, it := range items {
		out = append(out, fmt.Sprint(it["email"]))
	}
	slices.Sort(out)
	return out
}

func anyItems(v any) []map[string]any {
	var out []map[string]any
	for _, it := range v.([]any) {
		out = append(out, it.(map[string]any))
	}
	return out
}

// listBoth lists the contacts of ws through both transports and checks
// that they agree.
func (f *resFixture) listBoth(t *testing.T, ws resWorkspace) []string {
	t.Helper()
	res := f.invoke(t, ws, "resource.contacts.list", nil)
	require.Equal(t, contracts.StatusOK, res.Status, res.Errors)
	require.Len(t, res.Effects, 1)
	assert.Equal(t, "resource.listed", res.Effects[0].Type)
	viaA2A := emails(res.Effects[0].Items)
	w := f.rest(t, ws, http.MethodGet, "contacts", "list", "", "")
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	body := decodeBody(t, w)
	viaREST := emails(anyItems(body["items"]))
	assert.Equal(t, viaA2A, viaREST, "both transports list the same items")
	assert.EqualValues(t, len(viaREST), body["count"])
	return viaA2A
}

func errorCodes(res *contracts.ActionResult) []string {
	var codes []string
	for _, e := range res.Errors {
		codes = append(codes, e.Code)
	}
	return codes
}

func TestResourceIsolationAcrossTransportsAndWorkspaces(t *testing.T) {
	f := newResFixture(t)

	// Workspace alpha: one item through each transport; beta: one through REST.
	res := f.invoke(t, resAlpha, "resource.contacts.create", map[string]any{"item": map[string]any{"email": "ann@a.test", "name": "Ann"}})
	require.Equal(t, contracts.StatusOK, res.Status, res.Errors)
	require.Equal(t, "resource.created", res.Effects[0].Type)
	annID := res.Effects[0].Item["id"].(string)
	w := f.rest(t, resAlpha, http.MethodPost, "contacts", "create", "", `{"email":"bob@a.test","age":41}`)
	require.Equal(t, http.StatusCreated, w.Code, w.Body.String())
	bobID := decodeBody(t, w)["id"].(string)
	w = f.rest(t, resBeta, http.MethodPost, "contacts", "create", "", `{"email":"zed@b.test"}`)
	require.Equal(t, http.StatusCreated, w.Code, w.Body.String())

	assert.Equal(t, []string{"ann@a.test", "bob@a.test"}, f.listBoth(t, resAlpha))
	assert.Equal(t, []string{"zed@b.test"}, f.listBoth(t, resBeta))

	// Beta never sees, changes or deletes alpha's items, whatever the transport.
	for _, id := range []string{annID, bobID} {
		for _, call := range []struct {
			action string
			input  map[string]any
		}{
			{"resource.contacts.get", map[string]any{"id": id}},
			{"resource.contacts.update", map[string]any{"id": id, "item": map[string]any{"email": "evil@b.test"}}},
			{"resource.contacts.delete", map[string]any{"id": id}},
		} {
			res := f.invoke(t, resBeta, call.action, call.input)
			assert.Equal(t, contracts.StatusError, res.Status, call.action)
			assert.Equal(t, []string{contracts.ErrorNotFound}, errorCodes(res), call.action)
		}
		assert.Equal(t, http.StatusNotFound, f.rest(t, resBeta, http.MethodGet, "contacts", "get", id, "").Code)
		assert.Equal(t, http.StatusNotFound, f.rest(t, resBeta, http.MethodPut, "contacts", "update", id, `{"email":"evil@b.test"}`).Code)
		assert.Equal(t, http.StatusNotFound, f.rest(t, resBeta, http.MethodDelete, "contacts", "delete", id, "").Code)
	}

	// Imports into beta, through both transports, stay in beta.
	w = f.do(t, resCall{method: http.MethodPost, path: resPath("contacts", "import/"), body: "email\ncat@b.test\n",
		contentType: "text/csv", ws: resBeta, scopes: []string{"resource.contacts.import"}})
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	res = f.invoke(t, resBeta, "resource.contacts.import", map[string]any{"format": "csv", "content": "email\ndan@b.test\n"})
	require.Equal(t, contracts.StatusOK, res.Status, res.Errors)

	assert.Equal(t, []string{"ann@a.test", "bob@a.test"}, f.listBoth(t, resAlpha))
	assert.Equal(t, []string{"cat@b.test", "dan@b.test", "zed@b.test"}, f.listBoth(t, resBeta))

	// The store holds exactly two partitions: alpha by its agent_workspace_ref,
	// beta by its workspace id.
	assert.Equal(t, []resource.ScopeKey{
		{Level: contracts.ScopeWorkspace, Workspace: resAlphaRef, ByRef: true},
		{Level: contracts.ScopeWorkspace, Workspace: resBeta.id},
	}, f.contacts.scopes())

	// Within alpha, both transports share the items.
	w = f.rest(t, resAlpha, http.MethodGet, "contacts", "get", annID, "")
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	assert.Equal(t, "Ann", decodeBody(t, w)["name"])
	res = f.invoke(t, resAlpha, "resource.contacts.update", map[string]any{"id": bobID, "item": map[string]any{"email": "bob@a.test", "name": "Bob"}})
	require.Equal(t, contracts.StatusOK, res.Status, res.Errors)
	assert.Equal(t, "Bob", res.Effects[0].Item["name"])
	assert.Equal(t, http.StatusNoContent, f.rest(t, resAlpha, http.MethodDelete, "contacts", "delete", annID, "").Code)
	res = f.invoke(t, resAlpha, "resource.contacts.get", map[string]any{"id": bobID})
	require.Equal(t, contracts.StatusOK, res.Status, res.Errors)
	assert.Equal(t, "resource.fetched", res.Effects[0].Type)
	assert.Equal(t, "Bob", res.Effects[0].Item["name"])
	res = f.invoke(t, resAlpha, "resource.contacts.delete", map[string]any{"id": bobID})
	require.Equal(t, contracts.StatusOK, res.Status, res.Errors)
	assert.Equal(t, "resource.deleted", res.Effects[0].Type)
	assert.Equal(t, map[string]any{"id": bobID}, res.Effects[0].Item)
	assert.Empty(t, f.listBoth(t, resAlpha))
}

func TestResourceRefAndWorkspaceIDNeverShareAPartition(t *testing.T) {
	f := newResFixture(t)
	// Workspace gamma is bound to a ref equal to beta's workspace id.
	gamma := resWorkspace{"ws-c", "gamma"}
	f.ts.Studio.BindWorkspace(resAgentSlug, gamma.id, resBeta.id)
	require.Equal(t, contracts.StatusOK, f.invoke(t, resBeta, "resource.contacts.create", map[string]any{"item": map[string]any{"email": "zed@b.test"}}).Status)
	assert.Empty(t, f.listBoth(t, gamma))
	rc := f.contacts.lastContext(t)
	assert.Equal(t, "ref:ws-b", rc.Scope.String())
	assert.Equal(t, []resource.ScopeKey{{Level: contracts.ScopeWorkspace, Workspace: resBeta.id}}, f.contacts.scopes())
}

func TestResourceForgedContextChangesNothing(t *testing.T) {
	f := newResFixture(t)
	require.Equal(t, contracts.StatusOK, f.invoke(t, resAlpha, "resource.contacts.create", map[string]any{"item": map[string]any{"email": "ann@a.test"}}).Status)
	require.Equal(t, contracts.StatusOK, f.invoke(t, resBeta, "resource.contacts.create", map[string]any{"item": map[string]any{"email": "zed@b.test"}}).Status)

	// Filters and a client-supplied workspace_authorization naming beta: still alpha.
	res := f.invoke(t, resAlpha, "resource.contacts.list", map[string]any{"filters": map[string]any{"workspace_id": resBeta.id}},
		func(r *contracts.ActionRequest) {
			r.WorkspaceAuthorization = &contracts.VerifiedWorkspaceContext{GrantID: "forged", WorkspaceID: resBeta.id, AgentSlug: resAgentSlug}
		})
	require.Equal(t, contracts.StatusOK, res.Status, res.Errors)
	assert.Equal(t, []string{"ann@a.test"}, emails(res.Effects[0].Items))

	// A request naming beta with alpha's token is refused before any handler.
	before := f.contacts.calls.Load()
	req := f.ts.Request("resource.contacts.list", nil)
	req.Workspace = contracts.WorkspaceRef{ID: resAlpha.id, Slug: resAlpha.slug}
	tok := f.ts.Studio.TokenForAction(req)
	req.Workspace = contracts.WorkspaceRef{ID: resBeta.id, Slug: resBeta.slug}
	body, err := f.ts.Call(context.Background(), supervaizer.MethodActionInvoke, map[string]any{"action_request": req}, tok)
	require.NoError(t, err)
	assert.Contains(t, string(body), `"code":-32030`)
	assert.Contains(t, string(body), "workspace_authorization_wrong_workspace")

	// REST: a forged agent-slug header is ignored; forged workspace headers are refused.
	w := f.do(t, resCall{method: http.MethodGet, path: resPath("contacts", ""), ws: resAlpha,
		scopes: []string{"resource.contacts.list"}, header: map[string]string{resource.HeaderAgentSlug: "other-agent"}})
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	assert.Equal(t, []string{"ann@a.test"}, emails(anyItems(decodeBody(t, w)["items"])))
	for name, hdr := range map[string]map[string]string{
		"workspace id":   {resource.HeaderWorkspaceID: resBeta.id},
		"workspace slug": {resource.HeaderWorkspaceSlug: resBeta.slug},
	} {
		w := f.do(t, resCall{method: http.MethodGet, path: resPath("contacts", ""), ws: resAlpha,
			scopes: []string{"resource.contacts.list"}, header: hdr})
		assert.Equal(t, http.StatusForbidden, w.Code, name)
		assert.Contains(t, w.Body.String(), "detail", name)
	}
	assert.Equal(t, before+1, f.contacts.calls.Load(), "only the accepted REST call ran")
}

func TestResourceItemChecks(t *testing.T) {
	f := newResFixture(t)
	tests := []struct {
		name       string
		item       string
		wantStatus int // REST
		wantCodes  []string
		wantFields []string
	}{
		{"missing required", `{"name":"Ann"}`, 422, []string{"required"}, []string{"email"}},
		{"wrong type", `{"email":"a@x.test","age":"old"}`, 422, []string{"type"}, []string{"age"}},
		{"rule", `{"email":"a@x.test","age":-1}`, 422, []string{"min"}, []string{"age"}},
		{"case-variant key", `{"email":"a@x.test","Email":"b@x.test"}`, 422, []string{"ambiguous_key"}, []string{"Email"}},
		{"business refusal", `{"email":"taken@example.com"}`, 409, []string{"duplicate_email"}, []string{"email"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var item map[string]any
			require.NoError(t, json.Unmarshal([]byte(tt.item), &item))
			res := f.invoke(t, resAlpha, "resource.contacts.create", map[string]any{"item": item})
			assert.Equal(t, contracts.StatusError, res.Status)
			assert.Equal(t, tt.wantCodes, errorCodes(res))
			var fields []string
			for _, e := range res.Errors {
				fields = append(fields, e.Field)
			}
			assert.Equal(t, tt.wantFields, fields)

			w := f.rest(t, resAlpha, http.MethodPost, "contacts", "create", "", tt.item)
			assert.Equal(t, tt.wantStatus, w.Code, w.Body.String())
			assert.NotEmpty(t, decodeBody(t, w)["detail"])
		})
	}
	assert.Empty(t, f.contacts.scopes(), "no refused item was stored")

	// Malformed input is a protocol error on /a2a, a 400 on REST.
	req := f.ts.Request("resource.contacts.create", map[string]any{"item": "not an object"})
	_, err := f.ts.Invoke(context.Background(), req)
	assert.Equal(t, errcode.InvalidParams, supervaizer.CodeOf(err))
	req = f.ts.Request("resource.contacts.get", map[string]any{})
	_, err = f.ts.Invoke(context.Background(), req)
	assert.Equal(t, errcode.InvalidParams, supervaizer.CodeOf(err))
	assert.Equal(t, http.StatusBadRequest, f.rest(t, resAlpha, http.MethodPost, "contacts", "create", "", `[1]`).Code)
	w := f.do(t, resCall{method: http.MethodPost, path: resPath("contacts", ""),
		body: `{"email":"a@x.test"}`, contentType: "text/plain", ws: resAlpha, scopes: []string{"resource.contacts.create"}})
	assert.Equal(t, http.StatusUnsupportedMediaType, w.Code)
	assert.JSONEq(t, `{"detail":"Content-Type must be application/json","errors":null}`, w.Body.String())
}

func TestResourceScopeAndRequiredContext(t *testing.T) {
	f := newResFixture(t)
	noMission := func(r *contracts.ActionRequest) { r.MissionID = "" }
	inMission := func(id string) func(*contracts.ActionRequest) {
		return func(r *contracts.ActionRequest) { r.MissionID = id }
	}
	withJob := func(r *contracts.ActionRequest) { r.JobID = "job-7" }

	// Mission scope: mission_id is required, and partitions the items.
	res := f.invoke(t, resAlpha, "resource.notes.list", nil, noMission)
	assert.Equal(t, contracts.StatusError, res.Status)
	require.Equal(t, []string{contracts.ErrorMissingContext}, errorCodes(res))
	assert.Equal(t, "mission_id", res.Errors[0].Field)
	assert.Contains(t, res.Errors[0].Message, "mission_id")
	require.Equal(t, contracts.StatusOK, f.invoke(t, resAlpha, "resource.notes.create",
		map[string]any{"item": map[string]any{"email": "m1@a.test"}}, inMission("m-1")).Status)
	res = f.invoke(t, resAlpha, "resource.notes.list", nil, inMission("m-2"))
	require.Equal(t, contracts.StatusOK, res.Status)
	assert.Empty(t, res.Effects[0].Items, "another mission's notes are not listed")
	res = f.invoke(t, resAlpha, "resource.notes.list", nil, inMission("m-1"))
	assert.Equal(t, []string{"m1@a.test"}, emails(res.Effects[0].Items))
	assert.Equal(t, resource.ScopeKey{Level: contracts.ScopeMission, Workspace: resAlphaRef, ByRef: true, Mission: "m-1"}, f.notes.lastContext(t).Scope)

	// REST: without X-Supervaize-Mission-Id, 400 naming it; with it, the same partition.
	w := f.rest(t, resAlpha, http.MethodGet, "notes", "list", "", "")
	assert.Equal(t, http.StatusBadRequest, w.Code)
	assert.Contains(t, w.Body.String(), "mission_id")
	w = f.do(t, resCall{method: http.MethodGet, path: resPath("notes", ""), ws: resAlpha, scopes: []string{"resource.notes.list"},
		header: map[string]string{resource.HeaderMissionID: "m-1"}})
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	assert.Equal(t, []string{"m1@a.test"}, emails(anyItems(decodeBody(t, w)["items"])))

	// Job scope: job_id is required; REST calls carry none.
	res = f.invoke(t, resAlpha, "resource.tasks.list", nil)
	assert.Equal(t, []string{contracts.ErrorMissingContext}, errorCodes(res))
	assert.Equal(t, "job_id", res.Errors[0].Field)
	res = f.invoke(t, resAlpha, "resource.tasks.list", nil, withJob)
	require.Equal(t, contracts.StatusOK, res.Status, res.Errors)
	assert.Equal(t, "job-7", f.tasks.lastContext(t).Scope.Job)
	w = f.rest(t, resAlpha, http.MethodGet, "tasks", "list", "", "")
	assert.Equal(t, http.StatusBadRequest, w.Code)
	assert.Contains(t, w.Body.String(), "job_id")

	calls := f.notes.calls.Load() + f.tasks.calls.Load()
	assert.EqualValues(t, 5, calls, "refused calls never reached a handler")
}

func TestResourceListPaging(t *testing.T) {
	f := newResFixture(t)
	for i := range 5 {
		w := f.rest(t, resAlpha, http.MethodPost, "contacts", "create", "", fmt.Sprintf(`{"email":"u%d@a.test"}`, i))
		require.Equal(t, http.StatusCreated, w.Code)
	}
	res := f.invoke(t, resAlpha, "resource.contacts.list", map[string]any{"limit": 2, "offset": 1, "search": "@a.test"})
	require.Equal(t, contracts.StatusOK, res.Status)
	assert.Equal(t, []string{"u1@a.test", "u2@a.test"}, emails(res.Effects[0].Items))
	w := f.do(t, resCall{method: http.MethodGet, path: resPath("contacts", "?limit=2&offset=3"), ws: resAlpha, scopes: []string{"resource.contacts.list"}})
	require.Equal(t, http.StatusOK, w.Code)
	assert.Equal(t, []string{"u3@a.test", "u4@a.test"}, emails(anyItems(decodeBody(t, w)["items"])))

	for _, in := range []map[string]any{{"limit": 0}, {"limit": 1001}, {"limit": 1.5}, {"offset": -1}, {"search": 3}, {"filters": []any{}}} {
		_, err := f.ts.Invoke(context.Background(), f.ts.Request("resource.contacts.list", in))
		assert.Equal(t, errcode.InvalidParams, supervaizer.CodeOf(err), "%v", in)
	}
	for _, q := range []string{"?limit=0", "?limit=1001", "?limit=x", "?offset=-2"} {
		w := f.do(t, resCall{method: http.MethodGet, path: resPath("contacts", q), ws: resAlpha, scopes: []string{"resource.contacts.list"}})
		assert.Equal(t, http.StatusBadRequest, w.Code, q)
	}
}

// Imports through both transports.

const resImportCSV = "\ufeffE-mail,Name,age,ignored\nann@a.test,Ann,31,x\n\n,,,\nbob@a.test,\"Bob, Jr.\",,y\n"

func TestResourceImportValidFile(t *testing.T) {
	f := newResFixture(t)
	raw, err := f.ts.InvokeRaw(context.Background(), withWorkspace(f.ts.Request("resource.contacts.import",
		map[string]any{"format": "csv", "content": resImportCSV, "fields": map[string]any{"source": "fair"}}), resAlpha))
	require.NoError(t, err)
	svtest.Golden(t, filepath.Join("testdata", "resources", "import_result.golden.json"), raw)
	f.contacts.mu.Lock()
	batch := f.contacts.batches[0]
	f.contacts.mu.Unlock()
	assert.Equal(t, []int{1, 3}, batch.Rows, "records are numbered from 1 after the header; an all-empty record counts, an empty line is no record")
	assert.Equal(t, []resContact{{Email: "ann@a.test", Name: "Ann", Age: 31}, {Email: "bob@a.test", Name: "Bob, Jr."}}, batch.Items)
	assert.Equal(t, map[string]any{"source": "fair"}, batch.Fields)
	assert.Nil(t, batch.Errors)

	// The same file as base64, and over REST.
	res := f.invoke(t, resBeta, "resource.contacts.import", map[string]any{
		"content": base64.StdEncoding.EncodeToString([]byte(resImportCSV)), "encoding": "base64"})
	require.Equal(t, contracts.StatusOK, res.Status, res.Errors)
	assert.Equal(t, 2, *res.Effects[0].Count)
	w := f.do(t, resCall{method: http.MethodPost, path: resPath("contacts", "import/?source=fair"), body: resImportCSV,
		contentType: "text/csv; charset=utf-8", ws: resBeta, scopes: []string{"resource.contacts.import"}})
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	body := decodeBody(t, w)
	assert.EqualValues(t, 2, body["count"])
	assert.Equal(t, []string{"ann@a.test", "bob@a.test"}, emails(anyItems(body["items"])))
	assert.Equal(t, map[string]any{"created": float64(2)}, body["summary"])
}

func withWorkspace(req contracts.ActionRequest, ws resWorkspace) contracts.ActionRequest {
	req.Workspace = contracts.WorkspaceRef{ID: ws.id, Slug: ws.slug}
	return req
}

func TestResourceImportRejections(t *testing.T) {
	tests := []struct {
		name       string
		resource   string
		csv        string
		format     string
		wantStatus int      // REST
		wantCodes  []string // result error codes
		wantRows   []int    // row of each error after the first
	}{
		{"missing required column", "contacts", "name,age\nAnn,3\n", "", 422,
			[]string{"import_rejected", "missing_column"}, []int{0}},
		{"bad row types", "contacts", "email,age\na@x.test,old\nb@x.test,4\n,5\nc@x.test,1.5\n", "", 422,
			[]string{"import_rejected", "type", "required", "type"}, []int{1, 3, 4}},
		{"field count", "contacts", "email,name\na@x.test\n", "", 422,
			[]string{"import_rejected", "field_count"}, []int{1}},
		{"malformed", "contacts", "email\n\"a@x.test\n", "", 422,
			[]string{"import_rejected", "malformed_csv"}, []int{1}},
		{"not utf-8", "contacts", "email\n\xff@x.test\n", "", 422,
			[]string{"import_rejected", "encoding"}, []int{0}},
		{"empty", "contacts", "", "", 422, []string{"import_rejected", "empty_file"}, []int{0}},
		{"oversize file", "leads", "email\n" + strings.Repeat("a@x.test\n", 40), "", 413, []string{"import_too_large"}, nil},
		{"too many rows", "leads", "email\na@x\nb@x\nc@x\nd@x\ne@x\n", "", 413, []string{"import_too_large"}, nil},
		{"xlsx where the document lists csv only", "leads", "PK\x03\x04", "xlsx", 415, []string{"unsupported_import_format"}, nil},
		{"xlsx that is not a workbook", "contacts", "PK\x03\x04", "xlsx", 422, []string{"import_rejected", "malformed_xlsx"}, []int{0}},
		{"xlsx zip bomb", "contacts", string(zipBomb(t, resource.DefaultImportMaxUnzippedBytes+1)), "xlsx", 413, []string{"import_too_large"}, nil},
		{"xlsx with cells far right", "contacts", string(xlsxCellsFarRight(t)), "xlsx", 413, []string{"import_too_large"}, nil},
		{"xlsx with too many rows", "contacts", string(xlsxFile(t, append([][]any{{"email"}},
			slices.Repeat([][]any{{"a@x.test"}}, resource.DefaultImportMaxRows+1)...))), "xlsx", 413, []string{"import_too_large"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newResFixture(t)
			input := map[string]any{"format": cmpOr(tt.format, "csv"), "content": base64.StdEncoding.EncodeToString([]byte(tt.csv)),
				"encoding": "base64", "fields": map[string]any{"campaign": 1}}
			res := f.invoke(t, resAlpha, "resource."+tt.resource+".import", input)
			assert.Equal(t, contracts.StatusError, res.Status)
			assert.Equal(t, tt.wantCodes, errorCodes(res))
			var rows []int
			for _, e := range res.Errors[1:] {
				var row int
				require.NoError(t, json.Unmarshal(e.Extra["row"], &row))
				rows = append(rows, row)
			}
			assert.Equal(t, tt.wantRows, rows)

			ct := "text/csv"
			if tt.format == "xlsx" {
				ct = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
			}
			w := f.do(t, resCall{method: http.MethodPost, path: resPath(tt.resource, "import/?campaign=1"), body: tt.csv,
				contentType: ct, ws: resAlpha, scopes: []string{"resource." + tt.resource + ".import"}})
			assert.Equal(t, tt.wantStatus, w.Code, w.Body.String())
			assert.NotEmpty(t, decodeBody(t, w)["detail"])
			assert.Zero(t, f.contacts.calls.Load()+f.leads.calls.Load(), "Import never ran")
		})
	}
}

func TestResourceImportRejectedGolden(t *testing.T) {
	f := newResFixture(t)
	csv := "email,age\na@x.test,old\n,5\n"
	raw, err := f.ts.InvokeRaw(context.Background(), withWorkspace(f.ts.Request("resource.contacts.import",
		map[string]any{"content": csv}), resAlpha))
	require.NoError(t, err)
	svtest.Golden(t, filepath.Join("testdata", "resources", "import_rejected.golden.json"), raw)
	w := f.do(t, resCall{method: http.MethodPost, path: resPath("contacts", "import/"), body: csv,
		contentType: "text/csv", ws: resAlpha, scopes: []string{"resource.contacts.import"}})
	require.Equal(t, http.StatusUnprocessableEntity, w.Code)
	svtest.Golden(t, filepath.Join("testdata", "resources", "rest_import_rejected.golden.json"), w.Body.Bytes())
}

func TestResourcePartialImport(t *testing.T) {
	f := newResFixture(t)
	csv := "email,age\na@x,1\nb@x,two\nc@x,3\n"
	res := f.invoke(t, resAlpha, "resource.leads.import", map[string]any{"content": csv, "fields": map[string]any{"campaign": 7}})
	require.Equal(t, contracts.StatusOK, res.Status, res.Errors)
	e := res.Effects[0]
	assert.Equal(t, "resource.imported", e.Type)
	assert.Equal(t, 2, *e.Count)
	require.Len(t, e.Errors, 1)
	assert.EqualValues(t, 2, e.Errors[0]["row"])
	assert.Equal(t, "age", e.Errors[0]["column"])
	f.leads.mu.Lock()
	batch := f.leads.batches[0]
	f.leads.mu.Unlock()
	assert.Equal(t, []int{1, 3}, batch.Rows)
	assert.Equal(t, []resource.ImportRowError{{Row: 2, Column: "age", Code: "type", Message: "must be an integer"}}, batch.Errors)
	assert.Equal(t, map[string]any{"campaign": json.Number("7")}, batch.Fields)

	// REST: contextual fields come from the query, numbers as json.Number too.
	w := f.do(t, resCall{method: http.MethodPost, path: resPath("leads", "import/?campaign=8"), body: csv,
		contentType: "text/csv", ws: resAlpha, scopes: []string{"resource.leads.import"}})
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	f.leads.mu.Lock()
	assert.Equal(t, map[string]any{"campaign": json.Number("8")}, f.leads.batches[1].Fields)
	f.leads.mu.Unlock()

	// A required contextual field is checked before the file.
	res = f.invoke(t, resAlpha, "resource.leads.import", map[string]any{"content": csv})
	assert.Equal(t, []string{"required"}, errorCodes(res))
	assert.Equal(t, "fields.campaign", res.Errors[0].Field)
	w = f.do(t, resCall{method: http.MethodPost, path: resPath("leads", "import/?campaign=x"), body: csv,
		contentType: "text/csv", ws: resAlpha, scopes: []string{"resource.leads.import"}})
	assert.Equal(t, http.StatusUnprocessableEntity, w.Code)
}

// Datasets.

func TestDatasetQuery(t *testing.T) {
	f := newResFixture(t)
	for _, e := range []string{"a@a.test", "b@a.test"} {
		require.Equal(t, contracts.StatusOK, f.invoke(t, resAlpha, "resource.contacts.create", map[string]any{"item": map[string]any{"email": e}}).Status)
	}
	raw, err := f.ts.InvokeRaw(context.Background(), withWorkspace(f.ts.Request("dataset.contact_stats.query", nil), resAlpha))
	require.NoError(t, err)
	svtest.Golden(t, filepath.Join("testdata", "resources", "dataset_query.golden.json"), raw)
	res := f.invoke(t, resBeta, "dataset.contact_stats.query", nil)
	require.Equal(t, contracts.StatusOK, res.Status)
	assert.EqualValues(t, 0, res.Effects[0].Rows[0]["value"], "beta has no contacts")

	// job.analytics: the query must carry job_id, which reaches the handler.
	before := f.statsCalls.Load()
	fromAnalytics := func(r *contracts.ActionRequest) { r.Surface = "job.analytics" }
	res = f.invoke(t, resAlpha, "dataset.contact_stats.query", nil, fromAnalytics)
	assert.Equal(t, contracts.StatusError, res.Status)
	assert.Equal(t, []string{contracts.ErrorMissingContext}, errorCodes(res))
	assert.Equal(t, "job_id", res.Errors[0].Field)
	assert.Equal(t, before, f.statsCalls.Load(), "the query did not run")
	res = f.invoke(t, resAlpha, "dataset.contact_stats.query", nil, fromAnalytics, func(r *contracts.ActionRequest) { r.JobID = "job-9" })
	require.Equal(t, contracts.StatusOK, res.Status, res.Errors)
	assert.Equal(t, "job-9", res.Effects[0].Rows[0]["job_id"])

	// Paging: a longer answer is truncated to the limit; limits are checked.
	f.statsExtra = 5
	res = f.invoke(t, resAlpha, "dataset.contact_stats.query", map[string]any{"limit": 2, "offset": 1})
	require.Equal(t, contracts.StatusOK, res.Status)
	assert.Equal(t, 2, *res.Effects[0].Count)
	assert.Equal(t, "extra 0", res.Effects[0].Rows[0]["label"])
	for _, in := range []map[string]any{{"limit": 0}, {"limit": 1001}, {"offset": "1"}} {
		_, err := f.ts.Invoke(context.Background(), f.ts.Request("dataset.contact_stats.query", in))
		assert.Equal(t, errcode.InvalidParams, supervaizer.CodeOf(err), "%v", in)
	}

	// Datasets have no REST route.
	w := f.do(t, resCall{method: http.MethodGet, path: resPath("contact_stats", ""), ws: resAlpha, scopes: []string{"resource.contact_stats.list"}})
	assert.Equal(t, http.StatusNotFound, w.Code)
}

func TestRegisterResourceSetupErrors(t *testing.T) {
	newAgent := func(t *testing.T) *supervaizer.Agent {
		a, err := supervaizer.NewAgent(supervaizer.AgentSpec{Name: resAgentName, Version: "1.0.0", Registration: resRegistration(t)})
		require.NoError(t, err)
		return a
	}
	list := func(context.Context, resource.Context, resource.ListQuery) ([]resContact, error) {
		return nil, nil
	}
	goodDoc := newResStore().resource().ImportDocument
	tests := []struct {
		name  string
		reg   func(a *supervaizer.Agent)
		panic string
	}{
		{"undeclared resource", func(a *supervaizer.Agent) {
			supervaizer.RegisterResource(a, "nope", resource.Handlers[resContact]{List: list})
		}, "not declared"},
		{"undeclared operation", func(a *supervaizer.Agent) {
			supervaizer.RegisterResource(a, "tasks", resource.Handlers[resContact]{
				Delete: func(context.Context, resource.Context, string) error { return nil }})
		}, `operation "delete"`},
		{"twice", func(a *supervaizer.Agent) {
			supervaizer.RegisterResource(a, "tasks", resource.Handlers[resContact]{List: list})
			supervaizer.RegisterResource(a, "tasks", resource.Handlers[resContact]{List: list})
		}, "already"},
		{"action already handled", func(a *supervaizer.Agent) {
			a.HandleAction("resource.tasks.list", func(context.Context, *supervaizer.ActionRequest) (*supervaizer.ActionResult, error) {
				return supervaizer.OK(), nil
			})
			supervaizer.RegisterResource(a, "tasks", resource.Handlers[resContact]{List: list})
		}, `action "resource.tasks.list" already has a handler`},
		{"item type", func(a *supervaizer.Agent) {
			supervaizer.RegisterResource(a, "tasks", resource.Handlers[string]{
				List: func(context.Context, resource.Context, resource.ListQuery) ([]string, error) {
					return nil, nil
				}})
		}, "JSON object"},
		{"import without document", func(a *supervaizer.Agent) {
			supervaizer.RegisterResource(a, "contacts", resource.Handlers[resContact]{Import: newResStore().resource().Import})
		}, "ImportDocument"},
		{"import document of another resource", func(a *supervaizer.Agent) {
			supervaizer.RegisterResource(a, "leads", resource.Handlers[resContact]{Import: newResStore().resource().Import, ImportDocument: goodDoc})
		}, `not "leads"`},
		{"xlsx-only document without columns", func(a *supervaizer.Agent) {
			doc := *goodDoc
			doc.AcceptedFormats, doc.Columns = []string{contracts.ImportFormatXLSX}, nil
			supervaizer.RegisterResource(a, "contacts", resource.Handlers[resContact]{Import: newResStore().resource().Import, ImportDocument: &doc})
		}, "declares no columns"},
		{"negative limits", func(a *supervaizer.Agent) {
			supervaizer.RegisterResource(a, "contacts", resource.Handlers[resContact]{List: list, ImportLimits: resource.ImportLimits{MaxRows: -1}})
		}, "negative"},
		{"undeclared dataset", func(a *supervaizer.Agent) {
			supervaizer.RegisterDataset(a, "nope", func(context.Context, resource.Context, resource.DatasetQuery) ([]resStat, error) {
				return nil, nil
			})
		}, "not declared"},
		{"nil query", func(a *supervaizer.Agent) {
			supervaizer.RegisterDataset[resStat](a, "contact_stats", nil)
		}, "nil query"},
		{"row type", func(a *supervaizer.Agent) {
			supervaizer.RegisterDataset(a, "contact_stats", func(context.Context, resource.Context, resource.DatasetQuery) ([]int, error) {
				return nil, nil
			})
		}, "JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newAgent(t)
			defer func() {
				v := recover()
				require.NotNil(t, v, "expected a panic")
				assert.Contains(t, fmt.Sprint(v), tt.panic)
			}()
			tt.reg(a)
		})
	}

	// requires_context keys the SDK cannot check are refused at setup.
	reg := supervaizer.RegistrationSpec{AgentSlug: resAgentSlug, DisplayName: "C", A2UICatalogVersion: "c/1",
		Resources: []contracts.ResourceDefinition{{ID: "r", Label: "R", RequiresContext: []string{"campaign.id"}, Operations: []string{"list"}}}}
	a, err := supervaizer.NewAgent(supervaizer.AgentSpec{Name: resAgentName, Version: "1.0.0", Registration: reg})
	require.NoError(t, err)
	assert.PanicsWithValue(t, `supervaizer: RegisterResource("r") on agent "contacts-agent": requires_context key "campaign.id" is not one the SDK can check (known keys: agent_workspace_ref, case.id, case_id, job.id, job_id, mission.id, mission.metadata, mission_id, step.id, step_id, workspace.id, workspace.slug, workspace_id, workspace_slug)`,
		func() { supervaizer.RegisterResource(a, "r", resource.Handlers[resContact]{List: list}) })
}

func TestResourceDeclaredOperationWithoutImplementation(t *testing.T) {
	f := newResFixture(t)
	// tasks declares create but only List is registered: -32010 on /a2a, 405 on REST.
	_, err := f.ts.Invoke(context.Background(), func() contracts.ActionRequest {
		r := f.ts.Request("resource.tasks.create", map[string]any{"item": map[string]any{"email": "x@y"}})
		r.JobID = "j"
		return r
	}())
	assert.Equal(t, errcode.ActionNotRegistered, supervaizer.CodeOf(err))
	w := f.rest(t, resAlpha, http.MethodPost, "tasks", "create", "", `{"email":"x@y"}`)
	assert.Equal(t, http.StatusMethodNotAllowed, w.Code)
	assert.Zero(t, f.tasks.calls.Load())
}

// resBenchFixture is a fixture with 100 contacts in alpha.
func resBenchFixture(b *testing.B) *resFixture {
	f := newResFixture(b)
	for i := range 100 {
		w := f.rest(b, resAlpha, http.MethodPost, "contacts", "create", "", fmt.Sprintf(`{"email":"u%d@a.test","name":"User %d","age":%d}`, i, i, i))
		require.Equal(b, http.StatusCreated, w.Code)
	}
	return f
}

func BenchmarkResourceListAction(b *testing.B) {
	f := resBenchFixture(b)
	req := withWorkspace(f.ts.Request("resource.contacts.list", nil), resAlpha)
	tok := f.ts.Studio.TokenForAction(req)
	params := map[string]any{"action_request": req}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		body, err := f.ts.Call(ctx, supervaizer.MethodActionInvoke, params, tok)
		if err != nil || !strings.Contains(string(body), `"resource.listed"`) {
			b.Fatal(err, string(body))
		}
	}
}

func BenchmarkResourceListREST(b *testing.B) {
	f := resBenchFixture(b)
	tok := f.ts.Studio.Mint(f.ts.Studio.Claims(svtest.Grant{WorkspaceID: resAlpha.id, WorkspaceSlug: resAlpha.slug,
		AgentSlug: resAgentSlug, Scopes: []string{"resource.contacts.list"}}))
	header := http.Header{}
	header.Set(supervaizer.HeaderAPIKey, f.ts.APIKey)
	header.Set(supervaizer.HeaderWorkspaceAuthorization, "Bearer "+tok)
	header.Set(resource.HeaderWorkspaceID, resAlpha.id)
	header.Set(resource.HeaderWorkspaceSlug, resAlpha.slug)
	b.ReportAllocs()
	for b.Loop() {
		r := httptest.NewRequest(http.MethodGet, "http://localhost"+resPath("contacts", ""), nil)
		r.Header = header.Clone()
		w := httptest.NewRecorder()
		f.ts.Server.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			b.Fatal(w.Code)
		}
	}
}

// resExampleServer serves agent in local mode (workspace authorization
// bypassed on /a2a, development only), isolated from the environment.
func resExampleServer(agent *supervaizer.Agent) *supervaizer.Server {
	srv, err := supervaizer.NewServer([]*supervaizer.Agent{agent}, supervaizer.WithLocalMode(true),
		supervaizer.WithServerID("example-server"), supervaizer.WithEnv(func(string) string { return "" }))
	if err != nil {
		log.Fatal(err)
	}
	return srv
}

// resExampleInvoke invokes action of the contacts agent in workspace ws-1
// through POST /a2a and prints the result (or the JSON-RPC error).
func resExampleInvoke(srv *supervaizer.Server, action, input string) {
	body := `{"jsonrpc":"2.0","id":1,"method":"supervaizer/action.invoke","params":{"action_request":{
		"request_id":"r-1","actor":{"user_id":"u-1"},"workspace":{"id":"ws-1"},"mission_id":"m-1",
		"agent_slug":"contacts-agent","surface":"mission.agent.resource.contacts","action":"` + action + `","input":` + input + `}}}`
	r := httptest.NewRequest(http.MethodPost, "http://localhost/a2a", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set(supervaizer.HeaderAPIKey, supervaizer.LocalModeAPIKey)
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, r)
	var resp struct {
		Result, Error json.RawMessage
	}
	if err := json.Unmarshal(w.Body.Bytes(), &resp); err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(resp.Result) + string(resp.Error))
}

func ExampleRegisterResource() {
	reg := supervaizer.RegistrationSpec{
		AgentSlug: "contacts-agent", DisplayName: "Contacts", A2UICatalogVersion: "contacts/1",
		Resources: []contracts.ResourceDefinition{{
			ID: "contacts", Label: "Contacts", AutoSurface: true, Operations: []string{"list", "create"},
			Fields: a2ui.ResourceFields(a2ui.StringField("email", "E-mail", a2ui.Required())),
		}},
	}
	agent, err := supervaizer.NewAgent(supervaizer.AgentSpec{Name: "Contacts Agent", Version: "1.0.0", Registration: reg})
	if err != nil {
		log.Fatal(err)
	}

	type Contact struct {
		ID    string `json:"id"`
		Email string `json:"email"`
	}
	// The agent's storage: partitioned by the verified scope key, and nothing else.
	var mu sync.Mutex
	store := map[resource.ScopeKey][]Contact{}
	supervaizer.RegisterResource(agent, "contacts", resource.Handlers[Contact]{
		List: func(_ context.Context, rc resource.Context, q resource.ListQuery) ([]Contact, error) {
			mu.Lock()
			defer mu.Unlock()
			items := store[rc.Scope]
			return items[min(q.Offset, len(items)):], nil
		},
		Create: func(_ context.Context, rc resource.Context, c Contact) (Contact, error) {
			mu.Lock()
			defer mu.Unlock()
			c.ID = fmt.Sprintf("c-%d", len(store[rc.Scope])+1)
			store[rc.Scope] = append(store[rc.Scope], c)
			return c, nil
		},
	})
	// The same implementation also serves GET|POST /api/agents/contacts-agent/data/contacts/.
	srv := resExampleServer(agent)
	resExampleInvoke(srv, "resource.contacts.create", `{"item":{"email":"ann@example.com"}}`)
	resExampleInvoke(srv, "resource.contacts.create", `{"item":{"name":"Bob"}}`)
	resExampleInvoke(srv, "resource.contacts.list", `{"limit":10}`)
	// Output:
	// {"status":"ok","effects":[{"type":"resource.created","resource":"contacts","item":{"email":"ann@example.com","id":"c-1"}}]}
	// {"status":"error","effects":[],"errors":[{"code":"required","message":"is required","field":"email"}]}
	// {"status":"ok","effects":[{"type":"resource.listed","resource":"contacts","items":[{"email":"ann@example.com","id":"c-1"}]}]}
}

func ExampleRegisterDataset() {
	reg := supervaizer.RegistrationSpec{
		AgentSlug: "contacts-agent", DisplayName: "Contacts", A2UICatalogVersion: "contacts/1",
		Datasets: []contracts.DatasetDefinition{{ID: "progress", Label: "Progress"}},
	}
	agent, err := supervaizer.NewAgent(supervaizer.AgentSpec{Name: "Contacts Agent", Version: "1.0.0", Registration: reg})
	if err != nil {
		log.Fatal(err)
	}
	type Metric struct {
		Label string `json:"label"`
		Value int    `json:"value"`
	}
	supervaizer.RegisterDataset(agent, "progress", func(_ context.Context, rc resource.Context, q resource.DatasetQuery) ([]Metric, error) {
		// Read rc.Scope's rows only; restrict them to q.JobID when it is set.
		rows := []Metric{{"Sources read", 42}, {"Drafts", 3}}
		return rows[min(q.Offset, len(rows)):], nil
	})
	srv := resExampleServer(agent)
	resExampleInvoke(srv, "dataset.progress.query", `{}`)
	resExampleInvoke(srv, "dataset.progress.query", `{"limit":1,"offset":1}`)
	// Output:
	// {"status":"ok","effects":[{"type":"dataset.queried","dataset":"progress","count":2,"rows":[{"label":"Sources read","value":42},{"label":"Drafts","value":3}]}]}
	// {"status":"ok","effects":[{"type":"dataset.queried","dataset":"progress","count":1,"rows":[{"label":"Drafts","value":3}]}]}
}
