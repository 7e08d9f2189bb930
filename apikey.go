package supervaizer

import (
	"crypto/sha256"
	"crypto/subtle"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/supervaize/supervaizer-go/internal/redact"
)

// KeyScope is the scope of a transport API key. Write satisfies every
// scope; read and a2a are not ordered (spec open-questions item 71).
type KeyScope string

// API-key scopes.
const (
	ScopeRead  KeyScope = "read"
	ScopeWrite KeyScope = "write"
	// ScopeA2A is the scope of an A2A client's key: it calls only the
	// standard A2A task methods of both bindings on POST /a2a (and the A2A
	// extension methods an agent serves there); the supervaizer/* methods,
	// GET /a2a/events, the resource routes and the registration refresh
	// answer 403 {"detail": "Insufficient scope"} (spec item 71).
	ScopeA2A KeyScope = "a2a"
)

func (s KeyScope) satisfies(need KeyScope) bool {
	return s == ScopeWrite || s == need
}

// canonicalAPIKeyHeader is HeaderAPIKey in canonical form: looking it up this
// way spares Header.Get a canonicalization per request.
var canonicalAPIKeyHeader = http.CanonicalHeaderKey(HeaderAPIKey)

type apiKey struct {
	key   string
	scope KeyScope
}

// apiKeys holds SHA-256 digests of the configured keys: comparing digests in
// constant time does not leak a key's length or content.
type apiKeys struct {
	digests [][sha256.Size]byte
	scopes  []KeyScope
	primary redact.Secret // the first write key: the effective key sent to Studio
}

func newAPIKeys(keys []apiKey) apiKeys {
	var ks apiKeys
	for _, k := range keys {
		ks.digests = append(ks.digests, sha256.Sum256([]byte(k.key)))
		ks.scopes = append(ks.scopes, k.scope)
		if ks.primary.IsZero() && k.scope == ScopeWrite {
			ks.primary = redact.New(k.key)
		}
	}
	return ks
}

// lookup returns the scope of the presented key; every configured key is
// compared, so the time taken does not depend on which one matched.
func (ks *apiKeys) lookup(presented string) (KeyScope, int, bool) {
	if presented == "" {
		return "", 0, false
	}
	// Hash from a stack buffer: converting presented to []byte would cost an
	// allocation per request for any key longer than 32 bytes.
	var kb [128]byte
	d := sha256.Sum256(append(kb[:0], presented...))
	var scope KeyScope
	found, index := 0, 0
	for i := range ks.digests {
		if subtle.ConstantTimeCompare(d[:], ks.digests[i][:]) == 1 {
			scope, found, index = ks.scopes[i], 1, i
		}
	}
	return scope, index, found == 1
}

// requireKey checks X-API-Key before anything else reads the request: 401 for a
// missing or unknown key, 403 for a key without the scope.
func requireKey(ks *apiKeys, logger *slog.Logger, need KeyScope) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if status, detail := ks.check(logger, r, need); status != 0 {
				writeDetail(w, status, detail)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// check checks the transport key of r for the scope need: status is 0
// when it is granted, else the refusal's (401 or 403) with its detail.
func (ks *apiKeys) check(logger *slog.Logger, r *http.Request, need KeyScope) (status int, detail string) {
	_, _, status, detail = ks.checkAny(logger, r, need, need)
	return status, detail
}

// keyHolder names the stream holder of the configured key at index (its
// position, never the key): sse.Limiter bounds each key's open streams.
func keyHolder(index int) string { return "key-" + strconv.Itoa(index) }

// checkAny checks the transport key of r for one of the scopes need and
// orNeed, as check does, and returns the key's scope when it is granted.
func (ks *apiKeys) checkAny(logger *slog.Logger, r *http.Request, need, orNeed KeyScope) (scope KeyScope, index, status int, detail string) {
	presented := r.Header.Get(canonicalAPIKeyHeader)
	scope, index, ok := ks.lookup(presented)
	if !ok {
		deny(logger, r, "invalid or missing API key", presented)
		return "", 0, http.StatusUnauthorized, "Invalid or missing API key"
	}
	if !scope.satisfies(need) && !scope.satisfies(orNeed) {
		deny(logger, r, "insufficient scope", presented)
		return "", 0, http.StatusForbidden, insufficientScope
	}
	return scope, index, 0, ""
}

// insufficientScope is the 403 detail of a key without the scope a route
// or method needs.
const insufficientScope = "Insufficient scope"

// checkMethodKey checks, on POST /a2a, that the call's key (its scope read
// by readCall) has the scope of the method: a write key calls every method,
// an a2a key only the A2A ones (an unknown supervaizer/* name needs write).
// status is 0 when it is granted.
func checkMethodKey(logger *slog.Logger, c *Call) (status int, detail string) {
	need := c.entry.m.key
	if c.entry.m.name == otherMethod && strings.HasPrefix(c.rpc.Method, supervaizerMethodPrefix) {
		need = ScopeWrite
	}
	if c.keyScope.satisfies(need) {
		return 0, ""
	}
	deny(logger, c.r, "insufficient scope", c.r.Header.Get(canonicalAPIKeyHeader))
	return http.StatusForbidden, insufficientScope
}

// supervaizerMethodPrefix starts the name of every Supervaizer v2 method.
const supervaizerMethodPrefix = "supervaizer/"

func deny(logger *slog.Logger, r *http.Request, reason, presented string) {
	attrs := []slog.Attr{slog.String("path", r.URL.Path), slog.String("reason", reason)}
	if presented != "" {
		attrs = append(attrs, slog.String("api_key_fingerprint", redact.Fingerprint(presented)))
	}
	logger.LogAttrs(r.Context(), slog.LevelWarn, "access denied", attrs...)
}
