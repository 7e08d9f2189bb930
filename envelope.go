package supervaizer

import (
	"fmt"

	"github.com/supervaize/supervaizer-go/contracts"
)

// OK returns a result with status "ok" and the effects.
func OK(effects ...Effect) *ActionResult {
	if effects == nil {
		effects = []Effect{}
	}
	return &ActionResult{Status: contracts.StatusOK, Effects: effects}
}

// Fail returns a business failure: status "error" with one error entry whose
// code is machine-readable (for example contracts.ErrorIdempotencyConflict).
// Business failures are results, not JSON-RPC errors.
func Fail(code, format string, args ...any) *ActionResult {
	return &ActionResult{
		Status:  contracts.StatusError,
		Effects: []Effect{},
		Errors:  []contracts.ResultError{{Code: code, Message: fmt.Sprintf(format, args...)}},
	}
}

// The conventional effect constructors. Effect types are the
// agent's vocabulary; these only spare typing the common ones.

// JobStarted is the job.started effect of job.start.
func JobStarted(jobID string, data map[string]any) Effect {
	return Effect{Type: "job.started", JobID: jobID, Data: data}
}

// JobSynced is the job.synced effect of job.sync.
func JobSynced(jobID, status string) Effect {
	return Effect{Type: "job.synced", JobID: jobID, Status: status}
}

// CaseCreated is the case.created effect.
func CaseCreated(jobID string, c contracts.Case) Effect {
	item := map[string]any{"id": c.ID, "job_id": jobID, "lane": c.Lane}
	if c.Lane == "" {
		item["lane"] = contracts.DefaultLane
	}
	if c.ExternalID != "" {
		item["external_id"] = c.ExternalID
	}
	if c.Title != "" {
		item["title"] = c.Title
	}
	if c.Status != "" {
		item["status"] = c.Status
	}
	return Effect{Type: "case.created", JobID: jobID, CaseID: c.ID, Case: item}
}

// StepAwaitingSubmitted is the step.awaiting.submitted effect of step.awaiting.submit.
func StepAwaitingSubmitted(jobID, caseID, stepID, status string) Effect {
	return Effect{Type: "step.awaiting.submitted", JobID: jobID, CaseID: caseID, StepID: stepID, Status: status}
}

// WorkspaceBindingOption is one bindable agent-side record.
type WorkspaceBindingOption struct {
	Ref   string // the agent_workspace_ref Studio stores on the grant
	Label string // display name
}

// WorkspaceBindingOptions is the workspace_binding.options effect: each item
// carries value/label and the declared value_field/label_field keys.
// A nil binding uses the default field names.
func WorkspaceBindingOptions(binding *contracts.BindingExisting, options ...WorkspaceBindingOption) Effect {
	if binding == nil {
		binding = contracts.DefaultBindingExisting()
	}
	items := make([]map[string]any, len(options))
	for i, o := range options {
		items[i] = map[string]any{"value": o.Ref, "label": o.Label, binding.ValueField: o.Ref, binding.LabelField: o.Label}
	}
	return Effect{Type: "workspace_binding.options", Items: items}
}

// The job_state snapshot an action result carries (ActionResult.JobState):
// the job, its cases (each in a lane) and their steps. Write it as a struct
// literal; the SDK validates it with the rest of the result before it goes on
// the wire, so a mistake is answered -32603 and logged with its path and rule.
// Use stable ids: repeated snapshots update Studio's projection, never
// duplicate it.
//
//	res := supervaizer.OK(supervaizer.JobStarted(req.JobID, nil))
//	res.JobState = &supervaizer.JobState{
//		Job: supervaizer.Job{ID: req.JobID, AgentSlug: req.AgentSlug, MissionID: req.MissionID, Status: "active",
//			Source: supervaizer.JobSource{Type: "fresh_start"}},
//		Cases: []supervaizer.Case{{ID: "case-1", Lane: "work", Title: "Draft", Steps: []supervaizer.Step{
//			{ID: "step-1", Activity: "operation", Status: "pending", Title: "Write"}}}},
//	}
type (
	// JobState is a job_state snapshot.
	JobState = contracts.JobState
	// Job is the job of a snapshot: id, agent slug, mission, status, source.
	Job = contracts.Job
	// JobSource is where a job comes from (Job.Source, required): its type,
	// for example "fresh_start", and the external record it tracks.
	JobSource = contracts.JobSource
	// Case is one case of a job, in a lane ("" means "work").
	Case = contracts.Case
	// Step is one step of a case: an operation or a delegation, with its
	// outputs; an awaiting step names what Studio collects ([Awaiting]).
	Step = contracts.Step
	// Awaiting puts a step in human-in-the-loop state: the surface Studio
	// loads (usually "case.step.awaiting") and the action it invokes (usually
	// "step.awaiting.submit"); build its fields with a2ui.AwaitingFields.
	Awaiting = contracts.Awaiting
	// AwaitingField is one value Studio collects for an awaiting step.
	AwaitingField = contracts.AwaitingField
	// ArtifactRef is an artifact a step produced (Step.Outputs).
	ArtifactRef = contracts.ArtifactRef
)
