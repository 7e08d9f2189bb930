package supervaizer

import (
	"context"
	"log/slog"

	"github.com/supervaize/supervaizer-go/checkpoint"
	"github.com/supervaize/supervaizer-go/store"
)

// Rule checkpoints (package checkpoint, see docs/checkpoints.md) let an agent
// guard an external effect with Studio decisions taken before and after it.
// This file is the glue between an agent and its rule-checkpoint runtime: the
// agent builds its [checkpoint.Runtime], a server attaches it to its store and
// installs the rule.checkpoint.resume handler, and the author passes
// [Agent.Checkpoints] to [checkpoint.NewGate] and [checkpoint.RestoreGate].

// Checkpoints returns the agent's rule-checkpoint runtime, which
// [checkpoint.NewGate] and [checkpoint.RestoreGate] take: for example
// checkpoint.NewGate(agent.Checkpoints(), account, req) in the job.start
// handler. A server attaches it to its store ([WithStore]) when it serves the
// agent; a gate of an agent that is not served cannot save or guard anything.
// Guarded steps call Studio only once the server started ([Server.Start]
// succeeded, which for a server attached to Studio means its registration
// handshake). It returns nil for a nil agent.
func (a *Agent) Checkpoints() *checkpoint.Runtime {
	if a == nil {
		return nil
	}
	return a.checkpoints
}

// OnRuleCheckpointDecision registers f, called with every decision that the
// SDK's rule.checkpoint.resume handler accepts, once it is persisted: a
// decision delivered to a paused checkpoint and a decision retained for a
// later waiter alike. f runs on the goroutine of the call, before Studio gets
// its answer, so it must return quickly; it must be idempotent (a decision
// delivered again is accepted again); a panic in f is recovered and logged.
// f may be registered before or after [NewServer]. It panics when f is nil or
// when the agent does not declare capabilities.rule_checkpoints. It is
// [checkpoint.Runtime.OnDecision] on [Agent.Checkpoints].
func (a *Agent) OnRuleCheckpointDecision(f func(ctx context.Context, d checkpoint.Decision)) {
	a.checkpoints.OnDecision(f)
}

// HandleRuleCheckpointResume replaces the SDK's rule.checkpoint.resume handler
// with h (for example one that records decisions elsewhere before answering,
// then calls [checkpoint.Runtime.Resume] on [Agent.Checkpoints]). It panics
// when rule.checkpoint.resume is not declared or when the author already
// registered a handler for it. Without it, a Server installs the SDK handler
// for every agent that declares capabilities.rule_checkpoints. The functions
// registered with [Agent.OnRuleCheckpointDecision] are called by the SDK
// handler only.
func (a *Agent) HandleRuleCheckpointResume(h ActionHandler) {
	a.setAction(RuleCheckpointResumeAction, h, true)
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
		a.checkpoints.Attach(checkpoint.Config{Store: st, Logger: s.logger, Started: s.startedCh, Stopped: s.lifetime.Done(),
			Instance: s.idem.instance, Boot: s.idem.boot, PollInterval: s.cfg.checkpointPoll, ClaimLease: s.cfg.checkpointLease})
		if !a.declaresAction(RuleCheckpointResumeAction) {
			s.logger.Warn("rule checkpoints are declared but the registration lacks the rule.checkpoint.resume action",
				slog.String("agent_slug", a.slug))
			continue
		}
		a.setSDKAction(RuleCheckpointResumeAction, a.checkpoints.Resume)
	}
}
