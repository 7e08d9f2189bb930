package answer

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// FuzzLastObject holds the extraction to encoding/json's grammar: what it
// finds is one valid JSON object, and a text that is one JSON object (with
// white space around) is found whole.
func FuzzLastObject(f *testing.F) {
	for _, s := range []string{
		`{"a": 1}`, ` {"a": [1, {"b": "}"}]} `, `x {"a": 1} y {"b": 2} z`, `{"a": 1} {"b": `,
		`{"a": tru} {"b": -0.5e+3}`, `{"\u00e9\"": "\\"}`, `{{{`, `["{}"]`, "{\"a\":\"\x01\"}",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		found, ok := lastObject(text)
		if ok {
			require.True(t, strings.HasPrefix(found, "{"), "%q", found)
			require.True(t, json.Valid([]byte(found)), "%q from %q is not valid JSON", found, text)
			assert.True(t, strings.Contains(text, found))
		}
		trimmed := strings.Trim(text, " \t\r\n")
		if strings.HasPrefix(trimmed, "{") && json.Valid([]byte(trimmed)) {
			assert.Equal(t, trimmed, found)
		}
	})
}
