package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/supervaize/supervaizer-go/store"
)

var _ store.Atomic = (*Store)(nil)

// conditionFailed is the SQLSTATE (division_by_zero) of an atomic write's
// op whose condition does not hold (statements atomicInsert, atomicCAS).
const conditionFailed = "22012"

// WriteAtomic implements [store.Atomic.WriteAtomic] in one round trip and
// one commit: the ops' prepared statements are sent together in one
// pipeline, which PostgreSQL runs as one implicit READ COMMITTED
// transaction, committed at its end. An op whose condition does not hold
// fails its statement, which rolls the transaction back: nothing is
// written. The ops run in ascending order of their keys, so that two
// atomic writes that share keys lock their rows in the same order and
// never deadlock. A compare-and-swap locks its row until the commit; a
// put-if-absent's insert is invisible to others until then, and one racing
// it on the same key waits for the outcome.
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

	batch := &pgx.Batch{}
	for _, op := range sorted {
		if op.IfAbsent {
			batch.Queue(s.db.sql.atomicInsert.name, []byte(op.Key), nonNil(op.Value))
		} else {
			batch.Queue(s.db.sql.atomicCAS.name, []byte(op.Key), nonNil(op.Old), nonNil(op.Value))
		}
	}
	err := s.db.pool.SendBatch(ctx, batch).Close()
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr) && pgErr.Code == conditionFailed:
		return false, nil
	case err != nil:
		return false, s.fail(ctx, "atomic write", err)
	}
	return true, nil
}
