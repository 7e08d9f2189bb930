package checkpoint

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/supervaize/supervaizer-go/contracts"
)

// Step describes one guarded external effect, an occurrence, for
// [Run]. R is the type of the effect's result.
type Step[R any] struct {
	// CaseID is the case the effect belongs to. Required. Before its first
	// checkpoint the case is announced to Studio (agent.case.start, once) and
	// bound to the gate's agent.
	CaseID string
	// CaseDetails are the details of the agent.case.start event, e.g.
	// {"name": …}. Default: {}.
	CaseDetails map[string]any
	// OccurrenceID identifies the effect. Required, and stable across retries
	// and restarts; unique among the agent's occurrences (include the job and
	// the case, e.g. "send-brief-job-77-case-1").
	OccurrenceID string
	// StepID is the opaque proposed step id sent with both checkpoints. Required.
	StepID string
	// BeforeContext describes the operation to Studio (phase before). It must
	// not change between retries of the occurrence. Default: {}.
	BeforeContext map[string]any
	// Effect performs the external effect. Required. It runs at most once per
	// occurrence, and only after the before decision allow.
	Effect func(ctx context.Context) (R, error)
	// AfterContext describes the outcome to Studio (phase after). Required. It
	// must be deterministic: [Recover] recomputes it to prove that
	// the same context is sent again.
	AfterContext func(result R) map[string]any
	// Advance moves the case forward. Optional. It is called at most once,
	// after the after decision allow.
	Advance func(ctx context.Context, result R) error
}

// Run runs one guarded effect in the order of the rule-checkpoint protocol:
//
//  1. announce the case to Studio (once per case) and bind it to the gate's agent;
//  2. ask the before checkpoint, unless an allow is already persisted;
//     on pause, wait for rule.checkpoint.resume (no polling);
//  3. persist "effect started", then call Effect, only on allow;
//  4. persist "effect completed" with the hash of AfterContext(result);
//  5. ask the after checkpoint (waiting on pause);
//  6. on allow, call Advance between "advancement started" and
//     "advancement completed".
//
// Every state change is persisted in the server's store before the next
// external call, so a restart never replays an uncertain effect: an occurrence
// whose effect started is refused with a [RecoveryRequiredError] and finished
// with [Recover]. A decision other than allow returns a
// [BlockedError]; a failed checkpoint call a [RequestError]; a
// changed context, step or snapshot on retry an error wrapping
// [ErrInvalidState]. Cancelling ctx ends a wait for a decision with
// an error (the record stays paused).
//
// Run calls Studio only once the server started (its Start succeeded, which
// for a server attached to Studio means its registration handshake): a step
// started before waits, and fails if the server shuts down first.
//
// Once the effect has run, its result is returned even with an error, so that
// the agent can keep it for [Recover]. An Effect that returns an
// error leaves the effect "started": its outcome is unknown to the SDK.
func Run[R any](ctx context.Context, gate *Gate, step Step[R]) (R, error) {
	var zero R
	if err := checkStepInput(gate, step.CaseID, step.OccurrenceID); err != nil {
		return zero, err
	}
	switch {
	case strings.TrimSpace(step.StepID) == "":
		return zero, invalidState("Step.StepID is required")
	case step.Effect == nil:
		return zero, invalidState("Step.Effect is required")
	case step.AfterContext == nil:
		return zero, invalidState("Step.AfterContext is required")
	}
	rt, err := gate.agent.checkpointRuntime()
	if err != nil {
		return zero, err
	}
	if err := rt.awaitStarted(ctx, step.OccurrenceID); err != nil {
		return zero, err
	}
	beforeCtx, beforeHash, err := gate.encodeContext("the before context", step.BeforeContext)
	if err != nil {
		return zero, err
	}
	release, err := rt.claim(ctx, step.OccurrenceID)
	if err != nil {
		return zero, err
	}
	released := false
	defer func() {
		if !released {
			release()
		}
	}()
	o := newOccurrence(gate, rt, step.CaseID, step.OccurrenceID, step.StepID)

	if err := o.announce(ctx, step.CaseDetails); err != nil {
		return zero, err
	}
	before, err := rt.loadRecord(ctx, o.beforeKey)
	if err != nil {
		return zero, err
	}
	after, err := rt.loadRecord(ctx, o.afterKey)
	if err != nil {
		return zero, err
	}
	if before, err = o.takeRetained(ctx, o.beforeKey, before); err != nil {
		return zero, err
	}
	if after, err = o.takeRetained(ctx, o.afterKey, after); err != nil {
		return zero, err
	}
	if err := o.guard(before, after, beforeHash); err != nil {
		var rr *RecoveryRequiredError
		if errors.As(err, &rr) && rr.Decision == Pause {
			// A decision that arrived while this step held the occurrence saw it
			// "active" and was left to this step, which is refusing: release the
			// occurrence, then hand any such decision to the hooks.
			released = true
			o.rt.at(seamHandoffBegin)
			o.rt.lockHandoff()
			release()
			pending := o.persistedDecisions(ctx)
			o.rt.at(seamHandoffRead)
			o.rt.handoff.Unlock()
			for _, d := range pending {
				o.rt.decided(ctx, d, false, false)
			}
		}
		return zero, err
	}
	if before != nil && before.Status == Allow {
		o.log(ctx, slog.LevelDebug, "rule checkpoint allow already persisted", contracts.PhaseBefore, before)
	} else {
		rec, resp, err := o.askBefore(ctx, before, beforeCtx, beforeHash)
		if err != nil {
			return zero, err
		}
		if rec.Status != Allow {
			return zero, o.blocked(ctx, contracts.PhaseBefore, rec, resp)
		}
	}

	if err := o.startEffect(ctx); err != nil {
		return zero, err
	}
	result, err := step.Effect(ctx)
	if err != nil {
		return zero, fmt.Errorf("supervaizer: guarded effect of occurrence %q failed; it needs recovery before it can run again: %w", o.id, err)
	}
	// The effect happened: from here on, record its outcome even if ctx ends.
	persist := context.WithoutCancel(ctx)
	afterCtx, afterHash, err := gate.encodeContext("the after context", step.AfterContext(result))
	if err != nil {
		return result, err
	}
	if err := o.completeEffect(persist, afterHash); err != nil {
		return result, err
	}
	rec, resp, err := o.ask(ctx, contracts.PhaseAfter, o.afterKey, afterCtx)
	if err != nil {
		return result, err
	}
	if rec.Status != Allow {
		return result, o.blocked(ctx, contracts.PhaseAfter, rec, resp)
	}
	if step.Advance != nil {
		if err := o.advance(ctx, func(ctx context.Context) error { return step.Advance(ctx, result) }); err != nil {
			return result, err
		}
	}
	return result, nil
}

// checkStepInput checks what Run and Recover share.
func checkStepInput(gate *Gate, caseID, occurrenceID string) error {
	switch {
	case gate == nil:
		return invalidState("a guarded step needs its gate")
	case strings.TrimSpace(caseID) == "":
		return invalidState("the case id is required")
	case strings.TrimSpace(occurrenceID) == "":
		return invalidState("the occurrence id is required")
	}
	return nil
}

// occurrence is one guarded effect being run or recovered.
type occurrence struct {
	gate                *Gate
	rt                  *checkpointRuntime
	caseID, id, stepID  string
	beforeKey, afterKey string
}

func newOccurrence(gate *Gate, rt *checkpointRuntime, caseID, id, stepID string) *occurrence {
	return &occurrence{gate: gate, rt: rt, caseID: caseID, id: id, stepID: stepID,
		beforeKey: occurrenceKey(rt.slug, id, contracts.PhaseBefore), afterKey: occurrenceKey(rt.slug, id, contracts.PhaseAfter)}
}

// log writes one line about a checkpoint of the occurrence; never the
// snapshot, the token or a context.
func (o *occurrence) log(ctx context.Context, level slog.Level, msg, phase string, rec *checkpointRecord) {
	attrs := []slog.Attr{slog.String("agent_slug", o.rt.slug), slog.String("job_id", o.gate.jobID),
		slog.String("case_id", o.caseID), slog.String("occurrence_id", o.id), slog.String("phase", phase)}
	if rec != nil {
		attrs = append(attrs, slog.String("status", rec.Status), slog.String("checkpoint_id", rec.CheckpointID))
	}
	o.rt.logger.LogAttrs(ctx, level, msg, attrs...)
}

// announce signals the case to Studio once and binds it to the gate's agent.
// A case bound to another agent is refused
// before anything is sent.
func (o *occurrence) announce(ctx context.Context, details map[string]any) error {
	st, slug, key := o.rt.store, o.rt.slug, caseKey(o.gate.jobID, o.caseID)
	existing, old, err := getJSON[checkpointCase](ctx, st, key)
	if err != nil {
		return err
	}
	if existing != nil {
		if existing.AgentSlug != slug {
			return invalidState("case %q is owned by agent %q, not %q", o.caseID, existing.AgentSlug, slug)
		}
		if existing.Announced {
			return nil
		}
	}
	if details == nil {
		details = map[string]any{}
	}
	raw, err := json.Marshal(details)
	if err != nil {
		return invalidState("the case details cannot be encoded as JSON: %v", err)
	}
	if o.gate.snapshot.token().appearsIn(raw) {
		return invalidState("the case details contain the rule snapshot's checkpoint token")
	}
	if err := o.gate.account.StartCase(ctx, o.gate.jobID, o.caseID, details); err != nil {
		return fmt.Errorf("supervaizer: announce case %q to Studio: %w", o.caseID, err)
	}
	rec, err := json.Marshal(checkpointCase{AgentSlug: slug, JobID: o.gate.jobID, CaseID: o.caseID, Announced: true, AnnouncedAt: o.rt.now().UTC()})
	if err != nil {
		return err
	}
	persist := context.WithoutCancel(ctx)
	if existing != nil {
		_, err = st.CompareAndSwap(persist, key, old, rec) // lost race: someone else announced it
		return err
	}
	prev, stored, err := st.PutIfAbsent(persist, key, rec)
	if err != nil || stored {
		return err
	}
	var other checkpointCase
	if err := json.Unmarshal(prev, &other); err != nil {
		return invalidState("corrupt rule-checkpoint case record: %v", err)
	}
	if other.AgentSlug != slug {
		return invalidState("case %q is owned by agent %q, not %q", o.caseID, other.AgentSlug, slug)
	}
	return nil
}

// guard applies the re-entry guards of the rule-checkpoint protocol.
func (o *occurrence) guard(before, after *checkpointRecord, beforeHash string) error {
	for _, r := range []*checkpointRecord{before, after} {
		if r != nil && (r.JobID != o.gate.jobID || r.CaseID != o.caseID) {
			return invalidState("occurrence %q belongs to job %q, case %q", o.id, r.JobID, r.CaseID)
		}
	}
	effect := after != nil && (after.EffectStarted || after.EffectCompleted)
	if before != nil {
		switch {
		case before.ContextHash != beforeHash:
			return invalidState("retry context changed (occurrence %q)", o.id)
		case before.SnapshotHash != o.gate.snapshot.hash:
			return invalidState("snapshot changed (occurrence %q)", o.id)
		case before.StepID != o.stepID:
			return invalidState("step changed (occurrence %q)", o.id)
		case before.Status == Allow && effect:
			return o.recoveryRequired(RecoveryOccurrenceClaimed, after)
		case before.Status != Allow && before.Status != statusChecking:
			e := o.recoveryRequired(RecoveryOccurrenceClaimed, after)
			e.Decision = before.Status // pause or stop: the effect never started
			return e
		}
	}
	if effect {
		return o.recoveryRequired(RecoveryEffectStarted, after)
	}
	return nil
}

// recoveryRequired builds the error with the effect flags of after and its
// decision, if it is pause or stop.
func (o *occurrence) recoveryRequired(reason string, after *checkpointRecord) *RecoveryRequiredError {
	e := &RecoveryRequiredError{OccurrenceID: o.id, Reason: reason}
	if after != nil {
		e.EffectStarted, e.EffectCompleted = after.EffectStarted, after.EffectCompleted
		if after.Status == Pause || after.Status == Stop {
			e.Decision = after.Status
		}
	}
	return e
}

// blocked builds the error of a decision other than allow.
func (o *occurrence) blocked(ctx context.Context, phase string, rec *checkpointRecord, resp Response) *BlockedError {
	o.log(ctx, slog.LevelInfo, "rule checkpoint blocked", phase, rec)
	return &BlockedError{OccurrenceID: o.id, Phase: phase, Status: rec.Status, DecisionID: rec.DecisionID, Response: resp}
}

// askBefore persists the before record as checking (unless a checking record
// exists), then asks the checkpoint.
func (o *occurrence) askBefore(ctx context.Context, existing *checkpointRecord, c json.RawMessage, hash string) (*checkpointRecord, Response, error) {
	if existing == nil {
		rec := &checkpointRecord{OccurrenceID: o.id, Phase: contracts.PhaseBefore, AgentSlug: o.rt.slug, JobID: o.gate.jobID,
			CaseID: o.caseID, SnapshotHash: o.gate.snapshot.hash, StepID: o.stepID, ContextHash: hash, Status: statusChecking}
		prev, err := o.rt.createRecord(ctx, o.beforeKey, rec)
		if err != nil {
			return nil, Response{}, err
		}
		if prev != nil { // another instance created it meanwhile
			if err := o.guard(prev, nil, hash); err != nil {
				return nil, Response{}, err
			}
			if prev.Status != statusChecking {
				return nil, Response{}, o.recoveryRequired(RecoveryOccurrenceClaimed, nil)
			}
		}
	}
	return o.ask(ctx, contracts.PhaseBefore, o.beforeKey, c)
}

// ask posts the checkpoint of phase, persists Studio's answer and, on pause,
// waits for the decision. It returns the final record and Studio's answer.
func (o *occurrence) ask(ctx context.Context, phase, key string, c json.RawMessage) (*checkpointRecord, Response, error) {
	resp, err := o.gate.check(ctx, ruleCheckpointRequest{OccurrenceID: o.id, Phase: phase, JobID: o.gate.jobID,
		CaseID: o.caseID, StepID: o.stepID, Context: c})
	if err != nil {
		return nil, resp, err
	}
	rec, err := o.rt.updateRecord(context.WithoutCancel(ctx), key, func(r *checkpointRecord) error {
		r.Status, r.CheckpointID, r.InputHash, r.DecisionID = resp.Status, resp.CheckpointID, resp.InputHash, ""
		return nil
	})
	if err != nil {
		return nil, resp, err
	}
	o.log(ctx, slog.LevelDebug, "rule checkpoint answered", phase, rec)
	if rec.Status == Pause {
		rec, err = o.await(ctx, phase, key)
	}
	return rec, resp, err
}

// await waits for the decision on a paused checkpoint: it is woken by the
// rule.checkpoint.resume handler of this process, re-reads the record every
// poll interval when other instances may persist the decision (Studio is
// never polled), and also takes a decision that arrived before it.
func (o *occurrence) await(ctx context.Context, phase, key string) (*checkpointRecord, error) {
	wake, stop := o.rt.subscribe(key)
	defer stop()
	var poll <-chan time.Time // a decision persisted by another instance
	if o.rt.poll > 0 {
		t := time.NewTicker(o.rt.poll)
		defer t.Stop()
		poll = t.C
	}
	logged := false
	for {
		rec, err := o.rt.loadRecord(ctx, key)
		if err != nil {
			return nil, err
		}
		if rec == nil {
			return nil, invalidState("rule-checkpoint record of occurrence %q disappeared", o.id)
		}
		if rec.Status != Pause {
			o.log(ctx, slog.LevelDebug, "rule checkpoint decided", phase, rec)
			return rec, nil
		}
		applied, err := o.rt.applyRetained(ctx, key, rec)
		if err != nil {
			return nil, err
		}
		if applied {
			continue
		}
		if !logged {
			o.log(ctx, slog.LevelInfo, "rule checkpoint waiting for a decision", phase, rec)
			logged = true
		}
		select {
		case <-wake:
		case <-poll:
		case <-ctx.Done():
			return nil, fmt.Errorf("supervaizer: waiting for rule.checkpoint.resume (occurrence %q, phase %s): %w", o.id, phase, ctx.Err())
		}
	}
}

// startEffect persists "effect started".
func (o *occurrence) startEffect(ctx context.Context) error {
	rec := &checkpointRecord{OccurrenceID: o.id, Phase: contracts.PhaseAfter, AgentSlug: o.rt.slug, JobID: o.gate.jobID,
		CaseID: o.caseID, SnapshotHash: o.gate.snapshot.hash, StepID: o.stepID, Status: statusPending, EffectStarted: true}
	prev, err := o.rt.createRecord(ctx, o.afterKey, rec)
	if err != nil {
		return err
	}
	if prev != nil {
		return o.recoveryRequired(RecoveryOccurrenceClaimed, prev)
	}
	return nil
}

// completeEffect persists "effect completed" with the after-context hash.
func (o *occurrence) completeEffect(ctx context.Context, hash string) error {
	_, err := o.rt.updateRecord(ctx, o.afterKey, func(r *checkpointRecord) error {
		r.EffectCompleted, r.ContextHash = true, hash
		return nil
	})
	return err
}

// advance calls fn once between "advancement started" and "advancement
// completed"; an advancement already completed is not repeated, one started
// but not completed is ambiguous.
func (o *occurrence) advance(ctx context.Context, fn func(context.Context) error) error {
	persist := context.WithoutCancel(ctx)
	done := false
	_, err := o.rt.updateRecord(persist, o.afterKey, func(r *checkpointRecord) error {
		switch {
		case r.AdvancementCompleted:
			done = true
			return errUnchangedRecord
		case r.AdvancementStarted:
			return o.recoveryRequired(RecoveryAmbiguousAdvancement, r)
		}
		r.AdvancementStarted = true
		return nil
	})
	if err != nil || done {
		return err
	}
	if err := fn(ctx); err != nil {
		return fmt.Errorf("supervaizer: advance of occurrence %q failed; the advancement is now ambiguous: %w", o.id, err)
	}
	_, err = o.rt.updateRecord(persist, o.afterKey, func(r *checkpointRecord) error {
		r.AdvancementCompleted = true
		return nil
	})
	return err
}

// takeRetained applies to rec, a record found paused, the decision retained
// for it, if any, and returns the record as it now stands. Such a decision
// arrived before the pause was recorded, and the run that recorded the pause
// ended (a crash) before it could take it: nobody else would.
func (o *occurrence) takeRetained(ctx context.Context, key string, rec *checkpointRecord) (*checkpointRecord, error) {
	if rec == nil || rec.Status != Pause {
		return rec, nil
	}
	applied, err := o.rt.applyRetained(context.WithoutCancel(ctx), key, rec)
	if err != nil || !applied {
		return rec, err
	}
	o.log(ctx, slog.LevelInfo, "rule checkpoint decision retained before a restart applied", rec.Phase, rec)
	return o.rt.loadRecord(ctx, key)
}

// persistedDecisions returns every decision persisted on the occurrence's
// records (an allow or stop delivered while this process held the
// occurrence), for the decision hooks. Hooks are idempotent, so a decision
// they already saw costs nothing.
func (o *occurrence) persistedDecisions(ctx context.Context) []*resumeDecision {
	var out []*resumeDecision
	for _, key := range []string{o.beforeKey, o.afterKey} {
		rec, err := o.rt.loadRecord(ctx, key)
		if err != nil || rec == nil || (rec.Status != Allow && rec.Status != Stop) || rec.DecisionID == "" {
			continue
		}
		out = append(out, &resumeDecision{AgentSlug: o.gate.agent.slug, JobID: rec.JobID, CaseID: rec.CaseID,
			CheckpointID: rec.CheckpointID, OccurrenceID: rec.OccurrenceID, Phase: rec.Phase, Status: rec.Status,
			SnapshotHash: rec.SnapshotHash, InputHash: rec.InputHash, DecisionID: rec.DecisionID})
	}
	return out
}
