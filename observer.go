package supervaizer

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/conversation"
	"github.com/supervaize/supervaizer-go/internal/a2abind"
	"github.com/supervaize/supervaizer-go/internal/jsonrpc"
	"github.com/supervaize/supervaizer-go/internal/wire"
	"github.com/supervaize/supervaizer-go/observe"
	"github.com/supervaize/supervaizer-go/store"
)

// Interceptors wrap each call served on POST /a2a (connect's Interceptor,
// a2a-go's CallInterceptor); observer hooks (package observe) see what is
// not a call: token verifications, event streams, store operations and
// outgoing HTTP. Both are installed once, when the server is built: with
// none installed, the call path runs no check and allocates nothing for
// them.

// Call is one call served on POST /a2a, as an [Interceptor] sees it. The
// server completes it as the call goes: Method once the envelope is read;
// Kind, AgentSlug, Name and WorkspaceID once the request is read (the
// verified workspace once the token is verified); Code, HTTPStatus,
// Idempotency and Duration when the answer is written, before the
// interceptors' functions return.
//
// The values an interceptor may use as telemetry labels come from known sets
// (spec item 75): Method is a method the server serves or "other"; AgentSlug
// is a served agent or "unknown"; Name is an action or surface the agent has
// a handler for or "unknown". WorkspaceID is unbounded: not a label.
//
// A Call belongs to the server: read it during the call, never keep it
// after the function that received it returns.
type Call struct {
	// Method is the JSON-RPC method when the server serves it, "other" for
	// any other name, "" when no envelope was read (a refusal before it:
	// API key, body size, content type, shutdown, a malformed envelope).
	Method string
	// Streaming is true for a method answered with an event stream
	// (the streaming methods of the A2A bindings).
	Streaming bool
	// Kind is "action" or "surface" ("" for a call that names neither).
	Kind string
	// AgentSlug is the agent the request names, "unknown" when the server
	// does not serve it ("" before the request is read).
	AgentSlug string
	// Name is the action or surface id when the agent has a handler for
	// it, else "unknown".
	Name string
	// WorkspaceID is the verified workspace's id (the request's before the
	// token is verified, "" when unknown).
	WorkspaceID string
	// Code is the JSON-RPC error code of the answer, 0 for a result. An
	// action's business error (a result with status error) is a result.
	Code int
	// HTTPStatus is the status of the answer: 200 for every JSON-RPC
	// answer (errors included), else the refusal's (401 without the API
	// key, 413 for a body too large, 503 while shutting down, ...).
	HTTPStatus int
	// Idempotency is what the idempotency layer did with the call.
	Idempotency observe.Idempotency
	// Usage is the token usage the call's handlers reported
	// (conversation.ReportUsage), summed; zero when none.
	Usage conversation.Usage
	// Header is the request's header (for the incoming trace context).
	Header http.Header
	// Start is when the request arrived; Duration is how long the call took
	// until its answer was written (for a streaming method, until the
	// stream ended).
	Start    time.Time
	Duration time.Duration

	// The pipeline's state of the call.
	w     http.ResponseWriter
	r     *http.Request
	t     *wire.Tape
	rpc   jsonrpc.Request
	entry *served
	// keyScope is the scope of the call's API key and keyIndex its
	// position among the configured keys (readCall).
	keyScope KeyScope
	keyIndex int
	// verified is the workspace of an in-process refresh (a2aPipeline.Refresh),
	// verified by the call that watches the task: admit reads no token.
	verified *contracts.VerifiedWorkspaceContext
	refusal  refusal
	// The handler the HandlerFunc chain runs, and its answer.
	act     ActionHandler
	actReq  *ActionRequest
	actRes  *ActionResult
	surf    SurfaceHandler
	surfReq *SurfaceRequest
	surfRes *SurfaceResult
	// a2a is the call as an A2A binding sees it (dispatch.go).
	a2a a2abind.Call
}

// UnaryFunc serves a unary call: it returns when the answer is written.
type UnaryFunc func(ctx context.Context, c *Call)

// StreamFunc serves a streaming call: it returns when the stream ends.
type StreamFunc func(ctx context.Context, c *Call)

// HandlerFunc runs the agent's action or surface handler of a call; it
// returns the handler's error.
type HandlerFunc func(ctx context.Context, c *Call) error

// Interceptor wraps the calls served on POST /a2a: each unary call, each
// streaming call and, within a call, the run of the agent's handler. Each
// Wrap method is called once, when the server is built, never per call; it
// returns a function that does its work around next (which it must call,
// with the context the call continues with). A refusal before any method
// (no API key, a body too large, a malformed envelope) is a unary call of
// Method "".
//
// The functions run concurrently and on the request's path: they must not
// block.
type Interceptor interface {
	WrapUnary(next UnaryFunc) UnaryFunc
	WrapStream(next StreamFunc) StreamFunc
	WrapHandler(next HandlerFunc) HandlerFunc
}

// WithObserver installs o, the controller's observer hooks (package observe;
// github.com/supervaize/supervaizer-go/otel implements them with
// OpenTelemetry): each workspace token verification, each event stream
// change, each store operation and the Studio client's outgoing calls.
// When o is also an [Interceptor] (the otel observer is), it is installed
// as the first interceptor: it then sees each call. Default: none, and then
// nothing is observed at no cost.
func WithObserver(o observe.Observer) Option { return func(c *config) { c.observer = o } }

// WithInterceptors installs interceptors around each call, after the one of
// [WithObserver] when there is one: the first is the outermost.
func WithInterceptors(ics ...Interceptor) Option {
	return func(c *config) { c.interceptors = append(c.interceptors, ics...) }
}

// interceptors is the list a server's calls go through.
func (c *config) interceptorList() []Interceptor {
	var out []Interceptor
	if ic, ok := c.observer.(Interceptor); ok {
		out = append(out, ic)
	}
	for _, ic := range c.interceptors {
		if ic != nil {
			out = append(out, ic)
		}
	}
	return out
}

// chainUnary wraps next in ics, the first outermost.
func chainUnary(ics []Interceptor, next UnaryFunc) UnaryFunc {
	for i := len(ics) - 1; i >= 0; i-- {
		next = ics[i].WrapUnary(next)
	}
	return next
}

func chainStream(ics []Interceptor, next StreamFunc) StreamFunc {
	for i := len(ics) - 1; i >= 0; i-- {
		next = ics[i].WrapStream(next)
	}
	return next
}

func chainHandler(ics []Interceptor, next HandlerFunc) HandlerFunc {
	for i := len(ics) - 1; i >= 0; i-- {
		next = ics[i].WrapHandler(next)
	}
	return next
}

// runHandler is the innermost HandlerFunc: the handler c names.
func runHandler(ctx context.Context, c *Call) error {
	var err error
	if c.act != nil {
		c.actRes, err = callAction(ctx, c.act, c.actReq)
	} else {
		c.surfRes, err = callSurface(ctx, c.surf, c.surfReq)
	}
	return err
}

// calls recycles the Call of each request.
var calls = sync.Pool{New: func() any { return new(Call) }}

func getCall(w http.ResponseWriter, r *http.Request) *Call {
	c := calls.Get().(*Call)
	c.w, c.r, c.Header, c.Start = w, r, r.Header, time.Now()
	return c
}

func putCall(c *Call) {
	*c = Call{}
	calls.Put(c)
}

// use makes ctx, the context an interceptor continues the call with, the
// request's.
func (c *Call) use(ctx context.Context) {
	if ctx != c.r.Context() {
		c.r = c.r.WithContext(ctx)
	}
}

// end records the outcome of the call: its JSON-RPC code (0 for a result),
// its HTTP status and its duration.
func (c *Call) end(code, status int) {
	c.Code, c.HTTPStatus, c.Duration = code, status, time.Since(c.Start)
}

// unknownLabel is the label of an agent or a name the server does not serve.
const unknownLabel = "unknown"

// note records what the request names: kind, its agent a (nil when not
// served) and the action or surface id, each only when the server serves it
// (labels from known sets), and the workspace (the request's, then the
// verified one).
func (c *Call) note(a *Agent, kind, name, workspaceID string) {
	c.Kind, c.AgentSlug, c.Name, c.WorkspaceID = kind, unknownLabel, unknownLabel, workspaceID
	if a == nil {
		return
	}
	c.AgentSlug = a.slug
	if (kind == "action" && a.action(name) != nil) || (kind == "surface" && a.surface(name) != nil) {
		c.Name = name
	}
}

// noteIdempotency records what the idempotency layer did with the call:
// ran tells that the handler ran, raw is the result sent.
func noteIdempotency(c *Call, ran bool, raw []byte) {
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

// installHooks puts the observer's hooks where they observe: around the
// store, the workspace verifier and the event broker (the Studio client's
// transport is attach.go's). Without an observer nothing is wrapped.
func (s *Server) installHooks(st store.Store) store.Store {
	o := s.cfg.observer
	if o == nil {
		return st
	}
	s.verifier = observedVerifier{v: s.verifier, obs: o}
	return observedStore{st: st, obs: o}
}

// streamObserver is the event broker's Observe: the observer's Stream, nil
// without an observer.
func streamObserver(o observe.Observer) func(ctx context.Context, change string, dropped uint64, reason string) {
	if o == nil {
		return nil
	}
	return func(ctx context.Context, change string, dropped uint64, reason string) {
		o.Stream(ctx, observe.Stream{Change: observe.StreamChange(change), Dropped: dropped, Reason: reason})
	}
}

// observedVerifier reports each workspace token verification (its outcome's
// code, never the token) to an observer.
type observedVerifier struct {
	v   WorkspaceVerifier
	obs observe.Observer
}

func (o observedVerifier) VerifyWorkspace(ctx context.Context, c WorkspaceCheck) (*contracts.VerifiedWorkspaceContext, error) {
	start := time.Now()
	vc, err := o.v.VerifyWorkspace(ctx, c)
	code := ""
	var ae *AuthError
	switch {
	case errors.As(err, &ae):
		code = ae.Code
	case err != nil || vc == nil:
		code = authNotConfigured // as verifyWorkspace maps it
	}
	o.obs.Token(ctx, observe.Token{AgentSlug: c.AgentSlug, Code: code, Duration: time.Since(start)})
	return vc, err
}

// observedStore reports each operation of a store to an observer. It
// forwards Exclusive, so that store.IsExclusive answers through it, and
// WriteAtomic.
type observedStore struct {
	st  store.Store
	obs observe.Observer
}

var (
	_ store.Exclusive = observedStore{}
	_ store.Atomic    = observedStore{}
)

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

// WriteAtomic forwards to the store underneath ([store.WriteAtomic]:
// atomic when it implements [store.Atomic], its fallback otherwise) and
// reports one operation.
func (o observedStore) WriteAtomic(ctx context.Context, ops []store.Op) (bool, error) {
	start := time.Now()
	applied, err := store.WriteAtomic(ctx, o.st, ops)
	o.done(ctx, observe.StoreWriteAtomic, start, err)
	return applied, err
}

func (o observedStore) Close() error { return o.st.Close() }

// Exclusive answers for the store underneath.
func (o observedStore) Exclusive() bool { return store.IsExclusive(o.st) }
