package contracts

import "encoding/json"

// Action-result statuses.
const (
	StatusOK    = "ok"
	StatusError = "error"
)

// ActionResult is what an action returns (V2ActionResult),
// including the optional keys of a job.sync result (V2JobSyncResult). On the
// wire every null of a typed object is dropped; effects is always written.
type ActionResult struct {
	Status       string         `json:"status" sv:"required,enum=ok|error"`
	Effects      []Effect       `json:"effects"`
	JobState     *JobState      `json:"job_state,omitempty"`
	ReplaySafety *ReplaySafety  `json:"replay_safety,omitempty"`
	SetupPlan    *PlanValue     `json:"setup_plan,omitempty"`
	Draft        *FieldDraft    `json:"draft,omitempty"`
	DryRun       *DryRunOutcome `json:"dry_run,omitempty"`
	Errors       []ResultError  `json:"errors,omitempty" sv:"null"`

	ExternalRef     string `json:"external_ref,omitempty" sv:"null"`
	ExternalVersion string `json:"external_version,omitempty" sv:"null"`
	SyncCursor      string `json:"sync_cursor,omitempty" sv:"null"`
	ObservedAt      string `json:"observed_at,omitempty" sv:"format=date-time,null"`

	Extra Extra `json:"-"`
}

func (*ActionResult) dropsNullExtras() {}

// Effect records what an action did (V2Effect). Only Type is
// required; its vocabulary belongs to the agent. Item, Summary, Case and Data are
// free-form objects copied as-is.
type Effect struct {
	Type       string           `json:"type" sv:"required,nonblank"`
	JobID      string           `json:"job_id,omitempty" sv:"null"`
	CaseID     string           `json:"case_id,omitempty" sv:"null"`
	StepID     string           `json:"step_id,omitempty" sv:"null"`
	Resource   string           `json:"resource,omitempty" sv:"null"`
	Dataset    string           `json:"dataset,omitempty" sv:"null"`
	ArtifactID string           `json:"artifact_id,omitempty" sv:"null"`
	Status     string           `json:"status,omitempty" sv:"null"`
	Message    string           `json:"message,omitempty" sv:"null"`
	Count      *int             `json:"count,omitempty"`
	Item       map[string]any   `json:"item,omitempty" sv:"null"`
	Summary    map[string]any   `json:"summary,omitempty" sv:"null"`
	Case       map[string]any   `json:"case,omitempty" sv:"null"`
	Data       map[string]any   `json:"data,omitempty" sv:"null"`
	Items      []map[string]any `json:"items,omitempty" sv:"null"`
	Rows       []map[string]any `json:"rows,omitempty" sv:"null"`
	Errors     []map[string]any `json:"errors,omitempty" sv:"null"`
	Gaps       []map[string]any `json:"gaps,omitempty" sv:"null"`
	Extra      Extra            `json:"-"`
}

func (*Effect) dropsNullExtras() {}

// ReplaySafety tells Studio how safely an action can be replayed
// (V2ReplaySafetyMetadata). All four keys are always written.
// The contract defaults (stable ids required, convergent) are true: start from
// [DefaultReplaySafety] rather than a zero literal.
type ReplaySafety struct {
	DedupeKeys                 []string `json:"dedupe_keys"`
	StableExternalIDsRequired  bool     `json:"stable_external_ids_required"`
	StrictlyIdempotentResponse bool     `json:"strictly_idempotent_response"`
	Convergent                 bool     `json:"convergent"`
	Extra                      Extra    `json:"-"`
}

// DefaultReplaySafety returns the contract defaults: no dedupe keys, stable
// external ids required, not strictly idempotent, convergent.
func DefaultReplaySafety() ReplaySafety {
	return ReplaySafety{StableExternalIDsRequired: true, Convergent: true}
}

func (*ReplaySafety) dropsNullExtras() {}

func (r *ReplaySafety) decodeDefaults() { *r = ReplaySafety(DefaultReplaySafety()) }

// Business error codes the SDK itself returns in ActionResult.Errors.
const (
	ErrorIdempotencyConflict        = "idempotency_conflict"
	ErrorInvalidContextAssignment   = "invalid_context_assignment"
	ErrorContextVersionMismatch     = "context_version_mismatch"
	ErrorRecoveryRequired           = "recovery_required"
	ErrorWorkspaceBindingMissing    = "workspace_binding_missing"
	ErrorInvalidInput               = "invalid_input"
	ErrorUnsupportedFileEncoding    = "unsupported_file_encoding"
	ErrorRuleCheckpointStopped      = "rule_checkpoint_stopped"
	ErrorRuleCheckpointNotAvailable = "rule_checkpoint_unavailable"
	ErrorIdempotencyInProgress      = "idempotency_in_progress" // a retry arrived while its first attempt runs

	// Codes of the resource and dataset actions (mapped to HTTP statuses on
	// the DataResource routes).
	ErrorMissingContext          = "missing_context"           // the call lacks context the resource requires; HTTP 400
	ErrorNotFound                = "not_found"                 // no item with this id in the caller's scope; HTTP 404
	ErrorImportRejected          = "import_rejected"           // import rows failed their checks, nothing applied; HTTP 422
	ErrorImportTooLarge          = "import_too_large"          // the import file exceeds the byte or row limit; HTTP 413
	ErrorUnsupportedImportFormat = "unsupported_import_format" // a format the import document does not accept; HTTP 415
)

// ResultError is one business error of a status "error" result.
// Code is machine-readable.
type ResultError struct {
	Code    string `json:"code" sv:"required,nonblank"`
	Message string `json:"message,omitempty" sv:"null"`
	Field   string `json:"field,omitempty" sv:"null"`
	Extra   Extra  `json:"-"`
}

func (*ResultError) dropsNullExtras() {}

// SurfaceResult is what a surface handler returns (V2SurfaceResult, the protocol
// the protocol). Its four keys are always written: unset versions as null.
type SurfaceResult struct {
	Surface            string          `json:"surface" sv:"required,nonblank"`
	A2UIVersion        *string         `json:"a2ui_version"`
	A2UICatalogVersion *string         `json:"a2ui_catalog_version"`
	Document           json.RawMessage `json:"document" sv:"required,object"`
	Extra              Extra           `json:"-"`
}
