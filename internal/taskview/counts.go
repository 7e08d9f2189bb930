package taskview

import (
	"context"
	"log/slog"
	"sync"

	"github.com/supervaize/supervaizer-go/a2a"
	"github.com/supervaize/supervaizer-go/a2atask"
	"github.com/supervaize/supervaizer-go/store"
)

// jobCounts are the figures of GET /.well-known/health: per agent, the jobs
// the controller tracks (the A2A task view) counted by
// status class. They are kept as the view changes, so the public health
// route reads counters and never the store. The first use (a health request
// or a job change) counts the records already in the view once: a
// controller restarted on a durable store reports the jobs it tracked.
type jobCounts struct {
	st     store.Store
	logger *slog.Logger

	seed sync.Once
	mu   sync.Mutex
	by   map[string]*jobCount // by agent slug
}

type jobCount struct{ total, completed, failed, inProgress int }

// jobClass is how a job status counts: completed, failed, in progress
// (every status that is not terminal, the agent's own vocabulary included),
// or none of these (a canceled job counts in the total only). The statuses
// are read as the task view reads them (taskStates).
type jobClass int

const (
	classInProgress jobClass = iota
	classCompleted
	classFailed
	classCanceled
)

func classOf(status string) jobClass {
	switch stateOf(status) {
	case a2atask.StateCompleted:
		return classCompleted
	case a2atask.StateFailed:
		return classFailed
	case a2atask.StateCanceled:
		return classCanceled
	default:
		return classInProgress
	}
}

func newJobCounts(st store.Store, logger *slog.Logger) *jobCounts {
	return &jobCounts{st: st, logger: logger, by: map[string]*jobCount{}}
}

// add moves one job of agent slug out of class from (when had) into class
// to. The caller holds c.mu.
func (c *jobCounts) add(slug string, had bool, from, to jobClass) {
	n := c.by[slug]
	if n == nil {
		n = &jobCount{}
		c.by[slug] = n
	}
	if !had {
		n.total++
	} else {
		n.bump(from, -1)
	}
	n.bump(to, 1)
}

func (n *jobCount) bump(cl jobClass, d int) {
	switch cl {
	case classCompleted:
		n.completed += d
	case classFailed:
		n.failed += d
	case classInProgress:
		n.inProgress += d
	}
}

// seeded counts the view's records once, before the first change or
// read. A failed scan is logged and leaves the counters to the changes seen
// from then on.
func (c *jobCounts) seeded(ctx context.Context) {
	c.seed.Do(func() {
		counted := map[string]*jobCount{}
		err := c.st.Scan(context.WithoutCancel(ctx), store.Prefix(taskNamespace), func(key string, value []byte) error {
			parts, err := store.ParseKey(key)
			if err != nil || len(parts) != 4 {
				return nil
			}
			v, ok := DecodeRecord(value)
			if !ok {
				return nil
			}
			n := counted[parts[2]]
			if n == nil {
				n = &jobCount{}
				counted[parts[2]] = n
			}
			n.total++
			n.bump(classOf(v.Status), 1)
			return nil
		})
		if err != nil {
			c.logger.LogAttrs(ctx, slog.LevelWarn, "health: counting the tracked jobs failed; the figures count the changes from now on",
				slog.String("error", err.Error()))
			return
		}
		c.mu.Lock()
		c.by = counted
		c.mu.Unlock()
	})
}

// changed records that the view of a job of agent slug went from the record
// old (found false: none) to the record val.
func (c *jobCounts) changed(slug string, old []byte, found bool, val []byte) {
	nv, ok := DecodeRecord(val)
	if !ok {
		return
	}
	from := classInProgress
	if found {
		ov, ok := DecodeRecord(old)
		if !ok {
			found = false // an unreadable record was not counted
		} else {
			from = classOf(ov.Status)
		}
	}
	c.mu.Lock()
	c.add(slug, found, from, classOf(nv.Status))
	c.mu.Unlock()
}

// Statistics returns the health figures of agent slug: its jobs in the
// view by status class, kept as records change (the public health route
// reads counters, never the store).
func (tv *View) Statistics(ctx context.Context, slug string) a2a.JobStatistics {
	return tv.counts.statistics(ctx, slug)
}

// statistics returns the figures of agent slug.
func (c *jobCounts) statistics(ctx context.Context, slug string) a2a.JobStatistics {
	c.seeded(ctx)
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.by[slug]
	if n == nil {
		return a2a.NewJobStatistics(0, 0, 0, 0)
	}
	return a2a.NewJobStatistics(n.total, n.completed, n.failed, n.inProgress)
}
