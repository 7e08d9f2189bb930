package contracts

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
		// Invalid UTF-8 reads as encoding/json reads it: each such byte is U+FFFD.
		{"{\"a\":1,\"\xff\":[{\"k\":1,\"k\":2}]}", []string{"\ufffd", "0", "k"}},
		{"{\"\xff\":1,\"\xfe\":2}", []string{"\ufffd"}},
		{"{\"\xff\":1,\"\xff\xfe\":2,\"\ufffd\ufffd\ufffd\":3}", nil},
		{"{\"\xff\":1,\"\ufffd\":2}", []string{"\ufffd"}},
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
// a repeated key exactly when encoding/json's decoder reads some key twice in
// one object, and the reported key is then one that repeats in its object.
func FuzzDuplicateKey(f *testing.F) {
	f.Add([]byte(`{"a":1,"a":2}`))
	f.Add([]byte(`{"a":[{"b":{"c":1}}],"d":"e"}`))
	f.Add([]byte(`{"x":{"\u0061":1,"a":2},"y":[{"k":1,"k":1}]}`))
	f.Add([]byte("{\"\xff\":1,\"\xfe\":{\"\xef\xbf\xbd\":[]}}"))
	f.Fuzz(func(t *testing.T, doc []byte) {
		loc, found := duplicateKey(doc)
		if !found {
			assert.Nil(t, loc)
		}
		if !json.Valid(doc) {
			assert.False(t, found)
			return
		}
		want := repeatedByDecoder(t, doc)
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

// repeatedByDecoder reports whether encoding/json's decoder reads some key
// twice in one object of doc, a valid JSON document.
func repeatedByDecoder(t *testing.T, doc []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(doc))
	repeated := false
	var value func()
	value = func() {
		tok, err := dec.Token()
		require.NoError(t, err)
		switch tok {
		case json.Delim('{'):
			seen := map[string]bool{}
			for dec.More() {
				k, err := dec.Token()
				require.NoError(t, err)
				repeated = repeated || seen[k.(string)]
				seen[k.(string)] = true
				value()
			}
		case json.Delim('['):
			for dec.More() {
				value()
			}
		default:
			return
		}
		_, err = dec.Token() // the closing delimiter
		require.NoError(t, err)
	}
	value()
	return repeated
}
