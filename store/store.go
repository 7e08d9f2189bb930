package store

import (
	"context"
	"errors"
	"fmt"
)

// MaxKeyLen is the longest key, in bytes, that every Store accepts.
// It is small enough to be a primary key in common SQL engines, so code that
// works against [Memory] or [Bolt] keeps working against a database-backed Store.
const MaxKeyLen = 1024

// Errors returned by the stores of this package. Test them with [errors.Is].
var (
	// ErrClosed is returned by every method of a Store after Close, including a second Close.
	ErrClosed = errors.New("store: closed")
	// ErrInvalidKey is returned for an empty key or a key longer than
	// MaxKeyLen, and by ParseKey for a string that Key cannot produce.
	ErrInvalidKey = errors.New("store: invalid key")
	// ErrLocked is returned by [Open] when another process (or another open
	// handle) holds the database file beyond the lock timeout.
	ErrLocked = errors.New("store: locked by another process")
)

// Store is the persistence interface of the SDK: everything that must survive
// a restart (idempotency records, rule-checkpoint progress, agent state) goes
// through it. Keys are non-empty byte strings of at most [MaxKeyLen] bytes
// (build them with [Key]); values are arbitrary bytes, possibly empty.
//
// Every implementation honours this contract, which the Run function of package
// storetest checks:
//
//   - Values are copied in and out: a caller never aliases the store's memory,
//     and may modify or keep any slice it passes in or gets back.
//   - A method called with a context that is already done returns ctx.Err()
//     and has no effect.
//   - An empty or too long key returns an error wrapping [ErrInvalidKey].
//   - All methods are safe for concurrent use; PutIfAbsent and CompareAndSwap
//     are atomic.
//   - After Close every method, Close included, returns [ErrClosed].
//   - A write that returned nil is visible to every later call.
type Store interface {
	// Get returns the value stored under key; found is false when the key
	// does not exist.
	Get(ctx context.Context, key string) (value []byte, found bool, err error)

	// PutIfAbsent stores value under key unless the key exists. It reports
	// whether it stored the value; when it did not, existing is the value
	// already stored.
	PutIfAbsent(ctx context.Context, key string, value []byte) (existing []byte, stored bool, err error)

	// CompareAndSwap replaces the value of key with new only if its current
	// value equals old byte for byte (an empty old matches an empty value).
	// A missing key never matches: CompareAndSwap returns false and stores
	// nothing; create keys with PutIfAbsent.
	CompareAndSwap(ctx context.Context, key string, old, new []byte) (swapped bool, err error)

	// Delete removes key. Deleting a missing key is not an error.
	Delete(ctx context.Context, key string) error

	// Scan calls fn for every key that starts with prefix, in ascending byte
	// order of the keys; an empty prefix visits every key. fn owns the value
	// it receives. Scan checks ctx before each call of fn and returns ctx.Err()
	// once it is done. If fn returns an error, the scan stops and Scan returns
	// that error unchanged.
	//
	// fn may call any method of the store, Scan included, without deadlock.
	// Each key is visited at most once, and every key that exists, unchanged,
	// for the whole scan is visited with its value; implementations may give
	// more (Memory and Bolt visit a snapshot taken when Scan starts).
	Scan(ctx context.Context, prefix string, fn func(key string, value []byte) error) error

	// Close releases the store. Writes that returned before Close are durable
	// for a durable store.
	Close() error
}

// checkKey reports whether key is usable by a Store.
func checkKey(key string) error {
	switch {
	case key == "":
		return fmt.Errorf("%w: empty", ErrInvalidKey)
	case len(key) > MaxKeyLen:
		return fmt.Errorf("%w: %d bytes, limit %d", ErrInvalidKey, len(key), MaxKeyLen)
	}
	return nil
}

// Exclusive is implemented by a Store that only one process can use at a time
// (an embedded file held under a lock, or memory). Knowing it lets a restarted
// process treat every record left pending by an earlier process on the same
// store as abandoned at once, instead of waiting for a lease: no other live
// process can own it. A Store shared by several processes must not implement
// it (or must return false).
type Exclusive interface {
	// Exclusive reports whether this process is the store's only user.
	Exclusive() bool
}

// IsExclusive reports whether s is a store only this process uses: it
// implements [Exclusive] and says so. A wrapper of a store forwards
// Exclusive to keep the answer.
func IsExclusive(s Store) bool {
	ex, ok := s.(Exclusive)
	return ok && ex.Exclusive()
}

// Exclusive reports true: a Memory store belongs to its process.
func (m *Memory) Exclusive() bool { return true }

// Exclusive reports true: the file lock taken by [Open] keeps every other
// process out while this one holds the store.
func (b *Bolt) Exclusive() bool { return true }
