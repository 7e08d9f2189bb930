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

func TestCacheHitSkipsSignatureButRechecksRequest(t *testing.T) {
	t.Parallel()
	clock := newTestClock(testNow)
	v := newPEMVerifier(t, WithClock(clock.Now))
	tok := mintWith(t, nil)
	_, err := v.Verify(context.Background(), testRequest(tok))
	require.NoError(t, err)
	require.Equal(t, 1, v.cache.len())

	// Swap the trusted key: a hit no longer checks the signature, a miss does.
	v.pemKey = newVerifyKey(otherKey.pub)
	_, err = v.Verify(context.Background(), testRequest(tok))
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
	_, err = v.Verify(context.Background(), testRequest(tok))
	require.NoError(t, err)

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
	_, err := v.Verify(context.Background(), testRequest(tok))
	require.NoError(t, err)
	require.Equal(t, 1, v.cache.len())

	v.SetAudience("supervaizer-server:studio-server-2")
	assert.Equal(t, 0, v.cache.len())
	_, err = v.Verify(context.Background(), testRequest(tok))
	assert.Equal(t, CodeWrongAudience, codeOf(t, err))
	assert.Equal(t, 0, v.cache.len())

	v.SetAudience(testAudience)
	_, err = v.Verify(context.Background(), testRequest(tok))
	assert.NoError(t, err)
}

func TestCacheDropsInsertionsFromBeforeAClear(t *testing.T) {
	t.Parallel()
	c := newTokenCache(4)
	gen := c.generation()
	c.clear()
	c.put([32]byte{1}, &tokenClaims{}, 0, 1, gen)
	assert.Equal(t, 0, c.len())
	c.put([32]byte{1}, &tokenClaims{}, 0, 1, c.generation())
	assert.Equal(t, 1, c.len())
}

func TestCacheBounded(t *testing.T) {
	t.Parallel()
	v := newPEMVerifier(t, WithCacheSize(3))
	for i := range 10 {
		_, err := v.Verify(context.Background(), testRequest(mintWith(t, setClaim("jti", fmt.Sprint(i)))))
		require.NoError(t, err)
		assert.LessOrEqual(t, v.cache.len(), 3)
	}
	assert.Equal(t, 3, v.cache.len())
}

func TestCacheEvictsSoonestExpiring(t *testing.T) {
	t.Parallel()
	c := newTokenCache(evictionSample) // every entry is sampled
	for i := range evictionSample {
		c.put([32]byte{byte(i)}, &tokenClaims{}, 0, int64(100+i), c.generation())
	}
	c.put([32]byte{0xff}, &tokenClaims{}, 0, 1, c.generation())
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
