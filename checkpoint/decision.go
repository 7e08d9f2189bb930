package checkpoint

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"sync"
)

// Decision is a decision on a paused rule checkpoint that the
// SDK's rule.checkpoint.resume handler accepted (RuleCheckpointResume,
// the rule-checkpoint protocol), as given to the functions registered with
// [Runtime.OnDecision] (supervaizer.Agent.OnRuleCheckpointDecision). It holds no credential: never the rule
// snapshot or its token.
type Decision struct {
	AgentSlug    string
	JobID        string
	CaseID       string
	CheckpointID string
	OccurrenceID string
	Phase        string // before or after
	Status       string // Allow or Stop
	SnapshotHash string
	InputHash    string
	DecisionID   string
	// Retained reports that no paused checkpoint matched the decision yet
	// (its checkpoint request had not returned, or the case was unknown): it
	// is kept, bounded, for the guarded step that waits for it next. When
	// false, the decision is persisted on the paused checkpoint.
	Retained bool
	// Active reports that a guarded step ran the occurrence when the
	// decision arrived (Run or Recover), in this
	// process or in another instance sharing the store (which polls its
	// record, see WithCheckpointSharing): it takes the decision by itself. A step that was only refusing the
	// occurrence hands the decision to the hooks again, with Active false.
	// When false, no step of this process waits for it, for example one that
	// a previous run left paused: run the occurrence again with its gate (see
	// [RestoreGate]) and it goes on from the decision, or, for
	// a stop, returns a [RecoveryRequiredError] whose Decision is stop.
	Active bool
}

// decisionHooks are the functions registered with OnRuleCheckpointDecision.
type decisionHooks struct {
	mu  sync.RWMutex
	fns []func(context.Context, Decision)
}

func (h *decisionHooks) add(f func(context.Context, Decision)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.fns = append(h.fns, f)
}

func (h *decisionHooks) list() []func(context.Context, Decision) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return slices.Clip(h.fns)
}

// OnDecision registers f, called with every decision that the
// SDK's rule.checkpoint.resume handler accepts, once it is persisted: a
// decision delivered to a paused checkpoint (woken waiter or not) and a
// decision retained for a later waiter alike. It lets an agent learn that a
// step a previous run left paused can go on; a step waiting in this process
// needs no hook (see [Decision.Active]).
//
// Concurrency: f runs synchronously on the goroutine of the
// rule.checkpoint.resume call, after the decision is persisted and any
// waiting step woken, and before Studio gets its answer, so it must return
// quickly: start a goroutine for anything long, with a context of its own
// (ctx ends with the call). ctx is the call's: supervaizer.WorkspaceFrom gives its
// verified workspace. Decisions may arrive concurrently, so f may run on
// several goroutines at once; for one decision the functions run in the
// order they were registered. f is called at least once per decision: a
// decision Studio delivers again is accepted (and f called) again, so f must
// be idempotent. A panic in f is recovered and logged; the decision stays
// accepted.
//
// f may be registered before or after the runtime is attached (the root
// package's NewServer). A handler installed with the root package's
// Agent.HandleRuleCheckpointResume replaces the SDK handler ([Runtime.Resume]),
// which then calls nothing. It panics when f is nil or when the agent does not declare
// capabilities.rule_checkpoints (setup errors).
func (a *Runtime) OnDecision(f func(ctx context.Context, d Decision)) {
	if f == nil {
		panic(fmt.Sprintf("supervaizer: OnRuleCheckpointDecision on agent %q: nil function", a.slug))
	}
	if a.ruleCheckpointCapability() == nil {
		panic(fmt.Sprintf("supervaizer: OnRuleCheckpointDecision: agent %q does not declare capabilities.rule_checkpoints", a.slug))
	}
	a.mu.Lock()
	if a.checkpoints == nil { // not served yet: NewServer keeps the hooks
		a.checkpoints = &checkpointRuntime{slug: a.slug, hooks: &decisionHooks{}}
	}
	hooks := a.checkpoints.hooks
	a.mu.Unlock()
	hooks.add(f)
}

// decided calls the decision hooks with an accepted decision.
func (rt *checkpointRuntime) decided(ctx context.Context, d *resumeDecision, retained, active bool) {
	fns := rt.hooks.list()
	if len(fns) == 0 {
		return
	}
	dec := Decision{AgentSlug: d.AgentSlug, JobID: d.JobID, CaseID: d.CaseID, CheckpointID: d.CheckpointID,
		OccurrenceID: d.OccurrenceID, Phase: d.Phase, Status: d.Status, SnapshotHash: d.SnapshotHash, InputHash: d.InputHash,
		DecisionID: d.DecisionID, Retained: retained, Active: active}
	for _, f := range fns {
		rt.callHook(ctx, f, dec)
	}
}

// callHook calls f, recovering and logging a panic.
func (rt *checkpointRuntime) callHook(ctx context.Context, f func(context.Context, Decision), d Decision) {
	defer func() {
		if v := recover(); v != nil {
			rt.logger.LogAttrs(ctx, slog.LevelError, "rule checkpoint decision hook panicked", slog.String("agent_slug", rt.slug),
				slog.String("job_id", d.JobID), slog.String("occurrence_id", d.OccurrenceID), slog.String("phase", d.Phase),
				slog.String("panic", fmt.Sprint(v)), slog.String("stack", string(debug.Stack())))
		}
	}()
	f(ctx, d)
}
