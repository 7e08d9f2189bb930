package checkpoint_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	sv "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/checkpoint"
	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/studio"
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
		if r.URL.Path != studio.RuleCheckpointsPath {
			_, _ = w.Write([]byte(`{}`))
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]string{"checkpoint_id": "cp-" + body.Phase, "status": checkpoint.Allow,
			"snapshot_hash": body.SnapshotHash, "input_hash": "ih-" + body.Phase})
	}))
}

// exampleGovernedAgent is the gate of job-77 of exampleGoverned.
func exampleGovernedAgent(studioURL string) (*checkpoint.Gate, error) {
	g, err := exampleGoverned(studioURL)
	if err != nil {
		return nil, err
	}
	return g.gate, nil
}

// governedExample is an agent declaring rule checkpoints, its server (which
// keeps checkpoint progress in its store), a Studio account and the gate of
// job-77 built from its job.start request.
type governedExample struct {
	agent   *sv.Agent
	srv     *sv.Server
	account *studio.Client
	gate    *checkpoint.Gate
}

func exampleGoverned(studioURL string) (*governedExample, error) {
	reg := sv.RegistrationSpec{
		AgentSlug: "research-agent", DisplayName: "Research Agent", A2UICatalogVersion: "research-agent.1",
		Actions: sv.Actions("job.start"),
		RuleCheckpoints: &contracts.RuleCheckpoints{Phases: []string{contracts.PhaseBefore, contracts.PhaseAfter},
			SecretRefs: []string{"case.metadata.customer_reference"}},
	}
	agent, err := sv.NewAgent(sv.AgentSpec{Name: "Research Agent", Version: "1.0.0", Registration: reg})
	if err != nil {
		return nil, err
	}
	srv, err := sv.NewServer([]*sv.Agent{agent}, sv.WithLocalMode(true), sv.WithEnv(func(string) string { return "" }))
	if err != nil {
		return nil, err
	}
	// Guarded steps call Studio only once the server started (ListenAndServe
	// and Serve call Start).
	if err := srv.Start(context.Background()); err != nil {
		return nil, err
	}
	account, err := studio.NewClient(studio.Config{APIURL: studioURL, WorkspaceID: "ws-1", APIKey: "studio-key"})
	if err != nil {
		return nil, err
	}
	// The job.start request of a governed job carries the opaque rule snapshot.
	start := &sv.ActionRequest{AgentSlug: "research-agent", Action: "job.start", JobID: "job-77",
		Input: json.RawMessage(`{"topic_id":"battery","rule_snapshot":{"hash":"rs_9a41c0",` +
			`"checkpoint_url":"https://studio.example/cp","version":1,"checkpoint_token":"opaque"}}`)}
	gate, err := checkpoint.NewGate(agent.Checkpoints(), account, start)
	if err != nil {
		return nil, err
	}
	return &governedExample{agent: agent, srv: srv, account: account, gate: gate}, nil
}

func ExampleNewGate() {
	fake := exampleStudio()
	defer fake.Close()
	gate, err := exampleGovernedAgent(fake.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(gate) // never the snapshot or its token
	fmt.Println(gate.SnapshotHash(), gate.SecretRefs())
	// Output:
	// checkpoint.Gate(agent research-agent, job job-77)
	// rs_9a41c0 [case.metadata.customer_reference]
}

func ExampleRun() {
	fake := exampleStudio()
	defer fake.Close()
	gate, err := exampleGovernedAgent(fake.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	id, err := checkpoint.Run(context.Background(), gate, checkpoint.Step[string]{
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

func ExampleRecover() {
	fake := exampleStudio()
	defer fake.Close()
	gate, err := exampleGovernedAgent(fake.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	afterContext := func(id string) map[string]any { return map[string]any{"operation": "send_brief", "message_id": id} }
	// The effect errs after it may have happened: its outcome is unknown.
	_, err = checkpoint.Run(context.Background(), gate, checkpoint.Step[string]{
		CaseID: "case-1", OccurrenceID: "send-brief-job-77-case-1", StepID: "step-send",
		Effect:       func(context.Context) (string, error) { return "", fmt.Errorf("smtp: connection reset") },
		AfterContext: afterContext,
	})
	fmt.Println(err != nil)
	// The agent finds message msg-1 in its outbox: it confirms the outcome.
	// The effect is not run again; the after checkpoint is asked, then the case advances once.
	id, err := checkpoint.Recover(context.Background(), gate, checkpoint.Recovery[string]{
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

func ExampleRestoreGate() {
	fake := exampleStudio()
	defer fake.Close()
	g, err := exampleGoverned(fake.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	// In the job.start handler: keep the gate in the SDK's store, never the
	// snapshot in business context.
	if err := g.gate.Save(ctx); err != nil {
		fmt.Println(err)
		return
	}
	// Later, after a restart too: rebuild it from the job id.
	gate, err := checkpoint.RestoreGate(ctx, g.agent.Checkpoints(), g.account, "job-77")
	fmt.Println(gate, gate.SnapshotHash(), err)
	// Once the job needs no more checkpoints, drop the token from the store.
	if err := gate.Forget(ctx); err != nil {
		fmt.Println(err)
		return
	}
	_, err = checkpoint.RestoreGate(ctx, g.agent.Checkpoints(), g.account, "job-77")
	fmt.Println(errors.Is(err, checkpoint.ErrGateNotFound))
	// Output:
	// checkpoint.Gate(agent research-agent, job job-77) rs_9a41c0 <nil>
	// true
}

func ExampleRuntime_OnDecision() {
	fake := exampleStudio()
	defer fake.Close()
	g, err := exampleGoverned(fake.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	g.agent.Checkpoints().OnDecision(func(ctx context.Context, d checkpoint.Decision) {
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
	g.srv.ServeHTTP(w, r)
	fmt.Println(w.Code)
	// Output:
	// decision allow for send-brief-job-77-case-1 retained: true active: false
	// 200
}
