// Package store is the persistence layer of the SDK. Everything that must
// survive a restart (job.start idempotency records, rule-checkpoint progress,
// an agent's own state) goes through the small [Store] interface: get,
// put-if-absent, compare-and-swap, delete and scan by prefix.
//
// Two implementations ship here:
//
//   - [Memory], from [NewMemory]: in memory, for tests and stateless agents.
//   - [Bolt], from [Open]: one local file (go.etcd.io/bbolt) that needs no
//     server; every write is fsynced before it returns. [DefaultPath] gives its
//     default location.
//
// A multi-instance deployment shares a Store backed by a database server:
// module github.com/supervaize/supervaizer-go/store/postgres provides one on
// PostgreSQL, in a Go module of its own so that the SDK's build never includes
// a database driver. Other engines plug into the same interface and check
// themselves with package storetest.
//
// # Quick start
//
//	s, err := store.Open(store.DefaultPath(os.Getenv(store.EnvDataDir))) // supervaizer.ReadEnv(nil).DataDir in a controller
//	if err != nil {
//		return err // for example store.ErrLocked: another process holds the file
//	}
//	defer s.Close()
//	key := store.Key("idempotency", agentSlug, action, idempotencyKey)
//	existing, stored, err := s.PutIfAbsent(ctx, key, record)
//
// # Keys
//
// Build keys with [Key], which escapes each part so that different lists of
// parts never collide, and visit a subtree with [Store.Scan] and [Prefix].
// [ParseKey] recovers the parts. Keys are at most [MaxKeyLen] bytes.
//
// # Concurrency and consistency
//
// Every method is safe for concurrent use. PutIfAbsent and CompareAndSwap are
// atomic, so a read-modify-write loop over CompareAndSwap never loses an
// update. Scan may call back into the store; Memory and Bolt scan a snapshot.
// [WriteAtomic] applies several put-if-absent and compare-and-swap ops as one
// write, all or none, on a store that implements [Atomic] (Memory, Bolt and
// the PostgreSQL store do); on another store it applies them in order, the
// first op deciding.
package store
