package taskview

import (
	"bytes"
	"context"

	"github.com/supervaize/supervaizer-go/internal/wire"
	"github.com/supervaize/supervaizer-go/store"
)

// Write is the view's write of one job result, prepared by [View.Prepare]
// for a caller that commits it together with a write of its own
// ([store.WriteAtomic]): the idempotency layer's record of a job.start, so
// that a shared store commits the two at once (issue 40 item 5).
type Write struct {
	tv         *View
	slug, key  string
	old, value []byte
	found      bool
	digest     recordDigest
}

// Prepare does what Observe does for the result raw of a call of agent
// slug whose record belongs to workspace ws, up to the write, and returns
// the write of the record of the job whose job_state raw carries as an op:
// for a job this process does not know yet (a start), a put-if-absent,
// without a read; otherwise a compare-and-swap from the record it reads
// (or a put-if-absent when there is none). ok is false when there is
// nothing to write (no job_state, the record unchanged, or this process's
// last result for the job) or the read failed; Observe then does what it
// does without Prepare (the read is tried again there, and a failure
// logged).
//
// Once the op is written, call Done: Observe then finds raw to be this
// process's last result for the job and makes no store call. If the op is
// not written (its condition failed: another writer changed the record),
// Observe writes the view as it always does.
func (tv *View) Prepare(ctx context.Context, ws, slug string, raw []byte) (w *Write, op store.Op, ok bool) {
	if !bytes.Contains(raw, keyJobState) {
		return nil, store.Op{}, false
	}
	t := wire.Get()
	defer wire.Put(t)
	if !t.Parse(raw) || !isObject(t, 0) {
		return nil, store.Op{}, false
	}
	js, found := member(t, 0, "job_state")
	if !found || !isObject(t, js) {
		return nil, store.Op{}, false
	}
	id, status, text := recordFields(t, js)
	if len(id) == 0 {
		return nil, store.Op{}, false
	}
	state := t.Raw(js)
	var kb [128]byte
	kbuf := appendTaskKey(kb[:0], ws, slug, id)
	d := digestRecord(status, text, state)
	if tv.last.same(kbuf, d) {
		return nil, store.Op{}, false
	}
	key := string(kbuf)
	tv.counts.seeded(ctx) // before the first write, as put
	value := encodeRecord(string(status), string(text), state)
	if !tv.last.known(kbuf) {
		// The first result for the job in this process (a start): most
		// often no record exists yet, so create it without a read, as
		// Observe does (create). When one exists, the op's condition fails
		// and Observe, finding the job unknown still, does the rest.
		w = &Write{tv: tv, slug: slug, key: key, value: value, digest: d}
		return w, store.PutIfAbsentOp(key, value), true
	}
	old, found, err := tv.store.Get(ctx, key)
	if err != nil {
		return nil, store.Op{}, false
	}
	if found && sameRecord(old, status, text, state) {
		tv.last.remember(key, d) // found stored already, as put would
		return nil, store.Op{}, false
	}
	w = &Write{tv: tv, slug: slug, key: key, old: old, found: found, value: value, digest: d}
	if found {
		return w, store.CompareAndSwapOp(key, old, w.value), true
	}
	return w, store.PutIfAbsentOp(key, w.value), true
}

// Done records that the prepared op was written: the health figures, the
// A2A streams and watchers, and the job's last result, as put does after
// its own write.
func (w *Write) Done() {
	w.tv.counts.changed(w.slug, w.old, w.found, w.value)
	w.tv.notify(w.key, w.value)
	w.tv.last.remember(w.key, w.digest)
}
