package supervaizer

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/internal/validate"
	"github.com/supervaize/supervaizer-go/internal/wire"
)

// RegistrationSpec declares an agent's v2 registration: set it in
// [AgentSpec].Registration, where [NewAgent] fills AgentSlug, DisplayName and
// A2UICatalogVersion from the agent when they are empty. It is also the input
// of [BuildRegistration] (for tools), the Go counterpart of the Python
// build_v2_agent_registration, where those three are required. Every other
// input has the default the protocol gives.
type RegistrationSpec struct {
	AgentSlug          string // must equal the agent's derived slug; AgentSpec default: that slug
	DisplayName        string // AgentSpec default: the agent's Name
	A2UICatalogVersion string // the agent's own surface-catalog version; AgentSpec default: "<slug>.<Version>"

	AgentID       string // default: AgentSlug
	ControllerURL string // default: "/a2a"
	AgentCardURL  string // default: "/.well-known/agents/<slug>_agent.json"
	A2UIVersion   string // default: contracts.A2UIVersion ("v0.8")
	A2AVersion    string // default: contracts.A2AVersion ("0.2.6")
	AGUIVersion   string // default: unset (null)

	Transport       *contracts.Transport       // default: JSON-RPC and SSE, no push notifications
	ExternalInterop *contracts.ExternalInterop // default: both false

	Surfaces         []SurfaceSpec                   // declared surfaces (ids, optionally with display text)
	Actions          []ActionSpec                    // declared actions (bare ids or explicit definitions)
	CaseLanes        []contracts.CaseLane            // the agent's lanes
	ArtifactTypes    []contracts.ArtifactType        // the agent's artifact types
	JobPolicy        *contracts.JobPolicy            // default: contracts.DefaultJobPolicy()
	Resources        []contracts.ResourceDefinition  // agent-owned business objects
	Datasets         []contracts.DatasetDefinition   // read-oriented tables
	Dashboards       []contracts.DashboardDefinition // Studio-rendered dashboards
	WorkspaceBinding *contracts.WorkspaceBinding     // agent-side workspace record, default none
	RuleCheckpoints  *contracts.RuleCheckpoints      // opt-in rule-checkpoint capability
	ScheduledStart   bool                            // Studio may start jobs on a schedule (needs job.start)
}

// SurfaceSpec declares a surface, optionally with display text. Text is display
// only, never an authorization input.
type SurfaceSpec struct {
	ID          string
	Label       string // plain text, trimmed, at most 300 characters
	Description string // plain text, trimmed, at most 300 characters
}

// Surfaces declares several surfaces by id.
func Surfaces(ids ...string) []SurfaceSpec {
	out := make([]SurfaceSpec, len(ids))
	for i, id := range ids {
		out[i] = SurfaceSpec{ID: id}
	}
	return out
}

// ActionSpec declares an action. A bare spec (from [Action]) declares only the
// id and defers to derived metadata; any other spec is an explicit definition
// that keeps its own metadata over derived metadata.
type ActionSpec struct {
	ID          string
	Mutating    *bool  // nil: true (the restrictive reading); help actions must set false
	Scope       string // "workspace", "mission" or "job"; "": "job"
	Kind        string // "command" (default) or "help"
	TargetField string // setup field a help action fills; help actions only
	DryRun      bool   // marks a dry-run action
	Label       string // plain text, trimmed, at most 300 characters
	Description string // plain text, trimmed, at most 300 characters

	bare bool
}

// Action declares an action by id only (a bare string in the Python builder):
// mutating, job scope, unless a derivation rule gives it other metadata.
func Action(id string) ActionSpec { return ActionSpec{ID: id, bare: true} }

// Actions declares several actions by id.
func Actions(ids ...string) []ActionSpec {
	out := make([]ActionSpec, len(ids))
	for i, id := range ids {
		out[i] = Action(id)
	}
	return out
}

// HelpAction declares a help action (kind "help", not mutating) that fills the
// setup field targetField ("" for none).
func HelpAction(id, targetField string) ActionSpec {
	return ActionSpec{ID: id, Mutating: new(false), Kind: contracts.KindHelp, TargetField: targetField}
}

// ReadOnlyAction declares an explicit non-mutating action with the given scope.
func ReadOnlyAction(id, scope string) ActionSpec {
	return ActionSpec{ID: id, Mutating: new(false), Scope: scope}
}

// AgentMethods are controller-level methods exposed as actions: agent.refresh
// and agent.custom.<key>. Set them in [AgentSpec].Methods (their one place):
// [NewAgent] appends their action ids to the registration when missing and
// registers their handlers.
type AgentMethods struct {
	Refresh *AgentMethod
	Custom  []CustomMethod // in declaration order; keys match ^[A-Za-z0-9_-]+$
}

// CustomMethod is an agent.custom.<Key> method.
type CustomMethod struct {
	Key string
	AgentMethod
}

// AgentMethod is one agent method.
type AgentMethod struct {
	Handler     MethodHandler  // required
	Params      map[string]any // passed to the handler with each request
	Description string
}

// actionIDs returns the derived action ids, in order.
func (m *AgentMethods) actionIDs() []string {
	if m == nil {
		return nil
	}
	var ids []string
	if m.Refresh != nil {
		ids = append(ids, "agent.refresh")
	}
	for _, c := range m.Custom {
		ids = append(ids, "agent.custom."+c.Key)
	}
	return ids
}

var customKeyRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

const maxDisplayText = 300

// RuleCheckpointResumeAction is the action Studio invokes to deliver a
// rule-checkpoint decision; derived when rule checkpoints are declared.
const RuleCheckpointResumeAction = "rule.checkpoint.resume"

// BuildRegistration builds and validates a v2 registration: it applies every
// default and derivation rule of the protocol (derived surfaces and
// actions, metadata precedence explicit > derived > bare, workspace-binding
// defaults) and validates the result against the contracts. An invalid input
// returns a *contracts.ValidationError whose problems name the input path and
// the rule; it never panics on user data.
func BuildRegistration(spec RegistrationSpec) (*contracts.Registration, error) {
	b := regBuilder{}
	reg := b.build(spec)
	if len(b.problems) > 0 {
		return nil, &contracts.ValidationError{Model: contracts.ModelRegistration, Problems: b.problems}
	}
	if _, err := validate.Default().ValidateValue(contracts.ModelRegistration, reg); err != nil {
		return nil, err
	}
	return reg, nil
}

type regBuilder struct{ problems []contracts.Problem }

func (b *regBuilder) fail(rule, format string, args []any, loc ...any) {
	b.problems = append(b.problems, contracts.Problem{Loc: loc, Msg: fmt.Sprintf(format, args...), Type: rule, Path: pointerOf(loc)})
}

func pointerOf(loc []any) string {
	var sb strings.Builder
	for _, seg := range loc {
		sb.WriteByte('/')
		switch s := seg.(type) {
		case int:
			sb.WriteString(strconv.Itoa(s))
		default:
			sb.WriteString(wire.PointerToken(fmt.Sprint(s)))
		}
	}
	return sb.String()
}

// text trims display text and checks its length.
func (b *regBuilder) text(s string, loc ...any) string {
	s = strings.TrimSpace(s)
	if n := utf8.RuneCountInString(s); n > maxDisplayText {
		b.fail("maxLength", "longer than %d characters (%d)", []any{maxDisplayText, n}, loc...)
	}
	return s
}

func (b *regBuilder) required(v, name string) {
	if strings.TrimSpace(v) == "" {
		b.fail("required", "%s is required", []any{name}, name)
	}
}

// orDefault returns def for an unset (empty) value. A value made of white space
// is kept, so the contracts reject it as blank instead of silently replacing it.
func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

func (b *regBuilder) build(spec RegistrationSpec) *contracts.Registration {
	b.required(spec.AgentSlug, "agent_slug")
	b.required(spec.DisplayName, "display_name")
	b.required(spec.A2UICatalogVersion, "a2ui_catalog_version")

	reg := &contracts.Registration{
		ContractVersion: contracts.ContractVersion,
		Agent: contracts.AgentIdentity{
			ID:          orDefault(spec.AgentID, spec.AgentSlug),
			Slug:        spec.AgentSlug,
			DisplayName: spec.DisplayName,
		},
		Versions: contracts.Versions{
			A2UIVersion:        orDefault(spec.A2UIVersion, contracts.A2UIVersion),
			A2UICatalogVersion: spec.A2UICatalogVersion,
			A2AVersion:         orDefault(spec.A2AVersion, contracts.A2AVersion),
		},
		A2A: contracts.A2AEndpoints{
			AgentCardURL:  orDefault(spec.AgentCardURL, "/.well-known/agents/"+spec.AgentSlug+"_agent.json"),
			ControllerURL: orDefault(spec.ControllerURL, "/a2a"),
			Transport:     contracts.DefaultTransport(),
		},
		JobPolicy:        contracts.DefaultJobPolicy(),
		Resources:        cloneSlice(spec.Resources),
		Datasets:         cloneSlice(spec.Datasets),
		Dashboards:       cloneSlice(spec.Dashboards),
		WorkspaceBinding: b.workspaceBinding(spec.WorkspaceBinding),
	}
	if spec.AGUIVersion != "" {
		reg.Versions.AGUIVersion = new(spec.AGUIVersion)
	}
	if spec.Transport != nil {
		reg.A2A.Transport = *spec.Transport
	}
	if spec.ExternalInterop != nil {
		reg.A2A.ExternalInterop = *spec.ExternalInterop
	}
	if spec.JobPolicy != nil {
		reg.JobPolicy = *spec.JobPolicy
		b.jobPolicy(&reg.JobPolicy)
	}
	for i := range reg.Resources {
		if reg.Resources[i].Scope == "" {
			reg.Resources[i].Scope = contracts.ScopeWorkspace
		}
		if reg.Resources[i].RequiresContext == nil {
			reg.Resources[i].RequiresContext = contracts.DefaultRequiresContext()
		}
	}
	for i := range reg.Datasets {
		if reg.Datasets[i].Scope == "" {
			reg.Datasets[i].Scope = contracts.ScopeWorkspace
		}
	}
	for i := range reg.Dashboards {
		reg.Dashboards[i].Surface = orDefault(reg.Dashboards[i].Surface, contracts.DefaultDashboardSurface)
	}
	reg.Capabilities = contracts.Capabilities{
		CaseLanes:       cloneSlice(spec.CaseLanes),
		ArtifactTypes:   cloneSlice(spec.ArtifactTypes),
		ScheduledStart:  spec.ScheduledStart,
		RuleCheckpoints: b.ruleCheckpoints(spec.RuleCheckpoints),
	}
	reg.Capabilities.Surfaces, reg.Capabilities.SurfaceDefinitions = b.surfaces(spec, reg)
	reg.Capabilities.Actions = b.actions(spec, reg)
	b.afterMerge(reg)
	return reg
}

func cloneSlice[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return append([]T(nil), s...)
}

func (b *regBuilder) jobPolicy(p *contracts.JobPolicy) {
	if p.OfflineStartPolicy == "" {
		p.OfflineStartPolicy = contracts.OfflineStartBlock
	}
	if p.OfflineRunningPolicy == "" {
		p.OfflineRunningPolicy = contracts.OfflineRunningFailInStudio
	}
	if p.Sync != nil {
		s := *p.Sync
		s.Action = orDefault(s.Action, contracts.DefaultSyncAction)
		if s.SupportedStatuses == nil {
			s.SupportedStatuses = []string{}
		}
		p.Sync = &s
	}
	if p.Setup != nil {
		s := *p.Setup
		s.PreviewAction = orDefault(s.PreviewAction, contracts.DefaultPreviewAction)
		s.StartAction = orDefault(s.StartAction, contracts.DefaultStartAction)
		s.SubmitAction = orDefault(s.SubmitAction, contracts.DefaultSubmitAction)
		if s.ActionScopes == nil {
			s.ActionScopes = []string{}
		}
		p.Setup = &s
	}
}

func (b *regBuilder) workspaceBinding(in *contracts.WorkspaceBinding) *contracts.WorkspaceBinding {
	if in == nil {
		return nil
	}
	wb := *in
	wb.ReferenceLabel = orDefault(wb.ReferenceLabel, contracts.DefaultReferenceLabel)
	wb.ReferenceHelp = orDefault(wb.ReferenceHelp, contracts.DefaultReferenceHelp)
	wb.ReferencePlaceholder = orDefault(wb.ReferencePlaceholder, contracts.DefaultReferencePlaceholder)
	if wb.Modes == nil {
		wb.Modes = []string{}
	}
	if wb.Required && len(wb.Modes) == 0 {
		b.fail("workspace_binding", "a required workspace binding requires at least one mode", nil, "workspace_binding", "modes")
	}
	for _, m := range wb.Modes {
		switch m {
		case contracts.BindExisting:
			if wb.Existing == nil {
				wb.Existing = contracts.DefaultBindingExisting()
			}
		case contracts.CreateAndBind:
			if wb.Create == nil {
				wb.Create = contracts.DefaultBindingCreate()
			}
		}
	}
	if wb.Existing != nil {
		e := *wb.Existing
		d := contracts.DefaultBindingExisting()
		e.Action, e.ValueField, e.LabelField = orDefault(e.Action, d.Action), orDefault(e.ValueField, d.ValueField), orDefault(e.LabelField, d.LabelField)
		wb.Existing = &e
	}
	if wb.Create != nil {
		c := *wb.Create
		d := contracts.DefaultBindingCreate()
		c.Surface, c.Action = orDefault(c.Surface, d.Surface), orDefault(c.Action, d.Action)
		if c.Fields == nil {
			c.Fields = []contracts.ResourceField{}
		}
		wb.Create = &c
	}
	return &wb
}

func (b *regBuilder) ruleCheckpoints(in *contracts.RuleCheckpoints) *contracts.RuleCheckpoints {
	if in == nil {
		return nil
	}
	rc := *in
	if rc.Version == 0 {
		rc.Version = contracts.RuleCheckpointsVersion
	}
	if rc.SecretRefs == nil {
		rc.SecretRefs = []string{}
	}
	return &rc
}

// surfaces derives capabilities.surfaces and surface_definitions.
func (b *regBuilder) surfaces(spec RegistrationSpec, reg *contracts.Registration) ([]string, []contracts.SurfaceDefinition) {
	ids := []string{}
	seen := map[string]bool{}
	add := func(id string) {
		if id != "" && !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	var defs []contracts.SurfaceDefinition
	described := map[string]bool{}
	for i, s := range spec.Surfaces {
		if strings.TrimSpace(s.ID) == "" {
			b.fail("nonblank", "surface ids must not be blank", nil, "surfaces", i, "id")
			continue
		}
		add(s.ID)
		label := b.text(s.Label, "surfaces", i, "label")
		desc := b.text(s.Description, "surfaces", i, "description")
		if (label != "" || desc != "") && !described[s.ID] {
			described[s.ID] = true // the first definition with text wins
			defs = append(defs, contracts.SurfaceDefinition{ID: s.ID, Label: label, Description: desc})
		}
	}
	for _, r := range reg.Resources {
		if r.AutoSurface {
			add("mission.agent.resource." + r.ID)
		}
	}
	for _, d := range reg.Datasets {
		if d.AutoSurface {
			add("mission.agent.dataset." + d.ID)
		}
	}
	for _, d := range reg.Dashboards {
		add(d.Surface)
	}
	if wb := reg.WorkspaceBinding; wb != nil && wb.Create != nil {
		add(wb.Create.Surface)
	}
	return ids, defs
}

type actionEntry struct {
	def  contracts.ActionDefinition
	bare bool
}

// actions merges declared and derived actions.
func (b *regBuilder) actions(spec RegistrationSpec, reg *contracts.Registration) contracts.ActionList {
	var order []string
	entries := map[string]*actionEntry{}
	for i, a := range spec.Actions {
		if strings.TrimSpace(a.ID) == "" {
			b.fail("nonblank", "action definitions must have a non-empty id", nil, "actions", i, "id")
			continue
		}
		def := b.actionDefinition(a, i)
		e, seen := entries[a.ID]
		switch {
		case !seen:
			entries[a.ID] = &actionEntry{def: def, bare: a.bare}
			order = append(order, a.ID)
		case e.bare && !a.bare:
			e.def, e.bare = def, false
		}
	}
	derive := func(id string, mutating bool, scope string) {
		if id == "" {
			return
		}
		d := contracts.ActionDefinition{ID: id, Mutating: mutating, Scope: scope, Kind: contracts.KindCommand}
		e, seen := entries[id]
		switch {
		case !seen:
			entries[id] = &actionEntry{def: d}
			order = append(order, id)
		case e.bare:
			e.def, e.bare = d, false
		}
	}
	for _, r := range reg.Resources {
		for _, op := range r.Operations {
			derive("resource."+r.ID+"."+op, true, r.Scope)
		}
	}
	for _, d := range reg.Datasets {
		derive("dataset."+d.ID+".query", false, d.Scope)
	}
	if s := reg.JobPolicy.Sync; s != nil {
		derive(s.Action, true, contracts.ScopeJob)
	}
	if s := reg.JobPolicy.Setup; s != nil {
		derive(s.PreviewAction, false, contracts.ScopeJob)
		derive(s.StartAction, true, contracts.ScopeJob)
		derive(s.SubmitAction, true, contracts.ScopeJob)
	}
	if wb := reg.WorkspaceBinding; wb != nil {
		if wb.Existing != nil {
			derive(wb.Existing.Action, true, contracts.ScopeWorkspace)
		}
		if wb.Create != nil {
			derive(wb.Create.Action, true, contracts.ScopeWorkspace)
		}
	}
	if reg.Capabilities.RuleCheckpoints != nil {
		if _, seen := entries[RuleCheckpointResumeAction]; !seen {
			entries[RuleCheckpointResumeAction] = &actionEntry{def: contracts.ActionDefinition{ID: RuleCheckpointResumeAction, Mutating: true, Scope: contracts.ScopeJob, Kind: contracts.KindCommand}}
			order = append(order, RuleCheckpointResumeAction)
		}
	}
	out := make(contracts.ActionList, 0, len(order))
	for _, id := range order {
		out = append(out, entries[id].def)
	}
	return out
}

func (b *regBuilder) actionDefinition(a ActionSpec, i int) contracts.ActionDefinition {
	def := contracts.ActionDefinition{
		ID:          a.ID,
		Mutating:    a.Mutating == nil || *a.Mutating,
		Scope:       orDefault(a.Scope, contracts.ScopeJob),
		Kind:        orDefault(a.Kind, contracts.KindCommand),
		TargetField: a.TargetField,
		DryRun:      a.DryRun,
		Label:       b.text(a.Label, "actions", i, "label"),
		Description: b.text(a.Description, "actions", i, "description"),
	}
	if def.Kind == contracts.KindHelp && def.Mutating {
		b.fail("help_action", "help action %q must set Mutating to false", []any{a.ID}, "actions", i, "mutating")
	}
	if def.TargetField != "" && def.Kind != contracts.KindHelp {
		b.fail("target_field", "target_field is allowed only with kind \"help\" (action %q)", []any{a.ID}, "actions", i, "target_field")
	}
	return def
}

// afterMerge runs the checks of the protocol that need the merged action list and that
// read better with builder paths than with registration paths.
func (b *regBuilder) afterMerge(reg *contracts.Registration) {
	b.problems = append(b.problems, dashboardRefProblems(reg)...)
	if reg.Capabilities.ScheduledStart && !reg.Capabilities.HasAction(contracts.DefaultStartAction) {
		b.fail("scheduled_start", "scheduled_start requires the action %q (declared or derived from job_policy.setup.start_action)", []any{contracts.DefaultStartAction}, "scheduled_start")
	}
}
