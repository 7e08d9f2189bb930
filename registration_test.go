package supervaizer_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	sv "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/internal/tools/contractstest"
	"github.com/supervaize/supervaizer-go/testing/golden"
)

// researchAgentSpec is the design document's research-agent.
func researchAgentSpec() sv.RegistrationSpec {
	return sv.RegistrationSpec{
		AgentSlug:          "research-agent",
		DisplayName:        "Research Agent",
		A2UICatalogVersion: "research-agent.2026-05-16",
		Surfaces:           sv.Surfaces("job.start", "case.step.awaiting", "case.step.detail", "mission.analytics"),
		Actions:            sv.Actions("job.start", "job.stop", "step.awaiting.submit"),
		CaseLanes: []contracts.CaseLane{
			{ID: "setup", Label: "Setup"},
			{ID: "work", Label: "Work", Default: true},
			{ID: "deliverable", Label: "Deliverables"},
		},
		ArtifactTypes: []contracts.ArtifactType{
			{Type: "transcript", Label: "Transcript"},
			{Type: "synthesis", Label: "Synthesis"},
		},
		JobPolicy: &contracts.JobPolicy{Sync: &contracts.JobSyncPolicy{Action: "job.sync"}},
		Resources: []contracts.ResourceDefinition{{
			ID: "contacts", Label: "Contacts", AutoSurface: true,
			Operations: []string{"list", "create", "update", "import"},
		}},
	}
}

func f64(v float64) *float64 { return &v }
func intp(v int) *int        { return &v }

// setupPlan is the complete setup-plan example of the protocol.
func setupPlan() contracts.SetupPlan {
	return contracts.SetupPlan{
		Steps: []contracts.SetupStep{{
			ID: "scope", Title: "Scope",
			Fields: []contracts.Field{
				{ID: "goal", Label: "Goal", Type: "text", Required: true, Multiline: true, MinRows: intp(4)},
				{ID: "mode", Label: "Mode", Type: "select", Options: []contracts.FieldOption{
					{Value: json.RawMessage(`"fast"`), Label: "Fast"}, {Value: json.RawMessage(`"custom"`), Label: "Custom"}}},
				{ID: "budget", Label: "Budget", Type: "number",
					DependsOn:  &contracts.DependsOn{Field: "mode", In: []string{"custom"}},
					Validation: &contracts.FieldValidation{Min: f64(0), Message: new("Budget cannot be negative")}},
				{ID: "sources", Label: "Sources", Type: "list",
					ItemFields: []contracts.Field{
						{ID: "url", Label: "URL", Type: "string", Required: true},
						{ID: "weight", Label: "Weight", Type: "integer"},
					},
					Validation: &contracts.FieldValidation{MaxItems: intp(10)}},
			},
			HelpActions: []string{"goal.suggest"},
		}},
		CostEstimate: &contracts.CostEstimate{Status: "estimated", Unit: "credits", Min: f64(5), Max: f64(20), Basis: "for 50 runs"},
	}
}

// fullSpec exercises every optional part: display texts, help and dry-run
// actions, setup plan, datasets, a vega-lite dashboard, workspace binding, rule
// checkpoints and scheduled start.
func fullSpec() sv.RegistrationSpec {
	return sv.RegistrationSpec{
		AgentSlug:          "research-agent",
		DisplayName:        "Research Agent",
		A2UICatalogVersion: "research-agent.2026-05-16",
		Surfaces: []sv.SurfaceSpec{
			{ID: "job.start", Label: "  Start research ", Description: "Describe the research you need."},
			{ID: "case.step.awaiting"},
			{ID: "mission.analytics"},
			{ID: "job.start", Label: "ignored: the first definition with text wins"},
		},
		Actions: []sv.ActionSpec{
			sv.HelpAction("goal.suggest", "goal"),
			{ID: "job.test", DryRun: true, Label: "Test run"},
			sv.Action("job.stop"),
		},
		JobPolicy: &contracts.JobPolicy{
			Sync:  &contracts.JobSyncPolicy{},
			Setup: &contracts.JobSetupPolicy{ActionScopes: []string{"job"}, Plan: contracts.TypedPlan(setupPlan())},
		},
		Datasets: []contracts.DatasetDefinition{{
			ID: "progress_metrics", Label: "Progress metrics", Scope: contracts.ScopeMission,
			Display: &contracts.Display{TitleField: new("label"), Columns: []string{"label", "value"}},
		}},
		Dashboards: []contracts.DashboardDefinition{{
			ID: "mission_overview", Label: "Mission overview",
			Widgets: []contracts.Widget{{
				ID: "progress_chart", Title: "Progress",
				Data:   &contracts.WidgetData{DatasetID: new("progress_metrics")},
				Layout: map[string]any{"w": 6, "h": 4},
				Visualization: contracts.Visualization{Type: contracts.VisualizationVegaLite, Spec: json.RawMessage(
					`{"mark":"bar","encoding":{"x":{"field":"label","type":"nominal"},"y":{"field":"value","type":"quantitative"}}}`)},
			}},
		}},
		WorkspaceBinding: &contracts.WorkspaceBinding{Required: true, Modes: []string{contracts.BindExisting, contracts.CreateAndBind}},
		RuleCheckpoints:  &contracts.RuleCheckpoints{Phases: []string{"before", "after"}, SecretRefs: []string{"job.fields.api_token"}},
		ScheduledStart:   true,
	}
}

// TestRegistrationGolden checks the builder byte for byte against registrations
// derived by hand from the spec.
func TestRegistrationGolden(t *testing.T) {
	tests := []struct {
		name, file string
		spec       sv.RegistrationSpec
	}{
		{"research agent", "research-agent.registration.json", researchAgentSpec()},
		{"every optional part", "research-agent.full.registration.json", fullSpec()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg, err := sv.BuildRegistration(tt.spec)
			require.NoError(t, err)
			got, err := marshalIndent(reg)
			require.NoError(t, err)
			got = append(got, '\n')
			golden.Bytes(t, filepath.Join("testdata", tt.file), got)
		})
	}
}

func TestRegistrationRoundTrip(t *testing.T) {
	for _, file := range []string{"research-agent.registration.json", "research-agent.full.registration.json"} {
		t.Run(file, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join("testdata", file))
			require.NoError(t, err)
			var reg contracts.Registration
			require.NoError(t, contracts.DefaultValidator().Decode(contracts.ModelRegistration, raw, &reg))
			again, err := marshalIndent(&reg)
			require.NoError(t, err)
			assert.Equal(t, strings.TrimSpace(string(raw)), string(again))
		})
	}
}

func TestBuildRegistrationDefaults(t *testing.T) {
	reg, err := sv.BuildRegistration(sv.RegistrationSpec{AgentSlug: "hello", DisplayName: "Hello", A2UICatalogVersion: "hello.1"})
	require.NoError(t, err)
	assert.Equal(t, "hello", reg.Agent.ID)
	assert.Equal(t, "/a2a", reg.A2A.ControllerURL)
	assert.Equal(t, "/.well-known/agents/hello_agent.json", reg.A2A.AgentCardURL)
	assert.Equal(t, contracts.A2UIVersion, reg.Versions.A2UIVersion)
	assert.Equal(t, contracts.A2AVersion, reg.Versions.A2AVersion)
	assert.Nil(t, reg.Versions.AGUIVersion)
	raw, err := contracts.Marshal(reg)
	require.NoError(t, err)
	for _, absent := range []string{"surface_definitions", "rule_checkpoints", "scheduled_start", "kind", "target_field", "dry_run"} {
		assert.NotContains(t, string(raw), `"`+absent+`"`, "a registration without the newer features must serialize as before")
	}
	assert.Contains(t, string(raw), `"workspace_binding":null`)
	assert.Contains(t, string(raw), `"ag_ui_version":null`)
}

// TestActionPrecedence is the worked example of the protocol plus the
// other precedence cases: explicit > derived > bare, first mention fixes the position.
func TestActionPrecedence(t *testing.T) {
	spec := sv.RegistrationSpec{
		AgentSlug: "a", DisplayName: "A", A2UICatalogVersion: "a.1",
		Actions: []sv.ActionSpec{
			sv.Action("resource.contacts.list"),
			{ID: "job.sync", Mutating: new(false), Scope: contracts.ScopeMission},
			sv.Action("x"),
			{ID: "x", Mutating: new(false), Scope: contracts.ScopeWorkspace}, // explicit replaces an earlier bare
			{ID: "y", Scope: contracts.ScopeMission},
			{ID: "y", Scope: contracts.ScopeWorkspace}, // explicit seen first: ignored
			sv.Action("y"), // bare after anything: ignored
		},
		Resources: []contracts.ResourceDefinition{{ID: "contacts", Label: "Contacts", Operations: []string{"list", "create"}}},
		JobPolicy: &contracts.JobPolicy{Sync: &contracts.JobSyncPolicy{}},
	}
	reg, err := sv.BuildRegistration(spec)
	require.NoError(t, err)
	type row struct {
		id       string
		mutating bool
		scope    string
	}
	var got []row
	for _, a := range reg.Capabilities.Actions {
		got = append(got, row{a.ID, a.Mutating, a.Scope})
	}
	assert.Equal(t, []row{
		{"resource.contacts.list", true, "workspace"}, // bare defers to derived
		{"job.sync", false, "mission"},                // explicit wins over derived
		{"x", false, "workspace"},
		{"y", true, "mission"},
		{"resource.contacts.create", true, "workspace"},
	}, got)
}

func TestDerivedSurfacesAndActions(t *testing.T) {
	spec := sv.RegistrationSpec{
		AgentSlug: "a", DisplayName: "A", A2UICatalogVersion: "a.1",
		Surfaces:   sv.Surfaces("custom", "", "custom"),
		Resources:  []contracts.ResourceDefinition{{ID: "r", Label: "R", AutoSurface: true, Scope: contracts.ScopeJob, Operations: []string{"get"}}},
		Datasets:   []contracts.DatasetDefinition{{ID: "d", Label: "D", AutoSurface: true}, {ID: "e", Label: "E"}},
		Dashboards: []contracts.DashboardDefinition{{ID: "x", Label: "X", Surface: "job.analytics"}, {ID: "y", Label: "Y"}},
		JobPolicy:  &contracts.JobPolicy{Setup: &contracts.JobSetupPolicy{}},
		WorkspaceBinding: &contracts.WorkspaceBinding{Modes: []string{contracts.CreateAndBind},
			Existing: &contracts.BindingExisting{Action: "binding.list"}},
		RuleCheckpoints: &contracts.RuleCheckpoints{Phases: []string{"before"}},
	}
	// A blank surface id is an error; build without it.
	_, err := sv.BuildRegistration(spec)
	requireProblem(t, err, "/surfaces/1/id", "nonblank")
	spec.Surfaces = sv.Surfaces("custom", "custom")
	reg, err := sv.BuildRegistration(spec)
	require.NoError(t, err)
	assert.Equal(t, []string{"custom", "mission.agent.resource.r", "mission.agent.dataset.d", "job.analytics", "mission.analytics", "workspace_binding.create"},
		reg.Capabilities.Surfaces)
	var ids []string
	for _, a := range reg.Capabilities.Actions {
		ids = append(ids, a.ID)
	}
	assert.Equal(t, []string{
		"resource.r.get", "dataset.d.query", "dataset.e.query",
		"job.start.preview", "job.start", "step.awaiting.submit",
		"binding.list", "workspace_binding.create",
		"rule.checkpoint.resume",
	}, ids)
	r := reg.Capabilities.Action("resource.r.get")
	assert.True(t, r.Mutating)
	assert.Equal(t, contracts.ScopeJob, r.Scope, "derived resource actions take the resource's scope")
	assert.False(t, reg.Capabilities.Action("dataset.e.query").Mutating)
	assert.False(t, reg.Capabilities.Action("job.start.preview").Mutating)
	assert.Equal(t, contracts.ScopeWorkspace, reg.Capabilities.Action("binding.list").Scope)
	// Explicit existing kept although bind_existing is not listed; create filled by default.
	assert.Equal(t, "binding.list", reg.WorkspaceBinding.Existing.Action)
	assert.Equal(t, "agent_workspace_ref", reg.WorkspaceBinding.Existing.ValueField)
	assert.Equal(t, contracts.BootstrapCreateAction, reg.WorkspaceBinding.Create.Action)
	assert.Equal(t, 1, reg.Capabilities.RuleCheckpoints.Version)
}

func requireProblem(t *testing.T, err error, path, rule string) {
	t.Helper()
	contractstest.RequireProblem(t, err, path, rule, "")
}

// TestBuildRegistrationRules covers every validation rule of the protocol
// The builder enforces, each with the exact path and rule.
func TestBuildRegistrationRules(t *testing.T) {
	base := func() sv.RegistrationSpec {
		return sv.RegistrationSpec{AgentSlug: "a", DisplayName: "A", A2UICatalogVersion: "a.1"}
	}
	long := strings.Repeat("é", 301)
	tests := []struct {
		name   string
		mutate func(*sv.RegistrationSpec)
		path   string
		rule   string
	}{
		{"agent_slug required", func(s *sv.RegistrationSpec) { s.AgentSlug = "" }, "/agent_slug", "required"},
		{"display_name required", func(s *sv.RegistrationSpec) { s.DisplayName = " " }, "/display_name", "required"},
		{"catalog version required", func(s *sv.RegistrationSpec) { s.A2UICatalogVersion = "" }, "/a2ui_catalog_version", "required"},
		{"blank action id", func(s *sv.RegistrationSpec) { s.Actions = sv.Actions(" ") }, "/actions/0/id", "nonblank"},
		{"mutating help action", func(s *sv.RegistrationSpec) {
			s.Actions = []sv.ActionSpec{{ID: "goal.suggest", Kind: contracts.KindHelp}}
		}, "/actions/0/mutating", "help_action"},
		{"target_field without help", func(s *sv.RegistrationSpec) {
			s.Actions = []sv.ActionSpec{{ID: "x", TargetField: "goal"}}
		}, "/actions/0/target_field", "target_field"},
		{"action label too long", func(s *sv.RegistrationSpec) {
			s.Actions = []sv.ActionSpec{{ID: "x", Label: long}}
		}, "/actions/0/label", "maxLength"},
		{"action description too long", func(s *sv.RegistrationSpec) {
			s.Actions = []sv.ActionSpec{{ID: "x", Description: long}}
		}, "/actions/0/description", "maxLength"},
		{"surface label too long", func(s *sv.RegistrationSpec) {
			s.Surfaces = []sv.SurfaceSpec{{ID: "x", Label: long}}
		}, "/surfaces/0/label", "maxLength"},
		{"unknown scope", func(s *sv.RegistrationSpec) {
			s.Actions = []sv.ActionSpec{{ID: "x", Scope: "tenant"}}
		}, "/capabilities/actions/0/scope", "enum"},
		{"unknown kind", func(s *sv.RegistrationSpec) {
			s.Actions = []sv.ActionSpec{{ID: "x", Kind: "query"}}
		}, "/capabilities/actions/0/kind", "enum"},
		{"scheduled_start needs job.start", func(s *sv.RegistrationSpec) { s.ScheduledStart = true }, "/scheduled_start", "scheduled_start"},
		{"help action of the plan undeclared", func(s *sv.RegistrationSpec) {
			s.JobPolicy = &contracts.JobPolicy{Setup: &contracts.JobSetupPolicy{Plan: contracts.TypedPlan(setupPlan())}}
		}, "/job_policy/setup/plan/steps/0/help_actions/0", "help_action"},
		{"help action of the plan declared as command", func(s *sv.RegistrationSpec) {
			s.Actions = sv.Actions("goal.suggest")
			s.JobPolicy = &contracts.JobPolicy{Setup: &contracts.JobSetupPolicy{Plan: contracts.TypedPlan(setupPlan())}}
		}, "/job_policy/setup/plan/steps/0/help_actions/0", "help_action"},
		{"help action of a raw plan undeclared", func(s *sv.RegistrationSpec) {
			p, err := contracts.RawPlan(json.RawMessage(`{"steps":[{"help_actions":["goal.check"]}],"anything":"passes"}`))
			if err != nil {
				panic(err)
			}
			s.JobPolicy = &contracts.JobPolicy{Setup: &contracts.JobSetupPolicy{Plan: p}}
		}, "/job_policy/setup/plan/steps/0/help_actions/0", "help_action"},
		{"blank sync action", func(s *sv.RegistrationSpec) {
			s.JobPolicy = &contracts.JobPolicy{Sync: &contracts.JobSyncPolicy{Action: "  "}}
		}, "/job_policy/sync/action", "nonblank"},
		{"blank setup start action", func(s *sv.RegistrationSpec) {
			s.JobPolicy = &contracts.JobPolicy{Setup: &contracts.JobSetupPolicy{StartAction: " "}}
		}, "/job_policy/setup/start_action", "nonblank"},
		{"setup action scope", func(s *sv.RegistrationSpec) {
			s.JobPolicy = &contracts.JobPolicy{Setup: &contracts.JobSetupPolicy{ActionScopes: []string{"mission"}}}
		}, "/job_policy/setup/action_scopes/0", "enum"},
		{"offline start policy", func(s *sv.RegistrationSpec) {
			s.JobPolicy = &contracts.JobPolicy{OfflineStartPolicy: "queue"}
		}, "/job_policy/offline_start_policy", "enum"},
		{"offline running policy", func(s *sv.RegistrationSpec) {
			s.JobPolicy = &contracts.JobPolicy{OfflineRunningPolicy: "keep"}
		}, "/job_policy/offline_running_policy", "enum"},
		{"resource scope", func(s *sv.RegistrationSpec) {
			s.Resources = []contracts.ResourceDefinition{{ID: "r", Label: "R", Scope: "tenant"}}
		}, "/resources/0/scope", "enum"},
		{"resource id blank", func(s *sv.RegistrationSpec) {
			s.Resources = []contracts.ResourceDefinition{{ID: " ", Label: "R"}}
		}, "/resources/0/id", "nonblank"},
		{"options source type", func(s *sv.RegistrationSpec) {
			s.Resources = []contracts.ResourceDefinition{{ID: "r", Label: "R", Fields: []contracts.ResourceField{
				{ID: "f", Label: "F", OptionsSource: &contracts.OptionsSource{Type: "query", Resource: "x"}}}}}
		}, "/resources/0/fields/0/options_source/type", "enum"},
		{"dataset scope", func(s *sv.RegistrationSpec) {
			s.Datasets = []contracts.DatasetDefinition{{ID: "d", Label: "D", Scope: "global"}}
		}, "/datasets/0/scope", "enum"},
		{"ref widget without datasetId", func(s *sv.RegistrationSpec) {
			s.Dashboards = []contracts.DashboardDefinition{{ID: "x", Label: "X", Widgets: []contracts.Widget{{ID: "w", Title: "W", Data: &contracts.WidgetData{}}}}}
		}, "/dashboards/0/widgets/0/data/datasetId", "type"},
		{"ref widget naming an undeclared dataset", func(s *sv.RegistrationSpec) {
			s.Dashboards = []contracts.DashboardDefinition{{ID: "x", Label: "X", Widgets: []contracts.Widget{{ID: "w", Title: "W", Data: &contracts.WidgetData{DatasetID: new("nope")}}}}}
		}, "/dashboards/0/widgets/0/data/datasetId", "dataset_ref"},
		{"action widget without action", func(s *sv.RegistrationSpec) {
			s.Dashboards = []contracts.DashboardDefinition{{ID: "x", Label: "X", Widgets: []contracts.Widget{{ID: "w", Title: "W", Data: &contracts.WidgetData{Mode: "action"}}}}}
		}, "/dashboards/0/widgets/0/data/action", "type"},
		{"inline widget without values", func(s *sv.RegistrationSpec) {
			s.Dashboards = []contracts.DashboardDefinition{{ID: "x", Label: "X", Widgets: []contracts.Widget{{ID: "w", Title: "W", Data: &contracts.WidgetData{Mode: "inline"}}}}}
		}, "/dashboards/0/widgets/0/data/values", "type"},
		{"unknown widget mode", func(s *sv.RegistrationSpec) {
			s.Dashboards = []contracts.DashboardDefinition{{ID: "x", Label: "X", Widgets: []contracts.Widget{{ID: "w", Title: "W", Data: &contracts.WidgetData{Mode: "stream"}}}}}
		}, "/dashboards/0/widgets/0/data/mode", "enum"},
		{"vega-lite without spec", func(s *sv.RegistrationSpec) {
			s.Dashboards = []contracts.DashboardDefinition{{ID: "x", Label: "X", Widgets: []contracts.Widget{{ID: "w", Title: "W",
				Visualization: contracts.Visualization{Type: contracts.VisualizationVegaLite}}}}}
		}, "/dashboards/0/widgets/0/visualization/spec", "type"},
		{"unknown visualization", func(s *sv.RegistrationSpec) {
			s.Dashboards = []contracts.DashboardDefinition{{ID: "x", Label: "X", Widgets: []contracts.Widget{{ID: "w", Title: "W",
				Visualization: contracts.Visualization{Type: "chart"}}}}}
		}, "/dashboards/0/widgets/0/visualization/type", "enum"},
		{"required binding without modes", func(s *sv.RegistrationSpec) {
			s.WorkspaceBinding = &contracts.WorkspaceBinding{Required: true}
		}, "/workspace_binding/modes", "workspace_binding"},
		{"unknown binding mode", func(s *sv.RegistrationSpec) {
			s.WorkspaceBinding = &contracts.WorkspaceBinding{Modes: []string{"link"}}
		}, "/workspace_binding/modes/0", "enum"},
		{"rule checkpoint phases empty", func(s *sv.RegistrationSpec) {
			s.RuleCheckpoints = &contracts.RuleCheckpoints{}
		}, "/capabilities/rule_checkpoints/phases", "minItems"},
		{"rule checkpoint phase unknown", func(s *sv.RegistrationSpec) {
			s.RuleCheckpoints = &contracts.RuleCheckpoints{Phases: []string{"during"}}
		}, "/capabilities/rule_checkpoints/phases/0", "enum"},
		{"rule checkpoint duplicate phase", func(s *sv.RegistrationSpec) {
			s.RuleCheckpoints = &contracts.RuleCheckpoints{Phases: []string{"before", "before"}}
		}, "/capabilities/rule_checkpoints/phases", "uniqueItems"},
		{"rule checkpoint version", func(s *sv.RegistrationSpec) {
			s.RuleCheckpoints = &contracts.RuleCheckpoints{Version: 2, Phases: []string{"before"}}
		}, "/capabilities/rule_checkpoints/version", "const"},
		{"secret ref path", func(s *sv.RegistrationSpec) {
			s.RuleCheckpoints = &contracts.RuleCheckpoints{Phases: []string{"before"}, SecretRefs: []string{"env.TOKEN"}}
		}, "/capabilities/rule_checkpoints/secret_refs/0", "pattern"},
		{"secret ref duplicate", func(s *sv.RegistrationSpec) {
			s.RuleCheckpoints = &contracts.RuleCheckpoints{Phases: []string{"before"}, SecretRefs: []string{"context.a", "context.a"}}
		}, "/capabilities/rule_checkpoints/secret_refs", "uniqueItems"},
		{"plan step duplicate id", func(s *sv.RegistrationSpec) {
			p := setupPlan()
			p.Steps = append(p.Steps, contracts.SetupStep{ID: "scope", Title: "Again"})
			s.Actions = []sv.ActionSpec{sv.HelpAction("goal.suggest", "goal")}
			s.JobPolicy = &contracts.JobPolicy{Setup: &contracts.JobSetupPolicy{Plan: contracts.TypedPlan(p)}}
		}, "/job_policy/setup/plan/steps/1/id", "unique"},
		{"plan min_rows without multiline", func(s *sv.RegistrationSpec) {
			p := setupPlan()
			p.Steps[0].Fields[0].Multiline = false
			s.Actions = []sv.ActionSpec{sv.HelpAction("goal.suggest", "goal")}
			s.JobPolicy = &contracts.JobPolicy{Setup: &contracts.JobSetupPolicy{Plan: contracts.TypedPlan(p)}}
		}, "/job_policy/setup/plan/steps/0/fields/0/multiline", "required"},
		{"plan validation rule for another type", func(s *sv.RegistrationSpec) {
			p := setupPlan()
			p.Steps[0].Fields[0].Validation = &contracts.FieldValidation{Min: f64(1)}
			s.Actions = []sv.ActionSpec{sv.HelpAction("goal.suggest", "goal")}
			s.JobPolicy = &contracts.JobPolicy{Setup: &contracts.JobSetupPolicy{Plan: contracts.TypedPlan(p)}}
		}, "/job_policy/setup/plan/steps/0/fields/0/validation/min", "validation_type"},
		{"plan unknown-cost with min", func(s *sv.RegistrationSpec) {
			p := setupPlan()
			p.CostEstimate = &contracts.CostEstimate{Status: "unknown", Min: f64(1)}
			s.Actions = []sv.ActionSpec{sv.HelpAction("goal.suggest", "goal")}
			s.JobPolicy = &contracts.JobPolicy{Setup: &contracts.JobSetupPolicy{Plan: contracts.TypedPlan(p)}}
		}, "/job_policy/setup/plan/cost_estimate", "not"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := base()
			tt.mutate(&spec)
			reg, err := sv.BuildRegistration(spec)
			assert.Nil(t, reg)
			requireProblem(t, err, tt.path, tt.rule)
			assert.NotContains(t, err.Error(), long, "errors never repeat the input value")
		})
	}
}

func TestSurfaceDefinitionRules(t *testing.T) {
	v := contracts.DefaultValidator()
	reg, err := sv.BuildRegistration(sv.RegistrationSpec{AgentSlug: "a", DisplayName: "A", A2UICatalogVersion: "a.1", Surfaces: sv.Surfaces("s")})
	require.NoError(t, err)
	reg.Capabilities.SurfaceDefinitions = []contracts.SurfaceDefinition{{ID: "other", Label: "x"}}
	_, err = v.ValidateValue(contracts.ModelRegistration, reg)
	requireProblem(t, err, "/capabilities/surface_definitions/0/id", "declared_surface")
	reg.Capabilities.SurfaceDefinitions = []contracts.SurfaceDefinition{{ID: "s", Label: "x"}, {ID: "s", Label: "y"}}
	_, err = v.ValidateValue(contracts.ModelRegistration, reg)
	requireProblem(t, err, "/capabilities/surface_definitions/1/id", "unique")

	// A surface object without text declares nothing: no surface_definitions at all.
	reg, err = sv.BuildRegistration(sv.RegistrationSpec{AgentSlug: "a", DisplayName: "A", A2UICatalogVersion: "a.1",
		Surfaces: []sv.SurfaceSpec{{ID: "s", Label: "   "}}})
	require.NoError(t, err)
	raw, err := contracts.Marshal(reg)
	require.NoError(t, err)
	assert.NotContains(t, string(raw), "surface_definitions")
}

func TestParseRegistrationAcceptsBareActionStrings(t *testing.T) {
	raw := []byte(`{"agent":{"id":"a","slug":"a","display_name":"A"},"versions":{"a2ui_version":"v0.8","a2ui_catalog_version":"c","a2a_version":"0.2.6"},
		"a2a":{"agent_card_url":"/c","controller_url":"/a2a"},"capabilities":{"surfaces":[],"actions":["job.start",{"id":"job.sync","mutating":false}]}}`)
	var reg contracts.Registration
	require.NoError(t, contracts.DefaultValidator().Decode(contracts.ModelRegistration, raw, &reg))
	require.Len(t, reg.Capabilities.Actions, 2)
	assert.Equal(t, contracts.ActionDefinition{ID: "job.start", Mutating: true, Scope: "job", Kind: "command"}, reg.Capabilities.Actions[0])
	assert.False(t, reg.Capabilities.Actions[1].Mutating)
	assert.Equal(t, "job", reg.Capabilities.Actions[1].Scope)
	out, err := contracts.Marshal(&reg)
	require.NoError(t, err)
	assert.Contains(t, string(out), `"actions":[{"id":"job.start","mutating":true,"scope":"job"},{"id":"job.sync","mutating":false,"scope":"job"}]`)
}

func TestParseRegistrationRejectsOtherContractVersions(t *testing.T) {
	raw := []byte(`{"supervaizer_contract_version":3,"agent":{"id":"a","slug":"a","display_name":"A"},"versions":{"a2ui_version":"v0.8","a2ui_catalog_version":"c","a2a_version":"0.2.6"},"a2a":{"agent_card_url":"/c","controller_url":"/a2a"}}`)
	err := contracts.DefaultValidator().Validate(contracts.ModelRegistration, raw)
	requireProblem(t, err, "/supervaizer_contract_version", "const")
}

// marshalIndent is contracts.Marshal, indented as json.MarshalIndent indents.
func marshalIndent(v any) ([]byte, error) {
	b, err := contracts.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}
