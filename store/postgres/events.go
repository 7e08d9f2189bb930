package postgres

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/supervaize/supervaizer-go/internal/group"
	"github.com/supervaize/supervaizer-go/store"
)

// Defaults of the event log.
const (
	// DefaultEventRetention is the most events the log keeps for
	// Last-Event-ID replay, as many as the in-process replay buffer keeps.
	DefaultEventRetention = 1024
	// DefaultEventRetentionBytes bounds the size of the events the log keeps
	// (names and payloads).
	DefaultEventRetentionBytes = 16 << 20
)

// Tuning of the event log.
const (
	// pruneEvery is how many appends through one DB trigger a pruning of the
	// events beyond the retention.
	pruneEvery = 64
	// followPage is the most events a follower reads per query.
	followPage = 512
	// followPoll is how long a follower waits for a notification before it
	// queries anyway: a last resort against a lost wake-up, and a liveness
	// check of its connection (a network that drops packets silently sends
	// no notification and no error).
	followPoll = 5 * time.Second
	// followQueryTimeout bounds each step of a follower (connecting,
	// LISTEN, each query): a step that exceeds it drops the connection, and
	// the follower reconnects (spec item 73).
	followQueryTimeout = 10 * time.Second
	// Reconnection backoff of a follower that lost its connection.
	followMinBackoff = 100 * time.Millisecond
	followMaxBackoff = 5 * time.Second
)

// EventLog is the event stream shared by every instance that opens the same
// database and schema: each instance appends the events it publishes, and
// follows the log to hand every instance's events to its own SSE broker. Get
// it from [DB.EventLog].
//
// Ids come from a counter row that each append advances in the transaction
// that inserts the event, so appends commit one after the other in id order:
// a follower that has read id n has read every id below n that will ever
// exist, and never skips one. (A SEQUENCE would hand out ids outside the
// transactions, which could then commit out of order.) Ids keep increasing
// across instances and restarts; an append whose transaction fails leaves a
// gap, which is harmless.
//
// An id is the previous id + 1, or, when greater, the database clock in Unix
// milliseconds shifted left by 20 bits: the form of the ids of the SDK's
// in-process event stream (a boot time shifted left by 20 bits, then + 1 per
// event). Ids therefore compare across backends: a client that resumes with
// Last-Event-ID from an in-process stream receives the events this log took
// after it, and one that resumes on an in-process stream with an id from this
// log receives what that stream took after it.
//
// The insert notifies a channel of the schema (LISTEN/NOTIFY) on commit,
// naming the last id it committed; followers wake up and read the new events
// from the table, in id order. A notification of events a follower has
// already read needs no read, and a follower delivers the events its own
// EventLog appended from memory when nothing was committed in between
// (eventlocal.go): under load, a follower reads only other instances' events.
// A follower that loses its connection reconnects, with a backoff, and reads
// everything after the last event it delivered, so nothing retained is missed
// or delivered twice. The log keeps the latest events within the retention
// (count and bytes, [WithEventRetention]); older ones are deleted.
//
// Appends through one DB are grouped without delaying any: an append that
// finds none in progress commits at once, alone; those that arrive while one
// is in progress (they would wait for the counter row's lock anyway) queue
// up, and when it ends the first of them appends all of them in one
// statement: one counter update, one commit, one notification, ids in the
// order they queued.
type EventLog struct {
	db *DB

	appends group.Queue[*appendCall] // internal/group
	// groups counts the statements that appended more than one event.
	groups atomic.Uint64

	// local keeps the events of the latest appends for this log's followers
	// (eventlocal.go); fromMemory counts the events they delivered from it,
	// and reads the queries they made.
	local             *localGroups
	fromMemory, reads atomic.Uint64
	// following counts the Follow calls running: without one, appends keep
	// nothing in memory.
	following atomic.Int32
}

// appendCall is one append, and its id or error once appended.
type appendCall struct {
	name string
	data []byte
	id   uint64
	err  error
	// retry: the group failed because the context of the append that led
	// it ended; this append, whose own context may not have, runs again
	// alone.
	retry bool
}

// EventLog returns the event log kept in the database, an [*EventLog].
func (db *DB) EventLog() store.EventLog { return db.events }

var _ store.EventLog = (*EventLog)(nil)

// Append adds an event to the log and returns its id, greater than the id of
// every event appended before it by any instance. The event is committed, and
// the followers notified, when Append returns.
//
// An append that waits in a group returns ctx.Err() when ctx ends first; the
// group's statement, run under the context of the append that leads it, may
// still commit its event. When that statement fails because the leading
// append's context ended, the other appends of the group run again alone.
func (l *EventLog) Append(ctx context.Context, name string, data []byte) (uint64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	call := &appendCall{name: name, data: data}
	if err := l.appends.Do(ctx, call, l.appendGroup); err != nil {
		return 0, err
	}
	if call.retry && ctx.Err() == nil {
		l.appendGroup(ctx, []*appendCall{call})
	}
	if call.err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return 0, cerr
		}
	}
	return call.id, call.err
}

// appendGroup appends the events of calls in one statement and sets their
// ids, or their error. The statement is bounded by followQueryTimeout too:
// a group led on by an append whose caller gave up runs without the
// caller's deadline. When it fails because the leading append's context
// ended, the other appends run again alone (appendCall.retry): a caller
// that gave up never fails another's append.
func (l *EventLog) appendGroup(leadCtx context.Context, calls []*appendCall) {
	ctx, cancel := context.WithTimeout(leadCtx, followQueryTimeout)
	defer cancel()
	var first int64
	var err error
	var token uint64
	var suffix string
	if l.following.Load() > 0 {
		token, suffix = l.local.keep(calls)
	}
	if len(calls) == 1 {
		err = l.db.pool.QueryRow(ctx, l.db.sql.append.name, []byte(calls[0].name), nonNil(calls[0].data), l.db.channel, suffix).Scan(&first)
	} else {
		names, datas := make([][]byte, len(calls)), make([][]byte, len(calls))
		for i, c := range calls {
			names[i], datas[i] = []byte(c.name), nonNil(c.data)
		}
		err = l.db.pool.QueryRow(ctx, l.db.sql.appendGroup.name, names, datas, int64(len(calls)), l.db.channel, suffix).Scan(&first)
		l.groups.Add(1)
	}
	if err != nil {
		l.local.drop(token)
		err = fmt.Errorf("postgres: append event: %w", err)
	}
	retry := err != nil && leadCtx.Err() != nil
	for i, c := range calls {
		c.id, c.err, c.retry = uint64(first)+uint64(i), err, retry
		if err != nil {
			c.id = 0
		}
	}
	if err == nil {
		n := uint64(len(calls))
		if after := l.db.appends.Add(n); after/pruneEvery != (after-n)/pruneEvery {
			l.db.prune()
		}
	}
}

// Follow calls deliver for every retained event with an id greater than
// after, then for every event appended later, in id order and each once, until
// ctx is done; it then returns ctx.Err(). caughtUp, when not nil, is called
// once, after the events retained when Follow started have been delivered.
// after = 0 delivers every retained event.
//
// Follow holds a connection of its own (LISTEN needs one), outside the pool.
// When it fails, Follow logs it, reconnects with a backoff and carries on
// after the last event delivered; it logs an error if events were deleted by
// the retention before it could read them. deliver runs on Follow's goroutine
// and must not block for long: the notifications wait meanwhile.
func (l *EventLog) Follow(ctx context.Context, after uint64, deliver func(id uint64, name string, data []byte), caughtUp func()) error {
	f := follower{l: l, cursor: after, deliver: deliver, caughtUp: caughtUp}
	l.following.Add(1)
	defer l.following.Add(-1)
	defer f.setHealthy(true) // a follower that ended is no longer behind
	backoff := followMinBackoff
	for {
		connected, err := f.run(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		f.setHealthy(false)
		if connected {
			backoff = followMinBackoff
		}
		l.db.logger.LogAttrs(ctx, slog.LevelWarn, "postgres event log: connection lost; reconnecting, then reading the events missed",
			slog.String("error", err.Error()), slog.Duration("retry_in", backoff), slog.Uint64("last_event_id", f.cursor))
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		backoff = min(2*backoff, followMaxBackoff)
	}
}

// followerAppName is the application_name of the followers' connections, as
// pg_stat_activity shows it.
const followerAppName = "supervaizer event log follower"

// follower is the state of one Follow call.
type follower struct {
	l        *EventLog
	cursor   uint64 // id of the last event delivered
	deliver  func(id uint64, name string, data []byte)
	caughtUp func() // nil once called
	// down tells whether this follower counts in the DB's followersDown:
	// from a failure until it reads the log again.
	down bool
}

// setHealthy records whether the follower reads the log, for [DB.Ping].
func (f *follower) setHealthy(ok bool) {
	switch {
	case ok && f.down:
		f.l.db.followersDown.Add(-1)
	case !ok && !f.down:
		f.l.db.followersDown.Add(1)
	default:
		return
	}
	f.down = !ok
}

// run connects, listens and delivers events until the connection fails or
// ctx is done. connected reports whether it got as far as listening.
func (f *follower) run(ctx context.Context) (connected bool, err error) {
	db := f.l.db
	cfg := db.connConfig.Copy()
	cfg.RuntimeParams["application_name"] = followerAppName
	cctx, cancel := context.WithTimeout(ctx, followQueryTimeout)
	conn, err := pgx.ConnectConfig(cctx, cfg)
	cancel()
	if err != nil {
		return false, err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = conn.Close(cctx)
	}()
	// Listen before reading: an event committed after the read notifies.
	lctx, cancel := context.WithTimeout(ctx, followQueryTimeout)
	_, err = conn.Exec(lctx, "LISTEN "+pgx.Identifier{db.channel}.Sanitize())
	if err == nil {
		connected = true
		err = f.checkPruned(lctx, conn)
	}
	cancel()
	if err != nil {
		return connected, err
	}
	read := true
	// prev is the last id named by the previous notification on this
	// connection, 0 before the first (eventlocal.go).
	var prev uint64
	for {
		if read {
			if err := f.catchUp(ctx, conn); err != nil {
				return true, err
			}
			f.setHealthy(true)
			if f.caughtUp != nil {
				f.caughtUp()
				f.caughtUp = nil
			}
		}
		wctx, cancel := context.WithTimeout(ctx, followPoll)
		n, err := conn.WaitForNotification(wctx)
		cancel()
		if err != nil && (ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded)) {
			return true, err
		}
		if n == nil { // no notification for followPoll: read anyway
			read = true
			continue
		}
		note, ok := parseNotification(n.Payload)
		switch {
		case !ok: // not an append's: read, and the chain starts again
			read, prev = true, 0
			continue
		case note.last <= f.cursor:
			// Delivered: appends commit in id order and notify on commit,
			// so the read that returned the cursor returned this append's
			// events (under load, most notifications arrive while the read
			// of an earlier one returns them).
			read = false
		default:
			read = !f.deliverKept(note, prev)
		}
		prev = note.last
	}
}

// deliverKept delivers the events of the append note names from its
// EventLog's memory and reports whether it did: only an append of this
// EventLog, still kept, that follows the cursor with nothing committed in
// between (prev, the id the notification before it named, is the cursor).
func (f *follower) deliverKept(note notification, prev uint64) bool {
	l := f.l
	if prev == 0 || prev != f.cursor || note.origin != l.local.origin {
		return false
	}
	names, datas, ok := l.local.lookup(note.token)
	if !ok || uint64(len(names)) > note.last-f.cursor {
		return false
	}
	first := note.last - uint64(len(names)) + 1
	for i := range names {
		f.cursor = first + uint64(i)
		f.deliver(f.cursor, names[i], datas[i])
	}
	l.fromMemory.Add(uint64(len(names)))
	return true
}

// catchUp delivers every committed event after the cursor.
func (f *follower) catchUp(ctx context.Context, conn *pgx.Conn) error {
	for {
		qctx, cancel := context.WithTimeout(ctx, followQueryTimeout)
		n, err := f.page(qctx, conn)
		cancel()
		if err != nil {
			return err
		}
		if n < followPage {
			return nil
		}
	}
}

// page delivers the next page of events after the cursor and returns how many
// it read.
func (f *follower) page(ctx context.Context, conn *pgx.Conn) (int, error) {
	f.l.reads.Add(1)
	rows, err := conn.Query(ctx, f.l.db.sql.follow.sql, int64(f.cursor), followPage)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var (
			id         int64
			name, data []byte
		)
		if err := rows.Scan(&id, &name, &data); err != nil {
			return n, err
		}
		n++
		f.cursor = uint64(id)
		f.deliver(uint64(id), string(name), nonNil(data))
	}
	rows.Close()
	return n, rows.Err()
}

// checkPruned logs an error when the retention deleted events after the
// cursor before this follower could read them.
func (f *follower) checkPruned(ctx context.Context, conn *pgx.Conn) error {
	if f.cursor == 0 {
		return nil
	}
	var through int64
	if err := conn.QueryRow(ctx, f.l.db.sql.pruned.sql).Scan(&through); err != nil {
		return err
	}
	if uint64(through) > f.cursor {
		f.l.db.logger.LogAttrs(ctx, slog.LevelError, "postgres event log: events were deleted by the retention before this instance read them; its streams miss them",
			slog.Uint64("after", f.cursor), slog.Int64("through", through))
	}
	return nil
}

// prune deletes, in the background, the events beyond the retention. One
// pruning runs at a time per DB; Close waits for it.
func (db *DB) prune() {
	if !db.pruning.CompareAndSwap(false, true) {
		return
	}
	db.bg.Add(1)
	go func() {
		defer db.bg.Done()
		defer db.pruning.Store(false)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := db.pool.Exec(ctx, db.sql.prune.name, db.retainEvents, db.retainBytes); err != nil && !db.store.closed.Load() {
			db.logger.LogAttrs(ctx, slog.LevelWarn, "postgres event log: pruning failed", slog.String("error", err.Error()))
		}
	}()
}

// channelName is the LISTEN/NOTIFY channel of a schema's event log: at most
// 63 bytes, the limit of a PostgreSQL identifier.
func channelName(schema string) string {
	name := "supervaizer_events_" + schema
	if len(name) <= 63 {
		return name
	}
	h := fnv.New64a()
	h.Write([]byte(schema))
	return "supervaizer_events_" + strconv.FormatUint(h.Sum64(), 16)
}
