package storetest_test

import (
	"testing"

	"github.com/supervaize/supervaizer-go/store"
	"github.com/supervaize/supervaizer-go/store/storetest"
)

// TestConformance is the package comment's example, as written, on the
// memory store.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		return store.NewMemory() // yours: a new, empty store that no other subtest uses
	})
}

func TestRunMemoryBackendStore(t *testing.T) {
	storetest.Run(t, func(*testing.T) store.Store { return store.NewMemoryBackend().Store() })
}

// TestRunEventLogMemory runs the event-log suite on the memory event log: the
// instances of a MemoryBackend share one log, which a restart of one of them
// keeps (the process goes on).
func TestRunEventLogMemory(t *testing.T) {
	storetest.RunEventLog(t, func(*testing.T) storetest.OpenEventLog {
		b := store.NewMemoryBackend()
		return func(*testing.T) (store.EventLog, func()) { return b.EventLog(), func() {} }
	})
}

// plainStore hides every method but those of store.Store: the conformance
// suite runs store.WriteAtomic's fallback on it.
type plainStore struct{ store.Store }

// TestRunWithoutAtomic runs the suite on a store that does not implement
// store.Atomic (an author's own): the fallback of store.WriteAtomic.
func TestRunWithoutAtomic(t *testing.T) {
	storetest.Run(t, func(*testing.T) store.Store { return plainStore{store.NewMemory()} })
}
