package validate

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/internal/tools/contractstest"
	"github.com/supervaize/supervaizer-go/internal/wire"
)

// The differential tests of the fast path: the compiled validator
// (compiled.go) against the reference validator (package contracts, with
// santhosh-tekuri/jsonschema), and the tape decoder (request.go) against UnmarshalJSON, over the contracts
// corpus, mutations of its valid documents, and fuzzing.

// referenceValidator is the reference validator of package contracts.
func referenceValidator(tb testing.TB) *contracts.Validator {
	tb.Helper()
	v, err := contracts.NewValidator()
	require.NoError(tb, err)
	return v
}

// referenceSchemas are the models' schemas compiled by the reference
// implementation (santhosh-tekuri/jsonschema) alone.
var referenceSchemas = sync.OnceValues(func() (map[contracts.Model]*jsonschema.Schema, error) {
	doc, err := schemaDoc(contracts.Schema())
	if err != nil {
		return nil, err
	}
	c := newCompiler()
	if err := c.AddResource(contracts.SchemaID, doc); err != nil {
		return nil, err
	}
	out := map[contracts.Model]*jsonschema.Schema{}
	for _, m := range contracts.Models() {
		if out[m], err = c.Compile(contracts.SchemaID + "#/$defs/" + string(m)); err != nil {
			return nil, err
		}
	}
	return out, nil
})

// referenceSchemaVerdict is the reference validator's verdict on the schema
// alone (no Go rules); a number the reference cannot compare is invalid, as
// contracts reports it.
func referenceSchemaVerdict(tb testing.TB, m contracts.Model, raw []byte) (valid bool) {
	tb.Helper()
	schemas, err := referenceSchemas()
	require.NoError(tb, err)
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return false
	}
	defer func() {
		if recover() != nil {
			valid = false
		}
	}()
	return schemas[m].Validate(inst) == nil
}

// fastVerdict is the compiled validator's verdict; sure is false when it
// leaves the document to the reference.
func fastVerdict(tb testing.TB, v *Validator, m contracts.Model, raw []byte) (valid, sure bool) {
	tb.Helper()
	fs := v.fast[m]
	require.NotNil(tb, fs, "model %s has no compiled schema", m)
	t := wire.Get()
	defer wire.Put(t)
	if !(t.Parse(raw) && t.Plain()) {
		return false, false
	}
	return fs.check(t)
}

// sameOutcome checks that the fast and the reference validators answer
// Validate, and Decode for the request models, identically: same error
// (problems, locations and messages included) and same decoded value.
func sameOutcome(tb testing.TB, fast *Validator, ref *contracts.Validator, m contracts.Model, raw []byte, name string) {
	tb.Helper()
	assert.Equal(tb, ref.Validate(m, raw), fast.Validate(m, raw), "%s: Validate differs", name)
	val := m.New()
	if val == nil {
		return
	}
	typ := reflect.TypeOf(val).Elem()
	got, want := reflect.New(typ), reflect.New(typ)
	gotErr, wantErr := fast.Decode(m, raw, got.Interface()), ref.Decode(m, raw, want.Interface())
	assert.Equal(tb, wantErr, gotErr, "%s: Decode error differs", name)
	if wantErr == nil {
		assert.Equal(tb, want.Interface(), got.Interface(), "%s: decoded value differs", name)
	}
}

func TestCompiledValidatorCoversEveryModel(t *testing.T) {
	v := Default()
	for _, m := range contracts.Models() {
		assert.NotNil(t, v.fast[m], "model %s has no compiled schema: it always takes the reference path", m)
	}
}

func TestCompiledValidatorAgreesOnCorpus(t *testing.T) {
	fast, ref := Default(), referenceValidator(t)
	for _, d := range contractstest.LoadCorpus(t) {
		want := referenceSchemaVerdict(t, d.Model, d.Raw)
		got, sure := fastVerdict(t, fast, d.Model, d.Raw)
		if sure {
			assert.Equal(t, want, got, "%s: compiled verdict differs from the reference", d.Name)
		}
		if want {
			// Every schema-valid document of the corpus must be decided on the fast path.
			assert.True(t, sure && got, "%s: the compiled validator does not accept a valid document", d.Name)
		}
		sameOutcome(t, fast, ref, d.Model, d.Raw, d.Name)
	}
}

func TestCompiledValidatorAgreesOnMutations(t *testing.T) {
	limit := 150
	if testing.Short() {
		limit = 40
	}
	fast, ref := Default(), referenceValidator(t)
	decided, total := 0, 0
	for _, d := range contractstest.LoadCorpus(t) {
		if !d.Valid {
			continue
		}
		n := limit
		if d.Model == contracts.ModelRegistration {
			n = limit / 4 // large documents: keep the test fast
		}
		for i, mut := range contractstest.Mutations(t, d.Raw, n) {
			name := d.Name + "#" + strconv.Itoa(i)
			want := referenceSchemaVerdict(t, d.Model, mut)
			got, sure := fastVerdict(t, fast, d.Model, mut)
			total++
			if sure {
				decided++
				if !assert.Equal(t, want, got, "%s: compiled verdict differs from the reference on %s", name, mut) {
					continue
				}
			}
			sameOutcome(t, fast, ref, d.Model, mut, name)
		}
	}
	t.Logf("%d mutated documents, %d decided by the compiled validator", total, decided)
	assert.Greater(t, decided, total*9/10, "the compiled validator leaves too many documents to the reference")
}

func TestDecodedRequestDoesNotShareCallerBytes(t *testing.T) {
	raw := []byte(`{"request_id":"r","actor":{"user_id":"u"},"workspace":{"id":"w"},"mission_id":"m",` +
		`"agent_slug":"a","surface":"s","action":"x","input":{"k":1},"extra_key":[1]}`)
	var req contracts.ActionRequest
	require.NoError(t, Default().Decode(contracts.ModelActionRequest, raw, &req))
	for i := range raw {
		raw[i] = ' '
	}
	assert.JSONEq(t, `{"k":1}`, string(req.Input))
	assert.Equal(t, "r", req.RequestID)
	assert.JSONEq(t, `[1]`, string(req.Extra["extra_key"]))
	// Appending to one raw value never writes over another.
	before := string(req.Extra["extra_key"])
	_ = append(req.Input, "garbage"...)
	assert.Equal(t, before, string(req.Extra["extra_key"]))
}

// FuzzCompiledValidator compares the fast path with the reference on
// arbitrary documents of every model: the compiled verdict (when it is sure),
// Validate's problems and Decode's values.
func FuzzCompiledValidator(f *testing.F) {
	models := contracts.Models()
	for _, d := range contractstest.LoadCorpus(f) {
		if i := slices.Index(models, d.Model); i >= 0 && len(d.Raw) < 4096 {
			f.Add(uint8(i), d.Raw)
		}
	}
	fast, ref := Default(), referenceValidator(f)
	f.Fuzz(func(t *testing.T, mi uint8, raw []byte) {
		m := models[int(mi)%len(models)]
		want := referenceSchemaVerdict(t, m, raw)
		if got, sure := fastVerdict(t, fast, m, raw); sure && got != want {
			t.Fatalf("%s: compiled verdict %t, reference %t on %q", m, got, want, raw)
		}
		sameOutcome(t, fast, ref, m, raw, string(m))
	})
}

// diffInput is an input type using every rule a derived input schema can hold.
type diffInput struct {
	TopicID  string            `json:"topic_id" sv:"nonblank,maxLen=20"`
	Title    string            `json:"title,omitempty" sv:"minLen=2,pattern=^[A-Z]"`
	Depth    int               `json:"depth" sv:"minimum=1,maximum=5"`
	Ratio    float64           `json:"ratio,omitempty" sv:"minimum=0,maximum=1"`
	Mode     string            `json:"mode,omitempty" sv:"enum=quick|deep"`
	Version  int               `json:"version,omitempty" sv:"const=2"`
	When     string            `json:"when,omitempty" sv:"format=date-time"`
	Link     string            `json:"link,omitempty" sv:"format=uri"`
	Tags     []string          `json:"tags,omitempty" sv:"minItems=1,maxItems=3"`
	Nested   *diffNested       `json:"nested,omitempty"`
	Items    []diffNested      `json:"items,omitempty"`
	Labels   map[string]string `json:"labels,omitempty"`
	Free     json.RawMessage   `json:"free,omitempty" sv:"object"`
	Optional *bool             `json:"optional"`
}

type diffNested struct {
	ID    string  `json:"id" sv:"nonblank"`
	Score float64 `json:"score,omitempty"`
}

var diffInputSeeds = []string{
	`{"topic_id":"t-1","depth":3,"optional":null}`,
	`{"topic_id":"t-1","depth":3,"title":"Abc","ratio":0.5,"mode":"deep","version":2,"when":"2026-01-02T03:04:05Z",` +
		`"link":"https://example.com/x","tags":["a","b"],"nested":{"id":"n","score":1.5},"items":[{"id":"a"},{"id":"b"}],` +
		`"labels":{"a":"b"},"free":{"x":[1,2]},"optional":true,"rule_snapshot":{"any":"thing"}}`,
}

// diffValidators are the input and the answer validators of diffInput:
// both compile.
func diffValidators(t testing.TB) map[string]*Input {
	iv, err := NewInput(reflect.TypeFor[diffInput](), "rule_snapshot")
	require.NoError(t, err)
	av, err := NewAnswer(reflect.TypeFor[diffInput]())
	require.NoError(t, err)
	return map[string]*Input{"input": iv, "answer": av}
}

// diffAnswerSeeds are valid answers of diffInput: optional fields null.
var diffAnswerSeeds = []string{
	`{"topic_id":"t-1","depth":3,"optional":null,"title":null,"tags":null,"nested":null,"items":[{"id":"a","score":null}],"labels":null,"free":null}`,
}

func TestInputValidatorAgreesWithReference(t *testing.T) {
	for name, iv := range diffValidators(t) {
		t.Run(name, func(t *testing.T) {
			require.NotNil(t, iv.fast, "the derived schema must compile")
			ref := iv.Reference()
			decided, total := 0, 0
			seeds := diffInputSeeds
			if name == "answer" {
				seeds = append(seeds[:1:1], diffAnswerSeeds...) // the other seed has a tolerated key
			}
			for _, seed := range seeds {
				require.Empty(t, iv.Validate([]byte(seed)))
				for _, mut := range contractstest.Mutations(t, []byte(seed), 2000) {
					total++
					want := ref.Validate(mut)
					tp := wire.Get()
					if tp.Parse(mut) && tp.Plain() {
						if got, sure := iv.fast.check(tp); sure {
							decided++
							assert.Equal(t, len(want) == 0, got, "compiled verdict differs on %s", mut)
						}
					}
					wire.Put(tp)
					assert.Equal(t, want, iv.Validate(mut), "problems differ on %s", mut)
				}
			}
			t.Logf("%d mutated documents, %d decided by the compiled validator", total, decided)
			assert.Greater(t, decided, total*9/10)
		})
	}
}

// FuzzInputValidator compares the compiled and the reference verdicts on the
// input and the answer schemas of diffInput.
func FuzzInputValidator(f *testing.F) {
	for _, s := range append(diffInputSeeds, diffAnswerSeeds...) {
		f.Add([]byte(s))
	}
	ivs := diffValidators(f)
	f.Fuzz(func(t *testing.T, raw []byte) {
		for _, iv := range ivs {
			want := iv.Reference().Validate(raw)
			tp := wire.Get()
			if tp.Parse(raw) && tp.Plain() {
				if got, sure := iv.fast.check(tp); sure && got != (len(want) == 0) {
					t.Fatalf("compiled verdict %t, reference problems %v on %q", got, want, raw)
				}
			}
			wire.Put(tp)
			assert.Equal(t, want, iv.Validate(raw))
		}
	})
}

// The reference validator panics on a number math/big cannot represent under
// minimum or maximum; the Validator reports a problem instead.
func TestHugeNumberIsAProblemNotAPanic(t *testing.T) {
	type in struct {
		D float64 `json:"d" sv:"minimum=1"`
	}
	iv, err := NewInput(reflect.TypeFor[in]())
	require.NoError(t, err)
	ps := iv.Validate([]byte(`{"d":1e10000000}`))
	require.Len(t, ps, 1)
	assert.Equal(t, "number", ps[0].Type)
	assert.Empty(t, iv.Validate([]byte(`{"d":1e3}`)))

	doc := []byte(`{"min":1e10000000}`)
	err = Default().Validate(contracts.ModelCostEstimate, doc)
	var ve *contracts.ValidationError
	require.ErrorAs(t, err, &ve)
	assert.Equal(t, "number", ve.Problems[0].Type)
}

// get returns the rule of key, the zero rule when the schema names no such
// field.
func (t *fieldTable) get(key []byte) fieldRule {
	if sl := t.slot(key); sl != nil {
		return sl.rule
	}
	return fieldRule{}
}

func TestFieldTable(t *testing.T) {
	names := []string{"id", "type", "status", "job_id", "a", "b", "", "awaiting", "external_ref", "external_version", "sync_cursor", "observed_at", "ab", "ba"}
	fields := map[string]fieldRule{}
	for i, n := range names {
		fields[n] = fieldRule{bit: 1 << i}
	}
	table := newFieldTable(fields)
	for _, n := range names {
		assert.Equal(t, fields[n], table.get([]byte(n)), n)
	}
	for _, n := range []string{"i", "idd", "Type", "status ", "abc", "c", "awaitinG"} {
		assert.Equal(t, fieldRule{}, table.get([]byte(n)), n)
	}
	var empty fieldTable
	assert.Equal(t, fieldRule{}, empty.get([]byte("id")))

	// Names of 64 bytes and more share the length bits of short ones.
	long := strings.Repeat("x", 70) // 70 % 64 == len("status")
	wide := newFieldTable(map[string]fieldRule{long: {bit: 1}, "status": {bit: 2}, "": {bit: 4}, strings.Repeat("y", 64): {bit: 8}})
	assert.Equal(t, fieldRule{bit: 1}, wide.get([]byte(long)))
	assert.Equal(t, fieldRule{bit: 2}, wide.get([]byte("status")))
	assert.Equal(t, fieldRule{bit: 4}, wide.get(nil))
	assert.Equal(t, fieldRule{bit: 8}, wide.get([]byte(strings.Repeat("y", 64))))
	for _, n := range []string{"statuz", strings.Repeat("x", 6), strings.Repeat("y", 128), strings.Repeat("x", 71)} {
		assert.Equal(t, fieldRule{}, wide.get([]byte(n)), n)
	}
}

// TestFieldTableNext checks the lookup in a bound order: keys in order, with
// fields omitted, out of order, repeated and unknown all get their own rule.
func TestFieldTableNext(t *testing.T) {
	names := []string{"id", "lane", "title", "status", "a", "b", "c", "d", "e", "f", "g", "metadata", "steps"}
	fields := map[string]fieldRule{}
	for i, n := range names {
		fields[n] = fieldRule{bit: 1 << i}
	}
	table := newFieldTable(fields)
	var order []int32
	for _, n := range names {
		i := table.index([]byte(n))
		require.GreaterOrEqual(t, i, 0, n)
		table.slots[i].pos = int32(len(order))
		order = append(order, int32(i))
	}
	for _, keys := range [][]string{
		names,
		{"id", "status", "steps"},
		{"id", "metadata", "lane"},    // past the window, then back
		{"steps", "id", "id", "lane"}, // out of order, repeated
		{"id", "unknown", "lane", "", "title"},
		{},
	} {
		n := 0
		for _, k := range keys {
			var got fieldRule
			got, n = table.next([]byte(k), order, n)
			assert.Equal(t, fields[k], got, "%q in %q", k, keys)
			assert.LessOrEqual(t, n, len(order))
		}
	}
}

// TestBindOrderFollowsTheStructFields checks that the compiled schemas of
// the result models carry the order of their Go fields: a job written by the
// encoder finds each key's rule at the place expected.
func TestBindOrderFollowsTheStructFields(t *testing.T) {
	v := Default()
	root := v.fast[contracts.ModelActionResult]
	require.NotNil(t, root)
	job := objectSchemaAt(t, root, "job_state", "job")
	var want []string
	jt := reflect.TypeFor[contracts.Job]()
	for i := range jt.NumField() {
		name, _, _ := strings.Cut(jt.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" && job.lookup.index([]byte(name)) >= 0 {
			want = append(want, name)
		}
	}
	require.NotEmpty(t, want)
	var got []string
	for _, slot := range job.order {
		got = append(got, job.lookup.slots[slot].name)
	}
	assert.Equal(t, want, got)
}

// objectSchemaAt follows the properties path from s, through the subschemas
// of nullable unions, to an object schema with fields.
func objectSchemaAt(t *testing.T, s *cschema, path ...string) *cschema {
	t.Helper()
	var object func(s *cschema) *cschema
	object = func(s *cschema) *cschema {
		if s == nil {
			return nil
		}
		if s.fields != nil {
			return s
		}
		for _, list := range [][]*cschema{s.allOf, s.anyOf, s.oneOf, {s.ref}} {
			for _, sub := range list {
				if o := object(sub); o != nil {
					return o
				}
			}
		}
		return nil
	}
	s = object(s)
	for _, p := range path {
		require.NotNil(t, s, p)
		s = object(s.lookup.get([]byte(p)).prop)
	}
	require.NotNil(t, s)
	return s
}

// referenceDateTime is the reference "date-time" format check.
func referenceDateTime(tb testing.TB) func(string) bool {
	tb.Helper()
	f, err := (&schemaCompiler{formats: map[string]*formatCheck{}}).formatCheck("date-time")
	require.NoError(tb, err)
	require.NotNil(tb, f.ref.Format)
	return func(s string) bool { return f.ref.Format.Validate(s) == nil }
}

func TestPlainDateTimeIsASubsetOfTheReference(t *testing.T) {
	ref := referenceDateTime(t)
	tests := []struct {
		in    string
		plain bool
	}{
		{"2026-01-15T10:00:00Z", true},
		{"2026-01-15T10:00:00.123456789Z", true},
		{"2026-01-15T10:00:00+02:00", true},
		{"2026-01-15T23:59:59-23:59", true},
		{"2024-02-29T00:00:00Z", true},
		{"2000-02-29T00:00:00Z", true},
		{"1900-02-29T00:00:00Z", false},
		{"2025-02-29T00:00:00Z", false},
		{"2026-04-31T00:00:00Z", false},
		{"2026-00-10T00:00:00Z", false},
		{"2026-13-10T00:00:00Z", false},
		{"2026-01-00T00:00:00Z", false},
		{"2026-01-15T24:00:00Z", false},
		{"2026-01-15T10:60:00Z", false},
		{"2016-12-31T23:59:60Z", false}, // a leap second: the reference decides
		{"2026-01-15t10:00:00z", false}, // lower case: the reference decides
		{"2026-01-15T10:00:00.Z", false},
		{"2026-01-15T10:00:00", false},
		{"2026-01-15T10:00:00+2:00", false},
		{"2026-01-15T10:00:00+24:00", false},
		{"2026-01-15T10:00:00+02:60", false},
		{"2026-01-15T10:00:00+02:00Z", false},
		{"2026-01-15 10:00:00Z", false},
		{"+026-01-15T10:00:00Z", false},
		{"2026-01-15T1a:00:00Z", false},
		{"", false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			assert.Equal(t, tt.plain, plainDateTime([]byte(tt.in)))
			if tt.plain {
				assert.True(t, ref(tt.in), "the reference rejects a plain date-time")
			}
		})
	}
}

func FuzzPlainDateTime(f *testing.F) {
	for _, s := range []string{"2026-01-15T10:00:00Z", "2024-02-29T23:59:59.5+14:00", "2016-12-31T23:59:60Z", "2026-01-15t10:00:00z"} {
		f.Add(s)
	}
	ref := referenceDateTime(f)
	f.Fuzz(func(t *testing.T, s string) {
		if plainDateTime([]byte(s)) && !ref(s) {
			t.Fatalf("plain date-time %q rejected by the reference", s)
		}
	})
}

// TestNullableUnion checks the shortcut of anyOf [{"type": "null"}, X]: it
// is taken for either order, not for a union with another keyword, and
// every verdict matches the reference validator.
func TestNullableUnion(t *testing.T) {
	x := `{"type":"string","minLength":2}`
	for _, tc := range []struct {
		schema   string
		shortcut bool
	}{
		{`{"anyOf":[{"type":"null"},` + x + `]}`, true},
		{`{"anyOf":[` + x + `,{"type":"null"}],"description":"annotations are not keywords"}`, true},
		{`{"anyOf":[{"type":"null"},` + x + `],"maxLength":3}`, false},
		{`{"anyOf":[{"type":["null","number"]},` + x + `]}`, false},
		{`{"anyOf":[{"type":"null"},` + x + `,{"type":"boolean"}]}`, false},
	} {
		doc, err := jsonschema.UnmarshalJSON(strings.NewReader(tc.schema))
		require.NoError(t, err)
		fs, errs := compileFast(doc, "")
		require.NoError(t, errs[0], tc.schema)
		assert.Equal(t, tc.shortcut, fs[0].nullOr != nil, tc.schema)
		c := newCompiler()
		require.NoError(t, c.AddResource("mem://s.json", doc))
		ref, err := c.Compile("mem://s.json")
		require.NoError(t, err)
		for _, v := range []string{`null`, `"ab"`, `"abcd"`, `"a"`, `1`, `true`, `{}`} {
			var tp wire.Tape
			require.True(t, tp.Parse([]byte(v)))
			valid, sure := fs[0].check(&tp)
			require.True(t, sure, v)
			inst, err := jsonschema.UnmarshalJSON(strings.NewReader(v))
			require.NoError(t, err)
			assert.Equal(t, ref.Validate(inst) == nil, valid, "%s against %s", v, tc.schema)
		}
	}
}

// TestNullableUnionCycle checks that unions of null with each other in a
// cycle end: null is valid, anything else is left to the reference.
func TestNullableUnionCycle(t *testing.T) {
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(`{"$ref":"#/$defs/a","$defs":{` +
		`"a":{"anyOf":[{"type":"null"},{"$ref":"#/$defs/b"}]},"b":{"anyOf":[{"$ref":"#/$defs/a"},{"type":"null"}]}}}`))
	require.NoError(t, err)
	fs, errs := compileFast(doc, "")
	require.NoError(t, errs[0])
	require.NotNil(t, fs[0].nullOr)
	require.NotNil(t, fs[0].nullOr.nullOr)
	for v, want := range map[string][2]bool{`null`: {true, true}, `1`: {false, false}, `"x"`: {false, false}} {
		var tp wire.Tape
		require.True(t, tp.Parse([]byte(v)))
		valid, sure := fs[0].check(&tp)
		assert.Equal(t, want, [2]bool{valid, sure}, v)
	}
}
