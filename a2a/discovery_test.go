package a2a_test

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/a2a"
	"github.com/supervaize/supervaizer-go/testing/golden"
)

func TestAgentsListGolden(t *testing.T) {
	research, err := a2a.NewAgentSummary(researchInput(t))
	require.NoError(t, err)
	hello, err := a2a.NewAgentSummary(a2a.CardInput{
		Name: "Hello World AI Agent", Version: "0.3.1", Slug: "hello-world-ai-agent",
		Developer: "Acme Labs", BaseURL: "https://research.example.com",
	})
	require.NoError(t, err)
	got, err := json.Marshal(a2a.NewAgentsList(research, hello))
	require.NoError(t, err)
	golden.JSON(t, filepath.Join("testdata", "agents.golden.json"), got)
}

func TestNewAgentSummary(t *testing.T) {
	t.Parallel()
	in := researchInput(t)
	in.BaseURL = "http://127.0.0.1:8080/"
	got, err := a2a.NewAgentSummary(in)
	require.NoError(t, err)
	assert.Equal(t, a2a.AgentSummary{
		Name:         "Research Agent",
		Description:  "Turns a question into a sourced brief.",
		Developer:    "Supervaize",
		Version:      "1.0.0",
		AgentCardURL: "http://127.0.0.1:8080/.well-known/agents/v1.0.0/research-agent_agent.json",
	}, got)

	for _, edit := range []func(*a2a.CardInput){
		func(in *a2a.CardInput) { in.BaseURL = "localhost:8080" },
		func(in *a2a.CardInput) { in.Slug = "Research Agent" },
		func(in *a2a.CardInput) { in.Description = "\xff" },
	} {
		bad := researchInput(t)
		edit(&bad)
		_, err := a2a.NewAgentSummary(bad)
		assert.ErrorIs(t, err, a2a.ErrInvalidCardInput)
	}
}

func TestEmptyDiscoveryDocuments(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		doc  any
		want string
	}{
		{"new agents list", a2a.NewAgentsList(), `{"schema_version":"a2a_2023_v1","agents":[]}`},
		{"zero agents list", a2a.AgentsList{SchemaVersion: a2a.SchemaVersion}, `{"schema_version":"a2a_2023_v1","agents":[]}`},
		{"new health", a2a.NewHealth(time.Date(2026, 10, 11, 8, 0, 0, 0, time.UTC)),
			`{"schema_version":"a2a_2023_v1","status":"operational","timestamp":"2026-10-11T08:00:00.000000+00:00","agents":{}}`},
		{"zero health", a2a.Health{}, `{"schema_version":"","status":"","timestamp":"","agents":{}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := json.Marshal(tt.doc)
			require.NoError(t, err)
			assert.JSONEq(t, tt.want, string(got))
		})
	}
}

func TestHealthGolden(t *testing.T) {
	idle := a2a.NewJobStatistics(0, 0, 0, 0)
	busy := a2a.NewJobStatistics(3, 2, 0, 1)
	// A non-UTC time with nanoseconds: the timestamp is UTC, truncated to microseconds.
	now := time.Date(2026, 10, 11, 10, 0, 0, 123456789, time.FixedZone("CEST", 2*60*60))
	h := a2a.NewHealth(now,
		a2a.AgentHealth{
			AgentID: "imussvG8U97vC93sU6egrt", AgentServerID: "studio-agent-42", Name: "Research Agent",
			Status: idle.AgentStatus(), Version: "1.0.0", Statistics: idle,
		},
		a2a.AgentHealth{
			AgentID: "LMKyPAS2Q8sKWBY34DS37a", Name: "agentName",
			Status: busy.AgentStatus(), Version: "0.3.1", Statistics: busy,
		},
	)
	assert.Equal(t, "2026-10-11T08:00:00.123456+00:00", h.Timestamp)
	got, err := json.Marshal(h)
	require.NoError(t, err)
	golden.JSON(t, filepath.Join("testdata", "health.golden.json"), got)
}

func TestNewHealthLaterAgentWins(t *testing.T) {
	t.Parallel()
	h := a2a.NewHealth(time.Unix(0, 0), a2a.AgentHealth{AgentID: "a", Name: "old"}, a2a.AgentHealth{AgentID: "a", Name: "new"})
	require.Len(t, h.Agents, 1)
	assert.Equal(t, "new", h.Agents["a"].Name)
}

func TestAgentHealthServerIDNull(t *testing.T) {
	t.Parallel()
	b, err := json.Marshal(a2a.AgentHealth{AgentID: "a"})
	require.NoError(t, err)
	assert.JSONEq(t, `{"agent_id":"a","agent_server_id":null,"name":"","status":"","version":"",
		"statistics":{"total_jobs":0,"completed_jobs":0,"failed_jobs":0,"in_progress_jobs":0,"success_rate":0}}`, string(b))

	var back a2a.AgentHealth
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, a2a.AgentHealth{AgentID: "a"}, back)
}

func TestAgentStatus(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                                string
		total, completed, failed, inProgres int
		want                                string
	}{
		{"no jobs", 0, 0, 0, 0, a2a.StatusAvailable},
		{"negative total counts as no jobs", -1, 0, 0, 0, a2a.StatusAvailable},
		{"all failed", 4, 0, 4, 0, a2a.StatusUnavailable},
		{"single job failed", 1, 0, 1, 0, a2a.StatusUnavailable},
		{"more than half failed", 5, 1, 3, 1, a2a.StatusDegraded},
		{"more than half failed of three", 3, 1, 2, 0, a2a.StatusDegraded},
		{"degraded wins over busy", 3, 0, 2, 1, a2a.StatusDegraded},
		{"exactly half failed is not degraded", 4, 2, 2, 0, a2a.StatusAvailable},
		{"exactly half failed and running is busy", 4, 1, 2, 1, a2a.StatusBusy},
		{"less than half failed of three", 3, 2, 1, 0, a2a.StatusAvailable},
		{"in progress", 2, 1, 0, 1, a2a.StatusBusy},
		{"all in progress", 2, 0, 0, 2, a2a.StatusBusy},
		{"all completed", 7, 7, 0, 0, a2a.StatusAvailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, a2a.AgentStatus(tt.total, tt.completed, tt.failed, tt.inProgres))
			assert.Equal(t, tt.want, a2a.NewJobStatistics(tt.total, tt.completed, tt.failed, tt.inProgres).AgentStatus())
		})
	}
}

func TestSuccessRate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		total, completed int
		want             float64
		wantJSON         string
	}{
		{0, 0, 100, "100"},
		{4, 4, 100, "100"},
		{4, 0, 0, "0"},
		{4, 1, 25, "25"},
		{3, 2, 66.66666666666666, "66.66666666666666"}, // (2/3)*100, as Python computes it
		{3, 1, 33.33333333333333, "33.33333333333333"}, // (1/3)*100, not 100/3
	}
	for _, tt := range tests {
		got := a2a.SuccessRate(tt.total, tt.completed)
		assert.Equal(t, tt.want, got, "%d/%d", tt.completed, tt.total)
		b, err := json.Marshal(got)
		require.NoError(t, err)
		assert.Equal(t, tt.wantJSON, string(b))
	}
}

func BenchmarkHealthMarshal(b *testing.B) {
	stats := a2a.NewJobStatistics(12, 9, 2, 1)
	agents := []a2a.AgentHealth{
		{AgentID: "imussvG8U97vC93sU6egrt", AgentServerID: "studio-agent-42", Name: "Research Agent",
			Status: stats.AgentStatus(), Version: "1.0.0", Statistics: stats},
		{AgentID: "LMKyPAS2Q8sKWBY34DS37a", Name: "agentName", Status: a2a.StatusAvailable,
			Version: "0.3.1", Statistics: a2a.NewJobStatistics(0, 0, 0, 0)},
	}
	now := time.Date(2026, 10, 11, 8, 0, 0, 0, time.UTC)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := json.Marshal(a2a.NewHealth(now, agents...)); err != nil {
			b.Fatal(err)
		}
	}
}
