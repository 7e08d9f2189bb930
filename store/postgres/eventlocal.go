package postgres

import (
	"crypto/rand"
	"encoding/binary"
	"strconv"
	"strings"
	"sync"
)

// A follower of the event log reads back from the table the events every
// instance appends, its own included. Reading its own is a query per append
// group, on the follower's connection and on the server, for events its
// EventLog already holds (at one connection, a fifth of the server's CPU per
// job.sync of the research agent; docs/performance.md). So each append's
// notification names, after the last id it committed, the appending EventLog
// (a random origin) and a token under which that EventLog keeps the group's
// events in memory (localGroups). A follower of the same EventLog that knows
// nothing was committed between the last event it delivered and this group
// delivers the group from memory; any doubt reads the table, as before.
//
// How a follower knows that nothing was committed in between: appends commit
// one after the other in id order (the counter row's lock), each commit sends
// one notification, and PostgreSQL delivers a listening session every
// notification committed after LISTEN, in commit order. So the notification
// before this group's, on the same connection, named the last id committed
// before it. When that id is the follower's cursor, the group's events are
// the next ones. (A read that returned events beyond a notification leaves
// the cursor ahead of it; the notifications of those events then need no
// read, and the chain is whole again once they have arrived.)

// Bounds of the events an EventLog keeps for its followers. A group that does
// not fit is not kept, and followers read it from the table.
const (
	localSlots    = 256     // groups kept, the latest ones
	localMaxBytes = 1 << 20 // names and payloads kept, at most
)

// localGroups holds the events of an EventLog's latest appends, by token, for
// its followers. Tokens count from 1; 0 means a group not kept.
type localGroups struct {
	origin string // random, names the EventLog in its notifications

	mu    sync.Mutex
	next  uint64
	bytes int
	slots [localSlots]localGroup
}

// localGroup is one append statement's events, in id order.
type localGroup struct {
	token uint64
	names []string
	datas [][]byte
	size  int
}

func newLocalGroups() *localGroups {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return &localGroups{origin: strconv.FormatUint(binary.LittleEndian.Uint64(b[:]), 36)}
}

// keep keeps the events of calls, copied, and returns the suffix that the
// append's notification adds after its last id: " <origin>:<token>", or ""
// when the group is too large to keep.
func (g *localGroups) keep(calls []*appendCall) (token uint64, suffix string) {
	size := 0
	for _, c := range calls {
		size += len(c.name) + len(c.data)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.next++
	token = g.next
	slot := &g.slots[token%localSlots]
	if g.bytes-slot.size+size > localMaxBytes {
		return 0, ""
	}
	names, datas := make([]string, len(calls)), make([][]byte, len(calls))
	buf := make([]byte, 0, size)
	for i, c := range calls {
		names[i] = c.name
		start := len(buf)
		buf = append(buf, c.data...)
		datas[i] = buf[start:len(buf):len(buf)]
	}
	g.bytes += size - slot.size
	*slot = localGroup{token: token, names: names, datas: datas, size: size}
	return token, " " + g.origin + ":" + strconv.FormatUint(token, 10)
}

// drop forgets the group of token (its append failed). A follower that was
// notified of it all the same (a commit whose answer was lost) reads it.
func (g *localGroups) drop(token uint64) {
	if token == 0 {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if slot := &g.slots[token%localSlots]; slot.token == token {
		g.bytes -= slot.size
		*slot = localGroup{}
	}
}

// lookup returns the names and payloads of the group of token, if kept. The
// caller must not modify them.
func (g *localGroups) lookup(token uint64) ([]string, [][]byte, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	slot := &g.slots[token%localSlots]
	if token == 0 || slot.token != token {
		return nil, nil, false
	}
	return slot.names, slot.datas, true
}

// notification is what a follower reads from a notification's payload: the
// last id the append committed and, for one kept by an EventLog, its origin
// and token. Older versions of this package notify the id alone.
type notification struct {
	last   uint64
	origin string
	token  uint64
}

// parseNotification reads a payload; ok is false when it names no id.
func parseNotification(payload string) (n notification, ok bool) {
	idText, rest, hasRest := strings.Cut(payload, " ")
	id, err := strconv.ParseUint(idText, 10, 64)
	if err != nil {
		return notification{}, false
	}
	n.last = id
	if !hasRest {
		return n, true
	}
	origin, tokenText, ok := strings.Cut(rest, ":")
	token, err := strconv.ParseUint(tokenText, 10, 64)
	if !ok || err != nil || origin == "" || token == 0 {
		return notification{last: id}, true // an id, from an append not kept
	}
	n.origin, n.token = origin, token
	return n, true
}
