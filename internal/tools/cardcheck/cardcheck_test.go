package cardcheck

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fullCard uses every member both versions define, with valid values.
const fullCard = `{
  "name": "Recipe Agent", "description": "Finds recipes.", "url": "https://a.example/a2a", "version": "1.0.0",
  "protocolVersion": "0.3.0", "preferredTransport": "JSONRPC",
  "additionalInterfaces": [{"url": "https://a.example/a2a", "transport": "JSONRPC"}],
  "iconUrl": "https://a.example/i.png", "documentationUrl": "https://a.example/docs",
  "provider": {"organization": "Example", "url": "https://a.example"},
  "capabilities": {"streaming": false, "pushNotifications": false, "stateTransitionHistory": true,
    "extensions": [{"uri": "https://a.example/ext", "description": "d", "required": false, "params": {"k": [1, null]}}]},
  "defaultInputModes": ["application/json"], "defaultOutputModes": ["application/json"],
  "skills": [{"id": "s", "name": "S", "description": "d", "tags": ["t"], "examples": ["e"],
    "inputModes": ["text/plain"], "outputModes": ["text/plain"]}],
  "securitySchemes": {
    "apiKey": {"type": "apiKey", "in": "header", "name": "X-API-Key", "description": "d"},
    "bearer": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"},
    "oidc": {"type": "openIdConnect", "openIdConnectUrl": "https://a.example/.well-known/openid-configuration"},
    "oauth": {"type": "oauth2", "flows": {
      "authorizationCode": {"authorizationUrl": "https://a.example/auth", "tokenUrl": "https://a.example/token", "scopes": {"read": "Read"}},
      "clientCredentials": {"tokenUrl": "https://a.example/token", "scopes": {}},
      "implicit": {"authorizationUrl": "https://a.example/auth", "scopes": {}, "refreshUrl": "https://a.example/r"},
      "password": {"tokenUrl": "https://a.example/token", "scopes": {}}}}
  },
  "security": [{"apiKey": []}, {"oauth": ["read"]}],
  "supportsAuthenticatedExtendedCard": false,
  "legacy_member": {"anything": null}
}`

// cardCase is one change to fullCard and whether the result is a valid
// AgentCard of each version.
type cardCase struct {
	name   string
	change func(doc map[string]any)
	valid  map[string]bool
}

func both(valid bool) map[string]bool { return map[string]bool{"0.2.6": valid, "0.3.0": valid} }

func set(path []string, value any) func(map[string]any) {
	return func(doc map[string]any) {
		var cur any = doc
		for _, step := range path[:len(path)-1] {
			switch node := cur.(type) {
			case map[string]any:
				cur = node[step]
			case []any:
				cur = node[0]
			}
		}
		cur.(map[string]any)[path[len(path)-1]] = value
	}
}

func drop(path ...string) func(map[string]any) {
	return func(doc map[string]any) {
		parent := path[:len(path)-1]
		var cur any = doc
		for _, step := range parent {
			switch node := cur.(type) {
			case map[string]any:
				cur = node[step]
			case []any:
				cur = node[0]
			}
		}
		delete(cur.(map[string]any), path[len(path)-1])
	}
}

// cardCases covers every required member, wrong types at each level, the
// security scheme union and the members only 0.3.0 defines. An index step
// ("0") walks into the first item of an array.
var cardCases = []cardCase{
	{"unchanged", func(map[string]any) {}, both(true)},
	{"missing name", drop("name"), both(false)},
	{"missing description", drop("description"), both(false)},
	{"missing url", drop("url"), both(false)},
	{"missing version", drop("version"), both(false)},
	{"missing protocolVersion", drop("protocolVersion"), both(false)},
	{"missing capabilities", drop("capabilities"), both(false)},
	{"missing defaultInputModes", drop("defaultInputModes"), both(false)},
	{"missing defaultOutputModes", drop("defaultOutputModes"), both(false)},
	{"missing skills", drop("skills"), both(false)},
	{"optional members dropped", func(doc map[string]any) {
		for _, k := range []string{"preferredTransport", "additionalInterfaces", "iconUrl", "documentationUrl", "provider",
			"securitySchemes", "security", "supportsAuthenticatedExtendedCard", "legacy_member"} {
			delete(doc, k)
		}
		doc["capabilities"] = map[string]any{}
	}, both(true)},
	{"name is a number", set([]string{"name"}, json.Number("1")), both(false)},
	{"url is null", set([]string{"url"}, nil), both(false)},
	{"skills is null", set([]string{"skills"}, nil), both(false)},
	{"skills is an object", set([]string{"skills"}, map[string]any{}), both(false)},
	{"defaultInputModes holds a number", set([]string{"defaultInputModes"}, []any{json.Number("1")}), both(false)},
	{"capabilities is an array", set([]string{"capabilities"}, []any{}), both(false)},
	{"streaming is a string", set([]string{"capabilities", "streaming"}, "false"), both(false)},
	{"extension without uri", drop("capabilities", "extensions", "0", "uri"), both(false)},
	{"extension required is a string", set([]string{"capabilities", "extensions", "0", "required"}, "no"), both(false)},
	{"extension params is an array", set([]string{"capabilities", "extensions", "0", "params"}, []any{}), both(false)},
	{"skill without tags", drop("skills", "0", "tags"), both(false)},
	{"skill without id", drop("skills", "0", "id"), both(false)},
	{"skill tags is null", set([]string{"skills", "0", "tags"}, nil), both(false)},
	{"skill examples holds an object", set([]string{"skills", "0", "examples"}, []any{map[string]any{}}), both(false)},
	{"skill security", set([]string{"skills", "0", "security"}, []any{map[string]any{"apiKey": []any{}}}), both(true)},
	{"skill security of the wrong type", set([]string{"skills", "0", "security"}, "apiKey"), map[string]bool{"0.2.6": true, "0.3.0": false}},
	{"preferredTransport is a number", set([]string{"preferredTransport"}, json.Number("2")), both(false)},
	{"interface without transport", drop("additionalInterfaces", "0", "transport"), both(false)},
	{"provider without organization", drop("provider", "organization"), both(false)},
	{"supportsAuthenticatedExtendedCard is a string", set([]string{"supportsAuthenticatedExtendedCard"}, "true"), both(false)},
	{"api key in the body", set([]string{"securitySchemes", "apiKey", "in"}, "body"), both(false)},
	{"api key without name", drop("securitySchemes", "apiKey", "name"), both(false)},
	{"security scheme without type", drop("securitySchemes", "apiKey", "type"), both(false)},
	{"security scheme of an unknown type", set([]string{"securitySchemes", "apiKey", "type"}, "apikey"), both(false)},
	{"security scheme is a string", set([]string{"securitySchemes", "apiKey"}, "apiKey"), both(false)},
	{"http scheme without scheme", drop("securitySchemes", "bearer", "scheme"), both(false)},
	{"oauth2 without flows", drop("securitySchemes", "oauth", "flows"), both(false)},
	{"oauth2 flow without scopes", drop("securitySchemes", "oauth", "flows", "password", "scopes"), both(false)},
	{"oauth2 scope description is a number", set([]string{"securitySchemes", "oauth", "flows", "authorizationCode", "scopes", "read"}, json.Number("1")), both(false)},
	{"oauth2 metadata URL", set([]string{"securitySchemes", "oauth", "oauth2MetadataUrl"}, "https://a.example/m"), both(true)},
	{"oauth2 metadata URL of the wrong type", set([]string{"securitySchemes", "oauth", "oauth2MetadataUrl"}, true), map[string]bool{"0.2.6": true, "0.3.0": false}},
	{"openIdConnect without URL", drop("securitySchemes", "oidc", "openIdConnectUrl"), both(false)},
	{"mutual TLS scheme", set([]string{"securitySchemes", "mtls"}, map[string]any{"type": "mutualTLS"}), map[string]bool{"0.2.6": false, "0.3.0": true}},
	{"security requirement lists a number", set([]string{"security"}, []any{map[string]any{"apiKey": []any{json.Number("1")}}}), both(false)},
	{"security is an object", set([]string{"security"}, map[string]any{"apiKey": []any{}}), both(false)},
	{"signatures", set([]string{"signatures"}, []any{map[string]any{"protected": "e30", "signature": "c2ln", "header": map[string]any{"kid": "k"}}}), both(true)},
	{"signature without protected", set([]string{"signatures"}, []any{map[string]any{"signature": "c2ln"}}), map[string]bool{"0.2.6": true, "0.3.0": false}},
	{"unknown members anywhere", func(doc map[string]any) {
		doc["supportedInterfaces"] = []any{map[string]any{"url": "u", "protocolBinding": "JSONRPC", "protocolVersion": "0.3.0"}}
		doc["skills"].([]any)[0].(map[string]any)["x"] = json.Number("1")
		doc["capabilities"].(map[string]any)["extendedAgentCard"] = true
	}, both(true)},
}

// caseCard applies tc to a fresh copy of fullCard.
func caseCard(t *testing.T, tc cardCase) []byte {
	t.Helper()
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(fullCard), &doc))
	tc.change(doc)
	b, err := json.Marshal(doc)
	require.NoError(t, err)
	return b
}

func TestCheckCardShapes(t *testing.T) {
	for _, tc := range cardCases {
		t.Run(tc.name, func(t *testing.T) {
			card := caseCard(t, tc)
			for _, version := range Versions {
				err := Check(version, card)
				if tc.valid[version] {
					assert.NoError(t, err, version)
				} else {
					assert.Error(t, err, version)
				}
			}
		})
	}
}

func TestCheckCardReportsEveryProblemWithItsPath(t *testing.T) {
	card := `{"name": 1, "description": "d", "url": "u", "version": "1", "protocolVersion": "0.3.0",
		"capabilities": {"streaming": "no"}, "defaultInputModes": [], "defaultOutputModes": [],
		"skills": [{"id": "a", "name": "A", "description": "d", "tags": null}],
		"securitySchemes": {"k": {"type": "apiKey", "in": "body", "name": "X"}, "m": {"type": "mutualTLS"}}}`
	err := Check("0.2.6", []byte(card))
	require.Error(t, err)
	assert.Equal(t, `not an A2A 0.2.6 AgentCard:
$.name: want a string, got a number
$.capabilities.streaming: want a boolean, got a string
$.skills[0].tags: want an array, got null
$.securitySchemes.k.in: want one of ["cookie" "header" "query"], got "body"
$.securitySchemes.m.type: want one of ["apiKey" "http" "oauth2" "openIdConnect"], got "mutualTLS"`, err.Error())
}

func TestCheckCardRejectsWhatIsNotOneObject(t *testing.T) {
	for _, card := range []string{``, `null`, `[]`, `"card"`, `{"name":`, fullCard + ` {}`} {
		assert.Error(t, Check("0.3.0", []byte(card)), card)
	}
	assert.ErrorContains(t, Check("1.0", []byte(fullCard)), `unknown A2A version "1.0"`)
}

func TestValidatorsCheckEveryVersion(t *testing.T) {
	validators, err := Validators(os.Getenv(EnvSchemas))
	require.NoError(t, err)
	names := map[string]bool{}
	for _, v := range validators {
		names[v.Name] = true
		assert.NoError(t, v.Validate([]byte(fullCard)), v.Name)
		assert.Error(t, v.Validate([]byte(`{"name":"only"}`)), v.Name)
	}
	for _, version := range Versions {
		assert.True(t, names["A2A "+version+" structure"], version)
	}
}
