package contracts_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/contracts"
)

type embeddedBase struct {
	Status string   `json:"status" sv:"enum=success|fail"`
	Notes  string   `json:"notes,omitempty"`
	Tags   []string `json:"tags,omitempty"`
}

// EmbeddedDeep is exported: encoding/json cannot allocate an embedded
// pointer to an unexported struct.
type EmbeddedDeep struct {
	Level string `json:"level,omitempty"`
}

// withEmbedded embeds a struct (its fields promoted), a pointer to one, and
// redeclares a promoted key (the shallower field wins).
type withEmbedded struct {
	embeddedBase
	*EmbeddedDeep
	Tags  int    `json:"tags"` // hides embeddedBase.Tags
	Named string `json:"named,omitempty"`
	Plain string // keyed by its Go name
}

// TestInputPromotesEmbeddedFields: the derived schema has the keys
// encoding/json decodes: an embedded struct's fields promoted, a shallower
// field hiding a deeper one, two at the same depth hiding each other.
func TestInputPromotesEmbeddedFields(t *testing.T) {
	iv, err := contracts.NewInputValidator(reflect.TypeFor[withEmbedded]())
	require.NoError(t, err)
	def := rootDef(t, iv.Schema())
	props := def["properties"].(map[string]any)
	assert.ElementsMatch(t, []string{"status", "notes", "level", "tags", "named", "Plain"}, keys(props))
	assert.Equal(t, map[string]any{"type": "integer"}, props["tags"], "the shallower tags wins")
	assert.ElementsMatch(t, []any{"Plain", "status", "tags"}, def["required"])

	tests := []struct {
		name, doc string
		want      []string // problem paths and rules; none: valid
	}{
		{"promoted keys", `{"status":"success","notes":"n","level":"l","tags":3,"Plain":"p"}`, nil},
		{"a promoted required key missing", `{"tags":3,"Plain":"p"}`, []string{"/status required"}},
		{"a promoted enum", `{"status":"maybe","tags":3,"Plain":"p"}`, []string{"/status enum"}},
		{"the hidden deeper type", `{"status":"fail","tags":["a"],"Plain":"p"}`, []string{"/tags type"}},
		{"the embedded type's own name is no key", `{"status":"fail","tags":1,"Plain":"p","embeddedBase":{}}`, []string{" additionalProperties"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, p := range iv.Validate([]byte(tt.doc)) {
				got = append(got, p.Path[len("/input"):]+" "+p.Type)
			}
			assert.Equal(t, tt.want, got)
			if tt.want == nil { // what validates decodes into the type
				var v withEmbedded
				require.NoError(t, json.Unmarshal([]byte(tt.doc), &v))
				assert.Equal(t, "success", v.Status)
				assert.Equal(t, "l", v.Level)
			}
		})
	}
}

// sharedA and sharedB both have the key "Shared" (no json tag: go vet
// reports a json tag repeated across embedded structs).
type sharedA struct{ Shared string }

type sharedB struct{ Shared int }

type conflicting struct {
	sharedA
	sharedB
	Kept string `json:"kept"`
}

type deepUntagged struct{ Level string }

type twiceLeft struct{ deepUntagged }

type twiceRight struct{ deepUntagged }

// embedsTwice reaches deepUntagged twice at the same depth.
type embedsTwice struct {
	twiceLeft
	twiceRight
	Own string `json:"own"`
}

// TestInputDropsAmbiguousKeys: two promoted fields with the same key at the
// same depth hide each other, as encoding/json ignores both, including the
// fields of one struct embedded twice at the same depth.
func TestInputDropsAmbiguousKeys(t *testing.T) {
	iv, err := contracts.NewInputValidator(reflect.TypeFor[conflicting]())
	require.NoError(t, err)
	props := rootDef(t, iv.Schema())["properties"].(map[string]any)
	assert.Equal(t, []string{"kept"}, keys(props))
	var v conflicting
	require.NoError(t, json.Unmarshal([]byte(`{"kept":"k","Shared":"x"}`), &v))
	assert.Empty(t, v.sharedA.Shared, "encoding/json ignores the ambiguous key too")

	iv, err = contracts.NewInputValidator(reflect.TypeFor[embedsTwice]())
	require.NoError(t, err)
	props = rootDef(t, iv.Schema())["properties"].(map[string]any)
	assert.Equal(t, []string{"own"}, keys(props))
	var w embedsTwice
	require.NoError(t, json.Unmarshal([]byte(`{"own":"o","Level":"x"}`), &w))
	assert.Empty(t, w.twiceLeft.Level, "encoding/json ignores the ambiguous key too")
}

type answerItem struct {
	URL   string `json:"url" sv:"nonblank"`
	Title string `json:"title,omitempty"`
}

type answerDoc struct {
	Status string       `json:"status" sv:"enum=success|fail"`
	Count  int          `json:"count,omitempty" sv:"minimum=1"`
	Items  []answerItem `json:"items,omitempty"`
	Note   *string      `json:"note,omitempty" sv:"nonull"`
	Score  *float64     `json:"score" sv:"required"`
}

// TestAnswerValidator: an answer's optional fields also accept null (read as
// unset when decoded); required ones do not; problems are located at the
// answer's own keys.
func TestAnswerValidator(t *testing.T) {
	av, err := contracts.NewAnswerValidator(reflect.TypeFor[answerDoc]())
	require.NoError(t, err)
	iv, err := contracts.NewInputValidator(reflect.TypeFor[answerDoc]())
	require.NoError(t, err)
	tests := []struct {
		name, doc     string
		answer, input []string // problems (path rule); none: valid
	}{
		{"every optional field null", `{"status":"success","count":null,"items":null,"note":null,"score":null}`,
			nil, []string{"/input/count type", "/input/items type", "/input/note type"}},
		{"an optional nested field null", `{"status":"success","items":[{"url":"u","title":null}],"score":1}`,
			nil, []string{"/input/items/0/title type"}},
		{"a required field null", `{"status":null,"score":1}`, []string{"/status type"}, []string{"/input/status type"}},
		{"a required nested field null", `{"status":"fail","items":[{"url":null}],"score":1}`,
			[]string{"/items/0/url type"}, []string{"/input/items/0/url type"}},
		{"a rule of a present optional field", `{"status":"fail","count":0,"score":1}`, []string{"/count minimum"}, []string{"/input/count minimum"}},
		{"an unknown key", `{"status":"fail","score":1,"extra":1}`, []string{" additionalProperties"}, []string{"/input additionalProperties"}},
		{"not JSON", `{`, []string{" json"}, []string{"/input json"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.answer, problemLines(av.Validate([]byte(tt.doc))), "answer")
			assert.Equal(t, tt.input, problemLines(iv.Validate([]byte(tt.doc))), "input: unchanged")
			if tt.answer == nil {
				var v answerDoc
				require.NoError(t, json.Unmarshal([]byte(tt.doc), &v))
				assert.Equal(t, "success", v.Status)
			}
		})
	}
	ps := av.Validate([]byte(`{"score":1}`))
	require.Len(t, ps, 1)
	assert.Equal(t, []any{"status"}, ps[0].Loc)
}

func problemLines(ps []contracts.Problem) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Path+" "+p.Type)
	}
	return out
}

func rootDef(t *testing.T, doc []byte) map[string]any {
	t.Helper()
	var s struct {
		Ref  string                    `json:"$ref"`
		Defs map[string]map[string]any `json:"$defs"`
	}
	require.NoError(t, json.Unmarshal(doc, &s))
	def, ok := s.Defs[s.Ref[len("#/$defs/"):]]
	require.True(t, ok, s.Ref)
	return def
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
