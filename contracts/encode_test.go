package contracts

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/internal/wire"
)

// assertEncodesLikeMarshal checks that the encoder writes exactly the bytes
// of json.Marshal (the reference), or gives up where json.Marshal fails.
func assertEncodesLikeMarshal(tb testing.TB, r any, name string) (handled bool) {
	tb.Helper()
	want, wantErr := json.Marshal(r)
	got, ok := appendValue(nil, r)
	if wantErr != nil {
		assert.False(tb, ok, "%s: json.Marshal fails (%v) but the fast encoder did not give up", name, wantErr)
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
	out, ok, tapeOK := appendValueTape(prefix, r, built)
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
// mutations of it) into its model and compares the encoder with json.Marshal.
func TestEncoderMatchesMarshalOnCorpus(t *testing.T) {
	seen := map[Model]bool{}
	for _, d := range loadCorpus(t) {
		typ, ok := modelTypes[d.model]
		if !ok {
			continue
		}
		v := reflect.New(typ)
		if json.Unmarshal(d.raw, v.Interface()) != nil {
			continue
		}
		seen[d.model] = true
		handled := assertEncodesLikeMarshal(t, v.Interface(), d.name)
		if d.valid {
			assert.True(t, handled, "%s: the encoder gives up on a valid document", d.name)
		}
		// By value too: a value that is not addressable.
		assertEncodesLikeMarshal(t, v.Elem().Interface(), d.name+" (value)")
		n := 40
		if d.model == ModelActionResult || d.model == ModelJobState {
			n = 150
		}
		for i, mut := range mutations(t, d.raw, n) {
			m := reflect.New(typ)
			if json.Unmarshal(mut, m.Interface()) == nil {
				assertEncodesLikeMarshal(t, m.Interface(), d.name+"#"+string(rune('0'+i%10)))
			}
		}
	}
	for _, m := range []Model{ModelActionResult, ModelSurfaceResult, ModelJobState, ModelSetupPlan, ModelRegistration, ModelField} {
		assert.True(t, seen[m], "the corpus has no %s document", m)
	}
}

// TestResultPathNeedsNoMarshalJSON checks that the encoder writes every model
// of the result path (action results, job states, setup plans, surface
// results and their documents) from its fields, never through a MarshalJSON
// method or json.Marshal.
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
		if typ.Implements(marshalerType) || reflect.PointerTo(typ).Implements(marshalerType) {
			assert.True(t, spec, "%s has a MarshalJSON but no encoding plan", typ)
		} else {
			assert.NotNil(t, structEncFunc(typ, nil), "%s cannot be planned", typ)
		}
		for i := range typ.NumField() {
			walk(typ.Field(i).Type, seen)
		}
	}
	for _, typ := range []reflect.Type{reflect.TypeFor[ActionResult](), reflect.TypeFor[SurfaceResult](), reflect.TypeFor[FormDocument](),
		reflect.TypeFor[DocumentReviewDocument](), reflect.TypeFor[ResourceImportDocument](), reflect.TypeFor[DashboardDocument]()} {
		seen := map[reflect.Type]bool{}
		// Drafts and dry runs (rare answers of preview actions), dashboard
		// widgets and resource fields keep their MarshalJSON, whose shapes
		// are not field lists.
		for _, typ := range []reflect.Type{reflect.TypeFor[FieldDraft](), reflect.TypeFor[DryRunOutcome](),
			reflect.TypeFor[Widget](), reflect.TypeFor[ResourceField]()} {
			seen[typ] = true
		}
		walk(typ, seen)
	}
}

func TestEncoderMatchesMarshal(t *testing.T) {
	count := 3
	tricky := "<a href='x'>&amp;</a> \u2028\u2029 \x00\x1f\b\f\n\r\t \"\\ \xff\xfe é 😀"
	cyclic := map[string]any{}
	cyclic["self"] = cyclic
	for _, tc := range []struct {
		name    string
		r       *ActionResult
		handled bool
	}{
		{"empty", &ActionResult{}, true},
		{"minimal", &ActionResult{Status: StatusOK}, true},
		{"tricky strings", &ActionResult{Status: tricky, ExternalRef: tricky, ObservedAt: tricky,
			Effects: []Effect{{Type: tricky, Message: tricky, Data: map[string]any{tricky: tricky}}},
			Errors:  []ResultError{{Code: tricky, Message: tricky, Field: tricky}}}, true},
		{"every effect field", &ActionResult{Status: StatusOK, Effects: []Effect{{
			Type: "t", JobID: "j", CaseID: "c", StepID: "s", Resource: "r", Dataset: "d", ArtifactID: "a",
			Status: "st", Message: "m", Count: &count,
			Item: map[string]any{"b": 1, "a": nil}, Summary: map[string]any{"x": true}, Case: map[string]any{"id": "c"},
			Data:  map[string]any{"n": json.Number("1.50"), "t": time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), "s": []string{"a"}},
			Items: []map[string]any{nil, {}, {"k": []any{1.5, "x", nil, map[string]any{"z": 1}}}},
			Rows:  []map[string]any{{"r": int64(-7)}}, Errors: []map[string]any{{"e": int32(3)}}, Gaps: []map[string]any{{"g": float32(0.1)}},
		}}}, true},
		{"empty maps are omitted", &ActionResult{Status: StatusOK, Effects: []Effect{{Type: "t", Data: map[string]any{}, Items: []map[string]any{}}}}, true},
		{"floats", &ActionResult{Status: StatusOK, Effects: []Effect{{Type: "t", Data: map[string]any{
			"a": 1e21, "b": 1e20, "c": 1e-7, "d": 1e-6, "e": -0.0, "f": 0.1, "g": 123456789.125, "h": float32(1e-7),
			"i": float32(3.4e38), "j": -1e-300, "k": math.MaxFloat64,
		}}}}, true},
		{"nan", &ActionResult{Status: StatusOK, Effects: []Effect{{Type: "t", Data: map[string]any{"x": math.NaN()}}}}, false},
		{"inf in a nested list", &ActionResult{Status: StatusOK, Effects: []Effect{{Type: "t", Data: map[string]any{"x": []any{math.Inf(1)}}}}}, false},
		{"cycle", &ActionResult{Status: StatusOK, Effects: []Effect{{Type: "t", Data: cyclic}}}, false},
		{"unsupported value", &ActionResult{Status: StatusOK, Effects: []Effect{{Type: "t", Data: map[string]any{"c": make(chan int)}}}}, false},
		{"typed sub-documents", &ActionResult{Status: StatusOK,
			JobState:     &JobState{Job: Job{ID: "j", AgentSlug: "a", MissionID: "m", Status: "active"}},
			ReplaySafety: &ReplaySafety{StableExternalIDsRequired: true, Extra: Extra{"z": json.RawMessage(` { "a" : "<b>" } `), "dedupe_keys": json.RawMessage(`1`)}},
			Draft:        &FieldDraft{}, DryRun: &DryRunOutcome{}, SetupPlan: &PlanValue{}}, true},
		{"extras", &ActionResult{Status: StatusOK, Extra: Extra{
			"b": json.RawMessage(`[1, 2,  {"x" : "&\u2028"}]`), "a": json.RawMessage(` null `), "status": json.RawMessage(`"shadow"`),
			"<k>": json.RawMessage(`"v"`)}}, true},
		{"invalid extra", &ActionResult{Status: StatusOK, Extra: Extra{"b": json.RawMessage(`{`)}}, false},
		{"empty extra", &ActionResult{Status: StatusOK, Effects: []Effect{{Type: "t", Extra: Extra{"x": nil}}}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.handled, assertEncodesLikeMarshal(t, tc.r, tc.name))
		})
	}
}

// encodeModel returns json.Marshal(value), encoded by the encoder when it can.
func encodeModel(value any) ([]byte, error) {
	if b, ok := appendValue(make([]byte, 0, 1024), value); ok {
		return b, nil
	}
	return json.Marshal(value)
}

func TestEncodeModelFallsBack(t *testing.T) {
	for _, v := range []any{nil, (*ActionResult)(nil), ActionResult{Status: StatusOK}, map[string]any{"status": "ok"}} {
		want, err := json.Marshal(v)
		require.NoError(t, err)
		got, err := encodeModel(v)
		require.NoError(t, err)
		assert.Equal(t, string(want), string(got))
	}
	_, err := encodeModel(&ActionResult{Status: StatusOK, Effects: []Effect{{Type: "t", Data: map[string]any{"x": math.NaN()}}}})
	assert.Error(t, err)
}

// FuzzResultEncoder compares the encoder with json.Marshal on results
// decoded from arbitrary JSON and on free-form values built from the input.
func FuzzResultEncoder(f *testing.F) {
	for _, d := range loadCorpus(f) {
		if d.model == ModelActionResult {
			f.Add(d.raw, "x<y>&\u2028", 1.5)
		}
	}
	f.Fuzz(func(t *testing.T, raw []byte, s string, x float64) {
		var r ActionResult
		if json.Unmarshal(raw, &r) == nil {
			assertEncodesLikeMarshal(t, &r, "decoded")
		}
		built := &ActionResult{Status: s, SyncCursor: s, Effects: []Effect{{Type: s, Message: s,
			Data:  map[string]any{s: x, "s": s, "l": []any{x, s, map[string]any{s: nil}}},
			Items: []map[string]any{{s: float32(x)}}}}}
		if json.Valid(raw) {
			built.Extra = Extra{s: raw}
		}
		assertEncodesLikeMarshal(t, built, "built")
	})
}

// TestAppendValueAppends checks that AppendValue extends dst with exactly
// the bytes ValidateValue returns, and leaves dst unchanged on failure.
func TestAppendValueAppends(t *testing.T) {
	v := DefaultValidator()
	res := &ActionResult{Status: StatusOK, Effects: []Effect{{Type: "job.synced", JobID: "j"}},
		JobState: &JobState{Job: Job{ID: "j", AgentSlug: "a", MissionID: "m", Status: "active", Source: JobSource{Type: SourceFreshStart}}}}
	want, err := v.ValidateValue(ModelActionResult, res)
	require.NoError(t, err)
	got, err := v.AppendValue([]byte("prefix:"), ModelActionResult, res)
	require.NoError(t, err)
	assert.Equal(t, "prefix:"+string(want), string(got))

	bad := &ActionResult{Status: "maybe"}
	got, err = v.AppendValue([]byte("prefix:"), ModelActionResult, bad)
	require.Error(t, err)
	assert.Equal(t, "prefix:", string(got))
	raw, err := v.ValidateValue(ModelActionResult, bad)
	require.Error(t, err)
	assert.Nil(t, raw)
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
		{"escaped extra key", &Field{ID: "a", Label: "A", Extra: Extra{"x\"y": json.RawMessage(`1`), "é<": json.RawMessage(`{"a":[true,false,null]}`)}}},
		{"repeated key in raw", &Field{ID: "a", Label: "A", Extra: Extra{"x": json.RawMessage(`{"k":1,"k":2}`)}}},
		{"escaped key in raw", &Field{ID: "a", Label: "A", Extra: Extra{"x": json.RawMessage(`{"k\u0041":1}`)}}},
		{"invalid UTF-8 in raw", &Field{ID: "a", Label: "A", Extra: Extra{"x": json.RawMessage("\"\xff\"")}}},
		{"raw with spaces", &Field{ID: "a", Label: "A", Extra: Extra{"x": json.RawMessage(" [ 1 , 2.5e3 , -0 ] ")}}},
		{"defaults", &ActionResult{Status: StatusOK, JobState: &JobState{Cases: []Case{{ID: "c"}}}}},
		{"deep free-form", &ActionResult{Status: StatusOK, Effects: []Effect{{Type: "t", Data: map[string]any{"x": deep}}}}},
		{"escaped strings", &ActionResult{Status: "a\"b\\c\n<\u2028>\xff", ExternalRef: "plain"}},
		{"nil", nil},
		{"numbers and booleans in free-form values", &ActionResult{Status: StatusOK, Effects: []Effect{{Type: "t", Data: map[string]any{
			"f": []any{1.5, 3.0, -0.0, 1e21, 1e-7, 123456789.0, float32(0.1), float64(-2)},
			"i": []any{0, -1, int64(1 << 62), uint8(7), uint64(1 << 63), int16(-3)},
			"b": []any{true, false, nil, []any{}, map[string]any{}, []any(nil), map[string]any(nil)},
			"m": map[string]int{"z": 1, "a": -2}, "n": map[string]float32{"x": 2.5}, "u": map[string]bool{"t": true},
		}}}}},
		{"map keys equal once escaped", &ActionResult{Status: StatusOK, Effects: []Effect{{Type: "t", Data: map[string]any{
			"k\xff": 1, "k\xfe": 2, "<": map[string]string{"a\xff": "x", "a\xfe": "y"},
		}}}}},
		{"map keys with escapes but distinct", &ActionResult{Status: StatusOK, Effects: []Effect{{Type: "t", Data: map[string]any{"a<": 1, "a>": 2}}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assertBuiltTapeMatchesParse(t, tc.v, tc.name)
		})
	}
}

// FuzzAppendJSONString compares the string escaper with encoding/json, with
// and without HTML escaping, at every offset of the 8-byte word it tests.
func FuzzAppendJSONString(f *testing.F) {
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
				require.Equal(t, strings.TrimSuffix(want.String(), "\n"), string(AppendJSONString(nil, s[cut:], html)), "html %v, %q", html, s[cut:])
			}
		}
	})
}

// TestEmptyAtMatchesIsEmptyValue checks the in-place omitempty test against
// encoding/json's, zero and non-zero, for every kind it reads.
func TestEmptyAtMatchesIsEmptyValue(t *testing.T) {
	one := 1
	for _, v := range []any{
		(*int)(nil), &one, []string(nil), []string{}, make([]string, 0, 4), []string{"a"}, []byte{}, []byte{0},
		false, true, 0, -1, int8(0), int8(-128), int16(0), int16(256), int32(0), int32(1 << 30), int64(0), int64(-1 << 62),
		uint(0), uint(7), uint8(0), uint8(255), uint16(0), uint16(1), uint32(0), uint32(1 << 31), uint64(0), uint64(1 << 63), uintptr(0), uintptr(9),
		float32(0), float32(math.Copysign(0, -1)), float32(0.5), 0.0, math.Copysign(0, -1), 1e-300, math.NaN(),
		Extra(nil), Extra{}, "", "ok",
	} {
		rv := reflect.New(reflect.TypeOf(v)).Elem()
		rv.Set(reflect.ValueOf(v))
		want := isEmptyValue(rv)
		got := emptyAt(rv.Kind(), rv.Addr().UnsafePointer())
		switch rv.Kind() {
		case reflect.String, reflect.Map:
			assert.False(t, got, "%T %v: not read in place", v, v)
		default:
			assert.Equal(t, want, got, "%T %v", v, v)
		}
	}
	var nilIface, setIface any = nil, 0
	for _, v := range []*any{&nilIface, &setIface} {
		rv := reflect.ValueOf(v).Elem()
		assert.Equal(t, isEmptyValue(rv), emptyAt(reflect.Interface, rv.Addr().UnsafePointer()), "interface %v", *v)
	}
}
