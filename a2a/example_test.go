package a2a_test

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/supervaize/supervaizer-go/a2a"
)

func ExampleNewAgentCard() {
	card, err := a2a.NewAgentCard(a2a.CardInput{
		Name:         "Research Agent",
		Description:  "Turns a question into a sourced brief.",
		Version:      "1.0.0",
		Slug:         "research-agent",
		BaseURL:      "https://research.example.com/",
		Registration: json.RawMessage(`{"supervaizer_contract_version": 2, "workspace_binding": null}`),
		Actions: []a2a.ActionInfo{
			{ID: "job.start", Label: "Start research", Scope: "job", Mutating: true},
			{ID: "resource.contacts.list", Scope: "workspace"},
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(card.URL, card.ProtocolVersion, card.PreferredTransport)
	for _, i := range card.SupportedInterfaces {
		fmt.Printf("%+v\n", i)
	}
	fmt.Println(card.Security, card.SecuritySchemes[a2a.SecuritySchemeAPIKey].Name)
	for _, s := range card.Skills {
		fmt.Printf("%s | %s | %v\n", s.ID, s.Name, s.Tags)
	}
	fmt.Println(string(card.Supervaizer.V2))
	fmt.Println(a2a.CardPath("research-agent"))
	fmt.Println(a2a.VersionedCardPath(card.Version, "research-agent"))
	// Output:
	// https://research.example.com/a2a 0.3.0 JSONRPC
	// {URL:https://research.example.com/a2a ProtocolBinding:JSONRPC ProtocolVersion:1.0}
	// {URL:https://research.example.com/a2a ProtocolBinding:JSONRPC ProtocolVersion:0.3.0}
	// [map[apiKey:[]]] X-API-Key
	// job.start | Start research | [supervaizer job]
	// resource.contacts.list | resource.contacts.list | [supervaizer workspace]
	// {"supervaizer_contract_version": 2, "workspace_binding": null}
	// /.well-known/agents/research-agent_agent.json
	// /.well-known/agents/v1.0.0/research-agent_agent.json
}

func ExampleAgentStatus() {
	fmt.Println(a2a.AgentStatus(0, 0, 0, 0))
	fmt.Println(a2a.AgentStatus(2, 0, 2, 0))
	fmt.Println(a2a.AgentStatus(3, 1, 2, 0))
	fmt.Println(a2a.AgentStatus(3, 1, 1, 1))
	fmt.Println(a2a.AgentStatus(3, 2, 1, 0))
	// Output:
	// available
	// unavailable
	// degraded
	// busy
	// available
}

func ExampleNewHealth() {
	stats := a2a.NewJobStatistics(4, 3, 1, 0)
	h := a2a.NewHealth(time.Date(2026, 10, 11, 8, 0, 0, 0, time.UTC), a2a.AgentHealth{
		AgentID: "imussvG8U97vC93sU6egrt", Name: "Research Agent", Version: "1.0.0",
		Status: stats.AgentStatus(), Statistics: stats,
	})
	b, _ := json.Marshal(h)
	fmt.Println(string(b))
	// Output:
	// {"schema_version":"a2a_2023_v1","status":"operational","timestamp":"2026-10-11T08:00:00.000000+00:00","agents":{"imussvG8U97vC93sU6egrt":{"agent_id":"imussvG8U97vC93sU6egrt","agent_server_id":null,"name":"Research Agent","status":"available","version":"1.0.0","statistics":{"total_jobs":4,"completed_jobs":3,"failed_jobs":1,"in_progress_jobs":0,"success_rate":75}}}}
}
