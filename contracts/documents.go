package contracts

import (
	"encoding/json"
	"reflect"
	"strings"
)

// This file declares the A2UI documents a surface handler returns
// and the dispatch of V2SurfaceResult.document on the
// document type. ResourceImport is the document the spec types and validates;
// Form, DocumentReview and Dashboard get light shapes that check what the spec
// names (their fields use the shared field schema, so every field rule
// applies); a Configurator and any other document type stay opaque: only their
// type must be a non-blank string. These are whole documents keyed by `type`,
// not A2UI v0.8 component messages.

// Document types.
const (
	DocumentForm           = "Form"
	DocumentReview         = "DocumentReview"
	DocumentResourceImport = "ResourceImport"
	DocumentDashboard      = "Dashboard"
	DocumentConfigurator   = "Configurator"
)

// The document models, validated on their own by the Validator. Inside a
// SurfaceResult they are selected by document.type.
const (
	ModelForm           Model = "FormDocument"           // a Form document
	ModelDocumentReview Model = "DocumentReviewDocument" // a DocumentReview document
	ModelResourceImport Model = "ResourceImportDocument" // a ResourceImport document
	ModelDashboard      Model = "DashboardDocument"      // a Dashboard document
)

// Formats a ResourceImport document accepts.
const (
	ImportFormatCSV  = "csv"
	ImportFormatXLSX = "xlsx"
)

// DefaultImportFormats are the accepted formats of a ResourceImport document
// that declares none.
func DefaultImportFormats() []string { return []string{ImportFormatCSV} }

// documents is the registry of the typed A2UI documents: for each, its
// document type, its model and its Go type, in the order the SurfaceResult
// schema dispatches on them. Adding a component is its Go type (with its
// hooks: encodeDefaults, decodeDefaults, check) plus one entry here: the
// model list and the Validator ([Models], [Model.New]), the SurfaceResult
// schema and checks, the SDK's encoder and compiled validator and the
// preview read this table ([DocumentModel], [Model.DocumentType]).
var documents = []struct {
	typ    string
	model  Model
	goType reflect.Type
}{
	{DocumentForm, ModelForm, reflect.TypeFor[FormDocument]()},
	{DocumentReview, ModelDocumentReview, reflect.TypeFor[DocumentReviewDocument]()},
	{DocumentResourceImport, ModelResourceImport, reflect.TypeFor[ResourceImportDocument]()},
	{DocumentDashboard, ModelDashboard, reflect.TypeFor[DashboardDocument]()},
}

// DocumentModel returns the model of the typed document type typ (for
// example ModelForm for "Form"); ok is false for an opaque document type
// such as "Configurator", whose content only Studio checks.
func DocumentModel(typ string) (m Model, ok bool) {
	for _, d := range documents {
		if d.typ == typ {
			return d.model, true
		}
	}
	return "", false
}

// DocumentType returns the document type of a document model (for example
// "Form" for ModelForm), or "" when m is not a document model.
func (m Model) DocumentType() string {
	for _, d := range documents {
		if d.model == m {
			return d.typ
		}
	}
	return ""
}

// typeIs is the schema condition "type is present and equals v".
func typeIs(v string) map[string]any {
	return map[string]any{"required": []string{"type"}, "properties": map[string]any{"type": map[string]any{"const": v}}}
}

// extendSchema makes document an object with a non-blank string type and, for
// each typed document, requires the document to match that type's schema.
func (SurfaceResult) extendSchema(s map[string]any) {
	dispatch := make([]any, 0, len(documents))
	for _, d := range documents {
		dispatch = append(dispatch, rule("a "+d.typ+" document must match the "+d.typ+" document schema",
			typeIs(d.typ), map[string]any{"$ref": "#/$defs/" + string(d.model)}))
	}
	s["properties"].(map[string]any)["document"] = map[string]any{
		"type":       "object",
		"required":   []string{"type"},
		"properties": map[string]any{"type": map[string]any{"type": "string", "format": "nonblank"}},
		"allOf":      dispatch,
	}
}

// check runs the Go rules of the typed document the result carries (a
// document type without rules beyond its schema has no check method).
func (r *SurfaceResult) check(c *checks, at path) {
	m, ok := DocumentModel(DocumentType(r.Document))
	if !ok {
		return // an opaque document: the schema has checked its type
	}
	docAt := at.key("document")
	doc := reflect.New(modelTypes[m]).Interface()
	if err := Unmarshal(r.Document, doc); err != nil {
		c.problems = append(c.problems, newProblem(docAt.segs, "decode", decodeMessage(err)))
		return
	}
	if ch, ok := doc.(checker); ok {
		ch.check(c, docAt)
	}
}

// Submit is the submit button of a document: the action Studio invokes and the
// button text.
type Submit struct {
	Action string `json:"action" sv:"required,nonblank"`
	Label  string `json:"label,omitempty"`
	Extra  Extra  `json:"-"`
}

// Preview names the action Studio calls to preview a Form before it is
// submitted, usually job.start.preview.
type Preview struct {
	Action string `json:"action" sv:"required,nonblank"`
	Extra  Extra  `json:"-"`
}

// FormDocument is a Form document: fields and the action
// Studio invokes on submit, with an optional preview action. An empty Type is
// written as "Form"; fields and type are always written, the other optional
// keys only when set. Fields follow the shared field schema.
type FormDocument struct {
	Type    string         `json:"type" sv:"enum=Form"`
	ID      string         `json:"id,omitempty"`
	Title   string         `json:"title,omitempty"`
	Fields  []Field        `json:"fields"`
	Submit  Submit         `json:"submit" sv:"required"`
	Preview *Preview       `json:"preview,omitempty" sv:"nonull"`
	State   map[string]any `json:"state,omitempty" sv:"object"`
	Extra   Extra          `json:"-"`
}

func (d *FormDocument) encodeDefaults() {
	if d.Type == "" {
		d.Type = DocumentForm
	}
}

func (d *FormDocument) decodeDefaults() { *d = FormDocument{Type: DocumentForm} }

func (d *FormDocument) check(c *checks, at path) {
	checkFieldList(c, at.key("fields"), d.Fields, FieldString)
}

// DocumentReviewDocument is a DocumentReview document: the
// reviewed content, the submit action and typed fields. Supervaizer does not
// interpret review semantics. An empty Type is written as "DocumentReview".
type DocumentReviewDocument struct {
	Type     string         `json:"type" sv:"enum=DocumentReview"`
	ID       string         `json:"id,omitempty"`
	Title    string         `json:"title,omitempty"`
	Document ReviewContent  `json:"document" sv:"required"`
	Submit   Submit         `json:"submit" sv:"required"`
	Fields   []Field        `json:"fields"`
	State    map[string]any `json:"state,omitempty" sv:"object"`
	Extra    Extra          `json:"-"`
}

func (d *DocumentReviewDocument) encodeDefaults() {
	if d.Type == "" {
		d.Type = DocumentReview
	}
}

func (d *DocumentReviewDocument) decodeDefaults() { *d = DocumentReviewDocument{Type: DocumentReview} }

func (d *DocumentReviewDocument) check(c *checks, at path) {
	checkFieldList(c, at.key("fields"), d.Fields, FieldString)
	if f := d.Document.Field; f != "" && !hasField(d.Fields, f) {
		c.add(at.key("document").key("field"), "review_field", "names no field of the document")
	}
	checkUniqueIDs(c, at.key("document").key("validation"), "review check id", len(d.Document.Validation),
		func(i int) string { return d.Document.Validation[i].ID })
}

// checkUniqueIDs reports each id of a list of n items that repeats an earlier one.
func checkUniqueIDs(c *checks, at path, what string, n int, id func(int) string) {
	first := make(map[string]int, n)
	for i := range n {
		if j, dup := first[id(i)]; dup {
			c.add(at.idx(i).key("id"), "unique", "%s is used twice: same id as %s/%d", what, at.segs[len(at.segs)-1], j)
		} else {
			first[id(i)] = i
		}
	}
}

func hasField(fields []Field, id string) bool {
	for _, f := range fields {
		if f.ID == id {
			return true
		}
	}
	return false
}

// ReviewContent is the reviewed content of a DocumentReview document: Field
// names the document field that holds the edited content, Language its
// format (for example "markdown"), Value the content itself.
type ReviewContent struct {
	Title      string        `json:"title,omitempty"`
	Field      string        `json:"field,omitempty"`
	Language   string        `json:"language,omitempty"`
	Value      string        `json:"value"`
	Validation []ReviewCheck `json:"validation,omitempty"`
	Extra      Extra         `json:"-"`
}

// ReviewCheck is one review check of a DocumentReview document. Its status
// vocabulary belongs to Studio (for example "review").
type ReviewCheck struct {
	ID     string `json:"id" sv:"required,nonblank"`
	Label  string `json:"label,omitempty"`
	Status string `json:"status,omitempty"`
	Extra  Extra  `json:"-"`
}

// ResourceImportDocument is a ResourceImport document, the
// import view of a resource. Every key is always written: an empty Type as
// "ResourceImport", nil AcceptedFormats as ["csv"], nil State as {}. A document
// that accepts CSV must declare its columns; column ids are unique.
type ResourceImportDocument struct {
	Type            string          `json:"type" sv:"enum=ResourceImport"`
	ID              string          `json:"id" sv:"required,nonblank"`
	Title           string          `json:"title" sv:"required"`
	Resource        string          `json:"resource" sv:"required,nonblank"`
	AcceptedFormats []string        `json:"accepted_formats"`
	Fields          []ResourceField `json:"fields"`
	Columns         []ImportColumn  `json:"columns"`
	Submit          Submit          `json:"submit" sv:"required"`
	State           map[string]any  `json:"state" sv:"object"`
	Extra           Extra           `json:"-"`
}

func (ResourceImportDocument) extendSchema(s map[string]any) {
	s["properties"].(map[string]any)["accepted_formats"] = map[string]any{"type": "array", "minItems": 1,
		"items": map[string]any{"type": "string", "enum": []string{ImportFormatCSV, ImportFormatXLSX}}}
	acceptsCSV := map[string]any{"anyOf": []any{
		map[string]any{"not": map[string]any{"required": []string{"accepted_formats"}}}, // the default is ["csv"]
		map[string]any{"properties": map[string]any{"accepted_formats": map[string]any{"contains": map[string]any{"const": ImportFormatCSV}}}},
	}}
	s["allOf"] = []any{rule("a CSV import must declare its columns", acceptsCSV,
		map[string]any{"required": []string{"columns"}, "properties": map[string]any{"columns": map[string]any{"minItems": 1}}})}
}

func (d *ResourceImportDocument) encodeDefaults() {
	if d.Type == "" {
		d.Type = DocumentResourceImport
	}
	if d.AcceptedFormats == nil {
		d.AcceptedFormats = DefaultImportFormats()
	}
}

func (d *ResourceImportDocument) decodeDefaults() {
	*d = ResourceImportDocument{Type: DocumentResourceImport}
}

func (d *ResourceImportDocument) afterDecode() {
	if d.AcceptedFormats == nil {
		d.AcceptedFormats = DefaultImportFormats()
	}
	if d.State == nil {
		d.State = map[string]any{}
	}
}

// AcceptsCSV reports whether the document accepts CSV files, the default.
func (d *ResourceImportDocument) AcceptsCSV() bool {
	if d.AcceptedFormats == nil {
		return true
	}
	for _, f := range d.AcceptedFormats {
		if f == ImportFormatCSV {
			return true
		}
	}
	return false
}

func (d *ResourceImportDocument) check(c *checks, at path) {
	checkFieldList(c, at.key("fields"), resourceFields(d.Fields), FieldString)
	checkUniqueIDs(c, at.key("columns"), "column id", len(d.Columns), func(i int) string { return d.Columns[i].ID })
}

// ImportColumn is one row column of a ResourceImport document. An empty Type is
// written as "string"; type and required are always written, label when set.
type ImportColumn struct {
	ID       string `json:"id" sv:"required,nonblank"`
	Label    string `json:"label,omitempty"`
	Type     string `json:"type"`
	Required bool   `json:"required"`
	Extra    Extra  `json:"-"`
}

func (col *ImportColumn) encodeDefaults() {
	if col.Type == "" {
		col.Type = FieldString
	}
}

func (col *ImportColumn) decodeDefaults() { *col = ImportColumn{Type: FieldString} }

// DashboardDocument is a Dashboard document, returned by
// mission.analytics and job.analytics. Metric reducers and control types are
// defined by Studio: metrics and controls are carried
// as free objects. Widgets are registration widgets, so their data references
// and visualizations are checked. An empty Type is written as "Dashboard";
// datasets, controls and widgets are always written. Dataset and widget ids are
// unique.
type DashboardDocument struct {
	Type     string             `json:"type" sv:"enum=Dashboard"`
	ID       string             `json:"id,omitempty"`
	Title    string             `json:"title,omitempty"`
	Datasets []DashboardDataset `json:"datasets"`
	Controls []map[string]any   `json:"controls"`
	Widgets  []Widget           `json:"widgets"`
	Extra    Extra              `json:"-"`
}

func (d *DashboardDocument) encodeDefaults() {
	if d.Type == "" {
		d.Type = DocumentDashboard
	}
}

func (d *DashboardDocument) decodeDefaults() { *d = DashboardDocument{Type: DocumentDashboard} }

func (d *DashboardDocument) check(c *checks, at path) {
	checkUniqueIDs(c, at.key("datasets"), "dataset id", len(d.Datasets), func(i int) string { return d.Datasets[i].ID })
	checkUniqueIDs(c, at.key("widgets"), "widget id", len(d.Widgets), func(i int) string { return d.Widgets[i].ID })
}

// DashboardDataset is one dataset a Dashboard document uses: a dataset id
// (queried with dataset.<id>.query) and optional KPI metrics, free objects
// whose reducers Studio defines.
type DashboardDataset struct {
	ID      string           `json:"id" sv:"required,nonblank"`
	Metrics []map[string]any `json:"metrics,omitempty"`
	Extra   Extra            `json:"-"`
}

// DocumentType returns the type of a raw A2UI document: its "type" key when
// it is a non-blank string, else "".
func DocumentType(doc json.RawMessage) string {
	var keys map[string]json.RawMessage
	if json.Unmarshal(doc, &keys) != nil {
		return ""
	}
	var typ string
	if json.Unmarshal(keys["type"], &typ) != nil || strings.TrimSpace(typ) == "" {
		return ""
	}
	return typ
}
