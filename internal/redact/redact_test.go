package redact

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSecretNeverFormats proves a secret cannot leak through fmt (any verb,
// also inside structs), slog or JSON, while Value still returns it.
func TestSecretNeverFormats(t *testing.T) {
	const key = "super-secret-key-value"
	holder := struct {
		S   Secret
		ptr *Secret
	}{New(key), nil}
	holder.ptr = &holder.S
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%d"} {
		assert.NotContains(t, fmt.Sprintf(verb, holder), key, verb)
		assert.NotContains(t, fmt.Sprintf(verb, holder.S), key, verb)
	}
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("x", "raw", New(key), "holder", holder)
	assert.NotContains(t, buf.String(), key)
	b, err := json.Marshal(map[string]any{"k": New(key)})
	require.NoError(t, err)
	assert.NotContains(t, string(b), key)
	assert.Equal(t, key, holder.S.Value(), "the value itself is kept for the code that needs it")
	assert.Empty(t, Secret{}.Value())
}

func TestTextHelpers(t *testing.T) {
	assert.Equal(t, "9f86d081884c", Fingerprint("test"))
	assert.True(t, HeaderSafe("Api-Key abc ~"))
	assert.False(t, HeaderSafe("a\nb"))
	assert.False(t, HeaderSafe("é"))
	assert.Equal(t, "x [REDACTED] y [REDACTED]", Mask("x k1 y k2", "k1", "", "k2"))
	assert.Equal(t, "héll…", Truncate("héllo", 4))
	assert.Equal(t, "héllo", Truncate("héllo", 5))
}
