package testing_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	supervaizer "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/checkpoint"
	"github.com/supervaize/supervaizer-go/studio"
	svtest "github.com/supervaize/supervaizer-go/testing"
)

// apiRequest sends one request to the fake in memory, with the account
// headers (and, for POST, a JSON content type) unless edit changes them.
func apiRequest(t testing.TB, api *svtest.FakeStudioAPI, method, path, body string, edit ...func(h http.Header)) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequestWithContext(t.Context(), method, path, strings.NewReader(body))
	r.Header.Set("Authorization", "Api-Key "+api.AccountKey())
	r.Header.Set("workspace", api.WorkspaceID())
	r.Header.Set("accept", "application/json")
	if method == http.MethodPost {
		r.Header.Set("Content-Type", "application/json")
	}
	for _, e := range edit {
		e(r.Header)
	}
	w := httptest.NewRecorder()
	api.ServeHTTP(w, r)
	return w
}

func header(k, v string) func(http.Header) { return func(h http.Header) { h.Set(k, v) } }

// eventBody is a controller event in the account's workspace.
func eventBody(api *svtest.FakeStudioAPI, eventType, source, details string) string {
	return `{"source":` + source + `,"workspace":"` + api.WorkspaceID() + `","event_type":"` + eventType +
		`","object_type":"case","details":` + details + `}`
}

func TestFakeStudioAPIWire(t *testing.T) {
	t.Parallel()
	ts, _ := newAttached(t)
	api := ts.API
	token := api.RuleSnapshot(snapshotHash)["checkpoint_token"].(string)
	otherToken := api.RuleSnapshot("rs_other")["checkpoint_token"].(string)
	events, billing := api.WorkspacePath(svtest.EventsPath), api.WorkspacePath(studio.BillingConsumptionPath)
	const cp = `{"occurrence_id":"occ-1","phase":"before","snapshot_hash":"` + snapshotHash +
		`","job_id":"job-1","case_id":"case-1","step_id":"s-1","context":{"b":2,"a":1},"secret_refs":[]}`
	withToken := header(studio.HeaderRuleCheckpointToken, token)
	record := func(extra string) string {
		return `{"agent_slug":"` + agentSlug + `","records":[{"sku":"` + skuBrief + `","quantity":1,"job_id":"j","occurred_at":"2026-10-11T09:30:00Z","idempotency_key":"k"` + extra + `}]}`
	}

	tests := []struct {
		name         string
		method, path string
		body         string
		edit         []func(http.Header)
		want         int
		detail       string
	}{
		{"no account key", http.MethodPost, events, `{}`, []func(http.Header){header("Authorization", "")}, 401, "account key"},
		{"wrong account key", http.MethodPost, events, `{}`, []func(http.Header){header("Authorization", "Api-Key nope")}, 401, "account key"},
		{"wrong workspace header", http.MethodPost, events, `{}`, []func(http.Header){header("workspace", "ws-other")}, 403, "workspace"},
		{"no accept", http.MethodPost, events, `{}`, []func(http.Header){header("accept", "text/html")}, 406, "accept"},
		{"not JSON", http.MethodPost, events, `{}`, []func(http.Header){header("Content-Type", "text/plain")}, 415, "Content-Type"},
		{"unknown path", http.MethodGet, "/w/" + api.WorkspaceID() + "/api/v1/nope/", "", nil, 404, "not found"},
		{"other workspace path", http.MethodPost, "/w/ws-other/api/v1/ctrl-events/", `{}`, nil, 404, "not found"},
		{"wrong method", http.MethodGet, events, "", nil, 405, "POST"},
		{"event not an object", http.MethodPost, events, `[]`, nil, 400, "JSON object"},
		{"event without type", http.MethodPost, events, eventBody(api, "", `{"agent":"a"}`, `{}`), nil, 400, "event_type"},
		{"event in another workspace", http.MethodPost, events,
			strings.Replace(eventBody(api, "agent.ping", `{"agent":"a"}`, `{}`), api.WorkspaceID(), "ws-x", 1), nil, 400, "workspace"},
		{"event with two sources", http.MethodPost, events, eventBody(api, "agent.ping", `{"agent":"a","job":"j"}`, `{}`), nil, 400, "exactly one"},
		{"event with a case but no job", http.MethodPost, events, eventBody(api, "agent.ping", `{"agent":"a","case":"c"}`, `{}`), nil, 400, "its job"},
		{"event with an unknown source", http.MethodPost, events, eventBody(api, "agent.ping", `{"team":"a"}`, `{}`), nil, 400, "unknown member"},
		{"event details not an object", http.MethodPost, events, eventBody(api, "agent.ping", `{"agent":"a"}`, `[]`), nil, 400, "details"},
		{"register without key", http.MethodPost, events, eventBody(api, "server.register", `{"server":"server:00-00-00-00-00-00"}`, `{"server_id":"s"}`), nil, 400, "url is required"},
		{"checkpoint without token", http.MethodPost, studio.RuleCheckpointsPath, cp, nil, 403, "X-Rule-Checkpoint-Token"},
		{"checkpoint with an unknown token", http.MethodPost, studio.RuleCheckpointsPath, cp,
			[]func(http.Header){header(studio.HeaderRuleCheckpointToken, "svtest-rct-forged")}, 403, "unknown"},
		{"checkpoint token of another snapshot", http.MethodPost, studio.RuleCheckpointsPath, cp,
			[]func(http.Header){header(studio.HeaderRuleCheckpointToken, otherToken)}, 403, "snapshot_hash"},
		{"checkpoint without step", http.MethodPost, studio.RuleCheckpointsPath, strings.Replace(cp, `"step_id":"s-1",`, "", 1),
			[]func(http.Header){withToken}, 400, "step_id"},
		{"checkpoint bad phase", http.MethodPost, studio.RuleCheckpointsPath, strings.Replace(cp, `"before"`, `"during"`, 1),
			[]func(http.Header){withToken}, 400, "phase"},
		{"checkpoint context not an object", http.MethodPost, studio.RuleCheckpointsPath, strings.Replace(cp, `{"b":2,"a":1}`, `"x"`, 1),
			[]func(http.Header){withToken}, 400, "context"},
		{"checkpoint without secret_refs", http.MethodPost, studio.RuleCheckpointsPath, strings.Replace(cp, `,"secret_refs":[]`, "", 1),
			[]func(http.Header){withToken}, 400, "secret_refs"},
		{"checkpoint of an unannounced case", http.MethodPost, studio.RuleCheckpointsPath, cp, []func(http.Header){withToken}, 409, "not announced"},
		{"billing without records", http.MethodPost, billing, `{"agent_slug":"a","records":[]}`, nil, 400, "records"},
		{"billing without agent", http.MethodPost, billing, `{"records":[{}]}`, nil, 400, "agent_slug"},
		{"billing sku outside the catalog", http.MethodPost, billing, strings.Replace(record(""), skuBrief, "gpu_hour", 1), nil, 400, "billing catalog"},
		{"billing zero quantity", http.MethodPost, billing, strings.Replace(record(""), `"quantity":1`, `"quantity":0`, 1), nil, 400, "quantity"},
		{"billing bad time", http.MethodPost, billing, strings.Replace(record(""), "2026-10-11T09:30:00Z", "yesterday", 1), nil, 400, "RFC 3339"},
		{"billing blank case", http.MethodPost, billing, record(`,"case_id":" "`), nil, 400, "case_id"},
		{"billing metadata not an object", http.MethodPost, billing, record(`,"metadata":[1]`), nil, 400, "metadata"},
		{"billing key repeated", http.MethodPost, billing,
			strings.Replace(record(""), `}]}`, `},{"sku":"`+skuBrief+`","quantity":1,"job_id":"j","occurred_at":"2026-10-11T09:30:00Z","idempotency_key":"k"}]}`, 1),
			nil, 400, "repeated"},
		{"search without limit", http.MethodPost, api.WorkspacePath(svtest.ContextSearchPath), `{"query":"x"}`, nil, 400, "limit"},
		{"search bad scope", http.MethodPost, api.WorkspacePath(svtest.ContextSearchPath), `{"query":"x","limit":1,"scope":"team"}`, nil, 400, "scope"},
		{"search blank mission", http.MethodPost, api.WorkspacePath(svtest.ContextSearchPath), `{"query":"x","limit":1,"mission_id":" "}`, nil, 400, "mission_id"},
		{"open without ref", http.MethodPost, api.WorkspacePath(svtest.ContextOpenPath), `{"max_chars":5}`, nil, 400, "ref"},
		{"open without max_chars", http.MethodPost, api.WorkspacePath(svtest.ContextOpenPath), `{"ref":"r"}`, nil, 400, "max_chars"},
		{"body too large", http.MethodPost, events, `{"x":"` + strings.Repeat("a", 5<<20) + `"}`, nil, 413, "too large"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := apiRequest(t, api, tt.method, tt.path, tt.body, tt.edit...)
			assert.Equal(t, tt.want, w.Code, w.Body.String())
			var body struct {
				Detail string `json:"detail"`
			}
			require.NoError(t, json.Unmarshal(w.Body.Bytes(), &body))
			assert.Contains(t, body.Detail, tt.detail)
			assert.NotContains(t, w.Body.String(), token)
		})
	}
	assert.Empty(t, api.Checkpoints(), "refused checkpoints are not recorded")
	assert.Empty(t, api.BillingRecords(), "refused reports are not recorded")
}

func TestFakeStudioAPICheckpointAnswers(t *testing.T) {
	t.Parallel()
	api := svtest.NewFakeStudioAPI(t, svtest.NewFakeStudio(t))
	snap := api.RuleSnapshot(snapshotHash)
	assert.Equal(t, snapshotHash, snap["hash"])
	assert.Equal(t, checkpoint.RuleSnapshotVersion, snap["version"])
	assert.NotContains(t, snap["checkpoint_url"], api.URL(), "the checkpoint_url is a decoy on another server")
	withToken := header(studio.HeaderRuleCheckpointToken, snap["checkpoint_token"].(string))

	w := apiRequest(t, api, http.MethodPost, api.WorkspacePath(svtest.EventsPath),
		eventBody(api, string(studio.EventCaseUpdate), `{"job":"job-1","case":"case-1"}`, `{}`))
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	body := func(phase, ctx string) string {
		return `{"occurrence_id":"occ-1","phase":"` + phase + `","snapshot_hash":"` + snapshotHash +
			`","job_id":"job-1","case_id":"case-1","step_id":"s-1","context":` + ctx + `,"secret_refs":["context.x"]}`
	}
	answer := func(phase, ctx string) map[string]string {
		t.Helper()
		w := apiRequest(t, api, http.MethodPost, studio.RuleCheckpointsPath, body(phase, ctx), withToken)
		require.Equal(t, http.StatusOK, w.Code, w.Body.String())
		var out map[string]string
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &out))
		return out
	}
	a1 := answer("before", `{"a":1,"b":[1.50,"x"]}`)
	a2 := answer("before", `{"b":[1.50,"x"],"a":1}`)
	assert.Equal(t, a1, a2, "a retry with the same context gets the same answer")
	assert.Equal(t, snapshotHash, a1["snapshot_hash"])
	assert.Equal(t, checkpoint.Allow, a1["status"])
	assert.NotEqual(t, a1["input_hash"], answer("before", `{"a":2}`)["input_hash"], "the input hash follows the context")

	api.SetDecision("occ-1", svtest.AnyPhase, checkpoint.Stop)
	api.SetDecision(svtest.AnyOccurrence, "after", checkpoint.Pause)
	assert.Equal(t, checkpoint.Stop, answer("after", `{}`)["status"], "the occurrence rule beats the phase rule")
	api.SetDecision("occ-1", svtest.AnyPhase, "")
	a3 := answer("after", `{}`)
	assert.Equal(t, checkpoint.Pause, a3["status"])
	assert.NotEqual(t, a1["checkpoint_id"], a3["checkpoint_id"])

	calls := api.Checkpoints()
	require.Len(t, calls, 5)
	assert.Equal(t, map[string]any{"a": float64(1), "b": []any{1.5, "x"}}, calls[0].Context)
	calls[0].Context["a"] = "changed"
	assert.Equal(t, float64(1), api.Checkpoints()[0].Context["a"], "accessors return copies")
	assert.Equal(t, map[string]any{
		"checkpoint_id": a3["checkpoint_id"], "occurrence_id": "occ-1", "phase": "after", "status": "allow",
		"snapshot_hash": snapshotHash, "input_hash": a3["input_hash"], "decision_id": "dec-9",
	}, calls[4].ResumeInput("allow", "dec-9"))
	assert.Zero(t, api.SnapshotURLCalls())

	// The decoy counts what reaches it.
	resp, err := http.Post(snap["checkpoint_url"].(string), "application/json", strings.NewReader(`{}`))
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	assert.Equal(t, 1, api.SnapshotURLCalls())
}

func TestFakeStudioAPIEnv(t *testing.T) {
	t.Parallel()
	api := svtest.NewFakeStudioAPI(t, svtest.NewFakeStudio(t))
	env := supervaizer.ReadEnv(func(k string) string { return api.Env()[k] })
	cfg := studio.Config{APIURL: env.StudioAPIURL, APIKey: env.StudioAPIKey, WorkspaceID: env.StudioWorkspaceID}
	assert.Equal(t, api.ClientConfig(), cfg)
	assert.Equal(t, svtest.DefaultAccountKey, cfg.APIKey)
	assert.Equal(t, svtest.DefaultWorkspaceID, cfg.WorkspaceID)
	assert.Same(t, api.Studio(), api.Studio())
	assert.Equal(t, "/w/"+svtest.DefaultWorkspaceID+"/api/v1/ctrl-events/", api.WorkspacePath(svtest.EventsPath))
}
