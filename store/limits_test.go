//go:build !race

package store_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/store"
)

// Wall-clock limits mean little under the race detector, so the TestLimit
// tests build only without it; make test runs them in a pass of their own.

// TestLimitLockTimeout: Open gives up on a locked database once its lock
// timeout has passed, not much later, whether the holder is this process
// (WithLockTimeout) or another one (DefaultLockTimeout).
func TestLimitLockTimeout(t *testing.T) {
	t.Run("in process", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "locked.db")
		first, err := store.Open(path)
		require.NoError(t, err)
		defer first.Close()
		start := time.Now()
		_, err = store.Open(path, store.WithLockTimeout(100*time.Millisecond))
		require.ErrorIs(t, err, store.ErrLocked)
		assert.Less(t, time.Since(start), 2*time.Second)
	})
	t.Run("another process", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "held.db")
		release := holdInChild(t, path)
		defer release()
		start := time.Now()
		_, err := store.Open(path)
		require.ErrorIs(t, err, store.ErrLocked)
		assert.Less(t, time.Since(start), store.DefaultLockTimeout+2*time.Second)
	})
}
