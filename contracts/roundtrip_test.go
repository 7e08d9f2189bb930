package contracts_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/contracts"
)

// TestCorpusRoundTrip decodes every valid corpus document, encodes it, and
// checks that the encoding is valid and that decode -> encode is stable.
func TestCorpusRoundTrip(t *testing.T) {
	v := contracts.DefaultValidator()
	for _, d := range loadCorpus(t) {
		if !d.valid {
			continue
		}
		t.Run(d.name, func(t *testing.T) {
			first := newValue(t, d.model)
			require.NoError(t, v.Decode(d.model, d.raw, first))
			enc1, err := contracts.Marshal(first)
			require.NoError(t, err)
			require.NoError(t, v.Validate(d.model, enc1), "the encoding of a decoded document is valid")

			second := newValue(t, d.model)
			require.NoError(t, contracts.Unmarshal(enc1, second))
			enc2, err := contracts.Marshal(second)
			require.NoError(t, err)
			assert.Equal(t, string(enc1), string(enc2), "decode -> encode is stable")
		})
	}
}

// TestUnknownKeysSurvive round-trips documents already in their wire form,
// with unknown keys at every level of the open models: the output equals the input.
func TestUnknownKeysSurvive(t *testing.T) {
	tests := []struct {
		name  string
		model contracts.Model
		doc   string
	}{
		{"action request", contracts.ModelActionRequest, `{
			"request_id": "r", "actor": {"user_id": "u", "x_actor": {"role": "owner"}},
			"workspace": {"id": "w", "x_ws": [1, 2]}, "mission_id": "m", "agent_slug": "a",
			"surface": "job.start", "action": "job.start", "input": {"name": "Brief", "x": null},
			"mission": {"id": "m", "metadata": {"filter": {"contact": "c-1"}}, "x_mission": true},
			"x_trace": {"span": "s-1"}}`},
		{"action result", contracts.ModelActionResult, `{
			"status": "ok",
			"effects": [{"type": "step.updated", "step": {"id": "s", "status": "completed"}, "x_effect": 1}],
			"job_state": {
				"job": {"id": "j", "agent_slug": "a", "mission_id": "m", "status": "active",
					"source": {"type": "external", "x_source": "s"},
					"information": {"cost": {"total_cost": 2.5, "currency": "EUR"}, "progress": 0.5},
					"display": {"state_label": "Running", "x_display": "d"}, "x_job": {"k": "v"}},
				"cases": [{"id": "c", "lane": "extract", "metadata": {"k": null}, "x_case": 1, "steps": [
					{"id": "s", "activity": "operation", "status": "awaiting", "x_step": "s",
					 "awaiting": {"reason": "human_input", "surface": "case.step.awaiting", "action": "step.awaiting.submit",
						"fields": [{"id": "f", "label": "F", "type": "file", "required": false, "x_field": {"hint": "h"}}],
						"reopenable": true, "x_awaiting": 1},
					 "outputs": [{"id": "o", "type": "report", "x_output": "o"}]}]}],
				"x_state": 1},
			"replay_safety": {"dedupe_keys": [], "stable_external_ids_required": true,
				"strictly_idempotent_response": false, "convergent": true, "x_replay": 1},
			"errors": [{"code": "invalid_input", "field": "goal", "x_error": {"hint": "h"}}],
			"draft": {"field": "goal", "value": {"a": null}, "suggestions": [{"message": "m", "severity": "warning", "x_s": 1}], "x_draft": 1},
			"dry_run": {"deletable": true, "cost_incurred": {"status": "unknown", "x_cost": 1}, "x_dry": 1},
			"x_result": [1, "two", {"three": 3}]}`},
		{"registration", contracts.ModelRegistration, `{
			"supervaizer_contract_version": 2,
			"agent": {"id": "a", "slug": "a", "display_name": "A", "x_agent": 1},
			"versions": {"a2ui_version": "v0.8", "a2ui_catalog_version": "c", "a2a_version": "0.2.6", "ag_ui_version": null, "x_v": 1},
			"a2a": {"agent_card_url": "/card", "controller_url": "/a2a",
				"transport": {"json_rpc": true, "sse": true, "push_notifications": false, "x_t": 1},
				"external_interop": {"inbound_tasks": false, "outbound_delegation": false, "x_i": 1}, "x_a2a": 1},
			"capabilities": {"surfaces": ["job.start"],
				"surface_definitions": [{"id": "job.start", "label": "Start", "x_sd": 1}],
				"actions": [{"id": "job.start", "mutating": true, "scope": "job", "x_action": {"icon": "play"}}],
				"case_lanes": [{"id": "work", "label": "Work", "default": true, "x_lane": 1}],
				"artifact_types": [{"type": "report", "label": "Report", "renderer_surface": null, "x_art": 1}],
				"rule_checkpoints": {"version": 1, "phases": ["before"], "secret_refs": [], "x_rc": 1},
				"x_caps": null},
			"job_policy": {"default_timeout_seconds": null, "offline_start_policy": "block", "offline_running_policy": "fail_in_studio",
				"sync": {"action": "job.sync", "supported_statuses": [], "x_sync": 1},
				"setup": {"preview_action": "p", "start_action": "job.start", "submit_action": "s", "action_scopes": [],
					"plan": {"anything": [null, {"goes": true}]}, "x_setup": 1}, "x_policy": 1},
			"resources": [{"id": "r", "label": "R", "auto_surface": false, "scope": "workspace", "requires_context": ["workspace.id"],
				"operations": [], "display": {"title_field": null, "columns": [], "search_fields": [], "x_display": 1},
				"fields": [{"id": "f", "label": "F", "type": "string", "required": false, "read_only": false, "multiline": false,
					"options_source": {"type": "resource", "resource": "o", "value_field": "id", "label_field": null, "x_os": 1}, "x_rf": 1}],
				"mounted_views": [{"view": "import", "surface": "job.start", "x_mv": 1}], "x_res": 1}],
			"datasets": [{"id": "d", "label": "D", "auto_surface": false, "scope": "workspace", "display": null, "x_ds": 1}],
			"dashboards": [{"id": "b", "label": "B", "surface": "mission.analytics", "x_db": 1, "widgets": [
				{"id": "w", "title": "W", "data": {"mode": "inline", "datasetId": null, "action": null, "input": {}, "values": [], "x_wd": 1},
				 "layout": {"x": null}, "visualization": {"type": "table", "spec": null, "x_vis": 1}, "x_w": 1}]}],
			"workspace_binding": {"required": false, "modes": [], "reference_label": "l", "reference_help": "h", "reference_placeholder": "p",
				"existing": {"action": "e", "value_field": "v", "label_field": "l", "x_ex": 1},
				"create": {"surface": "c", "action": "c", "fields": [], "x_cr": 1}, "x_wb": 1},
			"x_registration": {"nested": [null]}}`},
		{"surface result", contracts.ModelSurfaceResult, `{"surface": "s", "a2ui_version": null, "a2ui_catalog_version": null,
			"document": {"type": "Configurator", "x": null}, "x_surface": 1}`},
		{"setup plan", contracts.ModelSetupPlan, `{"confirmation_required": true, "steps": [
			{"id": "s", "title": "S", "status": "pending", "help_actions": [], "x_step": 1, "fields": [
				{"id": "l", "label": "L", "type": "list", "required": false, "x_field": 1,
				 "item_fields": [{"id": "i", "label": "I", "type": "string", "required": true, "x_item": 1}],
				 "options": [{"value": null, "label": "None", "x_opt": 1}]}]}],
			"cost_estimate": {"status": "estimated", "min": 1, "max": 2, "x_cost": 1}, "x_plan": 1}`},
		{"context assignment", contracts.ModelContextAssignment, `{"items": [{"ref": "r", "version": 1, "scope": "workspace",
			"title": "T", "x_item": 1}], "job_id": "j", "assigned_at": "2026-01-01T00:00:00Z", "x_assignment": 1}`},
		{"blocks", contracts.ModelIntroduction, `{"tagline": "t", "summary": "s", "example_goals": ["g"], "x_intro": {"a": 1}}`},
		{"billing catalog", contracts.ModelBillingCatalog, `[{"sku": "s", "unit": "u", "description": "", "x_item": 1}]`},
		{"full description", contracts.ModelFullDescription, `{"format": "html", "content": "<p>x</p>", "x_fd": 1}`},
	}
	v := contracts.DefaultValidator()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.NoError(t, v.Validate(tt.model, []byte(tt.doc)))
			val := newValue(t, tt.model)
			require.NoError(t, v.Decode(tt.model, []byte(tt.doc), val))
			got, err := contracts.Marshal(val)
			require.NoError(t, err)
			assert.JSONEq(t, tt.doc, string(got))
		})
	}
}

// presence is what the wire holds at a JSON Pointer.
type presence int

const (
	absent  presence = iota // the key is not written
	isNull                  // the key is written as null
	present                 // the key is written with a non-null value
)

// TestWireNulls pins the absent-vs-null rules of each payload:
// registrations keep their nulls, action results drop every null of a typed
// object but keep the nulls inside free-form objects, surface results write
// their unset versions as null, and the newer optional keys stay off the wire
// at their defaults.
func TestWireNulls(t *testing.T) {
	rawPlan, err := contracts.RawPlan(json.RawMessage(`{"steps": [{"id": "s", "note": null}], "custom": null}`))
	require.NoError(t, err)
	tests := []struct {
		name  string
		value any
		want  map[string]presence
	}{
		{"registration keeps nulls and omits newer keys at their defaults", contracts.Registration{
			Agent:    contracts.AgentIdentity{ID: "a", Slug: "a", DisplayName: "A"},
			Versions: contracts.Versions{A2UIVersion: "v0.8", A2UICatalogVersion: "c", A2AVersion: "0.2.6"},
			A2A:      contracts.A2AEndpoints{AgentCardURL: "/card", ControllerURL: "/a2a"},
			Capabilities: contracts.Capabilities{
				Surfaces: []string{"job.start"},
				Actions: contracts.ActionList{{ID: "job.start", Mutating: true, Scope: contracts.ScopeJob, Kind: contracts.KindCommand},
					{ID: "goal.suggest", Kind: contracts.KindHelp, TargetField: "goal", DryRun: true, Label: "Suggest", Description: "Drafts the goal"}},
				ArtifactTypes: []contracts.ArtifactType{{Type: "report", Label: "Report"}},
			},
			Resources: []contracts.ResourceDefinition{{ID: "r", Label: "R", Fields: []contracts.ResourceField{
				{ID: "company", Label: "Company", Type: contracts.FieldResourceRef, OptionsSource: &contracts.OptionsSource{Resource: "companies"}},
				{ID: "name", Label: "Name"}}}},
			Datasets: []contracts.DatasetDefinition{{ID: "d", Label: "D"}},
		}, map[string]presence{
			"/versions/ag_ui_version":                          isNull,
			"/workspace_binding":                               isNull,
			"/job_policy/default_timeout_seconds":              isNull,
			"/job_policy/sync":                                 isNull,
			"/job_policy/setup":                                isNull,
			"/capabilities/artifact_types/0/renderer_surface":  isNull,
			"/resources/0/display":                             isNull,
			"/datasets/0/display":                              isNull,
			"/resources/0/fields/0/options_source/label_field": isNull,
			"/resources/0/fields/1/options_source":             isNull,
			"/resources/0/fields/1/read_only":                  present,
			"/resources/0/fields/1/multiline":                  present,
			"/resources/0/fields/1/default":                    absent,
			"/resources/0/fields/1/validation":                 absent,
			"/capabilities/surface_definitions":                absent,
			"/capabilities/rule_checkpoints":                   absent,
			"/capabilities/scheduled_start":                    absent,
			"/capabilities/actions/0/kind":                     absent,
			"/capabilities/actions/0/target_field":             absent,
			"/capabilities/actions/0/dry_run":                  absent,
			"/capabilities/actions/0/label":                    absent,
			"/capabilities/actions/0/description":              absent,
			"/capabilities/actions/1/kind":                     present,
			"/capabilities/actions/1/target_field":             present,
			"/capabilities/actions/1/dry_run":                  present,
			"/capabilities/actions/1/label":                    present,
			"/capabilities/actions/1/description":              present,
			"/capabilities/case_lanes":                         present,
			"/dashboards":                                      present,
			"/supervaizer_contract_version":                    present,
		}},
		{"registration with scheduled start", contracts.Registration{
			Capabilities: contracts.Capabilities{ScheduledStart: true, RuleCheckpoints: &contracts.RuleCheckpoints{Phases: []string{"before"}}},
		}, map[string]presence{
			"/capabilities/scheduled_start":              present,
			"/capabilities/rule_checkpoints/version":     present,
			"/capabilities/rule_checkpoints/secret_refs": present,
		}},
		{"action result drops typed nulls, keeps free-form ones", contracts.ActionResult{
			Status: contracts.StatusOK,
			Effects: []contracts.Effect{{Type: "job.started",
				Data:  map[string]any{"topic_id": "t-1", "eta": nil},
				Item:  map[string]any{"label": nil},
				Extra: contracts.Extra{"x_null": json.RawMessage("null"), "x_kept": json.RawMessage(`{"inner": null}`)}}},
			JobState: &contracts.JobState{Job: contracts.Job{ID: "j", AgentSlug: "a", MissionID: "m", Status: "active",
				Source: contracts.JobSource{Type: contracts.SourceFreshStart}, Extra: contracts.Extra{"x_gone": json.RawMessage("null")}},
				Cases: []contracts.Case{{ID: "c", Metadata: map[string]any{"link": nil}}}},
			SetupPlan: rawPlan,
			Draft:     &contracts.FieldDraft{Field: "goal", Value: json.RawMessage("null")},
			Extra:     contracts.Extra{"x_top_null": json.RawMessage("null")},
		}, map[string]presence{
			"/effects/0/data/eta":                isNull,
			"/effects/0/item/label":              isNull,
			"/effects/0/x_kept/inner":            isNull,
			"/effects/0/x_null":                  absent,
			"/effects/0/job_id":                  absent,
			"/effects/0/count":                   absent,
			"/effects/0/rows":                    absent,
			"/job_state/job/x_gone":              absent,
			"/job_state/job/information":         absent,
			"/job_state/job/display":             absent,
			"/job_state/job/source/external_ref": absent,
			"/job_state/cases/0/lane":            present,
			"/job_state/cases/0/metadata/link":   isNull,
			"/job_state/cases/0/steps":           present,
			"/job_state/cases/0/title":           absent,
			"/setup_plan/custom":                 isNull,
			"/setup_plan/steps/0/note":           isNull,
			"/draft/value":                       absent,
			"/draft/suggestions":                 present,
			"/replay_safety":                     absent,
			"/errors":                            absent,
			"/dry_run":                           absent,
			"/observed_at":                       absent,
			"/x_top_null":                        absent,
		}},
		{"action result always writes effects", contracts.ActionResult{Status: contracts.StatusError,
			Errors: []contracts.ResultError{{Code: contracts.ErrorIdempotencyConflict}}},
			map[string]presence{"/effects": present, "/errors/0/message": absent, "/errors/0/field": absent}},
		{"replay safety writes its four keys", contracts.ActionResult{Status: contracts.StatusOK, ReplaySafety: &contracts.ReplaySafety{}},
			map[string]presence{"/replay_safety/dedupe_keys": present, "/replay_safety/stable_external_ids_required": present,
				"/replay_safety/strictly_idempotent_response": present, "/replay_safety/convergent": present}},
		{"dry run writes only what is set", contracts.ActionResult{Status: contracts.StatusOK, DryRun: &contracts.DryRunOutcome{}},
			map[string]presence{"/dry_run": present, "/dry_run/deletable": absent, "/dry_run/expires_at": absent, "/dry_run/cost_incurred": absent}},
		{"surface result keeps null versions", contracts.SurfaceResult{Surface: "job.start", Document: json.RawMessage(`{"type": "Configurator"}`)},
			map[string]presence{"/a2ui_version": isNull, "/a2ui_catalog_version": isNull, "/document/type": present}},
		{"setup field writes id, label, type and required", contracts.Field{ID: "goal", Label: "Goal"},
			map[string]presence{"/type": present, "/required": present, "/multiline": absent, "/read_only": absent,
				"/options_source": absent, "/validation": absent, "/min_rows": absent, "/storage": absent}},
		{"cost estimate omits unset keys", contracts.CostEstimate{Status: contracts.CostUnknown},
			map[string]presence{"/status": present, "/unit": absent, "/min": absent, "/max": absent, "/basis": absent}},
		{"context assignment omits an unset mission id", contracts.ContextAssignment{JobID: "j", AssignedAt: "2026-01-01T00:00:00Z"},
			map[string]presence{"/mission_id": absent, "/items": present}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw, err := contracts.Marshal(tt.value)
			require.NoError(t, err)
			for ptr, want := range tt.want {
				val, ok := lookup(t, raw, ptr)
				got := absent
				if ok {
					got = present
					if val == nil {
						got = isNull
					}
				}
				assert.Equal(t, want, got, "%s in %s", ptr, raw)
			}
		})
	}
}

// TestDecodedNullsDropped decodes an action result full of nulls: the encoding
// drops each of them, and absent keys read as their defaults.
func TestDecodedNullsDropped(t *testing.T) {
	raw := []byte(`{"status": "ok", "effects": [{"type": "x", "job_id": null, "count": null, "item": null, "rows": null}],
		"job_state": null, "replay_safety": null, "setup_plan": null, "draft": null, "dry_run": null, "errors": null,
		"external_ref": null, "observed_at": null}`)
	var res contracts.ActionResult
	require.NoError(t, contracts.DefaultValidator().Decode(contracts.ModelActionResult, raw, &res))
	got, err := contracts.Marshal(res)
	require.NoError(t, err)
	assert.JSONEq(t, `{"status": "ok", "effects": [{"type": "x"}]}`, string(got))

	var rs contracts.ReplaySafety
	require.NoError(t, contracts.Unmarshal([]byte(`{}`), &rs))
	assert.Equal(t, contracts.DefaultReplaySafety(), rs, "absent replay-safety keys take the contract defaults")
}
