package encode

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/internal/tools/contractstest"
	"github.com/supervaize/supervaizer-go/internal/wire"
)

// assertEncodesLikeMarshal checks that the encoder writes exactly the bytes
// of contracts.Marshal (the reference), or gives up where it fails.
func assertEncodesLikeMarshal(tb testing.TB, r any, name string) (handled bool) {
	tb.Helper()
	want, wantErr := contracts.Marshal(r)
	got, ok := Append(nil, r)
	if wantErr != nil {
		assert.False(tb, ok, "%s: contracts.Marshal fails (%v) but the fast encoder did not give up", name, wantErr)
		return false
	}
	if ok {
		assert.Equal(tb, string(want), string(got), "%s: encodings differ", name)
		assertBuiltTapeMatchesParse(tb, r, name)
	}
	return ok
}

// assertBuiltTapeMatchesParse checks that the tape the encoder builds while
// writing r is the one wire.Tape.Parse builds from the bytes written, after
// a prefix (the encoder appends to a response buffer).
func assertBuiltTapeMatchesParse(tb testing.TB, r any, name string) {
	tb.Helper()
	prefix := []byte(`{"jsonrpc":"2.0","result":`)
	built := wire.Get()
	defer wire.Put(built)
	out, ok, tapeOK := AppendTape(prefix, r, built)
	if !ok || !tapeOK {
		assert.True(tb, ok, "%s: the encoder gives up with a tape", name)
		var parsed wire.Tape
		assert.False(tb, parsed.Parse(out[len(prefix):]), "%s: no tape built, but the document parses", name)
		return
	}
	var parsed wire.Tape
	require.True(tb, parsed.Parse(out[len(prefix):]), "%s: the encoded document does not parse", name)
	assert.Equal(tb, string(parsed.Src), string(built.Src), "%s: tape source", name)
	assert.Equal(tb, parsed.Nodes, built.Nodes, "%s: tape nodes", name)
	assert.Equal(tb, [3]any{parsed.Depth, parsed.Repeated, parsed.EscapedKey}, [3]any{built.Depth, built.Repeated, built.EscapedKey}, "%s: tape depth, repeated and escaped keys", name)
}

// TestEncoderMatchesMarshalOnCorpus decodes every corpus document (and
// mutations of it) into its model and compares the encoder with contracts.Marshal.
func TestEncoderMatchesMarshalOnCorpus(t *testing.T) {
	seen := map[contracts.Model]bool{}
	for _, d := range contractstest.LoadCorpus(t) {
		val := d.Model.New()
		if val == nil {
			continue
		}
		typ := reflect.TypeOf(val).Elem()
		v := reflect.New(typ)
		if contracts.Unmarshal(d.Raw, v.Interface()) != nil {
			continue
		}
		seen[d.Model] = true
		handled := assertEncodesLikeMarshal(t, v.Interface(), d.Name)
		if d.Valid {
			assert.True(t, handled, "%s: the encoder gives up on a valid document", d.Name)
		}
		// By value too: a value that is not addressable.
		assertEncodesLikeMarshal(t, v.Elem().Interface(), d.Name+" (value)")
		n := 40
		if d.Model == contracts.ModelActionResult || d.Model == contracts.ModelJobState {
			n = 150
		}
		for i, mut := range contractstest.Mutations(t, d.Raw, n) {
			m := reflect.New(typ)
			if contracts.Unmarshal(mut, m.Interface()) == nil {
				assertEncodesLikeMarshal(t, m.Interface(), d.Name+"#"+string(rune('0'+i%10)))
			}
		}
	}
	for _, m := range []contracts.Model{contracts.ModelActionResult, contracts.ModelSurfaceResult, contracts.ModelJobState, contracts.ModelSetupPlan, contracts.ModelRegistration, contracts.ModelField} {
		assert.True(t, seen[m], "the corpus has no %s document", m)
	}
}

// TestResultPathNeedsNoMarshalJSON checks that the encoder writes every model
// of the result path (action results, job states, setup plans, surface
// results and their documents) from its fields, never through
// contracts.Marshal, a MarshalJSON method or json.Marshal.
func TestResultPathNeedsNoMarshalJSON(t *testing.T) {
	var walk func(reflect.Type, map[reflect.Type]bool)
	walk = func(typ reflect.Type, seen map[reflect.Type]bool) {
		for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice || typ.Kind() == reflect.Map {
			typ = typ.Elem()
		}
		if seen[typ] || typ.Kind() != reflect.Struct || typ.PkgPath() != contractsPkg {
			return
		}
		seen[typ] = true
		_, spec := specs()[typ]
		if _, open := typ.FieldByName("Extra"); open || typ == verifiedContextType {
			assert.True(t, spec, "%s is a model without an encoding plan (contracts.Marshal would write it)", typ)
		} else if typ.Implements(marshalerType) || reflect.PointerTo(typ).Implements(marshalerType) {
			assert.True(t, spec, "%s has a MarshalJSON but no encoding plan", typ)
		} else {
			assert.NotNil(t, structEncFunc(typ, nil), "%s cannot be planned", typ)
		}
		for i := range typ.NumField() {
			walk(typ.Field(i).Type, seen)
		}
	}
	for _, typ := range specTypes(t) {
		seen := map[reflect.Type]bool{}
		for _, typ := range notFieldLists {
			seen[typ] = true
		}
		walk(typ, seen)
	}
}

// specTypes are the roots of the specs: the hot-path models and every typed
// document of the contracts registry.
func specTypes(t *testing.T) []reflect.Type {
	roots := append([]reflect.Type{}, specRoots...)
	docs := 0
	for _, m := range contracts.Models() {
		if m.DocumentType() != "" {
			roots = append(roots, reflect.TypeOf(m.New()).Elem())
			docs++
		}
	}
	require.GreaterOrEqual(t, docs, 4, "the registry's documents (Form, DocumentReview, ResourceImport, Dashboard)")
	return roots
}

// TestSpecsFollowTheHooks: the specs are read from contracts.Marshal, so
// every model of the contracts registry is encoded from its fields, and
// each field is written as contracts.Marshal writes it, empty (its default,
// if any), empty but not nil, and set. A default the hooks set only for a
// nil slice is not written for an empty one.
func TestSpecsFollowTheHooks(t *testing.T) {
	for _, root := range specTypes(t) {
		assert.Contains(t, specs(), root, "%s has no spec", root)
	}
	for typ, spec := range specs() {
		if spec.custom != nil {
			continue
		}
		assertEncodesLikeMarshal(t, reflect.New(typ).Interface(), typ.String()+" zero")
		for i := range typ.NumField() {
			f := typ.Field(i)
			if !f.IsExported() || f.Name == "Extra" {
				continue
			}
			for j, sample := range samples(f.Type) {
				v := reflect.New(typ)
				v.Elem().Field(i).Set(sample)
				assertEncodesLikeMarshal(t, v.Interface(), fmt.Sprintf("%s.%s#%d", typ, f.Name, j))
			}
		}
	}
	// The defaults are the hooks': a document's type, the formats of an import.
	assert.Equal(t, `"Form"`, specs()[reflect.TypeFor[contracts.FormDocument]()].defaults["type"])
	assert.Equal(t, `["csv"]`, specs()[reflect.TypeFor[contracts.ResourceImportDocument]()].defaults["accepted_formats"])
	assert.True(t, specs()[reflect.TypeFor[contracts.Case]()].result)
	assert.False(t, specs()[reflect.TypeFor[contracts.Field]()].result)
}

// samples returns values of type t that are not its zero value: empty but
// not nil, and holding one element (or a non-empty scalar).
func samples(t reflect.Type) []reflect.Value {
	one := func(x any) []reflect.Value { return []reflect.Value{reflect.ValueOf(x).Convert(t)} }
	switch {
	case t == reflect.TypeFor[json.RawMessage]():
		return []reflect.Value{reflect.ValueOf(json.RawMessage(`{"a":1}`))}
	case t.Kind() == reflect.String:
		return one("x")
	case t.Kind() == reflect.Bool:
		return one(true)
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Float64:
		return one(1)
	case t.Kind() == reflect.Slice:
		filled := reflect.MakeSlice(t, 1, 1)
		if t.Elem().Kind() == reflect.String {
			filled.Index(0).SetString("x")
		}
		return []reflect.Value{reflect.MakeSlice(t, 0, 0), filled}
	case t.Kind() == reflect.Map:
		filled := reflect.MakeMap(t)
		filled.SetMapIndex(reflect.ValueOf("k").Convert(t.Key()), reflect.Zero(t.Elem()))
		return []reflect.Value{reflect.MakeMap(t), filled}
	case t.Kind() == reflect.Pointer:
		return []reflect.Value{reflect.New(t.Elem())}
	case t.Kind() == reflect.Interface:
		return []reflect.Value{reflect.ValueOf("x")}
	}
	return nil // a struct: its own spec is tested
}

func TestEncoderMatchesMarshal(t *testing.T) {
	count := 3
	tricky := "<a href='x'>&amp;</a> \u2028\u2029 \x00\x1f\b\f\n\r\t \"\\ \xff\xfe é 😀"
	cyclic := map[string]any{}
	cyclic["self"] = cyclic
	for _, tc := range []struct {
		name    string
		r       *contracts.ActionResult
		handled bool
	}{
		{"empty", &contracts.ActionResult{}, true},
		{"minimal", &contracts.ActionResult{Status: contracts.StatusOK}, true},
		{"tricky strings", &contracts.ActionResult{Status: tricky, ExternalRef: tricky, ObservedAt: tricky,
			Effects: []contracts.Effect{{Type: tricky, Message: tricky, Data: map[string]any{tricky: tricky}}},
			Errors:  []contracts.ResultError{{Code: tricky, Message: tricky, Field: tricky}}}, true},
		{"every effect field", &contracts.ActionResult{Status: contracts.StatusOK, Effects: []contracts.Effect{{
			Type: "t", JobID: "j", CaseID: "c", StepID: "s", Resource: "r", Dataset: "d", ArtifactID: "a",
			Status: "st", Message: "m", Count: &count,
			Item: map[string]any{"b": 1, "a": nil}, Summary: map[string]any{"x": true}, Case: map[string]any{"id": "c"},
			Data:  map[string]any{"n": json.Number("1.50"), "t": time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), "s": []string{"a"}},
			Items: []map[string]any{nil, {}, {"k": []any{1.5, "x", nil, map[string]any{"z": 1}}}},
			Rows:  []map[string]any{{"r": int64(-7)}}, Errors: []map[string]any{{"e": int32(3)}}, Gaps: []map[string]any{{"g": float32(0.1)}},
		}}}, true},
		{"empty maps are omitted", &contracts.ActionResult{Status: contracts.StatusOK, Effects: []contracts.Effect{{Type: "t", Data: map[string]any{}, Items: []map[string]any{}}}}, true},
		{"floats", &contracts.ActionResult{Status: contracts.StatusOK, Effects: []contracts.Effect{{Type: "t", Data: map[string]any{
			"a": 1e21, "b": 1e20, "c": 1e-7, "d": 1e-6, "e": math.Copysign(0, -1), "f": 0.1, "g": 123456789.125, "h": float32(1e-7),
			"i": float32(3.4e38), "j": -1e-300, "k": math.MaxFloat64,
		}}}}, true},
		{"nan", &contracts.ActionResult{Status: contracts.StatusOK, Effects: []contracts.Effect{{Type: "t", Data: map[string]any{"x": math.NaN()}}}}, false},
		{"inf in a nested list", &contracts.ActionResult{Status: contracts.StatusOK, Effects: []contracts.Effect{{Type: "t", Data: map[string]any{"x": []any{math.Inf(1)}}}}}, false},
		{"cycle", &contracts.ActionResult{Status: contracts.StatusOK, Effects: []contracts.Effect{{Type: "t", Data: cyclic}}}, false},
		{"unsupported value", &contracts.ActionResult{Status: contracts.StatusOK, Effects: []contracts.Effect{{Type: "t", Data: map[string]any{"c": make(chan int)}}}}, false},
		{"typed sub-documents", &contracts.ActionResult{Status: contracts.StatusOK,
			JobState:     &contracts.JobState{Job: contracts.Job{ID: "j", AgentSlug: "a", MissionID: "m", Status: "active"}},
			ReplaySafety: &contracts.ReplaySafety{StableExternalIDsRequired: true, Extra: contracts.Extra{"z": json.RawMessage(` { "a" : "<b>" } `), "dedupe_keys": json.RawMessage(`1`)}},
			Draft:        &contracts.FieldDraft{}, DryRun: &contracts.DryRunOutcome{}, SetupPlan: &contracts.PlanValue{}}, true},
		{"extras", &contracts.ActionResult{Status: contracts.StatusOK, Extra: contracts.Extra{
			"b": json.RawMessage(`[1, 2,  {"x" : "&\u2028"}]`), "a": json.RawMessage(` null `), "status": json.RawMessage(`"shadow"`),
			"<k>": json.RawMessage(`"v"`)}}, true},
		{"invalid extra", &contracts.ActionResult{Status: contracts.StatusOK, Extra: contracts.Extra{"b": json.RawMessage(`{`)}}, false},
		{"empty extra", &contracts.ActionResult{Status: contracts.StatusOK, Effects: []contracts.Effect{{Type: "t", Extra: contracts.Extra{"x": nil}}}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.handled, assertEncodesLikeMarshal(t, tc.r, tc.name))
		})
	}
}

// encodeModel returns contracts.Marshal(value), encoded by the encoder when it can.
func encodeModel(value any) ([]byte, error) {
	if b, ok := Append(make([]byte, 0, 1024), value); ok {
		return b, nil
	}
	return contracts.Marshal(value)
}

func TestEncodeModelFallsBack(t *testing.T) {
	for _, v := range []any{nil, (*contracts.ActionResult)(nil), contracts.ActionResult{Status: contracts.StatusOK}, map[string]any{"status": "ok"}} {
		want, err := contracts.Marshal(v)
		require.NoError(t, err)
		got, err := encodeModel(v)
		require.NoError(t, err)
		assert.Equal(t, string(want), string(got))
	}
	_, err := encodeModel(&contracts.ActionResult{Status: contracts.StatusOK, Effects: []contracts.Effect{{Type: "t", Data: map[string]any{"x": math.NaN()}}}})
	assert.Error(t, err)
}

// FuzzResultEncoder compares the encoder with contracts.Marshal on results
// decoded from arbitrary JSON and on free-form values built from the input.
func FuzzResultEncoder(f *testing.F) {
	for _, d := range contractstest.LoadCorpus(f) {
		if d.Model == contracts.ModelActionResult {
			f.Add(d.Raw, "x<y>&\u2028", 1.5)
		}
	}
	f.Fuzz(func(t *testing.T, raw []byte, s string, x float64) {
		var r contracts.ActionResult
		if contracts.Unmarshal(raw, &r) == nil {
			assertEncodesLikeMarshal(t, &r, "decoded")
		}
		built := &contracts.ActionResult{Status: s, SyncCursor: s, Effects: []contracts.Effect{{Type: s, Message: s,
			Data:  map[string]any{s: x, "s": s, "l": []any{x, s, map[string]any{s: nil}}},
			Items: []map[string]any{{s: float32(x)}}}}}
		if json.Valid(raw) {
			built.Extra = contracts.Extra{s: raw}
		}
		assertEncodesLikeMarshal(t, built, "built")
	})
}

// TestEncoderBuildsParseTape covers what the corpus rarely holds: extra keys
// with escapes, repeated keys and invalid UTF-8 inside raw JSON, defaults
// written as literals, deep free-form values.
func TestEncoderBuildsParseTape(t *testing.T) {
	deep := any("leaf")
	for range 40 {
		deep = []any{map[string]any{"d": deep}}
	}
	for _, tc := range []struct {
		name string
		v    any
	}{
		{"escaped extra key", &contracts.Field{ID: "a", Label: "A", Extra: contracts.Extra{"x\"y": json.RawMessage(`1`), "é<": json.RawMessage(`{"a":[true,false,null]}`)}}},
		{"repeated key in raw", &contracts.Field{ID: "a", Label: "A", Extra: contracts.Extra{"x": json.RawMessage(`{"k":1,"k":2}`)}}},
		{"escaped key in raw", &contracts.Field{ID: "a", Label: "A", Extra: contracts.Extra{"x": json.RawMessage(`{"k\u0041":1}`)}}},
		{"invalid UTF-8 in raw", &contracts.Field{ID: "a", Label: "A", Extra: contracts.Extra{"x": json.RawMessage("\"\xff\"")}}},
		{"raw with spaces", &contracts.Field{ID: "a", Label: "A", Extra: contracts.Extra{"x": json.RawMessage(" [ 1 , 2.5e3 , -0 ] ")}}},
		{"defaults", &contracts.ActionResult{Status: contracts.StatusOK, JobState: &contracts.JobState{Cases: []contracts.Case{{ID: "c"}}}}},
		{"deep free-form", &contracts.ActionResult{Status: contracts.StatusOK, Effects: []contracts.Effect{{Type: "t", Data: map[string]any{"x": deep}}}}},
		{"escaped strings", &contracts.ActionResult{Status: "a\"b\\c\n<\u2028>\xff", ExternalRef: "plain"}},
		{"nil", nil},
		{"numbers and booleans in free-form values", &contracts.ActionResult{Status: contracts.StatusOK, Effects: []contracts.Effect{{Type: "t", Data: map[string]any{
			"f": []any{1.5, 3.0, math.Copysign(0, -1), 1e21, 1e-7, 123456789.0, float32(0.1), float64(-2)},
			"i": []any{0, -1, int64(1 << 62), uint8(7), uint64(1 << 63), int16(-3)},
			"b": []any{true, false, nil, []any{}, map[string]any{}, []any(nil), map[string]any(nil)},
			"m": map[string]int{"z": 1, "a": -2}, "n": map[string]float32{"x": 2.5}, "u": map[string]bool{"t": true},
		}}}}},
		{"map keys equal once escaped", &contracts.ActionResult{Status: contracts.StatusOK, Effects: []contracts.Effect{{Type: "t", Data: map[string]any{
			"k\xff": 1, "k\xfe": 2, "<": map[string]string{"a\xff": "x", "a\xfe": "y"},
		}}}}},
		{"map keys with escapes but distinct", &contracts.ActionResult{Status: contracts.StatusOK, Effects: []contracts.Effect{{Type: "t", Data: map[string]any{"a<": 1, "a>": 2}}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assertBuiltTapeMatchesParse(t, tc.v, tc.name)
		})
	}
}

// FuzzAppendString compares the string escaper with encoding/json, with
// and without HTML escaping, at every offset of the 8-byte word it tests.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain ascii text, long enough", "x<y>&\u2028\u2029\xff\x00\x1f\"\\", "é\tab\ncdefghij\x7f", strings.Repeat("a", 7) + "<" + strings.Repeat("b", 9)} {
		f.Add(s)
	}
	for _, c := range []string{"\"", "\\", "<", ">", "&", "\x00", "\x1f", " ", "~", "\x7f", "\x80", "é", "\u2028"} {
		f.Add("abc" + c + "defghijklmnop") // c inside the first 8-byte word
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, html := range []bool{true, false} {
			var want bytes.Buffer
			enc := json.NewEncoder(&want)
			enc.SetEscapeHTML(html)
			require.NoError(t, enc.Encode(s))
			for cut := range min(len(s), 9) {
				want.Reset()
				require.NoError(t, enc.Encode(s[cut:]))
				require.Equal(t, strings.TrimSuffix(want.String(), "\n"), string(AppendString(nil, s[cut:], html)), "html %v, %q", html, s[cut:])
			}
		}
	})
}

// TestIsEmptyValueMatchesOmitempty checks the encoder's omitempty test
// against encoding/json's, zero and non-zero, for every kind.
func TestIsEmptyValueMatchesOmitempty(t *testing.T) {
	one := 1
	for _, v := range []any{
		(*int)(nil), &one, []string(nil), []string{}, make([]string, 0, 4), []string{"a"}, []byte{}, []byte{0},
		false, true, 0, -1, int8(0), int8(-128), int16(0), int16(256), int32(0), int32(1 << 30), int64(0), int64(-1 << 62),
		uint(0), uint(7), uint8(0), uint8(255), uint16(0), uint16(1), uint32(0), uint32(1 << 31), uint64(0), uint64(1 << 63), uintptr(0), uintptr(9),
		float32(0), float32(math.Copysign(0, -1)), float32(0.5), 0.0, math.Copysign(0, -1), 1e-300,
		contracts.Extra(nil), contracts.Extra{}, "", "ok", map[string]int{}, [0]int{}, [1]int{},
	} {
		rv := reflect.New(reflect.TypeOf(v)).Elem()
		rv.Set(reflect.ValueOf(v))
		// encoding/json's verdict: the field is left out of the object.
		st := reflect.New(reflect.StructOf([]reflect.StructField{{Name: "V", Type: rv.Type(), Tag: `json:"v,omitempty"`}})).Elem()
		st.Field(0).Set(rv)
		b, err := json.Marshal(st.Interface())
		require.NoError(t, err, "%T %v", v, v)
		assert.Equal(t, string(b) == "{}", isEmptyValue(rv), "%T %v", v, v)
	}
	var nilIface, setIface any = nil, 0
	for _, v := range []*any{&nilIface, &setIface} {
		rv := reflect.ValueOf(v).Elem()
		assert.Equal(t, *v == nil, isEmptyValue(rv), "interface %v", *v)
	}
}
