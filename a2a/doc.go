// Package a2a holds the A2A wire documents a Supervaizer controller serves on
// its public discovery routes: the Agent Card, the agents list and the health
// report, plus the helpers that build their routes.
//
// Quick start:
//
//	card, err := a2a.NewAgentCard(a2a.CardInput{
//		Name: "Research Agent", Version: "1.0.0", Slug: "research-agent",
//		BaseURL:      "https://research.example.com",
//		Registration: registrationJSON, // the v2 registration object
//		Actions:      []a2a.ActionInfo{{ID: "job.start", Scope: "job", Mutating: true}},
//	})
//	if err != nil {
//		return err // invalid input, or a card over MaxCardBytes
//	}
//	body, err := json.Marshal(card) // serve at a2a.CardPath("research-agent")
//
// # Agent Card
//
// [AgentCard] is at once the legacy Supervaizer card (developer, version_info,
// api_endpoints, tools, authentication and the v2 registration under
// supervaizer.v2), a valid standard A2A AgentCard for protocol versions 0.2.6
// and 0.3.0, and a card A2A 1.x clients accept. url is <base>/a2a,
// preferredTransport is JSONRPC, protocolVersion is [DefaultA2AVersion];
// supportedInterfaces names, for A2A 1.x clients, the A2A 1.0 JSON-RPC
// binding at url first (the preferred entry), then the 0.3 one; securitySchemes and security declare the
// controller key sent in the X-API-Key header; each declared action is a
// skill, and the Supervaizer v2 extension is declared in
// capabilities.extensions when the agent has a registration. Its compact JSON
// encoding never exceeds [MaxCardBytes]. docs/protocol.md lists every member.
//
// # Discovery documents
//
// [AgentsList] is served at [AgentsListPath] and [Health] at [HealthPath].
// The status of each agent follows [AgentStatus], a pure function of its job
// counters.
package a2a
