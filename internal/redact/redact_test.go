package supervaizer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSecretNeverFormats proves a key held by the SDK cannot leak through fmt
// (any verb, also inside structs), slog or JSON.
func TestSecretNeverFormats(t *testing.T) {
	const key = "super-secret-key-value"
	acct, err := NewAccount(AccountConfig{APIURL: "https://studio.example.com", WorkspaceID: "ws-1", APIKey: key})
	require.NoError(t, err)
	holder := struct {
		A *Account
		K apiKeys
	}{acct, newAPIKeys([]apiKey{{key: key, scope: ScopeWrite}})}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%d"} {
		assert.NotContains(t, fmt.Sprintf(verb, holder), key, verb)
		assert.NotContains(t, fmt.Sprintf(verb, holder.K), key, verb)
	}
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("x", "account", acct, "keys", holder.K, "raw", newSecret(key))
	assert.NotContains(t, buf.String(), key)
	b, err := json.Marshal(map[string]any{"k": newSecret(key)})
	require.NoError(t, err)
	assert.NotContains(t, string(b), key)
	assert.Equal(t, key, holder.K.primary.value(), "the value itself is kept for the code that needs it")
}
