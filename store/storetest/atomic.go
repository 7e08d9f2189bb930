package storetest

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/store"
)

// isAtomic reports whether s applies a multi-write all or nothing.
func isAtomic(s store.Store) bool {
	_, ok := s.(store.Atomic)
	return ok
}

// testWriteAtomic: the ops are applied when every condition holds; when one
// does not, an atomic store writes nothing and the fallback stops at it.
func testWriteAtomic(t *testing.T, s store.Store) {
	atomic := isAtomic(s)
	tests := []struct {
		name string
		ops  []store.Op
		// want is the result, wantPartial whether the fallback's error
		// wraps store.ErrPartial, after the store is reset to
		// {a: "1", b: "2", e: ""}.
		want        bool
		wantPartial bool
		after       []kv // what the store holds then, atomic store
		afterFall   []kv // and the fallback, when it differs
	}{
		{
			name: "every condition holds",
			ops: []store.Op{store.CompareAndSwapOp("a", []byte("1"), []byte("1b")),
				store.PutIfAbsentOp("c", []byte("3")), store.CompareAndSwapOp("e", nil, []byte("e2"))},
			want:  true,
			after: []kv{{"a", "1b"}, {"b", "2"}, {"c", "3"}, {"e", "e2"}},
		},
		{
			name:  "no ops",
			want:  true,
			after: []kv{{"a", "1"}, {"b", "2"}, {"e", ""}},
		},
		{
			name:  "the first op's condition fails",
			ops:   []store.Op{store.CompareAndSwapOp("a", []byte("x"), []byte("1b")), store.PutIfAbsentOp("c", []byte("3"))},
			after: []kv{{"a", "1"}, {"b", "2"}, {"e", ""}},
		},
		{
			name:        "a later compare-and-swap's condition fails",
			ops:         []store.Op{store.PutIfAbsentOp("c", []byte("3")), store.CompareAndSwapOp("b", []byte("x"), []byte("2b")), store.PutIfAbsentOp("d", []byte("4"))},
			wantPartial: true,
			after:       []kv{{"a", "1"}, {"b", "2"}, {"e", ""}},
			afterFall:   []kv{{"a", "1"}, {"b", "2"}, {"c", "3"}, {"e", ""}},
		},
		{
			name:        "a later put-if-absent's key exists",
			ops:         []store.Op{store.CompareAndSwapOp("a", []byte("1"), []byte("1b")), store.PutIfAbsentOp("b", []byte("2b"))},
			wantPartial: true,
			after:       []kv{{"a", "1"}, {"b", "2"}, {"e", ""}},
			afterFall:   []kv{{"a", "1b"}, {"b", "2"}, {"e", ""}},
		},
		{
			name:        "a compare-and-swap of a missing key",
			ops:         []store.Op{store.PutIfAbsentOp("c", []byte("3")), store.CompareAndSwapOp("d", nil, []byte("4"))},
			wantPartial: true,
			after:       []kv{{"a", "1"}, {"b", "2"}, {"e", ""}},
			afterFall:   []kv{{"a", "1"}, {"b", "2"}, {"c", "3"}, {"e", ""}},
		},
	}
	ctx := t.Context()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.NoError(t, s.Scan(ctx, "", func(k string, _ []byte) error { return s.Delete(ctx, k) }))
			put(t, s, "a", []byte("1"))
			put(t, s, "b", []byte("2"))
			put(t, s, "e", nil)
			applied, err := store.WriteAtomic(ctx, s, tt.ops)
			switch {
			case tt.wantPartial && !atomic:
				require.ErrorIs(t, err, store.ErrPartial)
				assert.True(t, applied, "the fallback applied the first op")
			default:
				require.NoError(t, err)
				assert.Equal(t, tt.want, applied)
			}
			want := tt.after
			if !atomic && tt.afterFall != nil {
				want = tt.afterFall
			}
			assert.Equal(t, want, scanAll(t, s, ""))
		})
	}

	t.Run("invalid ops write nothing", func(t *testing.T) {
		require.NoError(t, s.Scan(ctx, "", func(k string, _ []byte) error { return s.Delete(ctx, k) }))
		for _, ops := range [][]store.Op{
			{store.PutIfAbsentOp("c", []byte("3")), store.PutIfAbsentOp("", []byte("x"))},
			{store.PutIfAbsentOp("c", []byte("3")), store.PutIfAbsentOp(strings.Repeat("k", store.MaxKeyLen+1), []byte("x"))},
			{store.PutIfAbsentOp("c", []byte("3")), store.PutIfAbsentOp("d", []byte("4")), store.PutIfAbsentOp("c", []byte("5"))},
		} {
			applied, err := store.WriteAtomic(ctx, s, ops)
			require.ErrorIs(t, err, store.ErrInvalidKey)
			assert.False(t, applied)
			assert.Empty(t, scanAll(t, s, ""))
		}
	})

	t.Run("values are copied", func(t *testing.T) {
		old, value := []byte("1"), []byte("v")
		put(t, s, "copy/a", old)
		applied, err := store.WriteAtomic(ctx, s, []store.Op{
			store.CompareAndSwapOp("copy/a", old, value), store.PutIfAbsentOp("copy/b", value)})
		require.NoError(t, err)
		require.True(t, applied)
		value[0] = 'X'
		assert.Equal(t, []kv{{"copy/a", "v"}, {"copy/b", "v"}}, scanAll(t, s, "copy/"))
	})
}

// testWriteAtomicDoneOrClosed: a done context or a closed store writes
// nothing.
func testWriteAtomicDoneOrClosed(t *testing.T, s store.Store) {
	put(t, s, "a", []byte("1"))
	ops := []store.Op{store.CompareAndSwapOp("a", []byte("1"), []byte("2")), store.PutIfAbsentOp("b", []byte("3"))}
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	applied, err := store.WriteAtomic(cancelled, s, ops)
	require.ErrorIs(t, err, context.Canceled)
	assert.False(t, applied)
	assert.Equal(t, []kv{{"a", "1"}}, scanAll(t, s, ""))

	require.NoError(t, s.Close())
	applied, err = store.WriteAtomic(t.Context(), s, ops)
	require.ErrorIs(t, err, store.ErrClosed)
	assert.False(t, applied)
}

// testWriteAtomicRace: writers racing with the same first op (a lease taken
// over by several instances at once, each writing its result with it) have
// exactly one winner, whose every op is applied; on every store.
func testWriteAtomicRace(t *testing.T, s store.Store) {
	const n = 40
	put(t, s, "lease", []byte("epoch 1"))
	applied := raceWriters(t, s, n, "racing WriteAtomic", func(i int) []store.Op {
		mine := []byte("by " + strconv.Itoa(i))
		return []store.Op{
			store.CompareAndSwapOp("lease", []byte("epoch 1"), mine),
			store.PutIfAbsentOp("result/"+strconv.Itoa(i), mine),
		}
	})
	winners := 0
	for i, ok := range applied {
		if ok {
			winners++
			assert.Equal(t, "by "+strconv.Itoa(i), string(get(t, s, "lease")))
			assert.Equal(t, "by "+strconv.Itoa(i), string(get(t, s, "result/"+strconv.Itoa(i))))
		} else {
			requireMissing(t, s, "result/"+strconv.Itoa(i))
		}
	}
	assert.Equal(t, 1, winners, "exactly one WriteAtomic from the same value must apply")
}

// testWriteAtomicAllOrNothing: writers racing to create overlapping pairs of
// keys, named in either order: every key holds the value of a writer that
// applied, and such a writer holds both its keys. Only for a store that
// implements store.Atomic (the fallback may leave a writer's first key
// alone); it also checks that such writes do not deadlock.
func testWriteAtomicAllOrNothing(t *testing.T, s store.Store) {
	if !isAtomic(s) {
		t.Log("the store does not implement store.Atomic: its fallback is not all or nothing")
		return
	}
	const n, keys = 48, 6
	pair := func(i int) (string, string) {
		a, b := fmt.Sprintf("pair/%d", i%keys), fmt.Sprintf("pair/%d", (i%keys+1+(i/keys)%(keys-1))%keys)
		if i%2 == 1 {
			a, b = b, a
		}
		return a, b
	}
	applied := raceWriters(t, s, n, "overlapping WriteAtomic", func(i int) []store.Op {
		a, b := pair(i)
		mine := []byte("writer " + strconv.Itoa(i))
		return []store.Op{store.PutIfAbsentOp(a, mine), store.PutIfAbsentOp(b, mine)}
	})
	holders := map[string]bool{}
	for _, e := range scanAll(t, s, "pair/") {
		holders[e.Value] = true
	}
	winners := 0
	for i, ok := range applied {
		a, b := pair(i)
		mine := "writer " + strconv.Itoa(i)
		if !ok {
			assert.False(t, holders[mine], "writer %d did not apply, yet a key holds its value", i)
			continue
		}
		winners++
		assert.Equal(t, mine, string(get(t, s, a)), "writer %d applied", i)
		assert.Equal(t, mine, string(get(t, s, b)), "writer %d applied", i)
	}
	assert.Positive(t, winners)
}

// testWriteAtomicTransfers: concurrent read-modify-write loops that move
// units between two keys with one WriteAtomic each never lose or create a
// unit. Only for a store that implements store.Atomic.
func testWriteAtomicTransfers(t *testing.T, s store.Store) {
	if !isAtomic(s) {
		t.Log("the store does not implement store.Atomic: its fallback is not all or nothing")
		return
	}
	const goroutines, transfers = 6, 15
	put(t, s, "account/a", []byte("1000"))
	put(t, s, "account/b", []byte("0"))
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			ctx := t.Context()
			from, to := "account/a", "account/b"
			if g%2 == 1 { // half of them name the keys in the other order
				from, to = to, from
			}
			for range transfers {
				for {
					fv, _, err1 := s.Get(ctx, from)
					tv, _, err2 := s.Get(ctx, to)
					if !assert.NoError(t, err1) || !assert.NoError(t, err2) {
						return
					}
					f, _ := strconv.Atoi(string(fv))
					v, _ := strconv.Atoi(string(tv))
					ok, err := store.WriteAtomic(ctx, s, []store.Op{
						store.CompareAndSwapOp(from, fv, []byte(strconv.Itoa(f-1))),
						store.CompareAndSwapOp(to, tv, []byte(strconv.Itoa(v+1))),
					})
					if !assert.NoError(t, err) {
						return
					}
					if ok {
						break
					}
				}
			}
		})
	}
	noHang(t, "concurrent transfers", wg.Wait)
	a, _ := strconv.Atoi(string(get(t, s, "account/a")))
	b, _ := strconv.Atoi(string(get(t, s, "account/b")))
	assert.Equal(t, 1000, a+b, "units lost or created")
	assert.Equal(t, 1000, a, "as many transfers each way")
}

// raceWriters runs n writers of WriteAtomic on s at once, writer i with the
// ops of ops(i), each expected to answer without error, and returns which
// applied; it fails the test (what names the race) when they hang.
func raceWriters(t *testing.T, s store.Store, n int, what string, ops func(i int) []store.Op) []bool {
	t.Helper()
	applied := make([]bool, n)
	together(t, n, what, func(i int) {
		ok, err := store.WriteAtomic(t.Context(), s, ops(i))
		assert.NoError(t, err, "writer %d", i)
		applied[i] = ok
	})
	return applied
}
