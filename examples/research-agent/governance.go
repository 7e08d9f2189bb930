package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/store"
)

// Governed jobs. When a workspace governs the agent with rules, Studio adds an
// opaque rule_snapshot to the job.start input. The agent then guards its one
// external effect, sending the brief, with rule checkpoints: Studio decides
// before the brief is sent and again after (checkpoints.md). The snapshot is a
// credential: it is kept in the agent's private store for the delivery, which
// may run after a restart, and never logged, shown or put in a job_state.

// codeGovernance refuses a governed job whose snapshot cannot be used.
const codeGovernance = "rule_snapshot_unusable"

// recheckDecision is how long a delivery whose before checkpoint was paused by
// a previous run waits before it looks for Studio's decision again.
const recheckDecision = 30 * time.Second

// errAwaitingDecision: a previous run recorded a paused checkpoint for the
// delivery and Studio's decision has not arrived yet.
var errAwaitingDecision = errors.New("waiting for a rule checkpoint decision recorded before a restart")

// governance is what the agent keeps to rebuild the gate of a governed job.
type governance struct {
	RuleSnapshot json.RawMessage `json:"rule_snapshot"`
}

func governanceKey(scope, jobID string) string { return store.Key(keyRoot, "governance", scope, jobID) }

// keepGovernance checks that a governed job.start can be gated (a valid
// snapshot and a controller attached to Studio), then keeps its snapshot.
func (a *app) keepGovernance(ctx context.Context, scope string, req *supervaizer.ActionRequest) *supervaizer.ActionResult {
	if _, err := supervaizer.NewRuleCheckpointGate(a.agent, a.srv.Account(), req); err != nil {
		a.logger.LogAttrs(ctx, slog.LevelWarn, "governed job refused", slog.String("job_id", req.JobID), slog.Any("error", err))
		return supervaizer.Fail(codeGovernance, "this job is governed by rule checkpoints, which need a valid rule snapshot and a controller attached to Studio")
	}
	var in governance
	if err := json.Unmarshal(req.Input, &in); err != nil {
		return supervaizer.Fail(codeGovernance, "the rule snapshot cannot be read")
	}
	if err := put(ctx, a.store, governanceKey(scope, req.JobID), in); err != nil {
		a.logger.LogAttrs(ctx, slog.LevelError, "keep the rule snapshot", slog.String("job_id", req.JobID), slog.Any("error", err))
		return supervaizer.Fail(codeGovernance, "the rule snapshot could not be kept")
	}
	return nil
}

// gate rebuilds the checkpoint gate of a governed job from its kept snapshot.
func (a *app) gate(ctx context.Context, rec *jobRecord) (*supervaizer.RuleCheckpointGate, error) {
	var g governance
	found, err := get(ctx, a.store, governanceKey(rec.Scope, rec.ID), &g)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, fmt.Errorf("job %s is governed but its rule snapshot is gone", rec.ID)
	}
	input, err := json.Marshal(g)
	if err != nil {
		return nil, err
	}
	return supervaizer.NewRuleCheckpointGate(a.agent, a.srv.Account(), &supervaizer.ActionRequest{AgentSlug: agentSlug, JobID: rec.ID, Input: input})
}

// sendResult is the outcome of the external effect.
type sendResult struct {
	Receipt    string `json:"receipt"`
	Recipients int    `json:"recipients"`
}

// guardedSend describes the delivery of a governed job as a guarded step. The
// occurrence id and the before context are stable across retries and
// restarts: the message and its recipients were frozen at approval.
func (a *app) guardedSend(rec *jobRecord) supervaizer.GuardedStep[sendResult] {
	return supervaizer.GuardedStep[sendResult]{
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
	r, err := supervaizer.RunGuardedStep(ctx, gate, step)
	var (
		blocked  *supervaizer.BlockedError
		recovery *supervaizer.RecoveryRequiredError
	)
	switch {
	case err == nil:
		return nil // Advance recorded the delivery
	case errors.As(err, &blocked):
		return a.blocked(ctx, rec, blocked, r)
	case errors.As(err, &recovery):
		return a.recoverDelivery(ctx, gate, rec, step, recovery)
	case ctx.Err() != nil:
		return ctx.Err() // shutdown while waiting for a decision: resumed at the next start
	case errors.Is(err, errStoppedBeforeSend):
		return nil
	default:
		return errors.Join(err, a.markFailed(ctx, rec, "a rule checkpoint could not be asked"))
	}
}

// blocked records a decision other than allow: before the effect, the brief
// was not sent; after it, the brief was sent but the job does not advance.
func (a *app) blocked(ctx context.Context, rec *jobRecord, b *supervaizer.BlockedError, r sendResult) error {
	a.logger.LogAttrs(ctx, slog.LevelInfo, "rule checkpoint blocked the delivery", slog.String("job_id", rec.ID),
		slog.String("phase", b.Phase), slog.String("status", b.Status))
	if b.Phase == contracts.PhaseBefore {
		return a.markFailed(ctx, rec, "a rule checkpoint stopped the brief before it was sent")
	}
	_, err := a.jobs.update(ctx, rec.Scope, rec.ID, func(j *jobRecord) error {
		j.Delivery = &delivery{Receipt: r.Receipt, Recipients: r.Recipients, SentAt: a.now().UTC()}
		j.Status, j.Failure = jobFailed, "a rule checkpoint refused the brief after it was sent"
		return nil
	})
	return err
}

// recoverDelivery finishes a delivery a previous run left between its
// checkpoints. The outbox tells whether the brief went out: the effect is
// never run twice.
func (a *app) recoverDelivery(ctx context.Context, gate *supervaizer.RuleCheckpointGate, rec *jobRecord, step supervaizer.GuardedStep[sendResult], rr *supervaizer.RecoveryRequiredError) error {
	if !rr.EffectStarted {
		return errAwaitingDecision
	}
	var m message
	sent, err := get(ctx, a.store, outboxKey(rec.Scope, rec.ID), &m)
	if err != nil {
		return err
	}
	if !sent {
		return a.markFailed(ctx, rec, "the delivery was interrupted before the brief was sent; start a new job")
	}
	r, err := supervaizer.RecoverGuardedStep(ctx, gate, supervaizer.GuardedRecovery[sendResult]{
		CaseID: step.CaseID, OccurrenceID: step.OccurrenceID,
		Result:        sendResult{Receipt: receiptOf(rec.ID), Recipients: len(m.To)},
		AfterContext:  step.AfterContext,
		Advance:       step.Advance,
		ConfirmEffect: !rr.EffectCompleted,
	})
	var blocked *supervaizer.BlockedError
	if errors.As(err, &blocked) {
		return a.blocked(ctx, rec, blocked, r)
	}
	return err
}
