package main

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/a2ui"
	"github.com/supervaize/supervaizer-go/campaign"
	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/store"
	"github.com/supervaize/supervaizer-go/studio"
)

// Business error codes of the agent's results (errors[0].code).
const (
	codeMissingWorkspace = "missing_workspace"
	codeMissingJobID     = "missing_job_id"
	codeJobExists        = "job_exists"
	codeDraftFailed      = "draft_failed"
	codeJobNotFound      = "job_not_found"
	codeStepNotFound     = "step_not_found"
	codeStepNotAwaiting  = "step_not_awaiting"
	codeJobStopped       = "job_stopped"
	codeUnsupportedField = "unsupported_field"
	codeNotAttached      = "studio_not_attached"
)

// startInput is the input of job.start and job.test: the values of the setup
// fields. The SDK derives a strict JSON Schema from it: topic_id is required and
// not blank, unknown keys are refused (apart from the rule_snapshot Studio adds
// to a governed job.start), and the handler never runs on invalid input.
type startInput struct {
	TopicID string `json:"topic_id" sv:"nonblank,maxLen=120"`
	Goal    string `json:"goal,omitempty" sv:"null,maxLen=600"`
	Depth   string `json:"depth,omitempty" sv:"null,enum=quick|deep"`
}

func (in startInput) depth() string {
	if in.Depth == "" {
		return depthQuick
	}
	return in.Depth
}

// previewInput is the input of job.start.preview: the draft values, none
// required yet. Studio also sends the job name under "name", which the SDK
// tolerates.
type previewInput struct {
	TopicID string `json:"topic_id,omitempty" sv:"null,maxLen=120"`
	Goal    string `json:"goal,omitempty" sv:"null,maxLen=600"`
	Depth   string `json:"depth,omitempty" sv:"null,enum=quick|deep"`
}

// reviewInput is the input of step.awaiting.submit: the values of the review
// step's awaiting fields.
type reviewInput struct {
	ReviewText    string `json:"review_text" sv:"nonblank,maxLen=20000"`
	ApproveReview bool   `json:"approve_review"`
}

// scopeOf returns the verified workspace partition of the call, or the
// business failure to answer when there is none.
func scopeOf(ctx context.Context) (string, *supervaizer.ActionResult) {
	ws, _ := supervaizer.WorkspaceFrom(ctx)
	scope, ok := workspaceScope(ws)
	if !ok {
		return "", supervaizer.Fail(codeMissingWorkspace, "the call carries no verified workspace")
	}
	return scope, nil
}

// startJob creates the job: a draft brief waiting for review in the setup
// lane. Persistent state is created here, never on a surface load or preview.
// Retries with the same idempotency_key never reach it: the SDK answers them
// with the stored result.
func (a *app) startJob(ctx context.Context, req *supervaizer.ActionRequest, in startInput) (*supervaizer.ActionResult, error) {
	scope, fail := scopeOf(ctx)
	if fail != nil {
		return fail, nil
	}
	if strings.TrimSpace(req.JobID) == "" {
		return supervaizer.Fail(codeMissingJobID, "job.start needs the job_id Studio assigned"), nil
	}
	topic, goal := strings.TrimSpace(in.TopicID), strings.TrimSpace(in.Goal)
	isGoverned := governed(req.Input)
	if isGoverned {
		if fail := a.keepGovernance(ctx, req); fail != nil {
			return fail, nil
		}
	}
	var delegated *delegationRecord
	if a.delegate != nil { // gathering the sources is delegated to the remote agent
		delegated = a.delegate.gatherSources(ctx, scope, req.JobID, topic)
		a.logger.LogAttrs(ctx, slog.LevelInfo, "job.start: sources delegated", slog.String("job_id", req.JobID),
			slog.String("task_id", delegated.TaskID), slog.String("state", delegated.State))
	}
	draft, err := draftBrief(ctx, standInModel, topic, goal, in.depth())
	if err != nil {
		a.logger.LogAttrs(ctx, slog.LevelWarn, "job.start: no draft", slog.String("error", err.Error()))
		return supervaizer.Fail(codeDraftFailed, "the brief could not be drafted"), nil
	}
	rec := &jobRecord{
		ID: req.JobID, MissionID: req.MissionID, Scope: scope,
		TopicID: topic, Goal: goal, Depth: in.depth(), Status: jobAwaiting,
		Draft:    draft,
		Governed: isGoverned, Delegation: delegated,
	}
	if pol, ok := campaign.PolicyFrom(ctx); ok && pol.NoPublication {
		rec.NoPublication = true // no input, approval or model relaxes it
	}
	stored, created, err := a.jobs.create(ctx, rec)
	if err != nil {
		return nil, err
	}
	if !created {
		// The same job started again without an idempotency key: converge on
		// the existing job and create nothing; a different input is refused.
		a.logger.LogAttrs(ctx, slog.LevelInfo, "job.start: the job exists, nothing created", slog.String("job_id", stored.ID))
		if stored.MissionID != rec.MissionID || stored.TopicID != rec.TopicID || stored.Goal != rec.Goal || stored.Depth != rec.Depth {
			return supervaizer.Fail(codeJobExists, "job %s was already started with another input", req.JobID), nil
		}
		// Answer as the first start did, job.started included: this run may
		// be the takeover of a start whose first answer was lost (its process
		// died after creating the job), and Studio learns of the job from
		// that effect (spec item 69).
		return a.started(stored), nil
	}
	a.logger.LogAttrs(ctx, slog.LevelInfo, "job created", slog.String("job_id", stored.ID), slog.String("topic_id", topic))
	return a.started(stored), nil
}

// started is the answer to the start of rec: its job.started and
// case.created effects and its state.
func (a *app) started(rec *jobRecord) *supervaizer.ActionResult {
	st := rec.state()
	return withState(supervaizer.OK(
		supervaizer.JobStarted(rec.ID, map[string]any{"topic_id": rec.TopicID, "status": rec.Status}),
		supervaizer.CaseCreated(rec.ID, st.Cases[0]),
	), rec)
}

// governed reports whether Studio attached a rule snapshot to the job start.
func governed(input json.RawMessage) bool {
	var probe struct {
		RuleSnapshot json.RawMessage `json:"rule_snapshot"`
	}
	return json.Unmarshal(input, &probe) == nil && len(probe.RuleSnapshot) > 0 && string(probe.RuleSnapshot) != "null"
}

// withState attaches the job's snapshot to a result.
func withState(res *supervaizer.ActionResult, rec *jobRecord) *supervaizer.ActionResult {
	res.JobState = rec.state()
	return res
}

// previewJob returns the setup plan for the current draft values, with a cost
// range by depth. It creates nothing.
func (a *app) previewJob(_ context.Context, _ *supervaizer.ActionRequest, in previewInput) (*supervaizer.ActionResult, error) {
	step := setupStep()
	if strings.TrimSpace(in.TopicID) != "" {
		step.Status = "done"
	}
	cost := a2ui.EstimatedCost("credits", 1, 2, "quick scan of the trade press")
	if in.Depth == depthDeep {
		cost = a2ui.EstimatedCost("credits", 3, 5, "deep dive over reports, filings and press")
	}
	res := supervaizer.OK(supervaizer.Effect{Type: "job.start.previewed"})
	res.SetupPlan = a2ui.NewSetupPlan(true, cost, step)
	return res, nil
}

// Errors of a review submission, mapped to business failures.
var (
	errWrongStep   = errors.New("not the review step of this job")
	errNotAwaiting = errors.New("the review step is not awaiting input")
	errStopped     = errors.New("the job was stopped")
)

// submitReview records the operator's review. An edit without approval keeps
// the step awaiting; an approval completes it and starts sending the brief in
// the background (job.sync reports the outcome). Studio names the case and
// the step; a call that names neither (an A2A client answering the job's
// input-required task knows only the task) addresses the job's one awaiting
// step, its review.
func (a *app) submitReview(ctx context.Context, req *supervaizer.ActionRequest, in reviewInput) (*supervaizer.ActionResult, error) {
	scope, fail := scopeOf(ctx)
	if fail != nil {
		return fail, nil
	}
	var recipients []string
	if in.ApproveReview {
		// The brief goes to the workspace's contacts as they are at approval.
		var err error
		if recipients, err = a.contactEmails(ctx, scope); err != nil {
			return nil, err
		}
	}
	replay := false
	rec, err := a.jobs.update(ctx, scope, req.JobID, func(j *jobRecord) error {
		if (req.CaseID != "" || req.StepID != "") && (req.CaseID != j.setupCaseID() || req.StepID != j.reviewStepID()) {
			return errWrongStep
		}
		switch {
		case j.Status == jobStopped:
			return errStopped
		case j.Status != jobAwaiting && in.ApproveReview && in.ReviewText == j.Draft:
			replay = true // the same approval again: converge, change nothing
			return errUnchanged
		case j.Status != jobAwaiting:
			return errNotAwaiting
		}
		j.Draft, j.Reviews = in.ReviewText, j.Reviews+1
		if in.ApproveReview {
			j.Status, j.Approved, j.Recipients, j.ApprovedAt = jobActive, true, recipients, a.now().UTC()
		}
		return nil
	})
	switch {
	case errors.Is(err, errJobNotFound):
		return supervaizer.Fail(codeJobNotFound, "no job %q in this workspace", req.JobID), nil
	case errors.Is(err, errWrongStep):
		return supervaizer.Fail(codeStepNotFound, "job %s has no awaiting step %q in case %q", req.JobID, req.StepID, req.CaseID), nil
	case errors.Is(err, errStopped):
		return supervaizer.Fail(codeJobStopped, "job %s was stopped", req.JobID), nil
	case errors.Is(err, errNotAwaiting):
		return supervaizer.Fail(codeStepNotAwaiting, "the review of job %s was already approved", req.JobID), nil
	case err != nil:
		return nil, err
	}
	if replay {
		return withState(supervaizer.OK(), rec), nil
	}
	if !in.ApproveReview {
		return withState(supervaizer.OK(supervaizer.StepAwaitingSubmitted(rec.ID, rec.setupCaseID(), rec.reviewStepID(), jobAwaiting)), rec), nil
	}
	a.startDelivery(scope, rec.ID)
	st := rec.state()
	return withState(supervaizer.OK(
		supervaizer.StepAwaitingSubmitted(rec.ID, rec.setupCaseID(), rec.reviewStepID(), "completed"),
		supervaizer.CaseCreated(rec.ID, st.Cases[1]),
		supervaizer.CaseCreated(rec.ID, st.Cases[2]),
	), rec), nil
}

// syncJob returns the job's current snapshot. It is convergent: repeated calls
// for the same state give the same projection.
func (a *app) syncJob(ctx context.Context, req *supervaizer.ActionRequest) (*supervaizer.ActionResult, error) {
	scope, fail := scopeOf(ctx)
	if fail != nil {
		return fail, nil
	}
	rec, err := a.jobs.get(ctx, scope, req.JobID)
	if errors.Is(err, errJobNotFound) {
		return supervaizer.Fail(codeJobNotFound, "no job %q in this workspace", req.JobID), nil
	} else if err != nil {
		return nil, err
	}
	res := withState(supervaizer.OK(supervaizer.JobSynced(rec.ID, rec.Status)), rec)
	res.ExternalRef = "topic:" + rec.TopicID
	res.SyncCursor = "rev_" + strconv.Itoa(rec.Revision)
	res.ExternalVersion = rec.ID + ":" + res.SyncCursor
	res.ObservedAt = a.now().UTC().Format(time.RFC3339)
	rs := contracts.DefaultReplaySafety()
	rs.Convergent, rs.StrictlyIdempotentResponse = true, false
	rs.DedupeKeys = []string{rec.ID, res.ExternalVersion}
	res.ReplaySafety = &rs
	return res, nil
}

// stopJob stops a job that is still waiting for review or sending. A brief
// still in its send delay is recalled: it is never sent. A brief whose
// sending has begun cannot be recalled: the delivery completes and is
// recorded. Stopping a finished job changes nothing.
func (a *app) stopJob(ctx context.Context, req *supervaizer.ActionRequest) (*supervaizer.ActionResult, error) {
	scope, fail := scopeOf(ctx)
	if fail != nil {
		return fail, nil
	}
	stopped := false
	rec, err := a.jobs.update(ctx, scope, req.JobID, func(j *jobRecord) error {
		if j.Status != jobAwaiting && j.Status != jobActive {
			return errUnchanged
		}
		j.Status, stopped = jobStopped, true
		return nil
	})
	if errors.Is(err, errJobNotFound) {
		return supervaizer.Fail(codeJobNotFound, "no job %q in this workspace", req.JobID), nil
	} else if err != nil {
		return nil, err
	}
	if !stopped {
		return withState(supervaizer.OK(), rec), nil
	}
	return withState(supervaizer.OK(supervaizer.Effect{Type: "job.stopped", JobID: rec.ID, Status: rec.Status}), rec), nil
}

var yearPattern = regexp.MustCompile(`\b(19|20)\d\d\b`)

// suggestGoal is the help action of the goal field: it drafts a goal from the
// topic, or checks the operator's goal. Studio shows the draft and never
// applies it on its own.
func (a *app) suggestGoal(_ context.Context, _ *supervaizer.ActionRequest, in a2ui.HelpInput) (*supervaizer.ActionResult, error) {
	if in.Field != "goal" {
		return supervaizer.Fail(codeUnsupportedField, "%s drafts the goal field only, not %q", actionGoalSuggest, in.Field), nil
	}
	topic, _ := in.Values["topic_id"].(string)
	goal, _ := in.Values["goal"].(string)
	topic, goal = strings.TrimSpace(topic), strings.TrimSpace(goal)
	var (
		value       any
		suggestions []a2ui.Suggestion
	)
	switch {
	case goal == "" && topic == "":
		suggestions = append(suggestions, a2ui.Suggestion{Message: "Name the topic first.", Severity: "warning", Field: "topic_id"})
	case goal == "":
		value = defaultGoal(topic)
	default:
		value = goal
	}
	if goal != "" && !yearPattern.MatchString(goal) {
		suggestions = append(suggestions, a2ui.Suggestion{Message: "Add a time horizon (for example 2027) so the scope is bounded.", Field: "goal"})
	}
	d, err := a2ui.Draft("goal", value, suggestions...)
	if err != nil {
		return nil, err
	}
	res := supervaizer.OK()
	res.Draft = d
	return res, nil
}

// testJob is the dry-run action: it drafts the brief the job would produce and
// returns it, saving nothing and sending nothing.
func (a *app) testJob(ctx context.Context, _ *supervaizer.ActionRequest, in startInput) (*supervaizer.ActionResult, error) {
	topic := strings.TrimSpace(in.TopicID)
	draft, err := draftBrief(ctx, standInModel, topic, strings.TrimSpace(in.Goal), in.depth())
	if err != nil {
		a.logger.LogAttrs(ctx, slog.LevelWarn, "job.test: no draft", slog.String("error", err.Error()))
		return supervaizer.Fail(codeDraftFailed, "the brief could not be drafted"), nil
	}
	res := supervaizer.OK(supervaizer.Effect{Type: "job.tested", Message: "Dry run: nothing was saved or sent",
		Data: map[string]any{"topic_id": topic, "draft": draft}})
	res.DryRun = a2ui.DryRun(time.Time{}, false, a2ui.EstimatedCost("credits", 0, 0, "a dry run drafts locally and calls no model"))
	return res, nil
}

// assignContext handles context.assign: the SDK's ContextAssigner opens each
// item once, refuses the whole assignment when a version changed, and hands
// the frozen snapshots to saveContext. The job must exist in the caller's
// workspace.
func (a *app) assignContext(ctx context.Context, req *supervaizer.ActionRequest) (*supervaizer.ActionResult, error) {
	scope, fail := scopeOf(ctx)
	if fail != nil {
		return fail, nil
	}
	var probe struct {
		JobID string            `json:"job_id"`
		Items []json.RawMessage `json:"items"`
	}
	if json.Unmarshal(req.Input, &probe) == nil && probe.JobID != "" {
		if _, err := a.jobs.get(ctx, scope, probe.JobID); errors.Is(err, errJobNotFound) {
			return supervaizer.Fail(codeJobNotFound, "no job %q in this workspace", probe.JobID), nil
		} else if err != nil {
			return nil, err
		}
		if len(probe.Items) > 0 && a.srv.Studio() == nil {
			return supervaizer.Fail(codeNotAttached, "opening context items needs a controller attached to Studio"), nil
		}
	}
	return a.ctxs.Handle(ctx, req)
}

// saveContext stores the frozen context of a job; a new assignment replaces
// the previous one entirely. The agent reads it, never Studio, while the job
// runs.
func (a *app) saveContext(ctx context.Context, asg *studio.ContextAssignment, snaps []studio.ContextSnapshot) error {
	ws, _ := supervaizer.WorkspaceFrom(ctx)
	scope, ok := workspaceScope(ws)
	if !ok {
		return errors.New("context.assign without a verified workspace")
	}
	if snaps == nil {
		snaps = []studio.ContextSnapshot{}
	}
	return put(ctx, a.store, contextKey(scope, asg.JobID), snaps)
}

func contextKey(scope, jobID string) string { return store.Key(keyRoot, "context", scope, jobID) }

// jobContext returns the frozen context of a job (nil when none was assigned).
func (a *app) jobContext(ctx context.Context, scope, jobID string) ([]studio.ContextSnapshot, error) {
	var snaps []studio.ContextSnapshot
	_, err := get(ctx, a.store, contextKey(scope, jobID), &snaps)
	return snaps, err
}
