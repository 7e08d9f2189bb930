package sse

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
)

// DefaultMaxStreamsPerHolder bounds the streams one holder (an API key)
// keeps open at once, when a [Limiter] is given none (spec open-questions
// item 72).
const DefaultMaxStreamsPerHolder = 100

// Limiter bounds the streams open at once across the brokers that share it
// (Options.Limiter), in all and per holder: the event stream and the A2A
// task streams count in one MaxEventStreams, and one API key holds at most
// so many of them. Its methods are safe for concurrent use.
type Limiter struct {
	max, perHolder int

	mu   sync.Mutex
	open int
	held map[string]int
}

// NewLimiter returns a limiter of max streams in all and perHolder per
// holder; zero or negative: DefaultMaxStreams and
// DefaultMaxStreamsPerHolder.
func NewLimiter(maxStreams, perHolder int) *Limiter {
	if maxStreams <= 0 {
		maxStreams = DefaultMaxStreams
	}
	if perHolder <= 0 {
		perHolder = DefaultMaxStreamsPerHolder
	}
	return &Limiter{max: maxStreams, perHolder: perHolder, held: map[string]int{}}
}

// acquire takes a stream for holder ("" counts in all only); false when
// the total or the holder's share is reached.
func (l *Limiter) acquire(holder string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open >= l.max || (holder != "" && l.held[holder] >= l.perHolder) {
		return false
	}
	l.open++
	if holder != "" {
		l.held[holder]++
	}
	return true
}

// release gives back a stream acquire took for holder.
func (l *Limiter) release(holder string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.open--
	if holder != "" {
		if l.held[holder]--; l.held[holder] <= 0 {
			delete(l.held, holder)
		}
	}
}

// Open is the number of streams open under l.
func (l *Limiter) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open
}

type holderKey struct{}

// WithHolder returns ctx naming the holder of the streams opened with it
// (an API key's identity, never the key): a [Limiter] bounds each holder's
// streams.
func WithHolder(ctx context.Context, holder string) context.Context {
	return context.WithValue(ctx, holderKey{}, holder)
}

// holderOf is the holder WithHolder put in ctx, "" when none.
func holderOf(ctx context.Context) string {
	h, _ := ctx.Value(holderKey{}).(string)
	return h
}

// Hold counts a stream the broker does not serve (a streamed A2A
// conversation, whose events its handler makes) in the broker's limiter,
// for the holder of r's context, until release is called. When the limit
// is reached it answers w 503 with Retry-After, as a refused stream, and
// ok is false. A broker without a limiter holds nothing.
func (b *Broker) Hold(w http.ResponseWriter, r *http.Request) (release func(), ok bool) {
	if b.limiter == nil {
		return func() {}, true
	}
	holder := holderOf(r.Context())
	if !b.limiter.acquire(holder) {
		b.logger.LogAttrs(r.Context(), slog.LevelWarn, "sse stream refused: too many open streams",
			slog.Int("max_streams", b.limiter.max), slog.String("remote_addr", r.RemoteAddr))
		w.Header().Set("Retry-After", retryAfter)
		writeError(w, http.StatusServiceUnavailable, "too many event streams")
		return nil, false
	}
	var once sync.Once
	return func() { once.Do(func() { b.limiter.release(holder) }) }, true
}
