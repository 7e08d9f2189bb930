package sse

import (
	"log/slog"
	"net/http"
	"time"
)

// StreamFunc makes the frame a filtered stream writes for the data of a
// published event: nil writes nothing. end ends the stream after it.
type StreamFunc func(data []byte) (frame []byte, end bool)

// Stream is a filtered stream of one client ([Broker.Serve]).
type Stream struct {
	// First makes the stream's first frames (complete SSE frames); end
	// ends the stream after them.
	First func() (frames []byte, end bool)
	// Frame makes the frame of each event the stream receives.
	Frame StreamFunc
	// Topic, when set, is called after First: a stream of a non-empty topic
	// receives from then on only the events published with that name
	// (routed by the broker, never filtered by every stream).
	Topic func() string
	// Until, when set, is called after First: a non-zero time ends the
	// stream then, after the frames of Last (nil: none).
	Until func() time.Time
	Last  func() []byte
}

// commentHeartbeat is the heartbeat of a filtered stream: an SSE comment,
// which every client ignores (its frames are the caller's own protocol).
var commentHeartbeat = []byte(": heartbeat\n\n")

// ServeStream is [Broker.Serve] of a stream of every event.
func (b *Broker) ServeStream(w http.ResponseWriter, r *http.Request, first func() (frames []byte, end bool), fn StreamFunc) {
	b.Serve(w, r, Stream{First: first, Frame: fn})
}

// Serve streams a filtered view of the broker's events to one client,
// with the limits of [Broker.ServeHTTP] (queue bounds, write deadline,
// heartbeat interval, stream limit, shutdown). The stream is registered
// first, then s.First is called: its frames are written first, so no event
// published after the call is missed. Then each event is written as the
// frame s.Frame makes of it; heartbeats are SSE comments. The stream ends
// after First or a frame that reports end, at s.Until, when the client goes
// or at shutdown. There is no connected event and no Last-Event-ID replay.
func (b *Broker) Serve(w http.ResponseWriter, r *http.Request, s Stream) {
	ctx := r.Context()
	if !canFlush(w) {
		b.logger.LogAttrs(ctx, slog.LevelError, "sse stream refused: response writer cannot flush")
		writeError(w, http.StatusInternalServerError, "streaming is not supported")
		return
	}
	rc := http.NewResponseController(w)
	sub, _, err := b.subscribe(ctx, rc, 0, false)
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
	first := s.First
	st := stream{b: b, w: w, rc: rc, sub: sub, filter: s.Frame, last: s.Last}
	st.first = func() ([]byte, bool) {
		frames, end := first()
		if !end && s.Topic != nil {
			b.route(sub, s.Topic())
		}
		if !end && s.Until != nil {
			if until := s.Until(); !until.IsZero() {
				st.until = time.NewTimer(time.Until(until))
			}
		}
		return frames, end
	}
	reason := st.run(ctx, nil)
	if st.until != nil {
		st.until.Stop()
	}
	b.logger.LogAttrs(ctx, slog.LevelDebug, "sse filtered stream closed",
		slog.String("remote_addr", r.RemoteAddr), slog.String("reason", reason),
		slog.Uint64("sent", st.sent), slog.Uint64("dropped", st.dropped))
}
