package supervaizer

import (
	"context"
	"time"

	"github.com/supervaize/supervaizer-go/store"
)

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

func withStoreDeadline(s store.Store, d time.Duration) store.Store {
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
