package storetest

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/store"
)

// eventWait bounds the wait for a follower to catch up or receive events.
const eventWait = 20 * time.Second

// OpenEventLog opens one instance's view of an event log: each call is
// another instance sharing the log, or the same instance after a restart.
// closeLog ends that instance (for a database, it closes its connections);
// the suite calls it at the latest when the subtest ends, and calls nothing
// of log afterwards.
type OpenEventLog func(t *testing.T) (log store.EventLog, closeLog func())

// RunEventLog runs the conformance suite of [store.EventLog] as subtests of t:
// the order of ids and deliveries, ids that keep increasing across restarts,
// resuming after an id, ids no event has, and concurrent appends from several
// instances seen in the same order by every follower. fresh is called once
// per subtest and returns the opener of a new, empty log that no other
// subtest uses. The subtests run one after another.
//
//	func TestEventLogConformance(t *testing.T) {
//		storetest.RunEventLog(t, func(t *testing.T) storetest.OpenEventLog {
//			schema := newSchema(t) // a new, empty log
//			return func(t *testing.T) (store.EventLog, func()) {
//				db := openDB(t, schema)
//				return db.EventLog(), db.Close
//			}
//		})
//	}
func RunEventLog(t *testing.T, fresh func(t *testing.T) OpenEventLog) {
	t.Helper()
	tests := []struct {
		name string
		run  func(t *testing.T, open OpenEventLog)
	}{
		{"Order", testEventOrder},
		{"BinaryNamesAndData", testEventBinary},
		{"Resume", testEventResume},
		{"UnknownIDs", testEventUnknownIDs},
		{"IDsAcrossRestarts", testEventRestart},
		{"ConcurrentAppends", testEventConcurrent},
		{"ContextDone", testEventContextDone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			open := fresh(t)
			require.NotNil(t, open, "fresh returned a nil opener")
			tt.run(t, func(t *testing.T) (store.EventLog, func()) {
				l, closeLog := open(t)
				require.NotNil(t, l, "open returned a nil event log")
				var once sync.Once
				closeOnce := func() { once.Do(closeLog) }
				t.Cleanup(closeOnce)
				return l, closeOnce
			})
		})
	}
}

// event is one delivered event.
type event struct {
	id   uint64
	name string
	data string
}

// follower records what one Follow call delivers.
type follower struct {
	mu     sync.Mutex
	events []event
	ready  chan struct{}
	stop   func()
}

// follow runs Follow after after in the background until stop (or the end of
// the test), and waits until it has caught up.
func follow(t *testing.T, l store.EventLog, after uint64) *follower {
	t.Helper()
	f := &follower{ready: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var caught sync.Once
	go func() {
		done <- l.Follow(ctx, after, func(id uint64, name string, data []byte) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.events = append(f.events, event{id, name, string(data)})
		}, func() {
			ok := false
			caught.Do(func() { ok = true })
			assert.True(t, ok, "caughtUp called twice")
			if ok {
				close(f.ready)
			}
		})
	}()
	var stopOnce sync.Once
	f.stop = func() {
		stopOnce.Do(func() {
			cancel()
			select {
			case err := <-done:
				assert.ErrorIs(t, err, context.Canceled, "Follow returns ctx.Err() once ctx is done")
			case <-time.After(eventWait):
				t.Error("Follow did not return once its context was cancelled")
			}
		})
	}
	t.Cleanup(f.stop)
	select {
	case <-f.ready:
	case <-time.After(eventWait):
		t.Fatal("Follow did not call caughtUp")
	}
	return f
}

func (f *follower) snapshot() []event {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]event(nil), f.events...)
}

// waitFor waits until the follower holds n events and returns them; it fails
// when it gets more.
func (f *follower) waitFor(t *testing.T, n int) []event {
	t.Helper()
	require.Eventually(t, func() bool { return len(f.snapshot()) >= n }, eventWait, 2*time.Millisecond,
		"want %d events, have %d", n, len(f.snapshot()))
	got := f.snapshot()
	require.Len(t, got, n, "more events than appended")
	return got
}

// appendN appends n events named test.event with data prefix0..prefix(n-1).
func appendN(t *testing.T, l store.EventLog, prefix string, n int) []event {
	t.Helper()
	out := make([]event, n)
	for i := range n {
		data := prefix + strconv.Itoa(i)
		id, err := l.Append(t.Context(), "test.event", []byte(data))
		require.NoError(t, err)
		out[i] = event{id, "test.event", data}
	}
	return out
}

func requireIncreasing(t *testing.T, events []event) {
	t.Helper()
	for i := 1; i < len(events); i++ {
		require.Greater(t, events[i].id, events[i-1].id, "event %d (%s) after %s", i, events[i].data, events[i-1].data)
	}
}

// testEventOrder: ids increase; Follow(0) delivers the backlog in order before
// caughtUp, then every later event, in order, once.
func testEventOrder(t *testing.T, open OpenEventLog) {
	l, _ := open(t)
	backlog := appendN(t, l, "a", 3)
	requireIncreasing(t, backlog)
	f := follow(t, l, 0)
	assert.Equal(t, backlog, f.snapshot(), "the backlog is delivered before caughtUp")
	later := appendN(t, l, "b", 3)
	requireIncreasing(t, append(append([]event(nil), backlog...), later...))
	assert.Equal(t, append(backlog, later...), f.waitFor(t, 6))
	time.Sleep(20 * time.Millisecond)
	assert.Len(t, f.snapshot(), 6, "an event delivered twice")
}

// testEventBinary: names and data are arbitrary bytes, empty data included.
func testEventBinary(t *testing.T, open OpenEventLog) {
	l, _ := open(t)
	f := follow(t, l, 0)
	cases := []event{{name: "é\x00", data: "\x00\xff"}, {name: "test.empty", data: ""}, {name: "n", data: `{"a":[1,"\u2028"]}`}}
	for i, c := range cases {
		id, err := l.Append(t.Context(), c.name, []byte(c.data))
		require.NoError(t, err)
		cases[i].id = id
	}
	assert.Equal(t, cases, f.waitFor(t, len(cases)))
}

// testEventResume: Follow after an id delivers only the events above it, the
// retained ones first; a follower on another instance resumes the same way.
func testEventResume(t *testing.T, open OpenEventLog) {
	l, _ := open(t)
	all := appendN(t, l, "a", 4)
	f := follow(t, l, all[1].id)
	assert.Equal(t, all[2:], f.snapshot())
	other, _ := open(t)
	g := follow(t, other, all[2].id)
	assert.Equal(t, all[3:], g.snapshot(), "resuming on another instance")
	later := appendN(t, other, "b", 2)
	assert.Equal(t, append(all[2:4:4], later...), f.waitFor(t, 4))
	assert.Equal(t, append(all[3:4:4], later...), g.waitFor(t, 3))
	last := f.snapshot()[3]
	f.stop()
	resumed := follow(t, l, last.id)
	assert.Empty(t, resumed.snapshot(), "nothing after the last event")
}

// testEventUnknownIDs: an after that no event has is no error: below every id
// (the events above it), inside a gap between two ids (the events above it),
// beyond every id (nothing, caughtUp all the same).
func testEventUnknownIDs(t *testing.T, open OpenEventLog) {
	l, _ := open(t)
	all := appendN(t, l, "a", 3)
	below := follow(t, l, all[0].id-1)
	assert.Equal(t, all, below.snapshot(), "after an id below every event")
	if all[2].id-all[1].id > 1 {
		gap := follow(t, l, all[1].id+1)
		assert.Equal(t, all[2:], gap.snapshot(), "after an id between two events")
	}
	beyond := follow(t, l, math.MaxInt64)
	assert.Empty(t, beyond.snapshot(), "after an id beyond every event")
	appendN(t, l, "b", 1)
	assert.Len(t, below.waitFor(t, 4), 4)
	time.Sleep(20 * time.Millisecond)
	assert.Empty(t, beyond.snapshot(), "an event whose id is below after")
}

// testEventRestart: when every instance has stopped, a new one appends ids
// above the earlier ones and delivers the events retained before.
func testEventRestart(t *testing.T, open OpenEventLog) {
	l, closeLog := open(t)
	before := appendN(t, l, "a", 2)
	closeLog()
	l, closeLog = open(t)
	after := appendN(t, l, "b", 1)
	assert.Greater(t, after[0].id, before[1].id, "ids keep increasing across a restart")
	closeLog()
	l, _ = open(t)
	assert.Equal(t, append(before, after...), follow(t, l, 0).snapshot(), "the events retained across restarts")
}

// testEventConcurrent: three instances append at once; a follower on each
// receives every event once, in id order: the same sequence everywhere, with
// the ids Append returned.
func testEventConcurrent(t *testing.T, open OpenEventLog) {
	const instances, writers, perWriter = 3, 6, 30
	var logs [instances]store.EventLog
	var fs [instances]*follower
	for i := range logs {
		logs[i], _ = open(t)
		fs[i] = follow(t, logs[i], 0)
	}
	var mu sync.Mutex
	appended := map[string]uint64{}
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range perWriter {
				data := fmt.Sprintf("w%d-%d", w, i)
				id, err := logs[w%instances].Append(context.Background(), "test.event", []byte(data))
				if !assert.NoError(t, err) {
					return
				}
				mu.Lock()
				appended[data] = id
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	require.Len(t, appended, writers*perWriter, "appends failed")
	first := fs[0].waitFor(t, writers*perWriter)
	requireIncreasing(t, first)
	for _, e := range first {
		assert.Equal(t, appended[e.data], e.id, "the id Append returned for %s", e.data)
	}
	for i := 1; i < instances; i++ {
		assert.Equal(t, first, fs[i].waitFor(t, writers*perWriter), "follower of instance %d", i)
	}
}

// testEventContextDone: Append with a done context fails and appends nothing;
// Follow with a done context returns ctx.Err().
func testEventContextDone(t *testing.T, open OpenEventLog) {
	l, _ := open(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := l.Append(ctx, "test.event", []byte("cancelled"))
	require.Error(t, err)
	done := make(chan error, 1)
	go func() { done <- l.Follow(ctx, 0, func(uint64, string, []byte) {}, nil) }()
	select {
	case err := <-done:
		assert.ErrorIs(t, err, context.Canceled)
	case <-time.After(eventWait):
		t.Fatal("Follow with a done context did not return")
	}
	kept := appendN(t, l, "a", 1)
	assert.Equal(t, kept, follow(t, l, 0).snapshot(), "the cancelled append left an event")
}
