package supervaizer

import (
	"bytes"
	"context"
	"log/slog"
	"time"
)

// When the store fails after an idempotent action's handler ran, the result
// is not lost (spec item 69): it is kept in memory and its write retried until
// the record's lease ends, while retries of the call are told the attempt is
// in progress.

// unrecordedResult is a result the handler produced whose done record is not
// in the store yet.
type unrecordedResult struct {
	pending, done []byte // the record in the store, and what replaces it
	missionID     string
	jobID         string
	inputHash     string
	until         time.Time // the record's lease: the retries stop there
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
	if u.missionID != req.MissionID || u.jobID != req.JobID || u.inputHash != hash {
		raw, e = conflictResult(req)
	} else {
		raw, e = inProgressResult(req)
	}
	if e != nil {
		return nil, false
	}
	return raw, true
}

// Retries of a result write that failed.
var (
	unrecordedRetryFirst = 50 * time.Millisecond
	unrecordedRetryMax   = 2 * time.Second
)

// keepUnrecorded keeps u under key and retries its write in the background
// until it succeeds, the record is found changed, the lease ends or the
// server shuts down (one last try then).
func (l *idempotency) keepUnrecorded(ctx context.Context, req *ActionRequest, key string, u *unrecordedResult, cause error) {
	l.logger.LogAttrs(ctx, slog.LevelError, "idempotency: the result could not be recorded; keeping it and retrying until the lease ends",
		slog.String("agent_slug", req.AgentSlug), slog.String("action", req.Action), slog.Time("until", u.until), slog.Any("error", cause))
	l.mu.Lock()
	l.unrecorded[key] = u
	l.mu.Unlock()
	if l.track != nil {
		l.track(1)
	}
	attrs := []slog.Attr{slog.String("agent_slug", req.AgentSlug), slog.String("action", req.Action)}
	go func() {
		defer func() {
			l.mu.Lock()
			delete(l.unrecorded, key)
			l.mu.Unlock()
			if l.track != nil {
				l.track(-1)
			}
		}()
		delay := unrecordedRetryFirst
		for {
			last := false
			select {
			case <-l.life.Done():
				last = true
			case <-time.After(delay):
			}
			delay = min(2*delay, unrecordedRetryMax)
			wctx, cancel := context.WithTimeout(context.Background(), unrecordedRetryMax)
			swapped, err := l.store.CompareAndSwap(wctx, key, u.pending, u.done)
			cancel()
			switch {
			case err == nil && swapped:
				l.logger.LogAttrs(context.Background(), slog.LevelInfo, "idempotency: the kept result is recorded", attrs...)
				return
			case err == nil:
				// An earlier write that reported a failure may have gone through.
				if cur, found, gerr := l.store.Get(context.Background(), key); gerr == nil && found && bytes.Equal(cur, u.done) {
					l.logger.LogAttrs(context.Background(), slog.LevelInfo, "idempotency: the kept result is recorded", attrs...)
					return
				}
				l.logger.LogAttrs(context.Background(), slog.LevelError, "idempotency: the kept result was not recorded: the record was taken over", attrs...)
				return
			case last || !l.now().Before(u.until):
				l.logger.LogAttrs(context.Background(), slog.LevelError, "idempotency: the kept result was not recorded before the lease ended",
					append(attrs, slog.Any("error", err))...)
				return
			}
		}
	}()
}
