package taskview

import (
	"bytes"
	"context"
	"log/slog"
	"time"
)

// The refreshers of watched tasks (spec open-questions item 72): however
// many streams and blocking calls watch a task, one goroutine per task per
// process refreshes it, through the refresh function of a follower (the
// agent's job.sync in process, under that follower's verified workspace
// and actor, or a read of the view in the store), every RefreshEvery while
// the task changes and backing off to IdleRefreshEvery while it does not.

const (
	// RefreshEvery is how often a watched task that changes is refreshed.
	RefreshEvery = 500 * time.Millisecond
	// IdleRefreshEvery bounds the backoff of a watched task that does not
	// change: it is refreshed at least this often.
	IdleRefreshEvery = 5 * time.Second
)

// RefreshFunc refreshes a task once: changed reports that the task's view
// changed, done that the task needs no more refreshing (it is final, or
// refreshing cannot work).
type RefreshFunc func(ctx context.Context) (changed, done bool)

// refresher is the one refresher of a task: its followers' refresh
// functions, oldest first (the oldest refreshes while it follows).
type refresher struct {
	followers []*follower
	cancel    context.CancelFunc
}

type follower struct{ refresh RefreshFunc }

// Follow registers a follower of the task at key with its refresh
// function; the first follower starts the task's refresher. release ends
// the follow; the last release stops the refresher.
func (tv *View) Follow(key string, refresh RefreshFunc) (release func()) {
	f := &follower{refresh: refresh}
	tv.mu.Lock()
	r := tv.refreshers[key]
	if r == nil {
		ctx, cancel := context.WithCancel(context.Background())
		r = &refresher{cancel: cancel}
		tv.refreshers[key] = r
		go tv.runRefresher(ctx, key, r)
	}
	r.followers = append(r.followers, f)
	tv.mu.Unlock()
	return func() {
		tv.mu.Lock()
		defer tv.mu.Unlock()
		for i, g := range r.followers {
			if g == f {
				r.followers = append(r.followers[:i], r.followers[i+1:]...)
				break
			}
		}
		if len(r.followers) == 0 && tv.refreshers[key] == r {
			delete(tv.refreshers, key)
			r.cancel()
		}
	}
}

// Refreshers is the number of tasks being refreshed.
func (tv *View) Refreshers() int {
	tv.mu.Lock()
	defer tv.mu.Unlock()
	return len(tv.refreshers)
}

// runRefresher refreshes the task at key until ctx ends or a refresh is
// done; a write of the view meanwhile (a result, an effect) counts as a
// change.
func (tv *View) runRefresher(ctx context.Context, key string, r *refresher) {
	every := RefreshEvery
	timer := time.NewTimer(every)
	defer timer.Stop()
	for {
		changed := tv.Watch(key)
		select {
		case <-ctx.Done():
			tv.Unwatch(key, changed)
			return
		case <-changed:
			every = RefreshEvery
			timer.Reset(every)
			continue
		case <-timer.C:
		}
		tv.Unwatch(key, changed)
		tv.mu.Lock()
		var refresh RefreshFunc
		if len(r.followers) > 0 {
			refresh = r.followers[0].refresh
		}
		tv.mu.Unlock()
		if refresh == nil {
			return
		}
		moved, done := refresh(ctx)
		if done { // the followers wait for the view's events; a new follower starts anew
			tv.mu.Lock()
			if tv.refreshers[key] == r {
				delete(tv.refreshers, key)
			}
			tv.mu.Unlock()
			r.cancel()
			return
		}
		if moved {
			every = RefreshEvery
		} else {
			every = min(2*every, IdleRefreshEvery)
		}
		timer.Reset(every)
	}
}

// Poll reads the record of key in the store and, when it differs from last
// (what the caller saw), publishes it to this process's streams and
// watchers, as a write here would: it brings a change made by another
// instance. It returns the record read.
func (tv *View) Poll(ctx context.Context, key string, last []byte) (Job, []byte, bool) {
	raw, found, err := tv.store.Get(ctx, key)
	if err != nil {
		tv.logger.LogAttrs(ctx, slog.LevelWarn, "a2a task view: read failed", slog.String("error", err.Error()))
		return Job{}, last, false
	}
	if !found || bytes.Equal(raw, last) {
		v, _ := DecodeRecord(last)
		return v, last, false
	}
	v, ok := DecodeRecord(raw)
	if !ok {
		return Job{}, last, false
	}
	tv.notify(key, raw)
	return v, raw, true
}

// notify publishes the changed record of key to the streams and wakes the
// watchers.
func (tv *View) notify(key string, val []byte) {
	tv.Events.Publish(key, taskEvent(key, val))
	tv.mu.Lock()
	for ch := range tv.watches[key] {
		close(ch)
	}
	delete(tv.watches, key)
	tv.mu.Unlock()
}
