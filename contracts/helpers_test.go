package contracts_test

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/supervaize/supervaizer-go/contracts"
)

// coreModels are the wire models of the SDK proper, each with a corpus and a
// golden file (the A2UI document models are tested beside documents.go).
var coreModels = []contracts.Model{
	contracts.ModelActionRequest, contracts.ModelActionResult, contracts.ModelBillingCatalog,
	contracts.ModelContextAssignment, contracts.ModelCostEstimate, contracts.ModelField,
	contracts.ModelFullDescription, contracts.ModelIntroduction, contracts.ModelJobState,
	contracts.ModelRegistration, contracts.ModelSetupPlan, contracts.ModelSurfaceRequest,
	contracts.ModelSurfaceResult,
}

// newValue returns a pointer to a zero value of the Go type of model m.
func newValue(t testing.TB, m contracts.Model) any {
	t.Helper()
	switch m {
	case contracts.ModelRegistration:
		return new(contracts.Registration)
	case contracts.ModelActionRequest:
		return new(contracts.ActionRequest)
	case contracts.ModelSurfaceRequest:
		return new(contracts.SurfaceRequest)
	case contracts.ModelActionResult:
		return new(contracts.ActionResult)
	case contracts.ModelSurfaceResult:
		return new(contracts.SurfaceResult)
	case contracts.ModelJobState:
		return new(contracts.JobState)
	case contracts.ModelSetupPlan:
		return new(contracts.SetupPlan)
	case contracts.ModelField:
		return new(contracts.Field)
	case contracts.ModelCostEstimate:
		return new(contracts.CostEstimate)
	case contracts.ModelIntroduction:
		return new(contracts.Introduction)
	case contracts.ModelFullDescription:
		return new(contracts.FullDescription)
	case contracts.ModelBillingCatalog:
		return new(contracts.BillingCatalog)
	case contracts.ModelContextAssignment:
		return new(contracts.ContextAssignment)
	case contracts.ModelVerifiedContext:
		return new(contracts.VerifiedWorkspaceContext)
	}
	t.Fatalf("no Go type for model %s", m)
	return nil
}

// lookup returns the value at the JSON Pointer ptr of the JSON document raw
// (numbers as json.Number) and whether the key is present.
func lookup(t testing.TB, raw []byte, ptr string) (any, bool) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var cur any
	if err := dec.Decode(&cur); err != nil {
		t.Fatalf("lookup %s: %v", ptr, err)
	}
	if ptr == "" {
		return cur, true
	}
	for _, tok := range strings.Split(ptr, "/")[1:] {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[tok]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	return cur, true
}
