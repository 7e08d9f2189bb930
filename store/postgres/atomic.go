package postgres

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/supervaize/supervaizer-go/store"
)

var _ store.Atomic = (*Store)(nil)

// WriteAtomic implements [store.Atomic.WriteAtomic] in one READ COMMITTED
// transaction, one commit, in two round trips: BEGIN and the ops' prepared
// statements sent together in one pipeline, then COMMIT when every
// condition held, ROLLBACK otherwise. The ops run in ascending order of
// their keys, so that two atomic writes that share keys lock their rows in
// the same order and never deadlock. A compare-and-swap locks its row until
// the commit; a put-if-absent's insert is invisible to others until then,
// and one racing it on the same key waits for the outcome.
func (s *Store) WriteAtomic(ctx context.Context, ops []store.Op) (bool, error) {
	if s.closed.Load() {
		return false, store.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return false, err
	}
	seen := make(map[string]struct{}, len(ops))
	for i, op := range ops {
		if err := s.begin(ctx, op.Key); err != nil {
			return false, fmt.Errorf("op %d: %w", i+1, err)
		}
		if _, dup := seen[op.Key]; dup {
			return false, fmt.Errorf("%w: op %d names a key an earlier op names", store.ErrInvalidKey, i+1)
		}
		seen[op.Key] = struct{}{}
	}
	if len(ops) == 0 {
		return true, nil
	}
	sorted := slices.Clone(ops)
	slices.SortFunc(sorted, func(a, b store.Op) int { return strings.Compare(a.Key, b.Key) })

	conn, err := s.db.pool.Acquire(ctx)
	if err != nil {
		return false, s.fail(ctx, "atomic write", err)
	}
	// A connection released inside a transaction (an error below, a
	// cancelled ctx) is closed by the pool, which ends the transaction.
	defer conn.Release()

	batch := &pgx.Batch{}
	batch.Queue("begin")
	for _, op := range sorted {
		if op.IfAbsent {
			batch.Queue(s.db.sql.putIfAbsent.name, []byte(op.Key), nonNil(op.Value))
		} else {
			batch.Queue(s.db.sql.cas.name, []byte(op.Key), nonNil(op.Old), nonNil(op.Value))
		}
	}
	applied, err := runAtomic(conn.SendBatch(ctx, batch), sorted)
	if err != nil {
		return false, s.fail(ctx, "atomic write", err)
	}
	end := "commit"
	if !applied {
		end = "rollback"
	}
	if _, err := conn.Exec(ctx, end); err != nil {
		return false, s.fail(ctx, "atomic write: "+end, err)
	}
	return applied, nil
}

// runAtomic reads the results of an atomic write's pipeline: BEGIN, then
// one statement per op. applied reports whether every condition held.
func runAtomic(br pgx.BatchResults, ops []store.Op) (applied bool, err error) {
	defer func() {
		if cerr := br.Close(); err == nil && cerr != nil {
			applied, err = false, cerr
		}
	}()
	if _, err := br.Exec(); err != nil {
		return false, err
	}
	applied = true
	for _, op := range ops {
		if op.IfAbsent {
			var (
				stored   bool
				existing []byte
			)
			if err := br.QueryRow().Scan(&stored, &existing); err != nil {
				return false, err
			}
			applied = applied && stored
			continue
		}
		tag, err := br.Exec()
		if err != nil {
			return false, err
		}
		applied = applied && tag.RowsAffected() == 1
	}
	return applied, nil
}
