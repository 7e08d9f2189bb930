package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/a2a"
	"github.com/supervaize/supervaizer-go/internal/tools/cardcheck"
)

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

// TestAgentCardValidatesAgainstA2A checks every card the running agent serves
// with every validator of cardcheck: the A2A 0.2.6 and 0.3.0 structure, and
// the published A2A JSON Schemas in a build with the conformance tag (make
// conformance).
func TestAgentCardValidatesAgainstA2A(t *testing.T) {
	validators, err := cardcheck.Validators(os.Getenv(cardcheck.EnvSchemas))
	require.NoError(t, err)
	h := newHarness(t)
	for _, path := range []string{
		a2a.WellKnownCardPath, a2a.WellKnownCardPathV02,
		a2a.CardPath(agentSlug), a2a.VersionedCardPath(agentVersion, agentSlug),
	} {
		body := fetch(t, h.srv.URL+path)
		for _, v := range validators {
			assert.NoError(t, v.Validate(body), "%s: %s", path, v.Name)
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
	assert.Equal(t, "0.3.0", card.ProtocolVersion)
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

// TestAgentCardSecurityIsWhatTheEndpointEnforces reads every card route the
// way A2A 1.x and 0.3 clients do, then calls the interface the card names:
// without the header of its security scheme the call is refused, with it the
// call is answered.
func TestAgentCardSecurityIsWhatTheEndpointEnforces(t *testing.T) {
	h := newHarness(t)
	var first []byte
	for _, path := range []string{
		a2a.WellKnownCardPath, a2a.WellKnownCardPathV02,
		a2a.CardPath(agentSlug), a2a.VersionedCardPath(agentVersion, agentSlug),
	} {
		body := fetch(t, h.srv.URL+path)
		if first == nil {
			first = body
		}
		assert.JSONEq(t, string(first), string(body), "%s serves the same card", path)
		v10, v03, err := cardcheck.DecodeSupervaizerCard(body)
		require.NoError(t, err, path)
		assert.Equal(t, []cardcheck.AgentInterfaceV10{
			{URL: h.srv.URL + "/a2a", ProtocolBinding: "JSONRPC", ProtocolVersion: "1.0"},
			{URL: h.srv.URL + "/a2a", ProtocolBinding: "JSONRPC", ProtocolVersion: "0.3.0"},
		}, v10.SupportedInterfaces, path)
		assert.Equal(t, v03.URL, v10.SupportedInterfaces[0].URL, path)
		assert.Equal(t, []map[string][]string{{"apiKey": {}}}, v03.Security, path)
		assert.Equal(t, cardcheck.SecuritySchemeV03{Type: "apiKey", In: "header", Name: "X-API-Key",
			Description: v03.SecuritySchemes["apiKey"].Description}, v03.SecuritySchemes["apiKey"], path)
	}

	_, v03, err := cardcheck.DecodeSupervaizerCard(first)
	require.NoError(t, err)
	call := func(header string) int {
		req, err := http.NewRequest(http.MethodPost, v03.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{}}`))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		if header != "" {
			req.Header.Set(header, testAPIKey)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		_, err = io.Copy(io.Discard, resp.Body)
		require.NoError(t, err)
		return resp.StatusCode
	}
	assert.Equal(t, http.StatusUnauthorized, call(""), "no key")
	assert.Equal(t, http.StatusUnauthorized, call("X-Other-Key"), "the key in another header")
	assert.Equal(t, http.StatusOK, call(v03.SecuritySchemes["apiKey"].Name), "the key in the declared header: a JSON-RPC answer")
}
