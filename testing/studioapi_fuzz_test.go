package testing_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/studio"
	svtest "github.com/supervaize/supervaizer-go/testing"
)

// FuzzFakeStudioAPI sends arbitrary bodies to every endpoint of the fake:
// it must never panic nor fail internally, and every refusal is a JSON
// {"detail": …} the SDK can report.
func FuzzFakeStudioAPI(f *testing.F) {
	api := svtest.NewFakeStudioAPI(f, svtest.NewFakeStudio(f))
	token := api.RuleSnapshot(snapshotHash)["checkpoint_token"].(string)
	routes := []struct{ method, path string }{
		{http.MethodPost, api.WorkspacePath(svtest.EventsPath)},
		{http.MethodPost, studio.RuleCheckpointsPath},
		{http.MethodPost, api.WorkspacePath(studio.BillingConsumptionPath)},
		{http.MethodPost, api.WorkspacePath(svtest.ContextSearchPath)},
		{http.MethodPost, api.WorkspacePath(svtest.ContextOpenPath)},
		{http.MethodGet, api.WorkspacePath("/agents/by-slug/" + agentSlug)},
	}
	api.SetAgent(agentSlug, svtest.AgentDetail{})
	api.AddContext(svtest.ContextItem{Ref: "r", Content: "héllo wörld", Tags: []string{"ops"}})
	f.Add(uint8(0), []byte(`{"source":{"job":"job-1","case":"case-1"},"workspace":"`+svtest.DefaultWorkspaceID+`","event_type":"agent.case.start","object_type":"case","details":{}}`))
	f.Add(uint8(0), []byte(`{"source":{"server":"server:02-00-00-00-00-01"},"workspace":"`+svtest.DefaultWorkspaceID+
		`","event_type":"server.register","object_type":"server","details":{"server_id":"s","url":"u","uri":"server:02-00-00-00-00-01","api_version":"v1","controller_version":"1","environment":"dev","api_key":"k","public_key":"x","agents":[]}}`))
	f.Add(uint8(1), []byte(`{"occurrence_id":"o","phase":"before","snapshot_hash":"`+snapshotHash+`","job_id":"job-1","case_id":"case-1","step_id":"s","context":{"n":1e400},"secret_refs":[]}`))
	f.Add(uint8(2), []byte(`{"agent_slug":"a","records":[{"sku":"x","quantity":1,"job_id":"j","occurred_at":"2026-10-11T09:30:00Z","idempotency_key":"k","metadata":{}}]}`))
	f.Add(uint8(3), []byte(`{"query":"WÖRLD","limit":3,"tags":["ops"]}`))
	f.Add(uint8(4), []byte(`{"ref":"r","max_chars":2}`))
	f.Add(uint8(5), []byte(``))
	f.Fuzz(func(t *testing.T, route uint8, body []byte) {
		rt := routes[int(route)%len(routes)]
		w := apiRequest(t, api, rt.method, rt.path, string(body), header(studio.HeaderRuleCheckpointToken, token))
		assert.NotEqual(t, http.StatusInternalServerError, w.Code, w.Body.String())
		var out map[string]any
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &out), "every answer is a JSON object: %s", w.Body.String())
		if w.Code != http.StatusOK {
			assert.IsType(t, "", out["detail"], "a refusal carries a detail")
		}
	})
}
