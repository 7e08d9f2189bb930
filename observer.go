package supervaizer

import (
	"bytes"
	"context"
	"net/http"
	"time"

	"github.com/supervaize/supervaizer-go/observe"
	"github.com/supervaize/supervaizer-go/store"
)

// WithObserver installs o, the controller's observability hook (package
// observe; github.com/supervaize/supervaizer-go/otel implements it with
// OpenTelemetry): it sees each POST /a2a call, each workspace token
// verification, each event stream change and each store operation, and
// derives the context of the calls (the incoming trace context). Default:
// none, and then nothing is observed at no cost.
func WithObserver(o observe.Observer) Option { return func(c *config) { c.observer = o } }

// obsCallKey is the context key of the call an observer sees.
type obsCallKey struct{}

// observedCall returns the call of ctx being observed; nil when there is
// none. Call it only when s.obs is set: without an observer no call is.
func observedCall(ctx context.Context) *observe.Call {
	c, _ := ctx.Value(obsCallKey{}).(*observe.Call)
	return c
}

// observeA2A wraps the POST /a2a handler (the transport key included) in
// the observer's StartCall and its end.
func (s *Server) observeA2A(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := &observe.Call{Start: time.Now()}
		ctx, end := s.obs.StartCall(r.Context(), r.Header)
		r = r.WithContext(context.WithValue(ctx, obsCallKey{}, c))
		sw := &statusWriter{ResponseWriter: w}
		defer func() {
			c.Duration = time.Since(c.Start)
			c.HTTPStatus = sw.status
			end(c)
		}()
		next.ServeHTTP(sw, r)
	})
}

// statusWriter records the status of a response.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(p)
}

// Unwrap gives http.ResponseController the writer underneath.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// noteCall records what the request names in the observed call of ctx.
func (s *Server) noteCall(ctx context.Context, kind, agentSlug, name, workspaceID string) {
	if c := observedCall(ctx); c != nil {
		c.Kind, c.AgentSlug, c.Name, c.WorkspaceID = kind, agentSlug, name, workspaceID
	}
}

// noteIdempotency records what the idempotency layer did with the observed
// call of ctx: ran tells that the handler ran, raw is the result sent.
func (s *Server) noteIdempotency(ctx context.Context, ran bool, raw []byte) {
	c := observedCall(ctx)
	if c == nil {
		return
	}
	switch {
	case ran:
		c.Idempotency = observe.IdempotencyRan
	case bytes.Contains(raw, idemConflictCode):
		c.Idempotency = observe.IdempotencyConflict
	case bytes.Contains(raw, idemInProgressCode):
		c.Idempotency = observe.IdempotencyInProgress
	default:
		c.Idempotency = observe.IdempotencyReplayed
	}
}

// The error codes of the idempotency layer's own answers, as serialized.
var (
	idemConflictCode   = []byte(`"code":"idempotency_conflict"`)
	idemInProgressCode = []byte(`"code":"idempotency_in_progress"`)
)

// observeToken reports a token verification outcome (its code, never the token).
func (s *Server) observeToken(ctx context.Context, agentSlug, code string, start time.Time) {
	s.obs.Token(ctx, observe.Token{AgentSlug: agentSlug, Code: code, Duration: time.Since(start)})
}

// streamObserver is the event broker's Observe: the observer's Stream, nil
// without an observer.
func (s *Server) streamObserver() func(ctx context.Context, change string, dropped uint64, reason string) {
	if s.obs == nil {
		return nil
	}
	return func(ctx context.Context, change string, dropped uint64, reason string) {
		s.obs.Stream(ctx, observe.Stream{Change: observe.StreamChange(change), Dropped: dropped, Reason: reason})
	}
}

// observedStore reports each operation of a store to an observer. It
// forwards Exclusive, so that store.IsExclusive answers through it.
type observedStore struct {
	st  store.Store
	obs observe.Observer
}

var _ store.Exclusive = observedStore{}

func (o observedStore) done(ctx context.Context, kind string, start time.Time, err error) {
	o.obs.Store(ctx, observe.StoreOp{Kind: kind, Start: start, Duration: time.Since(start), Err: err})
}

func (o observedStore) Get(ctx context.Context, key string) ([]byte, bool, error) {
	start := time.Now()
	v, found, err := o.st.Get(ctx, key)
	o.done(ctx, observe.StoreGet, start, err)
	return v, found, err
}

func (o observedStore) PutIfAbsent(ctx context.Context, key string, value []byte) ([]byte, bool, error) {
	start := time.Now()
	existing, stored, err := o.st.PutIfAbsent(ctx, key, value)
	o.done(ctx, observe.StorePutIfAbsent, start, err)
	return existing, stored, err
}

func (o observedStore) CompareAndSwap(ctx context.Context, key string, old, new []byte) (bool, error) {
	start := time.Now()
	swapped, err := o.st.CompareAndSwap(ctx, key, old, new)
	o.done(ctx, observe.StoreCompareAndSwap, start, err)
	return swapped, err
}

func (o observedStore) Delete(ctx context.Context, key string) error {
	start := time.Now()
	err := o.st.Delete(ctx, key)
	o.done(ctx, observe.StoreDelete, start, err)
	return err
}

func (o observedStore) Scan(ctx context.Context, prefix string, fn func(key string, value []byte) error) error {
	start := time.Now()
	err := o.st.Scan(ctx, prefix, fn)
	o.done(ctx, observe.StoreScan, start, err)
	return err
}

func (o observedStore) Close() error { return o.st.Close() }

// Exclusive answers for the store underneath.
func (o observedStore) Exclusive() bool { return store.IsExclusive(o.st) }

// noteCode records the method and the JSON-RPC code (0 for a result) of
// the observed call of ctx.
func (s *Server) noteCode(ctx context.Context, method string, code Code) {
	if c := observedCall(ctx); c != nil {
		c.Method, c.Code = method, int(code)
	}
}

// startHandler starts observing a handler of the observed call of ctx.
func (s *Server) startHandler(ctx context.Context) (context.Context, func(error)) {
	c := observedCall(ctx)
	if c == nil {
		c = &observe.Call{} // a call that came around POST /a2a
	}
	return s.obs.StartHandler(ctx, c)
}
