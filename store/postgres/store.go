package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/jackc/pgx/v5"

	"github.com/supervaize/supervaizer-go/store"
)

// Scan reads the keys page by page, so that no connection is held while its
// callback runs and memory stays bounded.
const (
	// scanPageRows is the most rows one page fetches.
	scanPageRows = 128
	// scanPageBytes ends a page early once its values add up to this size.
	scanPageBytes = 4 << 20
)

// statement is a named statement prepared on every pooled connection.
type statement struct{ name, sql string }

// statements are the SQL the store runs, for one schema.
type statements struct {
	get, putIfAbsent, cas, del  statement
	atomicInsert, atomicCAS     statement // WriteAtomic's (atomic.go)
	scanFirst, scanFirstBounded statement // key >= prefix
	scanNext, scanNextBounded   statement // key > last key seen

	// The event log (events.go). follow and pruned run on the followers'
	// own connections, which are not pooled.
	append, appendGroup, prune, follow, pruned statement
}

func newStatements(schema string) statements {
	kv := schema + ".kv"
	events, seq, pruned := schema+".events", schema+".event_seq", schema+".event_pruned"
	return statements{
		// The counter row stays locked until the transaction commits: appends
		// commit one after the other, in id order. An id is the previous one
		// + 1, or the database clock in Unix milliseconds shifted left by
		// sse.BootEpochBits (20) if that is greater: the ids of the in-process
		// stream have the same form (its boot time), so ids compare across
		// backends (open questions item 67).
		append: statement{"sv_ev_append", `WITH c AS (
	UPDATE ` + seq + ` SET last_id = greatest(last_id + 1, floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint << 20) RETURNING last_id
), ins AS (
	INSERT INTO ` + events + ` (id, name, data) SELECT last_id, $1, $2 FROM c RETURNING id
)
SELECT ins.id FROM ins, LATERAL pg_notify($3, ins.id::text || $4) AS n`},
		// append for $3 events at once (EventLog.appendGroup): ids first ..
		// first + $3 - 1 in the order of the arrays, one counter update, one
		// notification, one commit. Returns first.
		appendGroup: statement{"sv_ev_append_group", `WITH c AS (
	UPDATE ` + seq + ` SET last_id = greatest(last_id + 1, floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint << 20) + $3 - 1 RETURNING last_id - $3 + 1 AS first
), ins AS (
	INSERT INTO ` + events + ` (id, name, data) SELECT c.first + e.n - 1, e.name, e.data FROM c, unnest($1::bytea[], $2::bytea[]) WITH ORDINALITY AS e(name, data, n)
)
SELECT c.first FROM c, LATERAL pg_notify($4, (c.first + $3 - 1)::text || $5) AS n`},
		// Keeps the newest events within both bounds (at least the newest
		// one) and records the last id deleted.
		prune: statement{"sv_ev_prune", `WITH ranked AS (
	SELECT id, row_number() OVER w AS n, sum(octet_length(name) + octet_length(data)) OVER w AS total
	FROM ` + events + ` WINDOW w AS (ORDER BY id DESC)
), keep AS (
	SELECT coalesce(min(id) FILTER (WHERE n <= $1 AND total <= $2), max(id)) AS from_id FROM ranked
), del AS (
	DELETE FROM ` + events + ` e USING keep WHERE e.id < keep.from_id RETURNING e.id
)
UPDATE ` + pruned + ` SET through = greatest(through, (SELECT max(id) FROM del))
WHERE EXISTS (SELECT 1 FROM del)`},
		follow: statement{"sv_ev_follow", "SELECT id, name, data FROM " + events + " WHERE id > $1 ORDER BY id LIMIT $2"},
		pruned: statement{"sv_ev_pruned", "SELECT through FROM " + pruned},

		get: statement{"sv_kv_get", "SELECT value FROM " + kv + " WHERE key = $1"},
		// One round trip in the common cases. The final SELECT reads the
		// snapshot taken when the statement started, so it misses a row that
		// a concurrent transaction committed meanwhile: the insert then did
		// nothing and the value is NULL, and PutIfAbsent reads it again.
		putIfAbsent: statement{"sv_kv_put_if_absent", `WITH ins AS (
	INSERT INTO ` + kv + ` (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING RETURNING 1
)
SELECT EXISTS (SELECT 1 FROM ins), (SELECT value FROM ` + kv + ` WHERE key = $1)`},
		// Under READ COMMITTED an UPDATE that finds its row changed by a
		// concurrent transaction waits for it and evaluates the WHERE clause
		// again on the new version: the comparison and the write are atomic.
		cas: statement{"sv_kv_cas", "UPDATE " + kv + " SET value = $3 WHERE key = $1 AND value = $2"},
		del: statement{"sv_kv_delete", "DELETE FROM " + kv + " WHERE key = $1"},
		// WriteAtomic's ops: a put-if-absent or compare-and-swap that fails
		// its statement with division_by_zero (22012) when its condition does
		// not hold (no row inserted or updated), which rolls back the
		// pipeline's implicit transaction. Plain SQL has no RAISE; 1/count(*)
		// over the write's RETURNING is evaluated when the statement runs,
		// and nothing else in these statements divides.
		atomicInsert: statement{"sv_kv_atomic_insert", `WITH ins AS (
	INSERT INTO ` + kv + ` (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING RETURNING 1
)
SELECT 1 / count(*)::int FROM ins`},
		atomicCAS: statement{"sv_kv_atomic_cas", `WITH upd AS (
	UPDATE ` + kv + ` SET value = $3 WHERE key = $1 AND value = $2 RETURNING 1
)
SELECT 1 / count(*)::int FROM upd`},
		scanFirst: statement{"sv_kv_scan_first",
			"SELECT key, value FROM " + kv + " WHERE key >= $1 ORDER BY key LIMIT $2"},
		scanFirstBounded: statement{"sv_kv_scan_first_bounded",
			"SELECT key, value FROM " + kv + " WHERE key >= $1 AND key < $3 ORDER BY key LIMIT $2"},
		scanNext: statement{"sv_kv_scan_next",
			"SELECT key, value FROM " + kv + " WHERE key > $1 ORDER BY key LIMIT $2"},
		scanNextBounded: statement{"sv_kv_scan_next_bounded",
			"SELECT key, value FROM " + kv + " WHERE key > $1 AND key < $3 ORDER BY key LIMIT $2"},
	}
}

// pooled returns the statements prepared on every pooled connection.
func (s statements) pooled() []statement {
	return []statement{s.get, s.putIfAbsent, s.cas, s.del, s.atomicInsert, s.atomicCAS,
		s.scanFirst, s.scanFirstBounded, s.scanNext, s.scanNextBounded, s.append, s.appendGroup, s.prune}
}

// Store is a [store.Store] kept in the table kv of a [DB]'s schema: one row per
// key, keys and values as bytea, so that any byte string is stored as is and
// keys sort byte by byte. Get it from [DB.Store].
//
// Each method is one statement in its own READ COMMITTED transaction (no
// retry on serialization failures is ever needed). PutIfAbsent is an INSERT …
// ON CONFLICT DO NOTHING; CompareAndSwap is an UPDATE whose WHERE clause
// compares the current value, which PostgreSQL re-checks on the latest
// version of a row that a concurrent transaction changed; both are atomic
// across every instance that shares the database. A write that returned is
// committed, hence as durable as the server's configuration makes commits.
//
// Scan reads pages of keys in ascending order, each page a statement of its
// own, and calls fn with no connection held: every key that exists, unchanged,
// for the whole scan is visited once, and keys written during the scan may or
// may not be.
type Store struct {
	db     *DB
	closed atomic.Bool
}

var _ store.Store = (*Store)(nil)

// begin runs the checks that precede every operation.
func (s *Store) begin(ctx context.Context, key string) error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	switch {
	case key == "":
		return fmt.Errorf("%w: empty", store.ErrInvalidKey)
	case len(key) > store.MaxKeyLen:
		return fmt.Errorf("%w: %d bytes, limit %d", store.ErrInvalidKey, len(key), store.MaxKeyLen)
	}
	return nil
}

// fail returns the error of an operation: ctx's own error when ctx ended it,
// so that callers can test it with errors.Is.
func (s *Store) fail(ctx context.Context, op string, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	if s.closed.Load() {
		return store.ErrClosed
	}
	return fmt.Errorf("postgres: %s: %w", op, err)
}

// Get implements [store.Store.Get].
func (s *Store) Get(ctx context.Context, key string) ([]byte, bool, error) {
	if err := s.begin(ctx, key); err != nil {
		return nil, false, err
	}
	var v []byte
	err := s.db.pool.QueryRow(ctx, s.db.sql.get.name, []byte(key)).Scan(&v)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, false, nil
	case err != nil:
		return nil, false, s.fail(ctx, "get", err)
	}
	return nonNil(v), true, nil
}

// PutIfAbsent implements [store.Store.PutIfAbsent].
func (s *Store) PutIfAbsent(ctx context.Context, key string, value []byte) ([]byte, bool, error) {
	if err := s.begin(ctx, key); err != nil {
		return nil, false, err
	}
	for {
		var (
			stored   bool
			existing []byte
		)
		err := s.db.pool.QueryRow(ctx, s.db.sql.putIfAbsent.name, []byte(key), nonNil(value)).Scan(&stored, &existing)
		if err != nil {
			return nil, false, s.fail(ctx, "put if absent", err)
		}
		if stored {
			return nil, true, nil
		}
		if existing != nil {
			return existing, false, nil
		}
		// The key was committed by a transaction the statement's snapshot
		// does not see; read it with a new snapshot. Should it be deleted
		// meanwhile, the insert is tried again.
		existing, found, err := s.Get(ctx, key)
		if err != nil || found {
			return existing, false, err
		}
	}
}

// CompareAndSwap implements [store.Store.CompareAndSwap].
func (s *Store) CompareAndSwap(ctx context.Context, key string, old, new []byte) (bool, error) {
	if err := s.begin(ctx, key); err != nil {
		return false, err
	}
	tag, err := s.db.pool.Exec(ctx, s.db.sql.cas.name, []byte(key), nonNil(old), nonNil(new))
	if err != nil {
		return false, s.fail(ctx, "compare and swap", err)
	}
	return tag.RowsAffected() == 1, nil
}

// Delete implements [store.Store.Delete].
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := s.begin(ctx, key); err != nil {
		return err
	}
	if _, err := s.db.pool.Exec(ctx, s.db.sql.del.name, []byte(key)); err != nil {
		return s.fail(ctx, "delete", err)
	}
	return nil
}

// Scan implements [store.Store.Scan].
func (s *Store) Scan(ctx context.Context, prefix string, fn func(key string, value []byte) error) error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(prefix) > store.MaxKeyLen {
		return nil // no key is that long
	}
	end, bounded := prefixEnd(prefix)
	from, first := []byte(prefix), true
	for {
		page, err := s.page(ctx, from, first, end, bounded)
		if err != nil {
			return err
		}
		for _, e := range page {
			if s.closed.Load() {
				return store.ErrClosed
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := fn(e.key, e.value); err != nil {
				return err
			}
		}
		if len(page) < scanPageRows && !pageCut(page) {
			return nil
		}
		from, first = []byte(page[len(page)-1].key), false
	}
}

type entry struct {
	key   string
	value []byte
	cut   bool // the page ended here because of its size in bytes
}

// pageCut reports whether the page ended early because of its size.
func pageCut(page []entry) bool { return len(page) > 0 && page[len(page)-1].cut }

// page reads the next keys of a scan, at most scanPageRows of them and about
// scanPageBytes of values.
func (s *Store) page(ctx context.Context, from []byte, first bool, end []byte, bounded bool) ([]entry, error) {
	var st statement
	switch {
	case first && bounded:
		st = s.db.sql.scanFirstBounded
	case first:
		st = s.db.sql.scanFirst
	case bounded:
		st = s.db.sql.scanNextBounded
	default:
		st = s.db.sql.scanNext
	}
	args := []any{from, scanPageRows}
	if bounded {
		args = append(args, end)
	}
	rows, err := s.db.pool.Query(ctx, st.name, args...)
	if err != nil {
		return nil, s.fail(ctx, "scan", err)
	}
	defer rows.Close()
	var (
		page  []entry
		bytes int
	)
	for rows.Next() {
		var k, v []byte
		if err := rows.Scan(&k, &v); err != nil {
			return nil, s.fail(ctx, "scan", err)
		}
		page = append(page, entry{key: string(k), value: nonNil(v)})
		if bytes += len(k) + len(v); bytes >= scanPageBytes {
			page[len(page)-1].cut = true
			break
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, s.fail(ctx, "scan", err)
	}
	return page, nil
}

// Close implements [store.Store.Close]: it marks the store closed. The pool
// stays open until [DB.Close].
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return store.ErrClosed
	}
	return nil
}

// prefixEnd returns the smallest byte string greater than every string that
// starts with prefix; bounded is false when there is none (prefix is empty or
// all 0xff bytes).
func prefixEnd(prefix string) (end []byte, bounded bool) {
	b := []byte(prefix)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] != 0xff {
			b[i]++
			return b[:i+1], true
		}
	}
	return nil, false
}

// nonNil returns v, or an empty slice for nil: pgx sends a nil slice as NULL,
// and a stored value is never NULL.
func nonNil(v []byte) []byte {
	if v == nil {
		return []byte{}
	}
	return v
}
