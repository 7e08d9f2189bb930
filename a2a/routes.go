package a2a

// Public routes of a Supervaizer controller that serve A2A documents.
// They are public even when everything else requires a key.
const (
	// AgentsListPath serves the discovery list of all agents ([AgentsList]).
	AgentsListPath = "/.well-known/agents.json"
	// HealthPath serves the health of the controller and each agent ([Health]).
	HealthPath = "/.well-known/health"
	// WellKnownCardPath serves the primary agent's card at the A2A 0.3 standard path.
	WellKnownCardPath = "/.well-known/agent-card.json"
	// WellKnownCardPathV02 serves the primary agent's card at the A2A 0.2 standard path.
	WellKnownCardPathV02 = "/.well-known/agent.json"
	// CardPathPrefix is the prefix of the per-agent card routes ([CardPath] and
	// [VersionedCardPath]); any other path below it is 404.
	CardPathPrefix = "/.well-known/agents/"
	// ControllerPath is the JSON-RPC 2.0 controller endpoint; the card's url is
	// the public base URL followed by this path.
	ControllerPath = "/a2a"
)

// CardPath returns the unversioned Agent Card route of the agent with the given
// slug: /.well-known/agents/<slug>_agent.json. It is the default
// a2a.agent_card_url of a registration.
//
// The slug is not escaped; use a slug that [NewAgentCard] accepts.
func CardPath(slug string) string {
	return CardPathPrefix + slug + "_agent.json"
}

// VersionedCardPath returns the versioned Agent Card route:
// /.well-known/agents/v<version>/<slug>_agent.json, e.g. version "1.0.0" gives
// the segment "v1.0.0". [AgentSummary.AgentCardURL] always points at this route.
//
// Neither argument is escaped; use values that [NewAgentCard] accepts.
func VersionedCardPath(version, slug string) string {
	return CardPathPrefix + "v" + version + "/" + slug + "_agent.json"
}
