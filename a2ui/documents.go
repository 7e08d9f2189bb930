package a2ui

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"

	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/internal/validate"
)

// Submit is the submit button of a document: the action Studio invokes with
// the field values, and the button text.
type Submit = contracts.Submit

// Preview names the action Studio calls before a Form is submitted, usually
// "job.start.preview".
type Preview = contracts.Preview

// ImportColumn is one row column of a [ResourceImport] document; its type
// defaults to "string".
type ImportColumn = contracts.ImportColumn

// ReviewContent is the reviewed content of a [DocumentReview] document.
type ReviewContent = contracts.ReviewContent

// ReviewCheck is one review check of a [DocumentReview] document.
type ReviewCheck = contracts.ReviewCheck

// DashboardDataset is one dataset of a [Dashboard] document, with optional KPI
// metrics.
type DashboardDataset = contracts.DashboardDataset

// Widget is one widget of a dashboard: in the registration's dashboards and
// in a [Dashboard] document.
type Widget = contracts.Widget

// WidgetData is where a [Widget] takes its data (mode "ref": a dataset of the
// registration).
type WidgetData = contracts.WidgetData

// Visualization is how a [Widget] draws its data (type "vega-lite" with its
// spec).
type Visualization = contracts.Visualization

// validateDoc validates doc, a pointer to the Go type of model m, with the
// SDK's validator (the contracts schema and Go rules, compiled).
func validateDoc(m contracts.Model, doc any) error {
	_, err := validate.Default().ValidateValue(m, doc)
	return err
}

// Form is a Form document: fields, the action Studio
// invokes on submit and an optional preview action. Type may stay empty: it
// is written as "Form". State is echoed back as context (for example the
// draft_session_id).
type Form contracts.FormDocument

// NewForm returns a Form with the id, the title, the action Studio invokes
// on submit and the fields.
func NewForm(id, title, submitAction string, fields ...Field) Form {
	return Form{ID: id, Title: title, Fields: fields, Submit: Submit{Action: submitAction}}
}

// MarshalJSON implements json.Marshaler.
func (f Form) MarshalJSON() ([]byte, error) { return contracts.Marshal(contracts.FormDocument(f)) }

// UnmarshalJSON implements json.Unmarshaler.
func (f *Form) UnmarshalJSON(b []byte) error {
	return contracts.Unmarshal(b, (*contracts.FormDocument)(f))
}

// Validate checks the document against the contract. It returns a
// *[contracts.ValidationError] listing each problem (path and rule name), or
// an error when the document cannot be marshalled.
func (f Form) Validate() error {
	return validateDoc(contracts.ModelForm, (*contracts.FormDocument)(&f))
}

// DocumentReview is a DocumentReview document, used by
// review workflows on an awaiting step: the reviewed content, the submit
// action and typed fields; Document.Field names the field holding the edited
// content. Type may stay empty: it is written as "DocumentReview".
type DocumentReview contracts.DocumentReviewDocument

// MarshalJSON implements json.Marshaler.
func (d DocumentReview) MarshalJSON() ([]byte, error) {
	return contracts.Marshal(contracts.DocumentReviewDocument(d))
}

// UnmarshalJSON implements json.Unmarshaler.
func (d *DocumentReview) UnmarshalJSON(b []byte) error {
	return contracts.Unmarshal(b, (*contracts.DocumentReviewDocument)(d))
}

// Validate checks the document against the contract. It returns a
// *[contracts.ValidationError] listing each problem (path and rule name), or
// an error when the document cannot be marshalled.
func (d DocumentReview) Validate() error {
	return validateDoc(contracts.ModelDocumentReview, (*contracts.DocumentReviewDocument)(&d))
}

// ResourceImport is a ResourceImport document, the import
// view of a resource. AcceptedFormats defaults to ["csv"] ([contracts.ImportFormatCSV],
// [contracts.ImportFormatXLSX]); a document that accepts CSV must declare its
// Columns. Fields are contextual fields such as a required list picker: build
// them with [ResourceFields]. Type may stay empty: it is written as
// "ResourceImport".
type ResourceImport contracts.ResourceImportDocument

// MarshalJSON implements json.Marshaler.
func (r ResourceImport) MarshalJSON() ([]byte, error) {
	return contracts.Marshal(contracts.ResourceImportDocument(r))
}

// UnmarshalJSON implements json.Unmarshaler.
func (r *ResourceImport) UnmarshalJSON(b []byte) error {
	return contracts.Unmarshal(b, (*contracts.ResourceImportDocument)(r))
}

// Validate checks the document against the contract. It returns a
// *[contracts.ValidationError] listing each problem (path and rule name), or
// an error when the document cannot be marshalled.
func (r ResourceImport) Validate() error {
	return validateDoc(contracts.ModelResourceImport, (*contracts.ResourceImportDocument)(&r))
}

// Dashboard is a Dashboard document, returned by the
// mission.analytics and job.analytics surfaces: the datasets it queries (each
// with optional KPI metrics), filter controls and widgets. Metrics and
// controls are free objects whose vocabulary Studio defines. Type may stay
// empty: it is written as "Dashboard".
type Dashboard contracts.DashboardDocument

// MarshalJSON implements json.Marshaler.
func (d Dashboard) MarshalJSON() ([]byte, error) {
	return contracts.Marshal(contracts.DashboardDocument(d))
}

// UnmarshalJSON implements json.Unmarshaler.
func (d *Dashboard) UnmarshalJSON(b []byte) error {
	return contracts.Unmarshal(b, (*contracts.DashboardDocument)(d))
}

// Validate checks the document against the contract. It returns a
// *[contracts.ValidationError] listing each problem (path and rule name), or
// an error when the document cannot be marshalled.
func (d Dashboard) Validate() error {
	return validateDoc(contracts.ModelDashboard, (*contracts.DashboardDocument)(&d))
}

// modelConfigurator names the Configurator document in validation errors.
const modelConfigurator contracts.Model = "Configurator"

// Configurator is the job.configurator document: sections
// of Studio components bound to job-scoped actions. Its shape belongs to a
// Studio guide, so it is carried untyped: write it as a map, or decode it from
// JSON (numbers are kept exactly, as json.Number). A missing "type" is written
// as "Configurator"; Studio validates the rest.
type Configurator map[string]any

// MarshalJSON implements json.Marshaler.
func (c Configurator) MarshalJSON() ([]byte, error) {
	m := map[string]any(c)
	if _, ok := m["type"]; !ok {
		m = make(map[string]any, len(c)+1) // not maps.Clone: it keeps a nil map nil
		maps.Copy(m, c)
		m["type"] = contracts.DocumentConfigurator
	}
	return contracts.Marshal(m)
}

// UnmarshalJSON implements json.Unmarshaler; the document must be a JSON object.
func (c *Configurator) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("a2ui: a Configurator document must be a single JSON value")
	}
	if m == nil {
		return fmt.Errorf("a2ui: a Configurator document must be a JSON object, got null")
	}
	*c = m
	return nil
}

// Validate checks that the document marshals and that its type, when set, is
// "Configurator". It returns a *[contracts.ValidationError] for a wrong type.
func (c Configurator) Validate() error {
	if _, err := contracts.Marshal(c); err != nil {
		return fmt.Errorf("a2ui: marshal Configurator: %w", err)
	}
	if typ, ok := c["type"]; ok && typ != contracts.DocumentConfigurator {
		return &contracts.ValidationError{Model: modelConfigurator, Problems: []contracts.Problem{{
			Loc: []any{"type"}, Path: "/type", Type: "const",
			Msg: fmt.Sprintf("must be %q", contracts.DocumentConfigurator),
		}}}
	}
	return nil
}
