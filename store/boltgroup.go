package store

import (
	"context"
	"errors"

	bolt "go.etcd.io/bbolt"

	"github.com/supervaize/supervaizer-go/internal/group"
)

// committer groups the writes to a bbolt database into shared commits
// without delaying any of them (package internal/group): a write that finds
// no commit in progress commits at once, alone; the writes that arrive
// while a commit is in progress (they would wait for bbolt's writer lock
// anyway) queue up, and when that commit ends the first of them commits all
// of them in one transaction, one fsync. (bbolt's own Batch groups the same
// way but holds every batch for MaxBatchDelay first, which slows a write
// that is alone in its batch: a one-connection job.start made 5 times
// slower.)
//
// A grouped write function may run more than once: when one of them fails,
// the transaction is rolled back, the failing one runs alone and the others
// run again in a new transaction. Each must therefore set what it reports
// afresh on every run; a call's results are those of the committed run.
type committer struct {
	db    *bolt.DB
	group group.Queue[*writeCall]
}

// writeCall is one write: its function, and its results once committed.
type writeCall struct {
	fn      func(*bolt.Tx) error
	changed bool
	err     error
}

// write runs fn in a write transaction and returns once that transaction
// is committed (bbolt syncs a commit to disk) or rolled back. fn returns
// errUnchanged when it wrote nothing; changed reports whether the
// committed run of fn wrote.
func (c *committer) write(fn func(*bolt.Tx) error) (changed bool, err error) {
	call := &writeCall{fn: fn}
	// The context never ends: a write waits for its commit.
	_ = c.group.Do(context.Background(), call, func(_ context.Context, group []*writeCall) { c.commit(group) })
	return call.changed, call.err
}

// commit runs the writes of group in one transaction and sets their
// results; a write that fails runs alone, the others again.
func (c *committer) commit(group []*writeCall) {
	for len(group) > 0 {
		if len(group) == 1 {
			group[0].changed, group[0].err = c.solo(group[0].fn)
			return
		}
		failed := -1
		err := c.db.Update(func(tx *bolt.Tx) error {
			wrote := false
			for i, w := range group {
				w.changed = false
				switch err := w.fn(tx); {
				case errors.Is(err, errUnchanged):
				case err != nil:
					failed = i
					return err
				default:
					w.changed, wrote = true, true
				}
			}
			if !wrote {
				return errUnchanged // nothing to write: no commit, no fsync
			}
			return nil
		})
		if failed >= 0 {
			w := group[failed]
			w.changed, w.err = c.solo(w.fn)
			group = append(group[:failed:failed], group[failed+1:]...)
			continue
		}
		if errors.Is(err, errUnchanged) {
			err = nil
		}
		for _, w := range group {
			if err != nil {
				w.changed = false
			}
			w.err = err
		}
		return
	}
}

// solo runs fn alone in a transaction; one that wrote nothing is rolled
// back (no disk write).
func (c *committer) solo(fn func(*bolt.Tx) error) (bool, error) {
	switch err := c.db.Update(fn); {
	case errors.Is(err, errUnchanged):
		return false, nil
	case err != nil:
		return false, err
	}
	return true, nil
}
