package sse

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestQueueDropOldest(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		limit       int
		push        int      // events 1..push are pushed
		popBetween  int      // events popped after the first half is pushed
		want        []uint64 // what is left, oldest first
		wantDropped uint64
	}{
		{"empty", 3, 0, 0, nil, 0},
		{"under the limit", 3, 2, 0, []uint64{1, 2}, 0},
		{"at the limit", 3, 3, 0, []uint64{1, 2, 3}, 0},
		{"over the limit keeps the newest", 3, 5, 0, []uint64{3, 4, 5}, 2},
		{"limit one", 1, 4, 0, []uint64{4}, 3},
		{"spec size", DefaultQueueSize, 250, 0, seq(151, 250), 150},
		{"wraps after pops", 4, 8, 2, []uint64{5, 6, 7, 8}, 2},
		{"grows while wrapped", 100, 30, 3, seq(4, 30), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			q := newQueue(tt.limit, 0)
			half := tt.push / 2
			for id := 1; id <= half; id++ {
				q.push(&event{id: uint64(id)})
			}
			for range tt.popBetween {
				assert.NotNil(t, q.pop())
			}
			for id := half + 1; id <= tt.push; id++ {
				q.push(&event{id: uint64(id)})
			}
			assert.LessOrEqual(t, len(q.buf), tt.limit, "storage never exceeds the limit")
			assert.Equal(t, len(tt.want), q.len())
			var got []uint64
			for e := q.pop(); e != nil; e = q.pop() {
				got = append(got, e.id)
			}
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.wantDropped, q.dropped)
			assert.Zero(t, q.len())
		})
	}
}

func TestQueueStorageIsLazy(t *testing.T) {
	t.Parallel()
	q := newQueue(DefaultQueueSize, 0)
	assert.Nil(t, q.buf, "an idle queue holds no storage")
	assert.True(t, q.push(&event{id: 1}), "was empty")
	assert.False(t, q.push(&event{id: 2}), "was not empty")
	assert.Len(t, q.buf, minQueueAlloc)
	// A consumer that keeps up never makes the storage grow.
	for id := uint64(3); id < 1000; id++ {
		q.pop()
		q.push(&event{id: id})
	}
	assert.Len(t, q.buf, minQueueAlloc)
	assert.Zero(t, q.dropped)
}

func TestQueuePopClearsSlot(t *testing.T) {
	t.Parallel()
	q := newQueue(4, 0)
	q.push(&event{id: 1})
	q.pop()
	for _, e := range q.buf {
		assert.Nil(t, e, "popped events must not stay reachable from the queue")
	}
	assert.Nil(t, q.pop(), "empty")
}

func seq(from, to uint64) []uint64 {
	var s []uint64
	for i := from; i <= to; i++ {
		s = append(s, i)
	}
	return s
}

// TestQueueByteBound: the queue keeps the newest events within maxBytes, dropping the
// oldest first, and always keeps the newest event even when it alone is larger.
func TestQueueByteBound(t *testing.T) {
	t.Parallel()
	const kib = 1 << 10
	tests := []struct {
		name        string
		maxBytes    int
		payloads    []int    // payload sizes of events 1, 2, …
		want        []uint64 // what is left, oldest first
		wantDropped uint64
	}{
		{"under the bound", 8 * kib, []int{kib, kib, kib}, []uint64{1, 2, 3}, 0},
		{"over the bound drops the oldest", 4 * kib, []int{kib, kib, kib, kib, kib}, []uint64{3, 4, 5}, 2},
		{"one large event evicts everything before it", 4 * kib, []int{kib, kib, 3 * kib}, []uint64{3}, 2},
		{"an event larger than the bound is kept alone", 4 * kib, []int{kib, 8 * kib}, []uint64{2}, 1},
		{"the next event evicts the oversized one", 4 * kib, []int{8 * kib, kib}, []uint64{2}, 1},
		{"2 MiB events under the 4 MiB default keep one", DefaultQueueBytes, []int{2 << 20, 2 << 20, 2 << 20}, []uint64{3}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			q := newQueue(DefaultQueueSize, tt.maxBytes)
			for i, n := range tt.payloads {
				q.push(&event{id: uint64(i + 1), data: make([]byte, n)})
				assert.True(t, q.len() == 1 || q.bytes <= tt.maxBytes, "within the bound unless one event alone exceeds it")
			}
			var got []uint64
			for e := q.pop(); e != nil; e = q.pop() {
				got = append(got, e.id)
			}
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.wantDropped, q.dropped)
			assert.Zero(t, q.bytes, "an empty queue counts no memory")
		})
	}
}
