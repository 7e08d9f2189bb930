// Package storetest checks that an implementation of [store.Store] honours
// the contract documented on that interface. Run it from the implementation's
// tests:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store {
//			return store.NewMemory() // yours: a new, empty store that no other subtest uses
//		})
//	}
//
// An implementation of [store.EventLog] runs [RunEventLog] the same way.
package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/store"
)

// hangTimeout bounds calls that would hang if the store deadlocked.
const hangTimeout = 10 * time.Second

// Run runs the conformance suite as subtests of t. open is called once per
// subtest and must return a new, empty store that no other subtest uses; Run
// closes it when the subtest ends (a second Close returning store.ErrClosed is
// expected). The subtests run one after another.
//
// The WriteAtomic subtests go through [store.WriteAtomic]: a store that
// implements [store.Atomic] must apply all the ops or none, also under
// concurrency; one that does not gets the fallback, whose first op decides.
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	t.Helper()
	tests := []struct {
		name string
		run  func(t *testing.T, s store.Store)
	}{
		{"GetMissing", testGetMissing},
		{"PutIfAbsent", testPutIfAbsent},
		{"EmptyValue", testEmptyValue},
		{"CompareAndSwap", testCompareAndSwap},
		{"Delete", testDelete},
		{"InvalidKey", testInvalidKey},
		{"BinaryKeysAndValues", testBinaryKeysAndValues},
		{"CopySemantics", testCopySemantics},
		{"ScanOrder", testScanOrder},
		{"ScanStops", testScanStops},
		{"ScanReentrant", testScanReentrant},
		{"KeyHelpers", testKeyHelpers},
		{"ContextDone", testContextDone},
		{"ScanContextCancelled", testScanContextCancelled},
		{"Closed", testClosed},
		{"ConcurrentPutIfAbsent", testConcurrentPutIfAbsent},
		{"ConcurrentCounter", testConcurrentCounter},
		{"ConcurrentCompareAndSwap", testConcurrentCompareAndSwap},
		{"ConcurrentMixed", testConcurrentMixed},
		{"ConcurrentWriters", testConcurrentWriters},
		{"WriteAtomic", testWriteAtomic},
		{"WriteAtomicDoneOrClosed", testWriteAtomicDoneOrClosed},
		{"WriteAtomicRace", testWriteAtomicRace},
		{"WriteAtomicAllOrNothing", testWriteAtomicAllOrNothing},
		{"WriteAtomicTransfers", testWriteAtomicTransfers},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := open(t)
			require.NotNil(t, s, "open returned a nil store")
			t.Cleanup(func() {
				if err := s.Close(); err != nil && !errors.Is(err, store.ErrClosed) {
					t.Errorf("Close: %v", err)
				}
			})
			tt.run(t, s)
		})
	}
}

// put stores value under a key that must be absent.
func put(t *testing.T, s store.Store, key string, value []byte) {
	t.Helper()
	_, stored, err := s.PutIfAbsent(t.Context(), key, value)
	require.NoError(t, err)
	require.True(t, stored, "key %q already exists", key)
}

// get returns the value of a key that must exist.
func get(t *testing.T, s store.Store, key string) []byte {
	t.Helper()
	v, found, err := s.Get(t.Context(), key)
	require.NoError(t, err)
	require.True(t, found, "key %q not found", key)
	return v
}

// requireMissing checks that key does not exist.
func requireMissing(t *testing.T, s store.Store, key string) {
	t.Helper()
	v, found, err := s.Get(t.Context(), key)
	require.NoError(t, err)
	require.False(t, found, "key %q exists", key)
	require.Nil(t, v)
}

type kv struct {
	Key   string
	Value string
}

// scanAll returns what Scan visits under prefix, in order.
func scanAll(t *testing.T, s store.Store, prefix string) []kv {
	t.Helper()
	var got []kv
	err := s.Scan(t.Context(), prefix, func(k string, v []byte) error {
		got = append(got, kv{k, string(v)})
		return nil
	})
	require.NoError(t, err)
	return got
}

// noHang runs f and fails the test if it does not return in time.
// f must report failures with assert, not require.
func noHang(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(hangTimeout):
		t.Fatalf("%s did not return within %v: deadlock?", what, hangTimeout)
	}
}

// together runs f(0) … f(n-1) in n goroutines released at the same moment,
// and fails the test (what names the race) when they do not all return
// within hangTimeout.
func together(t *testing.T, n int, what string, f func(i int)) {
	t.Helper()
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			f(i)
		})
	}
	noHang(t, what, func() {
		close(start)
		wg.Wait()
	})
}

func testGetMissing(t *testing.T, s store.Store) {
	requireMissing(t, s, "missing")
	put(t, s, "a", []byte("1"))
	requireMissing(t, s, "missing")
	requireMissing(t, s, "a/") // a longer key is another key
	requireMissing(t, s, "A")
}

func testPutIfAbsent(t *testing.T, s store.Store) {
	ctx := t.Context()
	existing, stored, err := s.PutIfAbsent(ctx, "k", []byte("first"))
	require.NoError(t, err)
	assert.True(t, stored)
	assert.Nil(t, existing)
	assert.Equal(t, []byte("first"), get(t, s, "k"))

	existing, stored, err = s.PutIfAbsent(ctx, "k", []byte("second"))
	require.NoError(t, err)
	assert.False(t, stored)
	assert.Equal(t, []byte("first"), existing)
	assert.Equal(t, []byte("first"), get(t, s, "k"))

	put(t, s, "k2", []byte("other"))
	assert.Equal(t, []byte("first"), get(t, s, "k"))
	assert.Equal(t, []byte("other"), get(t, s, "k2"))
}

func testEmptyValue(t *testing.T, s store.Store) {
	ctx := t.Context()
	put(t, s, "nil", nil)
	put(t, s, "empty", []byte{})
	for _, k := range []string{"nil", "empty"} {
		assert.Empty(t, get(t, s, k), k)
		existing, stored, err := s.PutIfAbsent(ctx, k, []byte("x"))
		require.NoError(t, err)
		assert.False(t, stored, "an empty value is a value: %s", k)
		assert.Empty(t, existing, k)
	}
	swapped, err := s.CompareAndSwap(ctx, "nil", []byte{}, []byte("x"))
	require.NoError(t, err)
	assert.True(t, swapped, "an empty old matches an empty value")
	swapped, err = s.CompareAndSwap(ctx, "empty", nil, []byte("y"))
	require.NoError(t, err)
	assert.True(t, swapped, "a nil old matches an empty value")
	swapped, err = s.CompareAndSwap(ctx, "empty", []byte("y"), nil)
	require.NoError(t, err)
	assert.True(t, swapped)
	assert.Empty(t, get(t, s, "empty"), "swapped to an empty value")
	assert.Equal(t, []kv{{"empty", ""}, {"nil", "x"}}, scanAll(t, s, ""))
}

func testCompareAndSwap(t *testing.T, s store.Store) {
	tests := []struct {
		name        string
		current     []byte // nil: the key does not exist
		old, new    []byte
		wantSwapped bool
	}{
		{"match", []byte("v1"), []byte("v1"), []byte("v2"), true},
		{"same value", []byte("v1"), []byte("v1"), []byte("v1"), true},
		{"mismatch", []byte("v1"), []byte("v0"), []byte("v2"), false},
		{"old is a prefix", []byte("abc"), []byte("ab"), []byte("x"), false},
		{"old is longer", []byte("ab"), []byte("abc"), []byte("x"), false},
		{"case differs", []byte("abc"), []byte("ABC"), []byte("x"), false},
		{"empty old on non-empty value", []byte("abc"), nil, []byte("x"), false},
		{"missing key", nil, []byte("v1"), []byte("v2"), false},
		{"missing key, empty old", nil, nil, []byte("v2"), false},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := "cas/" + strconv.Itoa(i)
			if tt.current != nil {
				put(t, s, key, tt.current)
			}
			swapped, err := s.CompareAndSwap(t.Context(), key, tt.old, tt.new)
			require.NoError(t, err)
			assert.Equal(t, tt.wantSwapped, swapped)
			switch {
			case tt.wantSwapped:
				assert.Equal(t, tt.new, get(t, s, key))
			case tt.current == nil:
				requireMissing(t, s, key)
			default:
				assert.Equal(t, tt.current, get(t, s, key))
			}
		})
	}
}

func testDelete(t *testing.T, s store.Store) {
	ctx := t.Context()
	put(t, s, "a", []byte("1"))
	put(t, s, "b", []byte("2"))
	require.NoError(t, s.Delete(ctx, "a"))
	requireMissing(t, s, "a")
	assert.Equal(t, []byte("2"), get(t, s, "b"))
	require.NoError(t, s.Delete(ctx, "a"), "deleting a missing key")
	require.NoError(t, s.Delete(ctx, "never"), "deleting a missing key")

	swapped, err := s.CompareAndSwap(ctx, "a", []byte("1"), []byte("3"))
	require.NoError(t, err)
	assert.False(t, swapped, "a deleted key does not match")
	put(t, s, "a", []byte("4")) // a deleted key can be created again
	assert.Equal(t, []kv{{"a", "4"}, {"b", "2"}}, scanAll(t, s, ""))
}

func testInvalidKey(t *testing.T, s store.Store) {
	ctx := t.Context()
	long := strings.Repeat("k", store.MaxKeyLen+1)
	for _, key := range []string{"", long} {
		name := fmt.Sprintf("%d bytes", len(key))
		_, _, err := s.Get(ctx, key)
		assert.ErrorIs(t, err, store.ErrInvalidKey, "Get, %s", name)
		_, stored, err := s.PutIfAbsent(ctx, key, []byte("v"))
		assert.ErrorIs(t, err, store.ErrInvalidKey, "PutIfAbsent, %s", name)
		assert.False(t, stored)
		swapped, err := s.CompareAndSwap(ctx, key, nil, []byte("v"))
		assert.ErrorIs(t, err, store.ErrInvalidKey, "CompareAndSwap, %s", name)
		assert.False(t, swapped)
		assert.ErrorIs(t, s.Delete(ctx, key), store.ErrInvalidKey, "Delete, %s", name)
	}
	assert.Empty(t, scanAll(t, s, ""), "invalid keys stored nothing")

	longest := strings.Repeat("k", store.MaxKeyLen)
	put(t, s, longest, []byte("v"))
	assert.Equal(t, []byte("v"), get(t, s, longest))
	assert.Equal(t, []kv{{longest, "v"}}, scanAll(t, s, longest[:10]))
	assert.Empty(t, scanAll(t, s, long), "a prefix longer than any key matches nothing")
}

func testBinaryKeysAndValues(t *testing.T, s store.Store) {
	ctx := t.Context()
	keys := []string{"\x00", "a\x00b", "\xff\xfe", "é/ü", "日本", "tab\tnew\nline", "%2F", " "}
	value := make([]byte, 256)
	for i := range value {
		value[i] = byte(i)
	}
	for i, k := range keys {
		put(t, s, k, append([]byte{byte(i)}, value...))
	}
	for i, k := range keys {
		assert.Equal(t, append([]byte{byte(i)}, value...), get(t, s, k), "key %q", k)
	}
	big := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB
	put(t, s, "big", big)
	assert.Equal(t, big, get(t, s, "big"))
	swapped, err := s.CompareAndSwap(ctx, "big", big, value)
	require.NoError(t, err)
	assert.True(t, swapped)
	assert.Equal(t, value, get(t, s, "big"))
}

func testCopySemantics(t *testing.T, s store.Store) {
	ctx := t.Context()

	in := []byte("original")
	put(t, s, "k", in)
	in[0] = 'X'
	assert.Equal(t, []byte("original"), get(t, s, "k"), "the store aliases the value passed to PutIfAbsent")

	out := get(t, s, "k")
	out[0] = 'X'
	assert.Equal(t, []byte("original"), get(t, s, "k"), "Get returns the store's memory")

	existing, stored, err := s.PutIfAbsent(ctx, "k", []byte("other"))
	require.NoError(t, err)
	require.False(t, stored)
	existing[0] = 'X'
	assert.Equal(t, []byte("original"), get(t, s, "k"), "PutIfAbsent returns the store's memory")

	old, repl := []byte("original"), []byte("replaced")
	swapped, err := s.CompareAndSwap(ctx, "k", old, repl)
	require.NoError(t, err)
	require.True(t, swapped)
	repl[0], old[0] = 'X', 'X'
	assert.Equal(t, []byte("replaced"), get(t, s, "k"), "the store aliases the value passed to CompareAndSwap")

	var kept [][]byte
	err = s.Scan(ctx, "", func(_ string, v []byte) error {
		kept = append(kept, v)
		v[0] = 'X'
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, []byte("replaced"), get(t, s, "k"), "Scan hands out the store's memory")
	swapped, err = s.CompareAndSwap(ctx, "k", []byte("replaced"), []byte("again"))
	require.NoError(t, err)
	require.True(t, swapped)
	assert.Equal(t, [][]byte{[]byte("Xeplaced")}, kept, "a value kept from Scan changed with the store")
}

func testScanOrder(t *testing.T, s store.Store) {
	keys := []string{
		"\x00", "\x7f", "\x80", "\xff", "A", "Z", "a", "a\x00", "a/", "a/b", "a/b/c", "a0", "ab", "b",
		"b/a", "é", "z", "~",
	}
	shuffled := slices.Clone(keys)
	rand.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	for _, k := range shuffled {
		put(t, s, k, []byte("v:"+k))
	}
	slices.Sort(keys) // Go compares strings byte by byte
	want := func(prefix string) []kv {
		var w []kv
		for _, k := range keys {
			if strings.HasPrefix(k, prefix) {
				w = append(w, kv{k, "v:" + k})
			}
		}
		return w
	}
	for _, prefix := range []string{"", "a", "a/", "a/b", "a/b/c", "b", "\x00", "\xff", "é", "c", "a/b/c/d", "\xff\xff"} {
		assert.Equal(t, want(prefix), scanAll(t, s, prefix), "prefix %q", prefix)
	}
}

func testScanStops(t *testing.T, s store.Store) {
	for i := range 10 {
		put(t, s, "k"+strconv.Itoa(i), []byte{byte(i)})
	}
	stop := errors.New("stop here")
	var visited []string
	err := s.Scan(t.Context(), "k", func(k string, _ []byte) error {
		visited = append(visited, k)
		if len(visited) == 3 {
			return stop
		}
		return nil
	})
	assert.Equal(t, stop, err, "Scan must return fn's error unchanged")
	assert.Equal(t, []string{"k0", "k1", "k2"}, visited)
}

func testScanReentrant(t *testing.T, s store.Store) {
	for i := range 5 {
		put(t, s, "scan/"+strconv.Itoa(i), []byte("v"))
	}
	var visited []string
	noHang(t, "Scan calling back into the store", func() {
		err := s.Scan(t.Context(), "scan/", func(k string, v []byte) error {
			visited = append(visited, k)
			ctx := t.Context()
			if _, _, err := s.Get(ctx, k); err != nil {
				return err
			}
			if _, err := s.CompareAndSwap(ctx, k, v, []byte("seen")); err != nil {
				return err
			}
			if _, _, err := s.PutIfAbsent(ctx, "other/"+k, v); err != nil {
				return err
			}
			if err := s.Delete(ctx, "other/"+k); err != nil {
				return err
			}
			if _, _, err := s.PutIfAbsent(ctx, "log/"+k, nil); err != nil {
				return err
			}
			return s.Scan(ctx, "log/", func(string, []byte) error { return nil })
		})
		assert.NoError(t, err)
	})
	assert.Equal(t, []string{"scan/0", "scan/1", "scan/2", "scan/3", "scan/4"}, visited)
	for _, e := range scanAll(t, s, "scan/") {
		assert.Equal(t, "seen", e.Value, e.Key)
	}
	assert.Len(t, scanAll(t, s, "log/"), 5)
	assert.Empty(t, scanAll(t, s, "other/"))
}

func testKeyHelpers(t *testing.T, s store.Store) {
	// Keys built with store.Key from awkward parts stay apart under scans.
	parts := [][]string{
		{"job", "a/b", "c"},
		{"job", "a", "b/c"},
		{"job", "a", "b", "c"},
		{"job", "a%2Fb", "c"},
		{"job", "", "c"},
		{"job/a", "b"},
		{"jobs", "x"},
	}
	for i, p := range parts {
		put(t, s, store.Key(p[0], p[1:]...), []byte(strconv.Itoa(i)))
	}
	got := scanAll(t, s, store.Prefix("job", "a"))
	var values []string
	for _, e := range got {
		values = append(values, e.Value)
	}
	assert.ElementsMatch(t, []string{"1", "2"}, values)
	assert.Len(t, scanAll(t, s, store.Prefix("job")), 5)
	for i, p := range parts {
		assert.Equal(t, []byte(strconv.Itoa(i)), get(t, s, store.Key(p[0], p[1:]...)), "%q", p)
	}
}

func testContextDone(t *testing.T, s store.Store) {
	put(t, s, "k", []byte("v"))
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	expired, cancel2 := context.WithDeadline(t.Context(), time.Now().Add(-time.Second))
	defer cancel2()
	for _, c := range []struct {
		name string
		ctx  context.Context
		want error
	}{
		{"cancelled", cancelled, context.Canceled},
		{"deadline exceeded", expired, context.DeadlineExceeded},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := s.Get(c.ctx, "k")
			assert.ErrorIs(t, err, c.want, "Get")
			_, stored, err := s.PutIfAbsent(c.ctx, "new", []byte("v"))
			assert.ErrorIs(t, err, c.want, "PutIfAbsent")
			assert.False(t, stored)
			swapped, err := s.CompareAndSwap(c.ctx, "k", []byte("v"), []byte("w"))
			assert.ErrorIs(t, err, c.want, "CompareAndSwap")
			assert.False(t, swapped)
			assert.ErrorIs(t, s.Delete(c.ctx, "k"), c.want, "Delete")
			calls := 0
			err = s.Scan(c.ctx, "", func(string, []byte) error { calls++; return nil })
			assert.ErrorIs(t, err, c.want, "Scan")
			assert.Zero(t, calls, "Scan called fn with a done context")
		})
	}
	assert.Equal(t, []kv{{"k", "v"}}, scanAll(t, s, ""), "calls with a done context changed the store")
}

func testScanContextCancelled(t *testing.T, s store.Store) {
	for i := range 10 {
		put(t, s, "k"+strconv.Itoa(i), []byte("v"))
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	calls := 0
	err := s.Scan(ctx, "", func(string, []byte) error {
		calls++
		cancel()
		return nil
	})
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 1, calls, "Scan must check ctx before each call of fn")
}

func testClosed(t *testing.T, s store.Store) {
	ctx := t.Context()
	put(t, s, "k", []byte("v"))
	require.NoError(t, s.Close())

	_, found, err := s.Get(ctx, "k")
	assert.ErrorIs(t, err, store.ErrClosed, "Get")
	assert.False(t, found)
	_, stored, err := s.PutIfAbsent(ctx, "new", []byte("v"))
	assert.ErrorIs(t, err, store.ErrClosed, "PutIfAbsent")
	assert.False(t, stored)
	swapped, err := s.CompareAndSwap(ctx, "k", []byte("v"), []byte("w"))
	assert.ErrorIs(t, err, store.ErrClosed, "CompareAndSwap")
	assert.False(t, swapped)
	assert.ErrorIs(t, s.Delete(ctx, "k"), store.ErrClosed, "Delete")
	calls := 0
	err = s.Scan(ctx, "", func(string, []byte) error { calls++; return nil })
	assert.ErrorIs(t, err, store.ErrClosed, "Scan")
	assert.Zero(t, calls)
	assert.ErrorIs(t, s.Close(), store.ErrClosed, "second Close")
	_, _, err = s.Get(ctx, "")
	assert.ErrorIs(t, err, store.ErrClosed, "ErrClosed comes before key validation")
}

func testConcurrentPutIfAbsent(t *testing.T, s store.Store) {
	const n = 50
	type outcome struct {
		existing []byte
		stored   bool
		err      error
	}
	outcomes := make([]outcome, n)
	together(t, n, "racing PutIfAbsent", func(i int) {
		existing, stored, err := s.PutIfAbsent(t.Context(), "race", []byte("goroutine "+strconv.Itoa(i)))
		outcomes[i] = outcome{existing, stored, err}
	})
	winner := get(t, s, "race")
	winners := 0
	for i, o := range outcomes {
		require.NoError(t, o.err, "goroutine %d", i)
		if o.stored {
			winners++
			assert.Equal(t, "goroutine "+strconv.Itoa(i), string(winner))
			assert.Nil(t, o.existing)
		} else {
			assert.Equal(t, winner, o.existing, "goroutine %d saw another value than the stored one", i)
		}
	}
	assert.Equal(t, 1, winners, "exactly one PutIfAbsent must store")
}

// testConcurrentCompareAndSwap: writers racing to replace one value seen by
// all (a lease taken over by several instances at once) have exactly one
// winner, whose value is stored.
func testConcurrentCompareAndSwap(t *testing.T, s store.Store) {
	const n = 50
	put(t, s, "lease", []byte("epoch 1"))
	swapped := make([]bool, n)
	together(t, n, "racing CompareAndSwap", func(i int) {
		ok, err := s.CompareAndSwap(t.Context(), "lease", []byte("epoch 1"), []byte("epoch 2 by "+strconv.Itoa(i)))
		assert.NoError(t, err, "goroutine %d", i)
		swapped[i] = ok
	})
	winners := 0
	for i, ok := range swapped {
		if ok {
			winners++
			assert.Equal(t, "epoch 2 by "+strconv.Itoa(i), string(get(t, s, "lease")))
		}
	}
	assert.Equal(t, 1, winners, "exactly one CompareAndSwap from the same value must swap")
}

func testConcurrentCounter(t *testing.T, s store.Store) {
	const goroutines, increments = 8, 25
	put(t, s, "counter", []byte("0"))
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			ctx := t.Context()
			for range increments {
				for {
					v, found, err := s.Get(ctx, "counter")
					if !assert.NoError(t, err) || !assert.True(t, found) {
						return
					}
					n, err := strconv.Atoi(string(v))
					if !assert.NoError(t, err) {
						return
					}
					swapped, err := s.CompareAndSwap(ctx, "counter", v, []byte(strconv.Itoa(n+1)))
					if !assert.NoError(t, err) {
						return
					}
					if swapped {
						break
					}
				}
			}
		})
	}
	noHang(t, "contended CompareAndSwap", wg.Wait)
	assert.Equal(t, strconv.Itoa(goroutines*increments), string(get(t, s, "counter")), "lost updates")
}

func testConcurrentMixed(t *testing.T, s store.Store) {
	const writers, keysPerWriter, scanners = 4, 20, 2
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			ctx := t.Context()
			for i := range keysPerWriter {
				key := fmt.Sprintf("mixed/%d/%03d", w, i)
				_, stored, err := s.PutIfAbsent(ctx, key, []byte("new"))
				assert.NoError(t, err)
				assert.True(t, stored)
				swapped, err := s.CompareAndSwap(ctx, key, []byte("new"), []byte("done"))
				assert.NoError(t, err)
				assert.True(t, swapped)
				if i%2 == 1 {
					assert.NoError(t, s.Delete(ctx, key))
				}
			}
		})
	}
	for range scanners {
		wg.Go(func() {
			ctx := t.Context()
			for range 10 {
				prev := ""
				err := s.Scan(ctx, "mixed/", func(k string, v []byte) error {
					if k <= prev {
						return fmt.Errorf("key %q after %q: not ascending", k, prev)
					}
					prev = k
					if !strings.HasPrefix(k, "mixed/") {
						return fmt.Errorf("key %q outside the prefix", k)
					}
					if v := string(v); v != "new" && v != "done" {
						return fmt.Errorf("key %q has value %q, never written", k, v)
					}
					return nil
				})
				assert.NoError(t, err)
			}
		})
	}
	noHang(t, "concurrent writers and scanners", wg.Wait)
	got := scanAll(t, s, "mixed/")
	var want []kv
	for w := range writers {
		for i := 0; i < keysPerWriter; i += 2 {
			want = append(want, kv{fmt.Sprintf("mixed/%d/%03d", w, i), "done"})
		}
	}
	assert.Equal(t, want, got)
}

// testConcurrentWriters starts many writes at once, as concurrent calls do
// (a store may group them into one commit): every call's result is its
// own, a write is visible as soon as it returns, and of calls racing on
// one key with the same expectation exactly one wins.
func testConcurrentWriters(t *testing.T, s store.Store) {
	const n = 40
	put(t, s, "swap", []byte("v0"))
	put(t, s, "gone", []byte("x"))
	type outcome struct {
		stored, swapped bool
		existing        []byte
		own             []byte
	}
	outcomes := make([]outcome, n)
	together(t, n, "concurrent writers", func(i int) {
		ctx := t.Context()
		key := fmt.Sprintf("writer/%02d", i)
		mine := []byte("value " + strconv.Itoa(i))
		// Half the keys exist already: their PutIfAbsent writes nothing.
		if i%2 == 0 {
			key = "writer/shared"
		}
		existing, stored, err := s.PutIfAbsent(ctx, key, mine)
		if !assert.NoError(t, err) {
			return
		}
		own, found, err := s.Get(ctx, key)
		assert.NoError(t, err)
		assert.True(t, found, "%s not visible after PutIfAbsent returned", key)
		swapped, err := s.CompareAndSwap(ctx, "swap", []byte("v0"), mine)
		assert.NoError(t, err)
		assert.NoError(t, s.Delete(ctx, "gone"))
		outcomes[i] = outcome{stored: stored, swapped: swapped, existing: existing, own: own}
	})
	shared := get(t, s, "writer/shared")
	sharedWinners, swaps := 0, 0
	for i, o := range outcomes {
		mine := "value " + strconv.Itoa(i)
		switch {
		case i%2 == 1:
			assert.True(t, o.stored, "writer %d: a new key must be stored", i)
			assert.Nil(t, o.existing)
			assert.Equal(t, mine, string(o.own))
		case o.stored:
			sharedWinners++
			assert.Equal(t, mine, string(shared))
		default:
			assert.Equal(t, shared, o.existing, "writer %d saw another value than the stored one", i)
		}
		if o.swapped {
			swaps++
			assert.Equal(t, mine, string(get(t, s, "swap")))
		}
	}
	assert.Equal(t, 1, sharedWinners, "exactly one PutIfAbsent of the shared key must store")
	assert.Equal(t, 1, swaps, "exactly one CompareAndSwap from v0 must swap")
	requireMissing(t, s, "gone")
}
