package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"

	"github.com/supervaize/supervaizer-go/internal/loopback"
)

// transport is the HTTP side of the client: one http.Client whose
// connections pass the dial guard, which follows no redirect and uses no
// proxy (a proxy would be the address dialed, not the remote).
type transport struct {
	cfg  *config
	http *http.Client
}

func newTransport(cfg *config) *transport {
	base := &http.Transport{
		Proxy:                  nil,
		DialContext:            cfg.guard.dialContext(cfg.dialTimeout),
		TLSClientConfig:        &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: cfg.rootCAs},
		TLSHandshakeTimeout:    cfg.dialTimeout,
		ForceAttemptHTTP2:      true,
		MaxResponseHeaderBytes: maxHeaderBytes,
		MaxIdleConns:           16,
		IdleConnTimeout:        DefaultCallTimeout,
	}
	var rt http.RoundTripper = base
	if cfg.observer != nil {
		rt = cfg.observer.Transport(base)
	}
	return &transport{cfg: cfg, http: &http.Client{
		Transport: rt,
		// Never follow: the 3xx answer itself is refused with ErrRedirect.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// checkURL parses raw and refuses what the client never connects to: not
// http(s), credentials in the URL, plain http to anything but a loopback
// host (and then only with AllowLoopback), an IP address the guard refuses
// (checked here, before any connection; host names are checked on the
// address dialed).
func (c *config) checkURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" {
		return nil, fmt.Errorf("%w: not an absolute http(s) URL", ErrInsecureURL)
	}
	if u.User != nil {
		return nil, fmt.Errorf("%w: the URL carries credentials", ErrInsecureURL)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("%w: the URL has a query or a fragment", ErrInsecureURL)
	}
	plain := false
	switch u.Scheme {
	case "https":
	case "http":
		if !loopback.Host(u.Host) {
			return nil, fmt.Errorf("%w: plain http to %s, which is not a loopback host", ErrInsecureURL, u.Hostname())
		}
		if !c.guard.loopback {
			return nil, fmt.Errorf("%w: plain http to loopback needs AllowLoopback", ErrInsecureURL)
		}
		plain = true
	default:
		return nil, fmt.Errorf("%w: scheme %q", ErrInsecureURL, u.Scheme)
	}
	if ip, err := netip.ParseAddr(strings.Trim(u.Hostname(), "[]")); err == nil {
		if err := c.guard.check(ip.WithZone(""), plain); err != nil {
			return nil, err
		}
	}
	return u, nil
}

// exchange is one HTTP request and its answer, read whole within the cap.
type exchange struct {
	status int
	body   []byte
	// wrote is true once the request headers were written: from then on
	// the remote may have acted on the request.
	wrote atomic.Bool
}

// do sends the request and reads its answer: a 3xx is [ErrRedirect], a body
// over the cap [ErrTooLarge] (neither is read further). Other statuses are
// returned for the caller to judge.
func (t *transport) do(ctx context.Context, method string, u *url.URL, body []byte, header http.Header) (*exchange, error) {
	ex := &exchange{}
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteHeaders: func() { ex.wrote.Store(true) }})
	if u.Scheme == "http" {
		ctx = context.WithValue(ctx, plainKey{}, true)
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return ex, fmt.Errorf("%w: %v", ErrInvalidRequest, err)
	}
	for k, v := range t.cfg.header {
		req.Header[k] = append([]string(nil), v...)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	for _, f := range t.cfg.headerFuncs {
		if err := f(ctx, req.Header); err != nil {
			return ex, fmt.Errorf("a2a client: header function: %w", err)
		}
	}
	resp, err := t.http.Do(req)
	if err != nil {
		return ex, t.netError(ctx, err)
	}
	defer resp.Body.Close()
	ex.status = resp.StatusCode
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		return ex, fmt.Errorf("%w: HTTP %d", ErrRedirect, resp.StatusCode)
	}
	if resp.ContentLength > t.cfg.maxResponse {
		return ex, fmt.Errorf("%w: %d bytes announced, the cap is %d", ErrTooLarge, resp.ContentLength, t.cfg.maxResponse)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, t.cfg.maxResponse+1))
	if err == nil {
		err = ctx.Err() // an answer completed after the deadline is late all the same
	}
	if err != nil {
		return ex, t.netError(ctx, err)
	}
	if int64(len(b)) > t.cfg.maxResponse {
		return ex, fmt.Errorf("%w: over the cap of %d bytes", ErrTooLarge, t.cfg.maxResponse)
	}
	ex.body = b
	return ex, nil
}

// netError keeps a refusal of the guard as it is, and names a deadline
// (context.DeadlineExceeded stays in the chain). Errors of the network
// stack carry local texts only (addresses, the URL), never the remote's
// words.
func (t *transport) netError(ctx context.Context, err error) error {
	for _, sentinel := range []error{ErrAddressRefused, ErrInsecureURL} {
		if errors.Is(err, sentinel) {
			return err
		}
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("a2a client: timed out or canceled: %w", ctxErr)
	}
	return fmt.Errorf("a2a client: transport: %w", err)
}
