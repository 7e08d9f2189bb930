package contracts

// Job-source types.
const (
	SourceFreshStart = "fresh_start"
	SourceExternal   = "external"
)

// Step activities.
const (
	ActivityOperation  = "operation"
	ActivityDelegation = "delegation"
)

// DefaultLane is the lane of a case that declares none.
const DefaultLane = "work"

// JobState is a complete snapshot of a job, its cases and steps
// (V2JobStateSnapshot). Inside an action result every null is dropped.
type JobState struct {
	Job   Job    `json:"job" sv:"required"`
	Cases []Case `json:"cases"`
	Extra Extra  `json:"-"`
}

func (*JobState) dropsNullExtras() {}

// Job is job_state.job (V2JobSnapshot).
type Job struct {
	ID          string       `json:"id" sv:"required,nonblank"`
	AgentSlug   string       `json:"agent_slug" sv:"required,nonblank"`
	MissionID   string       `json:"mission_id" sv:"required,nonblank"`
	Status      string       `json:"status" sv:"required,nonblank"`
	Source      JobSource    `json:"source" sv:"required"`
	Information *Information `json:"information,omitempty"`
	Display     *JobDisplay  `json:"display,omitempty"`
	Extra       Extra        `json:"-"`
}

func (*Job) dropsNullExtras() {}

// Information is the open information object of a job or step snapshot; Studio
// reads cost.total_cost from it.
type Information struct {
	Cost  *Cost `json:"cost,omitempty"`
	Extra Extra `json:"-"`
}

func (*Information) dropsNullExtras() {}

// Cost is information.cost.
type Cost struct {
	TotalCost *float64 `json:"total_cost,omitempty"`
	Extra     Extra    `json:"-"`
}

func (*Cost) dropsNullExtras() {}

// JobDisplay is the agent's vocabulary for a job's list entry and title line.
// Each text is at most 120 code points; unset texts are omitted.
type JobDisplay struct {
	EntityLabel        string `json:"entity_label,omitempty" sv:"maxLen=120,null"`
	StateLabel         string `json:"state_label,omitempty" sv:"maxLen=120,null"`
	PrimaryActionLabel string `json:"primary_action_label,omitempty" sv:"maxLen=120,null"`
	Extra              Extra  `json:"-"`
}

func (*JobDisplay) dropsNullExtras() {}

// JobSource says where a job came from (V2JobSource).
type JobSource struct {
	Type          string `json:"type" sv:"required,enum=fresh_start|external"`
	ExternalRef   string `json:"external_ref,omitempty" sv:"null"`
	PreviousJobID string `json:"previous_job_id,omitempty" sv:"null"`
	TargetType    string `json:"target_type,omitempty" sv:"null"`
	Extra         Extra  `json:"-"`
}

func (*JobSource) dropsNullExtras() {}

// Case is a unit of work inside a job (V2CaseSnapshot). An empty
// lane is written as "work"; metadata and steps are always written.
type Case struct {
	ID         string         `json:"id" sv:"required,nonblank"`
	Lane       string         `json:"lane" sv:"nonblank"`
	Title      string         `json:"title,omitempty" sv:"null"`
	Status     string         `json:"status,omitempty" sv:"null"`
	ExternalID string         `json:"external_id,omitempty" sv:"null"`
	Metadata   map[string]any `json:"metadata" sv:"object"`
	Steps      []Step         `json:"steps"`
	Extra      Extra          `json:"-"`
}

func (c *Case) encodeDefaults() {
	if c.Lane == "" {
		c.Lane = DefaultLane
	}
}

func (*Case) dropsNullExtras() {}

func (c *Case) decodeDefaults() { *c = Case{Lane: DefaultLane} }

// Step is an observable activity inside a case (V2StepSnapshot).
// Human-in-the-loop is Status "awaiting" plus Awaiting, not a step kind.
type Step struct {
	ID          string        `json:"id" sv:"required,nonblank"`
	Activity    string        `json:"activity" sv:"required,enum=operation|delegation"`
	Status      string        `json:"status" sv:"required,nonblank"`
	Title       string        `json:"title,omitempty" sv:"null"`
	ExternalID  string        `json:"external_id,omitempty" sv:"null"`
	Awaiting    *Awaiting     `json:"awaiting,omitempty"`
	Outputs     []ArtifactRef `json:"outputs"`
	Information *Information  `json:"information,omitempty"`
	Extra       Extra         `json:"-"`
}

func (*Step) dropsNullExtras() {}

// Awaiting is the human-in-the-loop state of a step (V2AwaitingState).
type Awaiting struct {
	Reason     string          `json:"reason" sv:"required,nonblank"`
	Surface    string          `json:"surface" sv:"required,nonblank"`
	Action     string          `json:"action" sv:"required,nonblank"`
	Fields     []AwaitingField `json:"fields"`
	Reopenable bool            `json:"reopenable"`
	Extra      Extra           `json:"-"`
}

func (*Awaiting) dropsNullExtras() {}

// ArtifactRef references an agent-owned output (V2ArtifactRef). A
// Studio-stored artifact (Storage "studio") carries the Studio FileID.
type ArtifactRef struct {
	ID         string `json:"id" sv:"required,nonblank"`
	Type       string `json:"type" sv:"required,nonblank"`
	Title      string `json:"title,omitempty" sv:"null"`
	ExternalID string `json:"external_id,omitempty" sv:"null"`
	MediaType  string `json:"media_type,omitempty" sv:"null"`
	Storage    string `json:"storage,omitempty" sv:"null"`
	FileID     string `json:"file_id,omitempty" sv:"null"`
	Extra      Extra  `json:"-"`
}

func (ArtifactRef) extendSchema(s map[string]any) {
	s["allOf"] = []any{rule("a Studio-stored artifact requires file_id",
		map[string]any{"required": []string{"storage"}, "properties": map[string]any{"storage": map[string]any{"const": StorageStudio}}},
		map[string]any{"required": []string{"file_id"}, "properties": map[string]any{"file_id": map[string]any{"type": "string", "minLength": 1}}})}
}

func (*ArtifactRef) dropsNullExtras() {}
