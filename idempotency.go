package supervaizer

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"runtime/debug"
	"sync"
	"time"

	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/internal/bootid"
	"github.com/supervaize/supervaizer-go/internal/canon"
	"github.com/supervaize/supervaizer-go/internal/taskview"
	"github.com/supervaize/supervaizer-go/store"
)

// The idempotency layer makes job.start (and every action an author opts in
// with [Agent.Idempotent]) safely retryable: Studio retries after
// any uncertain outcome with the same idempotency_key and the same identities,
// and the agent must return the original result and create nothing.
//
// Records are scoped by (workspace, agent slug, action, idempotency key) —
// the workspace is the verified one from the workspace token (the request's
// workspace.id for the bootstrap actions and in local mode), so the same key
// from another workspace is an independent operation — and hold the
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
//
// A record in progress carries its owner's instance and boot: after a crash,
// the same instance restarted on the same store takes its records over at
// once; another instance waits for the lease. A duplicate that finds an
// attempt in progress in another process (another instance sharing the store)
// waits for its outcome, up to 30 s, before it is answered
// idempotency_in_progress. Records are removed once older
// than the retention period; a record in progress never is.
//
// Records written by releases before workspace scoping (keyed without the
// workspace) are never matched: a retry that straddles the upgrade runs the
// handler again, as a first attempt. They are removed by the retention sweep.

// Idempotency defaults; see [WithIdempotencyLease] and
// [WithIdempotencyRetention].
const (
	// defaultIdempotencyLease is how long an in-flight record blocks other
	// instances before they may take it over (the original attempt is presumed
	// dead).
	defaultIdempotencyLease = 10 * time.Minute
	// defaultIdempotencyRetention is how long a record is kept.
	defaultIdempotencyRetention = 7 * 24 * time.Hour
)

// idempotencySweepEvery is how often, at most, the retention sweep runs.
const idempotencySweepEvery = time.Hour

// maxLiteralKeyPart is the longest workspace id or idempotency key stored
// literally in a record key; longer ones are hashed.
const maxLiteralKeyPart = 128

// Record key layout: (idemNamespace, workspace, agent, action, key), where the
// workspace and key parts are "=" + the value, or "#" + the SHA-256 hex of a
// value longer than maxLiteralKeyPart. The two prefixes keep every hashed part
// apart from every literal one.
const (
	idemNamespace       = "idempotency.ws"
	legacyIdemNamespace = "idempotency" // records keyed without the workspace
)

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
	// Instance and Boot identify the process that owns a pending record.
	Instance string `json:"instance,omitempty"`
	Boot     string `json:"boot,omitempty"`
}

type idempotency struct {
	store store.Store
	lease time.Duration
	// awaitOther bounds the wait for an attempt in progress elsewhere.
	awaitOther time.Duration
	retention  time.Duration
	now        func() time.Time
	logger     *slog.Logger
	// instance names this process's instance across restarts ("" when
	// unknown: its records are then only taken over after their lease);
	// boot is new for every process.
	instance, boot string
	// track counts a background sweep as a call in progress (so that
	// Shutdown waits for it); nil runs sweeps untracked.
	track func(delta int)

	sweepMu   sync.Mutex
	lastSweep time.Time
	sweeping  bool

	// holder claims the instance id in a shared store (nil when the store is
	// exclusive or no instance id was given): records are taken over as an
	// earlier boot's only while it holds the claim.
	holder *instanceHolder

	mu      sync.Mutex
	flights map[string]*flight // in-process attempts, by record key
	// unrecorded holds the results whose record could not be written (the
	// store failed after the handler ran), by record key, while their write
	// is retried.
	unrecorded map[string]*unrecordedResult
	// keptLimit bounds unrecorded; looping tells whether the retry loop runs,
	// keptWake wakes it; drained is set once Shutdown has drained them.
	keptLimit int
	looping   bool
	drained   bool
	replayed  bool // the spool file was replayed (Start)
	keptWake  chan struct{}
	// spoolPath is the spool file of the results left at shutdown ("": none).
	spoolPath string
	spoolMu   sync.Mutex
	// storeTimeout bounds each store call of a request (WithStoreTimeout).
	storeTimeout time.Duration
	// life ends the retry loop of unrecorded results (the server's shutdown).
	life context.Context
	// alongside returns a write to commit with the done record of a result
	// the handler just made (the task view's, server.go), ok false for
	// none; done is called once it is written. nil: none.
	alongside func(ctx context.Context, req *ActionRequest, raw []byte) (op store.Op, done func(), ok bool)
}

func newIdempotency(s store.Store, logger *slog.Logger, cfg idemConfig) *idempotency {
	if cfg.lease <= 0 {
		cfg.lease = defaultIdempotencyLease
	}
	if cfg.retention <= 0 {
		cfg.retention = defaultIdempotencyRetention
	}
	if cfg.keptLimit <= 0 {
		cfg.keptLimit = defaultKeptResults
	}
	if cfg.storeTimeout <= 0 {
		cfg.storeTimeout = defaultStoreTimeout
	}
	if cfg.instance == "" {
		if store.IsExclusive(s) {
			// Only one process at a time uses this store: every other boot
			// that left a record pending on it is gone.
			cfg.instance = "exclusive-store"
		}
	}
	l := &idempotency{
		store: s, lease: cfg.lease, retention: cfg.retention, awaitOther: cfg.awaitOther, now: time.Now, logger: logger,
		instance: cfg.instance, boot: bootid.New(), flights: map[string]*flight{},
		unrecorded: map[string]*unrecordedResult{}, life: context.Background(),
		keptLimit: cfg.keptLimit, keptWake: make(chan struct{}, 1), storeTimeout: cfg.storeTimeout,
	}
	if cfg.spoolDir != "" {
		l.spoolPath = filepath.Join(cfg.spoolDir, spoolName(l.instance))
	}
	if l.instance != "" && !store.IsExclusive(s) {
		l.holder = newInstanceHolder(s, l.instance, l.boot, logger)
	}
	return l
}

// Idempotent makes the SDK's idempotency layer apply to the action id, in
// addition to the agent's job.start action (the setup start_action). It panics
// when the action is not declared. On an agent whose registration lists no
// action (its handlers declare them), the action must have a handler by the
// time the server starts: Start reports it otherwise.
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

// recordKey builds the store key of a record: the workspace, the agent, the
// action and the idempotency key. Workspace ids and keys longer than
// maxLiteralKeyPart are hashed so that every record key fits the store's key
// limit; see idemNamespace for why a hashed part never equals a literal one.
func recordKey(workspaceID, slug, action, key string) string {
	return store.Key(idemNamespace, idemKeyPart(workspaceID), slug, action, idemKeyPart(key))
}

func idemKeyPart(v string) string {
	if len(v) > maxLiteralKeyPart {
		d := sha256.Sum256([]byte(v))
		return "#" + hex.EncodeToString(d[:])
	}
	return "=" + v
}

// recordWorkspace is the workspace a request's record belongs to: the
// verified one, else (bootstrap actions, local mode without a context) the
// request's workspace.id.
func recordWorkspace(req *ActionRequest) string {
	if req.WorkspaceAuthorization != nil {
		return req.WorkspaceAuthorization.WorkspaceID
	}
	return req.Workspace.ID
}

// run applies the layer around exec, which calls the handler and validates its
// result. It returns the serialized result to send.
func (l *idempotency) run(ctx context.Context, req *ActionRequest, exec func(context.Context) ([]byte, *Error)) ([]byte, *Error) {
	hash, err := canon.Hash(req.Input)
	if err != nil {
		return nil, failedWith(req, err)
	}
	key := recordKey(recordWorkspace(req), req.AgentSlug, req.Action, req.IdempotencyKey)
	l.maybeSweep(ctx)

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
	return l.attemptWaiting(ctx, req, key, hash, exec, time.Now().Add(l.awaitOther))
}

// idemAwaitOther is how long, by default, a duplicate waits for an attempt
// that another process (another instance sharing the store) is running,
// before it is answered idempotency_in_progress.
const idemAwaitOther = 30 * time.Second

// Polling of a record that another process holds.
const (
	idemPollFirst = 5 * time.Millisecond
	idemPollMax   = 200 * time.Millisecond
)

// attemptWaiting is attempt; a record that another process holds is waited
// for until waitUntil (wall-clock time, whatever l.now says).
func (l *idempotency) attemptWaiting(ctx context.Context, req *ActionRequest, key, hash string, exec func(context.Context) ([]byte, *Error), waitUntil time.Time) ([]byte, *Error) {
	if res, busy := l.unrecordedFor(req, key, hash); busy {
		return res, nil
	}
	if l.keptFull() {
		return nil, retryLater(req, fmt.Errorf("%d results are kept unrecorded, the limit (WithKeptResultLimit)", l.keptLimit))
	}
	now := l.now()
	pending := idemRecord{
		State: recordPending, MissionID: req.MissionID, JobID: req.JobID, InputHash: hash,
		CreatedAt: now.UTC(), LeaseUntil: now.Add(l.lease).UTC(), Instance: l.instance, Boot: l.boot,
	}
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
		abandoned := l.abandoned(&rec)
		// A pending record of this very boot is not running: this call holds
		// the only attempt at it in the process (flights), and a kept result
		// answered above. A store round trip that wrote it but failed (its
		// deadline ran out) or a release that failed left it: take it over
		// at once rather than after the lease.
		left := rec.State == recordPending && rec.Boot == l.boot
		switch {
		case rec.State == recordDone:
			return rec.Result, nil // the stored result, byte for byte
		case !abandoned && !left && now.Before(rec.LeaseUntil):
			// Another process is running this start right now: wait for the
			// record to change (its result, its release, a takeover) or its
			// lease to end, then settle again.
			until := waitUntil
			if leaseEnd := time.Now().Add(rec.LeaseUntil.Sub(now)); leaseEnd.Before(until) {
				until = leaseEnd
			}
			if !l.awaitChange(ctx, key, existing, until) {
				if err := ctx.Err(); err != nil {
					return nil, failedWith(req, err)
				}
				if !time.Now().Before(waitUntil) {
					return inProgressResult(req) // waited long enough
				}
				// The lease ended: settle again, taking the record over.
			}
			return l.attemptWaiting(ctx, req, key, hash, exec, waitUntil)
		}
		// The original attempt's process is gone (an earlier boot of this
		// instance) or its lease expired: take the record over.
		swapped, err := l.store.CompareAndSwap(ctx, key, existing, pendingRaw)
		if err != nil {
			return nil, l.storeFailure(ctx, req, err)
		}
		if !swapped {
			return inProgressResult(req)
		}
		reason := "its lease expired"
		switch {
		case left:
			reason = "this process left it pending (a store error before its handler ran, or a failed release)"
		case abandoned:
			reason = "an earlier boot of this instance left it pending"
		}
		l.logger.LogAttrs(ctx, slog.LevelWarn, "idempotency record taken over",
			slog.String("agent_slug", req.AgentSlug), slog.String("action", req.Action), slog.String("reason", reason))
	}

	raw, rpcErr := l.exec(ctx, req, exec)
	if rpcErr != nil {
		// Nothing is stored for a failed attempt: a retry runs the handler
		// again. Releasing the record is a write too: a process paused past
		// the takeover window leaves it to the newcomer, which waits for its
		// lease (fencing).
		if l.fenced(ctx, req) {
			return nil, rpcErr
		}
		if err := l.store.Delete(context.WithoutCancel(ctx), key); err != nil {
			l.logger.LogAttrs(ctx, slog.LevelError, "idempotency: release record", slog.String("action", req.Action), slog.Any("error", err))
		}
		return nil, rpcErr
	}
	done := pending
	done.State, done.Result, done.LeaseUntil = recordDone, raw, time.Time{}
	doneRaw, err := json.Marshal(done)
	var also alongsideWrite
	if err == nil && l.alongside != nil {
		also.op, also.done, also.ok = l.alongside(ctx, req, raw)
	}
	if err == nil && l.fenced(ctx, req) {
		return nil, retryLater(req, fmt.Errorf("record result: %w", errClaimNotRenewed))
	}
	if err == nil {
		err = l.recordDone(context.WithoutCancel(ctx), key, pendingRaw, doneRaw, also)
	}
	if err != nil {
		if doneRaw == nil || errors.Is(err, errRecordChanged) {
			// Another process took the record over while the handler ran (its
			// lease ended): that process's outcome is the record's.
			return nil, l.storeFailure(ctx, req, fmt.Errorf("record result: %w", err))
		}
		// The handler ran but the store failed (or did not answer within
		// its deadline): keep the result and retry the write; meanwhile a retry of the call is told
		// the attempt is in progress, then gets the recorded result.
		l.keepUnrecorded(ctx, &unrecordedResult{
			Key: key, Pending: pendingRaw, Done: doneRaw, MissionID: req.MissionID, JobID: req.JobID, InputHash: hash,
			Agent: req.AgentSlug, Action: req.Action,
		}, err)
	}
	return raw, nil
}

// alongsideWrite is a write committed with a done record (alongside).
type alongsideWrite struct {
	op   store.Op
	done func()
	ok   bool
}

// recordDone replaces the pending record under key with the done one:
// errRecordChanged when the pending record is no longer there. A write
// alongside goes in the same store.WriteAtomic, one commit on a shared
// store (issue 40 item 5); when it is not applied with the record (its
// condition failed: another writer changed it since it was read; or a store
// without store.Atomic applied the record alone), the record is written
// alone and the write alongside is left to its owner's usual path (the task
// view's Observe).
func (l *idempotency) recordDone(ctx context.Context, key string, pendingRaw, doneRaw []byte, also alongsideWrite) error {
	if also.ok {
		applied, err := store.WriteAtomic(ctx, l.store, []store.Op{store.CompareAndSwapOp(key, pendingRaw, doneRaw), also.op})
		switch {
		case applied && err == nil:
			also.done()
			return nil
		case applied && errors.Is(err, store.ErrPartial):
			return nil // the record is written (the fallback's first op)
		case err != nil:
			return err
		}
		// A condition failed, the record's or the other write's: the
		// record's write alone tells which.
	}
	swapped, err := l.store.CompareAndSwap(ctx, key, pendingRaw, doneRaw)
	if err == nil && !swapped {
		err = errRecordChanged
	}
	return err
}

// fenced reports, and logs, that this process may not write req's record:
// it was paused past the takeover window, and the newcomer holds the
// instance id under a higher epoch; nothing is written under the old one
// (fencing). The record waits for its lease there.
func (l *idempotency) fenced(ctx context.Context, req *ActionRequest) bool {
	if l.holder == nil || !l.holder.claimed.Load() || l.holder.stillHolds(context.WithoutCancel(ctx)) {
		return false
	}
	l.logger.LogAttrs(ctx, slog.LevelError, "idempotency: result not recorded: the instance id was taken over (epoch fencing)",
		slog.String("agent_slug", req.AgentSlug), slog.String("action", req.Action), slog.String("job_id", req.JobID))
	return true
}

// errRecordChanged reports a pending record replaced while its handler ran.
var errRecordChanged = errors.New("the record changed while the handler ran")

// exec runs the attempt. A panic anywhere after the handler (the handler's
// own is recovered by callAction) fails the call with -32603, like an
// invalid result, and is logged with its cause.
func (l *idempotency) exec(ctx context.Context, req *ActionRequest, exec func(context.Context) ([]byte, *Error)) (raw []byte, rpcErr *Error) {
	defer func() {
		if v := recover(); v != nil {
			cause := &panicError{value: v, stack: debug.Stack()}
			l.logger.LogAttrs(ctx, slog.LevelError, "action failed after its handler", slog.String("agent_slug", req.AgentSlug),
				slog.String("action", req.Action), slog.String("request_id", req.RequestID), slog.String("error", cause.Error()))
			raw, rpcErr = nil, failedWith(req, cause)
		}
	}()
	return exec(ctx)
}

// awaitChange polls the record under key until it differs from seen (or is
// gone), and reports whether it did before until or ctx ended.
func (l *idempotency) awaitChange(ctx context.Context, key string, seen []byte, until time.Time) bool {
	delay := idemPollFirst
	for {
		wait := min(delay, time.Until(until))
		if wait <= 0 {
			return false
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
		delay = min(2*delay, idemPollMax)
		raw, found, err := l.store.Get(ctx, key)
		if err != nil || !found || !bytes.Equal(raw, seen) {
			return true // an error is met again, and reported, when settling
		}
	}
}

// abandoned reports whether a pending record was left by an earlier boot of
// this very instance, whose attempt therefore died with it.
func (l *idempotency) abandoned(rec *idemRecord) bool {
	return rec.State == recordPending && l.instance != "" && rec.Instance == l.instance && rec.Boot != l.boot &&
		(l.holder == nil || l.holder.mayTakeOver(rec.Boot))
}

func (l *idempotency) storeFailure(ctx context.Context, req *ActionRequest, err error) *Error {
	l.logger.LogAttrs(ctx, slog.LevelError, "idempotency store failed", slog.String("agent_slug", req.AgentSlug),
		slog.String("action", req.Action), slog.Any("error", err))
	return failedWith(req, err)
}

// failedWith is the -32603 "Action handler failed" of req (the protocol
// step 6) carrying the logged cause.
func failedWith(req *ActionRequest, err error) *Error {
	e := actionFailed(req)
	e.err = err
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

func inProgressResult(req *ActionRequest) ([]byte, *Error) {
	return layerResult(req, Fail(contracts.ErrorIdempotencyInProgress, "an attempt with idempotency_key %s is still in progress; retry later with the same key", req.IdempotencyKey))
}

// layerResult serializes a business result the layer answers itself.
func layerResult(req *ActionRequest, res *ActionResult) ([]byte, *Error) {
	res.ReplaySafety = strictReplaySafety(req.IdempotencyKey)
	raw, err := contracts.Marshal(res)
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

// taskViewWriter makes the idempotency layer's write alongside the done
// record of an idempotent call's result (idempotency.alongside): the task
// view's write of the job the result reports, prepared (its read made) so
// that a shared store commits the record and the view at once (issue 40
// item 5). Once it is written, the task view's Observe in invoke
// (dispatch.go) finds the result to be this process's last one for the job
// and makes no store call; when it is not, Observe writes the view as for
// any result. A dry run writes no view.
func taskViewWriter(tasks *taskview.View, agents map[string]*Agent) func(context.Context, *ActionRequest, []byte) (store.Op, func(), bool) {
	return func(ctx context.Context, req *ActionRequest, raw []byte) (store.Op, func(), bool) {
		if isDryRun(agents[req.AgentSlug], req, raw, nil) {
			return store.Op{}, nil, false
		}
		w, op, ok := tasks.Prepare(ctx, recordWorkspace(req), req.AgentSlug, raw)
		if !ok {
			return store.Op{}, nil, false
		}
		return op, w.Done, true
	}
}
