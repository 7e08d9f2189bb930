// Package observe holds the observer hooks of a Supervaizer controller:
// the [Observer] interface that [github.com/supervaize/supervaizer-go.WithObserver]
// installs. The SDK calls it for what is not a call: each workspace token
// verification, each event stream subscribe, drop and disconnect, each
// store operation, and the Studio client's outgoing HTTP. Calls themselves
// are seen by an interceptor ([github.com/supervaize/supervaizer-go.Interceptor]),
// installed by the same option when the observer is one too. It depends on
// no telemetry library. The module github.com/supervaize/supervaizer-go/otel
// implements both with OpenTelemetry.
//
// With no observer installed the SDK calls nothing and allocates nothing for
// observation.
package observe

import (
	"context"
	"net/http"
	"time"
)

// Observer sees what a controller does besides its calls. Its methods are
// called concurrently and must not block: they may run on a request's path.
//
// Embed [Nop] to implement only the methods of interest: a method added to
// Observer in a later version is then a no-op for the embedding type.
type Observer interface {
	// Token is called with the outcome of each workspace token verification.
	Token(ctx context.Context, t Token)

	// Stream is called when an event stream (GET /a2a/events) opens, drops
	// events for a client too slow to read them, and closes.
	Stream(ctx context.Context, s Stream)

	// Store is called after each operation on the controller's store
	// (idempotency records, the task view, rule checkpoints, the instance
	// claim). ctx is the operation's: the call's when a call caused it.
	Store(ctx context.Context, op StoreOp)

	// Transport wraps the transport of the HTTP client the SDK builds for
	// Studio (from the environment), so that outgoing calls can carry the
	// trace context of the context they are made with. Return base to
	// leave it as is.
	Transport(base http.RoundTripper) http.RoundTripper
}

// Idempotency is the idempotency layer's part in a call.
type Idempotency string

// The idempotency outcomes of a call.
const (
	// IdempotencyNone: the call went around the layer (no idempotency key,
	// an action not declared idempotent, a surface, a failed admission).
	IdempotencyNone Idempotency = ""
	// IdempotencyRan: the handler ran and its result is recorded.
	IdempotencyRan Idempotency = "ran"
	// IdempotencyReplayed: the recorded result of an earlier call with the
	// same key was sent, byte for byte; the handler did not run.
	IdempotencyReplayed Idempotency = "replayed"
	// IdempotencyConflict: the key was already used with a different input
	// or job (idempotency_conflict).
	IdempotencyConflict Idempotency = "conflict"
	// IdempotencyInProgress: another attempt with the key is still running
	// (idempotency_in_progress).
	IdempotencyInProgress Idempotency = "in_progress"
)

// Token is the outcome of one workspace token verification. It never
// carries the token.
type Token struct {
	// AgentSlug is the agent the call was for.
	AgentSlug string
	// Code is "" for a verified token, else the workspace-token rules' code
	// (workspace_authorization_missing, _invalid, _expired, ...).
	Code string
	// Duration is how long the verification took.
	Duration time.Duration
}

// StreamChange is what happened to an event stream.
type StreamChange string

// The changes of an event stream.
const (
	StreamSubscribe  StreamChange = "subscribe"  // a client's stream opened
	StreamDrop       StreamChange = "drop"       // events queued for a slow client were dropped
	StreamDisconnect StreamChange = "disconnect" // the stream closed
)

// Stream is a change of one event stream.
type Stream struct {
	Change StreamChange
	// Dropped is the number of events dropped by this change (StreamDrop).
	Dropped uint64
	// Reason says why the stream closed (StreamDisconnect): "client gone",
	// "shutdown", "write timeout", ...
	Reason string
}

// The kinds of store operations, named after the methods of
// [github.com/supervaize/supervaizer-go/store.Store].
const (
	StoreGet            = "get"
	StorePutIfAbsent    = "put_if_absent"
	StoreCompareAndSwap = "compare_and_swap"
	StoreDelete         = "delete"
	StoreScan           = "scan"
	// StoreWriteAtomic is an atomic multi-write
	// (github.com/supervaize/supervaizer-go/store.WriteAtomic).
	StoreWriteAtomic = "write_atomic"
)

// StoreOp is one operation on the controller's store.
type StoreOp struct {
	// Kind is one of StoreGet, StorePutIfAbsent, StoreCompareAndSwap,
	// StoreDelete, StoreScan and StoreWriteAtomic.
	Kind string
	// Start is when the operation began; Duration how long it took.
	Start    time.Time
	Duration time.Duration
	// Err is the operation's error (nil on success).
	Err error
}

// Nop is an Observer that does nothing. Embed it in an Observer that
// implements only some methods.
type Nop struct{}

var _ Observer = Nop{}

// Token does nothing.
func (Nop) Token(context.Context, Token) {}

// Stream does nothing.
func (Nop) Stream(context.Context, Stream) {}

// Store does nothing.
func (Nop) Store(context.Context, StoreOp) {}

// Transport returns base.
func (Nop) Transport(base http.RoundTripper) http.RoundTripper { return base }
