package contracts_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/supervaize/supervaizer-go/contracts"
)

// addCorpusSeeds adds the corpus documents of the given models to f.
func addCorpusSeeds(f *testing.F, models ...contracts.Model) {
	for _, d := range loadCorpus(f) {
		for _, m := range models {
			if d.model == m {
				f.Add(d.raw)
			}
		}
	}
}

// checkRoundTrip checks an accepted document of model m: it decodes, its
// encoding is valid, and decode -> encode is stable.
func checkRoundTrip(t *testing.T, v *contracts.Validator, m contracts.Model, data []byte) {
	t.Helper()
	first := newValue(t, m)
	if err := v.Decode(m, data, first); err != nil {
		t.Fatalf("Validate accepted what Decode refuses: %v", err)
	}
	enc1, err := contracts.Marshal(first)
	if err != nil {
		t.Fatalf("encode an accepted document: %v", err)
	}
	if err := v.Validate(m, enc1); err != nil {
		t.Fatalf("the encoding of an accepted document is invalid: %v\n%s", err, enc1)
	}
	second := newValue(t, m)
	if err := contracts.Unmarshal(enc1, second); err != nil {
		t.Fatalf("decode the encoding: %v", err)
	}
	enc2, err := contracts.Marshal(second)
	if err != nil {
		t.Fatalf("encode again: %v", err)
	}
	if string(enc1) != string(enc2) {
		t.Fatalf("decode -> encode is not stable:\n%s\n%s", enc1, enc2)
	}
}

// checkProblems checks the shape of a rejection: a *ValidationError whose
// problems each carry a rule, a one-line message and a JSON Pointer matching Loc.
func checkProblems(t *testing.T, m contracts.Model, err error) {
	t.Helper()
	var ve *contracts.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("a rejection is a *ValidationError, got %T: %v", err, err)
	}
	if ve.Model != m || len(ve.Problems) == 0 {
		t.Fatalf("bad ValidationError: %+v", ve)
	}
	if got := strings.Count(err.Error(), "\n"); got != len(ve.Problems) {
		t.Fatalf("want one line per problem, got %d lines for %d problems:\n%s", got+1, len(ve.Problems), err)
	}
	for _, p := range ve.Problems {
		if p.Type == "" || p.Msg == "" || p.Path != pointerOf(p.Loc) {
			t.Fatalf("malformed problem %+v", p)
		}
	}
}

func FuzzDecodeRegistration(f *testing.F) {
	addCorpusSeeds(f, contracts.ModelRegistration)
	f.Add([]byte(`{"agent": {"id": "a", "slug": "a", "display_name": "A"}, "versions": {"a2ui_version": "v", "a2ui_catalog_version": "c", "a2a_version": "a"}, "a2a": {"agent_card_url": "/c", "controller_url": "/a"}, "capabilities": {"actions": ["x", {"id": "y", "kind": "help", "mutating": false}]}}`))
	f.Add([]byte(`{"supervaizer_contract_version": 2.0, "Agent": null}`))
	f.Add([]byte(`null`))
	v := contracts.DefaultValidator()
	f.Fuzz(func(t *testing.T, data []byte) {
		var reg contracts.Registration
		_ = contracts.Unmarshal(data, &reg) // must not panic
		err := v.Validate(contracts.ModelRegistration, data)
		if err != nil {
			checkProblems(t, contracts.ModelRegistration, err)
			return
		}
		checkRoundTrip(t, v, contracts.ModelRegistration, data)
	})
}

func FuzzValidateActionResult(f *testing.F) {
	addCorpusSeeds(f, contracts.ModelActionResult, contracts.ModelJobState)
	f.Add([]byte(`{"status": "ok", "effects": [{"type": "x", "count": 1e400}]}`))
	f.Add([]byte(`{"status": "ok", "Status": "error"}`))
	f.Add([]byte(`{"status": "ok", "setup_plan": {"steps": [{"help_actions": [1, "a"]}]}}`))
	v := contracts.DefaultValidator()
	f.Fuzz(func(t *testing.T, data []byte) {
		err := v.Validate(contracts.ModelActionResult, data)
		if err != nil {
			checkProblems(t, contracts.ModelActionResult, err)
			return
		}
		checkRoundTrip(t, v, contracts.ModelActionResult, data)
	})
}

func FuzzField(f *testing.F) {
	addCorpusSeeds(f, contracts.ModelField, contracts.ModelSetupPlan)
	f.Add([]byte(`{"id": "a", "label": "A", "type": "list", "item_fields": [{"id": "b", "label": "B", "depends_on": {"field": "a", "in": ["1"]}}]}`))
	f.Add([]byte(`{"id": "a", "label": "A", "validation": {"min_length": 3, "max_length": 1, "min": 1}}`))
	v := contracts.DefaultValidator()
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, m := range []contracts.Model{contracts.ModelField, contracts.ModelSetupPlan} {
			err := v.Validate(m, data)
			if err != nil {
				checkProblems(t, m, err)
				continue
			}
			checkRoundTrip(t, v, m, data)
			// The typed value passes the same rules when validated as a value.
			val := newValue(t, m)
			if err := v.Decode(m, data, val); err != nil {
				t.Fatal(err)
			}
			if _, err := v.ValidateValue(m, val); err != nil {
				t.Fatalf("ValidateValue refuses an accepted document: %v", err)
			}
		}
	})
}
