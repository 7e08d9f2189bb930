package postgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/jackc/pgx/v5"

	"github.com/supervaize/supervaizer-go/internal/group"
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
	get, getGroup               statement
	putIfAbsent, putGroup       statement
	cas, del                    statement
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
		// get for several keys at once (Store.getGroup): one row per key
		// stored, in no particular order.
		getGroup: statement{"sv_kv_get_group", "SELECT key, value FROM " + kv + " WHERE key = ANY($1::bytea[])"},
		// One round trip in the common cases. The final SELECT reads the
		// snapshot taken when the statement started, so it misses a row that
		// a concurrent transaction committed meanwhile: the insert then did
		// nothing and the value is NULL, and PutIfAbsent reads it again.
		putIfAbsent: statement{"sv_kv_put_if_absent", `WITH ins AS (
	INSERT INTO ` + kv + ` (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING RETURNING 1
)
SELECT EXISTS (SELECT 1 FROM ins), (SELECT value FROM ` + kv + ` WHERE key = $1)`},
		// putIfAbsent for several distinct keys at once (Store.putGroup):
		// one row per key, whether this statement stored it, and the value
		// the statement's snapshot holds otherwise (NULL when committed by a
		// transaction it does not see). Rows are inserted in key order, the
		// order every statement that writes several keys locks them in.
		putGroup: statement{"sv_kv_put_if_absent_group", `WITH input AS (
	SELECT * FROM unnest($1::bytea[], $2::bytea[]) AS t(key, value)
), ins AS (
	INSERT INTO ` + kv + ` (key, value) SELECT key, value FROM input ORDER BY key ON CONFLICT (key) DO NOTHING RETURNING key
)
SELECT i.key, i.key IN (SELECT key FROM ins), ` + kv + `.value FROM input i LEFT JOIN ` + kv + ` ON ` + kv + `.key = i.key`},
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
	return []statement{s.get, s.getGroup, s.putIfAbsent, s.putGroup, s.cas, s.del, s.atomicInsert, s.atomicCAS,
		s.scanFirst, s.scanFirstBounded, s.scanNext, s.scanNextBounded, s.append, s.appendGroup, s.prune}
}

// Store is a [store.Store] kept in the table kv of a [DB]'s schema: one row per
// key, keys and values as bytea, so that any byte string is stored as is and
// keys sort byte by byte. Get it from [DB.Store].
//
// Each method is one statement in a READ COMMITTED transaction (no retry on
// serialization failures is ever needed), its own or, for concurrent Get and
// PutIfAbsent calls, its group's (below). PutIfAbsent is an INSERT …
// ON CONFLICT DO NOTHING; CompareAndSwap is an UPDATE whose WHERE clause
// compares the current value, which PostgreSQL re-checks on the latest
// version of a row that a concurrent transaction changed; both are atomic
// across every instance that shares the database. A write that returned is
// committed, hence as durable as the server's configuration makes commits.
//
// Gets through one DB are grouped, with no wait added to fill a group, as the
// event log's appends are: a Get that finds none in progress reads at once,
// alone; those that arrive while one is in progress queue up, and when it
// ends the first of them reads all of their keys in one statement. Each Get still reads what
// was committed when it was called, or later: its statement starts after the
// call. Under concurrent load that is one round trip, and one write to the
// server's socket, for many reads; the price is that one read statement runs
// at a time per DB, so a read of a very large value delays the reads queued
// behind it while it lasts. PutIfAbsent calls are grouped the same way, in
// one statement and one commit (but for a value over 1 MiB, which is put
// alone, beside the groups): each is still atomic, and one that
// returned is committed. Of several in a group for the same key, the first
// in the queue stores its value and the others find it. A call whose context
// ends while it waits for its group returns the context's error and is left
// out of the group's statement; one whose context ends during the statement
// returns the error too, and its value may have been stored, as with any
// write the caller gave up on.
//
// Scan reads pages of keys in ascending order, each page a statement of its
// own, and calls fn with no connection held: every key that exists, unchanged,
// for the whole scan is visited once, and keys written during the scan may or
// may not be.
type Store struct {
	db     *DB
	closed atomic.Bool

	gets group.Queue[*getCall] // internal/group
	puts group.Queue[*putCall]
	// getGroups and putGroups count the statements that read or wrote more
	// than one key.
	getGroups, putGroups atomic.Uint64
}

// getCall is one Get, and what it read once the group ran.
type getCall struct {
	ctx   context.Context // the caller's: a call whose caller gave up is left out
	key   string
	value []byte
	found bool
	err   error
	// retry: the group failed because the context of the Get that led it
	// ended; this Get, whose own context may not have, reads again alone.
	retry bool
}

// putCall is one PutIfAbsent, and its outcome once the group ran.
type putCall struct {
	ctx   context.Context // as getCall's
	key   string
	value []byte
	// stored, or else existing: the value found, nil when a transaction the
	// statement did not see committed the key meanwhile.
	stored   bool
	existing []byte
	err      error
	retry    bool // as getCall's
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
	call := &getCall{ctx: ctx, key: key}
	if err := s.gets.Do(ctx, call, s.getGroup); err != nil {
		return nil, false, err // ctx ended while the Get waited for its group
	}
	if call.retry && ctx.Err() == nil {
		call.value, call.found, call.err = s.getOne(ctx, key)
	}
	if call.err != nil {
		return nil, false, s.fail(ctx, "get", call.err)
	}
	return call.value, call.found, nil
}

// getOne reads one key in a statement of its own.
func (s *Store) getOne(ctx context.Context, key string) ([]byte, bool, error) {
	var v []byte
	err := s.db.pool.QueryRow(ctx, s.db.sql.get.name, []byte(key)).Scan(&v)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, false, nil
	case err != nil:
		return nil, false, err
	}
	return nonNil(v), true, nil
}

// Bounds of one grouped statement: a group larger than that runs as several
// statements, so that a call never fails grouped where it would succeed
// alone (PostgreSQL refuses a message of 1 GB or more).
// Tests lower them.
var (
	maxGroupKeys  = 1024     // keys per statement
	maxGroupBytes = 16 << 20 // values per put statement, unless one alone is larger
	// maxGroupedValue is the largest value a grouped put carries: a larger
	// one is put alone, beside the groups, so that it holds up no other put.
	maxGroupedValue = 1 << 20
)

// getGroup reads the keys of calls, one statement for up to maxGroupKeys,
// under the context of the Get that leads the group. When a statement fails
// because this context ended, its other Gets read again alone
// (getCall.retry): a caller that gave up never fails another's read.
func (s *Store) getGroup(ctx context.Context, calls []*getCall) {
	calls = slices.DeleteFunc(calls, func(c *getCall) bool { c.err = c.ctx.Err(); return c.err != nil })
	for len(calls) > 0 {
		n := min(len(calls), maxGroupKeys)
		s.readChunk(ctx, calls[:n])
		calls = calls[n:]
	}
}

// readChunk runs one statement of getGroup.
func (s *Store) readChunk(ctx context.Context, calls []*getCall) {
	var err error
	if len(calls) == 1 {
		c := calls[0]
		c.value, c.found, err = s.getOne(ctx, c.key)
	} else {
		s.getGroups.Add(1)
		err = s.readGroup(ctx, calls)
	}
	if err != nil {
		retry := ctx.Err() != nil
		for _, c := range calls {
			c.value, c.found, c.err, c.retry = nil, false, err, retry
		}
	}
}

// readGroup runs getGroup's statement and sets the value of every call whose
// key it returned.
func (s *Store) readGroup(ctx context.Context, calls []*getCall) error {
	keys := make([][]byte, len(calls))
	byKey := make(map[string][]*getCall, len(calls))
	for i, c := range calls {
		keys[i] = []byte(c.key)
		byKey[c.key] = append(byKey[c.key], c)
	}
	rows, err := s.db.pool.Query(ctx, s.db.sql.getGroup.name, keys)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var k, v []byte
		if err := rows.Scan(&k, &v); err != nil {
			return err
		}
		for i, c := range byKey[string(k)] {
			if i > 0 { // the same key read twice: each Get owns its value
				v = bytes.Clone(v)
			}
			c.value, c.found = nonNil(v), true
		}
	}
	return rows.Err()
}

// PutIfAbsent implements [store.Store.PutIfAbsent].
func (s *Store) PutIfAbsent(ctx context.Context, key string, value []byte) ([]byte, bool, error) {
	if err := s.begin(ctx, key); err != nil {
		return nil, false, err
	}
	for {
		call := &putCall{ctx: ctx, key: key, value: nonNil(value)}
		if len(value) > maxGroupedValue {
			// Alone, beside the groups: it would hold up the puts queued
			// behind it while its value is sent.
			call.stored, call.existing, call.err = s.putOne(ctx, key, call.value)
		} else if err := s.puts.Do(ctx, call, s.putGroup); err != nil {
			return nil, false, err // ctx ended while the call waited for its group
		}
		if call.retry && ctx.Err() == nil {
			call.stored, call.existing, call.err = s.putOne(ctx, key, call.value)
		}
		switch {
		case call.err != nil:
			return nil, false, s.fail(ctx, "put if absent", call.err)
		case call.stored:
			return nil, true, nil
		case call.existing != nil:
			return call.existing, false, nil
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

// putOne runs one put-if-absent in a statement of its own.
func (s *Store) putOne(ctx context.Context, key string, value []byte) (stored bool, existing []byte, err error) {
	err = s.db.pool.QueryRow(ctx, s.db.sql.putIfAbsent.name, []byte(key), value).Scan(&stored, &existing)
	return stored, existing, err
}

// putGroup runs the put-if-absent of calls, one statement for up to
// maxGroupKeys keys and maxGroupBytes of values, under the context of the
// call that leads the group (see getGroup). A key that several calls put is
// written once, by the first: the others find its value. A call whose
// caller gave up while it waited in the queue is left out: nothing is
// written for it.
func (s *Store) putGroup(ctx context.Context, calls []*putCall) {
	calls = slices.DeleteFunc(calls, func(c *putCall) bool { c.err = c.ctx.Err(); return c.err != nil })
	first := make(map[string]*putCall, len(calls))
	firsts := make([]*putCall, 0, len(calls))
	for _, c := range calls {
		if _, ok := first[c.key]; !ok {
			first[c.key] = c
			firsts = append(firsts, c)
		}
	}
	for len(firsts) > 0 {
		n, size := 0, 0
		for n < len(firsts) && n < maxGroupKeys && (n == 0 || size+len(firsts[n].value) <= maxGroupBytes) {
			size += len(firsts[n].value)
			n++
		}
		s.writeChunk(ctx, firsts[:n])
		firsts = firsts[n:]
	}
	for _, c := range calls {
		switch f := first[c.key]; {
		case f == c:
		case f.err != nil:
			c.err, c.retry = f.err, f.retry
		case f.stored:
			c.existing = bytes.Clone(f.value)
		default:
			c.existing = bytes.Clone(f.existing)
		}
	}
}

// writeChunk runs one statement of putGroup, for calls of distinct keys.
func (s *Store) writeChunk(ctx context.Context, calls []*putCall) {
	var err error
	if len(calls) == 1 {
		c := calls[0]
		c.stored, c.existing, err = s.putOne(ctx, c.key, c.value)
	} else {
		s.putGroups.Add(1)
		err = s.writeGroup(ctx, calls)
	}
	if err != nil {
		retry := ctx.Err() != nil
		for _, c := range calls {
			c.stored, c.existing, c.err, c.retry = false, nil, err, retry
		}
	}
}

// writeGroup runs putGroup's statement for calls of distinct keys and sets
// the outcome of each.
func (s *Store) writeGroup(ctx context.Context, calls []*putCall) error {
	keys, values := make([][]byte, len(calls)), make([][]byte, len(calls))
	byKey := make(map[string]*putCall, len(calls))
	for i, c := range calls {
		keys[i], values[i] = []byte(c.key), c.value
		byKey[c.key] = c
	}
	rows, err := s.db.pool.Query(ctx, s.db.sql.putGroup.name, keys, values)
	if err != nil {
		return err
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var (
			k, existing []byte
			stored      bool
		)
		if err := rows.Scan(&k, &stored, &existing); err != nil {
			return err
		}
		c := byKey[string(k)]
		if c == nil {
			return fmt.Errorf("a row for a key not put (%d bytes)", len(k))
		}
		c.stored, c.existing = stored, existing
		n++
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if n != len(keys) {
		return fmt.Errorf("%d rows for %d keys", n, len(keys))
	}
	return nil
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
