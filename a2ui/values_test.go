package a2ui_test

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/a2ui"
	"github.com/supervaize/supervaizer-go/contracts"
)

// fe is a FieldError without its message.
type fe struct{ field, code string }

func codes(errs []a2ui.FieldError) []fe {
	out := []fe{}
	for _, e := range errs {
		out = append(out, fe{e.Field, e.Code})
	}
	return out
}

// decodeValues decodes submitted values the way an action input is decoded
// before validation: numbers kept as json.Number.
func decodeValues(t testing.TB, raw string) map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.UseNumber()
	var v map[string]any
	require.NoError(t, dec.Decode(&v), raw)
	return v
}

func TestValidateValuesPlan(t *testing.T) {
	fields := researchPlan().Steps[0].Fields
	tests := []struct {
		name, values string
		want         []fe
	}{
		{"valid", `{"goal": "Map the EU battery market", "mode": "custom", "budget": 10,
			"sources": [{"url": "https://a.example", "weight": 2}, {"url": "https://b.example"}]}`, []fe{}},
		{"missing required", `{}`, []fe{{"goal", "required"}}},
		{"null is missing", `{"goal": null}`, []fe{{"goal", "required"}}},
		{"empty string is missing", `{"goal": ""}`, []fe{{"goal", "required"}}},
		{"inactive field ignored", `{"goal": "g", "mode": "fast", "budget": "lots"}`, []fe{}},
		{"active field checked", `{"goal": "g", "mode": "custom", "budget": "lots"}`, []fe{{"budget", "type"}}},
		{"budget below min", `{"goal": "g", "mode": "custom", "budget": -1}`, []fe{{"budget", "min"}}},
		{"mode not an option", `{"goal": "g", "mode": "slow"}`, []fe{{"mode", "option"}}},
		{"list item missing url", `{"goal": "g", "sources": [{"url": "u"}, {"weight": 1}]}`, []fe{{"sources[1].url", "required"}}},
		{"list item weight not integral", `{"goal": "g", "sources": [{"url": "u", "weight": 1.5}]}`, []fe{{"sources[0].weight", "type"}}},
		{"list item not an object", `{"goal": "g", "sources": ["https://a.example"]}`, []fe{{"sources[0]", "type"}}},
		{"list as free text", `{"goal": "g", "sources": "https://a.example"}`, []fe{{"sources", "type"}}},
		{"too many items", `{"goal": "g", "sources": [` + strings.TrimSuffix(strings.Repeat(`{"url": "u"},`, 11), ",") + `]}`,
			[]fe{{"sources", "max_items"}}},
		{"unknown keys ignored", `{"goal": "g", "name": "Job name"}`, []fe{}},
		{"errors in field order", `{"goal": 3, "mode": "custom", "budget": -2, "sources": [{}]}`,
			[]fe{{"goal", "type"}, {"budget", "min"}, {"sources[0].url", "required"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.want, codes(a2ui.ValidateValues(fields, decodeValues(t, tt.values))))
		})
	}
}

func TestValidateValuesMessages(t *testing.T) {
	fields := researchPlan().Steps[0].Fields
	errs := a2ui.ValidateValues(fields, map[string]any{"goal": "g", "mode": "custom", "budget": -1.0})
	require.Len(t, errs, 1)
	assert.Equal(t, a2ui.FieldError{Field: "budget", Code: a2ui.CodeMin, Message: "Budget cannot be negative"}, errs[0])
	assert.Equal(t, "budget: Budget cannot be negative", errs[0].Error())

	errs = a2ui.ValidateValues(fields, map[string]any{"goal": 7.0})
	require.Len(t, errs, 1)
	assert.Equal(t, "must be a string", errs[0].Message)

	secret := "s3cr3t-value"
	errs = a2ui.ValidateValues([]a2ui.Field{a2ui.StringField("k", "K", a2ui.Pattern(`^\d+$`))}, map[string]any{"k": secret})
	require.Len(t, errs, 1)
	assert.NotContains(t, errs[0].Message, secret)
}

func TestValidateValuesTypes(t *testing.T) {
	choices := []a2ui.FieldOpt{a2ui.Choice("a", "A"), a2ui.Choice("b", "B")}
	numeric := a2ui.Field{ID: "f", Label: "F", Type: contracts.FieldSelect,
		Options: []contracts.FieldOption{{Value: json.RawMessage(`1`), Label: "One"}, {Value: json.RawMessage(`true`), Label: "Yes"}}}
	tests := []struct {
		name  string
		field a2ui.Field
		value any
		want  []fe
	}{
		{"string", a2ui.StringField("f", "F"), "x", nil},
		{"string given a number", a2ui.StringField("f", "F"), 1.0, []fe{{"f", "type"}}},
		{"text given a bool", a2ui.TextField("f", "F"), true, []fe{{"f", "type"}}},
		{"empty type is a string", a2ui.Field{ID: "f", Label: "F"}, 2.0, []fe{{"f", "type"}}},
		{"unknown type is a string", a2ui.Field{ID: "f", Label: "F", Type: "color"}, "#fff", nil},
		{"unknown type given an object", a2ui.Field{ID: "f", Label: "F", Type: "color"}, map[string]any{}, []fe{{"f", "type"}}},
		{"boolean", a2ui.BooleanField("f", "F"), false, nil},
		{"boolean given a string", a2ui.BooleanField("f", "F"), "true", []fe{{"f", "type"}}},
		{"integer as json.Number", a2ui.IntegerField("f", "F"), json.Number("42"), nil},
		{"integer as 2.0", a2ui.IntegerField("f", "F"), json.Number("2.0"), nil},
		{"integer as Go int", a2ui.IntegerField("f", "F"), 7, nil},
		{"integer as Go uint8", a2ui.IntegerField("f", "F"), uint8(7), nil},
		{"integer given 1.5", a2ui.IntegerField("f", "F"), 1.5, []fe{{"f", "type"}}},
		{"integer given a string", a2ui.IntegerField("f", "F"), "1", []fe{{"f", "type"}}},
		{"integer out of float range", a2ui.IntegerField("f", "F"), json.Number("1e400"), []fe{{"f", "type"}}},
		{"number", a2ui.NumberField("f", "F"), float32(0.25), nil},
		{"number given NaN", a2ui.NumberField("f", "F"), math.NaN(), []fe{{"f", "type"}}},
		{"number below min", a2ui.NumberField("f", "F", a2ui.Min(1)), 0.5, []fe{{"f", "min"}}},
		{"number above max", a2ui.NumberField("f", "F", a2ui.Max(1)), int64(2), []fe{{"f", "max"}}},
		{"number at the bounds", a2ui.NumberField("f", "F", a2ui.Min(1), a2ui.Max(1)), 1, nil},
		{"integer above max", a2ui.IntegerField("f", "F", a2ui.Max(10)), json.Number("11"), []fe{{"f", "max"}}},
		{"date", a2ui.DateField("f", "F"), "2026-02-28", nil},
		{"date that does not exist", a2ui.DateField("f", "F"), "2026-02-30", []fe{{"f", "type"}}},
		{"date without zero padding", a2ui.DateField("f", "F"), "2026-2-3", []fe{{"f", "type"}}},
		{"date with a time", a2ui.DateField("f", "F"), "2026-02-03T10:00:00Z", []fe{{"f", "type"}}},
		{"date given a number", a2ui.DateField("f", "F"), 20260203, []fe{{"f", "type"}}},
		{"resource_ref", a2ui.ResourceRefField("f", "F", "lists"), "list-1", nil},
		{"resource_ref given a number", a2ui.ResourceRefField("f", "F", "lists"), 1, []fe{{"f", "type"}}},
		{"select", a2ui.SelectField("f", "F", choices...), "b", nil},
		{"select not an option", a2ui.SelectField("f", "F", choices...), "c", []fe{{"f", "option"}}},
		{"select given an object", a2ui.SelectField("f", "F", choices...), map[string]any{"value": "a"}, []fe{{"f", "type"}}},
		{"select numeric option", numeric, json.Number("1.0"), nil},
		{"select boolean option", numeric, true, nil},
		{"select numeric option given a string", numeric, "1", []fe{{"f", "option"}}},
		{"select escaped option", a2ui.Field{ID: "f", Label: "F", Type: contracts.FieldSelect,
			Options: []contracts.FieldOption{{Value: json.RawMessage(`"a\u0022b"`), Label: "Quoted"}}}, `a"b`, nil},
		{"select escaped option given its raw text", a2ui.Field{ID: "f", Label: "F", Type: contracts.FieldSelect,
			Options: []contracts.FieldOption{{Value: json.RawMessage(`"a\u0022b"`), Label: "Quoted"}}}, `a\u0022b`, []fe{{"f", "option"}}},
		{"select from options_source", a2ui.ResourceRefField("f", "F", "lists", func(f *a2ui.Field) { f.Type = contracts.FieldSelect }), "any-id", nil},
		{"multi_select", a2ui.MultiSelectField("f", "F", choices...), []any{"a", "b"}, nil},
		{"multi_select as Go strings", a2ui.MultiSelectField("f", "F", choices...), []string{"b"}, nil},
		{"multi_select with a stranger", a2ui.MultiSelectField("f", "F", choices...), []any{"a", "z"}, []fe{{"f[1]", "option"}}},
		{"multi_select given a string", a2ui.MultiSelectField("f", "F", choices...), "a", []fe{{"f", "type"}}},
		{"multi_select given bytes", a2ui.MultiSelectField("f", "F", choices...), []byte("a"), []fe{{"f", "type"}}},
		{"multi_select too few", a2ui.MultiSelectField("f", "F", append(choices, a2ui.MinItems(2))...), []any{"a"}, []fe{{"f", "min_items"}}},
		{"multi_select too many", a2ui.MultiSelectField("f", "F", append(choices, a2ui.MaxItems(1))...), []any{"a", "b"}, []fe{{"f", "max_items"}}},
		{"list of Go maps", a2ui.ListField("f", "F", []a2ui.Field{a2ui.StringField("n", "N", a2ui.Required())}),
			[]map[string]string{{"n": "Ada"}, {}}, []fe{{"f[1].n", "required"}}},
		{"list too few", a2ui.ListField("f", "F", []a2ui.Field{a2ui.StringField("n", "N")}, a2ui.MinItems(2)), []any{map[string]any{}}, []fe{{"f", "min_items"}}},
		{"list item null", a2ui.ListField("f", "F", []a2ui.Field{a2ui.StringField("n", "N")}), []any{nil}, []fe{{"f[0]", "type"}}},
		{"min_length in code points", a2ui.StringField("f", "F", a2ui.MinLength(4)), "日本語", []fe{{"f", "min_length"}}},
		{"max_length in code points", a2ui.StringField("f", "F", a2ui.MaxLength(5)), "héllo", nil},
		{"max_length exceeded", a2ui.TextField("f", "F", a2ui.MaxLength(2)), "abc", []fe{{"f", "max_length"}}},
		{"pattern matches", a2ui.StringField("f", "F", a2ui.Pattern(`^[a-z]+$`)), "abc", nil},
		{"pattern is a search", a2ui.StringField("f", "F", a2ui.Pattern(`[0-9]`)), "abc1", nil},
		{"pattern does not match", a2ui.StringField("f", "F", a2ui.Pattern(`^[a-z]+$`)), "abc1", []fe{{"f", "pattern"}}},
		{"pattern RE2 cannot compile is skipped", a2ui.StringField("f", "F", a2ui.Pattern(`^(?!admin).*$`)), "admin", nil},
		{"pattern on an unknown type", a2ui.Field{ID: "f", Label: "F", Type: "color",
			Validation: &contracts.FieldValidation{Pattern: ptr(`^#`)}}, "fff", []fe{{"f", "pattern"}}},
		{"rules of another type are ignored", a2ui.BooleanField("f", "F", a2ui.MinLength(3)), true, nil},
		{"optional empty value skips rules", a2ui.StringField("f", "F", a2ui.MinLength(3)), "", nil},
		{"optional empty list skips rules", a2ui.MultiSelectField("f", "F", a2ui.MinItems(1)), []any{}, nil},
		{"required empty list", a2ui.MultiSelectField("f", "F", a2ui.Required()), []any{}, []fe{{"f", "required"}}},
		{"required nil slice", a2ui.MultiSelectField("f", "F", a2ui.Required()), []string(nil), []fe{{"f", "required"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := codes(a2ui.ValidateValues([]a2ui.Field{tt.field}, map[string]any{tt.field.ID: tt.value}))
			if tt.want == nil {
				tt.want = []fe{}
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestValidateValuesDependsOn(t *testing.T) {
	child := func(id, parent string, in ...string) a2ui.Field {
		return a2ui.StringField(id, id, a2ui.Required(), a2ui.DependsOn(parent, in...))
	}
	tests := []struct {
		name   string
		fields []a2ui.Field
		values map[string]any
		want   []fe
	}{
		{"parent matches", []a2ui.Field{a2ui.StringField("p", "P"), child("c", "p", "x")}, map[string]any{"p": "x"}, []fe{{"c", "required"}}},
		{"parent differs", []a2ui.Field{a2ui.StringField("p", "P"), child("c", "p", "x")}, map[string]any{"p": "y"}, []fe{}},
		{"parent absent", []a2ui.Field{a2ui.StringField("p", "P"), child("c", "p", "x")}, map[string]any{}, []fe{}},
		{"parent null", []a2ui.Field{a2ui.StringField("p", "P"), child("c", "p", "null")}, map[string]any{"p": nil}, []fe{}},
		{"boolean parent", []a2ui.Field{a2ui.BooleanField("p", "P"), child("c", "p", "true")}, map[string]any{"p": true}, []fe{{"c", "required"}}},
		{"boolean parent false", []a2ui.Field{a2ui.BooleanField("p", "P"), child("c", "p", "true")}, map[string]any{"p": false}, []fe{}},
		{"integer parent", []a2ui.Field{a2ui.IntegerField("p", "P"), child("c", "p", "42")}, map[string]any{"p": json.Number("42.0")}, []fe{{"c", "required"}}},
		{"float parent", []a2ui.Field{a2ui.NumberField("p", "P"), child("c", "p", "3.5")}, map[string]any{"p": 3.5}, []fe{{"c", "required"}}},
		{"Go int parent", []a2ui.Field{a2ui.IntegerField("p", "P"), child("c", "p", "7")}, map[string]any{"p": 7}, []fe{{"c", "required"}}},
		{"large float parent", []a2ui.Field{a2ui.NumberField("p", "P"), child("c", "p", "1e+21")}, map[string]any{"p": 1e21}, []fe{{"c", "required"}}},
		{"array parent never matches", []a2ui.Field{a2ui.MultiSelectField("p", "P"), child("c", "p", "a")}, map[string]any{"p": []any{"a"}}, []fe{}},
		{"chain through an inactive parent", []a2ui.Field{
			a2ui.StringField("a", "A"), child("b", "a", "on"), child("c", "b", "x")},
			map[string]any{"a": "off", "b": "x"}, []fe{}},
		{"chain through an active parent", []a2ui.Field{
			a2ui.StringField("a", "A"), child("b", "a", "on"), child("c", "b", "x")},
			map[string]any{"a": "on", "b": "x"}, []fe{{"c", "required"}}},
		{"child before its parent", []a2ui.Field{child("c", "b", "x"), child("b", "a", "on"), a2ui.StringField("a", "A")},
			map[string]any{"a": "on", "b": "x"}, []fe{{"c", "required"}}},
		{"cycle is inactive", []a2ui.Field{child("a", "b", "x"), child("b", "a", "x")}, map[string]any{"a": "x", "b": "x"}, []fe{}},
		{"self dependency is inactive", []a2ui.Field{child("a", "a", "x")}, map[string]any{"a": "x"}, []fe{}},
		{"undeclared parent uses its value", []a2ui.Field{child("c", "name", "x")}, map[string]any{"name": "x"}, []fe{{"c", "required"}}},
		{"inactive value is not checked", []a2ui.Field{a2ui.StringField("p", "P"),
			a2ui.IntegerField("c", "C", a2ui.DependsOn("p", "x"))}, map[string]any{"p": "y", "c": "nope"}, []fe{}},
		{"list items have their own siblings", []a2ui.Field{a2ui.ListField("l", "L", []a2ui.Field{
			a2ui.BooleanField("more", "More"), child("detail", "more", "true")})},
			map[string]any{"l": []any{map[string]any{"more": true}, map[string]any{"more": false}}}, []fe{{"l[0].detail", "required"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.want, codes(a2ui.ValidateValues(tt.fields, tt.values)))
		})
	}
}

func studioFile() map[string]any {
	return map[string]any{"storage": "studio", "file_id": "file-1", "filename": "report.md", "media_type": "text/markdown",
		"size": json.Number("1234"), "sha256": strings.Repeat("ab", 32)}
}

func inlineFile(content []byte) map[string]any {
	return map[string]any{"storage": "inline", "filename": "notes.md", "media_type": "text/markdown; charset=utf-8",
		"size": float64(len(content)), "encoding": "base64", "content": base64.StdEncoding.EncodeToString(content)}
}

func with(m map[string]any, kv ...any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	for i := 0; i < len(kv); i += 2 {
		if kv[i+1] == nil {
			delete(out, kv[i].(string))
			continue
		}
		out[kv[i].(string)] = kv[i+1]
	}
	return out
}

func TestValidateValuesFiles(t *testing.T) {
	studio := a2ui.FileField("f", "F", contracts.StorageStudio, a2ui.Accept(".md,text/markdown"), a2ui.MaxBytes(2048))
	inline := a2ui.FileField("f", "F", contracts.StorageInline, a2ui.MaxBytes(16))
	anyStorage := a2ui.FileField("f", "F", "", a2ui.Accept("image/*, .PDF"))
	tests := []struct {
		name  string
		field a2ui.Field
		value any
		msg   string // "" means valid; else a substring of the message
	}{
		{"studio", studio, studioFile(), ""},
		{"inline", inline, inlineFile([]byte("# Notes")), ""},
		{"inline without padding", inline, with(inlineFile([]byte("# Notes")), "content", base64.RawStdEncoding.EncodeToString([]byte("# Notes"))), ""},
		{"accept by media type wildcard", anyStorage, with(studioFile(), "filename", "p.png", "media_type", "image/png"), ""},
		{"accept by extension, any case", anyStorage, with(studioFile(), "filename", "Q3.pdf", "media_type", "application/octet-stream"), ""},
		{"typed value", studio, a2ui.FileValue{Storage: "studio", FileID: "f", Filename: "a.md", MediaType: "text/markdown", Size: 1, SHA256: strings.Repeat("0", 64)}, ""},
		{"not an object", studio, "report.md", "must be an object"},
		{"wrong storage for the field", studio, inlineFile([]byte("x")), `stored "studio"`},
		{"unknown storage", anyStorage, with(studioFile(), "storage", "s3"), "storage"},
		{"studio without file_id", studio, with(studioFile(), "file_id", nil), "file_id"},
		{"studio with uppercase sha256", studio, with(studioFile(), "sha256", strings.Repeat("AB", 32)), "sha256"},
		{"studio with short sha256", studio, with(studioFile(), "sha256", "abcd"), "sha256"},
		{"missing filename", studio, with(studioFile(), "filename", nil), "filename"},
		{"missing media_type", studio, with(studioFile(), "media_type", nil), "media_type"},
		{"size not a number", studio, with(studioFile(), "size", "12"), "size"},
		{"negative size", studio, with(studioFile(), "size", -1.0), "size"},
		{"fractional size", studio, with(studioFile(), "size", 1.5), "size"},
		{"key of the wrong type", studio, with(studioFile(), "file_id", 3.0), "file_id"},
		{"larger than max_bytes", studio, with(studioFile(), "size", 4096.0), "larger than 2048 bytes"},
		{"not accepted", studio, with(studioFile(), "filename", "report.exe", "media_type", "application/x-msdownload"), "does not accept"},
		{"unsupported encoding", inline, with(inlineFile([]byte("x")), "encoding", "hex"), "unsupported file encoding"},
		{"content not base64", inline, with(inlineFile([]byte("x")), "content", "***"), "not valid base64"},
		{"content size differs", inline, with(inlineFile([]byte("abc")), "size", 2.0), "holds 3 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			errs := a2ui.ValidateValues([]a2ui.Field{tt.field}, map[string]any{"f": tt.value})
			if tt.msg == "" {
				assert.Empty(t, errs)
				return
			}
			require.Len(t, errs, 1)
			assert.Equal(t, fe{"f", a2ui.CodeFile}, fe{errs[0].Field, errs[0].Code})
			assert.Contains(t, errs[0].Message, tt.msg)
		})
	}
}

func TestFileValueBytes(t *testing.T) {
	data := []byte("quarterly numbers\n")
	fv, err := a2ui.ParseFileValue(inlineFile(data))
	require.NoError(t, err)
	got, err := fv.Bytes()
	require.NoError(t, err)
	assert.Equal(t, data, got)

	fv.Encoding = "base32"
	_, err = fv.Bytes()
	require.ErrorIs(t, err, a2ui.ErrUnsupportedEncoding)

	_, err = a2ui.ParseFileValue(with(inlineFile(data), "encoding", "base32"))
	require.ErrorIs(t, err, a2ui.ErrUnsupportedEncoding)

	studio, err := a2ui.ParseFileValue(studioFile())
	require.NoError(t, err)
	_, err = studio.Bytes()
	require.Error(t, err)

	_, err = a2ui.ParseFileValue((*a2ui.FileValue)(nil))
	require.Error(t, err)
	_, err = a2ui.ParseFileValue(&a2ui.FileValue{Storage: "inline", Filename: "a", MediaType: "text/plain", Encoding: "base64"})
	require.NoError(t, err)
}

func TestFileValueVerifySHA256(t *testing.T) {
	data := []byte("quarterly numbers\n")
	sum := sha256.Sum256(data)
	fv := a2ui.FileValue{Storage: "studio", FileID: "f", Filename: "q.md", MediaType: "text/markdown",
		Size: int64(len(data)), SHA256: hex.EncodeToString(sum[:])}
	require.NoError(t, fv.VerifySHA256(data))
	require.ErrorIs(t, fv.VerifySHA256([]byte("tampered")), a2ui.ErrSHA256Mismatch)

	fv.SHA256 = strings.ToUpper(fv.SHA256)
	err := fv.VerifySHA256(data)
	require.Error(t, err)
	assert.NotErrorIs(t, err, a2ui.ErrSHA256Mismatch)
	fv.SHA256 = ""
	require.Error(t, fv.VerifySHA256(data))
}

func TestFileValueJSON(t *testing.T) {
	const in = `{"storage": "studio", "file_id": "file-1", "filename": "r.md", "media_type": "text/markdown", "size": 12, "sha256": "` +
		"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" + `"}`
	var fv a2ui.FileValue
	require.NoError(t, json.Unmarshal([]byte(in), &fv))
	assert.Equal(t, int64(12), fv.Size)
	assert.JSONEq(t, in, string(marshal(t, fv)))
}
