// Package group runs concurrent calls in shared runs without delaying any
// of them: a call that finds no run in progress runs at once, alone; the
// calls that arrive while one is in progress (they would wait for it
// anyway: a database's writer lock, a counter row) queue up, and when it
// ends the first of them runs all of them at once. The stores use it for
// their group commits: bbolt's transactions (store.Bolt) and the
// PostgreSQL event log's appends (store/postgres).
package group

import (
	"context"
	"sync"
)

// Queue groups the calls of [Queue.Do]. The zero value is ready to use; a
// Queue must not be copied after first use.
type Queue[T any] struct {
	mu    sync.Mutex
	busy  bool         // a run is in progress
	queue []*member[T] // calls waiting for it to end
}

// member is one call; one woken with lead set runs group.
type member[T any] struct {
	v     T
	done  chan struct{}
	lead  bool
	group []*member[T]
}

// Do has v run by run, alone or in a group with the calls queued beside it,
// in the order they queued, and returns once that run returned: run
// reports each call's outcome through its v. It returns nil then.
//
// When ctx ends while v waits in the queue, Do returns ctx.Err() at once;
// v stays in its group, which still runs (under ctx without its
// cancellation, when v was to lead it), so run may still act on it.
func (q *Queue[T]) Do(ctx context.Context, v T, run func(context.Context, []T)) error {
	m := &member[T]{v: v}
	q.mu.Lock()
	if q.busy {
		m.done = make(chan struct{})
		q.queue = append(q.queue, m)
		q.mu.Unlock()
		select {
		case <-m.done:
		case <-ctx.Done():
			go func() { // the group still runs: lead it if that falls to v
				<-m.done
				if m.lead {
					q.lead(context.WithoutCancel(ctx), m, run)
				}
			}()
			return ctx.Err()
		}
		if !m.lead {
			return nil
		}
	} else {
		q.busy = true
		q.mu.Unlock()
		m.group = []*member[T]{m}
	}
	q.lead(ctx, m, run)
	return nil
}

// lead runs m's group, then hands the queue to its first call and releases
// the rest of the group.
func (q *Queue[T]) lead(ctx context.Context, m *member[T], run func(context.Context, []T)) {
	items := make([]T, len(m.group))
	for i, o := range m.group {
		items[i] = o.v
	}
	run(ctx, items)
	q.mu.Lock()
	next := q.queue
	q.queue = nil
	if len(next) == 0 {
		q.busy = false
	}
	q.mu.Unlock()
	if len(next) > 0 {
		next[0].lead, next[0].group = true, next
		close(next[0].done)
	}
	for _, o := range m.group[1:] {
		close(o.done)
	}
}

// Queued returns how many calls wait for the run in progress.
func (q *Queue[T]) Queued() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.queue)
}
