package a2ui_test

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/supervaize/supervaizer-go/a2ui"
	"github.com/supervaize/supervaizer-go/contracts"
)

func ExampleForm() {
	form := a2ui.Form{
		ID:    "research-agent.job.start",
		Title: "Start research",
		Fields: []a2ui.Field{
			a2ui.StringField("topic_id", "Topic", a2ui.Required()),
			a2ui.SelectField("depth", "Depth", a2ui.Required(), a2ui.Placeholder("Choose a depth"),
				a2ui.Choice("quick", "Quick scan"), a2ui.Choice("deep", "Deep dive")),
		},
		Submit:  a2ui.Submit{Action: "job.start", Label: "Start research"},
		Preview: &a2ui.Preview{Action: "job.start.preview"},
	}
	if err := form.Validate(); err != nil {
		fmt.Println(err)
		return
	}
	b, _ := contracts.Marshal(form.Fields[0])
	fmt.Println(string(b))
	// Output: {"id":"topic_id","label":"Topic","type":"string","required":true}
}

func ExampleResourceImport_Validate() {
	doc := a2ui.ResourceImport{
		ID:       "research-agent.contacts.import",
		Title:    "Import contacts",
		Resource: "contacts",
		Submit:   a2ui.Submit{Action: "resource.contacts.import", Label: "Import"},
	}
	fmt.Println(doc.Validate())

	doc.Columns = []a2ui.ImportColumn{{ID: "email", Label: "Email", Required: true}}
	fmt.Println(doc.Validate())
	// Output:
	// invalid ResourceImportDocument:
	//   /columns: a CSV import must declare its columns: fewer than 1 items (minItems)
	// <nil>
}

func ExampleValidateValues() {
	fields := []a2ui.Field{
		a2ui.TextField("goal", "Goal", a2ui.Required(), a2ui.Multiline(4)),
		a2ui.SelectField("mode", "Mode", a2ui.Choice("fast", "Fast"), a2ui.Choice("custom", "Custom")),
		a2ui.NumberField("budget", "Budget", a2ui.DependsOn("mode", "custom"),
			a2ui.Min(0), a2ui.Message("Budget cannot be negative")),
		a2ui.ListField("sources", "Sources", []a2ui.Field{
			a2ui.StringField("url", "URL", a2ui.Required()),
		}, a2ui.MaxItems(10)),
	}
	var values map[string]any
	_ = json.Unmarshal([]byte(`{"mode": "custom", "budget": -5, "sources": [{"url": "https://a.example"}, {}]}`), &values)
	for _, e := range a2ui.ValidateValues(fields, values) {
		fmt.Println(e.Field, e.Code, e.Message)
	}
	// Output:
	// goal required is required
	// budget min Budget cannot be negative
	// sources[1].url required is required
}

func ExampleDraft() {
	d, err := a2ui.Draft("goal", "Size the EU stationary-battery market for 2027.",
		contracts.Suggestion{Message: "Add a time horizon so the scope is bounded.", Field: "goal"})
	if err != nil {
		fmt.Println(err)
		return
	}
	b, _ := contracts.Marshal(contracts.ActionResult{Status: contracts.StatusOK, Draft: d})
	fmt.Println(string(b))
	// Output: {"status":"ok","effects":[],"draft":{"field":"goal","value":"Size the EU stationary-battery market for 2027.","suggestions":[{"message":"Add a time horizon so the scope is bounded.","severity":"info","field":"goal"}]}}
}

func ExampleDryRun() {
	expires := time.Date(2026, 10, 12, 9, 0, 0, 0, time.UTC)
	b, _ := contracts.Marshal(a2ui.DryRun(expires, true, a2ui.EstimatedCost("credits", 1, 2, "")))
	fmt.Println(string(b))
	// Output: {"expires_at":"2026-10-12T09:00:00Z","deletable":true,"cost_incurred":{"status":"estimated","unit":"credits","min":1,"max":2}}
}

func ExampleEstimatedCost() {
	plan := contracts.SetupPlan{
		Steps: []contracts.SetupStep{{ID: "scope", Title: "Scope", Fields: []a2ui.Field{
			a2ui.TextField("goal", "Goal", a2ui.Required()),
		}}},
		CostEstimate: a2ui.EstimatedCost("credits", 5, 20, "for 50 runs"),
	}
	b, _ := contracts.DefaultValidator().ValidateValue(contracts.ModelSetupPlan, &plan)
	fmt.Println(string(b))
	// Output: {"confirmation_required":true,"steps":[{"id":"scope","title":"Scope","status":"pending","fields":[{"id":"goal","label":"Goal","type":"text","required":true}],"help_actions":[]}],"cost_estimate":{"status":"estimated","unit":"credits","min":5,"max":20,"basis":"for 50 runs"}}
}

func ExampleFileValue_Bytes() {
	var input struct {
		Report a2ui.FileValue `json:"report"`
	}
	_ = json.Unmarshal([]byte(`{"report": {"storage": "inline", "filename": "notes.md", "media_type": "text/markdown",
		"size": 7, "encoding": "base64", "content": "IyBOb3Rlcw=="}}`), &input)
	b, err := input.Report.Bytes()
	fmt.Printf("%q %v\n", b, err)
	// Output: "# Notes" <nil>
}

func ExampleConfigurator() {
	cfg := a2ui.Configurator{"sections": []any{map[string]any{"component": "Form", "id": "basics"}}}
	b, _ := json.Marshal(cfg)
	fmt.Println(string(b), cfg.Validate())
	// Output: {"sections":[{"component":"Form","id":"basics"}],"type":"Configurator"} <nil>
}
