package postgres

import (
	"bytes"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// appendSeen appends one event through l and waits until every collector has
// delivered it, so that the next append starts after the followers are idle.
func appendSeen(t *testing.T, l *EventLog, data string, cs ...*collector) uint64 {
	t.Helper()
	id, err := l.Append(t.Context(), "test.event", []byte(data))
	require.NoError(t, err)
	for _, c := range cs {
		require.Eventually(t, func() bool {
			got := c.snapshot()
			return len(got) > 0 && got[len(got)-1].id >= id
		}, 20*time.Second, time.Millisecond, "event %d delivered", id)
	}
	return id
}

// TestEventLogFollowerDeliversOwnAppendsFromMemory: a follower delivers the
// events its own EventLog appended from memory, without reading them back,
// once the notifications it has seen chain to them; the first, which follows
// no notification, is read.
func TestEventLogFollowerDeliversOwnAppendsFromMemory(t *testing.T) {
	db := openTest(t)
	l := db.events
	c := follow(t, l, 0)
	readsBefore := l.reads.Load()
	const n = 20
	var ids []uint64
	for i := range n {
		ids = append(ids, appendSeen(t, l, `{"i":`+strconv.Itoa(i)+`}`, c))
	}
	got := c.waitFor(t, n)
	for i, e := range got {
		assert.Equal(t, ids[i], e.id)
		assert.Equal(t, `{"i":`+strconv.Itoa(i)+`}`, e.data)
		assert.Equal(t, "test.event", e.name)
	}
	assert.Equal(t, uint64(n-1), l.fromMemory.Load(), "every event after the first delivered from memory")
	assert.GreaterOrEqual(t, l.reads.Load()-readsBefore, uint64(1), "the first event was read")
}

// TestEventLogFollowersInterleavedInstances: two instances append in turn;
// each follower delivers every event of both, in id order and each once,
// reading the other instance's and taking its own from memory.
func TestEventLogFollowersInterleavedInstances(t *testing.T) {
	url, schema := testURL(t), testSchema(t)
	a, b := openSchema(t, url, schema), openSchema(t, url, schema)
	ca, cb := follow(t, a.events, 0), follow(t, b.events, 0)
	const rounds = 10
	var want []uint64
	for i := range rounds {
		want = append(want, appendSeen(t, b.events, `{"b":`+strconv.Itoa(i)+`}`, ca, cb))
		want = append(want, appendSeen(t, a.events, `{"a":`+strconv.Itoa(i)+`}`, ca, cb))
	}
	for _, c := range []*collector{ca, cb} {
		got := c.waitFor(t, 2*rounds)
		for i, e := range got {
			require.Equal(t, want[i], e.id, "event %d", i)
			who, n := "b", i/2
			if i%2 == 1 {
				who = "a"
			}
			assert.Equal(t, `{"`+who+`":`+strconv.Itoa(n)+`}`, e.data)
		}
	}
	// a's follower: b's first notification opened its chain, so each of a's
	// events came after one it had read. b's: its first event was the first
	// notification, read.
	assert.Equal(t, uint64(rounds), a.events.fromMemory.Load(), "a's own events from memory")
	assert.Equal(t, uint64(rounds-1), b.events.fromMemory.Load(), "b's own events after the first from memory")
}

// TestEventLogFollowerReadsWhatItDoesNotKeep: a group too large to keep is
// read from the table, and the chain carries on after it.
func TestEventLogFollowerReadsWhatItDoesNotKeep(t *testing.T) {
	db := openTest(t)
	l := db.events
	c := follow(t, l, 0)
	appendSeen(t, l, `{"i":0}`, c)
	big := `{"big":"` + strings.Repeat("x", localMaxBytes) + `"}`
	appendSeen(t, l, big, c)
	appendSeen(t, l, `{"i":2}`, c)
	got := c.waitFor(t, 3)
	assert.Equal(t, big, got[1].data)
	assert.Equal(t, `{"i":2}`, got[2].data)
	assert.Equal(t, uint64(1), l.fromMemory.Load(), "the last event from memory, the large one read")
}

// TestEventLogKeepsNothingWithoutFollower: an EventLog that no Follow call
// reads keeps nothing of its appends in memory.
func TestEventLogKeepsNothingWithoutFollower(t *testing.T) {
	db := openTest(t)
	l := db.events
	kept := func() (uint64, int) {
		l.local.mu.Lock()
		defer l.local.mu.Unlock()
		return l.local.next, l.local.bytes
	}
	appendN(t, l, "alone", 3)
	n, size := kept()
	assert.Zero(t, n)
	assert.Zero(t, size)
	c := follow(t, l, 0)
	appendSeen(t, l, `{"i":3}`, c)
	n, _ = kept()
	assert.Equal(t, uint64(1), n, "kept once a follower runs")
	assert.Len(t, c.waitFor(t, 4), 4)
}

func TestLocalGroupsKeep(t *testing.T) {
	g := newLocalGroups()
	data := []byte(`{"n":1}`)
	token, suffix := g.keep([]*appendCall{{name: "a", data: data}, {name: "b", data: nil}})
	require.NotZero(t, token)
	assert.Equal(t, " "+g.origin+":"+strconv.FormatUint(token, 10), suffix)
	copy(data, `{"n":2}`) // the caller's buffer, reused
	names, datas, ok := g.lookup(token)
	require.True(t, ok)
	assert.Equal(t, []string{"a", "b"}, names)
	assert.Equal(t, `{"n":1}`, string(datas[0]), "kept a copy")
	assert.Empty(t, datas[1])
	assert.Equal(t, 1+len(data)+1, g.bytes)

	g.drop(token)
	_, _, ok = g.lookup(token)
	assert.False(t, ok, "a dropped group is gone")
	assert.Zero(t, g.bytes)
	_, _, ok = g.lookup(0)
	assert.False(t, ok)

	// The ring keeps the latest localSlots groups.
	first, _ := g.keep([]*appendCall{{name: "x", data: []byte("1")}})
	for range localSlots {
		g.keep([]*appendCall{{name: "x", data: []byte("2")}})
	}
	_, _, ok = g.lookup(first)
	assert.False(t, ok, "overwritten by a later group")
	assert.Equal(t, localSlots*2, g.bytes)

	// A group larger than the bound is not kept.
	token, suffix = g.keep([]*appendCall{{name: "x", data: bytes.Repeat([]byte("y"), localMaxBytes)}})
	assert.Zero(t, token)
	assert.Empty(t, suffix)
	assert.Equal(t, localSlots*2, g.bytes, "nothing kept, nothing evicted")

	assert.NotEqual(t, g.origin, newLocalGroups().origin, "each EventLog has its own origin")
}

func TestParseNotification(t *testing.T) {
	tests := []struct {
		payload string
		want    notification
		ok      bool
	}{
		{"42", notification{last: 42}, true},
		{"42 o1:7", notification{last: 42, origin: "o1", token: 7}, true},
		{"42 o1:0", notification{last: 42}, true},
		{"42 :7", notification{last: 42}, true},
		{"42 o1", notification{last: 42}, true},
		{"42 o1:x", notification{last: 42}, true},
		{"42 o1:-1", notification{last: 42}, true},
		{"", notification{}, false},
		{"x", notification{}, false},
		{"-1 o:1", notification{}, false},
		{" 42", notification{}, false},
		{"18446744073709551616", notification{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.payload, func(t *testing.T) {
			got, ok := parseNotification(tt.payload)
			assert.Equal(t, tt.ok, ok)
			assert.Equal(t, tt.want, got)
		})
	}
}

// FuzzParseNotification: a payload parses to the id before its first space
// and, for the form the appends send, back to that payload.
func FuzzParseNotification(f *testing.F) {
	for _, s := range []string{"42", "42 o1:7", "", "x y:z", "1 a:b:c", "9 :"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, payload string) {
		n, ok := parseNotification(payload)
		idText, _, _ := strings.Cut(payload, " ")
		id, err := strconv.ParseUint(idText, 10, 64)
		require.Equal(t, err == nil, ok)
		if !ok {
			require.Equal(t, notification{}, n)
			return
		}
		require.Equal(t, id, n.last)
		if n.token == 0 {
			require.Empty(t, n.origin)
			return
		}
		origin, tokenText, found := strings.Cut(payload[len(idText)+1:], ":")
		require.True(t, found)
		require.NotEmpty(t, origin)
		require.Equal(t, origin, n.origin)
		token, err := strconv.ParseUint(tokenText, 10, 64)
		require.NoError(t, err)
		require.Equal(t, token, n.token)
	})
}

// TestEventLogFollowersUnderConcurrentAppends: two instances, one with two
// followers (two servers sharing a DB), append concurrently; every follower
// delivers every event once, in id order, with the payload appended under
// its id, and the followers took events both from memory and from the
// table.
func TestEventLogFollowersUnderConcurrentAppends(t *testing.T) {
	url, schema := testURL(t), testSchema(t)
	a, b := openSchema(t, url, schema), openSchema(t, url, schema)
	cs := []*collector{follow(t, a.events, 0), follow(t, a.events, 0), follow(t, b.events, 0)}
	const writers, each = 8, 40
	var mu sync.Mutex
	appended := map[uint64]string{}
	var wg sync.WaitGroup
	for w := range writers {
		l := a.events
		if w%2 == 1 {
			l = b.events
		}
		wg.Go(func() {
			for i := range each {
				data := `{"w":` + strconv.Itoa(w) + `,"i":` + strconv.Itoa(i) + `}`
				id, err := l.Append(t.Context(), "test.event", []byte(data))
				if !assert.NoError(t, err) {
					return
				}
				mu.Lock()
				appended[id] = data
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	require.Len(t, appended, writers*each)
	for i, c := range cs {
		got := c.waitFor(t, writers*each)
		requireIncreasing(t, got)
		for _, e := range got {
			require.Equal(t, appended[e.id], e.data, "follower %d: event %d", i, e.id)
		}
	}
	t.Logf("from memory: %d, %d; reads: %d, %d", a.events.fromMemory.Load(), b.events.fromMemory.Load(), a.events.reads.Load(), b.events.reads.Load())
	assert.NotZero(t, a.events.fromMemory.Load()+b.events.fromMemory.Load(), "some events from memory")
	assert.NotZero(t, a.events.reads.Load()+b.events.reads.Load(), "some read from the table")
}
