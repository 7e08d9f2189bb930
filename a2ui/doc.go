// Package a2ui holds the A2UI documents a Supervaizer v2 surface handler
// returns, the helpers that build field definitions and setup
// plans, and the checks an agent runs on submitted field values.
//
// Documents are plain struct literals; each has a Validate method that runs the
// contract rules ([contracts.DefaultValidator]) and reports every problem with
// its JSON path and rule name:
//
//	doc := a2ui.Form{
//		ID:    "research-agent.job.start",
//		Title: "Start research",
//		Fields: []a2ui.Field{
//			a2ui.StringField("topic_id", "Topic", a2ui.Required()),
//			a2ui.SelectField("depth", "Depth", a2ui.Required(),
//				a2ui.Choice("quick", "Quick scan"), a2ui.Choice("deep", "Deep dive")),
//		},
//		Submit:  a2ui.Submit{Action: "job.start", Label: "Start research"},
//		Preview: &a2ui.Preview{Action: "job.start.preview"},
//	}
//	if err := doc.Validate(); err != nil {
//		return err // names the first broken rule
//	}
//
// # Documents
//
// [ResourceImport] is the document the contract types and validates in full.
// [Form], [DocumentReview] and [Dashboard] check what the spec names: their
// fields follow the shared field schema, so every field rule applies.
// [Configurator] is carried untyped: Studio validates it.
//
// # Field values
//
// [ValidateValues] checks the values an operator submitted against the field
// definitions (required fields, types, validation rules, depends_on, file
// values) and returns one [FieldError] per problem, with a stable code.
package a2ui
