package contracts

import (
	"encoding/json"
	"reflect"
)

// Protocol versions pinned by this release of the SDK (spec README, version constants).
const (
	ContractVersion        = 2       // supervaizer_contract_version
	A2AVersion             = "0.2.6" // versions.a2a_version default
	A2UIVersion            = "v0.8"  // versions.a2ui_version default
	RuleCheckpointsVersion = 1       // capabilities.rule_checkpoints.version
)

// Action and dataset scopes.
const (
	ScopeWorkspace = "workspace"
	ScopeMission   = "mission"
	ScopeJob       = "job"
)

// Action kinds.
const (
	KindCommand = "command"
	KindHelp    = "help"
)

// Registration is the Supervaizer v2 agent registration
// (SupervaizerV2AgentRegistrationContract). It is published
// under supervaizer.v2 in the Agent Card and under supervaizer_v2 in the agent
// registration payload. Build it with supervaizer.BuildRegistration, which applies
// the derivation rules; this type is the wire shape. Unset nullable keys are
// written as null.
type Registration struct {
	ContractVersion  int                   `json:"supervaizer_contract_version" sv:"const=2"`
	Agent            AgentIdentity         `json:"agent" sv:"required"`
	Versions         Versions              `json:"versions" sv:"required"`
	A2A              A2AEndpoints          `json:"a2a" sv:"required"`
	Capabilities     Capabilities          `json:"capabilities"`
	JobPolicy        JobPolicy             `json:"job_policy"`
	Resources        []ResourceDefinition  `json:"resources"`
	Datasets         []DatasetDefinition   `json:"datasets"`
	Dashboards       []DashboardDefinition `json:"dashboards"`
	WorkspaceBinding *WorkspaceBinding     `json:"workspace_binding"`
	Extra            Extra                 `json:"-"`
}

func (r *Registration) encodeDefaults() {
	if r.ContractVersion == 0 {
		r.ContractVersion = ContractVersion
	}
}

func (r *Registration) decodeDefaults() {
	*r = Registration{ContractVersion: ContractVersion, JobPolicy: DefaultJobPolicy()}
}

// AgentIdentity is registration.agent.
type AgentIdentity struct {
	ID          string `json:"id" sv:"required,nonblank"`
	Slug        string `json:"slug" sv:"required,nonblank"`
	DisplayName string `json:"display_name" sv:"required,nonblank"`
	Extra       Extra  `json:"-"`
}

// Versions is registration.versions.
type Versions struct {
	A2UIVersion        string  `json:"a2ui_version" sv:"required,nonblank"`
	A2UICatalogVersion string  `json:"a2ui_catalog_version" sv:"required,nonblank"`
	A2AVersion         string  `json:"a2a_version" sv:"required,nonblank"`
	AGUIVersion        *string `json:"ag_ui_version"`
	Extra              Extra   `json:"-"`
}

// A2AEndpoints is registration.a2a.
type A2AEndpoints struct {
	AgentCardURL    string          `json:"agent_card_url" sv:"required,nonblank"`
	ControllerURL   string          `json:"controller_url" sv:"required,nonblank"`
	Transport       Transport       `json:"transport"`
	ExternalInterop ExternalInterop `json:"external_interop"`
	Extra           Extra           `json:"-"`
}

func (a *A2AEndpoints) decodeDefaults() { *a = A2AEndpoints{Transport: DefaultTransport()} }

// Transport is registration.a2a.transport. Push notifications are not implemented
// by this SDK and stay false.
type Transport struct {
	JSONRPC           bool  `json:"json_rpc"`
	SSE               bool  `json:"sse"`
	PushNotifications bool  `json:"push_notifications"`
	Extra             Extra `json:"-"`
}

// DefaultTransport is the transport this SDK implements: JSON-RPC and SSE.
func DefaultTransport() Transport { return Transport{JSONRPC: true, SSE: true} }

func (t *Transport) decodeDefaults() { *t = Transport(DefaultTransport()) }

// ExternalInterop is registration.a2a.external_interop.
type ExternalInterop struct {
	InboundTasks       bool  `json:"inbound_tasks"`
	OutboundDelegation bool  `json:"outbound_delegation"`
	Extra              Extra `json:"-"`
}

// Capabilities is registration.capabilities.
type Capabilities struct {
	Surfaces           []string            `json:"surfaces"`
	SurfaceDefinitions []SurfaceDefinition `json:"surface_definitions,omitempty"`
	Actions            ActionList          `json:"actions"`
	CaseLanes          []CaseLane          `json:"case_lanes"`
	ArtifactTypes      []ArtifactType      `json:"artifact_types"`
	RuleCheckpoints    *RuleCheckpoints    `json:"rule_checkpoints,omitempty" sv:"nonull"`
	ScheduledStart     bool                `json:"scheduled_start,omitempty"`
	Extra              Extra               `json:"-"`
}

func (c *Capabilities) encodeDefaults() {
	if c.Actions == nil {
		c.Actions = ActionList{}
	}
}

// HasAction reports whether the capabilities declare the action id.
func (c *Capabilities) HasAction(id string) bool {
	return c.Action(id) != nil
}

// Action returns the declaration of the action id, or nil.
func (c *Capabilities) Action(id string) *ActionDefinition {
	for i := range c.Actions {
		if c.Actions[i].ID == id {
			return &c.Actions[i]
		}
	}
	return nil
}

// HasSurface reports whether the capabilities declare the surface id.
func (c *Capabilities) HasSurface(id string) bool {
	for _, s := range c.Surfaces {
		if s == id {
			return true
		}
	}
	return false
}

// SurfaceDefinition carries the display text of a declared surface (V2SurfaceDefinition).
type SurfaceDefinition struct {
	ID          string `json:"id" sv:"required,nonblank"`
	Label       string `json:"label,omitempty" sv:"maxLen=300"`
	Description string `json:"description,omitempty" sv:"maxLen=300"`
	Extra       Extra  `json:"-"`
}

// ActionDefinition declares one action (V2ActionDefinition). On the wire
// kind is omitted when "command", target_field when empty and dry_run when false,
// so registrations without these keys serialize as before.
//
// Decoding applies the contract defaults (mutating true, scope "job", kind
// "command"); a Go literal does not, so set Mutating and Scope explicitly or use
// the registration builder.
type ActionDefinition struct {
	ID          string `json:"id" sv:"required,nonblank"`
	Mutating    bool   `json:"mutating"`
	Scope       string `json:"scope" sv:"enum=workspace|mission|job"`
	Kind        string `json:"kind,omitempty" sv:"enum=command|help"`
	TargetField string `json:"target_field,omitempty"`
	DryRun      bool   `json:"dry_run,omitempty"`
	Label       string `json:"label,omitempty" sv:"maxLen=300"`
	Description string `json:"description,omitempty" sv:"maxLen=300"`
	Extra       Extra  `json:"-"`
}

func (ActionDefinition) extendSchema(s map[string]any) {
	s["allOf"] = []any{
		// A help action never mutates.
		rule("a help action must not be mutating", map[string]any{"required": []string{"kind"}, "properties": map[string]any{"kind": map[string]any{"const": KindHelp}}},
			map[string]any{"required": []string{"mutating"}, "properties": map[string]any{"mutating": map[string]any{"const": false}}}),
		// target_field only on help actions.
		rule("target_field is allowed only with kind \"help\"", map[string]any{"required": []string{"target_field"}},
			map[string]any{"required": []string{"kind"}, "properties": map[string]any{"kind": map[string]any{"const": KindHelp}}}),
	}
}

func (a *ActionDefinition) encodeDefaults() {
	if a.Kind == KindCommand {
		a.Kind = ""
	}
	if a.Scope == "" {
		a.Scope = ScopeJob
	}
}

// decodeDefaults: absent keys take the defaults of a declared action.
func (a *ActionDefinition) decodeDefaults() {
	*a = ActionDefinition{Mutating: true, Scope: ScopeJob, Kind: KindCommand}
}

// decodeString reads the short form of an action definition: its id.
func (a *ActionDefinition) decodeString(b []byte) error {
	var id string
	if err := json.Unmarshal(b, &id); err != nil {
		return err
	}
	*a = ActionDefinition{ID: id, Mutating: true, Scope: ScopeJob, Kind: KindCommand}
	return nil
}

// IsHelp reports whether the action is a help action.
func (a *ActionDefinition) IsHelp() bool { return a.Kind == KindHelp }

// ActionList is capabilities.actions. It is always written as definition objects
// and read from objects or bare id strings (agents pinned to older SDKs send strings).
type ActionList []ActionDefinition

func (ActionList) jsonSchema(g *schemaGen) map[string]any {
	return map[string]any{"type": "array", "items": map[string]any{"oneOf": []any{
		map[string]any{"type": "string", "format": "nonblank"},
		g.ref(reflect.TypeFor[ActionDefinition]()),
	}}}
}

// CaseLane declares a case lane (V2CaseLaneDefinition).
type CaseLane struct {
	ID      string `json:"id" sv:"required,nonblank"`
	Label   string `json:"label" sv:"required"`
	Default bool   `json:"default"`
	Extra   Extra  `json:"-"`
}

// ArtifactType declares an artifact type (V2ArtifactTypeDefinition).
type ArtifactType struct {
	Type            string  `json:"type" sv:"required,nonblank"`
	Label           string  `json:"label" sv:"required"`
	RendererSurface *string `json:"renderer_surface"`
	Extra           Extra   `json:"-"`
}

// Rule-checkpoint phases.
const (
	PhaseBefore = "before"
	PhaseAfter  = "after"
)

// RuleCheckpoints is capabilities.rule_checkpoints (V2RuleCheckpointCapability).
type RuleCheckpoints struct {
	Version    int      `json:"version" sv:"const=1"`
	Phases     []string `json:"phases" sv:"required,minItems=1"`
	SecretRefs []string `json:"secret_refs"`
	Extra      Extra    `json:"-"`
}

func (RuleCheckpoints) extendSchema(s map[string]any) {
	props := s["properties"].(map[string]any)
	props["phases"] = map[string]any{"type": "array", "minItems": 1, "uniqueItems": true,
		"items": map[string]any{"type": "string", "enum": []string{PhaseBefore, PhaseAfter}}}
	props["secret_refs"] = map[string]any{"type": "array", "uniqueItems": true,
		"items": map[string]any{"type": "string", "pattern": `^(job\.fields\.|case\.metadata\.|step\.payload\.|context\.)`}}
}

func (r *RuleCheckpoints) encodeDefaults() {
	if r.Version == 0 {
		r.Version = RuleCheckpointsVersion
	}
}

func (r *RuleCheckpoints) decodeDefaults() { *r = RuleCheckpoints{Version: RuleCheckpointsVersion} }

// Offline policies; each has exactly one valid value.
const (
	OfflineStartBlock          = "block"
	OfflineRunningFailInStudio = "fail_in_studio"
)

// JobPolicy is registration.job_policy (V2JobPolicy).
type JobPolicy struct {
	DefaultTimeoutSeconds *int            `json:"default_timeout_seconds" sv:"minimum=0"`
	OfflineStartPolicy    string          `json:"offline_start_policy" sv:"enum=block"`
	OfflineRunningPolicy  string          `json:"offline_running_policy" sv:"enum=fail_in_studio"`
	Sync                  *JobSyncPolicy  `json:"sync"`
	Setup                 *JobSetupPolicy `json:"setup"`
	Extra                 Extra           `json:"-"`
}

// DefaultJobPolicy is the job policy of a registration that declares none.
func DefaultJobPolicy() JobPolicy {
	return JobPolicy{OfflineStartPolicy: OfflineStartBlock, OfflineRunningPolicy: OfflineRunningFailInStudio}
}

func (p *JobPolicy) encodeDefaults() {
	if p.OfflineStartPolicy == "" {
		p.OfflineStartPolicy = OfflineStartBlock
	}
	if p.OfflineRunningPolicy == "" {
		p.OfflineRunningPolicy = OfflineRunningFailInStudio
	}
}

func (p *JobPolicy) decodeDefaults() { *p = JobPolicy(DefaultJobPolicy()) }

// JobSyncPolicy is job_policy.sync.
type JobSyncPolicy struct {
	Action            string   `json:"action" sv:"nonblank"`
	SupportedStatuses []string `json:"supported_statuses"`
	Extra             Extra    `json:"-"`
}

// DefaultSyncAction is the default job_policy.sync.action.
const DefaultSyncAction = "job.sync"

func (p *JobSyncPolicy) decodeDefaults() { *p = JobSyncPolicy{Action: DefaultSyncAction} }

// Default action ids of a job setup policy.
const (
	DefaultPreviewAction = "job.start.preview"
	DefaultStartAction   = "job.start"
	DefaultSubmitAction  = "step.awaiting.submit"
)

// JobSetupPolicy is job_policy.setup (V2JobSetupPolicy).
type JobSetupPolicy struct {
	PreviewAction string     `json:"preview_action" sv:"nonblank"`
	StartAction   string     `json:"start_action" sv:"nonblank"`
	SubmitAction  string     `json:"submit_action" sv:"nonblank"`
	ActionScopes  []string   `json:"action_scopes"`
	Plan          *PlanValue `json:"plan"`
	Extra         Extra      `json:"-"`
}

func (JobSetupPolicy) extendSchema(s map[string]any) {
	s["properties"].(map[string]any)["action_scopes"] = map[string]any{"type": "array",
		"items": map[string]any{"type": "string", "enum": []string{"workspace", "job", "case", "step"}}}
}

func (p *JobSetupPolicy) decodeDefaults() {
	*p = JobSetupPolicy{PreviewAction: DefaultPreviewAction, StartAction: DefaultStartAction, SubmitAction: DefaultSubmitAction}
}

// ResourceDefinition declares a resource (V2ResourceDefinition).
type ResourceDefinition struct {
	ID              string          `json:"id" sv:"required,nonblank"`
	Label           string          `json:"label" sv:"required"`
	AutoSurface     bool            `json:"auto_surface"`
	Scope           string          `json:"scope" sv:"enum=workspace|mission|job"`
	RequiresContext []string        `json:"requires_context"`
	Operations      []string        `json:"operations"`
	Display         *Display        `json:"display"`
	Fields          []ResourceField `json:"fields"`
	MountedViews    []MountedView   `json:"mounted_views"`
	Extra           Extra           `json:"-"`
}

// DefaultRequiresContext is the default requires_context of a resource.
func DefaultRequiresContext() []string { return []string{"workspace.id"} }

func (r *ResourceDefinition) encodeDefaults() {
	if r.Scope == "" {
		r.Scope = ScopeWorkspace
	}
	if r.RequiresContext == nil {
		r.RequiresContext = DefaultRequiresContext()
	}
}

func (r *ResourceDefinition) decodeDefaults() { *r = ResourceDefinition{Scope: ScopeWorkspace} }

func (r *ResourceDefinition) afterDecode() {
	if r.RequiresContext == nil {
		r.RequiresContext = DefaultRequiresContext()
	}
}

// Display is how Studio lists the items of a resource or the rows of a dataset
// (V2ResourceDisplayDefinition).
type Display struct {
	TitleField   *string  `json:"title_field"`
	Columns      []string `json:"columns"`
	SearchFields []string `json:"search_fields"`
	Extra        Extra    `json:"-"`
}

// MountedView replaces a generated resource view by an agent surface
// (V2MountedResourceViewDefinition).
type MountedView struct {
	View    string `json:"view" sv:"required,nonblank"`
	Surface string `json:"surface" sv:"required,nonblank"`
	Extra   Extra  `json:"-"`
}

// DatasetDefinition declares a dataset (V2DatasetDefinition).
type DatasetDefinition struct {
	ID          string   `json:"id" sv:"required,nonblank"`
	Label       string   `json:"label" sv:"required"`
	AutoSurface bool     `json:"auto_surface"`
	Scope       string   `json:"scope" sv:"enum=workspace|mission|job"`
	Display     *Display `json:"display"`
	Extra       Extra    `json:"-"`
}

func (d *DatasetDefinition) encodeDefaults() {
	if d.Scope == "" {
		d.Scope = ScopeWorkspace
	}
}

func (d *DatasetDefinition) decodeDefaults() { *d = DatasetDefinition{Scope: ScopeWorkspace} }

// DefaultDashboardSurface is the default surface of a dashboard.
const DefaultDashboardSurface = "mission.analytics"

// DashboardDefinition declares a Studio-rendered dashboard (V2DashboardDefinition).
type DashboardDefinition struct {
	ID      string   `json:"id" sv:"required,nonblank"`
	Label   string   `json:"label" sv:"required"`
	Surface string   `json:"surface" sv:"nonblank"`
	Widgets []Widget `json:"widgets"`
	Extra   Extra    `json:"-"`
}

func (d *DashboardDefinition) encodeDefaults() {
	if d.Surface == "" {
		d.Surface = DefaultDashboardSurface
	}
}

func (d *DashboardDefinition) decodeDefaults() {
	*d = DashboardDefinition{Surface: DefaultDashboardSurface}
}

// Widget is one widget of a dashboard (V2DashboardWidgetDefinition).
type Widget struct {
	ID            string         `json:"id" sv:"required,nonblank"`
	Title         string         `json:"title" sv:"required"`
	Data          *WidgetData    `json:"data"`
	Layout        map[string]any `json:"layout" sv:"object"`
	Visualization Visualization  `json:"visualization"`
	Extra         Extra          `json:"-"`
}

func (w *Widget) encodeDefaults() {
	if w.Visualization.Type == "" {
		w.Visualization.Type = VisualizationTable
	}
}

func (w *Widget) decodeDefaults() {
	*w = Widget{Visualization: Visualization{Type: VisualizationTable}}
}

// Widget data modes.
const (
	DataModeRef    = "ref"
	DataModeAction = "action"
	DataModeInline = "inline"
)

// WidgetData is a widget's data reference (V2DashboardWidgetDataRef).
// Every key is always emitted; note the camelCase datasetId.
type WidgetData struct {
	Mode      string          `json:"mode" sv:"enum=ref|action|inline"`
	DatasetID *string         `json:"datasetId"`
	Action    *string         `json:"action"`
	Input     map[string]any  `json:"input" sv:"object"`
	Values    json.RawMessage `json:"values"`
	Extra     Extra           `json:"-"`
}

func (WidgetData) extendSchema(s map[string]any) {
	props := s["properties"].(map[string]any)
	props["values"] = map[string]any{"type": []string{"array", "object", "null"}, "items": map[string]any{"type": "object"}}
	// The condition requires mode: an absent mode is "ref", so the "action" and
	// "inline" rules must not apply to it.
	mode := func(m string) map[string]any {
		return map[string]any{"required": []string{"mode"}, "properties": map[string]any{"mode": map[string]any{"const": m}}}
	}
	s["allOf"] = []any{
		// An absent mode is "ref".
		rule("mode \"ref\" requires a non-empty datasetId", map[string]any{"anyOf": []any{mode(DataModeRef), map[string]any{"not": map[string]any{"required": []string{"mode"}}}}},
			map[string]any{"required": []string{"datasetId"}, "properties": map[string]any{"datasetId": map[string]any{"type": "string", "minLength": 1}}}),
		rule("mode \"action\" requires a non-empty action", mode(DataModeAction),
			map[string]any{"required": []string{"action"}, "properties": map[string]any{"action": map[string]any{"type": "string", "format": "nonblank"}}}),
		rule("mode \"inline\" requires values", mode(DataModeInline),
			map[string]any{"required": []string{"values"}, "properties": map[string]any{"values": map[string]any{"type": []string{"array", "object"}}}}),
	}
}

func (d *WidgetData) encodeDefaults() {
	if d.Mode == "" {
		d.Mode = DataModeRef
	}
	if d.Values == nil {
		d.Values = json.RawMessage("null")
	}
}

func (d *WidgetData) decodeDefaults() { *d = WidgetData{Mode: DataModeRef} }

func (d *WidgetData) afterDecode() {
	if string(d.Values) == "null" {
		d.Values = nil
	}
}

// Visualization types.
const (
	VisualizationTable    = "table"
	VisualizationMetric   = "metric"
	VisualizationVegaLite = "vega-lite"
	VisualizationCustom   = "custom"
)

// Visualization is a widget's visualization (V2DashboardWidgetVisualization).
// A vega-lite visualization needs a spec.
type Visualization struct {
	Type  string          `json:"type" sv:"enum=table|metric|vega-lite|custom"`
	Spec  json.RawMessage `json:"spec"`
	Extra Extra           `json:"-"`
}

func (Visualization) extendSchema(s map[string]any) {
	s["properties"].(map[string]any)["spec"] = map[string]any{"type": []string{"object", "null"}}
	s["allOf"] = []any{rule("a vega-lite visualization requires visualization.spec",
		map[string]any{"required": []string{"type"}, "properties": map[string]any{"type": map[string]any{"const": VisualizationVegaLite}}},
		map[string]any{"required": []string{"spec"}, "properties": map[string]any{"spec": map[string]any{"type": "object"}}})}
}

func (v *Visualization) encodeDefaults() {
	if v.Type == "" {
		v.Type = VisualizationTable
	}
	if v.Spec == nil {
		v.Spec = json.RawMessage("null")
	}
}

func (v *Visualization) decodeDefaults() { *v = Visualization{Type: VisualizationTable} }

func (v *Visualization) afterDecode() {
	if string(v.Spec) == "null" {
		v.Spec = nil
	}
}

// Workspace-binding modes and bootstrap ids.
const (
	BindExisting  = "bind_existing"
	CreateAndBind = "create_and_bind"

	BootstrapOptionsAction = "workspace_binding.options"
	BootstrapCreateAction  = "workspace_binding.create"
	BootstrapCreateSurface = "workspace_binding.create"
)

// Default texts of a workspace binding.
const (
	DefaultReferenceLabel       = "Agent workspace reference"
	DefaultReferenceHelp        = "Select or create the agent-side record this Studio workspace may access."
	DefaultReferencePlaceholder = "Example: workspace-prod"
)

// WorkspaceBinding declares the agent-side record a workspace is bound to
// (V2WorkspaceBindingDefinition).
type WorkspaceBinding struct {
	Required             bool             `json:"required"`
	Modes                []string         `json:"modes"`
	ReferenceLabel       string           `json:"reference_label"`
	ReferenceHelp        string           `json:"reference_help"`
	ReferencePlaceholder string           `json:"reference_placeholder"`
	Existing             *BindingExisting `json:"existing"`
	Create               *BindingCreate   `json:"create"`
	Extra                Extra            `json:"-"`
}

func (WorkspaceBinding) extendSchema(s map[string]any) {
	s["properties"].(map[string]any)["modes"] = map[string]any{"type": "array",
		"items": map[string]any{"type": "string", "enum": []string{BindExisting, CreateAndBind}}}
	s["allOf"] = []any{rule("a required workspace binding requires at least one mode",
		map[string]any{"required": []string{"required"}, "properties": map[string]any{"required": map[string]any{"const": true}}},
		map[string]any{"required": []string{"modes"}, "properties": map[string]any{"modes": map[string]any{"minItems": 1}}})}
}

func (w *WorkspaceBinding) decodeDefaults() {
	*w = WorkspaceBinding{ReferenceLabel: DefaultReferenceLabel, ReferenceHelp: DefaultReferenceHelp, ReferencePlaceholder: DefaultReferencePlaceholder}
}

// BindingExisting is workspace_binding.existing (V2WorkspaceBindingExistingDefinition).
type BindingExisting struct {
	Action     string `json:"action" sv:"nonblank"`
	ValueField string `json:"value_field" sv:"nonblank"`
	LabelField string `json:"label_field" sv:"nonblank"`
	Extra      Extra  `json:"-"`
}

// DefaultBindingExisting is the existing-record definition filled in for bind_existing.
func DefaultBindingExisting() *BindingExisting {
	return &BindingExisting{Action: BootstrapOptionsAction, ValueField: "agent_workspace_ref", LabelField: "display_name"}
}

func (e *BindingExisting) decodeDefaults() { *e = BindingExisting(*DefaultBindingExisting()) }

// BindingCreate is workspace_binding.create (V2WorkspaceBindingCreateDefinition).
type BindingCreate struct {
	Surface string          `json:"surface" sv:"nonblank"`
	Action  string          `json:"action" sv:"nonblank"`
	Fields  []ResourceField `json:"fields"`
	Extra   Extra           `json:"-"`
}

// DefaultBindingCreate is the create definition filled in for create_and_bind.
func DefaultBindingCreate() *BindingCreate {
	return &BindingCreate{Surface: BootstrapCreateSurface, Action: BootstrapCreateAction}
}

func (c *BindingCreate) decodeDefaults() { *c = BindingCreate(*DefaultBindingCreate()) }
