// Package checkpoint guards an agent's external effects with rule
// checkpoints: Studio decisions taken before and after each effect of a
// governed job (the rule-checkpoint protocol of Supervaizer v2).
//
// The pieces:
//
//   - [Gate], built with [NewGate] from a governed job.start request, posts
//     checkpoints for one job of one agent; [Gate.Save] keeps it in the
//     server's store and [RestoreGate] rebuilds it by job id, after a
//     restart too;
//   - [Run] runs one guarded effect (an occurrence, described by a [Step]) in
//     the normative order: announce the case, before checkpoint, effect, after
//     checkpoint, advance;
//   - [Recover] finishes an occurrence whose after checkpoint or advancement
//     was lost (described by a [Recovery]);
//   - the SDK handler of rule.checkpoint.resume ([Runtime.Resume]) delivers
//     paused decisions, and [Runtime.OnDecision] lets the agent hear of them
//     as [Decision] values.
//
// A decision other than [Allow] ends a step with a [BlockedError]
// (errors.Is [ErrBlocked]); an occurrence that cannot run as asked with a
// [RecoveryRequiredError] (errors.Is [ErrRecoveryRequired]); a failed call
// with a [RequestError] (errors.Is [ErrRequestFailed]).
//
// Each agent has one [Runtime], built and attached by the root package
// (github.com/supervaize/supervaizer-go): an author gets it with
// Agent.Checkpoints and never builds one. Progress is kept in the server's
// [store.Store] (supervaizer.WithStore), so that a restart never replays an
// uncertain external effect:
//
//	gate, err := checkpoint.NewGate(agent.Checkpoints(), account, req) // in job.start
//	err = gate.Save(ctx)
//	// later, after a restart too:
//	gate, err = checkpoint.RestoreGate(ctx, agent.Checkpoints(), account, jobID)
//	receipt, err := checkpoint.Run(ctx, gate, step) // step is a checkpoint.Step[Receipt]
//	err = gate.Forget(ctx)                          // once the job needs no more checkpoints
//
// docs/checkpoints.md describes the protocol and the recovery of an
// occurrence step by step.
package checkpoint
