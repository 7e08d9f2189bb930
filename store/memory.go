package store

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// Memory is a Store that keeps its data in memory; nothing survives the
// process. It suits tests and agents that are stateless by design. The zero
// value is not usable: call [NewMemory].
//
// Reads share a lock; writes take an exclusive one and cost O(log n)
// amortized, as the key order that Scan needs is maintained lazily (a scan
// right after writes merges them in). Scan visits a snapshot of the matching
// keys taken when it starts, with no lock held while fn runs.
type Memory struct {
	closed atomic.Bool

	mu   sync.RWMutex
	data map[string][]byte // stored values are never modified in place
	// The keys of data in order, kept lazily: writes only note what changed
	// and reorder() merges it in. Invariant: every key of data is in sorted or
	// in unsorted, and sorted is in order without duplicates.
	sorted   []string // may hold deleted keys when stale > 0
	unsorted []string // keys added since the last reorder, in any order
	stale    int      // deletions since the last reorder
}

var _ Store = (*Memory)(nil)

// NewMemory returns an empty in-memory store.
func NewMemory() *Memory {
	return &Memory{data: make(map[string][]byte)}
}

// begin runs the checks that precede every operation.
func (m *Memory) begin(ctx context.Context, key string) error {
	if m.closed.Load() {
		return ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return checkKey(key)
}

// Get implements [Store.Get].
func (m *Memory) Get(ctx context.Context, key string) ([]byte, bool, error) {
	if err := m.begin(ctx, key); err != nil {
		return nil, false, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.data == nil {
		return nil, false, ErrClosed
	}
	v, ok := m.data[key]
	if !ok {
		return nil, false, nil
	}
	return bytes.Clone(v), true, nil
}

// PutIfAbsent implements [Store.PutIfAbsent].
func (m *Memory) PutIfAbsent(ctx context.Context, key string, value []byte) ([]byte, bool, error) {
	if err := m.begin(ctx, key); err != nil {
		return nil, false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.data == nil {
		return nil, false, ErrClosed
	}
	if v, ok := m.data[key]; ok {
		return bytes.Clone(v), false, nil
	}
	m.data[key] = cloneValue(value)
	m.unsorted = append(m.unsorted, key)
	m.maybeReorder()
	return nil, true, nil
}

// CompareAndSwap implements [Store.CompareAndSwap].
func (m *Memory) CompareAndSwap(ctx context.Context, key string, old, new []byte) (bool, error) {
	if err := m.begin(ctx, key); err != nil {
		return false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.data == nil {
		return false, ErrClosed
	}
	v, ok := m.data[key]
	if !ok || !bytes.Equal(v, old) {
		return false, nil
	}
	m.data[key] = cloneValue(new)
	return true, nil
}

// Delete implements [Store.Delete].
func (m *Memory) Delete(ctx context.Context, key string) error {
	if err := m.begin(ctx, key); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.data == nil {
		return ErrClosed
	}
	if _, ok := m.data[key]; !ok {
		return nil
	}
	delete(m.data, key)
	m.stale++
	m.maybeReorder()
	return nil
}

// Scan implements [Store.Scan]. It visits a snapshot of the keys with the
// prefix taken when it starts; fn runs with no lock held.
func (m *Memory) Scan(ctx context.Context, prefix string, fn func(key string, value []byte) error) error {
	if m.closed.Load() {
		return ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	keys, values, err := m.snapshot(prefix)
	if err != nil {
		return err
	}
	for i, k := range keys {
		if m.closed.Load() {
			return ErrClosed
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		// The snapshot shares the stored slices, which are never modified in
		// place; fn gets its own copy.
		if err := fn(k, bytes.Clone(values[i])); err != nil {
			return err
		}
	}
	return nil
}

// snapshot returns the keys with prefix, in order, and their current values.
func (m *Memory) snapshot(prefix string) ([]string, [][]byte, error) {
	m.mu.RLock()
	if len(m.unsorted) == 0 && m.stale == 0 {
		defer m.mu.RUnlock()
	} else { // the keys must be reordered first, under the write lock
		m.mu.RUnlock()
		m.mu.Lock()
		defer m.mu.Unlock()
		m.reorder()
	}
	if m.data == nil {
		return nil, nil, ErrClosed
	}
	start, _ := slices.BinarySearch(m.sorted, prefix)
	end := start
	for end < len(m.sorted) && strings.HasPrefix(m.sorted[end], prefix) {
		end++
	}
	keys := slices.Clone(m.sorted[start:end])
	values := make([][]byte, len(keys))
	for i, k := range keys {
		values[i] = m.data[k]
	}
	return keys, values, nil
}

// maybeReorder reorders the keys once the pending changes reach half of the
// ordered keys, which bounds the memory they hold and keeps writes O(log n)
// amortized. m.mu must be held for writing.
func (m *Memory) maybeReorder() {
	if len(m.unsorted)+m.stale > 64+len(m.sorted)/2 {
		m.reorder()
	}
}

// reorder merges the keys added since the last call into m.sorted and drops
// the deleted ones. m.mu must be held for writing.
func (m *Memory) reorder() {
	if len(m.unsorted) == 0 && m.stale == 0 {
		return
	}
	slices.Sort(m.unsorted)
	merged := make([]string, 0, len(m.data))
	keep := func(k string) {
		if _, ok := m.data[k]; ok && (len(merged) == 0 || merged[len(merged)-1] != k) {
			merged = append(merged, k)
		}
	}
	a, b := m.sorted, m.unsorted
	for len(a) > 0 && len(b) > 0 {
		if a[0] <= b[0] {
			keep(a[0])
			a = a[1:]
		} else {
			keep(b[0])
			b = b[1:]
		}
	}
	for _, k := range a {
		keep(k)
	}
	for _, k := range b {
		keep(k)
	}
	clear(m.unsorted) // drop the references to deleted keys
	m.sorted, m.unsorted, m.stale = merged, m.unsorted[:0], 0
}

// Close implements [Store.Close]: it drops the data.
func (m *Memory) Close() error {
	if m.closed.Swap(true) {
		return ErrClosed
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.data, m.sorted, m.unsorted = nil, nil, nil
	return nil
}

// cloneValue copies v; a nil v becomes an empty non-nil slice, so that a stored
// value is never nil.
func cloneValue(v []byte) []byte {
	if v == nil {
		return []byte{}
	}
	return bytes.Clone(v)
}
