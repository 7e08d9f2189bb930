package main

import (
	"context"
	"encoding/json"

	"github.com/supervaize/supervaizer-go/store"
)

// put writes v under key whatever is stored there. store.Store has no blind
// write: create with PutIfAbsent, replace with CompareAndSwap, and retry when
// another writer came in between.
func put(ctx context.Context, st store.Store, key string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	for {
		old, found, err := st.Get(ctx, key)
		if err != nil {
			return err
		}
		if !found {
			if _, stored, err := st.PutIfAbsent(ctx, key, b); err != nil || stored {
				return err
			}
			continue
		}
		if swapped, err := st.CompareAndSwap(ctx, key, old, b); err != nil || swapped {
			return err
		}
	}
}

// get reads the JSON value under key into v and reports whether it exists.
func get(ctx context.Context, st store.Store, key string, v any) (bool, error) {
	b, found, err := st.Get(ctx, key)
	if err != nil || !found {
		return false, err
	}
	return true, json.Unmarshal(b, v)
}
