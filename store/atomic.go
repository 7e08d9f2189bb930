package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Op is one conditional write of an atomic multi-write ([WriteAtomic]): a
// put-if-absent or a compare-and-swap of one key. Build it with
// [PutIfAbsentOp] or [CompareAndSwapOp].
type Op struct {
	// Key is the key the op writes.
	Key string
	// IfAbsent makes the op a put-if-absent: its condition is that Key does
	// not exist. Otherwise the op is a compare-and-swap: its condition is
	// that Key exists and holds Old byte for byte, as for
	// [Store.CompareAndSwap].
	IfAbsent bool
	// Old is the value a compare-and-swap expects; a put-if-absent ignores it.
	Old []byte
	// Value is the value written when the condition holds.
	Value []byte
}

// PutIfAbsentOp returns the op that stores value under key unless the key
// exists.
func PutIfAbsentOp(key string, value []byte) Op {
	return Op{Key: key, IfAbsent: true, Value: value}
}

// CompareAndSwapOp returns the op that replaces the value of key with new
// only if its current value equals old; a missing key never matches.
func CompareAndSwapOp(key string, old, new []byte) Op {
	return Op{Key: key, Old: old, Value: new}
}

// Atomic is implemented by a Store that applies several conditional writes
// as one: all of them or none. [Memory], [Bolt] and the PostgreSQL store
// implement it; call it through [WriteAtomic], which also serves a Store
// that does not. A wrapper of a store forwards WriteAtomic to keep it.
type Atomic interface {
	// WriteAtomic checks the condition of every op and, if they all hold,
	// writes every op's value and returns true; if any does not hold it
	// writes nothing and returns false. The checks and the writes are one
	// atomic step with respect to every other operation on the store, and
	// for a durable store one commit. The ops name distinct keys; a key
	// named twice, an empty or too long key returns an error wrapping
	// [ErrInvalidKey] and writes nothing. No ops returns true. The store
	// copies the values. A context that is already done returns ctx.Err()
	// and writes nothing.
	WriteAtomic(ctx context.Context, ops []Op) (applied bool, err error)
}

// ErrPartial is wrapped by the error [WriteAtomic] returns when, on a Store
// that does not implement [Atomic], the first op was applied and a later
// one was not.
var ErrPartial = errors.New("store: atomic write applied in part")

// WriteAtomic applies ops to s as one write when s implements [Atomic] (see
// it for the contract): all of them or none, applied reporting which.
//
// On a Store that does not implement Atomic (an author's own), it falls back
// to applying the ops one by one, in order, each with its own PutIfAbsent or
// CompareAndSwap, after the same checks of the keys. The first op decides:
// if its condition fails (or its write fails), nothing is written and
// WriteAtomic returns false (or the error), as the atomic version would.
// The later ops are best effort: if one of them fails its condition or its
// write, WriteAtomic stops there and returns true with an error wrapping
// [ErrPartial] (and the write's error, if any): the first op and the ops
// before the failing one stay written, the failing one and the ops after it
// are not applied. Another operation on the store may run between two ops.
func WriteAtomic(ctx context.Context, s Store, ops []Op) (applied bool, err error) {
	if a, ok := s.(Atomic); ok {
		return a.WriteAtomic(ctx, ops)
	}
	if err := checkOps(ops); err != nil {
		return false, err
	}
	for i, op := range ops {
		var ok bool
		if op.IfAbsent {
			_, ok, err = s.PutIfAbsent(ctx, op.Key, op.Value)
		} else {
			ok, err = s.CompareAndSwap(ctx, op.Key, op.Old, op.Value)
		}
		switch {
		case i == 0 && (err != nil || !ok):
			return false, err
		case err != nil:
			return true, fmt.Errorf("%w: op %d of %d: %w", ErrPartial, i+1, len(ops), err)
		case !ok:
			return true, fmt.Errorf("%w: op %d of %d: its condition does not hold", ErrPartial, i+1, len(ops))
		}
	}
	return true, nil
}

// checkOps checks the keys of an atomic multi-write: each valid, none twice.
func checkOps(ops []Op) error {
	seen := make(map[string]struct{}, len(ops))
	for i, op := range ops {
		if err := checkKey(op.Key); err != nil {
			return fmt.Errorf("op %d: %w", i+1, err)
		}
		if _, dup := seen[op.Key]; dup {
			return fmt.Errorf("%w: op %d names a key an earlier op names", ErrInvalidKey, i+1)
		}
		seen[op.Key] = struct{}{}
	}
	return nil
}

var (
	_ Atomic = (*Memory)(nil)
	_ Atomic = (*Bolt)(nil)
)

// WriteAtomic implements [Atomic.WriteAtomic] under the store's write lock.
func (m *Memory) WriteAtomic(ctx context.Context, ops []Op) (bool, error) {
	if m.closed.Load() {
		return false, ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if err := checkOps(ops); err != nil {
		return false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.data == nil {
		return false, ErrClosed
	}
	for _, op := range ops {
		v, found := m.data[op.Key]
		if op.IfAbsent && found || !op.IfAbsent && (!found || !bytes.Equal(v, op.Old)) {
			return false, nil
		}
	}
	for _, op := range ops {
		if op.IfAbsent {
			m.unsorted = append(m.unsorted, op.Key)
		}
		m.data[op.Key] = cloneValue(op.Value)
	}
	m.maybeReorder()
	return true, nil
}

// WriteAtomic implements [Atomic.WriteAtomic] in one transaction, one
// commit (shared with the writes that overlap it, like every write of the
// store). Ops whose conditions do not all hold cost no write of their own.
func (b *Bolt) WriteAtomic(ctx context.Context, ops []Op) (bool, error) {
	if b.closed.Load() {
		return false, ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if err := checkOps(ops); err != nil {
		return false, err
	}
	if len(ops) == 0 {
		return true, nil
	}
	// Every condition is checked before anything is written: the
	// transaction may be shared with other writes (committer), so a failed
	// condition must leave it untouched rather than roll it back.
	applied, err := b.update(func(tx *bolt.Tx) error {
		bk := tx.Bucket(bucketName)
		for _, op := range ops {
			k, v := bk.Cursor().Seek([]byte(op.Key))
			found := k != nil && string(k) == op.Key
			if op.IfAbsent && found || !op.IfAbsent && (!found || !bytes.Equal(v, op.Old)) {
				return errUnchanged
			}
		}
		for _, op := range ops {
			if err := bk.Put([]byte(op.Key), op.Value); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return false, b.wrap("atomic write", err)
	}
	return applied, nil
}
