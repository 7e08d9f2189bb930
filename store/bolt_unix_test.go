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

func TestOpenRefusesAnUnsafeSharedTempDir(t *testing.T) {
	tmp := t.TempDir() // under os.TempDir()
	open := filepath.Join(tmp, "open")
	require.NoError(t, os.Mkdir(open, 0o777))
	require.NoError(t, os.Chmod(open, 0o777)) // the umask may have narrowed it
	_, err := store.Open(filepath.Join(open, store.DefaultFileName))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "writable by others")

	target := filepath.Join(tmp, "target")
	require.NoError(t, os.Mkdir(target, 0o700))
	link := filepath.Join(tmp, "link")
	require.NoError(t, os.Symlink(target, link))
	_, err = store.Open(filepath.Join(link, store.DefaultFileName))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "symbolic link")

	private := filepath.Join(tmp, "private", "nested")
	st, err := store.Open(filepath.Join(private, store.DefaultFileName))
	require.NoError(t, err, "a directory it creates itself (mode 0700) is accepted")
	require.NoError(t, st.Close())
}
