package taskview

import (
	"context"
	"log/slog"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/internal/sse"
	"github.com/supervaize/supervaizer-go/store"
)

// opStore records the store operations the view makes (task records only:
// the health figures' seeding scan is not counted).
type opStore struct {
	store.Store
	mu  sync.Mutex
	ops []string
}

func (s *opStore) note(op string) {
	s.mu.Lock()
	s.ops = append(s.ops, op)
	s.mu.Unlock()
}

func (s *opStore) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ops := s.ops
	s.ops = nil
	return ops
}

func (s *opStore) Get(ctx context.Context, key string) ([]byte, bool, error) {
	s.note("get")
	return s.Store.Get(ctx, key)
}

func (s *opStore) PutIfAbsent(ctx context.Context, key string, value []byte) ([]byte, bool, error) {
	s.note("put-if-absent")
	return s.Store.PutIfAbsent(ctx, key, value)
}

func (s *opStore) CompareAndSwap(ctx context.Context, key string, old, value []byte) (bool, error) {
	s.note("cas")
	return s.Store.CompareAndSwap(ctx, key, old, value)
}

func jobResult(status string) []byte {
	return []byte(`{"status":"ok","effects":[],"job_state":{"job":{"id":"job-1","agent_slug":"a","mission_id":"m","status":"` + status + `",` +
		`"source":{"type":"fresh_start"}}}}`)
}

// TestObserveStoreOperations: what each job result costs the store. The
// first result for a job in a process creates its record in one operation
// (or finds it stored); a result repeating the last one costs none; a
// result that differs reads and swaps the record; an effect's status
// update reads and swaps it, and the next result, although it repeats the
// one before the effect, is compared with the store again.
func TestObserveStoreOperations(t *testing.T) {
	mem := store.NewMemory()
	st := &opStore{Store: mem}
	tv := New(st, slog.New(slog.DiscardHandler), sse.Options{})
	ctx := t.Context()
	key := Key("ws", "a", "job-1")
	steps := []struct {
		name string
		raw  []byte
		want []string
	}{
		{"a start creates the record", jobResult("running"), []string{"put-if-absent"}},
		{"the same state again", jobResult("running"), nil},
		{"the same state a third time", jobResult("running"), nil},
		{"a new state", jobResult("completed"), []string{"get", "cas"}},
		{"the new state again", jobResult("completed"), nil},
		{"an effect naming the job", []byte(`{"status":"ok","effects":[{"type":"job.status","job_id":"job-1","status":"failed"}]}`), []string{"get", "cas"}},
		{"the state before the effect", jobResult("completed"), []string{"get", "cas"}},
	}
	for _, step := range steps {
		tv.Observe(ctx, "ws", "a", step.raw, nil, nil)
		assert.Equal(t, step.want, st.take(), step.name)
	}
	got, found, err := tv.Load(ctx, key)
	require.NoError(t, err)
	require.True(t, found)
	assert.Equal(t, "completed", got.Status)
	assert.Equal(t, []string{"get"}, st.take(), "Load reads the store")

	// Another process (a restart) finds the record stored: one operation.
	other := New(st, slog.New(slog.DiscardHandler), sse.Options{})
	other.Observe(ctx, "ws", "a", jobResult("completed"), nil, nil)
	assert.Equal(t, []string{"put-if-absent"}, st.take(), "a cold process finds the same record")
	other.Observe(ctx, "ws", "a", jobResult("completed"), nil, nil)
	assert.Empty(t, st.take())
}
