package wsauth

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestExtractToken(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"", ""},
		{"   ", ""},
		{"a.b.c", "a.b.c"},
		{"  a.b.c\t", "a.b.c"},
		{"Bearer a.b.c", "a.b.c"},
		{"bearer a.b.c", "a.b.c"},
		{"BEARER a.b.c", "a.b.c"},
		{"bEaReR    a.b.c  ", "a.b.c"},
		{" Bearer a.b.c", "a.b.c"},
		{"Bearer ", "Bearer"},              // trimmed first: no space left after Bearer
		{"Bearer", "Bearer"},               // no prefix without its space
		{"Bearer\ta.b.c", "Bearer\ta.b.c"}, // the prefix ends with a space
		{"Bearera.b.c", "Bearera.b.c"},
		{"Bearer Bearer a.b.c", "Bearer a.b.c"}, // the prefix is removed once
		{"Basic a.b.c", "Basic a.b.c"},
		{"Bearer \u00a0a.b.c", "a.b.c"},
		{"\u212aearer a.b.c", "\u212aearer a.b.c"}, // no Unicode case folding
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, ExtractToken(tt.in), "%q", tt.in)
	}
}

func TestDecodeSegment(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want string // "" with ok false means rejected
		ok   bool
	}{
		{"", "", true},
		{"YQ", "a", true},
		{"YQ==", "a", true},
		{"YQ=", "a", true}, // partial padding, as the jwt library and PyJWT accept
		{"YQ===", "", false},
		{"YR", "", false}, // non-zero trailing bits
		{"Y", "", false},
		{"YWJj", "abc", true},
		{"YW\nJj", "", false},
		{"YW Jj", "", false},
		{"YW+j", "", false},
		{"YW/j", "", false},
		{"Y=Q=", "", false},
		{"_-8", "\xff\xef", true},
	}
	for _, tt := range tests {
		got, ok := decodeSegment(tt.in)
		assert.Equal(t, tt.ok, ok, "%q", tt.in)
		if tt.ok {
			assert.Equal(t, tt.want, string(got), "%q", tt.in)
		}
	}
}

func TestParseIntegral(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true},
		{"-0", 0, true},
		{"1791700600", 1791700600, true},
		{"-5", -5, true},
		{"1791700600.0", 1791700600, true},
		{"1791700600.000", 1791700600, true},
		{"1.7917006e9", 1791700600, true},
		{"1.7917006E+9", 1791700600, true},
		{"17917006000e-1", 1791700600, true},
		{"0.0", 0, true},
		{"0e5", 0, true},
		{"0.000e-99999999999", 0, true},
		{"0e99999999999", 0, true},
		{"9223372036854775807", math.MaxInt64, true},
		{"-9223372036854775808", math.MinInt64, true},
		{"9.223372036854775807e18", math.MaxInt64, true},
		{"-9.223372036854775808e18", math.MinInt64, true},
		{"9223372036854775808", 0, false},
		{"9.223372036854775808e18", 0, false},
		{"-9223372036854775809", 0, false},
		{"1791700600.5", 0, false},
		{"1.79170060005e9", 0, false},
		{"1e-1", 0, false},
		{"1e19", 0, false},
		{"1e400", 0, false},
		{"1e99999999999", 0, false},
		{"1e-99999999999", 0, false},
		{"", 0, false},
		{"-", 0, false},
		{"1.", 0, false},
		{".5", 0, false},
		{"1e", 0, false},
		{"0e", 0, false},
		{"1e+-5", 0, false},
		{"1e5.5", 0, false},
		{"-e5", 0, false},
		{"1.5e1", 15, true},
		{"150e-1", 15, true},
		{"-1.5e1", -15, true},
		{"0x10", 0, false},
	}
	for _, tt := range tests {
		got, ok := parseIntegral(tt.in)
		assert.Equal(t, tt.ok, ok, tt.in)
		assert.Equal(t, tt.want, got, tt.in)
	}
}

// A key of the wrong size reports invalid_key, as golang-jwt's EdDSA method did.
func TestLibraryKeyErrorsMapToInvalidKey(t *testing.T) {
	t.Parallel()
	v := newPEMVerifier(t, WithCacheSize(0))
	v.pemKey = newVerifyKey(ed25519.PublicKey(mainKey.pub[:31]))
	_, err := v.Verify(context.Background(), testRequest(mintWith(t, nil)))
	assert.Equal(t, CodeInvalidKey, codeOf(t, err))
}

func TestCodes(t *testing.T) {
	t.Parallel()
	codes := Codes()
	assert.Len(t, codes, 22)
	seen := map[Code]bool{}
	for _, c := range codes {
		assert.False(t, seen[c], c)
		seen[c] = true
		assert.True(t, strings.HasPrefix(string(c), "workspace_authorization_"), c)
		assert.NotEmpty(t, fail(c).Message, c)
	}
	assert.Equal(t, "Missing X-Supervaize-Workspace-Authorization header", fail(CodeMissing).Error())
}

func TestErrorIs(t *testing.T) {
	t.Parallel()
	err := fmt.Errorf("wrapped: %w", failf(CodeExpired, "detail"))
	assert.ErrorIs(t, err, &Error{Code: CodeExpired})
	assert.NotErrorIs(t, err, &Error{Code: CodeMissing})
	assert.NotErrorIs(t, err, errors.New("x"))
}

func TestVerifyLogsFingerprintNotToken(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	v := newPEMVerifier(t, WithLogger(logger))
	tok := mint(t, otherKey.priv, validHeader(), validClaims())
	_, err := v.Verify(context.Background(), testRequest(tok))
	require.Error(t, err)
	out := buf.String()
	assert.Contains(t, out, `"token_fingerprint":"`+fingerprint(tok)+`"`)
	assert.Contains(t, out, string(CodeBadSignature))
	for _, part := range strings.Split(tok, ".") {
		assert.NotContains(t, out, part)
	}
	assert.Len(t, fingerprint(tok), 12)
}

func TestJWKSLogsNoSecrets(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	srv := newJWKSServer(t)
	srv.setBody(500, nil)
	v := newJWKSVerifier(t, srv.URL+testJWKSPath+"?token=s3cret", runningClock(), WithLogger(logger))
	tok := mintWith(t, nil)
	_, err := v.Verify(context.Background(), testRequest(tok))
	assert.Equal(t, CodeJWKSUnavailable, codeOf(t, err))
	out := buf.String()
	assert.Contains(t, out, "JWKS fetch failed")
	assert.Contains(t, out, `"status":500`)
	assert.NotContains(t, out, "s3cret")
	assert.NotContains(t, out, strings.Split(tok, ".")[2])

	srv.Close()
	v = newJWKSVerifier(t, srv.URL+testJWKSPath+"?token=s3cret", runningClock(), WithLogger(logger))
	_, err = v.Verify(context.Background(), testRequest(tok))
	assert.Equal(t, CodeJWKSUnavailable, codeOf(t, err))
	assert.NotContains(t, buf.String(), "s3cret", "transport errors must not repeat the URL query")
}
