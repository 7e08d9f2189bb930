package main

import (
	"encoding/json"

	"github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/a2ui"
	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/studio"
)

// The agent's identity. The slug is derived from agentName; the registration
// repeats it and NewAgent checks that the two match.
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
	surfaceAnalytics     = contracts.DefaultDashboardSurface // mission.analytics
	surfaceContactImport = "mission.agent.surface.contact_import"

	actionStart       = contracts.DefaultStartAction   // job.start
	actionPreview     = contracts.DefaultPreviewAction // job.start.preview
	actionSubmit      = contracts.DefaultSubmitAction  // step.awaiting.submit
	actionStop        = "job.stop"
	actionSync        = contracts.DefaultSyncAction // job.sync
	actionGoalSuggest = "goal.suggest"
	actionTest        = "job.test"

	laneSetup       = "setup"
	laneWork        = "work"
	laneDeliverable = "deliverable"

	artifactTranscript = "transcript"
	artifactSynthesis  = "synthesis"

	resourceContacts = "contacts"
	datasetProgress  = "progress_metrics"
	dashboardID      = "mission_overview"

	skuBrief = "brief"
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

// setupStep is the one step of the setup plan, in the registration and in
// the plan job.start.preview returns.
func setupStep() contracts.SetupStep {
	return contracts.SetupStep{
		ID: "scope", Title: "Scope the research", Status: contracts.StepPending,
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
	confirm := true
	return supervaizer.RegistrationSpec{
		AgentSlug:          agentSlug,
		DisplayName:        agentName,
		A2UICatalogVersion: catalogVersion,
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
			Sync: &contracts.JobSyncPolicy{Action: actionSync,
				SupportedStatuses: []string{jobAwaiting, jobActive, jobCompleted, jobStopped, jobFailed}},
			Setup: &contracts.JobSetupPolicy{
				ActionScopes: []string{contracts.ScopeJob},
				Plan: contracts.TypedPlan(contracts.SetupPlan{
					ConfirmationRequired: &confirm,
					Steps:                []contracts.SetupStep{setupStep()},
					CostEstimate:         a2ui.EstimatedCost("credits", 1, 5, "per brief, depending on the depth"),
				}),
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
			ID: datasetProgress, Label: "Research progress", Scope: contracts.ScopeMission,
			Display: &contracts.Display{TitleField: ptr("label"), Columns: []string{"label", "value"}},
		}},
		Dashboards: []contracts.DashboardDefinition{{
			ID: dashboardID, Label: "Mission overview", Surface: surfaceAnalytics,
			Widgets: dashboardWidgets(),
		}},
		// Opt in to rule checkpoints around the one external effect; the SDK
		// derives rule.checkpoint.resume and handles it.
		RuleCheckpoints: &contracts.RuleCheckpoints{Version: 1, Phases: []string{contracts.PhaseBefore, contracts.PhaseAfter}},
		WorkspaceBinding: &contracts.WorkspaceBinding{
			Modes: []string{contracts.BindExisting, contracts.CreateAndBind},
			Create: &contracts.BindingCreate{
				Surface: contracts.BootstrapCreateSurface, Action: contracts.BootstrapCreateAction,
				Fields: a2ui.ResourceFields(bindingFields()...),
			},
		},
	}
}

// dashboardWidgets are the widgets of the mission overview, in the
// registration and in the Dashboard document of mission.analytics.
func dashboardWidgets() []contracts.Widget {
	ds := datasetProgress
	return []contracts.Widget{{
		ID: "progress_by_stage", Title: "Briefs by stage",
		Data:   &contracts.WidgetData{Mode: contracts.DataModeRef, DatasetID: &ds},
		Layout: map[string]any{"w": 12, "h": 6},
		Visualization: contracts.Visualization{Type: contracts.VisualizationVegaLite, Spec: json.RawMessage(`{
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
		Introduction: &contracts.Introduction{
			Tagline:      "Turns a research question into a sourced brief",
			Summary:      "Drafts a brief on a topic, asks an operator to review it, then sends it to the workspace's contacts.",
			ExampleGoals: []string{"Brief me on the EU battery market", "Compare these three analyst reports"},
		},
		FullDescription: &contracts.FullDescription{
			Format: contracts.FormatMarkdown,
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
		BillingCatalog: contracts.BillingCatalog{{SKU: skuBrief, Unit: "brief", Description: "One sourced brief sent to the workspace's contacts"}},
	}
}

func withLabel(a supervaizer.ActionSpec, label string) supervaizer.ActionSpec {
	a.Label = label
	return a
}

func ptr[T any](v T) *T { return &v }
