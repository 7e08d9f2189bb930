package wsauth

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// verifyCode verifies a token for kid signed by key and returns the code
// ("" on success).
func verifyCode(t testing.TB, v *Verifier, ctx context.Context, key testKey, kid string) Code {
	t.Helper()
	_, err := v.Verify(ctx, testRequest(mint(t, key.priv, map[string]any{"alg": "EdDSA", "kid": kid}, validClaims())))
	if err == nil {
		return ""
	}
	var e *Error
	require.ErrorAs(t, err, &e)
	return e.Code
}

// runningClock returns a clock that starts at testNow and runs in real time.
func runningClock() func() time.Time {
	start := time.Now()
	return func() time.Time { return testNow.Add(time.Since(start)) }
}

func TestJWKSRotation(t *testing.T) {
	t.Parallel()
	srv := newJWKSServer(t, mainKey.jwk("k1"))
	clock := newTestClock(testNow)
	v := newJWKSVerifier(t, srv.url(), clock.Now)

	assert.Equal(t, Code(""), verifyCode(t, v, t.Context(), mainKey, "k1"))
	assert.Equal(t, int64(1), srv.fetches.Load())
	assert.Equal(t, Code(""), verifyCode(t, v, t.Context(), mainKey, "k1"), "key cache hit")
	assert.Equal(t, int64(1), srv.fetches.Load())

	// Studio publishes k2 and signs with it right away: within the refetch
	// interval the new kid is not fetched yet.
	srv.setKeys(t, mainKey.jwk("k1"), otherKey.jwk("k2"))
	clock.Advance(DefaultJWKSRefetchInterval - time.Second)
	assert.Equal(t, CodeUnknownKID, verifyCode(t, v, t.Context(), otherKey, "k2"))
	assert.Equal(t, int64(1), srv.fetches.Load())

	// Once the interval has passed, the new kid triggers a refetch.
	clock.Advance(time.Second)
	assert.Equal(t, Code(""), verifyCode(t, v, t.Context(), otherKey, "k2"))
	assert.Equal(t, int64(2), srv.fetches.Load())
	assert.Equal(t, Code(""), verifyCode(t, v, t.Context(), mainKey, "k1"))
	assert.Equal(t, int64(2), srv.fetches.Load())
}

// verifyTok verifies tok and returns the code ("" on success).
func verifyTok(t testing.TB, v *Verifier, tok string) Code {
	t.Helper()
	_, err := v.Verify(t.Context(), testRequest(tok))
	if err == nil {
		return ""
	}
	var e *Error
	require.ErrorAs(t, err, &e)
	return e.Code
}

// TestJWKSFetchReplacesKeySet rotates the served key set: once a fetch no
// longer carries a kid, tokens under it are refused, whether or not the same
// token was verified (and cached) before.
func TestJWKSFetchReplacesKeySet(t *testing.T) {
	t.Parallel()
	for _, cacheSize := range []int{0, DefaultCacheSize} {
		t.Run(fmt.Sprint("token cache ", cacheSize), func(t *testing.T) {
			t.Parallel()
			srv := newJWKSServer(t, mainKey.jwk("k1"))
			clock := newTestClock(testNow)
			v := newJWKSVerifier(t, srv.url(), clock.Now, WithCacheSize(cacheSize))
			k1 := func(jti string) string {
				return mint(t, mainKey.priv, map[string]any{"alg": "EdDSA", "kid": "k1"}, func() map[string]any {
					c := validClaims()
					c["jti"] = jti
					return c
				}())
			}
			seen := k1("seen-before")
			for range 2 { // cached from its second verification
				require.Equal(t, Code(""), verifyTok(t, v, seen))
			}

			// Studio publishes k2 next to k1, then drops k1.
			srv.setKeys(t, mainKey.jwk("k1"), otherKey.jwk("k2"))
			clock.Advance(DefaultJWKSRefetchInterval)
			require.Equal(t, Code(""), verifyCode(t, v, t.Context(), otherKey, "k2"))
			require.Equal(t, int64(2), srv.fetches.Load())
			srv.setKeys(t, otherKey.jwk("k2"), otherKey.jwk("k3"))
			clock.Advance(DefaultJWKSRefetchInterval)
			require.Equal(t, Code(""), verifyCode(t, v, t.Context(), otherKey, "k3"))
			require.Equal(t, int64(3), srv.fetches.Load())

			assert.Equal(t, CodeUnknownKID, verifyTok(t, v, k1("fresh")), "a fresh token under the removed kid")
			assert.Equal(t, CodeUnknownKID, verifyTok(t, v, seen), "a token verified before the removal")
			assert.Equal(t, Code(""), verifyCode(t, v, t.Context(), otherKey, "k2"), "kept kids still verify")
			assert.Equal(t, int64(3), srv.fetches.Load(), "refusals within the interval do not fetch")

			// A kid whose key changed verifies only with the new key.
			srv.setKeys(t, mainKey.jwk("k2"))
			clock.Advance(DefaultJWKSRefetchInterval)
			assert.Equal(t, CodeUnknownKID, verifyCode(t, v, t.Context(), otherKey, "k4"))
			assert.Equal(t, int64(4), srv.fetches.Load())
			assert.Equal(t, CodeBadSignature, verifyCode(t, v, t.Context(), otherKey, "k2"), "the old key of k2")
			assert.Equal(t, Code(""), verifyCode(t, v, t.Context(), mainKey, "k2"))
		})
	}
}

// longLived mints a token under kid, signed by key, valid for a day from
// testNow.
func longLived(t testing.TB, key testKey, kid string) string {
	c := validClaims()
	c["exp"] = testNow.Add(24 * time.Hour).Unix()
	return mint(t, key.priv, map[string]any{"alg": "EdDSA", "kid": kid}, c)
}

// TestJWKSKeyMaxAge: keys are trusted for at most the maximum age of their
// fetch; past it the next request refetches, and a failed fetch keeps the
// previous set only until its maximum age.
func TestJWKSKeyMaxAge(t *testing.T) {
	t.Parallel()
	srv := newJWKSServer(t, mainKey.jwk("k1"))
	clock := newTestClock(testNow)
	v := newJWKSVerifier(t, srv.url(), clock.Now)
	tok := longLived(t, mainKey, "k1")
	for range 2 { // cached from its second verification
		require.Equal(t, Code(""), verifyTok(t, v, tok))
	}

	// Within the maximum age nothing is fetched, even for a cached token,
	// and a failed refetch keeps the set.
	srv.setBody(http.StatusServiceUnavailable, nil)
	clock.Advance(DefaultJWKSKeyMaxAge / 2)
	assert.Equal(t, CodeJWKSUnavailable, verifyCode(t, v, t.Context(), mainKey, "unknown"))
	assert.Equal(t, int64(2), srv.fetches.Load())
	assert.Equal(t, Code(""), verifyTok(t, v, tok), "a failed fetch keeps the previous set")

	// Past the maximum age of the last good fetch, the set is no longer
	// trusted: the next request refetches (once per interval), and fails.
	clock.Set(testNow.Add(DefaultJWKSKeyMaxAge))
	assert.Equal(t, CodeJWKSUnavailable, verifyTok(t, v, tok))
	assert.Equal(t, CodeJWKSUnavailable, verifyCode(t, v, t.Context(), mainKey, "k1"))
	assert.Equal(t, int64(3), srv.fetches.Load())

	// Studio dropped k1 meanwhile: the refetch past the maximum age sees it
	// although no unknown kid asked for one.
	srv.setKeys(t, otherKey.jwk("k2"))
	clock.Advance(DefaultJWKSRefetchInterval)
	assert.Equal(t, CodeUnknownKID, verifyTok(t, v, tok))
	assert.Equal(t, int64(4), srv.fetches.Load())

	// A set that still holds the kid is trusted again for a full maximum age.
	srv.setKeys(t, mainKey.jwk("k1"))
	clock.Advance(DefaultJWKSRefetchInterval)
	assert.Equal(t, Code(""), verifyTok(t, v, tok))
	assert.Equal(t, int64(5), srv.fetches.Load())
	clock.Advance(DefaultJWKSKeyMaxAge - time.Second)
	assert.Equal(t, Code(""), verifyTok(t, v, tok))
	assert.Equal(t, int64(5), srv.fetches.Load())
}

// TestJWKSMaxAgeOption: the maximum age is configurable and never shorter
// than the refetch interval.
func TestJWKSMaxAgeOption(t *testing.T) {
	t.Parallel()
	srv := newJWKSServer(t, mainKey.jwk("k1"))
	clock := newTestClock(testNow)
	v := newJWKSVerifier(t, srv.url(), clock.Now, WithJWKSKeyMaxAge(time.Minute), WithJWKSRefetchInterval(time.Second))
	tok := longLived(t, mainKey, "k1")
	require.Equal(t, Code(""), verifyTok(t, v, tok))
	clock.Advance(time.Minute - time.Second)
	require.Equal(t, Code(""), verifyTok(t, v, tok))
	assert.Equal(t, int64(1), srv.fetches.Load())
	clock.Advance(time.Second)
	require.Equal(t, Code(""), verifyTok(t, v, tok))
	assert.Equal(t, int64(2), srv.fetches.Load())

	// A maximum age below the refetch interval is raised to it.
	v = newJWKSVerifier(t, srv.url(), clock.Now, WithJWKSKeyMaxAge(time.Second), WithJWKSRefetchInterval(time.Minute))
	require.Equal(t, Code(""), verifyTok(t, v, tok))
	clock.Advance(59 * time.Second)
	require.Equal(t, Code(""), verifyTok(t, v, tok))
	assert.Equal(t, int64(3), srv.fetches.Load())
	clock.Advance(time.Second)
	require.Equal(t, Code(""), verifyTok(t, v, tok))
	assert.Equal(t, int64(4), srv.fetches.Load())
}

// TestJWKSMaxAgeRefetchCoalesced: many cached tokens whose keys reach their
// maximum age at once cause a single refetch.
func TestJWKSMaxAgeRefetchCoalesced(t *testing.T) {
	t.Parallel()
	srv := newJWKSServer(t, mainKey.jwk("k1"))
	clock := newTestClock(testNow)
	v := newJWKSVerifier(t, srv.url(), clock.Now)
	tok := longLived(t, mainKey, "k1")
	for range 2 { // cached from its second verification
		require.Equal(t, Code(""), verifyTok(t, v, tok))
	}
	require.Equal(t, 1, v.cache.len())
	clock.Advance(DefaultJWKSKeyMaxAge)
	gate := make(chan struct{})
	srv.setGate(gate)
	const n = 12
	codes := make([]Code, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { codes[i] = verifyTok(t, v, tok) })
	}
	waitForWaiters(t, v, n-1)
	close(gate)
	wg.Wait()
	assert.Equal(t, int64(2), srv.fetches.Load())
	for _, c := range codes {
		assert.Equal(t, Code(""), c)
	}
}

func TestJWKSOneFetchServesEveryKid(t *testing.T) {
	t.Parallel()
	srv := newJWKSServer(t, mainKey.jwk("k1"), otherKey.jwk("k2"), map[string]any{"kid": "k3", "kty": "RSA"})
	v := newJWKSVerifier(t, srv.url(), runningClock(), WithJWKSRefetchInterval(0))
	assert.Equal(t, Code(""), verifyCode(t, v, t.Context(), otherKey, "k2"))
	assert.Equal(t, Code(""), verifyCode(t, v, t.Context(), mainKey, "k1"))
	assert.Equal(t, int64(1), srv.fetches.Load())
	assert.Equal(t, CodeInvalidJWK, verifyCode(t, v, t.Context(), mainKey, "k3"), "only parsed keys are cached")
	assert.Equal(t, int64(2), srv.fetches.Load())
}

func TestJWKSBodies(t *testing.T) {
	t.Parallel()
	good := mustJSON(t, mainKey.jwk(testKID))
	rsa := `{"kid":"` + testKID + `","kty":"RSA","n":"AQAB","e":"AQAB"}`
	tests := []struct {
		name   string
		status int
		body   string
		want   Code
	}{
		{"valid", 200, `{"keys":[` + good + `]}`, ""},
		{"valid with other members", 200, `{"issuer":"x","keys":[{"kid":"a","kty":"EC"},` + good + `]}`, ""},
		{"non-object after the match", 200, `{"keys":[` + good + `,1,"x",null]}`, ""},
		{"status 201", 201, `{"keys":[` + good + `]}`, ""},
		{"status 500", 500, `{"keys":[` + good + `]}`, CodeJWKSUnavailable},
		{"status 404", 404, `not found`, CodeJWKSUnavailable},
		{"status 304", 304, ``, CodeJWKSUnavailable},
		{"not JSON", 200, `<html>keys</html>`, CodeJWKSUnavailable},
		{"empty body", 200, ``, CodeJWKSUnavailable},
		{"trailing data", 200, `{"keys":[` + good + `]} {}`, CodeJWKSUnavailable},
		{"not UTF-8", 200, "{\"keys\":[],\"x\":\"\xff\"}", CodeJWKSUnavailable},
		{"body is an array", 200, `[]`, CodeInvalidJWKS},
		{"body is a string", 200, `"keys"`, CodeInvalidJWKS},
		{"body is null", 200, `null`, CodeInvalidJWKS},
		{"keys is an object", 200, `{"keys":{}}`, CodeInvalidJWKS},
		{"keys is null", 200, `{"keys":null}`, CodeInvalidJWKS},
		{"keys is a string", 200, `{"keys":"k1"}`, CodeInvalidJWKS},
		{"non-object entry before the match", 200, `{"keys":[1,` + good + `]}`, CodeInvalidJWKS},
		{"null entry before the match", 200, `{"keys":[null,` + good + `]}`, CodeInvalidJWKS},
		{"keys absent", 200, `{}`, CodeUnknownKID},
		{"keys with another case", 200, `{"Keys":[` + good + `]}`, CodeUnknownKID},
		{"keys empty", 200, `{"keys":[]}`, CodeUnknownKID},
		{"kid not a string", 200, `{"keys":[{"kid":7,"kty":"OKP","crv":"Ed25519","x":"` + b64(mainKey.pub) + `"}]}`, CodeUnknownKID},
		{"first match wins", 200, `{"keys":[` + rsa + `,` + good + `]}`, CodeInvalidJWK},
		{"crv Ed448", 200, `{"keys":[{"kid":"` + testKID + `","kty":"OKP","crv":"Ed448","x":"` + b64(mainKey.pub) + `"}]}`, CodeInvalidJWK},
		{"kty in lower case", 200, `{"keys":[{"kid":"` + testKID + `","kty":"okp","crv":"Ed25519","x":"` + b64(mainKey.pub) + `"}]}`, CodeInvalidJWK},
		{"x is a number", 200, `{"keys":[{"kid":"` + testKID + `","kty":"OKP","crv":"Ed25519","x":1}]}`, CodeInvalidJWK},
		{"x empty", 200, `{"keys":[{"kid":"` + testKID + `","kty":"OKP","crv":"Ed25519","x":""}]}`, CodeInvalidJWK},
		{"x padded", 200, `{"keys":[{"kid":"` + testKID + `","kty":"OKP","crv":"Ed25519","x":"` + b64(mainKey.pub) + `="}]}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := newJWKSServer(t)
			srv.setBody(tt.status, []byte(tt.body))
			v := newJWKSVerifier(t, srv.url(), runningClock())
			assert.Equal(t, tt.want, verifyCode(t, v, t.Context(), mainKey, testKID))
		})
	}
}

func TestJWKSOversizedBody(t *testing.T) {
	t.Parallel()
	body := `{"keys":[` + mustJSON(t, mainKey.jwk(testKID)) + `]}`
	for _, tc := range []struct {
		size int
		want Code
	}{{MaxJWKSBytes, ""}, {MaxJWKSBytes + 1, CodeJWKSUnavailable}} {
		srv := newJWKSServer(t)
		srv.setBody(200, []byte(body+strings.Repeat(" ", tc.size-len(body))))
		v := newJWKSVerifier(t, srv.url(), runningClock())
		assert.Equal(t, tc.want, verifyCode(t, v, t.Context(), mainKey, testKID), "size %d", tc.size)
	}
}

func TestJWKSUnreachable(t *testing.T) {
	t.Parallel()
	srv := newJWKSServer(t)
	url := srv.url()
	srv.Close()
	v := newJWKSVerifier(t, url, runningClock())
	assert.Equal(t, CodeJWKSUnavailable, verifyCode(t, v, t.Context(), mainKey, testKID))
}

func TestJWKSRedirects(t *testing.T) {
	t.Parallel()
	keys := newJWKSServer(t, mainKey.jwk(testKID))
	// redirector answers /hop/N with a redirect to /hop/N-1, and /hop/0 with
	// a redirect to target + testJWKSPath (or serves nothing else).
	redirector := func(t *testing.T, target func(self string) string) *httptest.Server {
		var self string
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var n int
			if _, err := fmt.Sscanf(r.URL.Path, "/hop/%d", &n); err == nil && n > 0 {
				http.Redirect(w, r, fmt.Sprintf("/hop/%d", n-1), http.StatusFound)
				return
			}
			http.Redirect(w, r, target(self)+testJWKSPath, http.StatusTemporaryRedirect)
		}))
		self = s.URL
		t.Cleanup(s.Close)
		return s
	}
	t.Run("to another host", func(t *testing.T) {
		t.Parallel()
		r := redirector(t, func(string) string { return keys.URL })
		v := newJWKSVerifier(t, r.URL+"/hop/0", runningClock())
		before := keys.fetches.Load()
		assert.Equal(t, CodeJWKSUnavailable, verifyCode(t, v, t.Context(), mainKey, testKID))
		assert.Equal(t, before, keys.fetches.Load(), "the other host was contacted")
	})
	t.Run("same host, within the limit", func(t *testing.T) {
		t.Parallel()
		// The target is served by the redirector itself: /jwks.json is
		// reached after MaxJWKSRedirects redirects, then served by a proxy.
		var self string
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var n int
			if _, err := fmt.Sscanf(r.URL.Path, "/hop/%d", &n); err == nil {
				if n > 0 {
					http.Redirect(w, r, fmt.Sprintf("/hop/%d", n-1), http.StatusFound)
				} else {
					http.Redirect(w, r, self+testJWKSPath, http.StatusFound)
				}
				return
			}
			_, _ = w.Write([]byte(mustJSON(t, map[string]any{"keys": []any{mainKey.jwk(testKID)}})))
		}))
		self = s.URL
		t.Cleanup(s.Close)
		v := newJWKSVerifier(t, fmt.Sprintf("%s/hop/%d", s.URL, MaxJWKSRedirects-1), runningClock())
		assert.Equal(t, Code(""), verifyCode(t, v, t.Context(), mainKey, testKID))
		v = newJWKSVerifier(t, fmt.Sprintf("%s/hop/%d", s.URL, MaxJWKSRedirects), runningClock())
		assert.Equal(t, CodeJWKSUnavailable, verifyCode(t, v, t.Context(), mainKey, testKID))
	})
	t.Run("policy", func(t *testing.T) {
		t.Parallel()
		req := func(u string) *http.Request { r, _ := http.NewRequest(http.MethodGet, u, nil); return r }
		https := req("https://studio.example/jwks")
		assert.NoError(t, checkJWKSRedirect(req("https://STUDIO.example/v2/jwks"), []*http.Request{https}))
		assert.Error(t, checkJWKSRedirect(req("http://studio.example/jwks"), []*http.Request{https}))
		assert.Error(t, checkJWKSRedirect(req("https://studio.example.evil/jwks"), []*http.Request{https}))
		assert.Error(t, checkJWKSRedirect(req("https://studio.example:8443/jwks"), []*http.Request{https}))
		assert.NoError(t, checkJWKSRedirect(req("https://studio.example/jwks"), []*http.Request{https, https, https}))
		assert.Error(t, checkJWKSRedirect(req("https://studio.example/jwks"), []*http.Request{https, https, https, https}))
	})
}

func TestJWKSRefetchRateLimit(t *testing.T) {
	t.Parallel()
	srv := newJWKSServer(t, mainKey.jwk("k1"))
	clock := newTestClock(testNow)
	v := newJWKSVerifier(t, srv.url(), clock.Now)
	const n = 25
	for i := range n {
		assert.Equal(t, CodeUnknownKID, verifyCode(t, v, t.Context(), mainKey, fmt.Sprintf("forged-%d", i)))
	}
	assert.Equal(t, int64(1), srv.fetches.Load(), "unknown kids within the interval must not refetch")
	assert.Equal(t, Code(""), verifyCode(t, v, t.Context(), mainKey, "k1"), "known kids still verify")

	clock.Advance(DefaultJWKSRefetchInterval)
	assert.Equal(t, CodeUnknownKID, verifyCode(t, v, t.Context(), mainKey, "forged-again"))
	assert.Equal(t, int64(2), srv.fetches.Load())

	// A failed fetch is rate limited too, and keeps answering its own code.
	srv.setBody(http.StatusServiceUnavailable, nil)
	clock.Advance(DefaultJWKSRefetchInterval)
	for i := range n {
		assert.Equal(t, CodeJWKSUnavailable, verifyCode(t, v, t.Context(), mainKey, fmt.Sprintf("k-%d", i)))
	}
	assert.Equal(t, int64(3), srv.fetches.Load())
	assert.Equal(t, Code(""), verifyCode(t, v, t.Context(), mainKey, "k1"), "cached keys survive a failed fetch")
}

func TestJWKSCustomRefetchInterval(t *testing.T) {
	t.Parallel()
	srv := newJWKSServer(t, mainKey.jwk("k1"))
	clock := newTestClock(testNow)
	v := newJWKSVerifier(t, srv.url(), clock.Now, WithJWKSRefetchInterval(time.Minute))
	verifyCode(t, v, t.Context(), mainKey, "x1")
	clock.Advance(59 * time.Second)
	verifyCode(t, v, t.Context(), mainKey, "x2")
	assert.Equal(t, int64(1), srv.fetches.Load())
	clock.Advance(time.Second)
	verifyCode(t, v, t.Context(), mainKey, "x3")
	assert.Equal(t, int64(2), srv.fetches.Load())

	v = newJWKSVerifier(t, srv.url(), clock.Now, WithJWKSRefetchInterval(0))
	for i := range 3 {
		verifyCode(t, v, t.Context(), mainKey, fmt.Sprintf("y%d", i))
	}
	assert.Equal(t, int64(5), srv.fetches.Load(), "no limit: every unknown kid fetches")
}

// waitForWaiters polls until the in-flight fetch of v has n waiters.
func waitForWaiters(t *testing.T, v *Verifier, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		v.jwks.mu.Lock()
		defer v.jwks.mu.Unlock()
		return v.jwks.inflight != nil && v.jwks.inflight.waiters == n
	}, 10*time.Second, time.Millisecond)
}

func TestJWKSConcurrentMissesCoalesced(t *testing.T) {
	t.Parallel()
	srv := newJWKSServer(t, mainKey.jwk("k1"), otherKey.jwk("k2"))
	gate := make(chan struct{})
	srv.setGate(gate)
	// No rate limit: without coalescing every miss would fetch.
	v := newJWKSVerifier(t, srv.url(), runningClock(), WithJWKSRefetchInterval(0), WithCacheSize(0))
	const n = 16
	codes := make([]Code, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			key, kid := mainKey, "k1"
			switch i % 3 {
			case 1:
				key, kid = otherKey, "k2"
			case 2:
				kid = "unknown"
			}
			codes[i] = verifyCode(t, v, context.Background(), key, kid)
		})
	}
	waitForWaiters(t, v, n-1)
	close(gate)
	wg.Wait()
	assert.Equal(t, int64(1), srv.fetches.Load())
	for i, c := range codes {
		if i%3 == 2 {
			assert.Equal(t, CodeUnknownKID, c)
		} else {
			assert.Equal(t, Code(""), c)
		}
	}
}

func TestJWKSWaitBoundedByContext(t *testing.T) {
	t.Parallel()
	srv := newJWKSServer(t, mainKey.jwk("k1"))
	gate := make(chan struct{})
	srv.setGate(gate)
	v := newJWKSVerifier(t, srv.url(), runningClock())

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan Code)
	go func() { done <- verifyCode(t, v, ctx, mainKey, "k1") }()
	require.Eventually(t, func() bool { return srv.fetches.Load() == 1 }, 10*time.Second, time.Millisecond)
	cancel()
	assert.Equal(t, CodeJWKSUnavailable, <-done)

	// The fetch itself goes on and serves later requests.
	close(gate)
	require.Eventually(t, func() bool {
		v.jwks.mu.Lock()
		defer v.jwks.mu.Unlock()
		return v.jwks.last != nil
	}, 10*time.Second, time.Millisecond)
	assert.Equal(t, Code(""), verifyCode(t, v, t.Context(), mainKey, "k1"))
	assert.Equal(t, int64(1), srv.fetches.Load())
}

func TestJWKSCustomHTTPClient(t *testing.T) {
	t.Parallel()
	srv := newJWKSServer(t, mainKey.jwk("k1"))
	var used sync.Map
	client := &http.Client{
		Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			used.Store(r.URL.Path, true)
			return http.DefaultTransport.RoundTrip(r)
		}),
		CheckRedirect: func(*http.Request, []*http.Request) error { return nil }, // replaced
	}
	v := newJWKSVerifier(t, srv.url(), runningClock(), WithHTTPClient(client))
	assert.Equal(t, Code(""), verifyCode(t, v, t.Context(), mainKey, "k1"))
	_, ok := used.Load(testJWKSPath)
	assert.True(t, ok)
	assert.NotNil(t, client.CheckRedirect, "the caller's client is not modified")
	assert.NotNil(t, v.jwks.client.CheckRedirect)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestKeySetGeneration(t *testing.T) {
	t.Parallel()
	src := newJWKSSource("http://127.0.0.1/jwks", &http.Client{}, 0, 0, func() time.Time { return testNow }, nil)
	assert.Equal(t, DefaultJWKSKeyMaxAge, src.maxAge)
	publish := func(body string) *keySet {
		res := parseJWKS([]byte(body))
		require.Nil(t, res.err)
		prev := src.set.Load()
		keys := usableKeys(res)
		gen := uint64(1)
		if prev != nil {
			gen = prev.gen
			if !prev.keeps(keys) {
				gen++
			}
		}
		set := &keySet{keys: keys, gen: gen}
		src.set.Store(set)
		return set
	}
	k := func(kid string, key testKey) string { return mustJSON(t, key.jwk(kid)) }
	a := publish(`{"keys":[` + k("a", mainKey) + `]}`)
	assert.Equal(t, uint64(1), a.gen)
	b := publish(`{"keys":[` + k("a", mainKey) + `,` + k("b", otherKey) + `]}`)
	assert.Equal(t, a.gen, b.gen, "an added kid keeps the generation")
	c := publish(`{"keys":[` + k("a", otherKey) + `,` + k("b", otherKey) + `]}`)
	assert.Equal(t, b.gen+1, c.gen, "a changed key")
	d := publish(`{"keys":[` + k("b", otherKey) + `]}`)
	assert.Equal(t, c.gen+1, d.gen, "a removed kid")
	e := publish(`{"keys":[` + k("b", otherKey) + `,1,` + k("c", mainKey) + `]}`)
	assert.Equal(t, d.gen, e.gen)
	assert.NotContains(t, e.keys, "c", "keys behind a non-object entry are not trusted")
	f := publish(`{"keys":[{"kid":"b","kty":"RSA"},` + k("b", mainKey) + `]}`)
	assert.Equal(t, e.gen+1, f.gen, "the first entry of a kid decides, and it is unusable")
	assert.Empty(t, f.keys)
}

func TestParseJWKS(t *testing.T) {
	t.Parallel()
	res := parseJWKS([]byte(`{"keys":[{"kid":"a","kty":"OKP","crv":"Ed25519","x":"` + b64(mainKey.pub) + `"},2,{"kid":"b"}]}`))
	require.Nil(t, res.err)
	require.Len(t, res.keys, 3)
	assert.Equal(t, jwk{object: true, kid: "a", hasKID: true, key: newVerifyKey(mainKey.pub)}, res.keys[0])
	assert.False(t, res.keys[1].object)
	assert.True(t, res.keys[2].object)
	assert.Nil(t, res.keys[2].key)
	assert.NotEmpty(t, res.keys[2].bad)
}

func FuzzParseJWKS(f *testing.F) {
	f.Add([]byte(`{"keys":[{"kid":"a","kty":"OKP","crv":"Ed25519","x":"` + b64(mainKey.pub) + `"}]}`))
	f.Add([]byte(`{"keys":[1,{"kid":"a"}]}`))
	f.Add([]byte(`{"keys":{}}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"keys":[{"kid":"a","kty":"OKP","crv":"Ed25519","x":"AAAA="}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		res := parseJWKS(body)
		if res.err != nil {
			assert.Contains(t, []Code{CodeJWKSUnavailable, CodeInvalidJWKS}, res.err.Code)
			assert.Nil(t, res.keys)
			return
		}
		for _, k := range res.keys {
			if k.key != nil {
				assert.Len(t, k.key.raw, 32)
				assert.True(t, k.object)
			}
		}
	})
}
