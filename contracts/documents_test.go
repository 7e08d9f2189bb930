package contracts_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/internal/tools/contractstest"
	"github.com/supervaize/supervaizer-go/testing/golden"
)

// docProblem is the part of a problem a document test asserts.
type docProblem struct {
	path, rule, msg string // msg: a substring of the message, "" to skip
}

// docAssertProblem checks that err is a *ValidationError holding want.
func docAssertProblem(t *testing.T, err error, want docProblem) {
	t.Helper()
	contractstest.RequireProblem(t, err, want.path, want.rule, want.msg)
}

func docRead(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "documents", name))
	require.NoError(t, err)
	return b
}

// TestDocumentExamples decodes the example of every typed document of the
// registry (testdata/documents/<type>.json, a spec example where the spec has
// one), validates it as a document and inside a SurfaceResult, and compares
// what it marshals to (defaults written) with its golden file <type>.want.json,
// which `go generate ./contracts` writes.
func TestDocumentExamples(t *testing.T) {
	v := contracts.DefaultValidator()
	for _, m := range documentModels(t) {
		name := exampleName(m.DocumentType())
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			in := docRead(t, name+".json")
			dst := m.New()
			require.NoError(t, v.Decode(m, in, dst))
			got, err := contracts.Marshal(dst)
			require.NoError(t, err)
			golden.JSON(t, filepath.Join("testdata", "documents", name+".want.json"), got)
			_, err = v.ValidateValue(m, dst)
			require.NoError(t, err)
			res := contracts.SurfaceResult{Surface: "s", Document: in}
			_, err = v.ValidateValue(contracts.ModelSurfaceResult, &res)
			require.NoError(t, err)
		})
	}
}

// documentModels lists the typed documents of the registry: every one has
// an example in testdata/documents, named by exampleName.
func documentModels(tb testing.TB) []contracts.Model {
	var ms []contracts.Model
	for _, m := range contracts.Models() {
		if typ := m.DocumentType(); typ != "" {
			got, ok := contracts.DocumentModel(typ)
			require.True(tb, ok, typ)
			require.Equal(tb, m, got, "DocumentModel(%q)", typ)
			ms = append(ms, m)
		}
	}
	require.GreaterOrEqual(tb, len(ms), 4, "Form, DocumentReview, ResourceImport, Dashboard")
	return ms
}

// exampleName is the file name of a document type's example: "DocumentReview"
// is testdata/documents/document_review.json.
func exampleName(typ string) string {
	var b strings.Builder
	for i, r := range typ {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

func TestDocumentSchemaDefs(t *testing.T) {
	var doc struct {
		Defs map[string]struct {
			Properties map[string]json.RawMessage `json:"properties"`
		} `json:"$defs"`
	}
	require.NoError(t, json.Unmarshal(contracts.Schema(), &doc))
	for _, name := range []string{"Submit", "Preview", "ImportColumn", "ReviewContent", "ReviewCheck", "DashboardDataset"} {
		assert.Contains(t, doc.Defs, name)
	}
	document := string(doc.Defs["SurfaceResult"].Properties["document"])
	for _, m := range documentModels(t) {
		assert.Contains(t, doc.Defs, string(m))
		assert.Contains(t, document, `"#/$defs/`+string(m)+`"`, "the SurfaceResult dispatches %s documents", m.DocumentType())
	}
	assert.Contains(t, contracts.Models(), contracts.ModelResourceImport)
	_, typed := contracts.DocumentModel(contracts.DocumentConfigurator)
	assert.False(t, typed, "a Configurator is opaque")
	assert.Empty(t, contracts.ModelSurfaceResult.DocumentType())
}

const docImport = `{"type": "ResourceImport", "id": "contacts.import", "title": "Import contacts", "resource": "contacts",
  "columns": [{"id": "email", "required": true}], "submit": {"action": "resource.contacts.import"}}`

// docPatch returns the JSON object base with the keys of patch set (a null
// value deletes the key).
func docPatch(t testing.TB, base, patch string) []byte {
	t.Helper()
	var b, p map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(base), &b))
	require.NoError(t, json.Unmarshal([]byte(patch), &p))
	for k, v := range p {
		if string(v) == "null" {
			delete(b, k)
			continue
		}
		b[k] = v
	}
	out, err := json.Marshal(b)
	require.NoError(t, err)
	return out
}

func TestResourceImportRules(t *testing.T) {
	const csvRule = "a CSV import must declare its columns"
	tests := []struct {
		name  string
		patch string
		want  *docProblem // nil: valid
	}{
		{"valid", `{}`, nil},
		{"xlsx only without columns", `{"accepted_formats": ["xlsx"], "columns": null}`, nil},
		{"xlsx only with empty columns", `{"accepted_formats": ["xlsx"], "columns": []}`, nil},
		{"type absent takes the default", `{"type": null}`, nil},
		{"default csv without columns", `{"columns": null}`, &docProblem{"/columns", "required", csvRule}},
		{"default csv with empty columns", `{"columns": []}`, &docProblem{"/columns", "minItems", csvRule}},
		{"csv and xlsx without columns", `{"accepted_formats": ["xlsx", "csv"], "columns": []}`, &docProblem{"/columns", "minItems", csvRule}},
		{"bad format", `{"accepted_formats": ["csv", "json"]}`, &docProblem{"/accepted_formats/1", "enum", "csv, xlsx"}},
		{"no format", `{"accepted_formats": []}`, &docProblem{"/accepted_formats", "minItems", ""}},
		{"missing submit", `{"submit": null}`, &docProblem{"/submit", "required", ""}},
		{"missing submit action", `{"submit": {"label": "Import"}}`, &docProblem{"/submit/action", "required", ""}},
		{"blank submit action", `{"submit": {"action": " "}}`, &docProblem{"/submit/action", "nonblank", ""}},
		{"missing id", `{"id": null}`, &docProblem{"/id", "required", ""}},
		{"missing title", `{"title": null}`, &docProblem{"/title", "required", ""}},
		{"missing resource", `{"resource": null}`, &docProblem{"/resource", "required", ""}},
		{"column without id", `{"columns": [{"label": "Email"}]}`, &docProblem{"/columns/0/id", "required", ""}},
		{"duplicate column", `{"columns": [{"id": "email"}, {"id": "email"}]}`, &docProblem{"/columns/1/id", "unique", "same id as columns/0"}},
		{"state not an object", `{"state": []}`, &docProblem{"/state", "type", ""}},
		{"field rule", `{"fields": [{"id": "n", "label": "N", "type": "text", "validation": {"min": 1}}]}`,
			&docProblem{"/fields/0/validation/min", "validation_type", ""}},
		{"field depends on a missing sibling", `{"fields": [{"id": "n", "label": "N", "depends_on": {"field": "x", "in": ["a"]}}]}`,
			&docProblem{"/fields/0/depends_on/field", "depends_on", ""}},
	}
	v := contracts.DefaultValidator()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			raw := docPatch(t, docImport, tt.patch)
			err := v.Validate(contracts.ModelResourceImport, raw)
			if tt.want == nil {
				require.NoError(t, err)
				return
			}
			docAssertProblem(t, err, *tt.want)
			// The same document inside a SurfaceResult is rejected at /document.
			res := docPatch(t, `{"surface": "mission.agent.surface.contact_import"}`, `{"document": `+string(raw)+`}`)
			want := *tt.want
			want.path = "/document" + want.path
			docAssertProblem(t, v.Validate(contracts.ModelSurfaceResult, res), want)
		})
	}
}

func TestResourceImportWrongType(t *testing.T) {
	// As a standalone model the type must be ResourceImport; inside a
	// SurfaceResult the type selects the schema, so the document is a Form.
	raw := docPatch(t, docImport, `{"type": "Form"}`)
	v := contracts.DefaultValidator()
	docAssertProblem(t, v.Validate(contracts.ModelResourceImport, raw), docProblem{"/type", "enum", "ResourceImport"})
	res := docPatch(t, `{"surface": "s"}`, `{"document": `+string(raw)+`}`)
	require.NoError(t, v.Validate(contracts.ModelSurfaceResult, res))
}

func TestResourceImportDefaults(t *testing.T) {
	var d contracts.ResourceImportDocument
	require.NoError(t, contracts.Unmarshal([]byte(`{"id": "i", "title": "T", "resource": "r", "columns": [{"id": "c"}], "submit": {"action": "a"}}`), &d))
	assert.Equal(t, contracts.DocumentResourceImport, d.Type)
	assert.Equal(t, []string{"csv"}, d.AcceptedFormats)
	assert.True(t, d.AcceptsCSV())
	assert.Equal(t, map[string]any{}, d.State)
	assert.Equal(t, "string", d.Columns[0].Type)

	got, err := contracts.Marshal(contracts.ResourceImportDocument{ID: "i", Title: "T", Resource: "r",
		Columns: []contracts.ImportColumn{{ID: "c"}}, Submit: contracts.Submit{Action: "a"}})
	require.NoError(t, err)
	assert.JSONEq(t, `{"type": "ResourceImport", "id": "i", "title": "T", "resource": "r", "accepted_formats": ["csv"],
		"fields": [], "columns": [{"id": "c", "type": "string", "required": false}], "submit": {"action": "a"}, "state": {}}`, string(got))

	xlsx := contracts.ResourceImportDocument{AcceptedFormats: []string{contracts.ImportFormatXLSX}}
	assert.False(t, xlsx.AcceptsCSV())
}

func TestSurfaceResultDocument(t *testing.T) {
	tests := []struct {
		name, document string
		want           *docProblem // nil: valid; paths are relative to /document
	}{
		{"form", `{"type": "Form", "fields": [], "submit": {"action": "job.start", "label": "Start"}}`, nil},
		{"configurator is opaque", `{"type": "Configurator", "sections": [{"component": "Form", "fields": 3}]}`, nil},
		{"unknown type is opaque", `{"type": "UnsupportedSurface", "surface": "x"}`, nil},
		{"missing type", `{"fields": []}`, &docProblem{"/type", "required", ""}},
		{"blank type", `{"type": "  "}`, &docProblem{"/type", "nonblank", ""}},
		{"type not a string", `{"type": 3}`, &docProblem{"/type", "type", ""}},
		{"not an object", `[]`, &docProblem{"", "type", ""}},
		{"form without submit", `{"type": "Form", "fields": []}`, &docProblem{"/submit", "required", ""}},
		{"form with a blank preview action", `{"type": "Form", "submit": {"action": "a"}, "preview": {"action": ""}}`,
			&docProblem{"/preview/action", "nonblank", ""}},
		{"form field min_rows without multiline", `{"type": "Form", "submit": {"action": "a"},
			"fields": [{"id": "g", "label": "G", "type": "text", "min_rows": 3}]}`,
			&docProblem{"/fields/0/multiline", "required", "min_rows is allowed only when multiline is true"}},
		{"form field rule of another type", `{"type": "Form", "submit": {"action": "a"},
			"fields": [{"id": "g", "label": "G", "type": "boolean", "validation": {"max_length": 3}}]}`,
			&docProblem{"/fields/0/validation/max_length", "validation_type", ""}},
		{"form field smuggled key", `{"type": "Form", "submit": {"action": "a"}, "Submit": {"action": "b"}}`,
			&docProblem{"", "decode", "letter case"}},
		{"review without document", `{"type": "DocumentReview", "submit": {"action": "a"}}`, &docProblem{"/document", "required", ""}},
		{"review field not declared", `{"type": "DocumentReview", "document": {"field": "body", "value": ""}, "submit": {"action": "a"}, "fields": []}`,
			&docProblem{"/document/field", "review_field", "names no field"}},
		{"review check without id", `{"type": "DocumentReview", "document": {"value": "", "validation": [{"label": "x"}]}, "submit": {"action": "a"}}`,
			&docProblem{"/document/validation/0/id", "required", ""}},
		{"review duplicate check", `{"type": "DocumentReview", "document": {"value": "", "validation": [{"id": "x"}, {"id": "x"}]}, "submit": {"action": "a"}}`,
			&docProblem{"/document/validation/1/id", "unique", "same id as validation/0"}},
		{"dashboard vega-lite without spec", `{"type": "Dashboard", "widgets": [{"id": "w", "title": "W",
			"data": {"mode": "ref", "datasetId": "d"}, "visualization": {"type": "vega-lite"}}]}`,
			&docProblem{"/widgets/0/visualization/spec", "required", "visualization.spec"}},
		{"dashboard dataset without id", `{"type": "Dashboard", "datasets": [{"metrics": []}]}`, &docProblem{"/datasets/0/id", "required", ""}},
		{"dashboard duplicate dataset", `{"type": "Dashboard", "datasets": [{"id": "d"}, {"id": "d"}]}`, &docProblem{"/datasets/1/id", "unique", ""}},
		{"dashboard duplicate widget", `{"type": "Dashboard", "widgets": [{"id": "w", "title": "W"}, {"id": "w", "title": "V"}]}`,
			&docProblem{"/widgets/1/id", "unique", ""}},
		{"dashboard control not an object", `{"type": "Dashboard", "controls": ["period"]}`, &docProblem{"/controls/0", "type", ""}},
	}
	v := contracts.DefaultValidator()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			raw := []byte(`{"surface": "s", "document": ` + tt.document + `}`)
			err := v.Validate(contracts.ModelSurfaceResult, raw)
			if tt.want == nil {
				require.NoError(t, err)
				return
			}
			want := *tt.want
			want.path = "/document" + want.path
			docAssertProblem(t, err, want)
		})
	}
}

func TestDocumentType(t *testing.T) {
	tests := []struct{ doc, want string }{
		{`{"type": "Form"}`, "Form"},
		{`{"type": " "}`, ""},
		{`{"type": 1}`, ""},
		{`{}`, ""},
		{`[]`, ""},
		{`nope`, ""},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, contracts.DocumentType(json.RawMessage(tt.doc)), tt.doc)
	}
}

func TestDocumentExtraKeysSurvive(t *testing.T) {
	in := `{"type": "Form", "fields": [], "submit": {"action": "a", "variant": "primary"}, "layout": {"columns": 2}}`
	var d contracts.FormDocument
	require.NoError(t, contracts.Unmarshal([]byte(in), &d))
	out, err := contracts.Marshal(d)
	require.NoError(t, err)
	assert.JSONEq(t, in, string(out))
}

// FuzzDecodeDocument feeds arbitrary documents to the SurfaceResult validator
// and to each document decoder: nothing panics, and a valid document marshals
// to JSON that is valid and stable.
func FuzzDecodeDocument(f *testing.F) {
	for _, m := range documentModels(f) {
		b, err := os.ReadFile(filepath.Join("testdata", "documents", exampleName(m.DocumentType())+".json"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(docImport))
	f.Add([]byte(`{"type": "Configurator"}`))
	f.Add([]byte(`{"type": "Form", "submit": {"action": "a"}, "Submit": {}}`))
	f.Add([]byte(`{"type": "ResourceImport", "accepted_formats": ["xlsx"], "columns": [{"id": "a"}, {"id": "a"}]}`))
	v := contracts.DefaultValidator()
	f.Fuzz(func(t *testing.T, doc []byte) {
		res, err := json.Marshal(map[string]json.RawMessage{"surface": json.RawMessage(`"s"`), "document": doc})
		if err != nil {
			return // not JSON
		}
		resErr := v.Validate(contracts.ModelSurfaceResult, res)
		var ve *contracts.ValidationError
		if resErr != nil && !errors.As(resErr, &ve) {
			t.Fatalf("not a validation error: %v", resErr)
		}
		m, typed := contracts.DocumentModel(contracts.DocumentType(doc))
		if !typed {
			return
		}
		dst := m.New
		first := dst()
		if err := v.Decode(m, doc, first); err != nil {
			if resErr == nil {
				t.Fatalf("valid in a SurfaceResult but not as %s: %v", m, err)
			}
			return
		}
		if resErr != nil {
			t.Fatalf("valid as %s but not in a SurfaceResult: %v", m, resErr)
		}
		b1, err := contracts.Marshal(first)
		require.NoError(t, err)
		second := dst()
		require.NoError(t, v.Decode(m, b1, second), "re-encoded %s is invalid: %s", m, b1)
		b2, err := contracts.Marshal(second)
		require.NoError(t, err)
		require.JSONEq(t, string(b1), string(b2))
	})
}
