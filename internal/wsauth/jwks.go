package wsauth

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// JWKS fetch limits.
const (
	// JWKSFetchTimeout bounds one JWKS fetch; the
	// request's context bounds how long a request waits for it.
	JWKSFetchTimeout = 5 * time.Second
	// MaxJWKSBytes caps a JWKS response body; a larger body is
	// CodeJWKSUnavailable.
	MaxJWKSBytes = 1 << 20
	// MaxJWKSRedirects is the number of same-host redirects a JWKS fetch
	// follows. Redirects to another host (or from https to http) are refused.
	MaxJWKSRedirects = 3
	// DefaultJWKSRefetchInterval is the minimum time between two JWKS fetches
	// of the same URL; see [WithJWKSRefetchInterval].
	DefaultJWKSRefetchInterval = 10 * time.Second
	// DefaultJWKSKeyMaxAge is how long the keys of a successful fetch are
	// trusted without a new successful fetch; see [WithJWKSKeyMaxAge].
	DefaultJWKSKeyMaxAge = 10 * time.Minute
)

// keySet is the set of keys trusted for a JWKS URL: exactly the usable keys
// of its last successful fetch. It is immutable once published.
type keySet struct {
	keys    map[string]*verifyKey
	fetched time.Time // start of the fetch that produced it
	// gen identifies the trusted keys: it changes whenever a fetch removes a
	// kid or changes its key (an added kid keeps it), so a token verified
	// under gen is still verifiable with the current set while gen holds.
	gen uint64
}

// keeps reports whether every key of s is in next, unchanged.
func (s *keySet) keeps(next map[string]*verifyKey) bool {
	for kid, key := range s.keys {
		if k, ok := next[kid]; !ok || !key.equal(k) {
			return false
		}
	}
	return true
}

// jwk is one entry of a fetched key set, parsed once per fetch.
type jwk struct {
	object bool   // the entry is a JSON object
	kid    string // valid when hasKID
	hasKID bool   // kid is a JSON string
	key    *verifyKey
	bad    string // why key is nil, for the CodeInvalidJWK message
}

// jwksResult is the outcome of one fetch: either err, or the parsed entries
// and the key set they yield.
type jwksResult struct {
	keys []jwk
	err  *Error
	set  *keySet // set by a successful fetch
}

// fetchCall is one in-flight fetch that concurrent misses wait on.
type fetchCall struct {
	done    chan struct{}
	res     *jwksResult
	waiters int // requests waiting besides the one that started the fetch
}

// jwksSource resolves kids against one JWKS URL. The trusted keys are exactly
// those of the last successful fetch, for at most maxAge after it started. A
// miss (an unknown kid, or a set past its maximum age) starts a fetch;
// concurrent misses are coalesced into that single in-flight fetch, and
// fetches are at least interval apart: a miss within the interval is resolved
// against the last fetch without fetching, which yields the same code a fetch
// of that set would. A failed fetch leaves the trusted set alone, so it keeps
// serving until its maximum age.
type jwksSource struct {
	url      string
	client   *http.Client
	interval time.Duration
	maxAge   time.Duration // never below interval
	now      func() time.Time
	logger   *slog.Logger

	set atomic.Pointer[keySet] // nil until a fetch succeeds

	mu        sync.Mutex
	lastStart time.Time   // start of the last completed fetch
	last      *jwksResult // nil until a fetch completes
	inflight  *fetchCall
}

func newJWKSSource(rawURL string, client *http.Client, interval, maxAge time.Duration, now func() time.Time, logger *slog.Logger) *jwksSource {
	c := *client // a copy: the redirect policy is ours, the transport is shared
	c.CheckRedirect = checkJWKSRedirect
	if maxAge <= 0 {
		maxAge = DefaultJWKSKeyMaxAge
	}
	return &jwksSource{
		url: rawURL, client: &c, interval: interval, maxAge: max(maxAge, interval),
		now: now, logger: logger,
	}
}

// checkJWKSRedirect follows at most MaxJWKSRedirects redirects, all to the
// original host and never from https down to http.
func checkJWKSRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > MaxJWKSRedirects {
		return fmt.Errorf("more than %d redirects", MaxJWKSRedirects)
	}
	orig := via[0].URL
	if !strings.EqualFold(req.URL.Host, orig.Host) {
		return errors.New("redirect to another host refused")
	}
	if orig.Scheme == "https" && req.URL.Scheme != "https" {
		return errors.New("redirect from https to http refused")
	}
	return nil
}

// fresh returns the trusted key set if it is within its maximum age at now.
func (s *jwksSource) fresh(now time.Time) *keySet {
	set := s.set.Load()
	if set == nil || now.Sub(set.fetched) >= s.maxAge {
		return nil
	}
	return set
}

// trusts reports whether a token verified with the key set of generation gen
// may still count as verified at now: the set is within its maximum age and
// no fetch since removed or changed any of its keys.
func (s *jwksSource) trusts(gen uint64, now time.Time) bool {
	set := s.fresh(now)
	return set != nil && set.gen == gen
}

// resolve returns the key for kid and the generation of the set holding it:
// from the trusted set, else from a fetch (or the last fetch, while refetches
// are rate limited).
func (s *jwksSource) resolve(ctx context.Context, kid string) (*verifyKey, uint64, *Error) {
	if set := s.fresh(s.now()); set != nil {
		if key, ok := set.keys[kid]; ok {
			return key, set.gen, nil
		}
	}
	s.mu.Lock()
	now := s.now()
	if set := s.fresh(now); set != nil { // replaced by a fetch that just ended
		if key, ok := set.keys[kid]; ok {
			s.mu.Unlock()
			return key, set.gen, nil
		}
	}
	call := s.inflight
	switch {
	case call != nil:
		call.waiters++
	case s.last != nil && now.Sub(s.lastStart) < s.interval:
		last := s.last
		s.mu.Unlock()
		return lookup(last, kid)
	default:
		call = &fetchCall{done: make(chan struct{})}
		s.inflight = call
		// The fetch outlives a cancelled request (others may wait on it) but
		// not JWKSFetchTimeout.
		go s.run(context.WithoutCancel(ctx), call)
	}
	s.mu.Unlock()
	select {
	case <-call.done:
		return lookup(call.res, kid)
	case <-ctx.Done():
		return nil, 0, failf(CodeJWKSUnavailable, "request ended while fetching the key set")
	}
}

// run performs the fetch of call and publishes its result: a successful
// fetch replaces the trusted set, a failed one leaves it alone.
func (s *jwksSource) run(ctx context.Context, call *fetchCall) {
	start := s.now()
	res := s.fetch(ctx)
	s.mu.Lock()
	if res.err == nil {
		keys := usableKeys(res)
		gen := uint64(1)
		if prev := s.set.Load(); prev != nil {
			gen = prev.gen
			if !prev.keeps(keys) {
				gen++
			}
		}
		res.set = &keySet{keys: keys, fetched: start, gen: gen}
		s.set.Store(res.set)
	}
	s.last, s.lastStart, s.inflight = res, start, nil
	call.res = res
	s.mu.Unlock()
	close(call.done)
}

// usableKeys returns every usable key of a fetched set under the kid a lookup
// would resolve it to: the first entry carrying that kid, met before any
// non-object entry. One fetch thus serves every kid the set holds.
func usableKeys(res *jwksResult) map[string]*verifyKey {
	keys := make(map[string]*verifyKey)
	seen := make(map[string]bool, len(res.keys))
	for _, k := range res.keys {
		if !k.object {
			break
		}
		if !k.hasKID || seen[k.kid] {
			continue
		}
		seen[k.kid] = true
		if k.key != nil {
			keys[k.kid] = k.key
		}
	}
	return keys
}

// lookup walks a fetched set in order.
func lookup(res *jwksResult, kid string) (*verifyKey, uint64, *Error) {
	if res.err != nil {
		e := *res.err // a copy: the result is shared by every request
		return nil, 0, &e
	}
	for i, k := range res.keys {
		if !k.object {
			return nil, 0, failf(CodeInvalidJWKS, "entry %d of keys is not an object", i)
		}
		if k.hasKID && k.kid == kid {
			if k.key == nil {
				return nil, 0, failf(CodeInvalidJWK, "%s", k.bad)
			}
			return k.key, res.set.gen, nil
		}
	}
	return nil, 0, fail(CodeUnknownKID)
}

// fetch GETs the key set and parses it.
func (s *jwksSource) fetch(ctx context.Context) *jwksResult {
	ctx, cancel := context.WithTimeout(ctx, JWKSFetchTimeout)
	defer cancel()
	unavailable := func(reason string, attrs ...slog.Attr) *jwksResult {
		attrs = append(attrs, slog.String("jwks_url", redactURL(s.url)), slog.String("reason", reason))
		s.logger.LogAttrs(ctx, slog.LevelWarn, "workspace authorization JWKS fetch failed", attrs...)
		return &jwksResult{err: fail(CodeJWKSUnavailable)}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url, nil)
	if err != nil {
		return unavailable("invalid request", slog.String("error", err.Error()))
	}
	req.Header.Set("Accept", "application/json")
	resp, err := s.client.Do(req)
	if err != nil {
		var uerr *url.Error // its text repeats the full URL, query included
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return unavailable("transport error", slog.String("error", err.Error()))
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return unavailable("unexpected status", slog.Int("status", resp.StatusCode))
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxJWKSBytes+1))
	if err != nil {
		return unavailable("reading body", slog.String("error", err.Error()))
	}
	if len(body) > MaxJWKSBytes {
		return unavailable("body too large", slog.Int("max_bytes", MaxJWKSBytes))
	}
	res := parseJWKS(body)
	if res.err != nil {
		s.logger.LogAttrs(ctx, slog.LevelWarn, "workspace authorization JWKS rejected",
			slog.String("jwks_url", redactURL(s.url)), slog.String("code", string(res.err.Code)),
			slog.String("reason", res.err.Message))
	}
	return res
}

// parseJWKS parses a JWKS body. Body-level
// problems become res.err; entries are parsed individually so that lookups
// can apply the in-order walk of step 5.
func parseJWKS(body []byte) *jwksResult {
	if !utf8.Valid(body) || !json.Valid(body) {
		return &jwksResult{err: failf(CodeJWKSUnavailable, "response is not JSON")}
	}
	if firstByte(body) != '{' {
		return &jwksResult{err: failf(CodeInvalidJWKS, "body is not an object")}
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return &jwksResult{err: failf(CodeInvalidJWKS, "body is not an object")}
	}
	raw, ok := top["keys"]
	if !ok {
		return &jwksResult{} // an absent keys counts as empty
	}
	var items []json.RawMessage
	if firstByte(raw) != '[' || json.Unmarshal(raw, &items) != nil {
		return &jwksResult{err: failf(CodeInvalidJWKS, "keys is not an array")}
	}
	res := &jwksResult{keys: make([]jwk, len(items))}
	for i, item := range items {
		res.keys[i] = parseJWK(item)
	}
	return res
}

// parseJWK parses one key set entry; only OKP/Ed25519 keys with a 32-byte x
// get a key.
func parseJWK(raw json.RawMessage) jwk {
	var m map[string]json.RawMessage
	if firstByte(raw) != '{' || json.Unmarshal(raw, &m) != nil {
		return jwk{}
	}
	k := jwk{object: true}
	k.kid, k.hasKID = jsonString(m["kid"])
	kty, _ := jsonString(m["kty"])
	crv, _ := jsonString(m["crv"])
	x, xOK := jsonString(m["x"])
	switch {
	case kty != "OKP" || crv != "Ed25519":
		k.bad = "key is not OKP/Ed25519"
	case !xOK || x == "":
		k.bad = "x is missing"
	default:
		b, ok := decodeSegment(x)
		switch {
		case !ok:
			k.bad = "x is not base64url"
		case len(b) != ed25519.PublicKeySize:
			k.bad = fmt.Sprintf("x decodes to %d bytes, want %d", len(b), ed25519.PublicKeySize)
		default:
			k.key = newVerifyKey(ed25519.PublicKey(b))
		}
	}
	return k
}

// firstByte returns the first non-whitespace byte of b, or 0.
func firstByte(b []byte) byte {
	b = bytes.TrimLeft(b, " \t\r\n")
	if len(b) == 0 {
		return 0
	}
	return b[0]
}

// redactURL drops credentials, query and fragment from a URL for logging.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(invalid URL)"
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return u.String()
}
