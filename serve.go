package supervaizer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/supervaize/supervaizer-go/internal/loopback"
	"github.com/supervaize/supervaizer-go/internal/sse"
)

// envAddr is the environment variable [Server.ListenAndServe] reads for the
// TCP address to listen on.
const envAddr = "SUPERVAIZER_ADDR"

// Defaults of [HTTPSettings], used by [Server.ListenAndServe], [Server.Serve]
// and [Server.NewHTTPServer].
const (
	// defaultAddr is loopback only: a development run is never reachable from
	// the network. Deployments set SUPERVAIZER_ADDR (e.g. ":8080").
	defaultAddr              = "127.0.0.1:8080"
	defaultReadHeaderTimeout = 10 * time.Second  // a client has this long to send its request headers
	defaultReadTimeout       = 60 * time.Second  // and this long for the whole request, body included
	defaultIdleTimeout       = 120 * time.Second // an idle keep-alive connection is closed after this
	defaultMaxHeaderBytes    = 64 << 10          // request headers larger than this are answered 431
	defaultShutdownTimeout   = 15 * time.Second  // how long a stop waits for calls in progress
	defaultMaxConnections    = 2048              // connections Serve keeps open at once
)

// HTTPSettings are the limits of the HTTP server the SDK runs. A zero field
// takes its default. There is no server-wide write timeout: GET /a2a/events is
// a long-lived stream (net/http lifts the read deadline once a request is
// read, so ReadTimeout does not cut a stream). Each write to a stream has its
// own deadline instead (EventWriteTimeout): a client that stops reading is
// disconnected then, and the events queued for it released.
//
// The Event limits are enforced by the [Server] handler itself, whichever http.Server serves it; MaxConnections by [Server.Serve]
// and [Server.ListenAndServe] only (a server of your own limits its own
// listener).
type HTTPSettings struct {
	ReadHeaderTimeout time.Duration // default 10 s
	ReadTimeout       time.Duration // default 60 s
	IdleTimeout       time.Duration // default 120 s
	MaxHeaderBytes    int           // default 64 KiB
	ShutdownTimeout   time.Duration // default 15 s
	// MaxConnections bounds the connections Serve keeps open at once; beyond
	// it, new connections wait in the listen backlog until one closes, so
	// idle or half-open connections cannot exhaust the process. Default 2,048.
	MaxConnections int
	// MaxEventStreams bounds the event streams open at once (GET /a2a/events,
	// the preview's stream and the A2A task streams, counted together);
	// beyond it a new stream is answered 503 with Retry-After. Default 1,000.
	MaxEventStreams int
	// MaxStreamsPerKey bounds the streams one API key holds open at once,
	// of those MaxEventStreams counts; beyond it 503 with Retry-After.
	// Default 100.
	MaxStreamsPerKey int
	// EventWriteTimeout bounds each write to an event stream: a client that
	// reads nothing for that long is disconnected, and the events queued for
	// it released; it resumes with Last-Event-ID. Default 30 s.
	EventWriteTimeout time.Duration
	// EventQueueBytes bounds the memory of the events waiting for one event
	// stream, as [WithSSEQueueSize] bounds their number: the oldest queued
	// events are dropped first (the newest is always kept, alone if larger).
	// Default 4 MiB.
	EventQueueBytes int
	// A2ABlocking bounds how long a blocking A2A send (either binding, see
	// docs/a2a.md) waits for its task to be terminal or input-required
	// before answering its current state. Default 60 s
	// (a2atask.DefaultBlockingTimeout).
	A2ABlocking time.Duration
}

// withDefaults fills the zero fields.
func (h HTTPSettings) withDefaults() HTTPSettings {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&h.ReadHeaderTimeout, defaultReadHeaderTimeout)
	def(&h.ReadTimeout, defaultReadTimeout)
	def(&h.IdleTimeout, defaultIdleTimeout)
	def(&h.ShutdownTimeout, defaultShutdownTimeout)
	def(&h.EventWriteTimeout, sse.DefaultWriteTimeout)
	defInt := func(n *int, v int) {
		if *n == 0 {
			*n = v
		}
	}
	defInt(&h.MaxHeaderBytes, defaultMaxHeaderBytes)
	defInt(&h.MaxConnections, defaultMaxConnections)
	defInt(&h.MaxEventStreams, sse.DefaultMaxStreams)
	defInt(&h.MaxStreamsPerKey, sse.DefaultMaxStreamsPerHolder)
	defInt(&h.EventQueueBytes, sse.DefaultQueueBytes)
	return h
}

// WithAddr sets the TCP address [Server.ListenAndServe] listens on. Default:
// SUPERVAIZER_ADDR, else 127.0.0.1:8080, loopback only.
func WithAddr(addr string) Option { return func(c *config) { c.addr = addr } }

// WithHTTPSettings sets the HTTP server's timeouts and header limit; zero
// fields keep their defaults. Negative values are an error of [NewServer].
func WithHTTPSettings(h HTTPSettings) Option {
	return func(c *config) {
		if h.ReadHeaderTimeout < 0 || h.ReadTimeout < 0 || h.IdleTimeout < 0 || h.ShutdownTimeout < 0 || h.MaxHeaderBytes < 0 ||
			h.MaxConnections < 0 || h.MaxEventStreams < 0 || h.MaxStreamsPerKey < 0 || h.EventWriteTimeout < 0 || h.EventQueueBytes < 0 {
			c.errs = append(c.errs, fmt.Errorf("supervaizer: WithHTTPSettings(%+v): limits must not be negative", h))
		}
		c.http = h
	}
}

// listenAddr returns the address [Server.ListenAndServe] listens on: [WithAddr],
// else SUPERVAIZER_ADDR, else 127.0.0.1:8080.
func (c *config) listenAddr() string {
	if a := strings.TrimSpace(c.addr); a != "" {
		return a
	}
	if a := strings.TrimSpace(c.env.Addr); a != "" {
		return a
	}
	return defaultAddr
}

// NewHTTPServer returns an http.Server for the controller with the SDK's
// limits ([HTTPSettings]): read-header, read and idle timeouts and a header
// size limit, so that a client trickling its headers or holding idle
// connections cannot exhaust the process. Its Addr is [WithAddr], else SUPERVAIZER_ADDR, else 127.0.0.1:8080; its
// errors go to the server's logger.
//
// Use it to serve in a way [Server.ListenAndServe] does not (TLS, your own
// listener or mux). You then call [Server.Start] before serving, and
// [Server.Shutdown] before http.Server.Shutdown when stopping.
func (s *Server) NewHTTPServer() *http.Server {
	h := s.cfg.http.withDefaults()
	return &http.Server{
		Addr:              s.cfg.listenAddr(),
		Handler:           s,
		ReadHeaderTimeout: h.ReadHeaderTimeout,
		ReadTimeout:       h.ReadTimeout,
		IdleTimeout:       h.IdleTimeout,
		MaxHeaderBytes:    h.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(s.logger.Handler(), slog.LevelWarn),
	}
}

// ListenAndServe is the one call that runs the controller: it listens on
// [WithAddr], else SUPERVAIZER_ADDR, else 127.0.0.1:8080, then runs
// [Server.Serve] until ctx is cancelled. Stop it with a context cancelled on
// SIGINT and SIGTERM:
//
//	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
//	defer stop()
//	if err := srv.ListenAndServe(ctx); err != nil {
//		log.Fatal(err)
//	}
func (s *Server) ListenAndServe(ctx context.Context) error {
	addr := s.cfg.listenAddr()
	if err := s.cfg.checkLocalListenAddr(addr); err != nil { // serve.go
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("supervaizer: listen on %s (set %s or use WithAddr): %w", addr, envAddr, err)
	}
	return s.Serve(ctx, ln)
}

// Serve runs the controller on ln until ctx is cancelled, then stops cleanly
// and returns nil. It first runs [Server.Start] (registration with Studio when
// attached, the startup log naming the address, mode and API key); a failure
// there is returned and ln closed. It serves with [Server.NewHTTPServer]'s
// limits, keeping at most MaxConnections connections open at once. When ctx
// is cancelled it stops accepting connections, closes the SSE
// streams, waits for the calls in progress (at most the ShutdownTimeout of
// [HTTPSettings]) and returns nil, or the error of a stop that did not finish
// in time. A failing listener ends it with that error.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	base := "http://" + ln.Addr().String()
	if err := s.cfg.checkLocalListen(ln.Addr()); err != nil { // serve.go
		_ = ln.Close()
		return err
	}
	if err := s.start(ctx, base); err != nil {
		_ = ln.Close()
		return errors.Join(err, s.Shutdown(context.WithoutCancel(ctx)))
	}
	hs := s.NewHTTPServer()
	hs.Addr = ln.Addr().String()
	errc := make(chan error, 1)
	limited := newLimitListener(ln, s.cfg.http.withDefaults().MaxConnections)
	go func() { errc <- hs.Serve(limited) }()

	var serveErr error
	select {
	case serveErr = <-errc:
	case <-ctx.Done():
	}
	s.logger.LogAttrs(ctx, slog.LevelInfo, "controller stopping", slog.String("url", base))
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.http.withDefaults().ShutdownTimeout)
	defer cancel()
	// The SDK server first: it closes the event streams, which would otherwise
	// keep http.Server.Shutdown waiting, and refuses new calls while it drains.
	err := errors.Join(s.Shutdown(sctx), hs.Shutdown(sctx))
	if err != nil {
		_ = hs.Close() // cut what did not finish in time
	}
	if serveErr == nil {
		serveErr = <-errc
	}
	if errors.Is(serveErr, http.ErrServerClosed) {
		serveErr = nil
	}
	if err = errors.Join(serveErr, err); err != nil {
		return fmt.Errorf("supervaizer: stop: %w", err)
	}
	s.logger.LogAttrs(ctx, slog.LevelInfo, "controller stopped")
	return nil
}

// limitListener keeps at most cap(sem) accepted connections open at once:
// Accept waits until one of them is closed (as golang.org/x/net/netutil's
// LimitListener, which the SDK does not depend on).
type limitListener struct {
	net.Listener
	sem       chan struct{} // one token per open connection
	done      chan struct{} // closed by Close: a waiting Accept returns
	closeOnce sync.Once
}

func newLimitListener(ln net.Listener, n int) *limitListener {
	return &limitListener{Listener: ln, sem: make(chan struct{}, n), done: make(chan struct{})}
}

// Accept waits for a free slot, then accepts a connection that frees it when
// closed.
func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.sem <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	return &limitConn{Conn: c, sem: l.sem}, nil
}

// Close closes the listener and ends an Accept waiting for a slot.
func (l *limitListener) Close() error {
	err := l.Listener.Close()
	l.closeOnce.Do(func() { close(l.done) })
	return err
}

// limitConn frees its listener's slot when closed, once.
type limitConn struct {
	net.Conn
	sem     chan struct{}
	release sync.Once
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.release.Do(func() { <-c.sem })
	return err
}

// CloseWrite half-closes a TCP connection, as net/http does before closing
// one whose request body it did not read (so the client reads the answer).
func (c *limitConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// Local mode stays local (spec item 68): it serves only requests whose Host
// is a loopback name or address, so that a page on another site cannot drive
// the agent through the visitor's browser with the published development key
// (DNS rebinding), and it refuses to listen on a non-loopback address.

// refuseNonLocalHost answers 403 to a request whose Host is not a loopback name
// or address when the server is in local mode, and reports whether it did.
func refuseNonLocalHost(localMode bool, logger *slog.Logger, w http.ResponseWriter, r *http.Request) bool {
	if !localMode || loopback.Host(r.Host) {
		return false
	}
	logger.LogAttrs(r.Context(), slog.LevelWarn, "access denied", slog.String("path", r.URL.Path),
		slog.String("reason", "local mode serves only requests addressed to localhost or a loopback IP"), slog.String("host", r.Host))
	writeDetail(w, http.StatusForbidden, "Local mode serves only requests addressed to localhost or a loopback IP address")
	return true
}

// checkLocalListen refuses, in local mode, to listen on addr unless it is a
// loopback IP address.
func (c *config) checkLocalListen(addr net.Addr) error {
	if !c.localMode || loopback.Addr(addr.String()) {
		return nil
	}
	return fmt.Errorf("supervaizer: local mode listens only on a loopback address, not on %s: set %s (or WithAddr) to 127.0.0.1:PORT, or turn local mode off (SUPERVAIZER_LOCAL_MODE, WithLocalMode) and configure workspace authorization", addr, envAddr)
}

// checkLocalListenAddr is checkLocalListen for an address not yet bound
// (host:port): a host name other than "localhost", or an empty host (every
// interface), is refused.
func (c *config) checkLocalListenAddr(addr string) error {
	if !c.localMode {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err == nil && (host == "localhost" || loopback.Addr(host)) {
		return nil
	}
	return fmt.Errorf("supervaizer: local mode listens only on a loopback address, not on %q: set %s (or WithAddr) to 127.0.0.1:PORT, or turn local mode off (SUPERVAIZER_LOCAL_MODE, WithLocalMode) and configure workspace authorization", addr, envAddr)
}

// maxInitialBody caps the buffer reserved from Content-Length before reading.
const maxInitialBody = 64 << 10

// readBody reads the body within the size limit; a larger body is refused
// 413 (before it is read when Content-Length announces it). status is 0
// when the body was read.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) (_ []byte, status int, detail string) {
	if r.ContentLength > limit {
		return nil, http.StatusRequestEntityTooLarge, "Request body too large"
	}
	// One allocation when Content-Length is right: the spare byte lets the
	// read that reports EOF happen without growing the buffer.
	// Size the buffer from Content-Length, but never reserve more than
	// maxInitialBody up front: a client announcing a large body must send it
	// before it costs that much memory.
	size := r.ContentLength
	if size < 0 {
		size = 512
	}
	size = min(size, maxInitialBody)
	buf := make([]byte, 0, size+1)
	body := http.MaxBytesReader(w, r.Body, limit)
	for {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, 512)
		}
		n, err := body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			// Closed once read to its end: net/http then reuses the
			// connection without draining the body after the handler (a
			// read and an allocation per request).
			_ = r.Body.Close()
			return buf, 0, ""
		}
		if err != nil {
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) {
				return nil, http.StatusRequestEntityTooLarge, "Request body too large"
			}
			return nil, http.StatusBadRequest, "Could not read the request body"
		}
	}
}
