package supervaizer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"

	sv "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/contracts"
)

// exampleStudio is a Studio that allows every checkpoint and accepts every
// controller event.
func exampleStudio() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Phase        string `json:"phase"`
			SnapshotHash string `json:"snapshot_hash"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path != sv.RuleCheckpointsPath {
			_, _ = w.Write([]byte(`{}`))
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]string{"checkpoint_id": "cp-" + body.Phase, "status": sv.CheckpointAllow,
			"snapshot_hash": body.SnapshotHash, "input_hash": "ih-" + body.Phase})
	}))
}

// exampleGovernedAgent is an agent declaring rule checkpoints, served by a
// server (which keeps checkpoint progress in its store), and the gate of
// job-77 built from its job.start request.
func exampleGovernedAgent(studioURL string) (*sv.RuleCheckpointGate, error) {
	reg, err := sv.BuildRegistration(sv.RegistrationSpec{
		AgentSlug: "research-agent", DisplayName: "Research Agent", A2UICatalogVersion: "research-agent.1",
		Actions: sv.Actions("job.start"),
		RuleCheckpoints: &contracts.RuleCheckpoints{Phases: []string{contracts.PhaseBefore, contracts.PhaseAfter},
			SecretRefs: []string{"case.metadata.customer_reference"}},
	})
	if err != nil {
		return nil, err
	}
	agent, err := sv.NewAgent(sv.AgentSpec{Name: "Research Agent", Version: "1.0.0", Registration: reg})
	if err != nil {
		return nil, err
	}
	if _, err := sv.NewServer([]*sv.Agent{agent}, sv.WithLocalMode(true), sv.WithEnv(func(string) string { return "" })); err != nil {
		return nil, err
	}
	account, err := sv.NewAccount(sv.AccountConfig{APIURL: studioURL, WorkspaceID: "ws-1", APIKey: "studio-key"})
	if err != nil {
		return nil, err
	}
	// The job.start request of a governed job carries the opaque rule snapshot.
	start := &sv.ActionRequest{AgentSlug: "research-agent", Action: "job.start", JobID: "job-77",
		Input: json.RawMessage(`{"topic_id":"battery","rule_snapshot":{"hash":"rs_9a41c0",` +
			`"checkpoint_url":"https://studio.example/cp","version":1,"checkpoint_token":"opaque"}}`)}
	return sv.NewRuleCheckpointGate(agent, account, start)
}

func ExampleNewRuleCheckpointGate() {
	studio := exampleStudio()
	defer studio.Close()
	gate, err := exampleGovernedAgent(studio.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(gate) // never the snapshot or its token
	fmt.Println(gate.SnapshotHash(), gate.SecretRefs())
	// Output:
	// RuleCheckpointGate(agent research-agent, job job-77)
	// rs_9a41c0 [case.metadata.customer_reference]
}

func ExampleRunGuardedStep() {
	studio := exampleStudio()
	defer studio.Close()
	gate, err := exampleGovernedAgent(studio.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	id, err := sv.RunGuardedStep(context.Background(), gate, sv.GuardedStep[string]{
		CaseID: "case-1", OccurrenceID: "send-brief-job-77-case-1", StepID: "step-send",
		BeforeContext: map[string]any{"operation": "send_brief", "channel": "email"},
		Effect: func(context.Context) (string, error) {
			fmt.Println("sending the brief")
			return "msg-1", nil
		},
		AfterContext: func(id string) map[string]any { return map[string]any{"operation": "send_brief", "message_id": id} },
		Advance: func(_ context.Context, id string) error {
			fmt.Println("case advanced after", id)
			return nil
		},
	})
	fmt.Println(id, err)
	// Output:
	// sending the brief
	// case advanced after msg-1
	// msg-1 <nil>
}

func ExampleRecoverGuardedStep() {
	studio := exampleStudio()
	defer studio.Close()
	gate, err := exampleGovernedAgent(studio.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	afterContext := func(id string) map[string]any { return map[string]any{"operation": "send_brief", "message_id": id} }
	// The effect errs after it may have happened: its outcome is unknown.
	_, err = sv.RunGuardedStep(context.Background(), gate, sv.GuardedStep[string]{
		CaseID: "case-1", OccurrenceID: "send-brief-job-77-case-1", StepID: "step-send",
		Effect:       func(context.Context) (string, error) { return "", fmt.Errorf("smtp: connection reset") },
		AfterContext: afterContext,
	})
	fmt.Println(err != nil)
	// The agent finds message msg-1 in its outbox: it confirms the outcome.
	// The effect is not run again; the after checkpoint is asked, then the case advances once.
	id, err := sv.RecoverGuardedStep(context.Background(), gate, sv.GuardedRecovery[string]{
		CaseID: "case-1", OccurrenceID: "send-brief-job-77-case-1", Result: "msg-1", ConfirmEffect: true,
		AfterContext: afterContext,
		Advance: func(_ context.Context, id string) error {
			fmt.Println("case advanced after", id)
			return nil
		},
	})
	fmt.Println(id, err)
	// Output:
	// true
	// case advanced after msg-1
	// msg-1 <nil>
}
