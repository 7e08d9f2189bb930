package wsauth

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var rsaTestKey = sync.OnceValue(func() *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	return k
})

// signWithLib signs the valid claims (after mod) with another algorithm
// through the jwt library, the way an attacker's tooling would.
func signWithLib(t testing.TB, method jwt.SigningMethod, key any, mod func(h, c map[string]any)) string {
	t.Helper()
	h, c := validHeader(), validClaims()
	if mod != nil {
		mod(h, c)
	}
	tok := jwt.NewWithClaims(method, jwt.MapClaims(c))
	for k, v := range h {
		if k != "alg" {
			tok.Header[k] = v
		}
	}
	s, err := tok.SignedString(key)
	require.NoError(t, err)
	return s
}

// segs splits a compact token.
func segs(tok string) []string { return strings.Split(tok, ".") }

// tamperPayload rewrites the payload of tok without re-signing it.
func tamperPayload(t testing.TB, tok string, mod func(c map[string]any)) string {
	t.Helper()
	s := segs(tok)
	raw, ok := decodeSegment(s[1])
	require.True(t, ok)
	var c map[string]any
	require.NoError(t, json.Unmarshal(raw, &c))
	mod(c)
	s[1] = b64([]byte(mustJSON(t, c)))
	return strings.Join(s, ".")
}

func setClaim(name string, v any) func(h, c map[string]any) {
	return func(_, c map[string]any) { c[name] = v }
}

func delClaim(name string) func(h, c map[string]any) {
	return func(_, c map[string]any) { delete(c, name) }
}

func setHeader(name string, v any) func(h, c map[string]any) {
	return func(h, _ map[string]any) { h[name] = v }
}

// attackJWKS is the key set of the JWKS cases: the trusted key under
// testKID, then entries that must never verify anything.
func attackJWKS(t testing.TB) []any {
	return []any{
		mainKey.jwk(testKID),
		map[string]any{"kid": "rsa", "kty": "RSA", "n": b64(rsaTestKey().N.Bytes()), "e": "AQAB"},
		map[string]any{"kid": "x25519", "kty": "OKP", "crv": "X25519", "x": b64(mainKey.pub)},
		map[string]any{"kid": "short", "kty": "OKP", "crv": "Ed25519", "x": b64(mainKey.pub[:31])},
		map[string]any{"kid": "long", "kty": "OKP", "crv": "Ed25519", "x": b64(append(append([]byte{}, mainKey.pub...), 0))},
		map[string]any{"kid": "nox", "kty": "OKP", "crv": "Ed25519"},
		map[string]any{"kid": "std-b64", "kty": "OKP", "crv": "Ed25519", "x": strings.NewReplacer("-", "+", "_", "/").Replace(b64(mainKey.pub)) + "+/"},
	}
}

func TestVerifyAttackMatrix(t *testing.T) {
	t.Parallel()
	now := testNow.Unix()
	srv := newJWKSServer(t, attackJWKS(t)...)
	pemText := mainKey.pem(t)

	tests := []struct {
		name  string
		jwks  bool                      // verify with the JWKS instead of the PEM
		token func(t testing.TB) string // the raw header value
		req   func(r *Request)          // optional change to the request
		want  Code
	}{
		// No token.
		{name: "no header", token: func(testing.TB) string { return "" }, want: CodeMissing},
		{name: "blank header", token: func(testing.TB) string { return " \t " }, want: CodeMissing},
		{name: "only Bearer and a space", token: func(testing.TB) string { return "Bearer " }, want: CodeMalformed},
		{name: "Bearer and blanks", token: func(testing.TB) string { return "bearer    " }, want: CodeMalformed},

		// Format (steps 4–5).
		{name: "two segments", token: func(t testing.TB) string { s := segs(mintWith(t, nil)); return s[0] + "." + s[1] }, want: CodeMalformed},
		{name: "four segments", token: func(t testing.TB) string { return mintWith(t, nil) + ".e30" }, want: CodeMalformed},
		{name: "one segment", token: func(testing.TB) string { return "eyJhbGciOiJFZERTQSJ9" }, want: CodeMalformed},
		{name: "plus sign in payload", token: func(t testing.TB) string {
			s := segs(mintWith(t, nil))
			return s[0] + "." + s[1][:5] + "+" + s[1][6:] + "." + s[2]
		}, want: CodeMalformed},
		{name: "asterisk in header", token: func(t testing.TB) string { return "*" + mintWith(t, nil)[1:] }, want: CodeMalformed},
		{name: "line break inside payload", token: func(t testing.TB) string {
			s := segs(mintWith(t, nil))
			return s[0] + "." + s[1][:8] + "\n" + s[1][8:] + "." + s[2]
		}, want: CodeMalformed},
		{name: "padding in the middle", token: func(t testing.TB) string {
			s := segs(mintWith(t, nil))
			return s[0] + "." + s[1][:8] + "=" + s[1][8:] + "." + s[2]
		}, want: CodeMalformed},
		{name: "non-canonical signature encoding", token: func(t testing.TB) string {
			tok := mintWith(t, nil)
			last := tok[len(tok)-1] // 86 chars for 64 bytes: the last one carries 4 unused bits
			return tok[:len(tok)-1] + string(b64Alphabet[strings.IndexByte(b64Alphabet, last)^1])
		}, want: CodeMalformed},
		{name: "header is a JSON array", token: func(t testing.TB) string {
			return signRaw(mainKey.priv, `["alg","EdDSA"]`, mustJSON(t, validClaims()))
		}, want: CodeMalformed},
		{name: "header is JSON null", token: func(t testing.TB) string {
			return signRaw(mainKey.priv, `null`, mustJSON(t, validClaims()))
		}, want: CodeMalformed},
		{name: "header is not JSON", token: func(t testing.TB) string {
			return signRaw(mainKey.priv, `{"alg":"EdDSA"`, mustJSON(t, validClaims()))
		}, want: CodeMalformed},
		{name: "payload is a JSON array", token: func(t testing.TB) string {
			return signRaw(mainKey.priv, mustJSON(t, validHeader()), `[1,2]`)
		}, want: CodeMalformed},
		{name: "payload with trailing data", token: func(t testing.TB) string {
			return signRaw(mainKey.priv, mustJSON(t, validHeader()), mustJSON(t, validClaims())+` {}`)
		}, want: CodeMalformed},
		{name: "payload not UTF-8", token: func(t testing.TB) string {
			p := strings.Replace(mustJSON(t, validClaims()), `"tok-9c1e"`, "\"tok-\xff\xfe\"", 1)
			return signRaw(mainKey.priv, mustJSON(t, validHeader()), p)
		}, want: CodeMalformed},
		{name: "oversized token", token: func(t testing.TB) string {
			return mintWith(t, setClaim("padding", strings.Repeat("a", MaxTokenBytes)))
		}, want: CodeMalformed},
		{name: "malformed wins over alg none", token: func(t testing.TB) string {
			return signRaw(mainKey.priv, `["alg","none"]`, `null`)
		}, want: CodeMalformed},
		{name: "payload is JSON null", token: func(t testing.TB) string {
			return signRaw(mainKey.priv, mustJSON(t, validHeader()), `null`)
		}, want: CodeMalformed},
		{name: "payload is JSON null beats alg none", token: func(t testing.TB) string {
			return signRaw(mainKey.priv, `{"alg":"none"}`, `null`)
		}, want: CodeMalformed},
		{name: "header number beyond float64 (jwt/v5 decodes the header with encoding/json)", token: func(t testing.TB) string {
			return signRaw(mainKey.priv, `{"alg":"EdDSA","x":1e999}`, mustJSON(t, validClaims()))
		}, want: CodeMalformed},
		// jwt/v5 gives up on an alg it does not know before it decodes the
		// signature.
		{name: "non-canonical signature encoding beats an unknown alg", token: func(t testing.TB) string {
			tok := mintWith(t, setHeader("alg", "Ed25519"))
			last := tok[len(tok)-1]
			return tok[:len(tok)-1] + string(b64Alphabet[strings.IndexByte(b64Alphabet, last)^1])
		}, want: CodeMalformed},

		// Algorithm (step 6).
		{name: "alg none without signature", token: func(t testing.TB) string {
			s := segs(mintWith(t, setHeader("alg", "none")))
			return s[0] + "." + s[1] + "."
		}, want: CodeUnsupportedAlg},
		{name: "alg none signed by the library", token: func(t testing.TB) string {
			return signWithLib(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, nil)
		}, want: CodeUnsupportedAlg},
		{name: "alg none with a valid Ed25519 signature", token: func(t testing.TB) string {
			return mintWith(t, setHeader("alg", "none"))
		}, want: CodeUnsupportedAlg},
		{name: "HS256 keyed with the PEM", token: func(t testing.TB) string {
			return signWithLib(t, jwt.SigningMethodHS256, []byte(pemText), nil)
		}, want: CodeUnsupportedAlg},
		{name: "HS256 keyed with the raw public key", token: func(t testing.TB) string {
			return signWithLib(t, jwt.SigningMethodHS256, []byte(mainKey.pub), nil)
		}, want: CodeUnsupportedAlg},
		{name: "RS256", token: func(t testing.TB) string {
			return signWithLib(t, jwt.SigningMethodRS256, rsaTestKey(), nil)
		}, want: CodeUnsupportedAlg},
		{name: "ES256", token: func(t testing.TB) string {
			k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
			require.NoError(t, err)
			return signWithLib(t, jwt.SigningMethodES256, k, nil)
		}, want: CodeUnsupportedAlg},
		{name: "missing alg", token: func(t testing.TB) string {
			return mintWith(t, func(h, _ map[string]any) { delete(h, "alg") })
		}, want: CodeUnsupportedAlg},
		{name: "alg in another case", token: func(t testing.TB) string { return mintWith(t, setHeader("alg", "eddsa")) }, want: CodeUnsupportedAlg},
		{name: "alg Ed25519", token: func(t testing.TB) string { return mintWith(t, setHeader("alg", "Ed25519")) }, want: CodeUnsupportedAlg},
		{name: "alg is a number", token: func(t testing.TB) string { return mintWith(t, setHeader("alg", 1)) }, want: CodeUnsupportedAlg},
		{name: "alg key in upper case", token: func(t testing.TB) string {
			return mintWith(t, func(h, _ map[string]any) { delete(h, "alg"); h["ALG"] = "EdDSA" })
		}, want: CodeUnsupportedAlg},
		{name: "alg none beats a missing kid", jwks: true, token: func(t testing.TB) string {
			return mintWith(t, func(h, _ map[string]any) { h["alg"] = "none"; delete(h, "kid") })
		}, want: CodeUnsupportedAlg},

		// Critical header extensions: this verifier implements none.
		{name: "crit naming an unknown extension", token: func(t testing.TB) string { return mintWith(t, setHeader("crit", []any{"exp-ext"})) }, want: CodeMalformed},
		{name: "crit naming b64", token: func(t testing.TB) string {
			return mintWith(t, func(h, _ map[string]any) { h["crit"] = []any{"b64"}; h["b64"] = true })
		}, want: CodeMalformed},
		{name: "crit empty", token: func(t testing.TB) string { return mintWith(t, setHeader("crit", []any{})) }, want: CodeMalformed},
		{name: "crit null", token: func(t testing.TB) string { return mintWith(t, setHeader("crit", nil)) }, want: CodeMalformed},
		{name: "crit not an array", token: func(t testing.TB) string { return mintWith(t, setHeader("crit", "exp-ext")) }, want: CodeMalformed},
		{name: "crit beats a missing kid", jwks: true, token: func(t testing.TB) string {
			return mintWith(t, func(h, _ map[string]any) { h["crit"] = []any{"exp-ext"}; delete(h, "kid") })
		}, want: CodeMalformed},
		// crit makes the token malformed (a format failure), which comes
		// before the alg check whatever the alg: these three cases failed
		// with unsupported_alg before issue 27 row 9 was fixed.
		{name: "crit beats alg none", token: func(t testing.TB) string {
			return mintWith(t, func(h, _ map[string]any) { h["alg"] = "none"; h["crit"] = []any{"exp-ext"} })
		}, want: CodeMalformed},
		{name: "crit beats alg HS256", token: func(t testing.TB) string {
			return signWithLib(t, jwt.SigningMethodHS256, []byte(pemText), setHeader("crit", []any{"exp-ext"}))
		}, want: CodeMalformed},
		{name: "crit beats a missing alg", token: func(t testing.TB) string {
			return mintWith(t, func(h, _ map[string]any) { delete(h, "alg"); h["crit"] = []any{} })
		}, want: CodeMalformed},

		// Key (step 7).
		{name: "JWKS and no kid", jwks: true, token: func(t testing.TB) string {
			return mintWith(t, func(h, _ map[string]any) { delete(h, "kid") })
		}, want: CodeMissingKID},
		{name: "JWKS and empty kid", jwks: true, token: func(t testing.TB) string { return mintWith(t, setHeader("kid", "")) }, want: CodeMissingKID},
		{name: "JWKS and numeric kid", jwks: true, token: func(t testing.TB) string { return mintWith(t, setHeader("kid", 7)) }, want: CodeMissingKID},
		{name: "kid not in the set", jwks: true, token: func(t testing.TB) string { return mintWith(t, setHeader("kid", "attacker-key")) }, want: CodeUnknownKID},
		{name: "kid with path and URL characters", jwks: true, token: func(t testing.TB) string {
			return mintWith(t, setHeader("kid", "../../admin?kid="+testKID+"#https://evil.example/jwks"))
		}, want: CodeUnknownKID},
		{name: "kid of an RSA JWK", jwks: true, token: func(t testing.TB) string { return mintWith(t, setHeader("kid", "rsa")) }, want: CodeInvalidJWK},
		{name: "kid of an OKP X25519 JWK", jwks: true, token: func(t testing.TB) string { return mintWith(t, setHeader("kid", "x25519")) }, want: CodeInvalidJWK},
		{name: "kid of a JWK with a 31-byte x", jwks: true, token: func(t testing.TB) string { return mintWith(t, setHeader("kid", "short")) }, want: CodeInvalidJWK},
		{name: "kid of a JWK with a 33-byte x", jwks: true, token: func(t testing.TB) string { return mintWith(t, setHeader("kid", "long")) }, want: CodeInvalidJWK},
		{name: "kid of a JWK without x", jwks: true, token: func(t testing.TB) string { return mintWith(t, setHeader("kid", "nox")) }, want: CodeInvalidJWK},
		{name: "kid of a JWK with standard base64 x", jwks: true, token: func(t testing.TB) string { return mintWith(t, setHeader("kid", "std-b64")) }, want: CodeInvalidJWK},

		// Signature (step 8).
		{name: "stripped signature", token: func(t testing.TB) string { s := segs(mintWith(t, nil)); return s[0] + "." + s[1] + "." }, want: CodeBadSignature},
		{name: "truncated signature", token: func(t testing.TB) string {
			s := segs(mintWith(t, nil))
			sig, ok := decodeSegment(s[2])
			require.True(t, ok)
			return s[0] + "." + s[1] + "." + b64(sig[:63])
		}, want: CodeBadSignature},
		{name: "padding added after signing", token: func(t testing.TB) string {
			s := segs(mintWith(t, nil))
			return s[0] + "." + s[1] + strings.Repeat("=", (4-len(s[1])%4)%4) + "=" + "." + s[2]
		}, want: CodeMalformed},
		{name: "signature of another token", token: func(t testing.TB) string {
			a, b := segs(mintWith(t, nil)), segs(mintWith(t, setClaim("workspace_id", "ws-2")))
			return a[0] + "." + a[1] + "." + b[2]
		}, want: CodeBadSignature},
		{name: "re-signed with another Ed25519 key", token: func(t testing.TB) string {
			return mint(t, otherKey.priv, validHeader(), validClaims())
		}, want: CodeBadSignature},
		{name: "re-signed with another key under the trusted kid", jwks: true, token: func(t testing.TB) string {
			return mint(t, otherKey.priv, validHeader(), validClaims())
		}, want: CodeBadSignature},
		{name: "payload tampered after signing", token: func(t testing.TB) string {
			return tamperPayload(t, mintWith(t, nil), func(c map[string]any) { c["workspace_id"] = "ws-victim" })
		}, want: CodeBadSignature},
		{name: "header tampered after signing", token: func(t testing.TB) string {
			s := segs(mintWith(t, nil))
			s[0] = b64([]byte(`{"alg":"EdDSA","kid":"other"}`))
			return strings.Join(s, ".")
		}, want: CodeBadSignature},
		{name: "bad signature beats invalid claims", token: func(t testing.TB) string {
			return mint(t, otherKey.priv, validHeader(), map[string]any{"exp": "soon"})
		}, want: CodeBadSignature},

		// Claim types (step 9).
		{name: "audience is a number", token: func(t testing.TB) string { return mintWith(t, setClaim("aud", 42)) }, want: CodeInvalidClaims},
		{name: "audience list with a number", token: func(t testing.TB) string { return mintWith(t, setClaim("aud", []any{testAudience, 1})) }, want: CodeInvalidClaims},
		{name: "empty scopes", token: func(t testing.TB) string { return mintWith(t, setClaim("scopes", []any{})) }, want: CodeInvalidClaims},
		{name: "missing scopes", token: func(t testing.TB) string { return mintWith(t, delClaim("scopes")) }, want: CodeInvalidClaims},
		{name: "scopes as a string", token: func(t testing.TB) string { return mintWith(t, setClaim("scopes", "job.start")) }, want: CodeInvalidClaims},
		{name: "scopes with a number", token: func(t testing.TB) string { return mintWith(t, setClaim("scopes", []any{"job.start", 1})) }, want: CodeInvalidClaims},
		{name: "string exp", token: func(t testing.TB) string { return mintWith(t, setClaim("exp", "1791700600")) }, want: CodeInvalidClaims},
		{name: "fractional exp", token: func(t testing.TB) string { return mintWith(t, setClaim("exp", 1791700600.5)) }, want: CodeInvalidClaims},
		{name: "huge exp", token: func(t testing.TB) string { return mintWith(t, setClaim("exp", json.Number("1e400"))) }, want: CodeInvalidClaims},
		{name: "null exp", token: func(t testing.TB) string { return mintWith(t, setClaim("exp", nil)) }, want: CodeInvalidClaims},
		{name: "missing exp", token: func(t testing.TB) string { return mintWith(t, delClaim("exp")) }, want: CodeInvalidClaims},
		{name: "boolean iat", token: func(t testing.TB) string { return mintWith(t, setClaim("iat", true)) }, want: CodeInvalidClaims},
		{name: "string nbf", token: func(t testing.TB) string { return mintWith(t, setClaim("nbf", "later")) }, want: CodeInvalidClaims},
		{name: "fractional nbf", token: func(t testing.TB) string { return mintWith(t, setClaim("nbf", 1791700000.5)) }, want: CodeInvalidClaims},
		{name: "issuer is a number", token: func(t testing.TB) string { return mintWith(t, setClaim("iss", 1)) }, want: CodeInvalidClaims},
		{name: "missing grant_id", token: func(t testing.TB) string { return mintWith(t, delClaim("grant_id")) }, want: CodeInvalidClaims},
		{name: "workspace_slug is a number", token: func(t testing.TB) string { return mintWith(t, setClaim("workspace_slug", 3)) }, want: CodeInvalidClaims},
		{name: "sub is an object", token: func(t testing.TB) string { return mintWith(t, setClaim("sub", map[string]any{})) }, want: CodeInvalidClaims},
		{name: "invalid claims beat expiry", token: func(t testing.TB) string {
			return mintWith(t, func(_, c map[string]any) { c["exp"] = now - 3600; c["grant_id"] = 1 })
		}, want: CodeInvalidClaims},

		// Claim values (steps 10–14).
		{name: "wrong issuer", token: func(t testing.TB) string { return mintWith(t, setClaim("iss", "https://evil.example")) }, want: CodeWrongIssuer},
		{name: "wrong issuer beats expiry", token: func(t testing.TB) string {
			return mintWith(t, func(_, c map[string]any) { c["iss"] = "x"; c["exp"] = now - 3600 })
		}, want: CodeWrongIssuer},
		{name: "audience list without ours", token: func(t testing.TB) string {
			return mintWith(t, setClaim("aud", []any{"supervaizer-server:other", "studio"}))
		}, want: CodeWrongAudience},
		{name: "empty audience list", token: func(t testing.TB) string { return mintWith(t, setClaim("aud", []any{})) }, want: CodeWrongAudience},
		// jwt/v5 reports an empty iss or aud as a missing claim; the spec's
		// codes are wrong_issuer and wrong_audience, issuer first.
		{name: "empty issuer", token: func(t testing.TB) string { return mintWith(t, setClaim("iss", "")) }, want: CodeWrongIssuer},
		{name: "empty audience", token: func(t testing.TB) string { return mintWith(t, setClaim("aud", "")) }, want: CodeWrongAudience},
		{name: "empty issuer beats empty audience", token: func(t testing.TB) string {
			return mintWith(t, func(_, c map[string]any) { c["iss"] = ""; c["aud"] = []any{""} })
		}, want: CodeWrongIssuer},
		{name: "wrong audience beats expiry and iat", token: func(t testing.TB) string {
			return mintWith(t, func(_, c map[string]any) { c["aud"] = "x"; c["exp"] = now - 3600; c["iat"] = now + 3600 })
		}, want: CodeWrongAudience},
		{name: "audience with another case", token: func(t testing.TB) string { return mintWith(t, setClaim("aud", strings.ToUpper(testAudience))) }, want: CodeWrongAudience},
		{name: "expired by leeway + 1 s", token: func(t testing.TB) string { return mintWith(t, setClaim("exp", now-31)) }, want: CodeExpired},
		{name: "expiry beats wrong server", token: func(t testing.TB) string {
			return mintWith(t, func(_, c map[string]any) { c["exp"] = now - 31; c["server_id"] = "other" })
		}, want: CodeExpired},
		{name: "iat beyond the leeway", token: func(t testing.TB) string { return mintWith(t, setClaim("iat", now+31)) }, want: CodeNotYetValid},
		{name: "nbf beyond the leeway", token: func(t testing.TB) string { return mintWith(t, setClaim("nbf", now+31)) }, want: CodeNotYetValid},
		{name: "nbf a year ahead", token: func(t testing.TB) string { return mintWith(t, setClaim("nbf", now+365*24*3600)) }, want: CodeNotYetValid},
		{name: "nbf ahead beats wrong server", token: func(t testing.TB) string {
			return mintWith(t, func(_, c map[string]any) { c["nbf"] = now + 3600; c["server_id"] = "other" })
		}, want: CodeNotYetValid},
		{name: "expiry beats nbf ahead", token: func(t testing.TB) string {
			return mintWith(t, func(_, c map[string]any) { c["nbf"] = now + 3600; c["exp"] = now - 31 })
		}, want: CodeExpired},
		{name: "wrong server", token: func(t testing.TB) string { return mintWith(t, setClaim("server_id", "studio-server-2")) }, want: CodeWrongServer},

		// Agent (steps 15–18).
		{name: "unknown agent slug", token: func(t testing.TB) string { return mintWith(t, setClaim("agent_slug", "ghost-agent")) },
			req: func(r *Request) { r.AgentSlug = "ghost-agent" }, want: CodeUnknownAgent},
		{name: "unknown agent beats missing scope", token: func(t testing.TB) string { return mintWith(t, nil) },
			req: func(r *Request) { r.AgentSlug = "ghost-agent"; r.Scopes = []string{"nope"} }, want: CodeUnknownAgent},
		{name: "token for another agent of the controller", token: func(t testing.TB) string { return mintWith(t, nil) },
			req: func(r *Request) { r.AgentSlug = testUnlinkedAgent }, want: CodeWrongAgent},
		{name: "wrong agent slug claim", token: func(t testing.TB) string { return mintWith(t, setClaim("agent_slug", "other-agent")) }, want: CodeWrongAgent},
		{name: "agent without Studio id", token: func(t testing.TB) string { return mintWith(t, setClaim("agent_slug", testUnlinkedAgent)) },
			req: func(r *Request) { r.AgentSlug = testUnlinkedAgent }, want: CodeAgentNotRegistered},
		{name: "wrong agent id", token: func(t testing.TB) string { return mintWith(t, setClaim("agent_id", "studio-agent-43")) }, want: CodeWrongAgent},
		{name: "legacy agent id", token: func(t testing.TB) string { return mintWith(t, setClaim("agent_id", testAgentSlug)) }, want: CodeWrongAgent},

		// Workspace and scopes (steps 19–21).
		{name: "wrong workspace id", token: func(t testing.TB) string { return mintWith(t, setClaim("workspace_id", "ws-2")) }, want: CodeWrongWorkspace},
		{name: "both slugs present and different", token: func(t testing.TB) string { return mintWith(t, setClaim("workspace_slug", "globex")) }, want: CodeWrongWorkspace},
		{name: "wrong workspace beats missing scope", token: func(t testing.TB) string { return mintWith(t, setClaim("workspace_id", "ws-2")) },
			req: func(r *Request) { r.Scopes = []string{"nope"} }, want: CodeWrongWorkspace},
		{name: "missing the action scope", token: func(t testing.TB) string { return mintWith(t, setClaim("scopes", []any{testInvokeScope, "job.sync"})) }, want: CodeMissingScope},
		{name: "missing the method scope", token: func(t testing.TB) string { return mintWith(t, setClaim("scopes", []any{"job.start"})) }, want: CodeMissingScope},
		{name: "surface scope does not grant the action", token: func(t testing.TB) string {
			return mintWith(t, setClaim("scopes", []any{"supervaizer/surface.load", "job.start"}))
		}, want: CodeMissingScope},
	}
	require.GreaterOrEqual(t, len(tests), 35)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var v *Verifier
			if tt.jwks {
				v = newJWKSVerifier(t, srv.url(), func() time.Time { return testNow })
			} else {
				v = newPEMVerifier(t)
			}
			header := tt.token(t)
			r := testRequest("")
			r.Header = header
			if tt.req != nil {
				tt.req(&r)
			}
			vc, err := v.Verify(context.Background(), r)
			assert.Nil(t, vc)
			var e *Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, tt.want, e.Code, "message: %s", e.Message)
			assert.NotEmpty(t, e.Message)
			if tok := ExtractToken(header); len(tok) > 16 {
				for _, part := range strings.Split(tok, ".") {
					if len(part) > 16 {
						assert.NotContains(t, e.Message, part, "the message leaks the token")
					}
				}
			}
		})
	}
}

const b64Alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

func TestVerifyAttackMatrixNeverFetchesElsewhere(t *testing.T) {
	t.Parallel()
	srv := newJWKSServer(t, attackJWKS(t)...)
	v := newJWKSVerifier(t, srv.url(), func() time.Time { return testNow }, WithJWKSRefetchInterval(0))
	for _, kid := range []string{"../../admin", "https://evil.example/jwks.json", "?kid=x", "#frag", "%2e%2e/x", "a b"} {
		_, err := v.Verify(context.Background(), testRequest(mintWith(t, setHeader("kid", kid))))
		var e *Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, CodeUnknownKID, e.Code, kid)
	}
	paths := srv.requestPaths()
	require.NotEmpty(t, paths)
	for _, p := range paths {
		assert.Equal(t, testJWKSPath, p)
	}
}

// TestVerifyAttackJWKSRemoval: a token under testKID verified (and cached),
// then Studio's key set changes; once a fetch has seen the change, the same
// token must answer as the new set dictates. Failed fetches keep the previous
// set (within its maximum age).
func TestVerifyAttackJWKSRemoval(t *testing.T) {
	t.Parallel()
	good := mainKey.jwk(testKID)
	tests := []struct {
		name   string
		status int
		body   func(t testing.TB) string
		want   Code
	}{
		{name: "kid removed", body: func(t testing.TB) string { return mustJSON(t, map[string]any{"keys": []any{otherKey.jwk("next")}}) }, want: CodeUnknownKID},
		{name: "set emptied", body: func(t testing.TB) string { return `{"keys":[]}` }, want: CodeUnknownKID},
		{name: "keys member dropped", body: func(t testing.TB) string { return `{}` }, want: CodeUnknownKID},
		{name: "kid moved to another key", body: func(t testing.TB) string { return mustJSON(t, map[string]any{"keys": []any{otherKey.jwk(testKID)}}) }, want: CodeBadSignature},
		{name: "kid turned into an RSA key", body: func(t testing.TB) string {
			return mustJSON(t, map[string]any{"keys": []any{map[string]any{"kid": testKID, "kty": "RSA", "n": "AQAB", "e": "AQAB"}}})
		}, want: CodeInvalidJWK},
		{name: "kid behind a non-object entry", body: func(t testing.TB) string { return mustJSON(t, map[string]any{"keys": []any{1, good}}) }, want: CodeInvalidJWKS},
		{name: "kid kept", body: func(t testing.TB) string {
			return mustJSON(t, map[string]any{"keys": []any{otherKey.jwk("next"), good}})
		}},
		{name: "failed fetch keeps the set", status: http.StatusServiceUnavailable, body: func(testing.TB) string { return "" }},
		{name: "invalid set keeps the set", body: func(testing.TB) string { return `{"keys":{}}` }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := newJWKSServer(t, good)
			clock := newTestClock(testNow)
			v := newJWKSVerifier(t, srv.url(), clock.Now)
			tok := mintWith(t, nil)
			verifyToCache(t, v, tok)
			require.Equal(t, 1, v.cache.len())

			status := tt.status
			if status == 0 {
				status = http.StatusOK
			}
			srv.setBody(status, []byte(tt.body(t)))
			clock.Advance(DefaultJWKSRefetchInterval)
			_, _ = v.Verify(t.Context(), testRequest(mintWith(t, setHeader("kid", "trigger"))))
			require.Equal(t, int64(2), srv.fetches.Load())

			_, err := v.Verify(t.Context(), testRequest(tok))
			if tt.want == "" {
				assert.NoError(t, err)
				return
			}
			var e *Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, tt.want, e.Code, e.Message)
		})
	}
}

func TestVerifyMissingScopeMessage(t *testing.T) {
	t.Parallel()
	v := newPEMVerifier(t)
	r := testRequest(mintWith(t, setClaim("scopes", []any{"job.sync"})))
	r.Scopes = []string{testInvokeScope, "job.start", testInvokeScope}
	_, err := v.Verify(context.Background(), r)
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, CodeMissingScope, e.Code)
	assert.True(t, strings.HasSuffix(e.Message, ": supervaizer/action.invoke, job.start"), e.Message)
}

func TestVerifyAccepts(t *testing.T) {
	t.Parallel()
	slug, ref := testWorkspaceSlug, "acme-prod"
	full := &Context{
		GrantID: "grant-01", WorkspaceID: testWorkspaceID, WorkspaceSlug: &slug,
		AgentID: testAgentID, AgentSlug: testAgentSlug, ServerID: testServerID,
		Scopes:            []string{"supervaizer/surface.load", testInvokeScope, "job.start", "resource.contacts.list"},
		AgentWorkspaceRef: &ref,
	}
	rawPayload := func(t testing.TB, exp string) string {
		p := mustJSON(t, validClaims())
		return strings.Replace(p, `"exp":1791700600`, `"exp":`+exp, 1)
	}
	tests := []struct {
		name   string
		jwks   bool
		header func(t testing.TB) string
		req    func(r *Request)
		want   *Context
	}{
		{name: "Bearer prefix", header: func(t testing.TB) string { return "Bearer " + mintWith(t, nil) }, want: full},
		{name: "no prefix", header: func(t testing.TB) string { return mintWith(t, nil) }, want: full},
		{name: "odd-case prefix and blanks", header: func(t testing.TB) string { return " \tbEaReR   " + mintWith(t, nil) + "  " }, want: full},
		{name: "padded segments", header: func(t testing.TB) string {
			// The signature covers the segments as sent, padding included.
			pad := func(s string) string { return s + strings.Repeat("=", (4-len(s)%4)%4) }
			signing := pad(b64([]byte(mustJSON(t, validHeader())))) + "." + pad(b64([]byte(mustJSON(t, validClaims()))))
			require.Contains(t, signing, "=")
			return "Bearer " + signing + "." + pad(b64(ed25519.Sign(mainKey.priv, []byte(signing))))
		}, want: full},
		{name: "padded signature only", header: func(t testing.TB) string { return mintWith(t, nil) + "==" }, want: full},
		{name: "exp in exponent form", header: func(t testing.TB) string {
			return signRaw(mainKey.priv, mustJSON(t, validHeader()), rawPayload(t, "1.7917006e9"))
		}, want: full},
		{name: "exp with a zero fraction", header: func(t testing.TB) string {
			return signRaw(mainKey.priv, mustJSON(t, validHeader()), rawPayload(t, "1791700600.000"))
		}, want: full},
		{name: "audience list containing ours", header: func(t testing.TB) string {
			return mintWith(t, setClaim("aud", []any{"other", testAudience}))
		}, want: full},
		{name: "optional claims absent or null", header: func(t testing.TB) string {
			return mintWith(t, func(_, c map[string]any) {
				delete(c, "iat")
				delete(c, "sub")
				delete(c, "jti")
				delete(c, "agent_workspace_ref")
				c["workspace_slug"] = nil
			})
		}, want: &Context{
			GrantID: "grant-01", WorkspaceID: testWorkspaceID, AgentID: testAgentID, AgentSlug: testAgentSlug,
			ServerID: testServerID, Scopes: full.Scopes,
		}},
		{name: "unknown claims and typ ignored", header: func(t testing.TB) string {
			return mintWith(t, func(h, c map[string]any) { h["typ"] = 7; h["cty"] = "x"; c["extra"] = []any{1} })
		}, want: full},
		{name: "nbf in the past", header: func(t testing.TB) string { return mintWith(t, setClaim("nbf", testIAT)) }, want: full},
		{name: "nbf within the leeway", header: func(t testing.TB) string { return mintWith(t, setClaim("nbf", testNow.Unix()+30)) }, want: full},
		{name: "nbf null", header: func(t testing.TB) string { return mintWith(t, setClaim("nbf", nil)) }, want: full},
		{name: "request without a slug", header: func(t testing.TB) string { return mintWith(t, setClaim("workspace_slug", "globex")) },
			req: func(r *Request) { r.WorkspaceSlug = "" }, want: func() *Context {
				c := *full
				s := "globex"
				c.WorkspaceSlug = &s
				return &c
			}()},
		{name: "claim slug empty", header: func(t testing.TB) string { return mintWith(t, setClaim("workspace_slug", "")) },
			want: func() *Context {
				c := *full
				s := ""
				c.WorkspaceSlug = &s
				return &c
			}()},
		{name: "no required scopes", header: func(t testing.TB) string { return mintWith(t, nil) }, req: func(r *Request) { r.Scopes = nil }, want: full},
		{name: "more scopes than the context block holds", header: func(t testing.TB) string {
			return mintWith(t, setClaim("scopes", []any{testInvokeScope, "job.start", "job.sync", "job.stop", "job.delete"}))
		}, want: func() *Context {
			c := *full
			c.Scopes = []string{testInvokeScope, "job.start", "job.sync", "job.stop", "job.delete"}
			return &c
		}()},
		{name: "one scope", header: func(t testing.TB) string { return mintWith(t, setClaim("scopes", []any{testInvokeScope})) },
			req: func(r *Request) { r.Scopes = []string{testInvokeScope} }, want: func() *Context {
				c := *full
				c.Scopes = []string{testInvokeScope}
				return &c
			}()},
		{name: "JWKS", jwks: true, header: func(t testing.TB) string { return mintWith(t, nil) }, want: full},
	}
	srv := newJWKSServer(t, mainKey.jwk(testKID))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := newPEMVerifier(t)
			if tt.jwks {
				v = newJWKSVerifier(t, srv.url(), func() time.Time { return testNow })
			}
			r := testRequest("")
			r.Header = tt.header(t)
			if tt.req != nil {
				tt.req(&r)
			}
			got, err := v.Verify(context.Background(), r)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestVerifyContextIsACopy(t *testing.T) {
	t.Parallel()
	v := newPEMVerifier(t)
	r := testRequest(mintWith(t, nil))
	_, err := v.Verify(context.Background(), r)
	require.NoError(t, err)
	first, err := v.Verify(context.Background(), r) // the verification that caches the claims
	require.NoError(t, err)
	require.Equal(t, 1, v.cache.len())
	first.Scopes[0] = "mutated"
	*first.WorkspaceSlug = "mutated"
	*first.AgentWorkspaceRef = "mutated"
	second, err := v.Verify(context.Background(), r) // a cache hit
	require.NoError(t, err)
	assert.Equal(t, "supervaizer/surface.load", second.Scopes[0])
	assert.Equal(t, testWorkspaceSlug, *second.WorkspaceSlug)
	assert.Equal(t, "acme-prod", *second.AgentWorkspaceRef)
}

func TestVerifyTimeBoundaries(t *testing.T) {
	t.Parallel()
	exp, iat := int64(testEXP), int64(testIAT)
	tests := []struct {
		name   string
		leeway *time.Duration // nil: default
		now    time.Time
		want   Code // "" means success
	}{
		{name: "now == exp + leeway", now: time.Unix(exp+30, 0)},
		{name: "within the second after exp + leeway", now: time.Unix(exp+30, 999_999_999)},
		{name: "now == exp + leeway + 1", now: time.Unix(exp+31, 0), want: CodeExpired},
		{name: "now == iat - leeway", now: time.Unix(iat-30, 0)},
		{name: "now == iat - leeway - 1", now: time.Unix(iat-31, 0), want: CodeNotYetValid},
		{name: "a second before iat - leeway, within it", now: time.Unix(iat-31, 999_999_999), want: CodeNotYetValid},
		{name: "zero leeway at exp", leeway: new(time.Duration(0)), now: time.Unix(exp, 0)},
		{name: "zero leeway after exp", leeway: new(time.Duration(0)), now: time.Unix(exp+1, 0), want: CodeExpired},
		{name: "zero leeway at iat", leeway: new(time.Duration(0)), now: time.Unix(iat, 0)},
		{name: "zero leeway before iat", leeway: new(time.Duration(0)), now: time.Unix(iat-1, 0), want: CodeNotYetValid},
		{name: "leeway 120 s", leeway: new(120 * time.Second), now: time.Unix(exp+120, 0)},
		{name: "leeway 120 s + 1", leeway: new(120 * time.Second), now: time.Unix(exp+121, 0), want: CodeExpired},
		{name: "sub-second leeway is truncated", leeway: new(1500 * time.Millisecond), now: time.Unix(exp+2, 0), want: CodeExpired},
	}
	tok := mintWith(t, nil)
	nbf := int64(testIAT + 100)
	nbfTok := mintWith(t, setClaim("nbf", nbf))
	tests = append(tests, []struct {
		name   string
		leeway *time.Duration
		now    time.Time
		want   Code
	}{
		{name: "now == nbf - leeway", now: time.Unix(nbf-30, 0)},
		{name: "now == nbf - leeway - 1", now: time.Unix(nbf-31, 0), want: CodeNotYetValid},
		{name: "zero leeway at nbf", leeway: new(time.Duration(0)), now: time.Unix(nbf, 0)},
		{name: "zero leeway before nbf", leeway: new(time.Duration(0)), now: time.Unix(nbf-1, 0), want: CodeNotYetValid},
	}...)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tok := tok
			if strings.Contains(tt.name, "nbf") {
				tok = nbfTok
			}
			s := pemSettings(t)
			if tt.leeway != nil {
				s.Leeway, s.LeewaySet = *tt.leeway, true
			}
			for _, size := range []int{0, DefaultCacheSize} { // miss path, then a warm cache
				clock := newTestClock(testNow)
				v, err := New(s, testServerID, newTestDir(), WithClock(clock.Now), WithCacheSize(size))
				require.NoError(t, err)
				verifyToCache(t, v, tok)
				require.Equal(t, min(size, 1), v.cache.len())
				clock.Set(tt.now)
				_, err = v.Verify(context.Background(), testRequest(tok))
				if tt.want == "" {
					assert.NoError(t, err, "cache size %d", size)
					continue
				}
				var e *Error
				require.ErrorAs(t, err, &e, "cache size %d", size)
				assert.Equal(t, tt.want, e.Code, "cache size %d", size)
			}
		})
	}
}

func TestVerifyExtremeTimes(t *testing.T) {
	t.Parallel()
	s := pemSettings(t)
	s.Leeway, s.LeewaySet = time.Duration(1<<63-1), true // about 292 years
	v, err := New(s, testServerID, newTestDir(), WithClock(func() time.Time { return testNow }))
	require.NoError(t, err)
	for _, exp := range []int64{-1 << 63, 0, 1<<63 - 1} {
		_, err := v.Verify(context.Background(), testRequest(mintWith(t, func(_, c map[string]any) {
			c["exp"] = exp
			c["iat"] = -exp
		})))
		if exp == -1<<63 {
			var e *Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, CodeExpired, e.Code)
			continue
		}
		assert.NoError(t, err, "exp %d", exp)
	}
}
