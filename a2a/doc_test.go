package a2a_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/a2a"
)

// TestPackageDocCard runs the package comment's example as written: the card
// builds and encodes, and an invalid input is refused.
func TestPackageDocCard(t *testing.T) {
	var got []byte
	build := func(registrationJSON json.RawMessage) error {
		card, err := a2a.NewAgentCard(a2a.CardInput{
			Name: "Research Agent", Version: "1.0.0", Slug: "research-agent",
			BaseURL:      "https://research.example.com",
			Registration: registrationJSON, // the v2 registration object
			Actions:      []a2a.ActionInfo{{ID: "job.start", Scope: "job", Mutating: true}},
		})
		if err != nil {
			return err // invalid input, or a card over MaxCardBytes
		}
		body, err := json.Marshal(card) // serve at a2a.CardPath("research-agent")
		got = body
		return err
	}
	require.NoError(t, build(json.RawMessage(`{"supervaizer_contract_version": 2}`)))
	assert.Contains(t, string(got), `"url":"https://research.example.com/a2a"`)
	assert.Error(t, build(json.RawMessage(`[`)), "a registration that is not a JSON object")
}
