package supervaizer

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/supervaize/supervaizer-go/internal/sse"
	"github.com/supervaize/supervaizer-go/store"
)

// EnvDatabaseURL names the environment variable that holds the URL of the
// database several instances share. The SDK does not read it: no database
// driver is built into it. An agent passes the URL to the module that
// provides the database (github.com/supervaize/supervaizer-go/store/postgres
// for PostgreSQL) and the result to [WithBackend]; see docs/deploying.md.
const EnvDatabaseURL = "SUPERVAIZER_DATABASE_URL"

// ReadinessPath answers 200 while the controller can serve, 503 while it
// cannot: shutting down, or its [store.Backend] unreachable or not yet caught up
// with the shared event stream. Load balancers route by it. It needs no key
// and reveals nothing else.
const ReadinessPath = "/readyz"

// Bounds of the calls the server makes to a Backend.
const (
	eventAppendTimeout = 10 * time.Second
	readinessTimeout   = 2 * time.Second
	followStopTimeout  = 5 * time.Second
)

// WithBackend keeps the server's state in b, shared with the other instances
// that use the same backend: b's store replaces [WithStore], and the events of
// GET /a2a/events go through b's event log, so that a subscriber of any
// instance receives every instance's events, in one id order, and can resume
// on any instance with Last-Event-ID. [ReadinessPath] then fails while b is
// unreachable. The caller closes b after [Server.Shutdown]. Default: none,
// the store of WithStore and an in-process event stream.
func WithBackend(b store.Backend) Option { return func(c *config) { c.backend = b } }

// attachBackend sets the store and the event stream from the configuration.
// It returns the store to use.
func (s *Server) attachBackend() store.Store {
	b := s.cfg.backend
	if b == nil {
		st := s.cfg.store
		if st == nil {
			st = store.NewMemory()
			s.logger.Warn("no store configured (WithStore): idempotency records are kept in memory and do not survive a restart")
		}
		s.storeName, s.eventsName = storeName(st), "in-process"
		return st
	}
	s.events = b.EventLog()
	s.storeName, s.eventsName = b.Name(), b.Name()+" (shared by the instances)"
	return b.Store()
}

// startFollowing starts following the shared event log, if any, when the
// server starts or first serves (seal), unless Shutdown has begun: NewServer
// starts no goroutine, so a Server built and dropped leaves nothing running.
func (s *Server) startFollowing() {
	if s.events == nil {
		return
	}
	s.followMu.Lock()
	defer s.followMu.Unlock()
	if s.closing.Load() {
		return
	}
	done := make(chan struct{})
	s.followDone = done
	go func() {
		defer close(done)
		// Every retained event goes to the broker's replay buffer, so that a
		// client resuming here after another instance misses nothing.
		_ = s.events.Follow(s.lifetime, 0, func(id uint64, name string, data []byte) {
			s.broker.Deliver(id, name, data)
		}, func() { s.eventsReady.Store(true) })
	}()
}

// storeName names a store in the startup log.
func storeName(st store.Store) string {
	switch st := st.(type) {
	case *store.Memory:
		return "memory"
	case *store.Bolt:
		return "bolt " + st.Path()
	default:
		return fmt.Sprintf("%T", st)
	}
}

// publish sends an event to the subscribers: through the shared event log
// when there is one, else through the in-process broker. A failed append is
// logged; the call that produced the event has succeeded regardless.
func (s *Server) publish(ctx context.Context, name string, data []byte) {
	if s.events == nil {
		s.broker.Publish(name, data)
		return
	}
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), eventAppendTimeout)
	defer cancel()
	if _, err := s.events.Append(actx, name, data); err != nil {
		s.logger.LogAttrs(ctx, slog.LevelError, "event not published: the shared event log failed",
			slog.String("event", name), slog.String("error", err.Error()))
	}
}

// serveEvents serves GET /a2a/events; with a shared event log, only once the
// retained events have been read (503 before, as a client retries).
func (s *Server) serveEvents(w http.ResponseWriter, r *http.Request) {
	if s.events != nil && !s.eventsReady.Load() {
		w.Header().Set("Retry-After", "1")
		writeDetail(w, http.StatusServiceUnavailable, "event stream starting")
		return
	}
	if _, index, ok := s.keys.lookup(r.Header.Get(canonicalAPIKeyHeader)); ok { // checked by requireKey
		r = r.WithContext(sse.WithHolder(r.Context(), keyHolder(index)))
	}
	s.broker.ServeHTTP(w, r)
}

// serveReadiness serves ReadinessPath.
func (s *Server) serveReadiness(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	detail := ""
	switch {
	case s.closing.Load():
		detail = "shutting down"
	case s.idem.holder != nil && s.idem.holder.stale():
		detail = "instance claim not renewed" // instance.go
	case s.cfg.backend != nil:
		ctx, cancel := context.WithTimeout(r.Context(), readinessTimeout)
		defer cancel()
		if err := s.cfg.backend.Ping(ctx); err != nil {
			// The error may name hosts: it goes to the log, not the answer.
			s.logger.LogAttrs(r.Context(), slog.LevelWarn, "not ready: the backend is unreachable",
				slog.String("backend", s.cfg.backend.Name()), slog.String("error", err.Error()))
			detail = "backend unreachable"
		} else if !s.eventsReady.Load() {
			detail = "event stream starting"
		}
	}
	if detail != "" {
		writeDetail(w, http.StatusServiceUnavailable, detail)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

// stopFollowing waits, within ctx, for the follower of the event log to end
// once the lifetime context is cancelled.
func (s *Server) stopFollowing(ctx context.Context) error {
	s.followMu.Lock()
	done := s.followDone
	s.followMu.Unlock()
	if done == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, followStopTimeout)
	defer cancel()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("supervaizer: the event log follower did not stop: %w", ctx.Err())
	}
}

// defaultStoreTimeout bounds each store call of a request ([WithStoreTimeout]).
const defaultStoreTimeout = 5 * time.Second

// deadlineStore gives every Get, PutIfAbsent, CompareAndSwap and Delete a
// deadline (spec item 73): a store that stops answering (a network that drops
// packets silently) fails the call after d instead of holding it until TCP
// gives up, and a result whose write fails so is kept and retried. Scan, which
// visits any number of keys, keeps the caller's context.
type deadlineStore struct {
	store.Store
	d time.Duration
}

var (
	_ store.Exclusive = (*deadlineStore)(nil)
	_ store.Atomic    = (*deadlineStore)(nil)
)

func withStoreDeadline(s store.Store, d time.Duration) store.Store {
	switch s.(type) {
	case *store.Memory, *store.Bolt:
		// In process: neither waits on a network, and neither reads the
		// context once an operation has begun, so a deadline would only cost
		// a timer per operation (a fifth of the task view's read on bbolt).
		return s
	}
	if d <= 0 {
		d = defaultStoreTimeout
	}
	return &deadlineStore{Store: s, d: d}
}

func (s *deadlineStore) Get(ctx context.Context, key string) ([]byte, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.d)
	defer cancel()
	return s.Store.Get(ctx, key)
}

func (s *deadlineStore) PutIfAbsent(ctx context.Context, key string, value []byte) ([]byte, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.d)
	defer cancel()
	return s.Store.PutIfAbsent(ctx, key, value)
}

func (s *deadlineStore) CompareAndSwap(ctx context.Context, key string, old, new []byte) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.d)
	defer cancel()
	return s.Store.CompareAndSwap(ctx, key, old, new)
}

func (s *deadlineStore) Delete(ctx context.Context, key string) error {
	ctx, cancel := context.WithTimeout(ctx, s.d)
	defer cancel()
	return s.Store.Delete(ctx, key)
}

// Exclusive forwards the wrapped store's answer.
func (s *deadlineStore) Exclusive() bool { return store.IsExclusive(s.Store) }

// WriteAtomic forwards to the wrapped store ([store.WriteAtomic]: atomic
// when it implements [store.Atomic], its fallback otherwise), under one
// deadline for the whole write.
func (s *deadlineStore) WriteAtomic(ctx context.Context, ops []store.Op) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.d)
	defer cancel()
	return store.WriteAtomic(ctx, s.Store, ops)
}
