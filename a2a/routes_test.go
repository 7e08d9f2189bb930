package a2a_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/supervaize/supervaizer-go/a2a"
)

func TestRoutes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, got, want string
	}{
		{"agents list", a2a.AgentsListPath, "/.well-known/agents.json"},
		{"health", a2a.HealthPath, "/.well-known/health"},
		{"A2A 0.3 card", a2a.WellKnownCardPath, "/.well-known/agent-card.json"},
		{"A2A 0.2 card", a2a.WellKnownCardPathV02, "/.well-known/agent.json"},
		{"controller", a2a.ControllerPath, "/a2a"},
		{"unversioned card", a2a.CardPath("research-agent"), "/.well-known/agents/research-agent_agent.json"},
		{"versioned card", a2a.VersionedCardPath("1.0.0", "research-agent"), "/.well-known/agents/v1.0.0/research-agent_agent.json"},
		{"versioned card with pre-release", a2a.VersionedCardPath("2.0.0-rc.1", "a"), "/.well-known/agents/v2.0.0-rc.1/a_agent.json"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, tt.got, tt.name)
	}
	assert.Regexp(t, "^"+a2a.CardPathPrefix, a2a.CardPath("x"))
	assert.Regexp(t, "^"+a2a.CardPathPrefix, a2a.VersionedCardPath("1", "x"))
}
