package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/a2ui"
	"github.com/supervaize/supervaizer-go/studio"
)

// Surface handlers return A2UI documents. They read state and never create
// any: job.start may be loaded for a draft that is never
// started.

// jobStartSurface is the form shown before job.start, with the preview action
// Studio calls to show the setup plan and its cost.
func (a *app) jobStartSurface(ctx context.Context, req *supervaizer.SurfaceRequest) (*supervaizer.SurfaceResult, error) {
	form := a2ui.Form{
		ID: "research-agent.job.start", Title: "Start research",
		Fields:  setupFields(),
		Submit:  a2ui.Submit{Action: actionStart, Label: "Start research"},
		Preview: &a2ui.Preview{Action: actionPreview},
	}
	if req.DraftSessionID != "" {
		form.State = map[string]any{"draft_session_id": req.DraftSessionID} // transient UI context only
	}
	return supervaizer.NewSurfaceResult(ctx, req.Surface, form)
}

// surfaceJob returns the job a surface request names, in the caller's
// workspace.
func (a *app) surfaceJob(ctx context.Context, req *supervaizer.SurfaceRequest) (*jobRecord, error) {
	ws, _ := supervaizer.WorkspaceFrom(ctx)
	scope, ok := workspaceScope(ws)
	if !ok {
		return nil, errors.New("no verified workspace")
	}
	rec, err := a.jobs.get(ctx, scope, req.JobID)
	if err != nil {
		return nil, fmt.Errorf("surface %s for job %q: %w", req.Surface, req.JobID, err)
	}
	return rec, nil
}

// reviewSurface is the awaiting step's review: the draft brief, editable, with
// the checks the operator confirms and the fields step.awaiting.submit takes.
func (a *app) reviewSurface(ctx context.Context, req *supervaizer.SurfaceRequest) (*supervaizer.SurfaceResult, error) {
	rec, err := a.surfaceJob(ctx, req)
	if err != nil {
		return nil, err
	}
	if req.StepID != "" && req.StepID != rec.reviewStepID() {
		return nil, fmt.Errorf("job %s has no awaiting step %q", rec.ID, req.StepID)
	}
	return supervaizer.NewSurfaceResult(ctx, req.Surface, a2ui.DocumentReview{
		ID: "research-agent.review", Title: "Review the brief",
		Document: a2ui.ReviewContent{
			Title: "Brief: " + rec.TopicID, Field: "review_text", Language: "markdown", Value: rec.Draft,
			Validation: []a2ui.ReviewCheck{
				{ID: "sources", Label: "Every claim is sourced", Status: "review"},
				{ID: "goal", Label: "The brief answers the goal", Status: "review"},
			},
		},
		Submit: a2ui.Submit{Action: actionSubmit, Label: "Submit review"},
		Fields: reviewFields(),
		State:  map[string]any{"job_id": rec.ID, "case_id": rec.setupCaseID(), "step_id": rec.reviewStepID()},
	})
}

// stepDetail is the document of case.step.detail. The SDK types the documents
// the protocol names; any other valid document may be returned,
// here a plain description of the step and its outputs.
type stepDetail struct {
	Type      string                     `json:"type"`
	ID        string                     `json:"id"`
	Title     string                     `json:"title"`
	Status    string                     `json:"status"`
	Body      string                     `json:"body,omitempty"`
	Language  string                     `json:"language,omitempty"`
	Facts     []fact                     `json:"facts"`
	Outputs   []supervaizer.ArtifactRef  `json:"outputs"`
	Citations []studio.ContextProvenance `json:"context"`
}

type fact struct {
	Label string `json:"label"`
	Value string `json:"value"`
}

// stepDetailSurface describes one step of a job: the brief for the review and
// synthesis steps, the delivery for the send step, plus the frozen context
// the job was assigned.
func (a *app) stepDetailSurface(ctx context.Context, req *supervaizer.SurfaceRequest) (*supervaizer.SurfaceResult, error) {
	rec, err := a.surfaceJob(ctx, req)
	if err != nil {
		return nil, err
	}
	var step *supervaizer.Step
	for _, c := range rec.state().Cases {
		for i := range c.Steps {
			if c.Steps[i].ID == req.StepID {
				step = &c.Steps[i]
			}
		}
	}
	if step == nil {
		return nil, fmt.Errorf("job %s has no step %q", rec.ID, req.StepID)
	}
	doc := stepDetail{Type: "StepDetail", ID: "research-agent.step." + step.ID, Title: step.Title, Status: step.Status,
		Facts: []fact{{"Topic", rec.TopicID}, {"Depth", rec.Depth}}, Outputs: step.Outputs, Citations: []studio.ContextProvenance{}}
	switch step.ID {
	case rec.reviewStepID(), rec.briefStepID():
		doc.Body, doc.Language = rec.Draft, "markdown"
	case rec.sendStepID():
		if d := rec.Delivery; d != nil {
			doc.Facts = append(doc.Facts, fact{"Recipients", fmt.Sprint(d.Recipients)}, fact{"Sent at", d.SentAt.UTC().Format(time.RFC3339)})
		}
	}
	snaps, err := a.jobContext(ctx, rec.Scope, rec.ID)
	if err != nil {
		return nil, err
	}
	for _, s := range snaps {
		doc.Citations = append(doc.Citations, s.Provenance)
	}
	return supervaizer.NewSurfaceResult(ctx, req.Surface, doc)
}

// analyticsSurface is the mission dashboard.
func (a *app) analyticsSurface(ctx context.Context, req *supervaizer.SurfaceRequest) (*supervaizer.SurfaceResult, error) {
	return supervaizer.NewSurfaceResult(ctx, req.Surface, analyticsDocument())
}
