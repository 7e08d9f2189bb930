package store

import (
	"context"
	"sort"
	"sync"
	"time"
)

// DefaultEventRetention is the most events a [MemoryEventLog] keeps for
// followers that start or resume later, as many as the in-process replay
// buffer of GET /a2a/events keeps.
const DefaultEventRetention = 1024

// eventEpochBits is the number of low id bits that count the events of one
// millisecond: ids have the form of the SDK's in-process event ids (a Unix
// time in milliseconds shifted left by 20 bits, then + 1 per event), so that
// they compare with them and keep increasing from one process to the next.
const eventEpochBits = 20

// MemoryEventLog is an [EventLog] in memory, shared by the servers of one
// process that use the same log (a [MemoryBackend]), as a database shares its
// log between instances. It keeps the latest [DefaultEventRetention] events;
// a follower that falls further behind misses the older ones. Its ids are the
// previous id + 1, or the clock in Unix milliseconds shifted left by 20 bits
// when that is greater. Create it with [NewMemoryEventLog].
type MemoryEventLog struct {
	mu     sync.Mutex
	events []loggedEvent // in id order, at most DefaultEventRetention
	last   uint64        // id of the last event appended
	wake   chan struct{} // closed and replaced on each append
	now    func() time.Time
}

type loggedEvent struct {
	id   uint64
	name string
	data []byte
}

// NewMemoryEventLog returns an empty event log in memory.
func NewMemoryEventLog() *MemoryEventLog {
	return &MemoryEventLog{wake: make(chan struct{}), now: time.Now}
}

var _ EventLog = (*MemoryEventLog)(nil)

// Append adds an event; see [EventLog.Append]. data is copied.
func (l *MemoryEventLog) Append(ctx context.Context, name string, data []byte) (uint64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	id := max(l.last+1, uint64(max(l.now().UnixMilli(), 0))<<eventEpochBits)
	l.last = id
	if len(l.events) == DefaultEventRetention {
		// Reslice, never shift in place: a follower may be reading a batch
		// of the array outside the lock; append writes only past it.
		l.events = l.events[1:]
	}
	l.events = append(l.events, loggedEvent{id: id, name: name, data: append([]byte(nil), data...)})
	close(l.wake)
	l.wake = make(chan struct{})
	return id, nil
}

// Follow delivers the retained events above after, then every later one; see
// [EventLog.Follow]. deliver must not modify the data it receives.
func (l *MemoryEventLog) Follow(ctx context.Context, after uint64, deliver func(id uint64, name string, data []byte), caughtUp func()) error {
	for {
		l.mu.Lock()
		first := sort.Search(len(l.events), func(i int) bool { return l.events[i].id > after })
		batch := l.events[first:len(l.events):len(l.events)]
		wake := l.wake
		l.mu.Unlock()
		for _, e := range batch {
			deliver(e.id, e.name, e.data)
			after = e.id
		}
		if caughtUp != nil {
			caughtUp()
			caughtUp = nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-wake:
		}
	}
}

// MemoryBackend is a [Backend] in memory: a [Memory] store and a
// [MemoryEventLog] that the servers of one process given the same backend
// share, as instances share a database. It is what a test of several
// instances needs; its state ends with the process. Create it with
// [NewMemoryBackend].
type MemoryBackend struct {
	store sharedMemory
	log   *MemoryEventLog
}

// sharedMemory is a Memory store that several servers share: not
// [Exclusive], so that none of them takes another's records in progress for
// abandoned ones.
type sharedMemory struct{ *Memory }

// Exclusive reports false: the servers of the backend share the store.
func (sharedMemory) Exclusive() bool { return false }

// NewMemoryBackend returns an empty backend in memory.
func NewMemoryBackend() *MemoryBackend {
	return &MemoryBackend{store: sharedMemory{NewMemory()}, log: NewMemoryEventLog()}
}

var _ Backend = (*MemoryBackend)(nil)

// Store returns the backend's store, in memory. It does not implement
// [Exclusive]: several servers share it.
func (b *MemoryBackend) Store() Store { return b.store }

// EventLog returns the backend's [MemoryEventLog].
func (b *MemoryBackend) EventLog() EventLog { return b.log }

// Ping reports ctx.Err(): memory is always reachable.
func (b *MemoryBackend) Ping(ctx context.Context) error { return ctx.Err() }

// Name returns "memory".
func (b *MemoryBackend) Name() string { return "memory" }
