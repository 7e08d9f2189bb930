package fold

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestKey(t *testing.T) {
	for _, tc := range []struct{ a, b string }{
		{"topic_id", "TOPIC_ID"}, {"topic_id", "Topic_Id"},
		{"s", "\u017f"}, // long s folds with s, as in encoding/json
		{"k", "\u212a"}, // Kelvin sign folds with k
	} {
		assert.Equal(t, Key(tc.a), Key(tc.b), "%q ~ %q", tc.a, tc.b)
	}
	assert.NotEqual(t, Key("topic_id"), Key("topic-id"))
	assert.Equal(t, strings.ToUpper("abc"), Key("abc"), "ASCII folds to upper case")
}
