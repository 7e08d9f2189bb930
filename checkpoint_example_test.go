package supervaizer_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	sv "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/checkpoint"
	"github.com/supervaize/supervaizer-go/contracts"
)

// exampleGovernedServer serves an agent declaring rule checkpoints, in local
// mode (no Studio); package checkpoint's examples use one with a gate.
func exampleGovernedServer() (*sv.Agent, *sv.Server, error) {
	reg := sv.RegistrationSpec{
		AgentSlug: "research-agent", DisplayName: "Research Agent", A2UICatalogVersion: "research-agent.1",
		Actions:         sv.Actions("job.start"),
		RuleCheckpoints: &contracts.RuleCheckpoints{Phases: []string{contracts.PhaseBefore, contracts.PhaseAfter}},
	}
	agent, err := sv.NewAgent(sv.AgentSpec{Name: "Research Agent", Version: "1.0.0", Registration: reg})
	if err != nil {
		return nil, nil, err
	}
	srv, err := sv.NewServer([]*sv.Agent{agent}, sv.WithLocalMode(true), sv.WithEnv(func(string) string { return "" }))
	if err != nil {
		return nil, nil, err
	}
	return agent, srv, srv.Start(context.Background())
}

func ExampleAgent_Checkpoints() {
	agent, _, err := exampleGovernedServer()
	if err != nil {
		fmt.Println(err)
		return
	}
	// In the job.start handler: checkpoint.NewGate(agent.Checkpoints(), account, req).
	rt := agent.Checkpoints()
	fmt.Println(rt.Slug(), rt.Declared())
	// Output:
	// research-agent true
}

func ExampleAgent_OnRuleCheckpointDecision() {
	agent, srv, err := exampleGovernedServer()
	if err != nil {
		fmt.Println(err)
		return
	}
	agent.OnRuleCheckpointDecision(func(ctx context.Context, d checkpoint.Decision) {
		// Return quickly. When no step of this process waits for the decision
		// (!d.Active && !d.Retained: a previous run left it paused), run the
		// occurrence again in a goroutine, with a gate from
		// checkpoint.RestoreGate: it goes on from the persisted decision.
		fmt.Println("decision", d.Status, "for", d.OccurrenceID, "retained:", d.Retained, "active:", d.Active)
	})
	// Studio pushes a decision through rule.checkpoint.resume.
	body := `{"jsonrpc":"2.0","id":1,"method":"supervaizer/action.invoke","params":{"request_id":"req-resume-1",` +
		`"actor":{"user_id":"studio"},"workspace":{"id":"ws-1"},"mission_id":"mis-3","agent_slug":"research-agent",` +
		`"surface":"mission.agent","action":"rule.checkpoint.resume","job_id":"job-77","case_id":"case-1",` +
		`"input":{"checkpoint_id":"cp_51e2","occurrence_id":"send-brief-job-77-case-1","phase":"before","status":"allow",` +
		`"snapshot_hash":"rs_9a41c0","input_hash":"ih_77d0","decision_id":"dec_03"}}}`
	r := httptest.NewRequest(http.MethodPost, "http://localhost/a2a", strings.NewReader(body))
	r.Header.Set(sv.HeaderAPIKey, sv.LocalModeAPIKey)
	r.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, r)
	fmt.Println(w.Code)
	// Output:
	// decision allow for send-brief-job-77-case-1 retained: true active: false
	// 200
}
