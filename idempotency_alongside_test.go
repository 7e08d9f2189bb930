package supervaizer_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	sv "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/internal/taskview"
	"github.com/supervaize/supervaizer-go/store"
)

// opLog is a store that logs the writes and the task view's reads the
// server makes ("get a2a", "put_if_absent idempotency", ...,
// "write_atomic idempotency+a2a"). Its WriteAtomic is the memory store's,
// failing while fail is set; race makes the next read of a task view
// record stale (another writer changes the record right after).
type opLog struct {
	*store.Memory
	fail, race atomic.Bool

	mu  sync.Mutex
	ops []string
}

// area is the first part of a key: idempotency, a2a.task, ...
func area(key string) string { a, _, _ := strings.Cut(key, "."); return a }

func (s *opLog) log(op string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ops = append(s.ops, op)
}

func (s *opLog) clear() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ops = nil
}

func (s *opLog) logged() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.ops...)
}

func (s *opLog) Get(ctx context.Context, key string) ([]byte, bool, error) {
	if area(key) != "a2a" {
		return s.Memory.Get(ctx, key)
	}
	s.log("get a2a")
	v, found, err := s.Memory.Get(ctx, key)
	if found && err == nil && s.race.CompareAndSwap(true, false) {
		_, _ = s.Memory.CompareAndSwap(ctx, key, v, []byte(`{"written by":"another instance"}`))
	}
	return v, found, err
}

func (s *opLog) PutIfAbsent(ctx context.Context, key string, value []byte) ([]byte, bool, error) {
	s.log("put_if_absent " + area(key))
	return s.Memory.PutIfAbsent(ctx, key, value)
}

func (s *opLog) CompareAndSwap(ctx context.Context, key string, old, new []byte) (bool, error) {
	s.log("compare_and_swap " + area(key))
	return s.Memory.CompareAndSwap(ctx, key, old, new)
}

var errAtomicDown = errors.New("atomic write failed")

func (s *opLog) WriteAtomic(ctx context.Context, ops []store.Op) (bool, error) {
	var areas []string
	for _, op := range ops {
		areas = append(areas, area(op.Key))
	}
	s.log("write_atomic " + strings.Join(areas, "+"))
	if s.fail.Load() {
		return false, errAtomicDown
	}
	return s.Memory.WriteAtomic(ctx, ops)
}

// plainLog is opLog without WriteAtomic: an author's own store.
type plainLog struct{ store.Store }

// TestJobStartRecordAndViewAtOnce (issue 40 item 5): the done record of an
// idempotent job.start and the task view's record of its job go in one
// store.WriteAtomic: a shared store commits once after the handler. A new
// job's record is created without a read; a job this process knows is read
// first. When the view's condition fails (another instance created or
// changed the record), the done record is written alone and the view as for
// any result; when the write fails, the result is kept and retried as
// before; a store without store.Atomic gets the ops one by one.
func TestJobStartRecordAndViewAtOnce(t *testing.T) {
	tests := []struct {
		name    string
		atomic  bool // the server's store implements store.Atomic
		known   bool // an earlier start of this process wrote the job's record
		another bool // another instance wrote the record first
		race    bool // another instance changes the record right after its read
		fail    bool
		want    []string // the operations after the pending record's
	}{
		{name: "a new job", atomic: true,
			want: []string{"write_atomic idempotency+a2a"}},
		{name: "a job this process knows", atomic: true, known: true,
			want: []string{"get a2a", "write_atomic idempotency+a2a"}},
		{name: "another instance created the record", atomic: true, another: true,
			want: []string{"write_atomic idempotency+a2a", "compare_and_swap idempotency",
				"put_if_absent a2a", "get a2a", "compare_and_swap a2a"}},
		{name: "the record changed since its read", atomic: true, known: true, race: true,
			want: []string{"get a2a", "write_atomic idempotency+a2a", "compare_and_swap idempotency",
				"get a2a", "compare_and_swap a2a"}},
		{name: "the write fails", atomic: true, fail: true,
			want: []string{"write_atomic idempotency+a2a", "put_if_absent a2a"}},
		{name: "a store without Atomic",
			want: []string{"compare_and_swap idempotency", "put_if_absent a2a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := &opLog{Memory: store.NewMemory()}
			var st store.Store = log
			if !tt.atomic {
				st = plainLog{log}
			}
			var runs atomic.Int64
			ts := newKeptServer(t, st, func(_ context.Context, req *sv.ActionRequest) (*sv.ActionResult, error) {
				res := sv.OK()
				res.JobState = &sv.JobState{Job: sv.Job{ID: req.JobID, AgentSlug: req.AgentSlug, MissionID: req.MissionID,
					Status: "running-" + strconv.FormatInt(runs.Add(1), 10), Source: sv.JobSource{Type: "fresh_start"}}}
				return res, nil
			})
			start := func(key string) (string, error) {
				req := ts.Request("job.start", map[string]any{"topic_id": "x"})
				req.MissionID, req.JobID, req.IdempotencyKey = "m-1", "job-1", key
				raw, err := ts.InvokeRaw(t.Context(), req)
				return string(raw), err
			}
			viewKey := taskview.Key(ts.Request("job.start", nil).Workspace.ID, "research-agent", "job-1")
			if tt.known {
				_, err := start("k-0")
				require.NoError(t, err)
			}
			if tt.another {
				_, _, err := log.Memory.PutIfAbsent(t.Context(), viewKey, []byte(`{"written by":"another instance"}`))
				require.NoError(t, err)
			}
			log.race.Store(tt.race)
			log.fail.Store(tt.fail)
			log.clear()
			res, err := start("k-1")
			require.NoError(t, err)
			want := `"status":"running-` + strconv.FormatInt(runs.Load(), 10) + `"`
			assert.Contains(t, res, want)

			ops := log.logged()
			first := slices.Index(ops, "put_if_absent idempotency")
			require.GreaterOrEqual(t, first, 0, "the pending record: %q", ops)
			var after []string
			for _, op := range ops[first+1:] {
				if strings.HasSuffix(op, "idempotency") || strings.Contains(op, "a2a") {
					after = append(after, op)
				}
			}
			if tt.fail {
				// The kept result's retries (a compare-and-swap of the record,
				// in the background) may already have run, before or after
				// the view's own write.
				after = slices.DeleteFunc(after, func(op string) bool { return op == "compare_and_swap idempotency" })
			}
			assert.Equal(t, tt.want, after)

			log.fail.Store(false)
			require.Eventually(t, func() bool { // the kept result is recorded
				again, err := start("k-1")
				return err == nil && again == res
			}, 10*time.Second, 50*time.Millisecond)
			view, found, err := log.Memory.Get(t.Context(), viewKey)
			require.NoError(t, err)
			require.True(t, found)
			assert.Contains(t, string(view), want, "the view holds this job.start's state")
		})
	}
}
