package main

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/store"
)

func newJobStore(t *testing.T) (*jobStore, store.Store) {
	t.Helper()
	st := store.NewMemory()
	return &jobStore{st: st, now: func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }}, st
}

// TestJobStoreReadsDecodeOnlyChangedBytes checks that reading a job whose
// stored bytes did not change reuses the decoded record, that a change made
// by another instance (straight in the store) is read, and that a caller's
// changes to its copy stay its own.
func TestJobStoreReadsDecodeOnlyChangedBytes(t *testing.T) {
	ctx := context.Background()
	js, st := newJobStore(t)
	_, created, err := js.create(ctx, &jobRecord{ID: "j1", Scope: "s", TopicID: "t", Status: jobAwaiting, Recipients: []string{"a"}})
	require.NoError(t, err)
	require.True(t, created)
	key := jobKey("s", "j1")

	// The decoded record is reused while the bytes are the same: a marker
	// put in the remembered record (never written to the store) is read back.
	js.mu.Lock()
	d := js.decoded[key]
	d.rec.Goal = "remembered"
	js.decoded[key] = d
	js.mu.Unlock()
	got, err := js.get(ctx, "s", "j1")
	require.NoError(t, err)
	assert.Equal(t, "remembered", got.Goal, "unchanged bytes are not decoded again")

	// The caller's copy is its own.
	got.Recipients[0] = "changed"
	got.Status = jobStopped
	again, err := js.get(ctx, "s", "j1")
	require.NoError(t, err)
	assert.Equal(t, []string{"a"}, again.Recipients)
	assert.Equal(t, jobAwaiting, again.Status)

	// Another instance changes the job: the new bytes are decoded.
	old, _, err := st.Get(ctx, key)
	require.NoError(t, err)
	var rec jobRecord
	require.NoError(t, json.Unmarshal(old, &rec))
	rec.Status, rec.Revision = jobActive, rec.Revision+1
	b, err := json.Marshal(&rec)
	require.NoError(t, err)
	swapped, err := st.CompareAndSwap(ctx, key, old, b)
	require.NoError(t, err)
	require.True(t, swapped)
	got, err = js.get(ctx, "s", "j1")
	require.NoError(t, err)
	assert.Equal(t, jobActive, got.Status)
	assert.Empty(t, got.Goal, "the remembered record of the old bytes is not used")

	// An update remembers what it wrote.
	upd, err := js.update(ctx, "s", "j1", func(j *jobRecord) error { j.Draft = "v2"; return nil })
	require.NoError(t, err)
	got, err = js.get(ctx, "s", "j1")
	require.NoError(t, err)
	assert.Equal(t, upd, got)
	assert.Equal(t, "v2", got.Draft)
}

func TestJobStoreForgetsBeyondItsBound(t *testing.T) {
	ctx := context.Background()
	js, _ := newJobStore(t)
	for i := range maxDecodedJobs + 10 {
		_, _, err := js.create(ctx, &jobRecord{ID: "j" + string(rune('a'+i%26)) + time.Duration(i).String(), Scope: "s", Status: jobAwaiting})
		require.NoError(t, err)
	}
	js.mu.Lock()
	n := len(js.decoded)
	js.mu.Unlock()
	assert.Equal(t, maxDecodedJobs, n)
}

// countingStore counts the reads of the store it wraps.
type countingStore struct {
	store.Store
	gets atomic.Int64
}

func (c *countingStore) Get(ctx context.Context, key string) ([]byte, bool, error) {
	c.gets.Add(1)
	return c.Store.Get(ctx, key)
}

// TestExclusiveJobStoreReadsWithoutTheStore: with a store that is the
// process's alone, a job written or read once is read again from memory,
// without a store call; a shared store is read every time. Either way the
// reader gets the last revision written, as its own copy.
func TestExclusiveJobStoreReadsWithoutTheStore(t *testing.T) {
	for _, tt := range []struct {
		name      string
		exclusive bool
		wantGets  int64
	}{
		{"exclusive (bbolt, memory)", true, 0},
		{"shared (PostgreSQL)", false, 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			st := &countingStore{Store: store.NewMemory()}
			js := &jobStore{st: st, now: time.Now, exclusive: tt.exclusive}
			_, _, err := js.create(ctx, &jobRecord{ID: "j1", Scope: "s", Status: jobAwaiting, Recipients: []string{"a"}})
			require.NoError(t, err)
			_, err = js.update(ctx, "s", "j1", func(j *jobRecord) error { j.Status = jobActive; return nil })
			require.NoError(t, err)
			before := st.gets.Load()
			for range 3 {
				got, err := js.get(ctx, "s", "j1")
				require.NoError(t, err)
				assert.Equal(t, jobActive, got.Status)
				assert.Equal(t, 2, got.Revision)
				got.Recipients[0] = "changed" // the caller's own copy
			}
			assert.Equal(t, tt.wantGets, st.gets.Load()-before)
			got, err := js.get(ctx, "s", "j1")
			require.NoError(t, err)
			assert.Equal(t, []string{"a"}, got.Recipients)
			_, err = js.get(ctx, "s", "unknown")
			assert.ErrorIs(t, err, errJobNotFound)
		})
	}
}

// TestJobStoreRemembersTheLatestRevision: a writer of an earlier revision
// that finishes last does not replace the remembered later revision.
func TestJobStoreRemembersTheLatestRevision(t *testing.T) {
	js := &jobStore{st: store.NewMemory(), now: time.Now, exclusive: true}
	key := jobKey("s", "j1")
	js.remember(key, []byte("v3"), &jobRecord{ID: "j1", Revision: 3, Status: jobActive})
	js.remember(key, []byte("v2"), &jobRecord{ID: "j1", Revision: 2, Status: jobAwaiting})
	got, ok := js.remembered(key)
	require.True(t, ok)
	assert.Equal(t, 3, got.Revision)
	js.forget(key)
	_, ok = js.remembered(key)
	assert.False(t, ok)
}

// BenchmarkJobStoreGet measures reading an unchanged job.
func BenchmarkJobStoreGet(b *testing.B) {
	ctx := context.Background()
	js := &jobStore{st: store.NewMemory(), now: time.Now}
	rec := &jobRecord{ID: "j1", Scope: "s", TopicID: "t", Status: jobAwaiting, Draft: mustDraft(b, "t", "", depthDeep)}
	if _, _, err := js.create(ctx, rec); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := js.get(ctx, "s", "j1"); err != nil {
			b.Fatal(err)
		}
	}
}
