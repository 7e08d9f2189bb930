package store_test

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/store"
)

// TestPackageDocOpen runs the package comment's calls as written, in a data
// folder of the test: the first PutIfAbsent stores, the second returns the
// first record.
func TestPackageDocOpen(t *testing.T) {
	t.Setenv(store.EnvDataDir, t.TempDir())
	agentSlug, action := "research-agent", "job.start"
	var (
		got       []byte
		wasStored bool
	)
	put := func(ctx context.Context, idempotencyKey string, record []byte) error {
		s, err := store.Open(store.DefaultPath(os.Getenv(store.EnvDataDir)))
		if err != nil {
			return err // for example store.ErrLocked: another process holds the file
		}
		defer s.Close()
		key := store.Key("idempotency", agentSlug, action, idempotencyKey)
		existing, stored, err := s.PutIfAbsent(ctx, key, record)
		got, wasStored = existing, stored
		return err
	}
	require.NoError(t, put(t.Context(), "k1", []byte(`{"job_id":"job-1"}`)))
	assert.True(t, wasStored)
	require.NoError(t, put(t.Context(), "k1", []byte(`{"job_id":"job-2"}`)))
	assert.False(t, wasStored)
	assert.JSONEq(t, `{"job_id":"job-1"}`, string(got))
}
