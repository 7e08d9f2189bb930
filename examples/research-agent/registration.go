package main

import (
	"encoding/json"

	"github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/a2ui"
	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/studio"
)

// The agent's identity. The slug is derived from agentName (NewAgent puts it
// in the registration); jobs carry it.
const (
	agentName      = "Research Agent"
	agentSlug      = "research-agent"
	agentVersion   = "1.0.0"
	catalogVersion = "research-agent.2026-05-16"
)

// Surfaces, actions and vocabulary of the agent. The protocol fixes the shapes;
// these ids are the agent's words (or the conventional ones Studio renders
// richly).
const (
	surfaceJobStart      = "job.start"
	surfaceStepAwaiting  = "case.step.awaiting"
	surfaceStepDetail    = "case.step.detail"
	surfaceAnalytics     = "mission.analytics" // where Studio shows a dashboard
	surfaceContactImport = "mission.agent.surface.contact_import"
	surfaceBindingCreate = "workspace_binding.create" // derived from the workspace binding

	actionStart       = "job.start"
	actionPreview     = "job.start.preview"
	actionSubmit      = "step.awaiting.submit"
	actionStop        = "job.stop"
	actionSync        = "job.sync"
	actionGoalSuggest = "goal.suggest"
	actionTest        = "job.test"
	actionBindOptions = "workspace_binding.options" // derived from the workspace binding
	actionBindCreate  = "workspace_binding.create"  // derived from the workspace binding

	phaseBefore = "before" // rule-checkpoint phases around sending the brief
	phaseAfter  = "after"

	laneSetup       = "setup"
	laneWork        = "work"
	laneDeliverable = "deliverable"

	artifactTranscript = "transcript"
	artifactSynthesis  = "synthesis"

	resourceContacts = "contacts"
	datasetProgress  = "progress_metrics"
	dashboardID      = "mission_overview"

	skuBrief        = "brief"
	skuInputTokens  = "input_tokens" // the conversation's usage (WithUsageBilling)
	skuOutputTokens = "output_tokens"
)

// The setup fields: the job.start form, the setup plan and the typed input of
// job.start share them.
func setupFields() []a2ui.Field {
	return []a2ui.Field{
		a2ui.StringField("topic_id", "Topic", a2ui.Required(), a2ui.MaxLength(120),
			a2ui.Placeholder("eu-battery-market"), a2ui.Description("A short identifier of what to research.")),
		a2ui.TextField("goal", "Goal", a2ui.Multiline(3), a2ui.MaxLength(600),
			a2ui.Description("What the brief must answer. Ask for a suggestion if unsure.")),
		a2ui.SelectField("depth", "Depth", a2ui.Placeholder("Choose a depth"),
			a2ui.Choice(depthQuick, "Quick scan"), a2ui.Choice(depthDeep, "Deep dive")),
	}
}

// setupStep is the one step of the setup plan (pending), in the registration
// and in the plan job.start.preview returns.
func setupStep() a2ui.SetupStep {
	return a2ui.SetupStep{
		ID: "scope", Title: "Scope the research",
		Description: "Name the topic and what the brief must answer.",
		Fields:      setupFields(), HelpActions: []string{actionGoalSuggest},
	}
}

// contactFields are the fields of the contacts resource: Studio's generated
// CRUD surface and the import view use them.
func contactFields() []a2ui.Field {
	return []a2ui.Field{
		a2ui.StringField("name", "Name", a2ui.Required(), a2ui.MaxLength(200)),
		a2ui.StringField("email", "Email", a2ui.Required(), a2ui.MaxLength(254),
			a2ui.Pattern(`^[^@\s]+@[^@\s]+\.[^@\s]+$`), a2ui.Message("Enter an e-mail address such as ada@example.com")),
		a2ui.StringField("organization", "Organization", a2ui.MaxLength(200)),
	}
}

// registrationSpec is the registration of the protocol (the research
// agent of the design document), plus a guided setup, a help action, a dry-run
// action, a dataset with its dashboard, a workspace binding, rule checkpoints
// around the one external effect (sending the brief) and context.assign.
func registrationSpec() supervaizer.RegistrationSpec {
	return supervaizer.RegistrationSpec{
		A2UICatalogVersion: catalogVersion, // the slug and the display name come from agentName
		Surfaces: []supervaizer.SurfaceSpec{
			{ID: surfaceJobStart, Label: "Start research"},
			{ID: surfaceStepAwaiting, Label: "Review the brief"},
			{ID: surfaceStepDetail, Label: "Step detail"},
			{ID: surfaceAnalytics, Label: "Research progress"},
			{ID: surfaceContactImport, Label: "Import contacts", Description: "Upload a CSV of the people who receive the briefs."},
		},
		Actions: append(supervaizer.Actions(actionStart, actionStop, actionSubmit),
			withLabel(supervaizer.HelpAction(actionGoalSuggest, "goal"), "Suggest a goal"),
			supervaizer.ActionSpec{ID: actionTest, DryRun: true, Label: "Test run",
				Description: "Drafts a brief without saving it or sending anything."},
			supervaizer.Action(studio.ContextAssignAction),
			supervaizer.ActionSpec{ID: actionAsk, Mutating: new(false), Scope: "workspace", Label: "Ask about your jobs",
				Description: "Answers questions about the research jobs of the workspace."},
		),
		CaseLanes: []contracts.CaseLane{
			{ID: laneSetup, Label: "Setup"},
			{ID: laneWork, Label: "Work", Default: true},
			{ID: laneDeliverable, Label: "Deliverables"},
		},
		ArtifactTypes: []contracts.ArtifactType{
			{Type: artifactTranscript, Label: "Transcript"},
			{Type: artifactSynthesis, Label: "Synthesis"},
		},
		JobPolicy: &contracts.JobPolicy{
			Sync: &contracts.JobSyncPolicy{SupportedStatuses: []string{jobAwaiting, jobActive, jobCompleted, jobStopped, jobFailed}},
			Setup: &contracts.JobSetupPolicy{
				ActionScopes: []string{"job"},
				Plan:         a2ui.NewSetupPlan(true, a2ui.EstimatedCost("credits", 1, 5, "per brief, depending on the depth"), setupStep()),
			},
		},
		Resources: []contracts.ResourceDefinition{{
			ID: resourceContacts, Label: "Contacts", AutoSurface: true,
			Operations: []string{"list", "create", "update", "import"},
			Display: &contracts.Display{TitleField: ptr("name"), Columns: []string{"name", "email", "organization"},
				SearchFields: []string{"name", "email", "organization"}},
			Fields:       a2ui.ResourceFields(contactFields()...),
			MountedViews: []contracts.MountedView{{View: "import", Surface: surfaceContactImport}},
		}},
		Datasets: []contracts.DatasetDefinition{{
			ID: datasetProgress, Label: "Research progress", Scope: "mission",
			Display: &contracts.Display{TitleField: ptr("label"), Columns: []string{"label", "value"}},
		}},
		Dashboards: []contracts.DashboardDefinition{{
			ID: dashboardID, Label: "Mission overview", Surface: surfaceAnalytics,
			Widgets: dashboardWidgets(),
		}},
		// Opt in to rule checkpoints around the one external effect; the SDK
		// derives rule.checkpoint.resume and handles it.
		RuleCheckpoints: &contracts.RuleCheckpoints{Phases: []string{phaseBefore, phaseAfter}},
		// Bind an existing record or create one: the SDK derives the
		// workspace_binding.* actions and the creation surface.
		WorkspaceBinding: &contracts.WorkspaceBinding{
			Modes:  []string{"bind_existing", "create_and_bind"},
			Create: &contracts.BindingCreate{Fields: a2ui.ResourceFields(bindingFields()...)},
		},
	}
}

// dashboardWidgets are the widgets of the mission overview, in the
// registration and in the Dashboard document of mission.analytics.
func dashboardWidgets() []a2ui.Widget {
	ds := datasetProgress
	return []a2ui.Widget{{
		ID: "progress_by_stage", Title: "Briefs by stage",
		Data:   &a2ui.WidgetData{Mode: "ref", DatasetID: &ds},
		Layout: map[string]any{"w": 12, "h": 6},
		Visualization: a2ui.Visualization{Type: "vega-lite", Spec: json.RawMessage(`{
  "$schema": "https://vega.github.io/schema/vega-lite/v5.json",
  "mark": "bar",
  "encoding": {
    "x": {"field": "label", "type": "nominal", "sort": null, "title": null},
    "y": {"field": "value", "type": "quantitative", "title": "Jobs"}
  }
}`)},
	}}
}

// agentSpec describes the agent: its registration and the agent-level blocks
// Studio shows (introduction, full description) and bills (catalog).
func agentSpec() supervaizer.AgentSpec {
	return supervaizer.AgentSpec{
		Name:         agentName,
		Version:      agentVersion,
		Description:  "Turns a research question into a reviewed, sourced brief.",
		Author:       "Supervaize",
		Tags:         []string{"research", "example"},
		Registration: registrationSpec(),
		// A plain text A2A message goes to the conversation action.
		Conversation:         actionAsk,
		ConversationExamples: conversationExamples,
		Introduction: &contracts.Introduction{
			Tagline:      "Turns a research question into a sourced brief",
			Summary:      "Drafts a brief on a topic, asks an operator to review it, then sends it to the workspace's contacts.",
			ExampleGoals: []string{"Brief me on the EU battery market", "Compare these three analyst reports"},
		},
		FullDescription: &contracts.FullDescription{ // markdown
			Content: "# Research Agent\n\n" +
				"Drafts a brief on a topic, asks an operator to review it, then sends the approved brief " +
				"to the contacts of the workspace.\n\n" +
				"## How it works\n\n" +
				"1. **Setup**: name a topic and, optionally, a goal and a depth.\n" +
				"2. **Review**: the draft waits in the setup lane until an operator edits and approves it.\n" +
				"3. **Delivery**: the approved brief is sent once; governed jobs ask Studio's rule " +
				"checkpoints before and after sending.\n\n" +
				"## Limits\n\n- Public sources only\n- One brief per job\n",
		},
		BillingCatalog: contracts.BillingCatalog{{SKU: skuBrief, Unit: "brief", Description: "One sourced brief sent to the workspace's contacts"},
			{SKU: skuInputTokens, Unit: "token", Description: "Tokens the conversation's model read"},
			{SKU: skuOutputTokens, Unit: "token", Description: "Tokens the conversation's model wrote"}},
	}
}

func withLabel(a supervaizer.ActionSpec, label string) supervaizer.ActionSpec {
	a.Label = label
	return a
}

func ptr[T any](v T) *T { return &v }
