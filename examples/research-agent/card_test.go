package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/a2a"
)

// cardSchemas compiles #/definitions/AgentCard of the A2A 0.2.6 and 0.3.0
// schemas, read from ../shared/schemas/a2a beside the repository root. A
// missing schema fails the test: the card's validity is not optional.
func cardSchemas(t *testing.T) map[string]*jsonschema.Schema {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		require.NotEqual(t, parent, dir, "go.mod not found above %s", dir)
		dir = parent
	}
	schemas := map[string]*jsonschema.Schema{}
	for _, name := range []string{"a2a-0.2.6.schema.json", "a2a-0.3.0.schema.json"} {
		path := filepath.Join(dir, "..", "shared", "schemas", "a2a", name)
		raw, err := os.ReadFile(path)
		require.NoError(t, err, "the A2A JSON Schema %s is required (expected at ../shared/schemas/a2a beside the repository root)", name)
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		require.NoError(t, err, name)
		c := jsonschema.NewCompiler()
		require.NoError(t, c.AddResource(path, doc), name)
		sch, err := c.Compile(path + "#/definitions/AgentCard")
		require.NoError(t, err, name)
		schemas[name] = sch
	}
	return schemas
}

// fetch GETs url and returns the JSON body.
func fetch(t *testing.T, url string) []byte {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", url, body)
	assert.Contains(t, resp.Header.Get("Content-Type"), "application/json", url)
	return body
}

// TestAgentCardValidatesAgainstA2ASchemas validates every card the running
// agent serves against both A2A schemas.
func TestAgentCardValidatesAgainstA2ASchemas(t *testing.T) {
	schemas := cardSchemas(t)
	h := newHarness(t)
	for _, path := range []string{
		a2a.WellKnownCardPath, a2a.WellKnownCardPathV02,
		a2a.CardPath(agentSlug), a2a.VersionedCardPath(agentVersion, agentSlug),
	} {
		body := fetch(t, h.srv.URL+path)
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
		require.NoError(t, err, path)
		for name, sch := range schemas {
			var verr *jsonschema.ValidationError
			if err := sch.Validate(inst); errors.As(err, &verr) {
				t.Errorf("%s does not validate against %s:\n%v", path, name, verr)
			} else {
				assert.NoError(t, err, "%s against %s", path, name)
			}
		}
	}
}

// TestDiscoveryLikeA2AClients resolves the agent the way a2a-go's card
// resolver does: GET <base>/.well-known/agent-card.json, decode the card, then
// talk to card.url with the preferred transport.
func TestDiscoveryLikeA2AClients(t *testing.T) {
	h := newHarness(t)
	var card struct {
		Name               string `json:"name"`
		URL                string `json:"url"`
		ProtocolVersion    string `json:"protocolVersion"`
		PreferredTransport string `json:"preferredTransport"`
		Capabilities       struct {
			Extensions []struct {
				URI string `json:"uri"`
			} `json:"extensions"`
		} `json:"capabilities"`
		DefaultInputModes []string `json:"defaultInputModes"`
		Skills            []struct {
			ID string `json:"id"`
		} `json:"skills"`
		Supervaizer struct {
			V2 json.RawMessage `json:"v2"`
		} `json:"supervaizer"`
	}
	require.NoError(t, json.Unmarshal(fetch(t, h.srv.URL+a2a.WellKnownCardPath), &card))
	assert.Equal(t, agentName, card.Name)
	assert.Equal(t, h.srv.URL+"/a2a", card.URL)
	assert.Equal(t, "0.2.6", card.ProtocolVersion)
	assert.Equal(t, "JSONRPC", card.PreferredTransport)
	assert.NotEmpty(t, card.DefaultInputModes)
	require.NotEmpty(t, card.Capabilities.Extensions)
	assert.NotEmpty(t, card.Skills)
	assert.JSONEq(t, string(h.app.agent.RegistrationJSON()), string(card.Supervaizer.V2), "the card carries the registration")

	var list struct {
		Agents []struct {
			Name         string `json:"name"`
			AgentCardURL string `json:"agent_card_url"`
		} `json:"agents"`
	}
	require.NoError(t, json.Unmarshal(fetch(t, h.srv.URL+a2a.AgentsListPath), &list))
	require.Len(t, list.Agents, 1)
	assert.Equal(t, agentName, list.Agents[0].Name)
	assert.Equal(t, h.srv.URL+a2a.VersionedCardPath(agentVersion, agentSlug), list.Agents[0].AgentCardURL)
	fetch(t, list.Agents[0].AgentCardURL)

	// card.url speaks JSON-RPC: a surface load answers with a document.
	_, doc := h.client.load(surfaceRequest(wsA, surfaceJobStart))
	assert.Equal(t, "Form", doc["type"])
}
