package testing_test

import (
	"context"
	"fmt"
	"testing"

	supervaizer "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/checkpoint"
	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/studio"
	svtest "github.com/supervaize/supervaizer-go/testing"
)

func ExampleNewAttachedTestServer() {
	runExample(func(t testing.TB) { // in a test: func TestAttached(t *testing.T) {
		api := svtest.NewFakeStudioAPI(t, svtest.NewFakeStudio(t))
		api.SetAgent("research-agent", svtest.AgentDetail{Parameters: map[string]any{"SEARCH_API_KEY": "sk-demo"}})
		ts := svtest.NewAttachedTestServerWithAPI(t, api, []*supervaizer.Agent{exampleAgent()})
		fmt.Println(api.EventTypes())

		sa, _ := ts.Server.Studio().Agent("research-agent") // what the agent lookup decrypted
		fmt.Println(sa.ID, sa.OnboardingStatus, sa.Parameters[0].Name)

		req := ts.Request("job.start", StartInput{TopicID: "battery-market"})
		req.IdempotencyKey, req.JobID = "setup-7f3c", "job-77"
		res, err := ts.Invoke(t.Context(), req) // the token carries the handshake's audience
		if err != nil {
			t.Fatalf("invoke: %v", err)
		}
		fmt.Println(res.Status)
	})
	// Output:
	// [server.register]
	// studio-agent-research-agent configured SEARCH_API_KEY
	// ok
}

// governedExampleAgent is the example agent with the rule-checkpoint capability.
func governedExampleAgent() *supervaizer.Agent {
	reg := supervaizer.RegistrationSpec{
		AgentSlug: "research-agent", DisplayName: "Research Agent", A2UICatalogVersion: "1.0.0",
		Actions:         supervaizer.Actions("job.start"),
		RuleCheckpoints: &contracts.RuleCheckpoints{Phases: []string{contracts.PhaseBefore, contracts.PhaseAfter}},
	}
	agent, err := supervaizer.NewAgent(supervaizer.AgentSpec{Name: "Research Agent", Version: "1.0.0", Registration: reg})
	if err != nil {
		panic(err)
	}
	return agent
}

func ExampleFakeStudioAPI_RuleSnapshot() {
	runExample(func(t testing.TB) {
		agent := governedExampleAgent()
		ts := svtest.NewAttachedTestServer(t, []*supervaizer.Agent{agent})
		ts.API.SetDecision(svtest.AnyOccurrence, contracts.PhaseAfter, checkpoint.Stop)

		start := ts.Request("job.start", map[string]any{"topic_id": "t-1", "rule_snapshot": ts.API.RuleSnapshot("rs_9a41c0")})
		start.JobID = "job-77"
		gate, err := checkpoint.NewGate(agent.Checkpoints(), ts.Server.Studio(), &start)
		if err != nil {
			t.Fatalf("gate: %v", err)
		}
		_, err = checkpoint.Run(t.Context(), gate, checkpoint.Step[string]{
			CaseID: "case-1", OccurrenceID: "send-brief-job-77-case-1", StepID: "step-send",
			Effect:       func(context.Context) (string, error) { return "msg-42", nil },
			AfterContext: func(r string) map[string]any { return map[string]any{"outcome": r} },
		})
		fmt.Println(err != nil)
		for _, c := range ts.API.Checkpoints() {
			fmt.Println(c.Phase, c.Status)
		}
		fmt.Println(ts.API.EventTypes(), ts.API.SnapshotURLCalls())
	})
	// Output:
	// true
	// before allow
	// after stop
	// [server.register agent.case.start] 0
}

func ExampleNewFakeStudioAPI() {
	runExample(func(t testing.TB) {
		api := svtest.NewFakeStudioAPI(t, svtest.NewFakeStudio(t))
		api.AddContext(svtest.ContextItem{Ref: "supervaize.context.workspace.billing", Title: "Billing",
			Content: "Invoices are sent monthly."})
		doc, err := api.Client().Context().Open(t.Context(),
			studio.OpenRequest{Ref: "supervaize.context.workspace.billing", MaxChars: 8})
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		fmt.Printf("%s: %q\n", doc.Title, doc.Content)

		api.FailNext(api.WorkspacePath(svtest.ContextOpenPath), 503)
		_, err = api.Client().Context().Open(t.Context(), studio.OpenRequest{Ref: "supervaize.context.workspace.billing"})
		fmt.Println(err)
		for _, r := range api.Requests() {
			fmt.Println(r.Method, r.Path, r.Status)
		}
	})
	// Output:
	// Billing: "Invoices"
	// supervaizer: Studio POST /w/ws-test/api/v1/context/open/: HTTP 503: {"detail":"svtest: injected failure"}
	// POST /w/ws-test/api/v1/context/open/ 200
	// POST /w/ws-test/api/v1/context/open/ 503
}

func ExampleConnect() {
	runExample(func(t testing.TB) {
		running := svtest.NewTestServer(t, []*supervaizer.Agent{exampleAgent()}) // any controller reachable over HTTP
		remote := svtest.Connect(t, running.URL(), running.APIKey, running.Studio)
		req := remote.Request("job.start", StartInput{TopicID: "battery-market"})
		req.IdempotencyKey, req.JobID = "setup-7f3c", "job-77"
		fmt.Println(req.AgentSlug, svtest.AssertConfirmIdempotent(t, remote, req))
	})
	// Output: research-agent true
}
