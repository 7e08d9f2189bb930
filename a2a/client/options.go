package client

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/supervaize/supervaizer-go/observe"
)

// Defaults of the options. Every timeout is finite; a remote that thinks
// for minutes is normal, so the call timeout is generous.
const (
	// DefaultDiscoveryTimeout bounds the whole discovery walk (both card
	// URLs together).
	DefaultDiscoveryTimeout = 15 * time.Second
	// DefaultCallTimeout bounds one JSON-RPC call, from the first byte
	// written to the last byte of the answer read.
	DefaultCallTimeout = 2 * time.Minute
	// DefaultDialTimeout bounds one TCP connection and its TLS handshake.
	DefaultDialTimeout = 10 * time.Second
	// DefaultMaxResponseBytes caps every answer, the card included (1 MiB).
	DefaultMaxResponseBytes = 1 << 20
	// DefaultMaxArtifacts caps the artifacts of a task answered.
	DefaultMaxArtifacts = 64
)

// maxHeaderBytes caps the headers of an answer.
const maxHeaderBytes = 64 << 10

// Option configures a [Client].
type Option func(*config) error

type config struct {
	guard            guard
	rootCAs          *x509.CertPool
	discoveryTimeout time.Duration
	callTimeout      time.Duration
	dialTimeout      time.Duration
	maxResponse      int64
	maxArtifacts     int
	header           http.Header
	headerFuncs      []func(context.Context, http.Header) error
	observer         observe.Observer
	binding          Binding
}

func defaults() config {
	return config{
		discoveryTimeout: DefaultDiscoveryTimeout,
		callTimeout:      DefaultCallTimeout,
		dialTimeout:      DefaultDialTimeout,
		maxResponse:      DefaultMaxResponseBytes,
		maxArtifacts:     DefaultMaxArtifacts,
		header:           http.Header{},
	}
}

// AllowLoopback lets the client connect to loopback addresses (127.0.0.0/8,
// ::1), over HTTPS or plain HTTP: a controller on the same machine, a test
// server. Without it they are refused like any internal address. Plain HTTP
// is never allowed to any other address.
func AllowLoopback() Option {
	return func(c *config) error { c.guard.loopback = true; return nil }
}

// AllowPrivateNetworks lets the client connect over HTTPS to addresses of
// the private ranges (10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16,
// 100.64.0.0/10, 198.18.0.0/15, fc00::/7): remotes inside the same private
// network. Link-local and cloud metadata addresses stay refused.
func AllowPrivateNetworks() Option {
	return func(c *config) error { c.guard.private = true; return nil }
}

// WithRootCAs verifies the remote's certificate against pool instead of the
// system roots. Verification itself cannot be turned off.
func WithRootCAs(pool *x509.CertPool) Option {
	return func(c *config) error {
		if pool == nil {
			return errors.New("a2a client: WithRootCAs: nil pool")
		}
		c.rootCAs = pool
		return nil
	}
}

// WithDiscoveryTimeout bounds the whole discovery walk, both card URLs
// together (default [DefaultDiscoveryTimeout]); d must be positive.
func WithDiscoveryTimeout(d time.Duration) Option {
	return durationOption("WithDiscoveryTimeout", d, func(c *config) *time.Duration { return &c.discoveryTimeout })
}

// WithCallTimeout bounds each JSON-RPC call, the reading of its whole answer
// included (default [DefaultCallTimeout]); d must be positive. A context
// deadline shorter than d wins.
func WithCallTimeout(d time.Duration) Option {
	return durationOption("WithCallTimeout", d, func(c *config) *time.Duration { return &c.callTimeout })
}

// WithDialTimeout bounds each connection and its TLS handshake (default
// [DefaultDialTimeout]); d must be positive.
func WithDialTimeout(d time.Duration) Option {
	return durationOption("WithDialTimeout", d, func(c *config) *time.Duration { return &c.dialTimeout })
}

func durationOption(name string, d time.Duration, field func(*config) *time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return fmt.Errorf("a2a client: %s(%v): a timeout must be positive", name, d)
		}
		*field(c) = d
		return nil
	}
}

// WithMaxResponseBytes caps every answer, the Agent Card included (default
// [DefaultMaxResponseBytes]); n must be positive. A larger answer is
// refused with [ErrTooLarge] without being read further.
func WithMaxResponseBytes(n int64) Option {
	return func(c *config) error {
		if n <= 0 {
			return fmt.Errorf("a2a client: WithMaxResponseBytes(%d): must be positive", n)
		}
		c.maxResponse = n
		return nil
	}
}

// WithMaxArtifacts caps the artifacts of a task answered (default
// [DefaultMaxArtifacts]); n must be positive. A task with more is refused
// with [ErrTooLarge].
func WithMaxArtifacts(n int) Option {
	return func(c *config) error {
		if n <= 0 {
			return fmt.Errorf("a2a client: WithMaxArtifacts(%d): must be positive", n)
		}
		c.maxArtifacts = n
		return nil
	}
}

// WithHeader sends the header with every request, discovery included: the
// remote's API key (X-API-Key for a Supervaizer controller), for example.
func WithHeader(name, value string) Option {
	return func(c *config) error {
		if name == "" {
			return errors.New("a2a client: WithHeader: empty name")
		}
		c.header.Add(name, value)
		return nil
	}
}

// WithHeaderFunc calls f before each request, discovery included, to set
// headers that depend on the call: a workspace token that expires, say. An
// error from f stops the request before anything is sent.
func WithHeaderFunc(f func(ctx context.Context, h http.Header) error) Option {
	return func(c *config) error {
		if f == nil {
			return errors.New("a2a client: WithHeaderFunc: nil function")
		}
		c.headerFuncs = append(c.headerFuncs, f)
		return nil
	}
}

// WithObserver makes every request go through the transport o.Transport
// returns: the observer of package observe (the otel module's, for one)
// injects the W3C trace context (traceparent, tracestate) of the call's
// context, so that a delegation continues the caller's trace. Install the
// observer the controller uses, and pass the handler's context to the
// client's calls.
func WithObserver(o observe.Observer) Option {
	return func(c *config) error {
		if o == nil {
			return errors.New("a2a client: WithObserver: nil observer")
		}
		c.observer = o
		return nil
	}
}

// WithBinding restricts the client to one binding, [Binding10] or
// [Binding03], instead of the card's preferred one: New fails with
// [ErrNoBinding] when the card does not offer it.
func WithBinding(b Binding) Option {
	return func(c *config) error {
		if b != Binding10 && b != Binding03 {
			return fmt.Errorf("a2a client: WithBinding(%q): not a binding", string(b))
		}
		c.binding = b
		return nil
	}
}
