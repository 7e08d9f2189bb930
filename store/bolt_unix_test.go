//go:build unix

package store_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/store"
)

func TestOpenCreatesPrivateFiles(t *testing.T) {
	base := t.TempDir()
	path := filepath.Join(base, "a", "b", "store.db")
	s, err := store.Open(path)
	require.NoError(t, err)
	require.NoError(t, s.Close())

	// A umask only removes permission bits, and usual ones keep all of these.
	for _, dir := range []string{filepath.Join(base, "a"), filepath.Join(base, "a", "b")} {
		info, err := os.Stat(dir)
		require.NoError(t, err)
		assert.True(t, info.IsDir())
		assert.Equal(t, os.FileMode(0o700), info.Mode().Perm(), dir)
	}
	info, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
}
