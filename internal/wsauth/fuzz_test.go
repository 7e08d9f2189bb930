package wsauth

import (
	"context"
	"encoding/json"
	"math/big"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// FuzzVerify checks that arbitrary header values never panic, always fail
// with a spec code, and never verify unless they carry one of the seeds'
// signed tokens (up to the tolerated base64url padding).
func FuzzVerify(f *testing.F) {
	v := newPEMVerifier(f)
	valid := []string{
		mintWith(f, nil),
		mintWith(f, func(h, c map[string]any) { delete(h, "kid"); delete(c, "iat"); c["aud"] = []any{testAudience} }),
		signRaw(mainKey.priv, mustJSON(f, validHeader()), strings.Replace(mustJSON(f, validClaims()), `"exp":1791700600`, `"exp":1.7917006e9`, 1)),
	}
	canonical := map[string]bool{}
	for _, tok := range valid {
		canonical[stripPadding(tok)] = true
		f.Add("Bearer " + tok)
		f.Add(tok + "==")
	}
	f.Add("")
	f.Add("Bearer ")
	f.Add("a.b.c")
	f.Add("eyJhbGciOiJub25lIn0.e30.")
	f.Add(mintWith(f, setHeader("alg", "none")))
	f.Add(mintWith(f, setClaim("exp", "1791700600")))
	f.Add(mint(f, otherKey.priv, validHeader(), validClaims()))
	// Validly signed by the trusted key, yet never acceptable: a not-before a
	// year ahead, and critical header extensions this verifier lacks.
	f.Add(mintWith(f, setClaim("nbf", testNow.Unix()+365*24*3600)))
	f.Add(mintWith(f, setClaim("nbf", "later")))
	f.Add(mintWith(f, setHeader("crit", []any{"exp-ext"})))
	f.Add("Bearer " + mintWith(f, func(h, _ map[string]any) { h["crit"] = []any{"b64"}; h["b64"] = false }))
	codes := map[Code]bool{}
	for _, c := range Codes() {
		codes[c] = true
	}
	f.Fuzz(func(t *testing.T, header string) {
		r := testRequest("")
		r.Header = header
		vc, err := v.Verify(context.Background(), r)
		if err != nil {
			e, ok := err.(*Error)
			require.True(t, ok, "%T", err)
			assert.True(t, codes[e.Code], e.Code)
			assert.Nil(t, vc)
			return
		}
		require.NotNil(t, vc)
		assert.True(t, canonical[stripPadding(ExtractToken(header))], "a token that no seed signed verified: %q", header)
	})
}

// stripPadding removes the '=' padding of each segment.
func stripPadding(tok string) string {
	parts := strings.Split(tok, ".")
	for i, p := range parts {
		parts[i] = strings.TrimRight(p, "=")
	}
	return strings.Join(parts, ".")
}

// FuzzParseIntegral compares parseIntegral with exact rational arithmetic on
// JSON number literals with modest exponents.
func FuzzParseIntegral(f *testing.F) {
	for _, s := range []string{"0", "-0", "1791700600", "1791700600.0", "1.7917006e9", "1.5", "1e19",
		"9223372036854775807", "-9223372036854775808", "9223372036854775808", "150e-1", "0.0e-7"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := parseIntegral(s)
		if !json.Valid([]byte(s)) || s == "" || strings.ContainsAny(s, " \t\r\n") || (s[0] != '-' && (s[0] < '0' || s[0] > '9')) {
			return // not a JSON number: json.Number never holds it
		}
		if i := strings.IndexAny(s, "eE"); i >= 0 && len(strings.TrimLeft(s[i+1:], "+-0")) > 3 {
			return // big.Rat would materialize 10^exponent
		}
		r, rok := new(big.Rat).SetString(s)
		require.True(t, rok, s)
		want := r.IsInt() && r.Num().IsInt64()
		require.Equal(t, want, ok, s)
		if ok {
			assert.Equal(t, r.Num().Int64(), got, s)
		}
	})
}
