package supervaizer

import (
	"context"
	"log/slog"

	"github.com/supervaize/supervaizer-go/internal/checkpoint"
	"github.com/supervaize/supervaizer-go/store"
	"github.com/supervaize/supervaizer-go/studio"
)

// Rule checkpoints (see docs/) let an agent guard an external
// effect with Studio decisions taken before and after it:
//
//   - [RuleCheckpointGate], built from a governed job.start request, posts
//     checkpoints for one job of one agent;
//   - [RunGuardedStep] runs one guarded effect (an occurrence) in the
//     normative order: announce the case, before checkpoint, effect, after
//     checkpoint, advance;
//   - [RecoverGuardedStep] finishes an occurrence whose after checkpoint was
//     lost;
//   - the SDK handler of rule.checkpoint.resume delivers paused decisions, and
//     [Agent.OnRuleCheckpointDecision] lets the agent hear of them.
//
// Progress is kept in the server's [store.Store] (see [WithStore]), so that a
// restart never replays an uncertain external effect.

// Rule-checkpoint decision statuses.
const (
	CheckpointAllow = checkpoint.CheckpointAllow // proceed
	CheckpointPause = checkpoint.CheckpointPause // wait for rule.checkpoint.resume
	CheckpointStop  = checkpoint.CheckpointStop  // do not proceed
)

// Reasons of a [RecoveryRequiredError].
const (
	// RecoveryOccurrenceClaimed: the occurrence already ran (or was decided
	// pause or stop); running it again is refused.
	RecoveryOccurrenceClaimed = checkpoint.RecoveryOccurrenceClaimed
	// RecoveryOccurrenceActive: the occurrence is running or being recovered
	// in this process; retry once it is done.
	RecoveryOccurrenceActive = checkpoint.RecoveryOccurrenceActive
	// RecoveryEffectStarted: the effect started and no decision is pending on
	// it; finish it with [RecoverGuardedStep].
	RecoveryEffectStarted = checkpoint.RecoveryEffectStarted
	// RecoveryNotReady: nothing to recover yet (no completed effect, see
	// GuardedRecovery.ConfirmEffect), or the after decision is not allow.
	RecoveryNotReady = checkpoint.RecoveryNotReady
	// RecoveryAmbiguousAdvancement: an advance started and never completed;
	// the SDK will not advance again, the agent must check by itself.
	RecoveryAmbiguousAdvancement = checkpoint.RecoveryAmbiguousAdvancement
)

// Errors of the rule-checkpoint helpers. Test them with errors.Is;
// [BlockedError], [RecoveryRequiredError] and [CheckpointRequestError] carry
// the details (errors.As).
var (
	// ErrBlocked: Studio decided something other than allow.
	ErrBlocked = checkpoint.ErrBlocked
	// ErrRecoveryRequired: the occurrence cannot run as asked; see
	// [RecoverGuardedStep].
	ErrRecoveryRequired = checkpoint.ErrRecoveryRequired
	// ErrInvalidCheckpointState: invalid input or persisted state.
	ErrInvalidCheckpointState = checkpoint.ErrInvalidCheckpointState
	// ErrCheckpointRequestFailed: the checkpoint call failed.
	ErrCheckpointRequestFailed = checkpoint.ErrCheckpointRequestFailed
	// ErrGateNotFound: no gate is saved for the job.
	ErrGateNotFound = checkpoint.ErrGateNotFound
)

type (
	// RuleCheckpointGate posts rule checkpoints for one job of one agent.
	RuleCheckpointGate = checkpoint.RuleCheckpointGate
	// GateOption configures a [RuleCheckpointGate].
	GateOption = checkpoint.GateOption
	// RuleCheckpointResponse is Studio's answer to a checkpoint.
	RuleCheckpointResponse = checkpoint.RuleCheckpointResponse
	// RuleCheckpointDecision is a decision accepted by the SDK's
	// rule.checkpoint.resume handler; see [Agent.OnRuleCheckpointDecision].
	RuleCheckpointDecision = checkpoint.RuleCheckpointDecision
	// BlockedError is a decision other than allow (errors.Is ErrBlocked).
	BlockedError = checkpoint.BlockedError
	// RecoveryRequiredError is an occurrence that cannot run as asked
	// (errors.Is ErrRecoveryRequired).
	RecoveryRequiredError = checkpoint.RecoveryRequiredError
	// CheckpointRequestError is a failed checkpoint call (errors.Is
	// ErrCheckpointRequestFailed).
	CheckpointRequestError = checkpoint.CheckpointRequestError
)

// GuardedStep is one guarded external effect; see [RunGuardedStep].
type GuardedStep[R any] = checkpoint.GuardedStep[R]

// GuardedRecovery finishes an occurrence; see [RecoverGuardedStep].
type GuardedRecovery[R any] = checkpoint.GuardedRecovery[R]

// WithSecretRefs sets the business-secret paths copied into every checkpoint
// of the gate (job.fields.…, case.metadata.…, step.payload.… or context.…).
func WithSecretRefs(paths ...string) GateOption { return checkpoint.WithSecretRefs(paths...) }

// NewRuleCheckpointGate builds the gate of a governed job.start request: it
// reads input.rule_snapshot, checks that agent declares
// capabilities.rule_checkpoints and binds the gate to the request's verified
// workspace. Checkpoints are posted with account. Errors wrap
// [ErrInvalidCheckpointState] and never quote the token.
func NewRuleCheckpointGate(agent *Agent, account *studio.Client, req *ActionRequest, opts ...GateOption) (*RuleCheckpointGate, error) {
	return checkpoint.NewRuleCheckpointGate(agent.checkpointState(), account, req, opts...)
}

// RestoreRuleCheckpointGate returns the gate [RuleCheckpointGate.Save] left
// in the server's store for jobID, posting with account. It wraps
// [ErrGateNotFound] when none is saved and [ErrInvalidCheckpointState] when
// the agent is not served or the record is unusable.
func RestoreRuleCheckpointGate(ctx context.Context, agent *Agent, account *studio.Client, jobID string) (*RuleCheckpointGate, error) {
	return checkpoint.RestoreRuleCheckpointGate(ctx, agent.checkpointState(), account, jobID)
}

// RunGuardedStep runs one occurrence of a guarded effect in the normative
// order: announce the case, ask the before checkpoint (waiting on pause),
// persist "effect started", run step.Effect, persist "effect completed", ask
// the after checkpoint, then advance. Every state change is persisted before
// the next external call, so a restart never replays an uncertain effect.
// It calls Studio only once the server started ([Server.Start] succeeded,
// which for a server attached to Studio means its registration handshake):
// a step started before waits, and fails if the server shuts down first.
func RunGuardedStep[R any](ctx context.Context, gate *RuleCheckpointGate, step GuardedStep[R]) (R, error) {
	return checkpoint.RunGuardedStep(ctx, gate, step)
}

// RecoverGuardedStep finishes an occurrence whose effect ran but whose after
// checkpoint or advancement was lost. Like [RunGuardedStep] it calls Studio
// only once the server started, so a restarted controller may launch its
// recoveries before [Server.Start]: they wait for the registration handshake.
func RecoverGuardedStep[R any](ctx context.Context, gate *RuleCheckpointGate, rec GuardedRecovery[R]) (R, error) {
	return checkpoint.RecoverGuardedStep(ctx, gate, rec)
}

// OnRuleCheckpointDecision registers f, called with every decision that the
// SDK's rule.checkpoint.resume handler accepts, once it is persisted: a
// decision delivered to a paused checkpoint and a decision retained for a
// later waiter alike. f runs on the goroutine of the call, before Studio gets
// its answer, so it must return quickly; it must be idempotent (a decision
// delivered again is accepted again); a panic in f is recovered and logged.
// f may be registered before or after [NewServer]. It panics when f is nil or
// when the agent does not declare capabilities.rule_checkpoints.
func (a *Agent) OnRuleCheckpointDecision(f func(ctx context.Context, d RuleCheckpointDecision)) {
	a.checkpoints.OnDecision(f)
}

// HandleRuleCheckpointResume replaces the SDK's rule.checkpoint.resume handler
// with h (for example one that records decisions elsewhere before answering).
// It panics when rule.checkpoint.resume is not declared or when the author
// already registered a handler for it. Without it, a Server installs the SDK
// handler for every agent that declares capabilities.rule_checkpoints. The
// functions registered with [Agent.OnRuleCheckpointDecision] are called by
// the SDK handler only.
func (a *Agent) HandleRuleCheckpointResume(h ActionHandler) {
	a.setAction(RuleCheckpointResumeAction, h, true)
}

// checkpointState is the agent's rule-checkpoint state (nil for a nil agent).
func (a *Agent) checkpointState() *checkpoint.Agent {
	if a == nil {
		return nil
	}
	return a.checkpoints
}

// attachRuleCheckpoints gives every agent that declares rule checkpoints its
// runtime over the server's store, and installs the SDK's rule.checkpoint.resume
// handler unless the author registered one.
func (s *Server) attachRuleCheckpoints(st store.Store) {
	for _, a := range s.agents {
		if !a.checkpoints.Declared() {
			continue
		}
		if s.cfg.store == nil && s.cfg.backend == nil { // WithBackend's store is shared and durable
			s.logger.Warn("rule checkpoints are declared but no store is configured (WithStore): their progress is kept in memory, "+
				"so after a restart a started effect is no longer known and could be run again", slog.String("agent_slug", a.slug))
		}
		a.checkpoints.Attach(checkpoint.Runtime{Store: st, Logger: s.logger, Started: s.startedCh, Stopped: s.lifetime.Done(),
			Instance: s.idem.instance, Boot: s.idem.boot, PollInterval: s.cfg.checkpointPoll, ClaimLease: s.cfg.checkpointLease})
		if !a.declaresAction(RuleCheckpointResumeAction) {
			s.logger.Warn("rule checkpoints are declared but the registration lacks the rule.checkpoint.resume action",
				slog.String("agent_slug", a.slug))
			continue
		}
		a.setSDKAction(RuleCheckpointResumeAction, a.checkpoints.Resume)
	}
}
