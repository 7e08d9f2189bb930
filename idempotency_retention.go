package supervaizer

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"

	"github.com/supervaize/supervaizer-go/store"
)

// maybeSweep starts the retention sweep in the background when the last one
// is older than idempotencySweepEvery (the first call after startup sweeps).
func (l *idempotency) maybeSweep(ctx context.Context) {
	now := l.now()
	l.sweepMu.Lock()
	if l.sweeping || (!l.lastSweep.IsZero() && now.Sub(l.lastSweep) < idempotencySweepEvery) {
		l.sweepMu.Unlock()
		return
	}
	l.sweeping, l.lastSweep = true, now
	l.sweepMu.Unlock()
	if l.track != nil {
		l.track(1)
	}
	go func() {
		defer func() {
			l.sweepMu.Lock()
			l.sweeping = false
			l.sweepMu.Unlock()
			if l.track != nil {
				l.track(-1)
			}
		}()
		removed, err := l.sweep(context.WithoutCancel(ctx))
		if err != nil {
			l.logger.LogAttrs(ctx, slog.LevelError, "idempotency retention sweep failed", slog.Any("error", err))
			return
		}
		if removed > 0 {
			l.logger.LogAttrs(ctx, slog.LevelInfo, "idempotency records expired", slog.Int("removed", removed),
				slog.Duration("retention", l.retention))
		}
	}()
}

// sweep removes the records older than the retention period, those keyed
// without the workspace included, and returns how many it removed. A done
// record expires retention after it was created; a pending one only
// retention after its lease ended, so an attempt in progress is never
// removed. A record is re-read just before its removal and stays if it
// changed since the scan.
func (l *idempotency) sweep(ctx context.Context) (int, error) {
	cutoff := l.now().Add(-l.retention)
	var stale []struct {
		key   string
		value []byte
	}
	visit := func(key string, value []byte) error {
		var rec idemRecord
		if json.Unmarshal(value, &rec) != nil {
			return nil // not ours to judge
		}
		expired := rec.State == recordDone && rec.CreatedAt.Before(cutoff) ||
			rec.State == recordPending && !rec.LeaseUntil.IsZero() && rec.LeaseUntil.Before(cutoff)
		if expired {
			stale = append(stale, struct {
				key   string
				value []byte
			}{key, bytes.Clone(value)})
		}
		return nil
	}
	for _, ns := range []string{idemNamespace, legacyIdemNamespace} {
		if err := l.store.Scan(ctx, store.Prefix(ns), visit); err != nil {
			return 0, err
		}
	}
	removed := 0
	for _, r := range stale {
		cur, found, err := l.store.Get(ctx, r.key)
		if err != nil {
			return removed, err
		}
		if !found || !bytes.Equal(cur, r.value) {
			continue
		}
		if err := l.store.Delete(ctx, r.key); err != nil {
			return removed, err
		}
		removed++
	}
	return removed, nil
}
