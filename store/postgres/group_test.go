package postgres

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// holdQueue makes the next Get (gets) or PutIfAbsent (puts) queue behind a
// run that waits for the returned release function: the calls made
// meanwhile form one group.
func holdQueue(t *testing.T, s *Store, puts bool) (release func()) {
	t.Helper()
	gate, started, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		if puts {
			_ = s.puts.Do(context.Background(), &putCall{ctx: context.Background(), key: "held", value: []byte("v")}, func(context.Context, []*putCall) {
				close(started)
				<-gate
			})
			return
		}
		_ = s.gets.Do(context.Background(), &getCall{ctx: context.Background(), key: "held"}, func(context.Context, []*getCall) {
			close(started)
			<-gate
		})
	}()
	<-started
	return func() { close(gate); <-done }
}

// queued waits until n calls wait in the queue of gets or puts.
func queued(t *testing.T, s *Store, puts bool, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		if puts {
			return s.puts.Queued() == n
		}
		return s.gets.Queued() == n
	}, 5*time.Second, time.Millisecond, "%d calls queued", n)
}

// TestGetsInOneGroup: Gets queued behind one in progress read all their keys
// in one statement, each its own value (a key read twice gets a copy each),
// and a missing key is not found.
func TestGetsInOneGroup(t *testing.T) {
	db := openTest(t)
	s := db.store
	ctx := t.Context()
	for _, k := range []string{"a", "b", "empty"} {
		v := []byte("value of " + k)
		if k == "empty" {
			v = []byte{}
		}
		_, ok, err := s.PutIfAbsent(ctx, k, v)
		require.NoError(t, err)
		require.True(t, ok)
	}
	type got struct {
		value []byte
		found bool
		err   error
	}
	keys := []string{"a", "b", "a", "missing", "empty"}
	results := make([]got, len(keys))
	release := holdQueue(t, s, false)
	var wg sync.WaitGroup
	for i, k := range keys {
		wg.Go(func() {
			v, ok, err := s.Get(ctx, k)
			results[i] = got{v, ok, err}
		})
		queued(t, s, false, i+1)
	}
	release()
	wg.Wait()

	assert.Equal(t, uint64(1), s.getGroups.Load(), "one statement for the five")
	for i, k := range keys {
		r := results[i]
		require.NoError(t, r.err, k)
		switch k {
		case "missing":
			assert.False(t, r.found, k)
			assert.Nil(t, r.value, k)
		case "empty":
			assert.True(t, r.found, k)
			assert.NotNil(t, r.value, "an empty value is found, not nil")
			assert.Empty(t, r.value)
		default:
			assert.True(t, r.found, k)
			assert.Equal(t, "value of "+k, string(r.value), k)
		}
	}
	results[0].value[0] = 'X'
	assert.Equal(t, "value of a", string(results[2].value), "each Get of a key owns its value")
}

// TestPutsInOneGroup: PutIfAbsent calls queued behind one in progress write
// in one statement: a new key is stored, an existing one is found, and of
// two calls for the same new key the first stores and the second finds its
// value.
func TestPutsInOneGroup(t *testing.T) {
	db := openTest(t)
	s := db.store
	ctx := t.Context()
	_, ok, err := s.PutIfAbsent(ctx, "old", []byte("old value"))
	require.NoError(t, err)
	require.True(t, ok)

	type put struct{ key, value string }
	type got struct {
		existing []byte
		stored   bool
		err      error
	}
	puts := []put{{"new", "first"}, {"old", "ignored"}, {"new", "second"}, {"other", "o"}, {"new", "third"}}
	results := make([]got, len(puts))
	release := holdQueue(t, s, true)
	var wg sync.WaitGroup
	for i, p := range puts {
		wg.Go(func() {
			existing, stored, err := s.PutIfAbsent(ctx, p.key, []byte(p.value))
			results[i] = got{existing, stored, err}
		})
		queued(t, s, true, i+1)
	}
	release()
	wg.Wait()

	assert.Equal(t, uint64(1), s.putGroups.Load(), "one statement for the five")
	want := []got{{nil, true, nil}, {[]byte("old value"), false, nil}, {[]byte("first"), false, nil}, {nil, true, nil}, {[]byte("first"), false, nil}}
	assert.Equal(t, want, results)
	results[2].existing[0] = 'X'
	assert.Equal(t, "first", string(results[4].existing), "each call owns the value it found")
	for k, v := range map[string]string{"new": "first", "old": "old value", "other": "o"} {
		got, found, err := s.Get(ctx, k)
		require.NoError(t, err)
		require.True(t, found, k)
		assert.Equal(t, v, string(got), k)
	}
}

// TestGroupLeaderGivesUp: when the statement of a group fails because the
// context of the call leading it ended, the other calls of the group are not
// failed: each reads or writes again alone, under its own context.
func TestGroupLeaderGivesUp(t *testing.T) {
	db := openTest(t)
	s := db.store
	ctx := t.Context()
	_, _, err := s.PutIfAbsent(ctx, "k", []byte("v"))
	require.NoError(t, err)
	ended, cancel := context.WithCancel(context.Background())
	cancel()

	t.Run("get", func(t *testing.T) {
		release := holdQueue(t, s, false)
		leader := &getCall{ctx: ctx, key: "k"}
		leaderDone := make(chan struct{})
		go func() {
			defer close(leaderDone)
			_ = s.gets.Do(ctx, leader, func(_ context.Context, calls []*getCall) { s.getGroup(ended, calls) })
		}()
		queued(t, s, false, 1)
		var (
			v     []byte
			found bool
			gerr  error
		)
		done := make(chan struct{})
		go func() { defer close(done); v, found, gerr = s.Get(ctx, "k") }()
		queued(t, s, false, 2)
		release()
		<-leaderDone
		<-done
		require.Error(t, leader.err, "the leader's statement ran under an ended context")
		assert.True(t, leader.retry)
		require.NoError(t, gerr, "the other Get read again alone")
		assert.True(t, found)
		assert.Equal(t, "v", string(v))
	})

	t.Run("put", func(t *testing.T) {
		release := holdQueue(t, s, true)
		leader := &putCall{ctx: ctx, key: "lead", value: []byte("l")}
		leaderDone := make(chan struct{})
		go func() {
			defer close(leaderDone)
			_ = s.puts.Do(ctx, leader, func(_ context.Context, calls []*putCall) { s.putGroup(ended, calls) })
		}()
		queued(t, s, true, 1)
		var (
			stored bool
			perr   error
		)
		done := make(chan struct{})
		go func() { defer close(done); _, stored, perr = s.PutIfAbsent(ctx, "mine", []byte("m")) }()
		queued(t, s, true, 2)
		release()
		<-leaderDone
		<-done
		require.Error(t, leader.err)
		assert.True(t, leader.retry)
		require.NoError(t, perr, "the other put wrote again alone")
		assert.True(t, stored)
		_, found, err := s.Get(ctx, "lead")
		require.NoError(t, err)
		assert.False(t, found, "the failed group wrote nothing")
	})
}

// TestConcurrentCallsGroup: many goroutines getting and putting shared and
// own keys through one DB form groups, and every call has the outcome it
// would have alone: one store per key, every caller sees the stored value,
// every Get the value of its key.
func TestConcurrentCallsGroup(t *testing.T) {
	db := openTest(t)
	s := db.store
	ctx := t.Context()
	const workers, keys = 16, 40
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		stored = map[string]string{}
		seen   = map[string]map[string]bool{}
	)
	for w := range workers {
		wg.Go(func() {
			for k := range keys {
				key := fmt.Sprintf("shared/%d", k)
				val := fmt.Sprintf("worker %d", w)
				existing, ok, err := s.PutIfAbsent(ctx, key, []byte(val))
				if !assert.NoError(t, err) {
					return
				}
				got, found, err := s.Get(ctx, key)
				if !assert.NoError(t, err) || !assert.True(t, found, key) {
					return
				}
				_, missing, err := s.Get(ctx, fmt.Sprintf("missing/%d/%d", w, k))
				assert.NoError(t, err)
				assert.False(t, missing)
				mu.Lock()
				if seen[key] == nil {
					seen[key] = map[string]bool{}
				}
				if ok {
					assert.Empty(t, stored[key], "%s stored twice", key)
					stored[key] = val
					seen[key][val] = true
				} else {
					seen[key][string(existing)] = true
				}
				seen[key][string(got)] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for k := range keys {
		key := fmt.Sprintf("shared/%d", k)
		require.NotEmpty(t, stored[key], key)
		assert.Equal(t, map[string]bool{stored[key]: true}, seen[key], "%s: every caller sees the one stored value", key)
	}
	assert.NotZero(t, s.getGroups.Load(), "concurrent Gets were grouped")
	assert.NotZero(t, s.putGroups.Load(), "concurrent puts were grouped")
}

// TestGroupsSplitIntoStatements: a group beyond maxGroupKeys keys, or
// maxGroupBytes of values, runs as several statements, each call with its
// own outcome; a value larger than maxGroupBytes goes alone.
func TestGroupsSplitIntoStatements(t *testing.T) {
	db := openTest(t)
	s := db.store
	ctx := t.Context()
	savedKeys, savedBytes := maxGroupKeys, maxGroupBytes
	t.Cleanup(func() { maxGroupKeys, maxGroupBytes = savedKeys, savedBytes })
	maxGroupKeys, maxGroupBytes = 2, 10

	// Puts: a, b (one statement: 2 keys), big (alone: 11 bytes), c, a again
	// (c alone: the duplicate of a finds its value, written earlier in the group).
	puts := []struct{ key, value string }{{"a", "1"}, {"b", "2"}, {"big", "0123456789X"}, {"c", "3"}, {"a", "again"}}
	type put struct {
		existing string
		stored   bool
		err      error
	}
	gotPuts := make([]put, len(puts))
	release := holdQueue(t, s, true)
	var wg sync.WaitGroup
	for i, p := range puts {
		wg.Go(func() {
			existing, stored, err := s.PutIfAbsent(ctx, p.key, []byte(p.value))
			gotPuts[i] = put{string(existing), stored, err}
		})
		queued(t, s, true, i+1)
	}
	release()
	wg.Wait()
	assert.Equal(t, []put{{"", true, nil}, {"", true, nil}, {"", true, nil}, {"", true, nil}, {"1", false, nil}}, gotPuts)
	assert.Equal(t, uint64(1), s.putGroups.Load(), "a and b in one statement; big and c each alone")

	// Gets: five keys, at most two a statement.
	getKeys := []string{"a", "b", "big", "c", "missing"}
	gotGets := make([]string, len(getKeys))
	release = holdQueue(t, s, false)
	for i, k := range getKeys {
		wg.Go(func() {
			v, found, err := s.Get(ctx, k)
			assert.NoError(t, err)
			gotGets[i] = fmt.Sprint(found, ":", string(v))
		})
		queued(t, s, false, i+1)
	}
	release()
	wg.Wait()
	assert.Equal(t, []string{"true:1", "true:2", "true:0123456789X", "true:3", "false:"}, gotGets)
	assert.Equal(t, uint64(2), s.getGroups.Load(), "{a, b}, {big, c}, then missing alone")
}

// TestGroupLeavesOutCallsGivenUp: a PutIfAbsent whose caller gave up while it
// waited for its group returns the context's error and writes nothing, and
// a call whose context ended before its group ran never reads as "not
// found".
func TestGroupLeavesOutCallsGivenUp(t *testing.T) {
	db := openTest(t)
	s := db.store
	ctx := t.Context()

	release := holdQueue(t, s, true)
	gone, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() { _, _, err := s.PutIfAbsent(gone, "gone", []byte("v")); errc <- err }()
	queued(t, s, true, 1)
	var stored bool
	var perr error
	done := make(chan struct{})
	go func() { defer close(done); _, stored, perr = s.PutIfAbsent(ctx, "kept", []byte("k")) }()
	queued(t, s, true, 2)
	cancel()
	require.ErrorIs(t, <-errc, context.Canceled)
	release()
	<-done
	require.NoError(t, perr)
	assert.True(t, stored)
	_, found, err := s.Get(ctx, "gone")
	require.NoError(t, err)
	assert.False(t, found, "nothing is written for a call given up before its group ran")

	// A call that leads its own group with a context that ended meanwhile.
	ended, cancelEnded := context.WithCancel(ctx)
	cancelEnded()
	call := &getCall{ctx: ended, key: "kept"}
	s.getGroup(context.WithoutCancel(ended), []*getCall{call})
	assert.ErrorIs(t, call.err, context.Canceled)
	assert.False(t, call.found)
	put := &putCall{ctx: ended, key: "other", value: []byte("o")}
	s.putGroup(context.WithoutCancel(ended), []*putCall{put})
	assert.ErrorIs(t, put.err, context.Canceled)
	assert.False(t, put.stored)
}

// TestEventLogGroupLeaderGivesUp: when a group's statement fails because the
// context of the append leading it ended, the other appends of the group
// run again alone and commit their events.
func TestEventLogGroupLeaderGivesUp(t *testing.T) {
	db := openTest(t)
	l := db.EventLog().(*EventLog)
	ctx := t.Context()
	ended, cancel := context.WithCancel(context.Background())
	cancel()

	gate, started, held := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(held)
		_ = l.appends.Do(ctx, &appendCall{name: "held"}, func(context.Context, []*appendCall) { close(started); <-gate })
	}()
	<-started
	leader := &appendCall{name: "test.leader", data: []byte(`{}`)}
	leaderDone := make(chan struct{})
	go func() {
		defer close(leaderDone)
		_ = l.appends.Do(ctx, leader, func(_ context.Context, calls []*appendCall) { l.appendGroup(ended, calls) })
	}()
	require.Eventually(t, func() bool { return l.appends.Queued() == 1 }, 5*time.Second, time.Millisecond)
	var (
		id   uint64
		aerr error
	)
	done := make(chan struct{})
	go func() { defer close(done); id, aerr = l.Append(ctx, "test.member", []byte(`{"n":1}`)) }()
	require.Eventually(t, func() bool { return l.appends.Queued() == 2 }, 5*time.Second, time.Millisecond)
	close(gate)
	<-held
	<-leaderDone
	<-done
	require.Error(t, leader.err, "the leader's statement ran under an ended context")
	assert.True(t, leader.retry)
	require.NoError(t, aerr, "the other append ran again alone")
	assert.NotZero(t, id)
	c := follow(t, l, id-1)
	got := c.waitFor(t, 1)
	assert.Equal(t, id, got[0].id)
	assert.JSONEq(t, `{"n":1}`, got[0].data)
}

// TestLargePutRunsBesideGroups: a put whose value is larger than
// maxGroupedValue does not queue behind the put in progress: it runs alone,
// beside the groups.
func TestLargePutRunsBesideGroups(t *testing.T) {
	db := openTest(t)
	s := db.store
	ctx := t.Context()
	saved := maxGroupedValue
	t.Cleanup(func() { maxGroupedValue = saved })
	maxGroupedValue = 8

	release := holdQueue(t, s, true)
	defer release()
	// Queued, the put would wait for release: its deadline would end it.
	putCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, stored, err := s.PutIfAbsent(putCtx, "large", []byte("more than eight bytes"))
	require.NoError(t, err, "put while another put's group is in progress")
	assert.True(t, stored)
	assert.Zero(t, s.puts.Queued())
	got, found, err := s.Get(ctx, "large")
	require.NoError(t, err)
	require.True(t, found)
	assert.Equal(t, "more than eight bytes", string(got))
}
