package contracts

import (
	"encoding/json"
	"reflect"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/internal/wire"
)

func TestDuplicateKey(t *testing.T) {
	tests := []struct {
		doc  string
		want []string // nil: no duplicate
	}{
		{`{"a":1,"b":2}`, nil},
		{`{"a":1,"a":2}`, []string{"a"}},
		{`{"action":"x","\u0061ction":"y"}`, []string{"action"}},
		{`{"a":{"b":1,"c":{"d":1,"d":2}}}`, []string{"a", "c", "d"}},
		{`{"a":[{"k":1},{"k":1,"k":2}]}`, []string{"a", "1", "k"}},
		{`{"a":[1,2,{"x":[{"y":1}]}],"b":{"y":1}}`, nil},
		{`[{"a":1},{"a":1}]`, nil},
		{`{"a":"a","b":"a"}`, nil},
		{`not json`, nil},
	}
	for _, tt := range tests {
		loc, found := duplicateKey([]byte(tt.doc))
		assert.Equal(t, tt.want != nil, found, tt.doc)
		assert.Equal(t, tt.want, loc, tt.doc)
	}
}

// TestDuplicateKeyRefusedInRequests: the bootstrap action must not be smuggled
// past a proxy that reads the first "action" while the SDK reads the last.
func TestDuplicateKeyRefusedInRequests(t *testing.T) {
	raw := []byte(`{"request_id":"r","actor":{"user_id":"u"},"workspace":{"id":"w"},"mission_id":"m","agent_slug":"a",` +
		`"surface":"s","action":"job.sync","action":"workspace_binding.options"}`)
	var req ActionRequest
	err := DefaultValidator().Decode(ModelActionRequest, raw, &req)
	require.Error(t, err)
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	assert.Equal(t, []Problem{{Loc: []any{"action"}, Msg: "the key appears twice in the same object", Type: "duplicate_key", Path: "/action"}}, ve.Problems)
}

// FuzzDuplicateKey compares duplicateKey with encoding/json: a document has
// a repeated key exactly when some object decodes to fewer keys than it has
// members, and the reported key is then one that repeats in its object.
func FuzzDuplicateKey(f *testing.F) {
	f.Add([]byte(`{"a":1,"a":2}`))
	f.Add([]byte(`{"a":[{"b":{"c":1}}],"d":"e"}`))
	f.Add([]byte(`{"x":{"\u0061":1,"a":2},"y":[{"k":1,"k":1}]}`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		loc, found := duplicateKey(doc)
		if !found {
			assert.Nil(t, loc)
		}
		tp := wire.Get()
		defer wire.Put(tp)
		if !tp.Parse(doc) {
			assert.False(t, found)
			return
		}
		want := false
		for i := range tp.Nodes {
			if tp.Nodes[i].Kind != wire.Object {
				continue
			}
			var m map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(tp.Raw(int32(i)), &m))
			if len(m) < int(tp.Nodes[i].N) {
				want = true
			}
		}
		assert.Equal(t, want, found, "%q", doc)
		if found {
			// The location names a value that encoding/json finds, under a
			// key that occurs twice in its object.
			var v any
			require.NoError(t, json.Unmarshal(doc, &v))
			for _, k := range loc[:len(loc)-1] {
				switch c := v.(type) {
				case map[string]any:
					v = c[k]
				case []any:
					i, err := strconv.Atoi(k)
					require.NoError(t, err)
					v = c[i]
				default:
					t.Fatalf("location %q does not lead to an object in %q", loc, doc)
				}
			}
			_, isObject := v.(map[string]any)
			assert.True(t, isObject, "%q in %q", loc, doc)
		}
	})
}

func TestDuplicateKeyRefusedInInput(t *testing.T) {
	type in struct {
		TopicID string `json:"topic_id"`
	}
	iv, err := NewInputValidator(reflect.TypeFor[in]())
	require.NoError(t, err)
	ps := iv.Validate([]byte(`{"topic_id":"a","topic_id":"b"}`))
	require.Len(t, ps, 1)
	assert.Equal(t, Problem{Loc: []any{"input", "topic_id"}, Msg: "the key appears twice in the same object", Type: "duplicate_key", Path: "/input/topic_id"}, ps[0])
}
