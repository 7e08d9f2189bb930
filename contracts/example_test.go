package contracts_test

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/supervaize/supervaizer-go/contracts"
)

func ExampleValidator_Validate() {
	result := []byte(`{
		"status": "done",
		"effects": [{"count": "three"}],
		"dry_run": {"cost_incurred": {"status": "estimated", "min": 5, "max": 2}}
	}`)
	err := contracts.DefaultValidator().Validate(contracts.ModelActionResult, result)
	fmt.Println(err)

	var ve *contracts.ValidationError
	if errors.As(err, &ve) {
		data, _ := json.Marshal(ve.Problems[0])
		fmt.Println(string(data))
	}
	// Output:
	// invalid ActionResult:
	//   /effects/0/count: wrong type: got string, want null or integer (type)
	//   /effects/0/type: missing property (required)
	//   /status: must be one of ok, error (enum)
	// {"loc":["effects",0,"count"],"msg":"wrong type: got string, want null or integer","type":"type","path":"/effects/0/count"}
}

// The Go rules run once the schema passes: here max < min, which JSON Schema
// cannot express.
func ExampleValidator_Validate_goRules() {
	err := contracts.DefaultValidator().Validate(contracts.ModelCostEstimate,
		[]byte(`{"status": "estimated", "unit": "credits", "min": 5, "max": 2}`))
	fmt.Println(err)
	// Output:
	// invalid CostEstimate:
	//   /max: max must be greater than or equal to min (min_le_max)
}

func ExampleValidator_Decode() {
	var req contracts.ActionRequest
	err := contracts.DefaultValidator().Decode(contracts.ModelActionRequest, []byte(`{
		"request_id": "req-1", "actor": {"user_id": "user-7"}, "workspace": {"id": "ws-1"},
		"mission_id": "mis-3", "agent_slug": "research-agent", "surface": "job.start",
		"action": "job.start", "input": {"topic_id": "t-1"}, "x_trace": "abc"}`), &req)
	fmt.Println(err, req.Action, string(req.Input), string(req.Extra["x_trace"]))
	// Output: <nil> job.start {"topic_id": "t-1"} "abc"
}

func ExampleSchema() {
	var doc struct {
		Draft string `json:"$schema"`
		Defs  map[string]struct {
			Required   []string `json:"required"`
			Properties map[string]struct {
				Enum []string `json:"enum"`
			} `json:"properties"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(contracts.Schema(), &doc); err != nil {
		panic(err)
	}
	fmt.Println(doc.Draft)
	fmt.Println("ActionRequest requires", doc.Defs["ActionRequest"].Required)
	fmt.Println("ActionResult status:", doc.Defs["ActionResult"].Properties["status"].Enum)
	// Output:
	// https://json-schema.org/draft/2020-12/schema
	// ActionRequest requires [action actor agent_slug mission_id request_id surface workspace]
	// ActionResult status: [ok error]
}

// A surface handler's document is typed when its type is in the registry:
// DocumentModel gives its model, which the Validator checks it against; an
// opaque document (a Configurator) has none.
func ExampleDocumentModel() {
	for _, typ := range []string{contracts.DocumentForm, contracts.DocumentConfigurator} {
		m, typed := contracts.DocumentModel(typ)
		fmt.Printf("%s: typed %v, model %q, type of the model %q\n", typ, typed, m, m.DocumentType())
	}
	// Output:
	// Form: typed true, model "FormDocument", type of the model "Form"
	// Configurator: typed false, model "", type of the model ""
}

// FoldKey is the folding under which Unmarshal refuses a key that differs
// from a declared key only in letter case (the long s folds with "s").
func ExampleFoldKey() {
	fmt.Println(contracts.FoldKey("Status") == contracts.FoldKey("status"))
	fmt.Println(contracts.FoldKey("\u017ftatus") == contracts.FoldKey("status"))
	fmt.Println(contracts.FoldKey("status_id") == contracts.FoldKey("status-id"))
	// Output:
	// true
	// true
	// false
}
