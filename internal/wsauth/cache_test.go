package wsauth

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func codeOf(t testing.TB, err error) Code {
	t.Helper()
	if err == nil {
		return ""
	}
	var e *Error
	require.ErrorAs(t, err, &e)
	return e.Code
}

// verifyToCache verifies tok twice, as a token enters the cache on its
// second verification.
func verifyToCache(t testing.TB, v *Verifier, tok string) {
	t.Helper()
	for range 2 {
		_, err := v.Verify(context.Background(), testRequest(tok))
		require.NoError(t, err)
	}
}

func TestCacheHitSkipsSignatureButRechecksRequest(t *testing.T) {
	t.Parallel()
	clock := newTestClock(testNow)
	v := newPEMVerifier(t, WithClock(clock.Now))
	tok := mintWith(t, nil)
	verifyToCache(t, v, tok)
	require.Equal(t, 1, v.cache.len())

	// Swap the trusted key: a hit no longer checks the signature, a miss does.
	v.pemKey = newVerifyKey(otherKey.pub)
	_, err := v.Verify(context.Background(), testRequest(tok))
	assert.NoError(t, err, "a cache hit must not verify the signature again")
	assert.Equal(t, CodeBadSignature, codeOf(t, func() error {
		_, err := v.Verify(context.Background(), testRequest(mintWith(t, setClaim("jti", "another"))))
		return err
	}()))

	// Every per-request and time-dependent check still runs on a hit.
	req := func(mod func(r *Request)) Request { r := testRequest(tok); mod(&r); return r }
	for name, tc := range map[string]struct {
		r    Request
		want Code
	}{
		"wrong workspace":     {req(func(r *Request) { r.WorkspaceID = "ws-2" }), CodeWrongWorkspace},
		"different slug":      {req(func(r *Request) { r.WorkspaceSlug = "globex" }), CodeWrongWorkspace},
		"missing scope":       {req(func(r *Request) { r.Scopes = []string{testInvokeScope, "job.delete"} }), CodeMissingScope},
		"unknown agent":       {req(func(r *Request) { r.AgentSlug = "ghost" }), CodeUnknownAgent},
		"other agent":         {req(func(r *Request) { r.AgentSlug = testUnlinkedAgent }), CodeWrongAgent},
		"another header form": {req(func(r *Request) { r.Header = "  " + tok }), ""},
	} {
		_, err := v.Verify(context.Background(), tc.r)
		assert.Equal(t, tc.want, codeOf(t, err), name)
	}
	clock.Set(time.Unix(testEXP+31, 0))
	_, err = v.Verify(context.Background(), testRequest(tok))
	assert.Equal(t, CodeExpired, codeOf(t, err))
	clock.Set(time.Unix(testIAT-31, 0))
	_, err = v.Verify(context.Background(), testRequest(tok))
	assert.Equal(t, CodeNotYetValid, codeOf(t, err))
	clock.Set(testNow)
	_, err = v.Verify(context.Background(), testRequest(tok))
	assert.NoError(t, err)
}

func TestCacheHitFollowsDirectoryChanges(t *testing.T) {
	t.Parallel()
	dir := newTestDir()
	v, err := New(pemSettings(t), testServerID, dir, WithClock(func() time.Time { return testNow }))
	require.NoError(t, err)
	tok := mintWith(t, nil)
	verifyToCache(t, v, tok)
	require.Equal(t, 1, v.cache.len())

	dir.mu.Lock()
	dir.ids[testAgentSlug] = "studio-agent-99"
	dir.mu.Unlock()
	_, err = v.Verify(context.Background(), testRequest(tok))
	assert.Equal(t, CodeWrongAgent, codeOf(t, err))

	dir.mu.Lock()
	delete(dir.ids, testAgentSlug)
	dir.mu.Unlock()
	_, err = v.Verify(context.Background(), testRequest(tok))
	assert.Equal(t, CodeUnknownAgent, codeOf(t, err))
}

func TestCacheNeverStoresFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		token     func(t testing.TB) string
		want      Code
		cacheable bool // the token is sound; only the request is refused
	}{
		{"bad signature", func(t testing.TB) string { return mint(t, otherKey.priv, validHeader(), validClaims()) }, CodeBadSignature, false},
		{"unsupported alg", func(t testing.TB) string { return mintWith(t, setHeader("alg", "none")) }, CodeUnsupportedAlg, false},
		{"invalid claims", func(t testing.TB) string { return mintWith(t, setClaim("exp", "x")) }, CodeInvalidClaims, false},
		{"wrong issuer", func(t testing.TB) string { return mintWith(t, setClaim("iss", "x")) }, CodeWrongIssuer, false},
		{"wrong audience", func(t testing.TB) string { return mintWith(t, setClaim("aud", "x")) }, CodeWrongAudience, false},
		{"wrong server", func(t testing.TB) string { return mintWith(t, setClaim("server_id", "x")) }, CodeWrongServer, false},
		{"expired", func(t testing.TB) string { return mintWith(t, setClaim("exp", testNow.Unix()-60)) }, CodeExpired, true},
		{"wrong workspace", func(t testing.TB) string { return mintWith(t, setClaim("workspace_id", "x")) }, CodeWrongWorkspace, true},
		{"missing scope", func(t testing.TB) string { return mintWith(t, setClaim("scopes", []any{"x"})) }, CodeMissingScope, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := newPEMVerifier(t)
			tok := tt.token(t)
			for range 3 {
				_, err := v.Verify(context.Background(), testRequest(tok))
				assert.Equal(t, tt.want, codeOf(t, err))
			}
			want := 0
			if tt.cacheable {
				want = 1
			}
			assert.Equal(t, want, v.cache.len())
		})
	}
}

func TestSetAudienceClearsCache(t *testing.T) {
	t.Parallel()
	v := newPEMVerifier(t)
	tok := mintWith(t, nil)
	verifyToCache(t, v, tok)
	require.Equal(t, 1, v.cache.len())

	v.SetAudience("supervaizer-server:studio-server-2")
	assert.Equal(t, 0, v.cache.len())
	_, err := v.Verify(context.Background(), testRequest(tok))
	assert.Equal(t, CodeWrongAudience, codeOf(t, err))
	assert.Equal(t, 0, v.cache.len())

	v.SetAudience(testAudience)
	_, err = v.Verify(context.Background(), testRequest(tok))
	assert.NoError(t, err)
}

func TestCacheAdmitsOnSecondVerification(t *testing.T) {
	t.Parallel()
	v := newPEMVerifier(t, WithCacheSize(3))
	tok := mintWith(t, nil)
	_, err := v.Verify(context.Background(), testRequest(tok))
	require.NoError(t, err)
	assert.Equal(t, 0, v.cache.len(), "a token verified once is not cached")

	// The second verification is a full one too: it checks the signature.
	v.pemKey = newVerifyKey(otherKey.pub)
	_, err = v.Verify(context.Background(), testRequest(tok))
	assert.Equal(t, CodeBadSignature, codeOf(t, err))
	v.pemKey = newVerifyKey(mainKey.pub)
	_, err = v.Verify(context.Background(), testRequest(tok))
	require.NoError(t, err)
	assert.Equal(t, 1, v.cache.len(), "the second successful verification caches the token")

	// Tokens used once each neither take an entry nor evict the reused one.
	for i := range 50 {
		_, err := v.Verify(context.Background(), testRequest(mintWith(t, setClaim("jti", fmt.Sprint("once-", i)))))
		require.NoError(t, err)
	}
	assert.Equal(t, 1, v.cache.len())
	key := tokenKey(tok)
	_, _, ok := v.cache.get(key)
	assert.True(t, ok, "the reused token is still cached")
}

func TestCacheClearForgetsTokensSeenOnce(t *testing.T) {
	t.Parallel()
	c := newTokenCache(4)
	c.put([32]byte{1}, &tokenClaims{}, 0, 1, c.generation()) // seen once
	c.clear()
	c.put([32]byte{1}, &tokenClaims{}, 0, 1, c.generation())
	assert.Equal(t, 0, c.len(), "seen once since the clear")
	c.put([32]byte{1}, &tokenClaims{}, 0, 1, c.generation())
	assert.Equal(t, 1, c.len())
}

func TestCacheSeenTableSize(t *testing.T) {
	t.Parallel()
	for size, want := range map[int]int{1: 2, 3: 8, 4: 8, DefaultCacheSize: 2 * DefaultCacheSize, 1 << 20: maxSeenSlots} {
		assert.Len(t, newTokenCache(size).seen, want, "cache size %d", size)
	}
}

func TestCacheDropsInsertionsFromBeforeAClear(t *testing.T) {
	t.Parallel()
	c := newTokenCache(4)
	gen := c.generation()
	c.clear()
	for range 2 {
		c.put([32]byte{1}, &tokenClaims{}, 0, 1, gen)
	}
	assert.Equal(t, 0, c.len())
	for range 2 {
		c.put([32]byte{1}, &tokenClaims{}, 0, 1, c.generation())
	}
	assert.Equal(t, 1, c.len())
}

func TestCacheBounded(t *testing.T) {
	t.Parallel()
	v := newPEMVerifier(t, WithCacheSize(3))
	for i := range 10 {
		verifyToCache(t, v, mintWith(t, setClaim("jti", fmt.Sprint(i))))
		assert.LessOrEqual(t, v.cache.len(), 3)
	}
	assert.Equal(t, 3, v.cache.len())
}

func TestCacheEvictsSoonestExpiring(t *testing.T) {
	t.Parallel()
	c := newTokenCache(evictionSample)         // every entry is sampled
	put := func(key [32]byte, expires int64) { // twice: admitted on the second
		for range 2 {
			c.put(key, &tokenClaims{}, 0, expires, c.generation())
		}
	}
	for i := range evictionSample {
		put([32]byte{byte(i)}, int64(100+i))
	}
	require.Equal(t, evictionSample, c.len())
	put([32]byte{0xff}, 1)
	_, _, ok := c.get([32]byte{0})
	assert.False(t, ok, "the entry expiring first is evicted")
	for i := 1; i < evictionSample; i++ {
		_, _, ok := c.get([32]byte{byte(i)})
		assert.True(t, ok)
	}
}

func TestCacheDisabled(t *testing.T) {
	t.Parallel()
	v := newPEMVerifier(t, WithCacheSize(0))
	assert.Nil(t, v.cache)
	tok := mintWith(t, nil)
	for range 2 {
		_, err := v.Verify(context.Background(), testRequest(tok))
		require.NoError(t, err)
	}
	v.SetAudience(testAudience) // clearing a disabled cache is a no-op
	v.pemKey = newVerifyKey(otherKey.pub)
	_, err := v.Verify(context.Background(), testRequest(tok))
	assert.Equal(t, CodeBadSignature, codeOf(t, err), "without a cache every call verifies the signature")
}
