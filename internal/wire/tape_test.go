package wire

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseAgreesWithEncodingJSON(t *testing.T) {
	tests := []struct {
		doc   string
		valid bool // json.Valid and valid UTF-8
		plain bool
	}{
		{`{}`, true, true},
		{`[]`, true, true},
		{`"x"`, true, true},
		{`-0.5e+3`, true, true},
		{` {"a" : [ true , false , null ] } `, true, true},
		{`{"a":"\u00e9\n"}`, true, true},
		{`{"a":1,"a":2}`, true, false}, // repeated key: encoding/json keeps the last
		{`{"\u0061":1}`, true, false},  // escaped key
		{`{"a":1,"\u0061":2}`, true, false},
		{strings.Repeat("[", 300) + strings.Repeat("]", 300), true, false}, // deeper than PlainDepth
		{strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth), true, false},
		{strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1), false, false},
		{"{\"a\":\"\xff\"}", false, false}, // invalid UTF-8: encoding/json would replace it
		{`{"a":1}x`, false, false},         // trailing data
		{`{"a":01}`, false, false},         // leading zero
		{`{"a":1.}`, false, false},         // no fraction digits
		{`{"a":"\x"}`, false, false},       // unknown escape
		{"{\"a\":\"\x01\"}", false, false}, // control character
		{`[1,]`, false, false},             // trailing comma
		{`{"a" 1}`, false, false},
		{``, false, false},
	}
	for _, tt := range tests {
		name := tt.doc
		if len(name) > 40 {
			name = name[:40]
		}
		t.Run(name, func(t *testing.T) {
			tp := Get()
			defer Put(tp)
			assert.Equal(t, tt.valid, json.Valid([]byte(tt.doc)) && utf8.ValidString(tt.doc))
			assert.Equal(t, tt.valid, tp.Parse([]byte(tt.doc)))
			if tt.valid {
				assert.Equal(t, tt.plain, tp.Plain())
			}
		})
	}
}

func TestRepeatedKeysInLargeObject(t *testing.T) {
	var b strings.Builder
	b.WriteString("{")
	for i := range 40 {
		b.WriteString(`"k` + strconv.Itoa(i) + `":1,`)
	}
	b.WriteString(`"k7":2}`)
	tp := Get()
	defer Put(tp)
	require.True(t, tp.Parse([]byte(b.String())))
	assert.True(t, tp.Repeated)
	var repeated []string
	tp.RepeatedKeys(0, func(m int32) bool { repeated = append(repeated, string(tp.Str(m))); return true })
	assert.Equal(t, []string{"k7"}, repeated)
	require.True(t, tp.Parse([]byte(strings.Replace(b.String(), `"k7":2`, `"k40":2`, 1))))
	assert.False(t, tp.Repeated)
}

func TestRepeatedKeys(t *testing.T) {
	tests := []struct {
		doc  string
		want []string // keys of the repeating members of the root object, in order
	}{
		{`{"a":1,"b":2}`, nil},
		{`{"a":1,"a":2,"a":3}`, []string{"a", "a"}},
		{`{"b":1,"a":2,"\u0062":3}`, []string{"b"}},
		{`{"x":{"y":1,"y":2}}`, nil}, // nested: not the root's
	}
	for _, tt := range tests {
		tp := Get()
		require.True(t, tp.Parse([]byte(tt.doc)), tt.doc)
		var got []string
		tp.RepeatedKeys(0, func(m int32) bool { got = append(got, string(tp.Str(m))); return true })
		assert.Equal(t, tt.want, got, tt.doc)
		Put(tp)
	}
}

func TestMember(t *testing.T) {
	tp := Get()
	defer Put(tp)
	require.True(t, tp.Parse([]byte(`{"a":1,"b":{"c":"x"},"\u0064":true,"a":[2]}`)))
	v, ok := tp.Member(0, []byte("a"))
	require.True(t, ok)
	assert.Equal(t, `[2]`, string(tp.Raw(v)), "the last occurrence, as encoding/json")
	v, ok = tp.Member(0, []byte("d"))
	require.True(t, ok, "keys are compared after unescaping")
	assert.Equal(t, True, tp.Nodes[v].Kind)
	_, ok = tp.Member(0, []byte("c"))
	assert.False(t, ok)
	b, _ := tp.Member(0, []byte("b"))
	c, ok := tp.Member(b, []byte("c"))
	require.True(t, ok)
	assert.Equal(t, "x", string(tp.Str(c)))
	_, ok = tp.Member(c, []byte("c"))
	assert.False(t, ok, "not an object")
}

// FuzzParse compares Parse with encoding/json: the same documents are
// valid, strings decode to the same text and Member finds what
// encoding/json decodes.
// maxOracleObject is the size of the largest object FuzzParse decodes
// again with encoding/json: each object's members are decoded once per
// enclosing object, which makes deep nesting quadratic (depth 2,000 took
// 10 s) and stalled the fuzzer; the parser itself reads such a document in
// about a millisecond.
const maxOracleObject = 4 << 10

func FuzzParse(f *testing.F) {
	for _, s := range []string{`{"a":1,"a":2}`, `{"\u0061":"\ud83d\ude00"}`, `[1,-2.5e3,"x",null,true,false,{}]`, `{"a":{"b":[1,{"c":2}]}}`, "\"\xff\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		tp := Get()
		defer Put(tp)
		valid := json.Valid(doc) && utf8.Valid(doc)
		require.Equal(t, valid, tp.Parse(doc), "%q", doc)
		if !valid {
			return
		}
		for i := range tp.Nodes {
			nd := tp.Nodes[i]
			switch nd.Kind {
			case String:
				var s string
				require.NoError(t, json.Unmarshal(tp.Raw(int32(i)), &s))
				assert.Equal(t, s, string(tp.Str(int32(i))))
			case Object:
				if nd.End-nd.Start > maxOracleObject {
					continue
				}
				var m map[string]json.RawMessage
				require.NoError(t, json.Unmarshal(tp.Raw(int32(i)), &m))
				for k, want := range m {
					v, ok := tp.Member(int32(i), []byte(k))
					require.True(t, ok, k)
					var a, b any
					require.NoError(t, json.Unmarshal(want, &a))
					require.NoError(t, json.Unmarshal(tp.Raw(v), &b))
					assert.Equal(t, a, b, k)
				}
				assert.Equal(t, len(m) < int(nd.N), tp.Repeated && tp.firstRepeated(int32(i)) > 0)
			}
		}
	})
}

// TestBuilderMatchesParse builds the tape of {"a":[1,"x\n",null],"b":{"c":true,"c":false}}
// as a writer does and compares it with Parse's.
func TestBuilderMatchesParse(t *testing.T) {
	const doc = `{"a":[1,"x\n",null],"b":{"c":true,"c":false}}`
	var b Tape
	b.Begin()
	src := []byte(doc)
	obj := b.Open(Object, 0)
	b.AddKey(1, 4, false)
	arr := b.Open(Array, 5)
	require.True(t, b.ParseValue(src[:7], 6))
	b.Leaf(String, 8, 13, true)
	b.Leaf(Null, 14, 18, false)
	b.Close(arr, src[:19], 3)
	b.AddKey(20, 23, false)
	require.True(t, b.ParseValue(src[:len(doc)-1], 24))
	b.Close(obj, src, 2)
	b.Finish(src)

	var p Tape
	require.True(t, p.Parse(src))
	assert.Equal(t, p.Nodes, b.Nodes)
	assert.Equal(t, []any{p.Depth, p.Repeated, p.EscapedKey}, []any{b.Depth, b.Repeated, b.EscapedKey})
	assert.True(t, b.Repeated)

	b.Begin()
	assert.False(t, b.ParseValue([]byte("[\"\xff\"]"), 0), "invalid UTF-8")
	b.Begin()
	assert.False(t, b.ParseValue([]byte(`[1] 2`), 0), "more than one value")
}

// firstRepeated returns the first member of the object at obj that repeats
// an earlier key, or 0.
func (t *Tape) firstRepeated(obj int32) int32 {
	var first int32
	t.RepeatedKeys(obj, func(m int32) bool { first = m; return false })
	return first
}
