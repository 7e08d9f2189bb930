package a2ui_test

import (
	"encoding/json"
	"math"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/a2ui"
	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/internal/tools/contractstest"
	"github.com/supervaize/supervaizer-go/testing/golden"
)

func marshal(t testing.TB, v any) []byte {
	t.Helper()
	b, err := contracts.Marshal(v)
	require.NoError(t, err)
	return b
}

// problem is the part of a contracts.Problem a test asserts.
type problem struct {
	path, rule, msg string // msg: a substring of the message, "" to skip
}

// assertProblem checks that err is a *contracts.ValidationError holding want.
func assertProblem(t *testing.T, err error, want problem) {
	t.Helper()
	contractstest.RequireProblem(t, err, want.path, want.rule, want.msg)
}

func ptr[T any](v T) *T { return &v }

// jobStartForm is the Form of the protocol.
func jobStartForm() a2ui.Form {
	return a2ui.Form{
		ID:    "research-agent.job.start",
		Title: "Start research",
		Fields: []a2ui.Field{
			a2ui.StringField("topic_id", "Topic", a2ui.Required()),
			a2ui.SelectField("depth", "Depth", a2ui.Required(), a2ui.Placeholder("Choose a depth"),
				a2ui.Choice("quick", "Quick scan"), a2ui.Choice("deep", "Deep dive")),
		},
		Submit:  a2ui.Submit{Action: "job.start", Label: "Start research"},
		Preview: &a2ui.Preview{Action: "job.start.preview"},
		State:   map[string]any{"draft_session_id": "draft-5b2"},
	}
}

// The surface result of the protocol, verbatim.
const specJobStartResult = `{
  "surface": "job.start",
  "a2ui_version": "v0.8",
  "a2ui_catalog_version": "research-agent.2026-05-16",
  "document": {
    "type": "Form",
    "id": "research-agent.job.start",
    "title": "Start research",
    "fields": [
      {"id": "topic_id", "label": "Topic", "type": "string", "required": true},
      {"id": "depth", "label": "Depth", "type": "select", "required": true, "placeholder": "Choose a depth",
       "options": [{"value": "quick", "label": "Quick scan"}, {"value": "deep", "label": "Deep dive"}]}
    ],
    "submit": {"action": "job.start", "label": "Start research"},
    "preview": {"action": "job.start.preview"},
    "state": {"draft_session_id": "draft-5b2"}
  }
}`

func TestFormGolden(t *testing.T) {
	form := jobStartForm()
	require.NoError(t, form.Validate())
	doc := marshal(t, form)
	golden.JSON(t, filepath.Join("testdata", "form.golden.json"), doc)

	res := contracts.SurfaceResult{Surface: "job.start", A2UIVersion: ptr(contracts.A2UIVersion),
		A2UICatalogVersion: ptr("research-agent.2026-05-16"), Document: doc}
	got, err := contracts.DefaultValidator().ValidateValue(contracts.ModelSurfaceResult, &res)
	require.NoError(t, err)
	assert.JSONEq(t, specJobStartResult, string(got))
	golden.JSON(t, filepath.Join("testdata", "surface_result_job_start.golden.json"), got)

	var back a2ui.Form
	require.NoError(t, json.Unmarshal(doc, &back))
	assert.JSONEq(t, string(doc), string(marshal(t, back)))
}

// The DocumentReview of the protocol, verbatim.
const specDocumentReview = `{
  "type": "DocumentReview",
  "document": {
    "title": "Brief review",
    "field": "review_text",
    "language": "markdown",
    "value": "# Draft brief\n\nThree suppliers dominate the market...",
    "validation": [{"id": "sources", "label": "Every claim is sourced", "status": "review"}]
  },
  "submit": {"action": "step.awaiting.submit", "label": "Approve"},
  "fields": [
    {"id": "review_text", "label": "Brief text", "type": "text", "multiline": true, "required": true},
    {"id": "approve_review", "label": "Approve brief", "type": "boolean", "required": true}
  ]
}`

func TestDocumentReviewGolden(t *testing.T) {
	review := a2ui.DocumentReview{
		Document: a2ui.ReviewContent{
			Title:      "Brief review",
			Field:      "review_text",
			Language:   "markdown",
			Value:      "# Draft brief\n\nThree suppliers dominate the market...",
			Validation: []a2ui.ReviewCheck{{ID: "sources", Label: "Every claim is sourced", Status: "review"}},
		},
		Submit: a2ui.Submit{Action: "step.awaiting.submit", Label: "Approve"},
		Fields: []a2ui.Field{
			a2ui.TextField("review_text", "Brief text", a2ui.Multiline(0), a2ui.Required()),
			a2ui.BooleanField("approve_review", "Approve brief", a2ui.Required()),
		},
	}
	require.NoError(t, review.Validate())
	got := marshal(t, review)
	assert.JSONEq(t, specDocumentReview, string(got))
	golden.JSON(t, filepath.Join("testdata", "document_review.golden.json"), got)

	var back a2ui.DocumentReview
	require.NoError(t, json.Unmarshal([]byte(specDocumentReview), &back))
	assert.JSONEq(t, specDocumentReview, string(marshal(t, back)))
}

// The ResourceImport of the protocol, verbatim.
const specResourceImport = `{
  "type": "ResourceImport",
  "id": "research-agent.contacts.import",
  "title": "Import contacts",
  "resource": "contacts",
  "accepted_formats": ["csv", "xlsx"],
  "fields": [
    {"id": "list_id", "label": "Contact list", "type": "resource_ref", "required": true,
     "options_source": {"type": "resource", "resource": "contact_lists", "value_field": "id", "label_field": "name"}}
  ],
  "columns": [
    {"id": "email", "label": "Email", "required": true},
    {"id": "phone_number", "label": "Phone"}
  ],
  "submit": {"action": "resource.contacts.import", "label": "Import"}
}`

func contactsImport() a2ui.ResourceImport {
	return a2ui.ResourceImport{
		ID:              "research-agent.contacts.import",
		Title:           "Import contacts",
		Resource:        "contacts",
		AcceptedFormats: []string{contracts.ImportFormatCSV, contracts.ImportFormatXLSX},
		Fields: a2ui.ResourceFields(
			a2ui.ResourceRefField("list_id", "Contact list", "contact_lists", a2ui.LabelField("name"), a2ui.Required()),
		),
		Columns: []a2ui.ImportColumn{
			{ID: "email", Label: "Email", Required: true},
			{ID: "phone_number", Label: "Phone"},
		},
		Submit: a2ui.Submit{Action: "resource.contacts.import", Label: "Import"},
	}
}

func TestResourceImportGolden(t *testing.T) {
	doc := contactsImport()
	require.NoError(t, doc.Validate())
	got := marshal(t, doc)
	golden.JSON(t, filepath.Join("testdata", "resource_import.golden.json"), got)

	// The spec example decodes to the same document, defaults included.
	var spec a2ui.ResourceImport
	require.NoError(t, json.Unmarshal([]byte(specResourceImport), &spec))
	assert.JSONEq(t, string(got), string(marshal(t, spec)))
	require.NoError(t, spec.Validate())
}

func TestDashboardGolden(t *testing.T) {
	dash := a2ui.Dashboard{
		Datasets: []a2ui.DashboardDataset{{ID: "progress_metrics",
			Metrics: []map[string]any{{"id": "done", "label": "Done", "reducer": "sum", "column": "done"}}}},
		Controls: []map[string]any{{"id": "period", "type": "date_range"}},
		Widgets: []contracts.Widget{
			{ID: "progress", Title: "Progress", Data: &contracts.WidgetData{Mode: contracts.DataModeRef, DatasetID: ptr("progress_metrics")},
				Visualization: contracts.Visualization{Type: contracts.VisualizationMetric}},
			{ID: "trend", Title: "Trend", Data: &contracts.WidgetData{Mode: contracts.DataModeRef, DatasetID: ptr("progress_metrics")},
				Visualization: contracts.Visualization{Type: contracts.VisualizationVegaLite, Spec: json.RawMessage(`{"mark":"line"}`)}},
		},
	}
	require.NoError(t, dash.Validate())
	got := marshal(t, dash)
	golden.JSON(t, filepath.Join("testdata", "dashboard.golden.json"), got)

	var back a2ui.Dashboard
	require.NoError(t, json.Unmarshal(got, &back))
	assert.JSONEq(t, string(got), string(marshal(t, back)))
}

func TestConfiguratorGolden(t *testing.T) {
	cfg := a2ui.Configurator{"sections": []any{map[string]any{"component": "Form", "id": "basics",
		"bindings": map[string]any{"submit": "job.configure"}}}, "revision": 3}
	require.NoError(t, cfg.Validate())
	got := marshal(t, cfg)
	golden.JSON(t, filepath.Join("testdata", "configurator.golden.json"), got)
	assert.NotContains(t, cfg, "type", "marshalling must not change the map")

	res := contracts.SurfaceResult{Surface: "job.configurator", Document: got}
	_, err := contracts.DefaultValidator().ValidateValue(contracts.ModelSurfaceResult, &res)
	require.NoError(t, err)

	var back a2ui.Configurator
	require.NoError(t, json.Unmarshal([]byte(`{"type": "Configurator", "revision": 12345678901234567890}`), &back))
	assert.Equal(t, json.Number("12345678901234567890"), back["revision"])
	assert.JSONEq(t, `{"type": "Configurator", "revision": 12345678901234567890}`, string(marshal(t, back)))

	// A nil document is written with its type too, never as null.
	assert.JSONEq(t, `{"type": "Configurator"}`, string(marshal(t, a2ui.Configurator(nil))))
}

func TestConfiguratorErrors(t *testing.T) {
	assertProblem(t, a2ui.Configurator{"type": "Form"}.Validate(), problem{"/type", "const", "Configurator"})
	assertProblem(t, a2ui.Configurator{"type": 3}.Validate(), problem{"/type", "const", ""})
	require.Error(t, a2ui.Configurator{"bad": make(chan int)}.Validate())

	var c a2ui.Configurator
	require.Error(t, json.Unmarshal([]byte(`[]`), &c))
	require.Error(t, c.UnmarshalJSON([]byte(`null`)))
	require.Error(t, c.UnmarshalJSON([]byte(`{} {}`)))
}

func TestDocumentValidate(t *testing.T) {
	noColumns := contactsImport()
	noColumns.Columns = nil
	xlsxOnly := noColumns
	xlsxOnly.AcceptedFormats = []string{contracts.ImportFormatXLSX}
	defaultFormat := contactsImport()
	defaultFormat.AcceptedFormats, defaultFormat.Columns = nil, []a2ui.ImportColumn{}
	badFormat := contactsImport()
	badFormat.AcceptedFormats = []string{"csv", "json"}
	noAction := contactsImport()
	noAction.Submit.Action = ""
	dupColumn := contactsImport()
	dupColumn.Columns = append(dupColumn.Columns, a2ui.ImportColumn{ID: "email"})
	formNoSubmit := jobStartForm()
	formNoSubmit.Submit = a2ui.Submit{}
	formBadField := jobStartForm()
	formBadField.Fields = append(formBadField.Fields, a2ui.BooleanField("ok", "OK", a2ui.MinLength(1)))
	formDefault := jobStartForm()
	formDefault.Fields = append(formDefault.Fields, a2ui.NumberField("n", "N", a2ui.Default(1.5)))
	reviewField := a2ui.DocumentReview{Document: a2ui.ReviewContent{Field: "body"}, Submit: a2ui.Submit{Action: "a"}}
	vega := a2ui.Dashboard{Widgets: []contracts.Widget{{ID: "w", Title: "W",
		Data: &contracts.WidgetData{DatasetID: ptr("d")}, Visualization: contracts.Visualization{Type: contracts.VisualizationVegaLite}}}}

	tests := []struct {
		name string
		doc  interface{ Validate() error }
		want *problem // nil: valid
	}{
		{"import xlsx only without columns", xlsxOnly, nil},
		{"form with a default", formDefault, nil},
		{"import csv without columns", noColumns, &problem{"/columns", "minItems", "a CSV import must declare its columns"}},
		{"import default csv without columns", defaultFormat, &problem{"/columns", "minItems", "a CSV import must declare its columns"}},
		{"import bad format", badFormat, &problem{"/accepted_formats/1", "enum", ""}},
		{"import missing submit action", noAction, &problem{"/submit/action", "nonblank", ""}},
		{"import duplicate column", dupColumn, &problem{"/columns/2/id", "unique", ""}},
		{"form missing submit action", formNoSubmit, &problem{"/submit/action", "nonblank", ""}},
		{"form field rule of another type", formBadField, &problem{"/fields/2/validation/min_length", "validation_type", ""}},
		{"review field not declared", reviewField, &problem{"/document/field", "review_field", ""}},
		{"dashboard vega-lite without spec", vega, &problem{"/widgets/0/visualization/spec", "type", "vega-lite"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.doc.Validate()
			if tt.want == nil {
				require.NoError(t, err)
				return
			}
			assertProblem(t, err, *tt.want)
		})
	}
}

func TestDefaultNonFiniteFails(t *testing.T) {
	form := jobStartForm()
	form.Fields = append(form.Fields, a2ui.NumberField("n", "N", a2ui.Default(math.Inf(1))))
	_, err := json.Marshal(form)
	require.Error(t, err)
	require.Error(t, form.Validate())
}
