package supervaizer

import "github.com/supervaize/supervaizer-go/contracts"

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
