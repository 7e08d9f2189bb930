package supervaizer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/supervaize/supervaizer-go/errcode"
)

// When the store fails after an idempotent action's handler ran, the result
// is not lost (spec items 69 and 73): it is kept in memory, at most
// keptLimit of them per process (beyond it a start is refused before its
// handler, -32603 with data.retry), and one loop retries their writes with
// backoff and jitter, while retries of the call are told the attempt is in
// progress. At shutdown they are retried until the shutdown deadline, then
// written to a spool file in the data folder, which the next start replays
// before serving. A write only ever replaces the exact pending record the
// attempt wrote (compare-and-swap), so a record taken over meanwhile is never
// overwritten.

// unrecordedResult is a result the handler produced whose done record is not
// in the store yet. It is also the spool file's entry.
type unrecordedResult struct {
	Key       string          `json:"key"`
	Pending   json.RawMessage `json:"pending"` // the record in the store
	Done      json.RawMessage `json:"done"`    // and what replaces it
	MissionID string          `json:"mission_id"`
	JobID     string          `json:"job_id"`
	InputHash string          `json:"input_hash"`
	Agent     string          `json:"agent_slug"`
	Action    string          `json:"action"`
}

// flight is one in-process attempt; duplicates with the same record key and
// the same identities and input wait for it and share its outcome.
type flight struct {
	done chan struct{}
	raw  []byte
	err  *Error
}

// idemConfig are the layer's settings.
type idemConfig struct {
	lease, retention time.Duration
	instance         string // "" : derived from the store when it is exclusive
	// awaitOther is how long a duplicate waits for an attempt in progress
	// in another process; 0 answers idempotency_in_progress at once.
	awaitOther time.Duration
	// keptLimit bounds the kept results (0: defaultKeptResults).
	keptLimit int
	// spoolDir is the data folder of the spool file ("": no spool).
	spoolDir string
	// storeTimeout bounds each store call (0: defaultStoreTimeout).
	storeTimeout time.Duration
}

// Kept results: their number per process, the retry loop's backoff, and the
// drain at shutdown when the shutdown context has no deadline.
const (
	defaultKeptResults = 1000
	keptRetryFirst     = 50 * time.Millisecond
	keptRetryMax       = 5 * time.Second
	keptDrainDefault   = 10 * time.Second
	keptDrainPause     = 100 * time.Millisecond
)

// spoolName is the base name of the spool file of an instance.
func spoolName(instance string) string {
	if instance == "" {
		return "kept-results.json"
	}
	safe := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' {
			return r
		}
		return '_'
	}, instance)
	return "kept-results-" + idemKeyPart(safe)[1:] + ".json"
}

// unrecordedFor answers a request whose record's result is held in memory
// while its write is retried: in progress for the same identities and input,
// a conflict otherwise.
func (l *idempotency) unrecordedFor(req *ActionRequest, key, hash string) ([]byte, bool) {
	l.mu.Lock()
	u := l.unrecorded[key]
	l.mu.Unlock()
	if u == nil {
		return nil, false
	}
	var raw []byte
	var e *Error
	if u.MissionID != req.MissionID || u.JobID != req.JobID || u.InputHash != hash {
		raw, e = conflictResult(req)
	} else {
		raw, e = inProgressResult(req)
	}
	if e != nil {
		return nil, false
	}
	return raw, true
}

// keptFull reports whether the process already keeps as many results as it
// may: a new start is then refused before its handler.
func (l *idempotency) keptFull() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.unrecorded) >= l.keptLimit
}

// retryLater is the -32603 of a call refused before its handler, which the
// caller may send again unchanged (data.retry).
func retryLater(req *ActionRequest, cause error) *Error {
	e := newError(errcode.InternalError, "Action handler failed", map[string]any{"agent_slug": req.AgentSlug, "action": req.Action, "retry": true})
	e.err = cause
	return e
}

// keepUnrecorded keeps u under its key, for the retry loop; after the drain
// of a shutdown it goes to the spool file at once.
func (l *idempotency) keepUnrecorded(ctx context.Context, u *unrecordedResult, cause error) {
	l.logger.LogAttrs(ctx, slog.LevelError, "idempotency: the result could not be recorded; keeping it and retrying",
		slog.String("agent_slug", u.Agent), slog.String("action", u.Action), slog.Any("error", cause))
	l.mu.Lock()
	if l.drained {
		l.mu.Unlock()
		l.spool([]*unrecordedResult{u})
		return
	}
	l.unrecorded[u.Key] = u
	start := !l.looping
	l.looping = true
	l.mu.Unlock()
	if start {
		go l.keptLoop()
	}
	select {
	case l.keptWake <- struct{}{}:
	default:
	}
}

// keptLoop is the one loop that retries the writes of the kept results,
// oldest first, until none is left or the server's lifetime ends (the drain
// of Shutdown then takes over). A failure backs the whole loop off (doubling
// from keptRetryFirst to keptRetryMax, with jitter): a store that is down
// costs one failing write per interval, whatever the number of results.
func (l *idempotency) keptLoop() {
	delay := keptRetryFirst
	order := map[string]time.Time{}
	for {
		l.mu.Lock()
		var next *unrecordedResult
		var oldest time.Time
		for k, u := range l.unrecorded {
			at, ok := order[k]
			if !ok {
				at = time.Now()
				order[k] = at
			}
			if next == nil || at.Before(oldest) {
				next, oldest = u, at
			}
		}
		if next == nil || l.life.Err() != nil {
			l.looping = false
			l.mu.Unlock()
			return
		}
		l.mu.Unlock()
		if l.retryKept(l.life, next) {
			delete(order, next.Key)
			delay = keptRetryFirst
			continue
		}
		order[next.Key] = time.Now() // to the back of the line
		wait := delay/2 + rand.N(delay/2+1)
		delay = min(2*delay, keptRetryMax)
		t := time.NewTimer(wait)
		select {
		case <-l.life.Done():
		case <-t.C:
		case <-l.keptWake:
		}
		t.Stop()
	}
}

// retryKept tries once to record u and reports whether u is settled (recorded,
// or found taken over); a settled u leaves the kept results.
func (l *idempotency) retryKept(ctx context.Context, u *unrecordedResult) bool {
	attrs := []slog.Attr{slog.String("agent_slug", u.Agent), slog.String("action", u.Action)}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.storeTimeout)
	defer cancel()
	if l.holder != nil && l.holder.claimed.Load() {
		// The write was kept because the store failed or this process was
		// paused (its store deadline ran out meanwhile, possibly after the
		// write path's own fencing check): nothing is written under an old
		// epoch (fencing). A claim found to be another's forgets the result
		// (the record waits for its lease on the newcomer); a store that
		// does not answer keeps it for the next try.
		held, err := l.holder.holds(wctx)
		if err != nil {
			return false
		}
		if !held {
			l.logger.LogAttrs(ctx, slog.LevelError, "idempotency: result not recorded: the instance id was taken over (epoch fencing)",
				append(attrs, slog.String("job_id", u.JobID))...)
			l.forget(u)
			return true
		}
	}
	swapped, err := l.store.CompareAndSwap(wctx, u.Key, u.Pending, u.Done)
	if err == nil && !swapped {
		// An earlier write that reported a failure may have gone through.
		cur, found, gerr := l.store.Get(wctx, u.Key)
		switch {
		case gerr != nil:
			err = gerr
		case found && bytes.Equal(cur, u.Done):
			swapped = true
		default:
			l.logger.LogAttrs(ctx, slog.LevelError, "idempotency: the kept result was not recorded: the record was taken over", attrs...)
			l.forget(u)
			return true
		}
	}
	if err != nil {
		return false
	}
	l.logger.LogAttrs(ctx, slog.LevelInfo, "idempotency: the kept result is recorded", attrs...)
	l.forget(u)
	return true
}

func (l *idempotency) forget(u *unrecordedResult) {
	l.mu.Lock()
	if l.unrecorded[u.Key] == u {
		delete(l.unrecorded, u.Key)
	}
	l.mu.Unlock()
}

func (l *idempotency) keptList() []*unrecordedResult {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]*unrecordedResult, 0, len(l.unrecorded))
	for _, u := range l.unrecorded {
		out = append(out, u)
	}
	return out
}

// drain retries the kept results until they are recorded or ctx ends (at
// most keptDrainDefault when ctx has no deadline), then writes those left to
// the spool file. Results kept later go to the spool file at once. A second
// drain does nothing.
func (l *idempotency) drain(ctx context.Context) {
	l.mu.Lock()
	again := l.drained
	l.mu.Unlock()
	if again {
		return
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, keptDrainDefault)
		defer cancel()
	}
	for {
		left := l.keptList()
		if len(left) == 0 || ctx.Err() != nil {
			break
		}
		for _, u := range left {
			if ctx.Err() != nil || !l.retryKeptUntil(ctx, u) {
				break
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(keptDrainPause):
		}
	}
	l.mu.Lock()
	l.drained = true
	l.mu.Unlock()
	left := l.keptList()
	if len(left) == 0 {
		if l.spoolPath != "" {
			if err := os.Remove(l.spoolPath); err != nil && !errors.Is(err, os.ErrNotExist) {
				l.logger.Warn("idempotency: remove the spool file", slog.Any("error", err))
			}
		}
		return
	}
	l.spool(left)
}

// retryKeptUntil is retryKept bounded by ctx as well as the store deadline.
func (l *idempotency) retryKeptUntil(ctx context.Context, u *unrecordedResult) bool {
	done := make(chan bool, 1)
	go func() { done <- l.retryKept(ctx, u) }()
	select {
	case ok := <-done:
		return ok
	case <-ctx.Done():
		return false
	}
}

// spool adds us to the spool file (written to a temporary file, fsync'd,
// renamed over the spool file, and the folder fsync'd). Without a data folder
// the results are lost, which is logged.
func (l *idempotency) spool(us []*unrecordedResult) {
	l.spoolMu.Lock()
	defer l.spoolMu.Unlock()
	if err := l.writeSpool(us); err != nil {
		for _, u := range us {
			l.logger.Error("idempotency: the kept result is lost: not recorded before the shutdown deadline and not spooled",
				slog.String("agent_slug", u.Agent), slog.String("action", u.Action), slog.Any("error", err))
		}
		return
	}
	l.logger.Warn("idempotency: results not recorded before the shutdown deadline were spooled; the next start of this instance records them before serving",
		slog.Int("results", len(us)), slog.String("spool", l.spoolPath))
}

func (l *idempotency) writeSpool(us []*unrecordedResult) error {
	if l.spoolPath == "" {
		return errors.New("no data folder")
	}
	merged := map[string]*unrecordedResult{}
	prior, err := readSpool(l.spoolPath)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	for _, u := range append(prior, us...) {
		merged[u.Key] = u
	}
	all := make([]*unrecordedResult, 0, len(merged))
	for _, u := range merged {
		all = append(all, u)
	}
	raw, err := json.Marshal(all)
	if err != nil {
		return err
	}
	dir := filepath.Dir(l.spoolPath)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".kept-*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // once renamed, a no-op
	if _, err := f.Write(raw); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), l.spoolPath); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// maxSpoolBytes bounds the spool file read at startup.
const maxSpoolBytes = 256 << 20

func readSpool(path string) ([]*unrecordedResult, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > maxSpoolBytes {
		return nil, fmt.Errorf("spool file %s: %d bytes, limit %d", path, st.Size(), maxSpoolBytes)
	}
	var us []*unrecordedResult
	if err := json.NewDecoder(f).Decode(&us); err != nil {
		return nil, fmt.Errorf("spool file %s: %w", path, err)
	}
	for _, u := range us {
		if u == nil || u.Key == "" || len(u.Pending) == 0 || len(u.Done) == 0 {
			return nil, fmt.Errorf("spool file %s: an entry lacks its key or records", path)
		}
	}
	return us, nil
}

// replaySpool records the results a previous process of this instance
// spooled at its shutdown, before this one serves. Those the store does not
// take now are kept (a retry of their call is told the attempt is in
// progress) and retried by the loop; the file stays until a shutdown finds
// nothing left to spool.
func (l *idempotency) replaySpool(ctx context.Context) error {
	l.mu.Lock()
	again := l.replayed
	l.replayed = true
	l.mu.Unlock()
	if l.spoolPath == "" || again {
		return nil
	}
	us, err := readSpool(l.spoolPath)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("supervaizer: replay the kept results: %w", err)
	}
	left := 0
	for _, u := range us {
		if !l.retryKept(ctx, u) {
			left++
			l.keepUnrecorded(ctx, u, errors.New("the store did not take the spooled result at startup"))
		}
	}
	l.logger.LogAttrs(ctx, slog.LevelInfo, "idempotency: spooled results replayed",
		slog.Int("results", len(us)), slog.Int("still_kept", left))
	if left == 0 {
		if err := os.Remove(l.spoolPath); err != nil && !errors.Is(err, os.ErrNotExist) {
			l.logger.Warn("idempotency: remove the spool file", slog.Any("error", err))
		}
	}
	return nil
}
