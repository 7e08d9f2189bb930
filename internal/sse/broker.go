package sse

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"sort"
	"sync"
	"time"
)

// Defaults applied by [NewBroker] to zero (or negative) [Options] fields.
const (
	// DefaultQueueSize is the number of events queued for one subscriber (spec: 100).
	DefaultQueueSize = 100
	// DefaultQueueBytes bounds the memory of the events queued for one subscriber
	// (4 MiB, open questions item 67).
	DefaultQueueBytes = 4 << 20
	// DefaultWriteTimeout is how long one write to a stream may take (30 s, open
	// questions item 67): a client that stops reading is disconnected after it.
	DefaultWriteTimeout = 30 * time.Second
	// DefaultMaxStreams is the number of streams open at once beyond which a new
	// one is answered 503 with Retry-After.
	DefaultMaxStreams = 1000
	// DefaultReplaySize is the number of recent events kept for Last-Event-ID replay.
	DefaultReplaySize = 1024
	// DefaultReplayBytes bounds the memory of the events kept for replay (16 MiB).
	DefaultReplayBytes = 16 << 20
	// DefaultHeartbeat is the silence after which a heartbeat event is sent (spec: 15 s).
	DefaultHeartbeat = 15 * time.Second
	// DefaultResumeGrace bounds how far a shared broker's fan-out may lag the
	// instance a resuming client comes from (see Options.Shared).
	DefaultResumeGrace = 3 * time.Second
)

// retryAfter is the Retry-After, in seconds, of a stream refused because
// MaxStreams are open.
const retryAfter = "5"

// Publisher is the publishing side of the stream, implemented by [*Broker]. Code that
// emits events depends on this interface so that a cross-instance fan-out can be plugged
// in later (see the package documentation).
type Publisher interface {
	// Publish sends the event to every subscriber and returns its id.
	// The publisher owns data afterwards: the caller must not modify it.
	Publish(name string, data []byte) uint64
}

var _ Publisher = (*Broker)(nil)

// IDSource assigns the ids of published events. The broker calls Next once per
// [Broker.Publish], under its lock, so an implementation needs no locking of
// its own when it serves one broker; the ids it returns must increase.
type IDSource interface {
	Next() uint64
}

// Sequence is an [IDSource] counting from a start: its ids are start+1,
// start+2, … It is not safe for concurrent use on its own.
type Sequence struct{ last uint64 }

// NewSequence returns a Sequence whose first id is start+1.
func NewSequence(start uint64) *Sequence { return &Sequence{last: start} }

// Next returns the next id.
func (s *Sequence) Next() uint64 {
	s.last++
	return s.last
}

// BootEpochBits is the number of low id bits a boot counts in; see [BootSequence].
const BootEpochBits = 20

// BootSequence returns the default id source of a broker created at boot: a
// [Sequence] starting at the boot time in Unix milliseconds shifted left by
// [BootEpochBits]. Ids are consecutive within a boot and every id of a later
// boot is greater than every id of an earlier one — as long as the wall
// clock does not go back between the two and the earlier boot published
// fewer than 2^20 (about a million) events per millisecond it ran, which no
// process comes near. A Last-Event-ID from an earlier boot therefore replays
// everything the new boot retains.
func BootSequence(boot time.Time) *Sequence {
	return NewSequence(uint64(max(boot.UnixMilli(), 0)) << BootEpochBits)
}

// Options configures a [Broker]. The zero value is ready to use.
type Options struct {
	// QueueSize bounds the events waiting to be written to one subscriber; when the queue
	// is full the oldest queued event is dropped. Default: DefaultQueueSize.
	QueueSize int
	// QueueBytes bounds the memory of the events waiting to be written to one
	// subscriber (payload and framing, as allocated): the oldest queued events are
	// dropped first; the newest is always kept, so an event larger than QueueBytes
	// on its own waits alone. Default: DefaultQueueBytes.
	QueueBytes int
	// WriteTimeout bounds each write to a stream, flush included: a client that
	// reads nothing for that long is disconnected, and the events its stream holds
	// are released; it resumes with Last-Event-ID. It applies where the
	// ResponseWriter supports write deadlines ([net/http.ResponseController]), as
	// net/http's does. Default: DefaultWriteTimeout.
	WriteTimeout time.Duration
	// MaxStreams bounds the streams open at once: beyond it ServeHTTP answers 503
	// with Retry-After. Default: DefaultMaxStreams.
	MaxStreams int
	// ReplaySize bounds the number of recent events kept for Last-Event-ID
	// replay. Default: DefaultReplaySize.
	ReplaySize int
	// ReplayBytes bounds the memory of the events kept for replay (payload and
	// framing, as allocated): the oldest are evicted first, and an event larger
	// than ReplayBytes on its own is delivered to open streams but not kept.
	// Default: DefaultReplayBytes.
	ReplayBytes int
	// IDs assigns the ids of published events. Default: [BootSequence] of the
	// time the broker is created, so ids increase across restarts.
	IDs IDSource
	// Heartbeat is how long a stream may stay silent before a heartbeat event is written.
	// Default: DefaultHeartbeat.
	Heartbeat time.Duration
	// Logger receives stream lifecycle records. Default: discard everything.
	Logger *slog.Logger
	// Shared tells that the broker is fed by [Broker.Deliver] from a log that
	// other brokers (other instances) follow too: a client resuming with an
	// id this broker has not delivered yet comes from a broker that was
	// ahead, so the events up to that id, delivered here within ResumeGrace,
	// are not sent to it again. An id this broker has not reached by then was
	// issued by no instance (it comes from another backend, say) and is
	// treated as unknown: the client receives every live event, those of the
	// grace period included. An unshared broker numbers its own events and
	// sends a client resuming from an unknown later id every live event.
	Shared bool
	// ResumeGrace is how long a shared broker waits to reach the id of a
	// client that resumes ahead of it (see Shared). Default:
	// DefaultResumeGrace.
	ResumeGrace time.Duration
	// Limiter, when set, bounds the streams open at once instead of
	// MaxStreams, shared with the other brokers given it, in all and per
	// holder (WithHolder): beyond it a new stream is answered 503 with
	// Retry-After.
	Limiter *Limiter
	// Observe, when set, is called when a stream opens (change "subscribe"),
	// when its queue drops events for a slow client ("drop", with the number
	// dropped since the last call) and when it closes ("disconnect", with
	// the reason it ended). Default: nothing is called.
	Observe func(ctx context.Context, change string, dropped uint64, reason string)
}

// Broker fans published events out to Server-Sent Events streams. It implements
// [Publisher] and [net/http.Handler]; its methods are safe for concurrent use.
// Create one with [NewBroker].
type Broker struct {
	queueSize    int
	queueBytes   int
	writeTimeout time.Duration
	maxStreams   int
	heartbeat    time.Duration
	logger       *slog.Logger
	shared       bool
	resumeGrace  time.Duration
	observe      func(ctx context.Context, change string, dropped uint64, reason string)
	limiter      *Limiter

	mu     sync.Mutex
	ids    IDSource
	lastID uint64        // id of the last published event
	replay ring          // recent events for Last-Event-ID
	subs   []*subscriber // open streams; subscriber.idx is the position here
	// routed holds the streams of one topic (Stream.Topic) by event name:
	// an event reaches only the streams of its name, and those in subs
	// with no topic.
	routed map[string][]*subscriber
	closed bool          // Shutdown was called
	done   chan struct{} // closed by Shutdown: streams end
	idle   chan struct{} // closed once closed is set and subs is empty
}

// subscriber is one open stream.
type subscriber struct {
	idx int // position in Broker.subs, guarded by Broker.mu
	// topic is the event name the stream follows ("" every event) and tidx
	// its position in Broker.routed[topic]; guarded by Broker.mu.
	topic  string
	tidx   int
	holder string // the holder counted by Broker.limiter

	wake chan struct{}            // capacity 1, signalled when the queue stops being empty
	rc   *http.ResponseController // sets the deadline of each write

	// wmu orders the stream's own write deadlines with the past deadline Shutdown
	// sets to interrupt a blocked write: a write starts, with its deadline, only
	// before Shutdown marks the stream interrupted.
	wmu sync.Mutex
	// writing is set while the stream writes; guarded by wmu. Shutdown interrupts
	// only streams that are writing, so that idle streams end cleanly (with the
	// final chunk).
	writing bool
	// interrupted records that Shutdown ended the stream; guarded by wmu.
	interrupted bool
	// noDeadline records that the ResponseWriter does not support write
	// deadlines, so that writes stop asking (each refusal allocates an error);
	// guarded by wmu.
	noDeadline bool
	// ahead is, on a shared broker (Options.Shared), the Last-Event-ID the stream
	// resumed from when the broker had not delivered that id yet (0 otherwise);
	// guarded by Broker.mu. Events with a lower id are held, not queued, until
	// the broker delivers an id at least as high, within Options.ResumeGrace:
	// the client came from an instance that was ahead and has them, so they are
	// dropped. Otherwise no instance issued the id (it comes from another
	// backend, say): it is unknown (open questions item 67), and the held
	// events are queued, as every later one.
	ahead uint64
	held  queue // guarded by Broker.mu

	mu sync.Mutex
	q  queue
}

// NewBroker returns a broker configured by opts, with zero fields set to their defaults.
func NewBroker(opts Options) *Broker {
	if opts.QueueSize <= 0 {
		opts.QueueSize = DefaultQueueSize
	}
	if opts.QueueBytes <= 0 {
		opts.QueueBytes = DefaultQueueBytes
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = DefaultWriteTimeout
	}
	if opts.MaxStreams <= 0 {
		opts.MaxStreams = DefaultMaxStreams
	}
	if opts.ReplaySize <= 0 {
		opts.ReplaySize = DefaultReplaySize
	}
	if opts.ReplayBytes <= 0 {
		opts.ReplayBytes = DefaultReplayBytes
	}
	if opts.IDs == nil {
		opts.IDs = BootSequence(time.Now())
	}
	if opts.Heartbeat <= 0 {
		opts.Heartbeat = DefaultHeartbeat
	}
	if opts.ResumeGrace <= 0 {
		opts.ResumeGrace = DefaultResumeGrace
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Broker{
		queueSize:    opts.QueueSize,
		queueBytes:   opts.QueueBytes,
		writeTimeout: opts.WriteTimeout,
		maxStreams:   opts.MaxStreams,
		heartbeat:    opts.Heartbeat,
		logger:       opts.Logger,
		shared:       opts.Shared,
		resumeGrace:  opts.ResumeGrace,
		observe:      opts.Observe,
		limiter:      opts.Limiter,
		routed:       map[string][]*subscriber{},
		ids:          opts.IDs,
		replay:       ring{buf: make([]*event, opts.ReplaySize), maxBytes: opts.ReplayBytes},
		done:         make(chan struct{}),
		idle:         make(chan struct{}),
	}
}

// Publish assigns the next event id (from Options.IDs; never lower than or equal to the
// previous one), keeps the event for replay within the replay bounds and queues it for
// every open stream, then returns the id. It never waits for a client: a subscriber
// whose queue is full loses its oldest queued event instead.
//
// The broker owns data after the call and shares the same bytes among all subscribers
// and the replay buffer: the caller must not modify it. data should be one JSON value;
// line breaks in it are sent as several data lines. Line breaks in name are replaced
// by spaces. Events published after [Broker.Shutdown] are kept for replay only.
func (b *Broker) Publish(name string, data []byte) uint64 {
	name, data = singleLine(name), splitDataLines(data)
	// Allocated before the lock: an allocation may have to help the garbage
	// collector, which must not happen while every other publisher waits.
	e := allocEvent(name, data)

	b.mu.Lock()
	defer b.mu.Unlock()
	e.setID(max(b.ids.Next(), b.lastID+1), name)
	b.deliverLocked(e)
	return b.lastID
}

// Deliver is Publish with an id assigned elsewhere, for a fan-out that numbers the
// events of several instances from one sequence (for example a database sequence) and
// hands each instance's broker every event. The id must be greater than every id this
// broker has delivered or published; otherwise the event is dropped and Deliver returns
// false. A broker fed by Deliver should not also Publish (its ids would interleave with
// the fan-out's).
func (b *Broker) Deliver(id uint64, name string, data []byte) bool {
	name, data = singleLine(name), splitDataLines(data)
	e := allocEvent(name, data)

	b.mu.Lock()
	defer b.mu.Unlock()
	if id <= b.lastID {
		return false
	}
	e.setID(id, name)
	b.deliverLocked(e)
	return true
}

// LastID returns the id of the last event published or delivered, 0 if none.
func (b *Broker) LastID() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.lastID
}

// deliverLocked keeps the numbered event for replay and queues it for every stream.
func (b *Broker) deliverLocked(e *event) {
	b.lastID = e.id
	b.replay.add(e)
	for _, s := range b.subs {
		if s.topic != "" {
			continue // routed below, by name
		}
		b.queueLocked(s, e)
	}
	for _, s := range b.routed[e.name] {
		b.queueLocked(s, e)
	}
}

// queueLocked queues e for the stream s.
func (b *Broker) queueLocked(s *subscriber, e *event) {
	if s.ahead != 0 {
		if e.id < s.ahead {
			s.held.push(e)
			return
		}
		// The client's id is reached: it was issued, and the client has
		// the held events, and this one if it bears that id.
		known := e.id == s.ahead
		s.ahead, s.held = 0, queue{}
		if known {
			return
		}
	}
	s.mu.Lock()
	wasEmpty := s.q.push(e)
	s.mu.Unlock()
	if wasEmpty {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

// Subscribers returns the number of open streams.
func (b *Broker) Subscribers() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.subs)
}

// ServeHTTP streams events to one client until the request context is done, a write
// fails or the broker is shut down. The stream starts with a supervaizer.connected event,
// then the events retained after the id in a valid Last-Event-ID header, then live events.
//
// Each write has the deadline Options.WriteTimeout: a client that stops reading is
// disconnected, and its queued events released. It answers 500 if w cannot flush (not
// even through Unwrap), 503 after Shutdown, and 503 with Retry-After while
// Options.MaxStreams streams are open.
func (b *Broker) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	if !canFlush(w) {
		b.logger.LogAttrs(ctx, slog.LevelError, "sse stream refused: response writer cannot flush")
		writeError(w, http.StatusInternalServerError, "streaming is not supported")
		return
	}
	after, resume := ParseLastEventID(r.Header.Get("Last-Event-ID"))
	rc := http.NewResponseController(w)
	sub, backlog, err := b.subscribe(r.Context(), rc, after, resume)
	switch err {
	case nil:
	case errTooManyStreams:
		b.logger.LogAttrs(ctx, slog.LevelWarn, "sse stream refused: too many open streams",
			slog.Int("max_streams", b.maxStreams), slog.String("remote_addr", r.RemoteAddr))
		w.Header().Set("Retry-After", retryAfter)
		writeError(w, http.StatusServiceUnavailable, "too many event streams")
		return
	default:
		writeError(w, http.StatusServiceUnavailable, "server is shutting down")
		return
	}
	defer b.unsubscribe(sub)

	b.logger.LogAttrs(ctx, slog.LevelDebug, "sse stream opened",
		slog.String("remote_addr", r.RemoteAddr), slog.Int("replayed", len(backlog)))
	st := stream{b: b, w: w, rc: rc, sub: sub}
	b.mu.Lock()
	ahead := sub.ahead != 0
	b.mu.Unlock()
	if ahead {
		grace := time.NewTimer(b.resumeGrace)
		defer grace.Stop()
		st.grace = grace.C
	}
	if b.observe != nil {
		b.observe(ctx, "subscribe", 0, "")
	}
	reason := st.run(ctx, backlog)
	if b.observe != nil {
		b.observe(ctx, "disconnect", 0, reason)
	}
	b.logger.LogAttrs(ctx, slog.LevelDebug, "sse stream closed",
		slog.String("remote_addr", r.RemoteAddr), slog.String("reason", reason),
		slog.Uint64("sent", st.sent), slog.Uint64("dropped", st.dropped))
}

// Shutdown stops accepting streams (ServeHTTP then answers 503), ends every open stream,
// interrupting writes blocked on a client that does not read where the ResponseWriter
// supports write deadlines, and waits until every stream has ended. If ctx is done first
// it returns ctx.Err(). Calling it again waits again.
func (b *Broker) Shutdown(ctx context.Context) error {
	b.mu.Lock()
	if !b.closed {
		b.closed = true
		close(b.done)
		if len(b.subs) == 0 {
			close(b.idle)
		}
	}
	now := time.Now()
	for _, s := range b.subs {
		s.interrupt(now)
	}
	b.mu.Unlock()

	select {
	case <-b.idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// subscribe registers a stream and, when resume is set, returns the retained events with
// an id greater than after. Both happen under one lock, so every event is either in the
// backlog or queued, never both and never neither. It fails with errShutdown after
// Shutdown and with errTooManyStreams while MaxStreams streams are open.
func (b *Broker) subscribe(ctx context.Context, rc *http.ResponseController, after uint64, resume bool) (sub *subscriber, backlog []*event, err error) {
	holder := holderOf(ctx)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, nil, errShutdown
	}
	if b.limiter != nil {
		if !b.limiter.acquire(holder) {
			return nil, nil, errTooManyStreams
		}
	} else if len(b.subs) >= b.maxStreams {
		return nil, nil, errTooManyStreams
	}
	sub = &subscriber{
		holder: holder,
		idx:    len(b.subs),
		wake:   make(chan struct{}, 1),
		rc:     rc,
		q:      newQueue(b.queueSize, b.queueBytes),
	}
	b.subs = append(b.subs, sub)
	if resume {
		if b.shared && after > b.lastID {
			sub.ahead, sub.held = after, newQueue(b.queueSize, b.queueBytes)
		}
		backlog = b.replay.after(after)
	}
	return sub, backlog, nil
}

// route makes sub a stream of topic: from now on it receives only the
// events published with that name (those queued before stay queued).
func (b *Broker) route(sub *subscriber, topic string) {
	if topic == "" {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	sub.topic, sub.tidx = topic, len(b.routed[topic])
	b.routed[topic] = append(b.routed[topic], sub)
}

// releaseHeld ends the ResumeGrace of a stream that resumed ahead of the broker
// and is still ahead: its id was issued by no instance, so it is unknown, and
// the events held meanwhile are queued.
func (b *Broker) releaseHeld(s *subscriber) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if s.ahead == 0 {
		return
	}
	s.mu.Lock()
	for e := s.held.pop(); e != nil; e = s.held.pop() {
		s.q.push(e)
	}
	s.mu.Unlock()
	s.ahead, s.held = 0, queue{}
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// unsubscribe removes sub; it is the last thing a subscribed ServeHTTP call does.
func (b *Broker) unsubscribe(sub *subscriber) {
	b.mu.Lock()
	defer b.mu.Unlock()
	last := len(b.subs) - 1
	moved := b.subs[last]
	b.subs[sub.idx], moved.idx = moved, sub.idx
	b.subs[last] = nil
	b.subs = b.subs[:last]
	if sub.topic != "" {
		rs := b.routed[sub.topic]
		end := len(rs) - 1
		rs[sub.tidx], rs[end].tidx = rs[end], sub.tidx
		rs[end] = nil
		if end == 0 {
			delete(b.routed, sub.topic)
		} else {
			b.routed[sub.topic] = rs[:end]
		}
	}
	if b.limiter != nil {
		b.limiter.release(sub.holder)
	}
	if b.closed && len(b.subs) == 0 {
		close(b.idle)
	}
}

// interrupt ends the stream for Shutdown: a write in progress, which may be blocked on a
// client that does not read, gets a past deadline and fails; a later write does not
// start. Where deadlines are unsupported the write ends on its own.
func (s *subscriber) interrupt(now time.Time) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.interrupted = true
	if s.writing {
		_ = s.rc.SetWriteDeadline(now)
	}
}

// startWrite marks the stream writing, with a write deadline of timeout from now,
// unless Shutdown interrupted it.
func (s *subscriber) startWrite(timeout time.Duration) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.interrupted {
		return errShutdown
	}
	s.writing = true
	// Unsupported deadlines (a ResponseWriter that is not net/http's) leave the
	// write unbounded, as it was before the deadline existed.
	if !s.noDeadline && errors.Is(s.rc.SetWriteDeadline(time.Now().Add(timeout)), http.ErrNotSupported) {
		s.noDeadline = true
	}
	return nil
}

// endWrite marks the write done and lifts its deadline, so that an idle stream's
// connection has none when the response ends (the server writes the final chunk).
// A write that failed has already broken the connection for good.
func (s *subscriber) endWrite() {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.writing = false
	if !s.noDeadline {
		_ = s.rc.SetWriteDeadline(time.Time{})
	}
}

// next pops the oldest queued event (nil if none) and returns the number of events the
// queue has dropped so far.
func (s *subscriber) next() (e *event, dropped uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.q.pop(), s.q.dropped
}

// stream writes one subscriber's events; it runs on the ServeHTTP goroutine.
type stream struct {
	b       *Broker
	w       http.ResponseWriter
	rc      *http.ResponseController
	sub     *subscriber
	sent    uint64           // published events written
	dropped uint64           // events the queue dropped
	grace   <-chan time.Time // fires at the end of the ResumeGrace of a stream resumed ahead
	// filter, when set, makes a filtered stream (ServeStream): first is
	// written instead of the connected event and the replay, each event is
	// written as the frame filter makes of it, and heartbeats are comments.
	filter StreamFunc
	first  func() (frames []byte, end bool)
	// until, when set, ends a filtered stream when it fires, after the
	// frames of last.
	until *time.Timer
	last  func() []byte
}

// run writes the stream and returns why it ended.
func (st *stream) run(ctx context.Context, backlog []*event) (reason string) {
	h := st.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
	st.w.WriteHeader(http.StatusOK)
	beat := heartbeatFrame
	if st.filter != nil {
		beat = commentHeartbeat
		frames, end := st.first()
		if err := st.write(frames); err != nil {
			return failReason(err)
		}
		if end {
			return "final"
		}
	} else if err := st.write(connectedFrame); err != nil {
		return failReason(err)
	}
	for i, e := range backlog {
		if err := st.writeEvent(e); err != nil {
			return failReason(err)
		}
		backlog[i] = nil
	}

	heartbeat := time.NewTimer(st.b.heartbeat)
	defer heartbeat.Stop()
	for {
		for {
			e, dropped := st.sub.next()
			if dropped != st.dropped {
				if st.dropped == 0 {
					st.b.logger.LogAttrs(ctx, slog.LevelWarn, "sse client too slow: oldest queued events dropped",
						slog.Uint64("dropped", dropped))
				}
				if st.b.observe != nil {
					st.b.observe(ctx, "drop", dropped-st.dropped, "")
				}
				st.dropped = dropped
			}
			if e == nil {
				break
			}
			if st.filter != nil {
				frame, end := st.filter(e.data)
				if frame != nil {
					if err := st.write(frame); err != nil {
						return failReason(err)
					}
					st.sent++
				}
				if end {
					return "final"
				}
			} else if err := st.writeEvent(e); err != nil {
				return failReason(err)
			}
			heartbeat.Reset(st.b.heartbeat)
			// A client that keeps up with a busy publisher never empties its queue;
			// still notice shutdown and disconnection between events.
			select {
			case <-ctx.Done():
				return "client gone"
			case <-st.b.done:
				return "shutdown"
			default:
			}
		}
		select {
		case <-st.sub.wake:
		case <-st.grace:
			st.grace = nil
			st.b.releaseHeld(st.sub)
		case <-heartbeat.C:
			if err := st.write(beat); err != nil {
				return failReason(err)
			}
			heartbeat.Reset(st.b.heartbeat)
		case <-st.untilC():
			if st.last != nil {
				if err := st.write(st.last()); err != nil {
					return failReason(err)
				}
			}
			return "until"
		case <-ctx.Done():
			return "client gone"
		case <-st.b.done:
			return "shutdown"
		}
	}
}

// untilC is the channel of the until timer, nil (never ready) without one.
func (st *stream) untilC() <-chan time.Time {
	if st.until == nil {
		return nil
	}
	return st.until.C
}

// writeEvent writes a published event and flushes it to the client.
func (st *stream) writeEvent(e *event) error {
	if err := st.write(e.head, e.data, frameEnd); err != nil {
		return err
	}
	st.sent++
	return nil
}

// write writes the parts of one frame and flushes them to the client, within
// Options.WriteTimeout. A write that starts during Shutdown is either skipped here or
// interrupted by Shutdown (subscriber.wmu orders the two).
func (st *stream) write(parts ...[]byte) error {
	if err := st.sub.startWrite(st.b.writeTimeout); err != nil {
		return err
	}
	defer st.sub.endWrite()
	for _, p := range parts {
		if _, err := st.w.Write(p); err != nil {
			return err
		}
	}
	return st.rc.Flush()
}

var (
	// errShutdown ends a stream that was about to write when the broker shut down,
	// and refuses a stream after Shutdown.
	errShutdown = errors.New("sse: broker shut down")
	// errTooManyStreams refuses a stream while Options.MaxStreams are open.
	errTooManyStreams = errors.New("sse: too many open streams")
)

// canFlush reports whether http.ResponseController.Flush can flush w, following Unwrap
// the same way.
func canFlush(w http.ResponseWriter) bool {
	for {
		switch t := w.(type) {
		case interface{ FlushError() error }, http.Flusher:
			return true
		case interface{ Unwrap() http.ResponseWriter }:
			w = t.Unwrap()
		default:
			return false
		}
	}
}

// writeError answers with a JSON {"detail": msg} body. msg must not need JSON escaping.
func writeError(w http.ResponseWriter, code int, msg string) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(`{"detail":"` + msg + `"}`))
}

// ring keeps the most recent events, oldest first, for Last-Event-ID replay, bounded
// by its length in events and by maxBytes of event memory.
type ring struct {
	buf      []*event
	start    int // index of the oldest event
	n        int
	bytes    int // memory of the retained events
	maxBytes int // 0: no byte bound
}

// add retains e, evicting the oldest events as the bounds require. An event larger
// than maxBytes on its own is not retained and evicts nothing.
func (r *ring) add(e *event) {
	size := e.size()
	if r.maxBytes > 0 {
		if size > r.maxBytes {
			return
		}
		for r.n > 0 && r.bytes+size > r.maxBytes {
			r.evict()
		}
	}
	r.bytes += size
	if r.n < len(r.buf) {
		i := r.start + r.n
		if i >= len(r.buf) {
			i -= len(r.buf)
		}
		r.buf[i] = e
		r.n++
		return
	}
	r.bytes -= r.buf[r.start].size()
	r.buf[r.start] = e
	r.start++
	if r.start == len(r.buf) {
		r.start = 0
	}
}

// evict drops the oldest event.
func (r *ring) evict() {
	r.bytes -= r.buf[r.start].size()
	r.buf[r.start] = nil
	r.start++
	if r.start == len(r.buf) {
		r.start = 0
	}
	r.n--
}

func (r *ring) at(i int) *event {
	i += r.start
	if i >= len(r.buf) {
		i -= len(r.buf)
	}
	return r.buf[i]
}

// after returns a copy of the retained events with an id greater than id, oldest first.
func (r *ring) after(id uint64) []*event {
	first := sort.Search(r.n, func(i int) bool { return r.at(i).id > id })
	if first == r.n {
		return nil
	}
	out := make([]*event, r.n-first)
	for i := range out {
		out[i] = r.at(first + i)
	}
	return out
}

// failReason describes, for the log, why a write ended the stream.
func failReason(err error) string {
	switch {
	case errors.Is(err, errShutdown):
		return "shutdown"
	case errors.Is(err, os.ErrDeadlineExceeded):
		return "write timed out: the client stopped reading"
	}
	return "write failed"
}
