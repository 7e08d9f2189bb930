package a2ui_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/a2ui"
	"github.com/supervaize/supervaizer-go/contracts"
)

// FuzzDecodeFieldsAndPlans decodes arbitrary JSON as a setup plan and as a
// field: nothing panics, and a valid document re-encodes to a valid document
// that encodes the same way again.
func FuzzDecodeFieldsAndPlans(f *testing.F) {
	f.Add([]byte(specPlan))
	f.Add([]byte(`{"id": "goal", "label": "Goal", "type": "text", "multiline": true, "min_rows": 4, "default": "x"}`))
	f.Add([]byte(`{"id": "f", "label": "F", "type": "file", "storage": "inline", "max_bytes": 10, "x-extra": [1, 2.50]}`))
	f.Add([]byte(`{"id": "l", "label": "L", "type": "list", "item_fields": [{"id": "a", "label": "A", "type": "list"}]}`))
	f.Add([]byte(`{"steps": [{"id": "s", "title": "S", "fields": [{"id": "b", "label": "B", "depends_on": {"field": "b", "in": []}}]}]}`))
	f.Add([]byte(`{"confirmation_required": false, "steps": [], "cost_estimate": {"status": "unknown", "basis": "?"}}`))
	f.Add([]byte(`{"id": "x", "label": "X", "ID": "y"}`))
	v := contracts.DefaultValidator()
	f.Fuzz(func(t *testing.T, data []byte) {
		roundTrip(t, v, contracts.ModelSetupPlan, data, func() any { return new(contracts.SetupPlan) })
		roundTrip(t, v, contracts.ModelField, data, func() any { return new(contracts.Field) })
	})
}

func roundTrip(t *testing.T, v *contracts.Validator, m contracts.Model, data []byte, alloc func() any) {
	first := alloc()
	if v.Decode(m, data, first) != nil {
		return
	}
	b1, err := contracts.Marshal(first)
	require.NoError(t, err)
	second := alloc()
	require.NoError(t, v.Decode(m, b1, second), "%s re-encoded as %s", m, b1)
	b2, err := contracts.Marshal(second)
	require.NoError(t, err)
	require.True(t, bytes.Equal(b1, b2), "unstable %s:\n%s\n%s", m, b1, b2)
}

// FuzzValidateValues checks arbitrary values against arbitrary field
// definitions: nothing panics and every error has a path and a known code.
func FuzzValidateValues(f *testing.F) {
	fields, err := contracts.Marshal(researchPlan().Steps[0].Fields)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(fields, []byte(`{"goal": "g", "mode": "custom", "budget": -1, "sources": [{"url": 1}, "x"]}`))
	f.Add([]byte(`[{"id": "a", "label": "A", "type": "file", "accept": "image/*", "max_bytes": 3}]`),
		[]byte(`{"a": {"storage": "inline", "filename": "a.png", "media_type": "image/png", "size": 3, "encoding": "base64", "content": "YWJj"}}`))
	f.Add([]byte(`[{"id": "a", "label": "A", "depends_on": {"field": "b", "in": ["1"]}}, {"id": "b", "label": "B", "depends_on": {"field": "a", "in": ["1"]}}]`),
		[]byte(`{"a": 1, "b": 1}`))
	f.Add([]byte(`[{"id": "s", "label": "S", "validation": {"pattern": "(", "min_length": 2}}, {"id": "d", "label": "D", "type": "date"}]`),
		[]byte(`{"s": "é", "d": "2026-13-01"}`))
	f.Add([]byte(`[{"id": "m", "label": "M", "type": "multi_select", "options": [{"value": 1e400, "label": "x"}]}]`),
		[]byte(`{"m": [1e308, true, null, {}]}`))
	known := map[string]bool{a2ui.CodeRequired: true, a2ui.CodeType: true, a2ui.CodeMinLength: true, a2ui.CodeMaxLength: true,
		a2ui.CodePattern: true, a2ui.CodeMin: true, a2ui.CodeMax: true, a2ui.CodeMinItems: true, a2ui.CodeMaxItems: true,
		a2ui.CodeOption: true, a2ui.CodeFile: true}
	f.Fuzz(func(t *testing.T, fieldsJSON, valuesJSON []byte) {
		var fs []a2ui.Field
		if contracts.Unmarshal(fieldsJSON, &fs) != nil {
			return
		}
		dec := json.NewDecoder(bytes.NewReader(valuesJSON))
		dec.UseNumber()
		var values map[string]any
		if dec.Decode(&values) != nil {
			return
		}
		for _, e := range a2ui.ValidateValues(fs, values) {
			if !known[e.Code] || e.Message == "" {
				t.Fatalf("bad error %+v", e)
			}
		}
	})
}
