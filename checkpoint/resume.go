package checkpoint

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/internal/redact"
)

// EffectResumed is the effect type of a successful
// rule.checkpoint.resume.
const EffectResumed = "rule.checkpoint.resumed"

// resumeDecision is a rule.checkpoint.resume decision (RuleCheckpointResume,
// the rule-checkpoint protocol), also the value of a retained decision.
type resumeDecision struct {
	AgentSlug    string    `json:"agent_slug"`
	JobID        string    `json:"job_id"`
	CaseID       string    `json:"case_id"`
	CheckpointID string    `json:"checkpoint_id"`
	OccurrenceID string    `json:"occurrence_id"`
	Phase        string    `json:"phase"`
	Status       string    `json:"status"`
	SnapshotHash string    `json:"snapshot_hash"`
	InputHash    string    `json:"input_hash"`
	DecisionID   string    `json:"decision_id"`
	RetainedAt   time.Time `json:"retained_at,omitzero"`
}

// errResumeRejected marks every rejection of a decision; the dispatcher
// answers it with -32603.
var errResumeRejected = errors.New("rule.checkpoint.resume rejected")

func rejectResume(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errResumeRejected, fmt.Sprintf(format, args...))
}

// parseResumeDecision reads the decision of a rule.checkpoint.resume request:
// the request's agent_slug, job_id and case_id, and input's checkpoint_id,
// occurrence_id, phase, status, snapshot_hash, input_hash and decision_id.
func parseResumeDecision(req *contracts.ActionRequest) (*resumeDecision, error) {
	var in map[string]json.RawMessage
	if err := json.Unmarshal(req.Input, &in); err != nil || in == nil {
		return nil, rejectResume("input is not an object")
	}
	d := &resumeDecision{AgentSlug: req.AgentSlug, JobID: req.JobID, CaseID: req.CaseID}
	for _, f := range []struct {
		key      string
		dst      *string
		required bool
	}{
		{"checkpoint_id", &d.CheckpointID, true},
		{"occurrence_id", &d.OccurrenceID, true},
		{"phase", &d.Phase, true},
		{"status", &d.Status, true},
		{"snapshot_hash", &d.SnapshotHash, true},
		{"input_hash", &d.InputHash, false},
		{"decision_id", &d.DecisionID, false},
	} {
		v, ok := in[f.key]
		if !ok || isJSONNull(v) {
			if f.required {
				return nil, rejectResume("input.%s is required", f.key)
			}
			continue
		}
		if err := json.Unmarshal(v, f.dst); err != nil {
			return nil, rejectResume("input.%s must be a string", f.key)
		}
		if f.required && strings.TrimSpace(*f.dst) == "" {
			return nil, rejectResume("input.%s must not be blank", f.key)
		}
	}
	switch {
	case strings.TrimSpace(d.JobID) == "":
		return nil, rejectResume("the request has no job_id")
	case strings.TrimSpace(d.CaseID) == "":
		return nil, rejectResume("the request has no case_id")
	case d.Phase != contracts.PhaseBefore && d.Phase != contracts.PhaseAfter:
		return nil, rejectResume("input.phase must be before or after, got %q", redact.Truncate(d.Phase, 40))
	case d.Status == Pause:
		return nil, rejectResume("decision status pause is not accepted: a paused checkpoint is resolved only by allow or stop; it keeps waiting")
	case d.Status != Allow && d.Status != Stop:
		return nil, rejectResume("input.status must be allow or stop, got %q", redact.Truncate(d.Status, 40))
	}
	return d, nil
}

// Resume is the SDK's rule.checkpoint.resume handler, which a server
// installs for every agent that declares rule checkpoints (an author's own
// handler may call it too, for example after recording the decision). An
// accepted decision is passed to the decision hooks before the answer. A
// rejected decision is logged with its precise reason and answered with an
// error (sent as -32603 "Action handler failed"); the checkpoint keeps waiting.
func (a *Runtime) Resume(ctx context.Context, req *contracts.ActionRequest) (*contracts.ActionResult, error) {
	rt, err := a.checkpointRuntime()
	if err != nil {
		return nil, err
	}
	d, err := parseResumeDecision(req)
	if err == nil {
		// Whether a step of this process holds the occurrence is read before
		// the decision can wake it: a woken step may finish before the hooks run.
		rt.handoff.Lock()
		active := rt.isActive(d.OccurrenceID)
		rt.at(seamResumeChecked)
		var retained bool
		retained, err = rt.resume(ctx, d)
		rt.handoff.Unlock()
		if err == nil && !active {
			// A step of another instance sharing the store: read once the
			// decision is persisted, so that a step letting go meanwhile
			// (it releases, then reads the persisted decisions) either
			// finds the decision or is seen gone here.
			active = rt.claimedElsewhere(ctx, d.OccurrenceID)
		}
		if err == nil {
			rt.decided(ctx, d, retained, active)
			return &contracts.ActionResult{Status: contracts.StatusOK, Effects: []contracts.Effect{resumedEffect(d, retained)}}, nil
		}
	}
	attrs := []slog.Attr{slog.String("agent_slug", req.AgentSlug), slog.String("job_id", req.JobID),
		slog.String("case_id", req.CaseID), slog.String("request_id", req.RequestID), slog.String("reason", err.Error())}
	if d != nil {
		attrs = append(attrs, slog.String("occurrence_id", d.OccurrenceID), slog.String("phase", d.Phase),
			slog.String("checkpoint_id", d.CheckpointID))
	}
	rt.logger.LogAttrs(ctx, slog.LevelWarn, "rule.checkpoint.resume rejected", attrs...)
	return nil, err
}

// resumedEffect is the effect of an accepted decision.
func resumedEffect(d *resumeDecision, retained bool) contracts.Effect {
	cp, _ := json.Marshal(d.CheckpointID) // a string always encodes
	e := contracts.Effect{Type: EffectResumed, Status: d.Status, JobID: d.JobID, CaseID: d.CaseID,
		Extra: contracts.Extra{"checkpoint_id": cp}}
	if retained {
		e.Data = map[string]any{"retained": true}
	}
	return e
}

// resume applies a decision: to the matching paused
// record, persisted before the waiter is woken and before the answer; or, when
// the checkpoint request has not returned yet or the case is unknown, retained
// for a later waiter. It reports whether the decision was only retained. A
// decision for a job whose saved gate was started from another workspace is
// rejected.
func (rt *checkpointRuntime) resume(ctx context.Context, d *resumeDecision) (bool, error) {
	if d.AgentSlug != rt.slug {
		return false, rejectResume("the decision is for agent %q, not %q", d.AgentSlug, rt.slug)
	}
	if err := rt.checkDecisionWorkspace(ctx, d); err != nil {
		return false, err
	}
	owner, _, err := getJSON[checkpointCase](ctx, rt.store, caseKey(d.JobID, d.CaseID))
	if err != nil {
		return false, err
	}
	if owner != nil && owner.AgentSlug != rt.slug {
		return false, rejectResume("case %q belongs to another agent", d.CaseID)
	}
	key := occurrenceKey(rt.slug, d.OccurrenceID, d.Phase)
	rec, err := rt.loadRecord(ctx, key)
	if err != nil {
		return false, err
	}
	if rec == nil {
		if owner != nil {
			return false, rejectResume("no %s checkpoint of occurrence %q is pending in case %q", d.Phase, d.OccurrenceID, d.CaseID)
		}
		return true, rt.retainDecision(ctx, d)
	}
	if err := matchDecision(rec, d, rec.CheckpointID != ""); err != nil {
		return false, err
	}
	if rec.CheckpointID == "" { // the checkpoint request has not returned yet
		return true, rt.retainDecision(ctx, d)
	}
	if _, err := rt.updateRecord(ctx, key, func(r *checkpointRecord) error {
		if err := matchDecision(r, d, true); err != nil {
			return err
		}
		switch {
		case r.Status == Pause:
			r.Status, r.DecisionID = d.Status, d.DecisionID
			return nil
		case r.Status == d.Status && r.DecisionID == d.DecisionID && d.DecisionID != "":
			return errUnchangedRecord // the same decision delivered again
		}
		return rejectResume("the %s checkpoint %q is not waiting for a decision (status %s)", d.Phase, d.CheckpointID, r.Status)
	}); err != nil {
		return false, err
	}
	rt.notify(key)
	return false, nil
}

// matchDecision checks that d is aimed at the record's job, case and snapshot
// and, when withCheckpoint, at its checkpoint id and input hash.
func matchDecision(r *checkpointRecord, d *resumeDecision, withCheckpoint bool) error {
	switch {
	case r.JobID != d.JobID:
		return rejectResume("occurrence %q belongs to another job", d.OccurrenceID)
	case r.CaseID != d.CaseID:
		return rejectResume("occurrence %q belongs to another case", d.OccurrenceID)
	case r.SnapshotHash != d.SnapshotHash:
		return rejectResume("snapshot_hash does not match the %s checkpoint of occurrence %q", d.Phase, d.OccurrenceID)
	case !withCheckpoint:
		return nil
	case r.CheckpointID != d.CheckpointID:
		return rejectResume("checkpoint_id does not match the %s checkpoint of occurrence %q", d.Phase, d.OccurrenceID)
	case r.InputHash != d.InputHash:
		return rejectResume("input_hash does not match the %s checkpoint of occurrence %q", d.Phase, d.OccurrenceID)
	}
	return nil
}

// retainDecision keeps d for a waiter that registers later, evicting the
// oldest retained decisions beyond the bound, then wakes a waiter whose
// checkpoint request is in flight.
func (rt *checkpointRuntime) retainDecision(ctx context.Context, d *resumeDecision) error {
	kept := *d
	kept.RetainedAt = rt.now().UTC()
	if err := putJSON(ctx, rt.store, retainedKey(rt.slug, d.OccurrenceID, d.Phase), &kept); err != nil {
		return err
	}
	if err := rt.evictRetained(ctx); err != nil {
		return err
	}
	rt.logger.LogAttrs(ctx, slog.LevelInfo, "rule checkpoint decision retained for a later waiter",
		slog.String("agent_slug", rt.slug), slog.String("job_id", d.JobID), slog.String("case_id", d.CaseID),
		slog.String("occurrence_id", d.OccurrenceID), slog.String("phase", d.Phase))
	rt.notify(occurrenceKey(rt.slug, d.OccurrenceID, d.Phase))
	return nil
}

// evictRetained deletes the oldest retained decisions beyond the bound.
func (rt *checkpointRuntime) evictRetained(ctx context.Context) error {
	type entry struct {
		key string
		at  time.Time
	}
	var entries []entry
	if err := rt.store.Scan(ctx, retainedPrefix(rt.slug), func(key string, value []byte) error {
		var d resumeDecision
		if json.Unmarshal(value, &d) != nil {
			entries = append(entries, entry{key: key}) // unreadable: the oldest of all
			return nil
		}
		entries = append(entries, entry{key: key, at: d.RetainedAt})
		return nil
	}); err != nil {
		return err
	}
	if len(entries) <= rt.retain {
		return nil
	}
	slices.SortStableFunc(entries, func(a, b entry) int { return a.at.Compare(b.at) })
	for _, e := range entries[:len(entries)-rt.retain] {
		if err := rt.store.Delete(ctx, e.key); err != nil {
			return err
		}
	}
	return nil
}

// applyRetained takes the retained decision of the paused record rec, if
// any: a matching one is persisted on the record (applied true), one that
// does not match is discarded. Either way it is removed.
func (rt *checkpointRuntime) applyRetained(ctx context.Context, key string, rec *checkpointRecord) (bool, error) {
	rkey := retainedKey(rt.slug, rec.OccurrenceID, rec.Phase)
	d, _, err := getJSON[resumeDecision](ctx, rt.store, rkey)
	if err != nil || d == nil {
		return false, err
	}
	applied := false
	if d.AgentSlug == rt.slug && matchDecision(rec, d, true) == nil {
		if _, err := rt.updateRecord(ctx, key, func(r *checkpointRecord) error {
			if r.Status != Pause || matchDecision(r, d, true) != nil {
				return errUnchangedRecord
			}
			r.Status, r.DecisionID = d.Status, d.DecisionID
			applied = true
			return nil
		}); err != nil {
			return false, err
		}
	}
	if !applied {
		rt.logger.LogAttrs(ctx, slog.LevelWarn, "retained rule checkpoint decision does not match its waiter; discarded",
			slog.String("agent_slug", rt.slug), slog.String("occurrence_id", rec.OccurrenceID), slog.String("phase", rec.Phase),
			slog.String("checkpoint_id", rec.CheckpointID))
	}
	return applied, rt.store.Delete(ctx, rkey)
}
