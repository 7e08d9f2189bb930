package a2ui_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/a2ui"
	"github.com/supervaize/supervaizer-go/contracts"
)

func TestCostEstimates(t *testing.T) {
	v := contracts.DefaultValidator()
	got, err := v.ValidateValue(contracts.ModelCostEstimate, a2ui.EstimatedCost("USD", 0.5, 2, "per run"))
	require.NoError(t, err)
	assert.JSONEq(t, `{"status": "estimated", "unit": "USD", "min": 0.5, "max": 2, "basis": "per run"}`, string(got))

	unknown := a2ui.UnknownCost()
	unknown.Basis = "depends on the sources found"
	got, err = v.ValidateValue(contracts.ModelCostEstimate, unknown)
	require.NoError(t, err)
	assert.JSONEq(t, `{"status": "unknown", "basis": "depends on the sources found"}`, string(got))

	_, err = v.ValidateValue(contracts.ModelCostEstimate, a2ui.EstimatedCost("USD", 3, 2, ""))
	assertProblem(t, err, problem{"/max", "min_le_max", ""})
}

func TestHelpInput(t *testing.T) {
	var in a2ui.HelpInput
	require.NoError(t, json.Unmarshal([]byte(`{"field": "goal", "values": {"goal": "Map the EU battery market", "mode": "custom"}}`), &in))
	assert.Equal(t, a2ui.HelpInput{Field: "goal", Values: map[string]any{"goal": "Map the EU battery market", "mode": "custom"}}, in)
}

func TestDraft(t *testing.T) {
	tests := []struct {
		name        string
		field       string
		value       any
		suggestions []contracts.Suggestion
		want        string // "" means an error
	}{
		{"proposed value", "goal", "Size the EU stationary-battery market for 2027 and list the five largest suppliers.",
			[]contracts.Suggestion{{Message: "Add a time horizon so the scope is bounded.", Severity: contracts.SeverityInfo, Field: "goal"}},
			`{"field": "goal", "value": "Size the EU stationary-battery market for 2027 and list the five largest suppliers.",
			  "suggestions": [{"message": "Add a time horizon so the scope is bounded.", "severity": "info", "field": "goal"}]}`},
		{"pure check", "goal", nil, []contracts.Suggestion{{Message: "Looks good."}},
			`{"field": "goal", "suggestions": [{"message": "Looks good.", "severity": "info"}]}`},
		{"raw null is a pure check", "goal", json.RawMessage(`null`), nil, `{"field": "goal", "suggestions": []}`},
		{"list value", "sources", []map[string]any{{"url": "https://a.example", "weight": 2}}, nil,
			`{"field": "sources", "value": [{"url": "https://a.example", "weight": 2}], "suggestions": []}`},
		{"blank field", " ", "x", nil, ""},
		{"value that does not marshal", "goal", make(chan int), nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d, err := a2ui.Draft(tt.field, tt.value, tt.suggestions...)
			if tt.want == "" {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.JSONEq(t, tt.want, string(marshal(t, d)))
			res := contracts.ActionResult{Status: contracts.StatusOK, Draft: d}
			_, err = contracts.DefaultValidator().ValidateValue(contracts.ModelActionResult, &res)
			require.NoError(t, err)
		})
	}
}

func TestDryRun(t *testing.T) {
	paris := time.FixedZone("CEST", 2*3600)
	d := a2ui.DryRun(time.Date(2026, 10, 12, 11, 0, 0, 500, paris), true,
		a2ui.EstimatedCost("credits", 1, 2, ""))
	res := contracts.ActionResult{Status: contracts.StatusOK, DryRun: d}
	got, err := contracts.DefaultValidator().ValidateValue(contracts.ModelActionResult, &res)
	require.NoError(t, err)
	assert.JSONEq(t, `{"status": "ok", "effects": [], "dry_run": {"expires_at": "2026-10-12T09:00:00Z", "deletable": true,
		"cost_incurred": {"status": "estimated", "unit": "credits", "min": 1, "max": 2}}}`, string(got))

	assert.JSONEq(t, `{}`, string(marshal(t, a2ui.DryRun(time.Time{}, false, nil))))
}
