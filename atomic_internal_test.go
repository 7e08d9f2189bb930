package supervaizer

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/observe"
	"github.com/supervaize/supervaizer-go/store"
)

// TestStoreWrappersForwardAtomic: the SDK's store wrappers keep the
// wrapped store's atomic multi-write (a later op's failed condition writes
// nothing), and give the fallback (the first op written, store.ErrPartial)
// over a store without one.
func TestStoreWrappersForwardAtomic(t *testing.T) {
	wrappers := []struct {
		name string
		wrap func(store.Store, *storeRecorder) store.Store
	}{
		{"deadline", func(s store.Store, _ *storeRecorder) store.Store { return &deadlineStore{Store: s, d: time.Second} }},
		{"observed", func(s store.Store, rec *storeRecorder) store.Store { return observedStore{st: s, obs: rec} }},
		{"observed deadline", func(s store.Store, rec *storeRecorder) store.Store {
			return observedStore{st: &deadlineStore{Store: s, d: time.Second}, obs: rec}
		}},
	}
	inner := []struct {
		name   string
		open   func() store.Store
		atomic bool
	}{
		{"atomic", func() store.Store { return store.NewMemory() }, true},
		{"without Atomic", func() store.Store { return sharedStore{store.NewMemory()} }, false},
	}
	ctx := context.Background()
	for _, w := range wrappers {
		for _, in := range inner {
			t.Run(w.name+"/"+in.name, func(t *testing.T) {
				under := in.open()
				rec := &storeRecorder{}
				st := w.wrap(under, rec)
				_, stored, err := under.PutIfAbsent(ctx, "a", []byte("1"))
				require.NoError(t, err)
				require.True(t, stored)
				applied, err := store.WriteAtomic(ctx, st, []store.Op{
					store.PutIfAbsentOp("b", []byte("2")),
					store.CompareAndSwapOp("a", []byte("x"), []byte("1b")),
				})
				_, bWritten, gerr := under.Get(ctx, "b")
				require.NoError(t, gerr)
				if in.atomic {
					require.NoError(t, err)
					assert.False(t, applied)
					assert.False(t, bWritten, "an atomic write applied in part")
				} else {
					require.ErrorIs(t, err, store.ErrPartial)
					assert.True(t, applied)
					assert.True(t, bWritten, "the fallback applies the first op")
				}
				if w.name != "deadline" {
					require.Len(t, rec.ops, 1)
					assert.Equal(t, observe.StoreWriteAtomic, rec.ops[0].Kind)
				}
			})
		}
	}
}
