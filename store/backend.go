package store

import "context"

// EventLog is the event stream of GET /a2a/events shared by several instances
// of a controller: every instance appends the events it publishes, and
// follows the log to serve every instance's events to its own subscribers.
// Implementations must be safe for concurrent use; the EventLog function of
// package storetest checks this contract.
type EventLog interface {
	// Append adds an event and returns its id, greater than the id of every
	// event appended before it by any instance, before a restart included.
	// The event must be durable, and visible to every follower, when Append
	// returns. With a context that is already done, Append returns an error
	// and appends nothing.
	Append(ctx context.Context, name string, data []byte) (id uint64, err error)

	// Follow calls deliver for every retained event with an id greater than
	// after, then for every event appended later with an id greater than
	// after, in id order and each once, until ctx is done; it then returns
	// ctx.Err(). An after that no event has (one never issued, or one
	// beyond every id) is no error: the events above it are delivered.
	// caughtUp, when not nil, is called once, after the events retained when
	// Follow started have been delivered. Follow recovers from failures on
	// its own (reconnecting and carrying on after the last event delivered);
	// deliver runs on its goroutine and returns quickly.
	Follow(ctx context.Context, after uint64, deliver func(id uint64, name string, data []byte), caughtUp func()) error
}

// Backend is the state that several instances of a controller behind one
// load balancer share: the [Store] of idempotency records, rule-checkpoint
// progress and instance claims, and the [EventLog] behind GET /a2a/events.
// A server uses one through supervaizer.WithBackend. Module
// github.com/supervaize/supervaizer-go/store/postgres provides one on
// PostgreSQL; [MemoryBackend] shares one between the servers of a process.
type Backend interface {
	// Store returns the shared store.
	Store() Store
	// EventLog returns the shared event stream.
	EventLog() EventLog
	// Ping reports whether the backend can be reached, for readiness.
	Ping(ctx context.Context) error
	// Name names the backend in the startup log, for example "postgres".
	Name() string
}
