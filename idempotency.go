package supervaizer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/internal/canon"
	"github.com/supervaize/supervaizer-go/store"
)

// The idempotency layer makes job.start (and every action an author opts in
// with [Agent.Idempotent]) safely retryable (model.md §9): Studio retries after
// any uncertain outcome with the same idempotency_key and the same identities,
// and the agent must return the original result and create nothing.
//
// Records are scoped by (agent slug, action, idempotency key) and hold the
// identities (mission_id, job_id), a canonical hash of input and the full
// original result, in the server's [store.Store]:
//
//   - same key + same identities + same input: the stored result, byte for
//     byte, without calling the handler;
//   - same key + other input or identities: status "error" with
//     errors[0].code "idempotency_conflict", without calling the handler;
//   - concurrent duplicates run the handler once; the others get its result;
//   - a request without idempotency_key is not deduplicated.
//
// A result stored by the layer has replay_safety.strictly_idempotent_response
// true. A handler that fails (a JSON-RPC error) stores nothing, so a retry runs
// it again.

// DefaultIdempotencyLease is how long an in-flight record blocks other
// instances before they may take it over (the original attempt is presumed dead).
const DefaultIdempotencyLease = 10 * time.Minute

const (
	recordPending = "pending"
	recordDone    = "done"
)

// idemRecord is what the store holds per (agent, action, key).
type idemRecord struct {
	State      string          `json:"state"`
	MissionID  string          `json:"mission_id"`
	JobID      string          `json:"job_id"`
	InputHash  string          `json:"input_hash"`
	Result     json.RawMessage `json:"result,omitempty"`
	LeaseUntil time.Time       `json:"lease_until,omitzero"`
	CreatedAt  time.Time       `json:"created_at"`
}

type idempotency struct {
	store  store.Store
	lease  time.Duration
	now    func() time.Time
	logger *slog.Logger

	mu      sync.Mutex
	flights map[string]*flight // in-process attempts, by record key
}

// flight is one in-process attempt; duplicates with the same record key and
// the same identities and input wait for it and share its outcome.
type flight struct {
	done chan struct{}
	raw  []byte
	err  *Error
}

func newIdempotency(s store.Store, logger *slog.Logger) *idempotency {
	return &idempotency{store: s, lease: DefaultIdempotencyLease, now: time.Now, logger: logger, flights: map[string]*flight{}}
}

// Idempotent makes the SDK's idempotency layer apply to the action id, in
// addition to the agent's job.start action (the setup start_action). It panics
// when the action is not declared.
func (a *Agent) Idempotent(id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.declaresAction(id) {
		panic(fmt.Sprintf("supervaizer: Idempotent: action %q is not declared in the registration of agent %q", id, a.slug))
	}
	if a.idempotent == nil {
		a.idempotent = map[string]bool{}
	}
	a.idempotent[id] = true
}

// isIdempotent reports whether the layer applies to the action.
func (a *Agent) isIdempotent(id string) bool {
	start := contracts.DefaultStartAction
	if a.reg != nil && a.reg.JobPolicy.Setup != nil {
		start = a.reg.JobPolicy.Setup.StartAction
	}
	if id == start {
		return true
	}
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.idempotent[id]
}

// recordKey builds the store key; long idempotency keys are hashed so every key
// fits the store's key limit.
func recordKey(slug, action, key string) string {
	if len(key) > 128 {
		d := sha256.Sum256([]byte(key))
		key = "sha256:" + hex.EncodeToString(d[:])
	}
	return store.Key("idempotency", slug, action, key)
}

// run applies the layer around exec, which calls the handler and validates its
// result. It returns the serialized result to send.
func (l *idempotency) run(ctx context.Context, req *ActionRequest, exec func(context.Context) ([]byte, *Error)) ([]byte, *Error) {
	hash, err := canon.Hash(req.Input)
	if err != nil {
		return nil, failedWith(req, err)
	}
	key := recordKey(req.AgentSlug, req.Action, req.IdempotencyKey)

	// Only a duplicate with the same identities and input may share an
	// attempt's outcome; any other request settles against the record itself
	// (a conflict, whatever state the record is in).
	flightKey := key + "\x00" + req.MissionID + "\x00" + req.JobID + "\x00" + hash
	l.mu.Lock()
	if f, ok := l.flights[flightKey]; ok {
		l.mu.Unlock()
		select {
		case <-f.done:
			return f.raw, f.err
		case <-ctx.Done():
			return nil, failedWith(req, ctx.Err())
		}
	}
	f := &flight{done: make(chan struct{})}
	l.flights[flightKey] = f
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		delete(l.flights, flightKey)
		l.mu.Unlock()
		close(f.done)
	}()
	f.raw, f.err = l.attempt(ctx, req, key, hash, exec)
	return f.raw, f.err
}

// attempt settles one request against the record under key: replay,
// conflict, in progress, or a run of exec whose result is recorded.
func (l *idempotency) attempt(ctx context.Context, req *ActionRequest, key, hash string, exec func(context.Context) ([]byte, *Error)) ([]byte, *Error) {
	now := l.now()
	pending := idemRecord{State: recordPending, MissionID: req.MissionID, JobID: req.JobID, InputHash: hash, CreatedAt: now.UTC(), LeaseUntil: now.Add(l.lease).UTC()}
	pendingRaw, _ := json.Marshal(pending)
	existing, stored, err := l.store.PutIfAbsent(ctx, key, pendingRaw)
	if err != nil {
		return nil, l.storeFailure(ctx, req, err)
	}
	if !stored {
		var rec idemRecord
		if err := json.Unmarshal(existing, &rec); err != nil {
			return nil, l.storeFailure(ctx, req, fmt.Errorf("decode record: %w", err))
		}
		if conflict := rec.MissionID != req.MissionID || rec.JobID != req.JobID || rec.InputHash != hash; conflict {
			return conflictResult(req)
		}
		switch {
		case rec.State == recordDone:
			return rec.Result, nil // the stored result, byte for byte
		case now.Before(rec.LeaseUntil):
			// Another instance is running this start right now.
			return inProgressResult(req)
		}
		// The original attempt's lease expired: take the record over.
		swapped, err := l.store.CompareAndSwap(ctx, key, existing, pendingRaw)
		if err != nil {
			return nil, l.storeFailure(ctx, req, err)
		}
		if !swapped {
			return inProgressResult(req)
		}
		l.logger.LogAttrs(ctx, slog.LevelWarn, "idempotency record taken over after its lease expired",
			slog.String("agent_slug", req.AgentSlug), slog.String("action", req.Action))
	}

	raw, rpcErr := exec(ctx)
	if rpcErr != nil {
		// Nothing is stored for a failed attempt: a retry runs the handler again.
		if err := l.store.Delete(context.WithoutCancel(ctx), key); err != nil {
			l.logger.LogAttrs(ctx, slog.LevelError, "idempotency: release record", slog.String("action", req.Action), slog.Any("error", err))
		}
		return nil, rpcErr
	}
	done := pending
	done.State, done.Result, done.LeaseUntil = recordDone, raw, time.Time{}
	doneRaw, err := json.Marshal(done)
	if err == nil {
		var swapped bool
		swapped, err = l.store.CompareAndSwap(context.WithoutCancel(ctx), key, pendingRaw, doneRaw)
		if err == nil && !swapped {
			err = errors.New("the record changed while the handler ran")
		}
	}
	if err != nil {
		// The handler ran but its result could not be recorded: a retry could run
		// it twice. Fail loudly rather than answer as if all were well.
		return nil, l.storeFailure(ctx, req, fmt.Errorf("record result: %w", err))
	}
	return raw, nil
}

func (l *idempotency) storeFailure(ctx context.Context, req *ActionRequest, err error) *Error {
	l.logger.LogAttrs(ctx, slog.LevelError, "idempotency store failed", slog.String("agent_slug", req.AgentSlug),
		slog.String("action", req.Action), slog.Any("error", err))
	return failedWith(req, err)
}

// failedWith is the -32603 "Action handler failed" of req (controller.md §5.1
// step 6) carrying the logged cause.
func failedWith(req *ActionRequest, err error) *Error {
	e := actionFailed(req)
	e.Err = err
	return e
}

func strictReplaySafety(key string) *contracts.ReplaySafety {
	rs := contracts.DefaultReplaySafety()
	rs.DedupeKeys = []string{key}
	rs.StrictlyIdempotentResponse = true
	return &rs
}

func conflictResult(req *ActionRequest) ([]byte, *Error) {
	return layerResult(req, Fail(contracts.ErrorIdempotencyConflict, "idempotency_key %s was already used with a different input or job", req.IdempotencyKey))
}

// ErrorIdempotencyInProgress is the business error of a retry that arrives
// while another instance holds the record's lease.
const ErrorIdempotencyInProgress = "idempotency_in_progress"

func inProgressResult(req *ActionRequest) ([]byte, *Error) {
	return layerResult(req, Fail(ErrorIdempotencyInProgress, "an attempt with idempotency_key %s is still in progress; retry later with the same key", req.IdempotencyKey))
}

// layerResult serializes a business result the layer answers itself.
func layerResult(req *ActionRequest, res *ActionResult) ([]byte, *Error) {
	res.ReplaySafety = strictReplaySafety(req.IdempotencyKey)
	raw, err := json.Marshal(res)
	if err != nil {
		return nil, failedWith(req, err)
	}
	return raw, nil
}

// markStrict sets replay_safety.strictly_idempotent_response on a result the
// layer will store, keeping the handler's other replay-safety choices.
func markStrict(res *ActionResult, key string) {
	if res.ReplaySafety == nil {
		res.ReplaySafety = strictReplaySafety(key)
		return
	}
	rs := *res.ReplaySafety
	rs.StrictlyIdempotentResponse = true
	if len(rs.DedupeKeys) == 0 {
		rs.DedupeKeys = []string{key}
	}
	res.ReplaySafety = &rs
}
