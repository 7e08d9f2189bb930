package contracts_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/testing/golden"
)

func ptr[T any](v T) *T { return &v }

// goldenValues builds one Go value per model. The golden files in
// testdata/golden/<Model>.json were written by hand from the spec tables (the
// examples of the protocol, the protocol, the protocol,
// the protocol) and then reviewed against the encoder's output.
func goldenValues() map[contracts.Model]any {
	jobAction := func(id string) contracts.ActionDefinition {
		return contracts.ActionDefinition{ID: id, Mutating: true, Scope: contracts.ScopeJob}
	}
	wsAction := func(id string) contracts.ActionDefinition {
		return contracts.ActionDefinition{ID: id, Mutating: true, Scope: contracts.ScopeWorkspace}
	}
	registration := contracts.Registration{
		Agent:    contracts.AgentIdentity{ID: "research-agent", Slug: "research-agent", DisplayName: "Research Agent"},
		Versions: contracts.Versions{A2UIVersion: contracts.A2UIVersion, A2UICatalogVersion: "research-agent.2026-05-16", A2AVersion: contracts.A2AVersion},
		A2A: contracts.A2AEndpoints{
			AgentCardURL:  "/.well-known/agents/research-agent_agent.json",
			ControllerURL: "/a2a",
			Transport:     contracts.DefaultTransport(),
		},
		Capabilities: contracts.Capabilities{
			Surfaces: []string{"job.start", "case.step.awaiting", "case.step.detail", "mission.analytics", "mission.agent.resource.contacts"},
			Actions: contracts.ActionList{
				jobAction("job.start"), jobAction("job.stop"), jobAction("step.awaiting.submit"),
				wsAction("resource.contacts.list"), wsAction("resource.contacts.create"),
				wsAction("resource.contacts.update"), wsAction("resource.contacts.import"),
				jobAction("job.sync"),
			},
			CaseLanes: []contracts.CaseLane{
				{ID: "setup", Label: "Setup"}, {ID: "work", Label: "Work", Default: true}, {ID: "deliverable", Label: "Deliverables"},
			},
			ArtifactTypes: []contracts.ArtifactType{{Type: "transcript", Label: "Transcript"}, {Type: "synthesis", Label: "Synthesis"}},
		},
		JobPolicy: contracts.JobPolicy{Sync: &contracts.JobSyncPolicy{Action: contracts.DefaultSyncAction}},
		Resources: []contracts.ResourceDefinition{{
			ID: "contacts", Label: "Contacts", AutoSurface: true, Operations: []string{"list", "create", "update", "import"},
		}},
	}

	plan := contracts.SetupPlan{
		Steps: []contracts.SetupStep{{
			ID: "scope", Title: "Scope",
			Fields: []contracts.Field{
				{ID: "goal", Label: "Goal", Type: contracts.FieldText, Required: true, Multiline: true, MinRows: ptr(4)},
				{ID: "mode", Label: "Mode", Type: contracts.FieldSelect, Options: []contracts.FieldOption{
					{Value: json.RawMessage(`"fast"`), Label: "Fast"}, {Value: json.RawMessage(`"custom"`), Label: "Custom"}}},
				{ID: "budget", Label: "Budget", Type: contracts.FieldNumber,
					DependsOn:  &contracts.DependsOn{Field: "mode", In: []string{"custom"}},
					Validation: &contracts.FieldValidation{Min: ptr(0.0), Message: ptr("Budget cannot be negative")}},
				{ID: "sources", Label: "Sources", Type: contracts.FieldList,
					ItemFields: []contracts.Field{
						{ID: "url", Label: "URL", Type: contracts.FieldString, Required: true},
						{ID: "weight", Label: "Weight", Type: contracts.FieldInteger},
					},
					Validation: &contracts.FieldValidation{MaxItems: ptr(10)}},
			},
			HelpActions: []string{"goal.suggest"},
		}},
		CostEstimate: &contracts.CostEstimate{Status: contracts.CostEstimated, Unit: "credits", Min: ptr(5.0), Max: ptr(20.0), Basis: "for 50 runs"},
	}

	return map[contracts.Model]any{
		contracts.ModelRegistration: registration,
		contracts.ModelActionRequest: contracts.ActionRequest{
			RequestID: "req-1", Actor: contracts.Actor{UserID: "user-7"}, Workspace: contracts.WorkspaceRef{ID: "ws-1", Slug: "acme"},
			MissionID: "mis-3", AgentSlug: "research-agent", Surface: "job.start", Action: "job.start",
			IdempotencyKey: "setup-7f3c", JobID: "job-77",
		},
		contracts.ModelSurfaceRequest: contracts.SurfaceRequest{
			RequestID: "req-2", Actor: contracts.Actor{UserID: "user-7"}, Workspace: contracts.WorkspaceRef{ID: "ws-1"},
			MissionID: "mis-3", AgentSlug: "research-agent", Surface: "job.analytics", JobID: "job-77",
			Mission: &contracts.MissionContext{ID: "mis-3", Name: "January"},
		},
		contracts.ModelActionResult: contracts.ActionResult{
			Status:          contracts.StatusOK,
			ExternalRef:     "campaign_123",
			ExternalVersion: "campaign_123:rev_42",
			SyncCursor:      "rev_42",
			ObservedAt:      "2026-10-11T10:00:00Z",
			Effects: []contracts.Effect{{Type: "step.updated",
				Extra: contracts.Extra{"step": json.RawMessage(`{"id": "step-review", "status": "completed"}`)}}},
			JobState: &contracts.JobState{Job: contracts.Job{ID: "job-77", AgentSlug: "research-agent", MissionID: "mis-3", Status: "active",
				Source: contracts.JobSource{Type: contracts.SourceFreshStart, ExternalRef: "campaign_123"}}},
			ReplaySafety: &contracts.ReplaySafety{DedupeKeys: []string{"job-77", "campaign_123:rev_42"}, StableExternalIDsRequired: true, Convergent: true},
		},
		contracts.ModelSurfaceResult: contracts.SurfaceResult{
			Surface: "job.start", A2UIVersion: ptr(contracts.A2UIVersion),
			Document: json.RawMessage(`{"type": "Form", "fields": [], "submit": {"action": "job.start", "label": "Start"}}`),
		},
		contracts.ModelJobState: contracts.JobState{
			Job: contracts.Job{ID: "job-77", AgentSlug: "research-agent", MissionID: "mis-3", Status: "awaiting",
				Source:      contracts.JobSource{Type: contracts.SourceFreshStart},
				Information: &contracts.Information{Cost: &contracts.Cost{TotalCost: ptr(1.25)}},
				Display:     &contracts.JobDisplay{StateLabel: "Waiting for review"}},
			Cases: []contracts.Case{{ID: "case-1", Title: "EU battery market", Steps: []contracts.Step{{
				ID: "step-review", Activity: contracts.ActivityDelegation, Status: "awaiting",
				Awaiting: &contracts.Awaiting{Reason: "human_input", Surface: "case.step.awaiting", Action: "step.awaiting.submit",
					Fields: []contracts.AwaitingField{{ID: "approved", Label: "Approve the draft", Type: contracts.FieldBoolean, Required: true}}},
				Outputs: []contracts.ArtifactRef{{ID: "report:q3-2026", Type: "report", Title: "Quarterly report",
					MediaType: "text/markdown", Storage: contracts.StorageStudio, FileID: "file_8842"}},
			}}}},
		},
		contracts.ModelSetupPlan: plan,
		contracts.ModelField: contracts.Field{ID: "report_file", Label: "Quarterly report (.md)", Type: contracts.FieldFile,
			Accept: ".md,text/markdown", MaxBytes: ptr(int64(2097152)), Storage: contracts.StorageStudio, Required: true},
		contracts.ModelCostEstimate: contracts.CostEstimate{Status: contracts.CostEstimated, Unit: "credits", Min: ptr(1.0), Max: ptr(2.0)},
		contracts.ModelIntroduction: contracts.Introduction{
			Tagline:      "Turns a research question into a sourced brief",
			Summary:      "Gathers public sources, drafts a synthesis and asks an operator to review it.",
			ExampleGoals: []string{"Brief me on the EU battery market", "Compare these three analyst reports"},
		},
		contracts.ModelFullDescription: contracts.FullDescription{
			Content: "# Research Agent\n\nGathers sources, drafts a synthesis, asks for review.\n\n## Limits\n\n- Public sources only\n",
		},
		contracts.ModelBillingCatalog: contracts.BillingCatalog{
			{SKU: "brief", Unit: "brief", Description: "One sourced brief"}, {SKU: "minute", Unit: "minute"},
		},
		contracts.ModelContextAssignment: contracts.ContextAssignment{
			Items: []contracts.ContextItem{{Ref: "supervaize.context.mission.january-brief", Version: 2,
				Scope: contracts.ContextScopeMission, Title: "January brief"}},
			JobID: "job-77", MissionID: "mis-3", AssignedAt: "2026-01-12T09:30:00Z",
		},
		contracts.ModelVerifiedContext: contracts.VerifiedWorkspaceContext{
			GrantID: contracts.LocalModeGrantID, WorkspaceID: "ws-1", AgentID: "imussvG8U97vC93sU6egrt",
			AgentSlug: "research-agent", ServerID: "srv-1",
		},
	}
}

// TestGolden compares the encoding of one value per model with its golden file
// (semantically: key order and white space do not matter) and validates it.
// Run with SUPERVAIZER_UPDATE_GOLDEN=1 to rewrite the files, then review the diff.
func TestGolden(t *testing.T) {
	v := contracts.DefaultValidator()
	values := goldenValues()
	for _, m := range append(slices.Clone(coreModels), contracts.ModelVerifiedContext) {
		assert.Contains(t, values, m, "every core model has a golden value")
	}
	for m, value := range values {
		t.Run(string(m), func(t *testing.T) {
			got, err := contracts.Marshal(value)
			require.NoError(t, err)
			require.NoError(t, v.Validate(m, got), "the encoding of a golden value is valid")
			file := filepath.Join("testdata", "golden", string(m)+".json")
			golden.JSON(t, file, got)
			want, err := os.ReadFile(file)
			require.NoError(t, err)

			// The golden document decodes back to a value that encodes the same.
			back := newValue(t, m)
			require.NoError(t, v.Decode(m, want, back))
			again, err := contracts.Marshal(back)
			require.NoError(t, err)
			assert.JSONEq(t, string(want), string(again))
		})
	}
}
