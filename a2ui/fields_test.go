package a2ui_test

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/a2ui"
	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/testing/golden"
)

// researchPlan is the setup plan of the protocol, built with the helpers.
func researchPlan() contracts.SetupPlan {
	return contracts.SetupPlan{
		Steps: []contracts.SetupStep{{
			ID:    "scope",
			Title: "Scope",
			Fields: []a2ui.Field{
				a2ui.TextField("goal", "Goal", a2ui.Required(), a2ui.Multiline(4)),
				a2ui.SelectField("mode", "Mode", a2ui.Choice("fast", "Fast"), a2ui.Choice("custom", "Custom")),
				a2ui.NumberField("budget", "Budget", a2ui.DependsOn("mode", "custom"),
					a2ui.Min(0), a2ui.Message("Budget cannot be negative")),
				a2ui.ListField("sources", "Sources", []a2ui.Field{
					a2ui.StringField("url", "URL", a2ui.Required()),
					a2ui.IntegerField("weight", "Weight"),
				}, a2ui.MaxItems(10)),
			},
			HelpActions: []string{"goal.suggest"},
		}},
		CostEstimate: a2ui.EstimatedCost("credits", 5, 20, "for 50 runs"),
	}
}

// The plan of the protocol, verbatim.
const specPlan = `{
  "confirmation_required": true,
  "steps": [
    {
      "id": "scope",
      "title": "Scope",
      "status": "pending",
      "fields": [
        {"id": "goal", "label": "Goal", "type": "text", "required": true, "multiline": true, "min_rows": 4},
        {"id": "mode", "label": "Mode", "type": "select", "required": false,
         "options": [{"value": "fast", "label": "Fast"}, {"value": "custom", "label": "Custom"}]},
        {"id": "budget", "label": "Budget", "type": "number", "required": false,
         "depends_on": {"field": "mode", "in": ["custom"]},
         "validation": {"min": 0, "message": "Budget cannot be negative"}},
        {"id": "sources", "label": "Sources", "type": "list", "required": false,
         "item_fields": [
           {"id": "url", "label": "URL", "type": "string", "required": true},
           {"id": "weight", "label": "Weight", "type": "integer", "required": false}
         ],
         "validation": {"max_items": 10}}
      ],
      "help_actions": ["goal.suggest"]
    }
  ],
  "cost_estimate": {"status": "estimated", "unit": "credits", "min": 5, "max": 20, "basis": "for 50 runs"}
}`

func TestSetupPlanGolden(t *testing.T) {
	plan := researchPlan()
	got, err := contracts.DefaultValidator().ValidateValue(contracts.ModelSetupPlan, &plan)
	require.NoError(t, err)
	assert.JSONEq(t, specPlan, string(got))
	golden.JSON(t, filepath.Join("testdata", "setup_plan.golden.json"), got)

	var back contracts.SetupPlan
	require.NoError(t, contracts.DefaultValidator().Decode(contracts.ModelSetupPlan, []byte(specPlan), &back))
	assert.JSONEq(t, specPlan, string(marshal(t, back)))
}

const deleteKey = "\x00delete"

// patchJSON sets (or, with deleteKey, deletes) the value at a JSON Pointer of
// doc; an array index equal to the length appends.
func patchJSON(t testing.TB, doc []byte, pointer, value string) []byte {
	t.Helper()
	decode := func(b []byte) any {
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		var v any
		require.NoError(t, dec.Decode(&v), string(b))
		return v
	}
	var val any
	if value != deleteKey {
		val = decode([]byte(value))
	}
	var set func(node any, segs []string) any
	set = func(node any, segs []string) any {
		switch n := node.(type) {
		case map[string]any:
			switch {
			case len(segs) > 1:
				n[segs[0]] = set(n[segs[0]], segs[1:])
			case value == deleteKey:
				delete(n, segs[0])
			default:
				n[segs[0]] = val
			}
			return n
		case []any:
			k, err := strconv.Atoi(segs[0])
			require.NoError(t, err, pointer)
			switch {
			case len(segs) > 1:
				n[k] = set(n[k], segs[1:])
			case k == len(n):
				n = append(n, val)
			default:
				n[k] = val
			}
			return n
		}
		t.Fatalf("cannot walk %s", pointer)
		return nil
	}
	out, err := json.Marshal(set(decode(doc), strings.Split(strings.TrimPrefix(pointer, "/"), "/")))
	require.NoError(t, err)
	return out
}

// TestFieldDefinitionRules changes the plan of the protocol one rule at a time
// (and the errors listed) and checks the problem.
func TestFieldDefinitionRules(t *testing.T) {
	const f0, f1, f2, f3 = "/steps/0/fields/0", "/steps/0/fields/1", "/steps/0/fields/2", "/steps/0/fields/3"
	long := strconv.Quote(strings.Repeat("é", 301))
	tests := []struct {
		name, pointer, value string
		want                 problem
	}{
		// Field schema.
		{"field without id", f1 + "/id", deleteKey, problem{f1 + "/id", "required", ""}},
		{"field with a blank id", f1 + "/id", `" "`, problem{f1 + "/id", "nonblank", ""}},
		{"field without label", f1 + "/label", deleteKey, problem{f1 + "/label", "required", ""}},
		{"description over 300 characters", f1 + "/description", long, problem{f1 + "/description", "maxLength", ""}},
		{"min_rows without multiline", f0 + "/multiline", deleteKey, problem{f0 + "/multiline", "required", "min_rows is allowed only when multiline is true"}},
		{"min_rows with multiline false", f0 + "/multiline", `false`, problem{f0 + "/multiline", "const", "min_rows is allowed only when multiline is true"}},
		{"min_rows below 1", f0 + "/min_rows", `0`, problem{f0 + "/min_rows", "minimum", ""}},
		{"options as plain strings", f1 + "/options", `["fast", "custom"]`, problem{f1 + "/options/0", "type", ""}},
		{"option without label", f1 + "/options/0", `{"value": "fast"}`, problem{f1 + "/options/0/label", "required", ""}},
		{"options_source of another type", f1 + "/options_source", `{"type": "dataset", "resource": "r"}`, problem{f1 + "/options_source/type", "enum", ""}},
		// List fields.
		{"item_fields on budget", f2 + "/item_fields", `[{"id": "x", "label": "X"}]`, problem{f2, "not", "no other type may have them"}},
		{"list without item_fields", f3 + "/item_fields", deleteKey, problem{f3 + "/item_fields", "required", "a list field needs item_fields"}},
		{"list with empty item_fields", f3 + "/item_fields", `[]`, problem{f3 + "/item_fields", "minItems", "a list field needs item_fields"}},
		{"item field of type list", f3 + "/item_fields/1", `{"id": "w", "label": "W", "type": "list", "item_fields": [{"id": "a", "label": "A"}]}`,
			problem{f3 + "/item_fields/1", "not", "an item field cannot be a list"}},
		// Setup plan and steps.
		{"duplicate step id", "/steps/1", `{"id": "scope", "title": "Again"}`, problem{"/steps/1/id", "unique", ""}},
		{"step without id", "/steps/0/id", deleteKey, problem{"/steps/0/id", "required", ""}},
		{"step title over 120 characters", "/steps/0/title", strconv.Quote(strings.Repeat("t", 121)), problem{"/steps/0/title", "maxLength", ""}},
		{"blank step title", "/steps/0/title", `""`, problem{"/steps/0/title", "nonblank", ""}},
		{"step description over 300 characters", "/steps/0/description", long, problem{"/steps/0/description", "maxLength", ""}},
		{"unknown step status", "/steps/0/status", `"started"`, problem{"/steps/0/status", "enum", ""}},
		{"confirmation_required null", "/confirmation_required", `null`, problem{"/confirmation_required", "type", ""}},
		// Depends_on.
		{"depends on itself", f2 + "/depends_on", `{"field": "budget", "in": ["x"]}`, problem{f2 + "/depends_on/field", "depends_on", ""}},
		{"depends on a missing sibling", f2 + "/depends_on", `{"field": "kind", "in": ["x"]}`, problem{f2 + "/depends_on/field", "depends_on", ""}},
		{"depends_on with empty in", f2 + "/depends_on/in", `[]`, problem{f2 + "/depends_on/in", "minItems", ""}},
		{"depends_on in not strings", f2 + "/depends_on/in", `[true]`, problem{f2 + "/depends_on/in/0", "type", ""}},
		// Validation.
		{"validation.min on a text field", f0 + "/validation", `{"min": 1}`, problem{f0 + "/validation/min", "validation_type", ""}},
		{"pattern on a number field", f2 + "/validation", `{"pattern": "^[0-9]+$"}`, problem{f2 + "/validation/pattern", "validation_type", ""}},
		{"max_length on a select field", f1 + "/validation", `{"max_length": 3}`, problem{f1 + "/validation/max_length", "validation_type", ""}},
		{"min_items on a text field", f0 + "/validation", `{"min_items": 1}`, problem{f0 + "/validation/min_items", "validation_type", ""}},
		{"max on a list field", f3 + "/validation", `{"max": 1}`, problem{f3 + "/validation/max", "validation_type", ""}},
		{"negative min_length", f0 + "/validation", `{"min_length": -1}`, problem{f0 + "/validation/min_length", "minimum", ""}},
		{"negative max_items", f3 + "/validation", `{"max_items": -1}`, problem{f3 + "/validation/max_items", "minimum", ""}},
		{"min_length above max_length", f0 + "/validation", `{"min_length": 5, "max_length": 2}`, problem{f0 + "/validation/max_length", "min_le_max", ""}},
		{"min above max", f2 + "/validation", `{"min": 5, "max": 2}`, problem{f2 + "/validation/max", "min_le_max", ""}},
		{"min_items above max_items", f3 + "/validation", `{"min_items": 11, "max_items": 10}`, problem{f3 + "/validation/max_items", "min_le_max", ""}},
		{"validation message null", f2 + "/validation/message", `null`, problem{f2 + "/validation/message", "type", ""}},
		// File fields.
		{"unknown storage", f1, `{"id": "f", "label": "F", "type": "file", "storage": "s3"}`, problem{f1 + "/storage", "enum", ""}},
		{"negative max_bytes", f1, `{"id": "f", "label": "F", "type": "file", "max_bytes": -1}`, problem{f1 + "/max_bytes", "minimum", ""}},
		{"min_length on a file field", f1, `{"id": "f", "label": "F", "type": "file", "validation": {"min_length": 1}}`, problem{f1 + "/validation/min_length", "validation_type", ""}},
		// Cost estimate.
		{"unknown cost with a min", "/cost_estimate", `{"status": "unknown", "min": 1}`, problem{"/cost_estimate", "not", "an unknown cost estimate has no unit, min or max"}},
		{"unknown cost with a unit", "/cost_estimate", `{"status": "unknown", "unit": "USD"}`, problem{"/cost_estimate", "not", "an unknown cost estimate"}},
		{"estimated cost without max", "/cost_estimate/max", deleteKey, problem{"/cost_estimate/max", "required", "an estimated cost needs min and max"}},
		{"cost without status", "/cost_estimate/status", deleteKey, problem{"/cost_estimate/status", "required", ""}},
		{"cost status outside the enum", "/cost_estimate/status", `"guessed"`, problem{"/cost_estimate/status", "enum", ""}},
		{"negative cost", "/cost_estimate/min", `-1`, problem{"/cost_estimate/min", "minimum", ""}},
		{"cost min above max", "/cost_estimate/min", `30`, problem{"/cost_estimate/max", "min_le_max", ""}},
		{"cost basis over 300 characters", "/cost_estimate/basis", long, problem{"/cost_estimate/basis", "maxLength", ""}},
	}
	plan := marshal(t, researchPlan())
	v := contracts.DefaultValidator()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			doc := patchJSON(t, plan, tt.pointer, tt.value)
			assertProblem(t, v.Validate(contracts.ModelSetupPlan, doc), tt.want)
		})
	}
}

// minimalRegistration returns a registration whose setup plan is the plan of
// the protocol and whose actions are the given JSON array.
func minimalRegistration(t *testing.T, actions string) []byte {
	t.Helper()
	return []byte(`{"agent": {"id": "research-agent", "slug": "research-agent", "display_name": "Research Agent"},
	"versions": {"a2ui_version": "v0.8", "a2ui_catalog_version": "research-agent.2026-05-16", "a2a_version": "0.2.6"},
	"a2a": {"agent_card_url": "/.well-known/agents/research-agent_agent.json", "controller_url": "/a2a"},
	"capabilities": {"surfaces": ["job.start"], "actions": ` + actions + `},
	"job_policy": {"setup": {"action_scopes": ["job"], "plan": ` + string(marshal(t, researchPlan())) + `}}}`)
}

// TestHelpActionRules covers the protocol errors that need the registration: the
// plan's help actions must be declared help actions, and help actions never mutate.
func TestHelpActionRules(t *testing.T) {
	const base = `"job.start", "job.start.preview", "step.awaiting.submit"`
	tests := []struct {
		name, actions string
		want          *problem
	}{
		{"declared help action", `[` + base + `, {"id": "goal.suggest", "kind": "help", "mutating": false, "target_field": "goal"}]`, nil},
		{"help action not declared", `[` + base + `]`, &problem{"/job_policy/setup/plan/steps/0/help_actions/0", "help_action", ""}},
		{"declared as a command", `[` + base + `, {"id": "goal.suggest", "mutating": false}]`, &problem{"/job_policy/setup/plan/steps/0/help_actions/0", "help_action", ""}},
		{"mutating help action", `[` + base + `, {"id": "goal.suggest", "kind": "help", "mutating": true}]`,
			&problem{"/capabilities/actions/3/mutating", "const", "a help action must not be mutating"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := contracts.DefaultValidator().Validate(contracts.ModelRegistration, minimalRegistration(t, tt.actions))
			if tt.want == nil {
				require.NoError(t, err)
				return
			}
			assertProblem(t, err, *tt.want)
		})
	}
}

func TestFieldConstructors(t *testing.T) {
	tests := []struct {
		name  string
		field a2ui.Field
		want  string
	}{
		{"string", a2ui.StringField("s", "S", a2ui.Placeholder("type here"), a2ui.Description("Help"), a2ui.MinLength(1), a2ui.MaxLength(9), a2ui.Pattern("^[a-z]+$")),
			`{"id":"s","label":"S","type":"string","required":false,"placeholder":"type here","description":"Help","validation":{"min_length":1,"max_length":9,"pattern":"^[a-z]+$"}}`},
		{"text", a2ui.TextField("t", "T", a2ui.Multiline(0), a2ui.Default("draft")),
			`{"id":"t","label":"T","type":"text","required":false,"default":"draft","multiline":true}`},
		{"boolean", a2ui.BooleanField("b", "B", a2ui.Default(true)), `{"id":"b","label":"B","type":"boolean","required":false,"default":true}`},
		{"integer", a2ui.IntegerField("i", "I", a2ui.Min(1), a2ui.Max(5), a2ui.Default(3)),
			`{"id":"i","label":"I","type":"integer","required":false,"default":3,"validation":{"min":1,"max":5}}`},
		{"number", a2ui.NumberField("n", "N", a2ui.Default(0.5)), `{"id":"n","label":"N","type":"number","required":false,"default":0.5}`},
		{"date", a2ui.DateField("d", "D", a2ui.Required()), `{"id":"d","label":"D","type":"date","required":true}`},
		{"multi_select", a2ui.MultiSelectField("m", "M", a2ui.Choice("a", "A"), a2ui.MinItems(1), a2ui.MaxItems(2)),
			`{"id":"m","label":"M","type":"multi_select","required":false,"options":[{"value":"a","label":"A"}],"validation":{"min_items":1,"max_items":2}}`},
		{"resource_ref without label field", a2ui.ResourceRefField("r", "R", "lists", a2ui.ReadOnly()),
			`{"id":"r","label":"R","type":"resource_ref","required":false,"options_source":{"type":"resource","resource":"lists","value_field":"id","label_field":null},"read_only":true}`},
		{"file", a2ui.FileField("report_file", "Quarterly report (.md)", contracts.StorageStudio, a2ui.Accept(".md,text/markdown"), a2ui.MaxBytes(2097152), a2ui.Required()),
			`{"id": "report_file", "label": "Quarterly report (.md)", "type": "file", "accept": ".md,text/markdown", "max_bytes": 2097152, "storage": "studio", "required": true}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.JSONEq(t, tt.want, string(marshal(t, tt.field)))
			_, err := contracts.DefaultValidator().ValidateValue(contracts.ModelField, &tt.field)
			require.NoError(t, err)
		})
	}
}

func TestResourceFields(t *testing.T) {
	fs := a2ui.ResourceFields(a2ui.StringField("name", "Name"))
	require.Len(t, fs, 1)
	assert.JSONEq(t, `{"id":"name","label":"Name","type":"string","required":false,"read_only":false,"multiline":false,"options_source":null}`,
		string(marshal(t, fs[0])))
	assert.Empty(t, a2ui.ResourceFields())
}

func TestAwaitingFields(t *testing.T) {
	fs := a2ui.AwaitingFields(a2ui.TextField("review", "Review", a2ui.Required()), a2ui.BooleanField("ok", "Approve"))
	require.Len(t, fs, 2)
	b, err := contracts.Marshal(fs)
	require.NoError(t, err)
	assert.JSONEq(t, `[{"id":"review","label":"Review","type":"text","required":true},{"id":"ok","label":"Approve","type":"boolean","required":false}]`, string(b))
}
