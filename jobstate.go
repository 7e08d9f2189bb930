package supervaizer

import (
	"maps"

	"github.com/supervaize/supervaizer-go/contracts"
)

// JobStateBuilder assembles a job_state snapshot: the job, its
// cases (with lanes) and their steps (with awaiting states and outputs).
// [JobStateBuilder.Build] validates the whole snapshot against the contracts,
// so a mistake surfaces where the snapshot is built, with its path and rule.
// Use stable ids: repeated snapshots update Studio's projection, never
// duplicate it.
type JobStateBuilder struct {
	state contracts.JobState
	cases []*CaseBuilder
}

// NewJobState starts the snapshot of the request's job: id, agent slug and
// mission come from the request, the source is fresh_start.
func NewJobState(req *ActionRequest, status string) *JobStateBuilder {
	return &JobStateBuilder{state: contracts.JobState{Job: contracts.Job{
		ID: req.JobID, AgentSlug: req.AgentSlug, MissionID: req.MissionID, Status: status,
		Source: contracts.JobSource{Type: contracts.SourceFreshStart},
	}}}
}

// Source sets the job's source, e.g. {Type: "external", ExternalRef: "campaign_123"}
// for work loaded through job.sync.
func (b *JobStateBuilder) Source(src contracts.JobSource) *JobStateBuilder {
	b.state.Job.Source = src
	return b
}

// Display sets the agent's vocabulary for the job's list entry and title line;
// each text is at most 120 characters.
func (b *JobStateBuilder) Display(d contracts.JobDisplay) *JobStateBuilder {
	b.state.Job.Display = &d
	return b
}

// TotalCost sets information.cost.total_cost, the job's cost as Studio reads it.
func (b *JobStateBuilder) TotalCost(cost float64) *JobStateBuilder {
	b.state.Job.Information = withCost(b.state.Job.Information, cost)
	return b
}

func withCost(info *contracts.Information, cost float64) *contracts.Information {
	out := contracts.Information{}
	if info != nil {
		out = *info
	}
	out.Cost = &contracts.Cost{TotalCost: &cost}
	return &out
}

// Case adds a case in the lane ("" means "work") and returns its builder.
func (b *JobStateBuilder) Case(id, lane, title string) *CaseBuilder {
	c := &CaseBuilder{c: contracts.Case{ID: id, Lane: lane, Title: title, Metadata: map[string]any{}}}
	b.cases = append(b.cases, c)
	return c
}

// Build validates and returns the snapshot. The snapshot does not change when
// the builder is used again, so one builder can produce successive snapshots.
func (b *JobStateBuilder) Build() (*contracts.JobState, error) {
	js := b.state
	js.Cases = make([]contracts.Case, 0, len(b.cases))
	for _, c := range b.cases {
		cs := c.c
		cs.Metadata = maps.Clone(c.c.Metadata)
		cs.Steps = make([]contracts.Step, 0, len(c.steps))
		for _, s := range c.steps {
			cs.Steps = append(cs.Steps, s.s) // Output only appends: built steps keep their outputs
		}
		js.Cases = append(js.Cases, cs)
	}
	if _, err := contracts.DefaultValidator().ValidateValue(contracts.ModelJobState, &js); err != nil {
		return nil, err
	}
	return &js, nil
}

// CaseBuilder assembles one case of a job_state.
type CaseBuilder struct {
	c     contracts.Case
	steps []*StepBuilder
}

// Status sets the case status (agent vocabulary).
func (c *CaseBuilder) Status(status string) *CaseBuilder { c.c.Status = status; return c }

// ExternalID sets the stable external id of the case.
func (c *CaseBuilder) ExternalID(id string) *CaseBuilder { c.c.ExternalID = id; return c }

// Metadata sets a key of the case's public, agent-owned metadata.
func (c *CaseBuilder) Metadata(key string, value any) *CaseBuilder {
	c.c.Metadata[key] = value
	return c
}

// Snapshot returns the case as built so far (without validation), for a
// case.created effect.
func (c *CaseBuilder) Snapshot() contracts.Case {
	cs := c.c
	cs.Metadata = maps.Clone(c.c.Metadata)
	return cs
}

// Step adds an operation step and returns its builder.
func (c *CaseBuilder) Step(id, status, title string) *StepBuilder {
	s := &StepBuilder{s: contracts.Step{ID: id, Activity: contracts.ActivityOperation, Status: status, Title: title, Outputs: []contracts.ArtifactRef{}}}
	c.steps = append(c.steps, s)
	return s
}

// StepBuilder assembles one step of a case.
type StepBuilder struct{ s contracts.Step }

// Delegation marks the step as a delegation instead of an operation.
func (s *StepBuilder) Delegation() *StepBuilder {
	s.s.Activity = contracts.ActivityDelegation
	return s
}

// ExternalID sets the stable external id of the step.
func (s *StepBuilder) ExternalID(id string) *StepBuilder { s.s.ExternalID = id; return s }

// AwaitingStep says what Studio collects from the operator for an awaiting step.
type AwaitingStep struct {
	Reason     string                    // e.g. "human_input"
	Surface    string                    // default "case.step.awaiting"
	Action     string                    // default "step.awaiting.submit"
	Fields     []contracts.AwaitingField // set each field's Type explicitly
	Reopenable bool                      // the answered step may be reopened and resubmitted
}

// Awaiting puts the step in human-in-the-loop state: status "awaiting" plus the
// awaiting object naming the surface Studio loads and the action it invokes.
func (s *StepBuilder) Awaiting(a AwaitingStep) *StepBuilder {
	s.s.Status = "awaiting"
	s.s.Awaiting = &contracts.Awaiting{
		Reason: orDefault(a.Reason, "human_input"), Surface: orDefault(a.Surface, "case.step.awaiting"),
		Action: orDefault(a.Action, contracts.DefaultSubmitAction), Fields: a.Fields, Reopenable: a.Reopenable,
	}
	if s.s.Awaiting.Fields == nil {
		s.s.Awaiting.Fields = []contracts.AwaitingField{}
	}
	return s
}

// Output adds an artifact the step produced.
func (s *StepBuilder) Output(a contracts.ArtifactRef) *StepBuilder {
	s.s.Outputs = append(s.s.Outputs, a)
	return s
}

// StudioArtifact adds an output whose bytes Studio already stores (for example a
// file the operator uploaded): Studio serves it without calling artifact.get.
func (s *StepBuilder) StudioArtifact(id, artifactType, fileID, title string) *StepBuilder {
	return s.Output(contracts.ArtifactRef{ID: id, Type: artifactType, Title: title, Storage: contracts.StorageStudio, FileID: fileID})
}

// Cost sets the step's information.cost.total_cost; Studio adds step costs into
// the case cost.
func (s *StepBuilder) Cost(cost float64) *StepBuilder {
	s.s.Information = withCost(s.s.Information, cost)
	return s
}
