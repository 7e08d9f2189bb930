package supervaizer_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	supervaizer "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/internal/tools/cardcheck"
	svtest "github.com/supervaize/supervaizer-go/testing"
)

// assertValidAgentCard checks a card with every validator of cardcheck: the
// A2A 0.2.6 and 0.3.0 structure, and the published A2A JSON Schemas in a build
// with the conformance tag (make conformance).
func assertValidAgentCard(tb testing.TB, card []byte) {
	tb.Helper()
	validators, err := cardcheck.Validators(os.Getenv(cardcheck.EnvSchemas))
	require.NoError(tb, err)
	for _, v := range validators {
		assert.NoError(tb, v.Validate(card), "the card must be a valid AgentCard: %s", v.Name)
	}
}

// httpGet fetches path from ts and returns the status, headers and body.
func httpGet(tb testing.TB, client *http.Client, url string) (int, http.Header, []byte) {
	tb.Helper()
	resp, err := client.Get(url)
	require.NoError(tb, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(tb, err)
	return resp.StatusCode, resp.Header, body
}

// newCardServer serves the test agent through svtest, over HTTP.
func newCardServer(t *testing.T, opts ...supervaizer.Option) (agent *supervaizer.Agent, base string, client *http.Client) {
	t.Helper()
	agent = newTestAgent(t, testAgentName)
	ts := svtest.NewTestServer(t, []*supervaizer.Agent{agent}, opts...)
	client = &http.Client{}
	t.Cleanup(client.CloseIdleConnections)
	return agent, ts.URL(), client
}

func TestAgentCardsOverHTTP(t *testing.T) {
	agent, base, client := newCardServer(t)

	status, header, body := httpGet(t, client, base+"/.well-known/agents.json")
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, "application/json", header.Get("Content-Type"))
	versioned := base + "/.well-known/agents/v1.0.0/research-agent_agent.json"
	assert.JSONEq(t, `{"schema_version":"a2a_2023_v1","agents":[{"name":"Research Agent",
		"description":"Turns a question into a sourced brief.","developer":"Supervaize","version":"1.0.0",
		"agent_card_url":"`+versioned+`"}]}`, string(body))

	status, header, card := httpGet(t, client, versioned)
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, "application/json", header.Get("Content-Type"))
	assert.Less(t, len(card), 1<<20, "a card stays under 1 MiB")
	assertValidAgentCard(t, card)

	var c struct {
		Name               string `json:"name"`
		Version            string `json:"version"`
		URL                string `json:"url"`
		ProtocolVersion    string `json:"protocolVersion"`
		PreferredTransport string `json:"preferredTransport"`
		Skills             []struct {
			ID string `json:"id"`
		} `json:"skills"`
		Supervaizer struct {
			V2 json.RawMessage `json:"v2"`
		} `json:"supervaizer"`
	}
	require.NoError(t, json.Unmarshal(card, &c))
	assert.Equal(t, testAgentName, c.Name)
	assert.Equal(t, testAgentVersion, c.Version)
	assert.Equal(t, base+"/a2a", c.URL)
	assert.Equal(t, "JSONRPC", c.PreferredTransport)
	assert.Equal(t, "0.3.0", c.ProtocolVersion, "not the registration's versions.a2a_version")
	v10, v03, err := cardcheck.DecodeSupervaizerCard(card)
	require.NoError(t, err)
	assert.Equal(t, []cardcheck.AgentInterfaceV10{
		{URL: base + "/a2a", ProtocolBinding: "JSONRPC", ProtocolVersion: "1.0"},
		{URL: base + "/a2a", ProtocolBinding: "JSONRPC", ProtocolVersion: "0.3.0"},
	}, v10.SupportedInterfaces, "both bindings, 1.0 preferred")
	assert.Equal(t, "X-API-Key", v03.SecuritySchemes["apiKey"].Name)
	assert.Equal(t, []map[string][]string{{"apiKey": {}}}, v03.Security)
	assert.JSONEq(t, string(agent.RegistrationJSON()), string(c.Supervaizer.V2), "supervaizer.v2 is the registration")
	var skills []string
	for _, s := range c.Skills {
		skills = append(skills, s.ID)
	}
	var declared []string
	for _, a := range agent.Registration().Capabilities.Actions {
		declared = append(declared, a.ID)
	}
	assert.ElementsMatch(t, declared, skills, "one skill per declared action")

	for _, path := range []string{
		"/.well-known/agents/research-agent_agent.json",
		"/.well-known/agent-card.json",
		"/.well-known/agent.json",
	} {
		status, _, same := httpGet(t, client, base+path)
		assert.Equal(t, http.StatusOK, status, path)
		assert.Equal(t, string(card), string(same), "%s serves the same card", path)
	}

	for _, path := range []string{
		"/.well-known/agents/nobody_agent.json",
		"/.well-known/agents/v1.0.0/nobody_agent.json",
		"/.well-known/agents/v2.0.0/research-agent_agent.json",
		"/.well-known/agents/1.0.0/research-agent_agent.json",
		"/.well-known/agents/v1.0.0/research-agent_agent.json/x",
		"/.well-known/agents/v1.0.0/x/research-agent_agent.json",
		"/.well-known/agents/research-agent.json",
		"/.well-known/agents/Research-Agent_agent.json",
		"/.well-known/agents/",
		"/.well-known/agents/_agent.json",
	} {
		status, _, body := httpGet(t, client, base+path)
		assert.Equal(t, http.StatusNotFound, status, path)
		assert.JSONEq(t, `{"detail":"Not Found"}`, string(body), path)
	}
}

func TestAgentCardsUsePublicURL(t *testing.T) {
	ts := svtest.NewTestServer(t, []*supervaizer.Agent{newTestAgent(t, testAgentName)},
		supervaizer.WithPublicURL("https://research.example.com/"))
	w := httptest.NewRecorder()
	ts.Server.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "http://internal:8080/.well-known/agents.json", nil))
	require.Equal(t, http.StatusOK, w.Code)
	assert.Contains(t, w.Body.String(), `"agent_card_url":"https://research.example.com/.well-known/agents/v1.0.0/research-agent_agent.json"`)

	w = httptest.NewRecorder()
	ts.Server.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "http://internal:8080/.well-known/agent-card.json", nil))
	require.Equal(t, http.StatusOK, w.Code)
	var c struct {
		URL                 string `json:"url"`
		SupportedInterfaces []struct {
			URL string `json:"url"`
		} `json:"supportedInterfaces"`
	}
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &c))
	assert.Equal(t, "https://research.example.com/a2a", c.URL)
	require.Len(t, c.SupportedInterfaces, 2)
	assert.Equal(t, "https://research.example.com/a2a", c.SupportedInterfaces[0].URL)
	assert.Equal(t, "https://research.example.com/a2a", c.SupportedInterfaces[1].URL)
	assertValidAgentCard(t, w.Body.Bytes())
}

func TestAgentCardsSeveralAgents(t *testing.T) {
	research, billing := newTestAgent(t, testAgentName), newTestAgent(t, "Billing Agent")
	srv, err := supervaizer.NewServer([]*supervaizer.Agent{research, billing}, supervaizer.WithEnv(emptyEnv),
		supervaizer.WithServerID(testServerID), supervaizer.WithPrimaryAgent("billing-agent"))
	require.NoError(t, err)
	ts, client := newHTTPServer(t, srv)

	status, _, body := httpGet(t, client, ts.URL+"/.well-known/agents.json")
	require.Equal(t, http.StatusOK, status)
	var list struct {
		Agents []struct {
			Name         string `json:"name"`
			AgentCardURL string `json:"agent_card_url"`
		} `json:"agents"`
	}
	require.NoError(t, json.Unmarshal(body, &list))
	require.Len(t, list.Agents, 2)
	for i, slug := range []string{"research-agent", "billing-agent"} {
		assert.Equal(t, ts.URL+"/.well-known/agents/v1.0.0/"+slug+"_agent.json", list.Agents[i].AgentCardURL)
		status, _, card := httpGet(t, client, list.Agents[i].AgentCardURL)
		require.Equal(t, http.StatusOK, status)
		assertValidAgentCard(t, card)
	}
	_, _, primary := httpGet(t, client, ts.URL+"/.well-known/agent-card.json")
	_, _, billingCard := httpGet(t, client, ts.URL+"/.well-known/agents/billing-agent_agent.json")
	assert.Equal(t, string(billingCard), string(primary), "the primary agent is the one named by WithPrimaryAgent")
}

func TestHealthDocument(t *testing.T) {
	linked, unlinked := newTestAgent(t, testAgentName), newTestAgent(t, "Billing Agent")
	svtest.NewFakeStudio(t).Link(linked, testStudioAgentID)
	srv, err := supervaizer.NewServer([]*supervaizer.Agent{linked, unlinked}, supervaizer.WithEnv(emptyEnv), supervaizer.WithServerID(testServerID))
	require.NoError(t, err)

	before := time.Now().UTC().Truncate(time.Microsecond)
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/.well-known/health", nil))
	require.Equal(t, http.StatusOK, w.Code)
	assert.Equal(t, "application/json", w.Header().Get("Content-Type"))

	var doc map[string]any
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &doc))
	assert.Equal(t, "a2a_2023_v1", doc["schema_version"])
	assert.Equal(t, "operational", doc["status"])
	ts, ok := doc["timestamp"].(string)
	require.True(t, ok)
	assert.Regexp(t, `^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}\+00:00$`, ts)
	stamp, err := time.Parse("2006-01-02T15:04:05.000000-07:00", ts)
	require.NoError(t, err)
	assert.False(t, stamp.Before(before))
	assert.WithinDuration(t, time.Now(), stamp, time.Minute)

	stats := map[string]any{"total_jobs": 0.0, "completed_jobs": 0.0, "failed_jobs": 0.0, "in_progress_jobs": 0.0, "success_rate": 100.0}
	assert.Equal(t, map[string]any{
		testLegacyAgentID: map[string]any{
			"agent_id": testLegacyAgentID, "agent_server_id": testStudioAgentID, "name": testAgentName,
			"status": "available", "version": testAgentVersion, "statistics": stats,
		},
		"JTCQ8XfwuAaDCpy9CmHxxv": map[string]any{ // slug.LegacyAgentID("Billing Agent")
			"agent_id": "JTCQ8XfwuAaDCpy9CmHxxv", "agent_server_id": nil, "name": "Billing Agent",
			"status": "available", "version": testAgentVersion, "statistics": stats,
		},
	}, doc["agents"])
}
