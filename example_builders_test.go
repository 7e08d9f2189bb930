package supervaizer_test

import (
	"context"
	"fmt"

	sv "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/a2ui"
	"github.com/supervaize/supervaizer-go/contracts"
)

func ExampleBuildRegistration() {
	reg, err := sv.BuildRegistration(sv.RegistrationSpec{
		AgentSlug: "research-agent", DisplayName: "Research Agent", A2UICatalogVersion: "research-agent.2026-05-16",
		Surfaces:  sv.Surfaces("job.start"),
		Actions:   sv.Actions("job.start"),
		JobPolicy: &contracts.JobPolicy{Sync: &contracts.JobSyncPolicy{}},
		Resources: []contracts.ResourceDefinition{{ID: "contacts", Label: "Contacts", AutoSurface: true, Operations: []string{"list"}}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(reg.Capabilities.Surfaces)
	for _, a := range reg.Capabilities.Actions {
		fmt.Println(a.ID, a.Mutating, a.Scope)
	}
	// Output:
	// [job.start mission.agent.resource.contacts]
	// job.start true job
	// resource.contacts.list true workspace
	// job.sync true job
}

func ExampleBuildRegistration_invalid() {
	_, err := sv.BuildRegistration(sv.RegistrationSpec{
		AgentSlug: "research-agent", DisplayName: "Research Agent", A2UICatalogVersion: "research-agent.1",
		Actions: []sv.ActionSpec{{ID: "goal.suggest", Kind: contracts.KindHelp}}, // a help action must not mutate
	})
	fmt.Println(err)
	// Output:
	// invalid Registration:
	//   /actions/0/mutating: help action "goal.suggest" must set Mutating to false (help_action)
}

func ExampleNewAgent() {
	agent, err := sv.NewAgent(sv.AgentSpec{Name: "Research Agent", Version: "1.0.0",
		Registration: sv.RegistrationSpec{Actions: sv.Actions("job.start")}})
	if err != nil {
		fmt.Println(err)
		return
	}
	reg := agent.Registration() // with the defaults NewAgent applies
	fmt.Println(agent.Slug(), reg.Agent.DisplayName, reg.Versions.A2UICatalogVersion)
	_, err = sv.NewAgent(sv.AgentSpec{Name: "Research Bot", Version: "1.0.0",
		Registration: sv.RegistrationSpec{AgentSlug: "research-agent"}})
	fmt.Println(err)
	// Output:
	// research-agent Research Agent research-agent.1.0.0
	// supervaizer: AgentSpec.Registration.AgentSlug "research-agent" must equal the slug derived from AgentSpec.Name ("research-bot"); leave it empty to use it
}

func ExampleJobState() {
	req := &sv.ActionRequest{JobID: "job-77", AgentSlug: "research-agent", MissionID: "mis-3"}
	res := sv.OK(sv.JobStarted(req.JobID, nil))
	res.JobState = &sv.JobState{
		Job: sv.Job{ID: req.JobID, AgentSlug: req.AgentSlug, MissionID: req.MissionID, Status: "awaiting",
			Source: sv.JobSource{Type: "fresh_start"}},
		Cases: []sv.Case{{ID: "case-1", Lane: "setup", Title: "Review sources", Steps: []sv.Step{{
			ID: "step-1", Activity: contracts.ActivityOperation, Status: "awaiting", Title: "Review",
			Awaiting: &sv.Awaiting{Reason: "human_input", Surface: "case.step.awaiting",
				Action: contracts.DefaultSubmitAction, Fields: a2ui.AwaitingFields(a2ui.BooleanField("approve", "Approve")), Reopenable: true},
		}}}},
	}
	if _, err := contracts.DefaultValidator().ValidateValue(contracts.ModelActionResult, res); err != nil {
		fmt.Println(err)
		return
	}
	out, _ := contracts.Marshal(res.JobState.Cases[0].Steps[0].Awaiting)
	fmt.Println(string(out))
	// Output:
	// {"reason":"human_input","surface":"case.step.awaiting","action":"step.awaiting.submit","fields":[{"id":"approve","label":"Approve","type":"boolean","required":false}],"reopenable":true}
}

func ExampleWorkspaceFrom() {
	srv := exampleServer()
	srv.HandleAction("job.start", func(ctx context.Context, req *sv.ActionRequest) (*sv.ActionResult, error) {
		ws, ok := sv.WorkspaceFrom(ctx) // the verified workspace, never req.Workspace.Slug
		if !ok {
			return sv.Fail("workspace_missing", "no verified workspace"), nil
		}
		return sv.OK(sv.Effect{Type: "job.started", JobID: req.JobID, Message: "started in " + ws.WorkspaceID}), nil
	})
	exampleCall(srv, sv.MethodActionInvoke, `{"request_id":"r-9","actor":{"user_id":"u-1"},"workspace":{"id":"w-1"},`+
		`"mission_id":"m-1","agent_slug":"research-agent","surface":"job.start","action":"job.start","job_id":"j-1","input":{}}`)
	// Output:
	// 200 {"jsonrpc":"2.0","id":1,"result":{"status":"ok","effects":[{"type":"job.started","job_id":"j-1","message":"started in w-1"}]}}
}
