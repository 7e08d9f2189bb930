package cardcheck

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cardV10 is an A2A 1.0 card in its JSON form.
const cardV10 = `{
  "name": "Recipe Agent", "description": "Finds recipes.", "version": "1.0.0",
  "supportedInterfaces": [{"url": "https://a.example/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0", "tenant": "t"}],
  "provider": {"organization": "Example", "url": "https://a.example"},
  "capabilities": {"streaming": true, "extensions": [{"uri": "u", "required": true}], "extendedAgentCard": false},
  "securitySchemes": {"k": {"apiKeySecurityScheme": {"location": "header", "name": "X-API-Key"}}},
  "securityRequirements": [{"schemes": {"k": {"list": []}}}],
  "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
  "skills": [{"id": "s", "name": "S", "description": "d", "tags": ["t"], "securityRequirements": [{"schemes": {"k": {"list": ["r"]}}}]}],
  "signatures": [{"protected": "e30", "signature": "c2ln"}],
  "iconUrl": "https://a.example/i.png", "documentationUrl": "https://a.example/docs"
}`

func TestDecodeStrictMirrorsBothVersions(t *testing.T) {
	var v10 AgentCardV10
	require.NoError(t, DecodeStrict([]byte(cardV10), &v10))
	assert.Equal(t, []AgentInterfaceV10{{URL: "https://a.example/a2a", ProtocolBinding: "JSONRPC", ProtocolVersion: "1.0", Tenant: "t"}}, v10.SupportedInterfaces)
	assert.Equal(t, []string{"r"}, v10.Skills[0].SecurityRequirements[0].Schemes["k"].List)

	var v03 AgentCardV03
	require.NoError(t, DecodeStrict([]byte(fullCard), &v03, "legacy_member"))
	assert.Equal(t, SecuritySchemeV03{Type: "apiKey", In: "header", Name: "X-API-Key", Description: "d"}, v03.SecuritySchemes["apiKey"])
	assert.Equal(t, []map[string][]string{{"apiKey": {}}, {"oauth": {"read"}}}, v03.Security)
	assert.Equal(t, "JSONRPC", v03.AdditionalInterfaces[0].Transport)
}

func TestDecodeStrictRejects(t *testing.T) {
	tests := []struct {
		name    string
		card    string
		out     any
		allowed []string
	}{
		{"a 0.3 card member in a 1.0 card", fullCard, &AgentCardV10{}, []string{"legacy_member"}},
		{"a member no version defines", fullCard, &AgentCardV03{}, nil},
		{"a 1.0 card as 0.3", cardV10, &AgentCardV03{}, nil},
		{"an unknown interface member", `{"supportedInterfaces": [{"url": "u", "transport": "JSONRPC"}]}`, &AgentCardV10{}, nil},
		{"an unknown skill member", `{"skills": [{"id": "s", "security": []}]}`, &AgentCardV10{}, nil},
		{"an unknown capability", `{"capabilities": {"stateTransitionHistory": true}}`, &AgentCardV10{}, nil},
		{"a protocol version that is a number", `{"supportedInterfaces": [{"url": "u", "protocolVersion": 0.3}]}`, &AgentCardV10{}, nil},
		{"interfaces that are an object", `{"supportedInterfaces": {"url": "u"}}`, &AgentCardV10{}, nil},
		{"scopes that are a string", `{"security": [{"apiKey": "none"}]}`, &AgentCardV03{}, nil},
		{"a security scheme with a 1.0 member", `{"securitySchemes": {"k": {"type": "apiKey", "location": "header"}}}`, &AgentCardV03{}, nil},
		{"not an object", `[]`, &AgentCardV03{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Error(t, DecodeStrict([]byte(tt.card), tt.out, tt.allowed...))
		})
	}
}

func TestDecodeSupervaizerCardAllowsOnlyTheOtherVersionAndLegacyMembers(t *testing.T) {
	card := map[string]any{
		"name": "A", "description": "", "url": "http://a/a2a", "version": "1", "protocolVersion": "0.3.0",
		"preferredTransport": "JSONRPC", "capabilities": map[string]any{},
		"supportedInterfaces": []any{map[string]any{"url": "http://a/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "0.3.0"}},
		"defaultInputModes":   []any{}, "defaultOutputModes": []any{}, "skills": []any{},
		"security": []any{map[string]any{"apiKey": []any{}}}, "developer": map[string]any{"name": "x"},
	}
	b, err := json.Marshal(card)
	require.NoError(t, err)
	v10, v03, err := DecodeSupervaizerCard(b)
	require.NoError(t, err)
	assert.Equal(t, "0.3.0", v10.SupportedInterfaces[0].ProtocolVersion)
	assert.Equal(t, "http://a/a2a", v03.URL)

	card["additionalInterfaces"] = []any{}
	b, err = json.Marshal(card)
	require.NoError(t, err)
	_, _, err = DecodeSupervaizerCard(b)
	assert.Error(t, err, "a 0.3 member the 1.0 view does not allow")
}
