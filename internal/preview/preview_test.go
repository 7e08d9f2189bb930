package preview

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/contracts"
)

// fakeController answers the preview's JSON-RPC calls: surface.load with the
// document of the surface, action.invoke with the result of the action.
type fakeController struct {
	docs    map[string]string // surface -> document JSON
	results map[string]string // action -> result JSON
	calls   []map[string]any  // the requests received
}

func (f *fakeController) call(_ context.Context, body []byte) ([]byte, error) {
	var rpc struct {
		ID     any                       `json:"id"`
		Method string                    `json:"method"`
		Params map[string]map[string]any `json:"params"`
	}
	if err := json.Unmarshal(body, &rpc); err != nil {
		return nil, err
	}
	for _, req := range rpc.Params {
		f.calls = append(f.calls, req)
		var result string
		switch rpc.Method {
		case methodSurfaceLoad:
			doc, ok := f.docs[req["surface"].(string)]
			if !ok {
				return json.Marshal(map[string]any{"jsonrpc": "2.0", "id": rpc.ID, "error": map[string]any{"code": -32601, "message": "Surface not registered"}})
			}
			result = `{"surface":"` + req["surface"].(string) + `","document":` + doc + `}`
		case methodActionInvoke:
			r, ok := f.results[req["action"].(string)]
			if !ok {
				return nil, errors.New("no such action")
			}
			result = r
		}
		return json.Marshal(map[string]any{"jsonrpc": "2.0", "id": rpc.ID, "result": json.RawMessage(result)})
	}
	return nil, errors.New("no params")
}

const testRegistration = `{
  "agent": {"slug": "a", "display_name": "Agent <A>"},
  "capabilities": {
    "surfaces": ["job.start", "mission.analytics", "case.step.awaiting", "config"],
    "surface_definitions": [{"id": "job.start", "label": "Start it", "description": "Starts a job"}],
    "actions": ["job.stop", {"id": "job.start", "mutating": true, "scope": "job", "label": "Start"}, {"id": "help.me", "kind": "help", "target_field": "goal", "mutating": false, "scope": "job"}],
    "case_lanes": [{"id": "setup", "label": "Setup"}, {"id": "work", "label": "Work", "default": true}]
  },
  "job_policy": {
    "setup": {"start_action": "job.start", "plan": {"steps": [{"id": "scope", "title": "Scope", "status": "pending", "fields": [{"id": "topic", "label": "Topic", "type": "string", "required": true}], "help_actions": ["help.me"]}]}},
    "sync": {"action": "job.sync"}
  },
  "resources": [{"id": "contacts", "label": "Contacts", "scope": "workspace", "operations": ["list", "import"], "fields": [{"id": "name", "label": "Name", "type": "string", "required": true}], "mounted_views": [{"view": "import", "surface": "contacts.import"}]}],
  "datasets": [{"id": "progress", "label": "Progress", "scope": "mission", "display": {"columns": ["label", "value"]}}],
  "dashboards": [{"id": "d", "label": "Overview", "surface": "mission.analytics"}]
}`

// everyField is a form with one field of each type of the field schema.
const everyField = `{"type": "Form", "id": "f", "title": "Every field", "submit": {"action": "job.start", "label": "Go"}, "preview": {"action": "job.start.preview"}, "fields": [
  {"id": "s", "label": "String", "type": "string", "required": true, "placeholder": "ph", "description": "help text", "default": "dflt",
   "validation": {"min_length": 2, "max_length": 9, "pattern": "^[a-z]+$", "message": "lower case only"}},
  {"id": "t", "label": "Text", "type": "text", "multiline": true, "min_rows": 5},
  {"id": "b", "label": "Bool", "type": "boolean", "default": true},
  {"id": "i", "label": "Int", "type": "integer", "validation": {"min": 1, "max": 5}},
  {"id": "n", "label": "Num", "type": "number"},
  {"id": "d", "label": "Date", "type": "date"},
  {"id": "sel", "label": "Select", "type": "select", "options": [{"value": "x", "label": "Ex"}, {"value": 2, "label": "Two"}], "default": 2},
  {"id": "ms", "label": "Multi", "type": "multi_select", "options": [{"value": "p", "label": "Pe"}, {"value": "q", "label": "Qu"}], "default": ["q"], "validation": {"min_items": 1}},
  {"id": "r", "label": "Ref", "type": "resource_ref", "options_source": {"type": "resource", "resource": "contacts", "value_field": "id", "label_field": null}},
  {"id": "file", "label": "File", "type": "file", "accept": ".pdf", "max_bytes": 1000, "storage": "inline"},
  {"id": "l", "label": "List", "type": "list", "item_fields": [{"id": "li", "label": "Item", "type": "string"}], "validation": {"max_items": 3}},
  {"id": "dep", "label": "Dependent", "type": "string", "depends_on": {"field": "sel", "in": ["x"]}},
  {"id": "ro", "label": "Read only", "type": "string", "read_only": true},
  {"id": "u", "label": "Unknown type", "type": "color"}
]}`

func newTestHandler(t *testing.T, f *fakeController, allowRemote bool) *Handler {
	t.Helper()
	h, err := New(Config{
		Agents: []Agent{{Slug: "a", Name: "A", Version: "1", Description: "desc", CardPath: "/.well-known/agents/a.json", Registration: json.RawMessage(testRegistration)}},
		Call:   f.call, Events: http.NotFoundHandler(), AllowRemote: allowRemote,
	})
	require.NoError(t, err)
	return h
}

func serve(h http.Handler, method, target, body string, header http.Header) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, target, strings.NewReader(body))
	req.RemoteAddr = "127.0.0.1:40000"
	req.Host = "127.0.0.1:8080"
	for k, v := range header {
		req.Header[k] = v
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

func TestOverviewSummarizesTheRegistration(t *testing.T) {
	h := newTestHandler(t, &fakeController{}, false)
	w := serve(h, http.MethodGet, Prefix, "", nil)
	require.Equal(t, http.StatusOK, w.Code)
	body := w.Body.String()
	for _, want := range []string{
		"Agent &lt;A&gt;", `href="/.well-known/agents/a.json"`, // display name escaped, card link
		"Start it", "Starts a job", "<code>mission.analytics</code>", // surfaces with their definitions
		"<code>help.me</code>", "<td>help</td>", "<td>goal</td>", // actions with metadata
		"Scope", "<code>topic</code>", // setup plan
		"<code>progress</code>", "label, value", // datasets
		"Contacts", "list, import", "contacts.import", // resources
		"opened from a job", // case.* surfaces
	} {
		assert.Contains(t, body, want)
	}
	assert.Equal(t, ContentSecurityPolicy, w.Header().Get("Content-Security-Policy"))
}

func TestFormRendersEveryFieldType(t *testing.T) {
	f := &fakeController{docs: map[string]string{"job.start": everyField}}
	h := newTestHandler(t, f, false)
	w := serve(h, http.MethodGet, Prefix+"surface?agent=a&surface=job.start", "", nil)
	require.Equal(t, http.StatusOK, w.Code)
	body := w.Body.String()
	tests := []struct{ field, want string }{
		{"s", `<input type="text" class="control" id="f-s" value="dflt" placeholder="ph">`},
		{"s", `<p class="help">help text</p>`},
		{"s", `<li>required</li><li>at least 2 characters</li><li>at most 9 characters</li><li>must match ^[a-z]&#43;$</li><li>lower case only</li>`},
		{"t", `<textarea class="control" id="f-t" rows="5"`},
		{"b", `<input type="checkbox" class="control" id="f-b" checked>`},
		{"i", `<input type="number" class="control" id="f-i" step="1"`},
		{"i", `<li>minimum 1</li><li>maximum 5</li>`},
		{"n", `step="any"`},
		{"d", `<input type="date" class="control" id="f-d"`},
		{"sel", `<option value="2" data-json="2" selected>Two</option>`},
		{"sel", `<option value="x" data-json="&#34;x&#34;">Ex</option>`},
		{"ms", `<input type="checkbox" value="q" data-json="&#34;q&#34;" checked> Qu`},
		{"ms", `<li>at least 1 items</li>`},
		{"r", `<li>an id of the resource contacts</li>`},
		{"file", `<input type="file" class="control" id="f-file" accept=".pdf">`},
		{"file", `<li>at most 1000 bytes</li>`},
		{"l", `<template class="list-item-template"><div class="list-item"><div class="field kind-string" data-field="li" data-kind="string">`},
		{"l", `<button type="button" class="list-add">`},
		{"dep", `data-field="dep" data-kind="string" data-depends-field="sel" data-depends-in="[&#34;x&#34;]"`},
		{"ro", `id="f-ro" value="" placeholder="" readonly>`},
		{"u", `data-field="u" data-kind="string"`},
	}
	for _, tt := range tests {
		assert.Contains(t, body, tt.want, "field %s", tt.field)
	}
	assert.Contains(t, body, `data-action="job.start"`)
	assert.Contains(t, body, `<button type="button" id="preview-action" data-action="job.start.preview">Preview</button>`)
	assert.NotContains(t, body, `required>`, "no native validation: the SDK's errors are shown")
	require.Len(t, f.calls, 1)
	assert.Equal(t, "job.start", f.calls[0]["surface"])
	assert.Equal(t, WorkspaceID, f.calls[0]["workspace"].(map[string]any)["id"])
	assert.NotContains(t, f.calls[0], "action", "a surface load is not an action")
}

func TestDocumentsAreEscaped(t *testing.T) {
	const payload = `"><script>alert(1)</script><img src=x onerror=alert(1)>`
	review := `{"type": "DocumentReview", "title": ` + q(payload) + `, "submit": {"action": "s"}, "fields": [{"id": "x", "label": ` + q(payload) + `, "type": "text"}],
	  "document": {"title": ` + q(payload) + `, "field": "x", "value": ` + q(payload) + `, "validation": [{"id": "c", "label": ` + q(payload) + `, "status": ` + q(payload) + `}]},
	  "state": {"job_id": ` + q(payload) + `}}`
	config := `{"type": "Configurator", "link": "javascript:alert(1)", "x": ` + q(payload) + `}`
	f := &fakeController{docs: map[string]string{"review": review, "config": config}}
	h := newTestHandler(t, f, false)
	for _, s := range []string{"review", "config"} {
		body := serve(h, http.MethodGet, Prefix+"surface?agent=a&surface="+s, "", nil).Body.String()
		assert.NotContains(t, body, "<script>alert", s)
		assert.NotContains(t, body, "<img", s)
		assert.NotContains(t, body, `href="javascript:`, s)
	}
	body := serve(h, http.MethodGet, Prefix+"surface?agent=a&surface=review", "", nil).Body.String()
	assert.Contains(t, body, `<pre class="review-value" id="review-value">&#34;&gt;&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;</pre>`)
	assert.Contains(t, body, `data-job-id="&#34;&gt;&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;"`, "state values stay inside their attribute")
}

func q(s string) string { b, _ := json.Marshal(s); return string(b) }

func TestDashboardTables(t *testing.T) {
	dash := `{"type": "Dashboard", "datasets": [{"id": "progress"}], "controls": [], "widgets": [
	  {"id": "ref", "title": "By stage", "data": {"mode": "ref", "datasetId": "progress"}, "layout": {},
	   "visualization": {"type": "vega-lite", "spec": {"mark": "bar", "encoding": {"x": {"field": "label"}, "y": {"field": "value"}}}}},
	  {"id": "inline", "title": "Inline", "data": {"mode": "inline", "values": [{"k": "v", "n": 1}]}, "layout": {}, "visualization": {"type": "table"}},
	  {"id": "none", "title": "No data", "data": null, "layout": {}, "visualization": {"type": "table"}}]}`
	f := &fakeController{
		docs:    map[string]string{"mission.analytics": dash},
		results: map[string]string{"dataset.progress.query": `{"status": "ok", "effects": [{"type": "dataset.queried", "dataset": "progress", "count": 2, "rows": [{"value": 3, "label": "Open", "extra": true}, {"label": "Done", "value": 1}]}]}`},
	}
	h := newTestHandler(t, f, false)
	body := serve(h, http.MethodGet, Prefix+"surface?agent=a&surface=mission.analytics", "", nil).Body.String()
	// Declared display columns first, then the other keys.
	assert.Contains(t, body, `<thead><tr><th>label</th><th>value</th><th>extra</th></tr></thead>`)
	assert.Contains(t, body, `<tr><td>Open</td><td>3</td><td>true</td></tr><tr><td>Done</td><td>1</td><td></td></tr>`)
	assert.Contains(t, body, `class="chart" data-spec=`)
	assert.Contains(t, body, `<tr><td>v</td><td>1</td></tr>`, "inline values")
	assert.Contains(t, body, "the widget has no data")
	require.Len(t, f.calls, 2)
	assert.Equal(t, "dataset.progress.query", f.calls[1]["action"])
	assert.Equal(t, MissionID, f.calls[1]["mission_id"])
}

func TestSurfaceLoadErrorIsShown(t *testing.T) {
	h := newTestHandler(t, &fakeController{}, false)
	body := serve(h, http.MethodGet, Prefix+"surface?agent=a&surface=missing", "", nil).Body.String()
	assert.Contains(t, body, `id="load-error"`)
	assert.Contains(t, body, "Surface not registered (JSON-RPC -32601)")
	assert.Contains(t, body, "not declared in the registration")
	w := serve(h, http.MethodGet, Prefix+"surface?agent=nobody&surface=x", "", nil)
	assert.Equal(t, http.StatusNotFound, w.Code)
}

func TestInvokeRecordsJobsAndReplays(t *testing.T) {
	state := `{"job": {"id": "J", "status": "awaiting"}, "cases": [
	  {"id": "c2", "lane": "work", "title": "Work", "status": "active", "steps": [{"id": "s2", "title": "Write", "status": "done", "outputs": [{"id": "art-1", "type": "synthesis"}]}]},
	  {"id": "c1", "lane": "setup", "title": "Setup", "status": "awaiting", "steps": [{"id": "s1", "title": "Review", "status": "awaiting", "awaiting": {"reason": "human_input", "surface": "case.step.awaiting", "action": "step.awaiting.submit", "fields": []}}]},
	  {"id": "c3", "lane": "odd", "title": "Odd", "status": "active", "steps": []}]}`
	f := &fakeController{results: map[string]string{
		"job.start": `{"status": "ok", "effects": [{"type": "job.started", "job_id": "J"}], "job_state": ` + state + `}`,
		"job.stop":  `{"status": "ok", "effects": []}`,
		"job.sync":  `{"status": "ok", "effects": [], "job_state": ` + strings.Replace(state, `"awaiting"}, "cases"`, `"completed"}, "cases"`, 1) + `}`,
	}}
	h := newTestHandler(t, f, false)
	js := http.Header{"Content-Type": {"application/json"}, "Origin": {"http://127.0.0.1:8080"}, "Sec-Fetch-Site": {"same-origin"}}
	invoke := func(body string) invokeAnswer {
		w := serve(h, http.MethodPost, Prefix+"api/invoke", body, js)
		require.Equal(t, http.StatusOK, w.Code, w.Body.String())
		var ans invokeAnswer
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &ans))
		return ans
	}
	first := invoke(`{"agent": "a", "surface": "job.start", "action": "job.start", "input": {"topic": "x"}}`)
	assert.False(t, first.Replayed)
	assert.Len(t, first.IdempotencyKey, len("preview-")+24)
	assert.True(t, strings.HasPrefix(first.JobID, "job-"))
	assert.Equal(t, first.IdempotencyKey, f.calls[0]["idempotency_key"])
	assert.Equal(t, first.JobID, f.calls[0]["job_id"])

	again := invoke(`{"agent": "a", "surface": "job.start", "action": "job.start", "idempotency_key": "` + first.IdempotencyKey + `", "job_id": "` + first.JobID + `", "input": {"topic": "x"}}`)
	assert.True(t, again.Replayed, "the same key and the same result")
	assert.Equal(t, first.JobID, again.JobID)

	other := invoke(`{"agent": "a", "surface": "job.start", "action": "job.stop", "input": {}}`)
	assert.Empty(t, other.JobID, "only the start action gets a new job id")

	body := serve(h, http.MethodGet, Prefix+"jobs", "", nil).Body.String()
	setup, work, odd := strings.Index(body, `data-lane="setup"`), strings.Index(body, `data-lane="work"`), strings.Index(body, `data-lane="odd"`)
	require.True(t, setup > 0 && work > setup && odd > work, "cases grouped in the declared lane order, undeclared lanes last")
	assert.Contains(t, body, `class="open-awaiting" href="/_preview/surface?agent=a&amp;case_id=c1&amp;job_id=J&amp;step_id=s1&amp;surface=case.step.awaiting"`)
	assert.Contains(t, body, `&#34;id&#34;:&#34;art-1&#34;`, "artifacts are listed")

	w := serve(h, http.MethodPost, Prefix+"api/sync", `{"agent": "a", "job_id": "J"}`, js)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	last := f.calls[len(f.calls)-1]
	assert.Equal(t, "job.sync", last["action"])
	assert.Equal(t, "J", last["job_id"])
	assert.Contains(t, serve(h, http.MethodGet, Prefix+"jobs", "", nil).Body.String(), `<span class="status">completed</span>`)

	w = serve(h, http.MethodPost, Prefix+"api/sync", `{"agent": "a", "job_id": "unknown"}`, js)
	assert.Equal(t, http.StatusNotFound, w.Code, "only jobs of the session are synced")
}

func TestAPIRefusals(t *testing.T) {
	h := newTestHandler(t, &fakeController{}, false)
	js := http.Header{"Content-Type": {"application/json"}}
	tests := []struct {
		name   string
		body   string
		header http.Header
		status int
	}{
		{"not JSON content", `{"agent": "a", "action": "x"}`, http.Header{"Content-Type": {"text/plain"}}, http.StatusForbidden},
		{"foreign origin", `{"agent": "a", "action": "x"}`, http.Header{"Content-Type": {"application/json"}, "Origin": {"http://evil.example"}}, http.StatusForbidden},
		{"cross-site", `{"agent": "a", "action": "x"}`, http.Header{"Content-Type": {"application/json"}, "Sec-Fetch-Site": {"cross-site"}}, http.StatusForbidden},
		{"bad JSON", `{`, js, http.StatusBadRequest},
		{"unknown agent", `{"agent": "b", "action": "x"}`, js, http.StatusNotFound},
		{"no action", `{"agent": "a"}`, js, http.StatusBadRequest},
		{"controller down", `{"agent": "a", "action": "nope"}`, js, http.StatusBadGateway},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := serve(h, http.MethodPost, Prefix+"api/invoke", tt.body, tt.header)
			assert.Equal(t, tt.status, w.Code, w.Body.String())
		})
	}
	assert.Equal(t, http.StatusNotFound, serve(h, http.MethodGet, Prefix+"nothing", "", nil).Code)
	assert.Equal(t, http.StatusNotFound, serve(h, http.MethodGet, Prefix+"api/invoke", "", nil).Code)
}

func TestOnlyLoopbackIsAnswered(t *testing.T) {
	tests := []struct {
		name       string
		remote     string
		local      string
		host       string
		allowAll   bool
		wantServed bool
	}{
		{"loopback IPv4", "127.0.0.1:1", "127.0.0.1:8080", "127.0.0.1:8080", false, true},
		{"localhost name", "127.0.0.1:1", "127.0.0.1:8080", "localhost:8080", false, true},
		{"loopback IPv6", "[::1]:1", "[::1]:8080", "[::1]:8080", false, true},
		{"rebinding host", "127.0.0.1:1", "127.0.0.1:8080", "evil.example:8080", false, false},
		{"LAN connection", "10.0.0.2:1", "10.0.0.1:8080", "10.0.0.1:8080", false, false},
		{"LAN connection, no local address", "10.0.0.2:1", "", "localhost", false, false},
		{"explicit option", "10.0.0.2:1", "10.0.0.1:8080", "agent.internal", true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newTestHandler(t, &fakeController{}, tt.allowAll)
			req := httptest.NewRequest(http.MethodGet, Prefix, nil)
			req.RemoteAddr, req.Host = tt.remote, tt.host
			if tt.local != "" {
				addr, err := net.ResolveTCPAddr("tcp", tt.local)
				require.NoError(t, err)
				req = req.WithContext(context.WithValue(req.Context(), http.LocalAddrContextKey, addr))
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			assert.Equal(t, tt.wantServed, w.Code == http.StatusOK, "status %d", w.Code)
		})
	}
}

func TestEventsPassTheLastEventID(t *testing.T) {
	var got string
	h, err := New(Config{Agents: []Agent{{Slug: "a", Registration: json.RawMessage(testRegistration)}},
		Call:   (&fakeController{}).call,
		Events: http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { got = r.Header.Get("Last-Event-ID") }),
	})
	require.NoError(t, err)
	serve(h, http.MethodGet, Prefix+"events?after=42", "", nil)
	assert.Equal(t, "42", got)
	serve(h, http.MethodGet, Prefix+"events?after=42", "", http.Header{"Last-Event-Id": {"7"}})
	assert.Equal(t, "7", got, "the browser's own Last-Event-ID wins on reconnection")
}

func TestNewRefusesAnIncompleteConfig(t *testing.T) {
	_, err := New(Config{})
	assert.Error(t, err)
	_, err = New(Config{Call: (&fakeController{}).call, Events: http.NotFoundHandler(), Agents: []Agent{{Slug: "a", Registration: json.RawMessage(`[`)}}})
	assert.Error(t, err)
}

func FuzzParseRegistration(f *testing.F) {
	f.Add([]byte(testRegistration))
	f.Add([]byte(`{"capabilities": {"surfaces": [1, null, "x"], "actions": {"a": 1}}, "job_policy": {"setup": {"plan": "x"}}}`))
	h := newFuzzHandler(f)
	f.Fuzz(func(t *testing.T, raw []byte) {
		reg, err := parseRegistration(raw)
		if err != nil {
			return
		}
		h.bySlug["a"].reg = reg
		h.agents[0].reg = reg
		w := serve(h, http.MethodGet, Prefix, "", nil)
		if w.Code != http.StatusOK {
			t.Fatalf("overview of a decodable registration: %d %s", w.Code, w.Body)
		}
	})
}

func newFuzzHandler(f *testing.F) *Handler {
	h, err := New(Config{Agents: []Agent{{Slug: "a", Registration: json.RawMessage(testRegistration)}},
		Call: (&fakeController{}).call, Events: http.NotFoundHandler()})
	if err != nil {
		f.Fatal(err)
	}
	return h
}

// TestStudioGeneratedSurfacesAreDescribed: a surface Studio generates from an
// auto_surface resource or dataset is described as Studio-rendered, with its
// label, instead of "surface.load failed (-32011)" (issue 29).
func TestStudioGeneratedSurfacesAreDescribed(t *testing.T) {
	reg := strings.Replace(testRegistration, `"operations": ["list", "import"],`, `"operations": ["list", "import"], "auto_surface": true,`, 1)
	reg = strings.Replace(reg, `"scope": "mission", "display"`, `"scope": "mission", "auto_surface": true, "display"`, 1)
	h, err := New(Config{
		Agents: []Agent{{Slug: "a", Name: "A", Version: "1", Registration: json.RawMessage(reg)}},
		Call:   (&fakeController{}).call, Events: http.NotFoundHandler(),
	})
	require.NoError(t, err)
	tests := []struct {
		surface string
		want    []string
		studio  bool
	}{
		{"mission.agent.resource.contacts", []string{"<h1>Contacts</h1>", `data-kind="resource"`, "<code>resource.contacts.list</code>", "<code>resource.contacts.import</code>", "<td>Name</td>"}, true},
		{"mission.agent.dataset.progress", []string{"<h1>Progress</h1>", `data-kind="dataset"`, "<code>dataset.progress.query</code>"}, true},
		{"mission.agent.resource.other", []string{`id="load-error"`}, false},
	}
	for _, tt := range tests {
		t.Run(tt.surface, func(t *testing.T) {
			body := serve(h, http.MethodGet, Prefix+"surface?agent=a&surface="+tt.surface, "", nil).Body.String()
			for _, w := range tt.want {
				assert.Contains(t, body, w)
			}
			if tt.studio {
				assert.Contains(t, body, "Studio renders this surface")
				assert.NotContains(t, body, "surface.load failed")
			} else {
				assert.NotContains(t, body, `id="studio-surface"`)
			}
		})
	}
}

// TestOverviewLeadsWithTheIntroduction: the overview opens with the agent's
// introduction (tagline, summary, example goals) and a call to action for
// job.start, before the tables; the navigation names surfaces by label, not
// by id (issue 29).
func TestOverviewLeadsWithTheIntroduction(t *testing.T) {
	h, err := New(Config{
		Agents: []Agent{{Slug: "a", Name: "A", Version: "1", Registration: json.RawMessage(testRegistration),
			Tagline: "Briefs <fast>", Summary: "Turns a topic into a sourced brief.", ExampleGoals: []string{"EU battery prices", "Solar tariffs"}}},
		Call: (&fakeController{}).call, Events: http.NotFoundHandler(),
	})
	require.NoError(t, err)
	body := serve(h, http.MethodGet, Prefix, "", nil).Body.String()
	tests := []struct{ name, want string }{
		{"tagline, escaped", `<p class="tagline">Briefs &lt;fast&gt;</p>`},
		{"summary", `<p class="summary">Turns a topic into a sourced brief.</p>`},
		{"example goals", `<li>EU battery prices</li><li>Solar tariffs</li>`},
		{"call to action", `<a class="cta" id="cta-start" href="/_preview/surface?agent=a&amp;surface=job.start">Start it →</a>`},
		{"a dashboard surface by its dashboard's label", `title="mission.analytics">Overview</a>`},
		{"a surface without a label in words", `title="config">Config</a>`},
	}
	for _, tt := range tests {
		assert.Contains(t, body, tt.want, tt.name)
	}
	intro, tables := strings.Index(body, `class="intro"`), strings.Index(body, `id="surfaces"`)
	require.Positive(t, intro)
	assert.Less(t, intro, tables, "the introduction comes first")

	// Without an introduction or a job.start surface there is no empty block.
	h, err = New(Config{Agents: []Agent{{Slug: "b", Name: "B", Registration: json.RawMessage(`{"agent": {"slug": "b"}, "capabilities": {"surfaces": ["config"]}}`)}},
		Call: (&fakeController{}).call, Events: http.NotFoundHandler()})
	require.NoError(t, err)
	body = serve(h, http.MethodGet, Prefix, "", nil).Body.String()
	assert.NotContains(t, body, `class="tagline"`)
	assert.NotContains(t, body, `id="cta-start"`)
}

// TestDocumentKindsFollowTheRegistry: every typed document of the contracts
// registry is rendered (not shown as raw JSON), and its fields become a form
// exactly when its model declares a submit action; an opaque document type
// is shown as JSON.
func TestDocumentKindsFollowTheRegistry(t *testing.T) {
	docs := map[string]string{"opaque": `{"type": "Configurator", "submit": {"action": "x"}}`}
	want := map[string]bool{}
	for _, m := range contracts.Models() {
		typ := m.DocumentType()
		if typ == "" {
			continue
		}
		docs[typ] = `{"type": ` + q(typ) + `, "submit": {"action": "act"}, "fields": [{"id": "f1", "label": "F1", "type": "string"}]}`
		_, submits := reflect.TypeOf(m.New()).Elem().FieldByName("Submit")
		want[typ] = submits
	}
	require.GreaterOrEqual(t, len(want), 4, "Form, DocumentReview, ResourceImport, Dashboard, and any later one")
	h := newTestHandler(t, &fakeController{docs: docs}, false)
	for surface := range docs {
		body := serve(h, http.MethodGet, Prefix+"surface?agent=a&surface="+url.QueryEscape(surface), "", nil).Body.String()
		submits, typed := want[surface]
		assert.Equal(t, !typed, strings.Contains(body, `id="document-json"`), "%s: shown as JSON only when untyped", surface)
		assert.Equal(t, submits, strings.Contains(body, `id="surface-form"`), "%s: a form exactly when the model declares submit", surface)
	}
	assert.False(t, want[contracts.DocumentDashboard], "a Dashboard has no submit")
	assert.True(t, want[contracts.DocumentForm])
}
