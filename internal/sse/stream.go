package sse

import (
	"log/slog"
	"net/http"
)

// StreamFunc makes the frame a filtered stream writes for the data of a
// published event: nil writes nothing. end ends the stream after it.
type StreamFunc func(data []byte) (frame []byte, end bool)

// commentHeartbeat is the heartbeat of a filtered stream: an SSE comment,
// which every client ignores (its frames are the caller's own protocol).
var commentHeartbeat = []byte(": heartbeat\n\n")

// ServeStream streams a filtered view of the broker's events to one client,
// with the limits of [Broker.ServeHTTP] (queue bounds, write deadline,
// heartbeat interval, stream limit, shutdown). The stream is registered
// first, then first is called: its frames (complete SSE frames) are written
// first, so no event published after the call is missed. Then each event is
// written as the frame fn makes of it; heartbeats are SSE comments. The
// stream ends after first or a frame that reports end, when the client goes
// or at shutdown. There is no connected event and no Last-Event-ID replay.
func (b *Broker) ServeStream(w http.ResponseWriter, r *http.Request, first func() (frames []byte, end bool), fn StreamFunc) {
	ctx := r.Context()
	if !canFlush(w) {
		b.logger.LogAttrs(ctx, slog.LevelError, "sse stream refused: response writer cannot flush")
		writeError(w, http.StatusInternalServerError, "streaming is not supported")
		return
	}
	rc := http.NewResponseController(w)
	sub, _, err := b.subscribe(rc, 0, false)
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
	st := stream{b: b, w: w, rc: rc, sub: sub, filter: fn, first: first}
	reason := st.run(ctx, nil)
	b.logger.LogAttrs(ctx, slog.LevelDebug, "sse filtered stream closed",
		slog.String("remote_addr", r.RemoteAddr), slog.String("reason", reason),
		slog.Uint64("sent", st.sent), slog.Uint64("dropped", st.dropped))
}
