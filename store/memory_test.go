package store

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMemoryIndexBounded checks that writes without scans do not pile up
// pending index entries: churn on a few keys keeps the index small.
func TestMemoryIndexBounded(t *testing.T) {
	m := NewMemory()
	ctx := t.Context()
	for i := range 10_000 {
		key := "k" + strconv.Itoa(i%3)
		_, _, err := m.PutIfAbsent(ctx, key, nil)
		require.NoError(t, err)
		require.NoError(t, m.Delete(ctx, key))
	}
	_, _, err := m.PutIfAbsent(ctx, "last", nil)
	require.NoError(t, err)
	m.mu.RLock()
	pending := len(m.sorted) + len(m.unsorted) + m.stale
	m.mu.RUnlock()
	assert.LessOrEqual(t, pending, 200, "index entries for 1 key")

	var keys []string
	require.NoError(t, m.Scan(ctx, "", func(k string, _ []byte) error {
		keys = append(keys, k)
		return nil
	}))
	assert.Equal(t, []string{"last"}, keys)
	m.mu.RLock()
	defer m.mu.RUnlock()
	assert.Equal(t, []string{"last"}, m.sorted)
	assert.Empty(t, m.unsorted)
	assert.Zero(t, m.stale)
}
