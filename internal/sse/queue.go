package sse

// minQueueAlloc is the first storage size of a queue that receives an event.
const minQueueAlloc = 4

// queue is a FIFO ring of events bounded to limit entries and maxBytes of event memory
// (as [event.size] counts it). When a push would exceed either bound, the oldest entries
// are dropped first; the newest event is always kept, so an event larger than maxBytes on
// its own is queued alone. Storage is allocated on the first push and doubles up to
// limit, so an idle subscriber holds no storage and one that keeps up holds very little.
//
// A queue is not safe for concurrent use; subscriber guards it with its mutex.
type queue struct {
	buf      []*event
	head     int // index of the oldest entry
	n        int // number of entries
	limit    int
	bytes    int    // memory of the queued events
	maxBytes int    // 0: no byte bound
	dropped  uint64 // entries dropped since the queue was made
}

func newQueue(limit, maxBytes int) queue { return queue{limit: limit, maxBytes: maxBytes} }

// push appends e, dropping the oldest entries as the bounds require.
// It reports whether the queue was empty before.
func (q *queue) push(e *event) (wasEmpty bool) {
	wasEmpty = q.n == 0
	size := e.size()
	for q.n > 0 && (q.n == q.limit || q.maxBytes > 0 && q.bytes+size > q.maxBytes) {
		q.pop()
		q.dropped++
	}
	if q.n == len(q.buf) {
		q.grow()
	}
	i := q.head + q.n
	if i >= len(q.buf) {
		i -= len(q.buf)
	}
	q.buf[i] = e
	q.n++
	q.bytes += size
	return wasEmpty
}

// pop removes and returns the oldest entry, or nil if the queue is empty.
func (q *queue) pop() *event {
	if q.n == 0 {
		return nil
	}
	e := q.buf[q.head]
	q.buf[q.head] = nil // let the event be collected once every holder is done
	q.head++
	if q.head == len(q.buf) {
		q.head = 0
	}
	q.n--
	q.bytes -= e.size()
	return e
}

// len returns the number of queued entries.
func (q *queue) len() int { return q.n }

func (q *queue) grow() {
	size := min(max(2*len(q.buf), minQueueAlloc), q.limit)
	buf := make([]*event, size)
	for i := range q.n {
		j := q.head + i
		if j >= len(q.buf) {
			j -= len(q.buf)
		}
		buf[i] = q.buf[j]
	}
	q.buf, q.head = buf, 0
}
