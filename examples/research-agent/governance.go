package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/checkpoint"
)

// Governed jobs. When a workspace governs the agent with rules, Studio adds an
// opaque rule_snapshot to the job.start input. The agent then guards its one
// external effect, sending the brief, with rule checkpoints: Studio decides
// before the brief is sent and again after. The snapshot is a
// credential, which the agent never keeps itself: job.start saves the gate in
// the SDK's store, the delivery (which may run after a restart) restores it
// by job id, and the gate is forgotten once the job is over. It is never
// logged, shown or put in a job_state.

// codeGovernance refuses a governed job whose snapshot cannot be used.
const codeGovernance = "rule_snapshot_unusable"

// errAwaitingDecision: the delivery is parked on a paused rule checkpoint
// that a previous run recorded; onDecision resumes it when Studio's decision
// arrives.
var errAwaitingDecision = errors.New("waiting for a rule checkpoint decision recorded before a restart")

// errDeliveryActive: another goroutine of this process is running the
// delivery's guarded step; it records the outcome.
var errDeliveryActive = errors.New("the delivery is already running")

// keepGovernance checks that a governed job.start can be gated (a valid
// snapshot and a controller attached to Studio), then saves the gate in the
// SDK's store, bound to the call's verified workspace. A job.start delivered
// again saves nothing new; one that brings another snapshot for the job is
// refused.
func (a *app) keepGovernance(ctx context.Context, req *supervaizer.ActionRequest) *supervaizer.ActionResult {
	gate, err := checkpoint.NewGate(a.agent.Checkpoints(), a.srv.Studio(), req)
	if err != nil {
		a.logger.LogAttrs(ctx, slog.LevelWarn, "governed job refused", slog.String("job_id", req.JobID), slog.Any("error", err))
		return supervaizer.Fail(codeGovernance, "this job is governed by rule checkpoints, which need a valid rule snapshot and a controller attached to Studio")
	}
	if err := gate.Save(ctx); err != nil {
		a.logger.LogAttrs(ctx, slog.LevelError, "save the rule checkpoint gate", slog.String("job_id", req.JobID), slog.Any("error", err))
		return supervaizer.Fail(codeGovernance, "the rule snapshot could not be kept")
	}
	return nil
}

// gate restores the checkpoint gate that job.start saved for the job.
func (a *app) gate(ctx context.Context, rec *jobRecord) (*checkpoint.Gate, error) {
	return checkpoint.RestoreGate(ctx, a.agent.Checkpoints(), a.srv.Studio(), rec.ID)
}

// forgetGate drops the saved gate of a governed job that is over, and with it
// the checkpoint token. A failure is logged: the next start tries again.
func (a *app) forgetGate(ctx context.Context, rec *jobRecord) {
	if a.srv.Studio() == nil {
		return // no gate can have been saved without a Studio account
	}
	gate, err := a.gate(ctx, rec)
	if err == nil {
		err = gate.Forget(ctx)
	}
	if err != nil && !errors.Is(err, checkpoint.ErrGateNotFound) {
		a.logger.LogAttrs(ctx, slog.LevelWarn, "forget the rule checkpoint gate", slog.String("job_id", rec.ID), slog.Any("error", err))
	}
}

// onDecision is called by the SDK once Studio's decision on a paused rule
// checkpoint is persisted. A delivery waiting in this process takes the
// decision by itself; one that a previous run left paused is parked
// (errAwaitingDecision), so it is started again: it goes on from the
// decision. It runs on the rule.checkpoint.resume call and only starts the
// delivery in the background. The decision's verified workspace gives the
// job's scope: a decision never reaches another workspace's job.
func (a *app) onDecision(ctx context.Context, d checkpoint.Decision) {
	if d.Active || d.Retained {
		return
	}
	if ws, ok := supervaizer.WorkspaceFrom(ctx); ok {
		if scope, ok := workspaceScope(ws); ok {
			a.startDelivery(scope, d.JobID)
		}
		return
	}
	// A decision handed over again by this process's own guarded step (it
	// was refusing the occurrence when the decision arrived) comes with the
	// step's context, which carries no workspace. The decision was verified
	// and persisted when it arrived: resume the governed jobs of that id (a
	// job without a decision on its gate just keeps waiting).
	err := a.jobs.each(ctx, "", func(j *jobRecord) error {
		if j.ID == d.JobID && j.Governed {
			a.startDelivery(j.Scope, j.ID)
		}
		return nil
	})
	if err != nil {
		a.logger.LogAttrs(ctx, slog.LevelError, "resuming a delivery after a decision failed", slog.String("job_id", d.JobID), slog.Any("error", err))
	}
}

// sendResult is the outcome of the external effect.
type sendResult struct {
	Receipt    string `json:"receipt"`
	Recipients int    `json:"recipients"`
}

// guardedSend describes the delivery of a governed job as a guarded step. The
// occurrence id and the before context are stable across retries and
// restarts: the message and its recipients were frozen at approval.
func (a *app) guardedSend(rec *jobRecord) checkpoint.Step[sendResult] {
	return checkpoint.Step[sendResult]{
		CaseID:        rec.sendCaseID(),
		CaseDetails:   map[string]any{"name": "Delivery: " + rec.TopicID},
		OccurrenceID:  "send-brief-" + rec.ID,
		StepID:        rec.sendStepID(),
		BeforeContext: map[string]any{"operation": "send_brief", "channel": "email", "recipients": len(rec.Recipients)},
		Effect:        func(ctx context.Context) (sendResult, error) { return a.sendBrief(ctx, rec) },
		AfterContext: func(r sendResult) map[string]any {
			return map[string]any{"operation": "send_brief", "outcome": "sent", "recipients": r.Recipients}
		},
		Advance: func(ctx context.Context, r sendResult) error {
			_, err := a.recordDelivery(ctx, rec, r)
			return err
		},
	}
}

// sendGoverned runs the delivery of a governed job between its before and
// after checkpoints, and records the outcome on the job. A paused checkpoint
// waits for Studio's decision (rule.checkpoint.resume) in this goroutine.
func (a *app) sendGoverned(ctx context.Context, rec *jobRecord) error {
	gate, err := a.gate(ctx, rec)
	if err != nil {
		return errors.Join(err, a.markFailed(ctx, rec, "the rule snapshot of this job is not usable"))
	}
	step := a.guardedSend(rec)
	r, err := checkpoint.Run(ctx, gate, step)
	var (
		blocked  *checkpoint.BlockedError
		recovery *checkpoint.RecoveryRequiredError
	)
	switch {
	case err == nil:
		return nil // Advance recorded the delivery
	case errors.As(err, &blocked):
		return a.blocked(ctx, rec, blocked.Phase, blocked.Status, r)
	case errors.As(err, &recovery):
		return a.recoverDelivery(ctx, gate, rec, step, recovery)
	case ctx.Err() != nil:
		return ctx.Err() // shutdown while waiting for a decision: resumed at the next start
	case errors.Is(err, errPublicationWithheld):
		return a.markFailed(ctx, rec, "the campaign's policy forbids publication: the brief was not sent")
	case errors.Is(err, errStoppedBeforeSend):
		return nil
	default:
		return errors.Join(err, a.markFailed(ctx, rec, "a rule checkpoint could not be asked"))
	}
}

// blocked records a decision other than allow: before the effect, the brief
// was not sent; after it, the brief was sent but the job does not advance.
func (a *app) blocked(ctx context.Context, rec *jobRecord, phase, status string, r sendResult) error {
	a.logger.LogAttrs(ctx, slog.LevelInfo, "rule checkpoint blocked the delivery", slog.String("job_id", rec.ID),
		slog.String("phase", phase), slog.String("status", status))
	if phase == phaseBefore {
		return a.markFailed(ctx, rec, "a rule checkpoint stopped the brief before it was sent")
	}
	_, err := a.jobs.update(ctx, rec.Scope, rec.ID, func(j *jobRecord) error {
		j.Delivery = &delivery{Receipt: r.Receipt, Recipients: r.Recipients, SentAt: a.now().UTC()}
		j.Status, j.Failure = jobFailed, "a rule checkpoint refused the brief after it was sent"
		return nil
	})
	return err
}

// recoverDelivery handles a delivery that checkpoint.Run cannot run as is:
// one running elsewhere in this process, one a previous run left on a paused
// checkpoint (parked until onDecision), one Studio stopped in the meantime,
// one left between its checkpoints, which it finishes, and one whose
// advancement is ambiguous (the process died after Studio allowed the sent
// brief and the SDK recorded "advancement started", before the job recorded
// the delivery), which it finishes by repeating the idempotent advance. The
// outbox tells whether the brief went out: the effect is never run twice, and
// no job is left active.
func (a *app) recoverDelivery(ctx context.Context, gate *checkpoint.Gate, rec *jobRecord, step checkpoint.Step[sendResult], rr *checkpoint.RecoveryRequiredError) error {
	switch {
	case rr.Reason == checkpoint.RecoveryOccurrenceActive:
		return errDeliveryActive
	case rr.Decision == checkpoint.Pause:
		return errAwaitingDecision
	case !rr.EffectStarted && rr.Decision == checkpoint.Stop:
		return a.blocked(ctx, rec, phaseBefore, rr.Decision, sendResult{})
	case !rr.EffectStarted:
		return errors.Join(fmt.Errorf("the delivery of job %s cannot be recovered: %w", rec.ID, rr),
			a.markFailed(ctx, rec, "the delivery could not be recovered; start a new job"))
	}
	var m message
	sent, err := get(ctx, a.store, outboxKey(rec.Scope, rec.ID), &m)
	if err != nil {
		return err
	}
	if !sent {
		return a.markFailed(ctx, rec, "the delivery was interrupted before the brief was sent; start a new job")
	}
	r, err := checkpoint.Recover(ctx, gate, checkpoint.Recovery[sendResult]{
		CaseID: step.CaseID, OccurrenceID: step.OccurrenceID,
		Result:        sendResult{Receipt: receiptOf(rec.ID), Recipients: len(m.To)},
		AfterContext:  step.AfterContext,
		Advance:       step.Advance,
		ConfirmEffect: !rr.EffectCompleted,
	})
	var (
		blocked *checkpoint.BlockedError
		again   *checkpoint.RecoveryRequiredError
	)
	switch {
	case errors.As(err, &blocked):
		return a.blocked(ctx, rec, blocked.Phase, blocked.Status, r)
	case errors.As(err, &again) && again.Decision == checkpoint.Stop:
		return a.blocked(ctx, rec, phaseAfter, again.Decision, r)
	case errors.As(err, &again) && again.Decision == checkpoint.Pause:
		return errAwaitingDecision
	case errors.As(err, &again) && again.Reason == checkpoint.RecoveryOccurrenceActive:
		return errDeliveryActive
	case errors.As(err, &again) && again.Reason == checkpoint.RecoveryAmbiguousAdvancement:
		return a.finishAmbiguous(ctx, rec, r)
	}
	return err
}

// finishAmbiguous finishes a delivery whose advancement may or may not have
// happened: Studio allowed the sent brief, so advancing is right, and the
// advance (recordDelivery) is idempotent — it records the delivery once and
// completes the job, or changes nothing when the first attempt got that far.
// Should the record still fail, the job is failed visibly for review rather
// than left active.
func (a *app) finishAmbiguous(ctx context.Context, rec *jobRecord, r sendResult) error {
	a.logger.LogAttrs(ctx, slog.LevelWarn, "rule checkpoint advancement was interrupted; repeating the idempotent advance",
		slog.String("job_id", rec.ID))
	if _, err := a.recordDelivery(ctx, rec, r); err != nil {
		return errors.Join(err, a.markFailed(ctx, rec, "the delivery was sent but could not be recorded; review the job"))
	}
	return nil
}
