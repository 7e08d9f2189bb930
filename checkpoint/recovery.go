package checkpoint

import (
	"context"
	"log/slog"

	"github.com/supervaize/supervaizer-go/contracts"
)

// Recovery describes the recovery of one occurrence for
// [Recover]. R is the type of the effect's result.
type Recovery[R any] struct {
	// CaseID and OccurrenceID name the occurrence, as given to [Run].
	// Required.
	CaseID       string
	OccurrenceID string
	// Result is the effect's result, recovered by the agent (kept from
	// Run, or read back from the external system). It is returned
	// as is; the effect itself is never run again.
	Result R
	// AfterContext is the original after-context function. Required while
	// the after checkpoint is still pending: the context it gives for Result
	// must hash to the recorded one, which proves that the same context is
	// sent again.
	AfterContext func(result R) map[string]any
	// Advance moves the case forward. Optional; called at most once over the
	// life of the occurrence.
	Advance func(ctx context.Context, result R) error
	// ConfirmEffect states that the agent established out of band that the
	// effect happened and that Result is its outcome. It is needed only when
	// the effect started but its completion was never recorded (a crash or an
	// error during the effect); the SDK then records the completion with the
	// hash of AfterContext(Result) and goes on. Without it such an occurrence
	// is "not ready to recover".
	ConfirmEffect bool
}

// Recover finishes an occurrence whose after checkpoint was not
// answered (a crash, a transport failure) after its effect completed.
// With the original gate it:
//
//  1. requires the recorded effect to be completed (see ConfirmEffect);
//  2. refuses an advancement that started but did not complete ("advancement
//     is ambiguous"): a step is never advanced twice;
//  3. while the after checkpoint is pending, checks that the gate's snapshot
//     and AfterContext(Result) are the recorded ones, then asks only the
//     original after checkpoint again, waiting on pause;
//  4. requires the after decision allow, then advances once with Advance.
//
// It returns Result. The effect is never run again. Recovery of an occurrence
// that is running or being recovered in this process fails with a
// [RecoveryRequiredError] "occurrence active". Errors are those of
// [Run]. Like Run, it calls Studio only once the server started, so a
// restarted controller may launch its recoveries before starting the server:
// they wait for the registration handshake.
func Recover[R any](ctx context.Context, gate *Gate, rec Recovery[R]) (R, error) {
	result := rec.Result
	if err := checkStepInput(gate, rec.CaseID, rec.OccurrenceID); err != nil {
		return result, err
	}
	rt, err := gate.agent.checkpointRuntime()
	if err != nil {
		return result, err
	}
	if err := rt.awaitStarted(ctx, rec.OccurrenceID); err != nil {
		return result, err
	}
	release, err := rt.claim(ctx, rec.OccurrenceID)
	if err != nil {
		return result, err
	}
	defer release()
	o := newOccurrence(gate, rt, rec.CaseID, rec.OccurrenceID, "")
	after, err := rt.loadRecord(ctx, o.afterKey)
	if err != nil {
		return result, err
	}
	if after == nil {
		return result, o.recoveryRequired(RecoveryNotReady, nil)
	}
	if after.JobID != gate.jobID || after.CaseID != rec.CaseID {
		return result, invalidState("occurrence %q belongs to job %q, case %q", o.id, after.JobID, after.CaseID)
	}
	if after, err = o.takeRetained(ctx, o.afterKey, after); err != nil {
		return result, err
	}
	o.stepID = after.StepID // the after checkpoint is asked with the recorded step

	afterContext := func() ([]byte, string, error) {
		switch {
		case rec.AfterContext == nil:
			return nil, "", invalidState("Recovery.AfterContext is required while the after checkpoint is pending")
		case after.SnapshotHash != gate.snapshot.hash:
			return nil, "", invalidState("snapshot changed (occurrence %q)", o.id)
		}
		return gate.encodeContext("the after context", rec.AfterContext(result))
	}

	if !after.EffectCompleted {
		if !after.EffectStarted || !rec.ConfirmEffect {
			return result, o.recoveryRequired(RecoveryNotReady, after)
		}
		_, hash, err := afterContext()
		if err != nil {
			return result, err
		}
		if after, err = rt.updateRecord(ctx, o.afterKey, func(r *checkpointRecord) error {
			if r.EffectCompleted {
				return errUnchangedRecord
			}
			r.EffectCompleted, r.ContextHash = true, hash
			return nil
		}); err != nil {
			return result, err
		}
		o.log(ctx, slog.LevelInfo, "rule checkpoint effect confirmed by the agent", contracts.PhaseAfter, after)
	}
	if after.AdvancementStarted && !after.AdvancementCompleted {
		return result, o.recoveryRequired(RecoveryAmbiguousAdvancement, after)
	}
	if after.Status == statusPending {
		c, hash, err := afterContext()
		if err != nil {
			return result, err
		}
		if hash != after.ContextHash {
			return result, invalidState("context changed (occurrence %q): the after context differs from the recorded one", o.id)
		}
		final, resp, err := o.ask(ctx, contracts.PhaseAfter, o.afterKey, c)
		if err != nil {
			return result, err
		}
		if final.Status != Allow {
			return result, o.blocked(ctx, contracts.PhaseAfter, final, resp)
		}
		after = final
	}
	if after.Status != Allow {
		return result, o.recoveryRequired(RecoveryNotReady, after)
	}
	if rec.Advance != nil && !after.AdvancementCompleted {
		if err := o.advance(ctx, func(ctx context.Context) error { return rec.Advance(ctx, result) }); err != nil {
			return result, err
		}
	}
	o.log(ctx, slog.LevelInfo, "rule checkpoint occurrence recovered", contracts.PhaseAfter, after)
	return result, nil
}
