package store

import (
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"
)

// TestCommitterGroupFailure queues writes behind a commit in progress, one
// of which fails: it fails alone, with its own error, and the others are
// committed together.
func TestCommitterGroupFailure(t *testing.T) {
	b, err := Open(filepath.Join(t.TempDir(), "group.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })

	release := make(chan struct{})
	entered := make(chan struct{})
	first := make(chan error, 1)
	go func() {
		_, err := b.update(func(tx *bolt.Tx) error {
			close(entered)
			<-release
			return tx.Bucket(bucketName).Put([]byte("first"), []byte("1"))
		})
		first <- err
	}()
	<-entered

	errBoom := errors.New("boom")
	put := func(key string) func(*bolt.Tx) error {
		return func(tx *bolt.Tx) error { return tx.Bucket(bucketName).Put([]byte(key), []byte("v")) }
	}
	fns := []func(*bolt.Tx) error{
		put("a"),
		func(tx *bolt.Tx) error {
			if err := tx.Bucket(bucketName).Put([]byte("failed"), []byte("x")); err != nil {
				return err
			}
			return errBoom
		},
		func(*bolt.Tx) error { return errUnchanged },
		put("b"),
	}
	type outcome struct {
		changed bool
		err     error
	}
	outcomes := make([]outcome, len(fns))
	var wg sync.WaitGroup
	for i, fn := range fns {
		wg.Go(func() {
			changed, err := b.update(fn)
			outcomes[i] = outcome{changed, err}
		})
	}
	// Every write is queued behind the first commit.
	require.Eventually(t, func() bool { return b.writes.group.Queued() == len(fns) }, 10*time.Second, time.Millisecond)
	before := CommittedTxIDForTest(b)
	close(release)
	require.NoError(t, <-first)
	wg.Wait()

	assert.Equal(t, outcome{true, nil}, outcomes[0])
	assert.Equal(t, outcome{false, errBoom}, outcomes[1])
	assert.Equal(t, outcome{false, nil}, outcomes[2])
	assert.Equal(t, outcome{true, nil}, outcomes[3])
	for key, want := range map[string]bool{"first": true, "a": true, "b": true, "failed": false} {
		_, found, err := b.Get(t.Context(), key)
		require.NoError(t, err)
		assert.Equal(t, want, found, key)
	}
	// The first write's commit, then one shared commit for a and b (the
	// failed write rolled back alone).
	assert.Equal(t, before+2, CommittedTxIDForTest(b))
}
