package wsauth

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/internal/wire"
)

// The differential tests of the token decoding: the verifier's header checks
// and parseClaims are compared with an encoding/json decoding (kept below as
// the reference) on the same bytes.

// referenceParseClaims is the claims decoder the verifier used before
// parseClaims read the tape: step 9 on claims decoded with
// json.Number. Types are checked strictly: string claims must be JSON
// strings, aud a string or an array of strings, scopes a non-empty array of
// strings, exp (required), iat and nbf (optional) JSON numbers with an integral
// value that fits in an int64. An optional claim that is null counts as
// absent; unknown claims are ignored.
func referenceParseClaims(m map[string]any) (*claims, *Error) {
	c := &claims{}
	var e *Error
	str := func(name string, dst *string) {
		if e != nil {
			return
		}
		s, ok := m[name].(string)
		if !ok {
			e = referenceInvalidClaim(name, m[name], "a string")
			return
		}
		*dst = s
	}
	optStr := func(name string) *string {
		v, present := m[name]
		if e != nil || !present || v == nil {
			return nil
		}
		s, ok := v.(string)
		if !ok {
			e = referenceInvalidClaim(name, v, "a string")
			return nil
		}
		return &s
	}
	str("iss", &c.iss)
	if e == nil {
		switch aud := m["aud"].(type) {
		case string:
			c.aud = []string{aud}
		case []any:
			c.aud = make([]string, len(aud))
			for i, a := range aud {
				s, ok := a.(string)
				if !ok {
					return nil, referenceInvalidClaim("aud", m["aud"], "a string or an array of strings")
				}
				c.aud[i] = s
			}
		default:
			return nil, referenceInvalidClaim("aud", m["aud"], "a string or an array of strings")
		}
	}
	optStr("sub")
	str("grant_id", &c.grantID)
	str("workspace_id", &c.workspaceID)
	c.workspaceSlug = optStr("workspace_slug")
	str("agent_id", &c.agentID)
	str("agent_slug", &c.agentSlug)
	str("server_id", &c.serverID)
	if e != nil {
		return nil, e
	}
	scopes, ok := m["scopes"].([]any)
	if !ok || len(scopes) == 0 {
		return nil, referenceInvalidClaim("scopes", m["scopes"], "a non-empty array of strings")
	}
	c.scopes = make([]string, len(scopes))
	for i, s := range scopes {
		if c.scopes[i], ok = s.(string); !ok {
			return nil, referenceInvalidClaim("scopes", m["scopes"], "a non-empty array of strings")
		}
	}
	c.agentWorkspaceRef = optStr("agent_workspace_ref")
	optStr("jti")
	if e != nil {
		return nil, e
	}
	if c.exp, ok = integralClaim(m["exp"]); !ok {
		return nil, referenceInvalidClaim("exp", m["exp"], "an integer")
	}
	if v, present := m["iat"]; present && v != nil {
		if c.iat, ok = integralClaim(v); !ok {
			return nil, referenceInvalidClaim("iat", v, "an integer")
		}
		c.hasIAT = true
	}
	if v, present := m["nbf"]; present && v != nil {
		if c.nbf, ok = integralClaim(v); !ok {
			return nil, referenceInvalidClaim("nbf", v, "an integer")
		}
		c.hasNBF = true
	}
	return c, nil
}

// integralClaim (of the reference) accepts a json.Number with an integral value that fits in an
// int64 (1791700600, 1791700600.0 and 1.7917006e9 alike) and rejects every
// other JSON type.
func integralClaim(v any) (int64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	return parseIntegral(string(n))
}

// referenceInvalidClaim is invalidClaim on a decoded value (nil: missing or
// null).
func referenceInvalidClaim(name string, v any, want string) *Error {
	return invalidClaim(name, v == nil, want)
}

// referenceIsJSONObject is the format check parseToken made with
// encoding/json: valid UTF-8 holding exactly one JSON object.
func referenceIsJSONObject(b []byte) bool {
	b = bytes.TrimLeft(b, " \t\r\n")
	return len(b) > 0 && b[0] == '{' && utf8.Valid(b) && json.Valid(b)
}

// referenceClaims decodes a payload as the verifier did with encoding/json.
func referenceClaims(payload []byte) (*claims, *Error) {
	if !referenceIsJSONObject(payload) {
		return nil, failf(CodeMalformed, "header and payload must be UTF-8 JSON objects")
	}
	var mc map[string]any
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	if err := dec.Decode(&mc); err != nil || mc == nil {
		return nil, failf(CodeMalformed, "payload is not a JSON object")
	}
	return referenceParseClaims(mc)
}

// tapeClaims decodes a payload as the verifier does: jwt/v5's parser
// unmarshals it into its Claims argument, a *tokenClaims.
func tapeClaims(payload []byte) (*claims, *Error) {
	tc := &tokenClaims{}
	var c jwt.Claims = tc
	if json.Unmarshal(payload, &c) != nil || !tc.object {
		return nil, failf(CodeMalformed, "header and payload must be UTF-8 JSON objects")
	}
	if tc.invalid != nil {
		return nil, tc.invalid
	}
	return &tc.claims, nil
}

func assertSameClaims(t *testing.T, payload []byte) {
	t.Helper()
	want, wantErr := referenceClaims(payload)
	got, gotErr := tapeClaims(payload)
	require.Equal(t, wantErr, gotErr, "%q", payload)
	assert.Equal(t, want, got, "%q", payload)
}

func TestClaimsDecoderMatchesReference(t *testing.T) {
	valid := mustJSON(t, validClaims())
	for _, payload := range []string{
		valid,
		`{"iss":"a","aud":[],"grant_id":"g","workspace_id":"w","agent_id":"a","agent_slug":"s","server_id":"x","scopes":["r"],"exp":1e3}`,
		`{"iss":"a","aud":"b","aud":["c","d"],"grant_id":"g","workspace_id":"w","agent_id":"a","agent_slug":"s","server_id":"x","scopes":["r"],"exp":1,"exp":2.0}`,
		`{"iss":"\u0061\ud800","aud":"b","sub":null,"grant_id":"g","workspace_id":"w","workspace_slug":"\n","agent_id":"a","agent_slug":"s","server_id":"x","scopes":["r","\"q"],"agent_workspace_ref":null,"jti":"j","exp":1,"iat":null,"nbf":-5}`,
		`{"iss":1}`, `{"iss":null}`, `{}`, `{"iss":"a","aud":[1]}`, `{"iss":"a","aud":{}}`, `{"iss":"a","aud":"b","sub":1}`,
		`{"iss":"a","aud":"b","grant_id":"g","workspace_id":"w","workspace_slug":false}`,
		`{"iss":"a","aud":"b","grant_id":"g","workspace_id":"w","agent_id":"a","agent_slug":"s","server_id":"x","scopes":[]}`,
		`{"iss":"a","aud":"b","grant_id":"g","workspace_id":"w","agent_id":"a","agent_slug":"s","server_id":"x","scopes":"r"}`,
		`{"iss":"a","aud":"b","grant_id":"g","workspace_id":"w","agent_id":"a","agent_slug":"s","server_id":"x","scopes":["r"],"exp":"1"}`,
		`{"iss":"a","aud":"b","grant_id":"g","workspace_id":"w","agent_id":"a","agent_slug":"s","server_id":"x","scopes":["r"],"exp":1.5}`,
		`{"iss":"a","aud":"b","grant_id":"g","workspace_id":"w","agent_id":"a","agent_slug":"s","server_id":"x","scopes":["r"],"exp":1,"iat":true}`,
		`{"iss":"a","aud":"b","grant_id":"g","workspace_id":"w","agent_id":"a","agent_slug":"s","server_id":"x","scopes":["r"],"exp":1,"nbf":1e400}`,
		`{"ISS":"a"}`, ` {"iss":"a"} `, `[]`, `"x"`, `{"iss":"a"`, "{\"iss\":\"\xff\"}", ``,
		// Read without a tape (no backslash): unknown values of every kind,
		// brackets inside strings, whitespace everywhere, claims of the
		// wrong kind.
		` { "x" : { "a" : [ "]" , { "}" : [ ] } , 1e5 , true ] } , "iss" : "a" , "aud" : [ "b" , "c" ] , "grant_id" : "g" , "workspace_id" : "w" , "agent_id" : "a" , "agent_slug" : "s" , "server_id" : "x" , "scopes" : [ "r" , "{" ] , "exp" : -1.0E+2 , "nbf" : null } `,
		`{"iss":"a","aud":"b","grant_id":"g","workspace_id":"w","agent_id":"a","agent_slug":"s","server_id":"x","scopes":["r","q","p","o","n"],"exp":1,"y":false,"z":null}`,
		`{"iss":"a","aud":["b",["c"]],"grant_id":"g"}`, `{"iss":"a","aud":["b",null]}`, `{"iss":"a","aud":true}`, `{"iss":["a"]}`,
		`{"iss":"a","aud":"b","grant_id":"g","workspace_id":"w","agent_id":"a","agent_slug":"s","server_id":"x","scopes":[1],"exp":1}`,
		`{"iss":"a","aud":"b","grant_id":"g","workspace_id":"w","agent_id":"a","agent_slug":"s","server_id":"x","scopes":["r"],"exp":{},"iat":1}`,
		`{"iss":"a","aud":"b","grant_id":"g","workspace_id":"w","agent_id":"a","agent_slug":"s","server_id":"x","scopes":["r"],"exp":1,"iat":[]}`,
		`{"iss":"a","aud":"b","grant_id":"g","workspace_id":"w","workspace_slug":"","agent_id":"a","agent_slug":"s","server_id":"x","scopes":["r"],"agent_workspace_ref":"é","jti":null,"exp":9223372036854775807}`,
		"{\"iss\":\"a\u00e9\",\"aud\":\"\xc3\"}", `{}`, ` { } `, `{"iss":"a","iss":1}`, `{"iss":1,"iss":"a","aud":[]}`,
	} {
		assertSameClaims(t, []byte(payload))
	}
}

// tapeOnlyClaims decodes a payload as the verifier does for a payload with
// a backslash: on a tape, whatever the payload.
func tapeOnlyClaims(payload []byte) (*claims, *Error) {
	t := wire.Get()
	defer wire.Put(t)
	if !jsonObject(t, payload) {
		return nil, failf(CodeMalformed, "header and payload must be UTF-8 JSON objects")
	}
	d := claimReader{src: string(payload)}
	d.index(t)
	c := &claims{}
	if e := parseClaims(&d, c, &claimStore{}); e != nil {
		return nil, e
	}
	return c, nil
}

func TestClaimReaderScan(t *testing.T) {
	for _, tt := range []struct {
		name    string
		payload string
		plain   bool
	}{
		{"a real payload", mustJSON(t, validClaims()), true},
		{"whitespace and nesting", ` {"a" : [ {"]":"["} ] , "iss":"x"} `, true},
		{"empty object", `{}`, true},
		{"an escape sequence", `{"iss":"\u0061"}`, false},
		{"an escaped key", `{"i\u0073s":"a"}`, false},
		{"not an object", `["iss"]`, false},
		{"a string", `"iss"`, false},
		{"trailing bytes", `{"iss":"a"} x`, false},
		{"unterminated", `{"iss":"a"`, false},
		{"unterminated string", `{"iss":"a`, false},
		{"unterminated array", `{"aud":["a"`, false},
		{"missing colon", `{"iss" "a"}`, false},
		{"missing comma", `{"iss":"a" "aud":"b"}`, false},
		{"bad literal", `{"iss":tru}`, false},
		{"empty", ``, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := claimReader{src: tt.payload}
			assert.Equal(t, tt.plain, d.scan())
		})
	}
}

// FuzzClaimReader feeds UnmarshalJSON arbitrary bytes, which encoding/json
// never does: it must not panic, and on valid JSON (what encoding/json hands
// it) the single-pass read of a plain payload must agree with the tape.
func FuzzClaimReader(f *testing.F) {
	f.Add([]byte(mustJSON(f, validClaims())))
	f.Add([]byte(`{"x":{"a":["]",{"}":[]}]},"iss":"a","aud":["b"],"scopes":["r"],"exp":1e3}`))
	f.Add([]byte(`{"iss":"a","aud":[`))
	f.Fuzz(func(t *testing.T, payload []byte) {
		tc := &tokenClaims{}
		err := tc.UnmarshalJSON(payload)
		if !json.Valid(payload) {
			return
		}
		want, wantErr := tapeOnlyClaims(payload)
		if wantErr != nil && wantErr.Code == CodeMalformed {
			require.Error(t, err, "%q", payload)
			return
		}
		require.NoError(t, err, "%q", payload)
		require.Equal(t, wantErr, tc.invalid, "%q", payload)
		if wantErr == nil {
			assert.Equal(t, want, &tc.claims, "%q", payload)
		}
	})
}

func FuzzClaimsDecoder(f *testing.F) {
	f.Add([]byte(mustJSON(f, validClaims())))
	f.Add([]byte(`{"iss":"a","aud":["b"],"exp":1.7917006e9,"scopes":["x"],"iss":"c"}`))
	f.Add([]byte(`{"iss":"\u00e9","aud":"b","grant_id":"g","workspace_id":"w","agent_id":"a","agent_slug":"s","server_id":"x","scopes":["r"],"exp":1,"iat":null,"nbf":2}`))
	f.Fuzz(func(t *testing.T, payload []byte) {
		assertSameClaims(t, payload)
	})
}

// referenceHeader runs the header checks (after the format check) with
// encoding/json, as jwt/v5's parser decodes a header: a value it cannot
// decode into a map (a number beyond float64) makes the header malformed.
func referenceHeader(hb []byte) (kid string, hasKID bool, e *Error) {
	var header map[string]any
	if err := json.Unmarshal(hb, &header); err != nil {
		return "", false, failf(CodeMalformed, "header is not a JSON object")
	}
	if _, ok := header["crit"]; ok {
		return "", false, failf(CodeMalformed, "critical header extensions are not supported")
	}
	if alg, ok := header["alg"].(string); !ok || alg != "EdDSA" {
		return "", false, fail(CodeUnsupportedAlg)
	}
	if kid, ok := header["kid"].(string); ok && kid != "" {
		return kid, true, nil
	}
	return "", false, nil
}

// referenceHeaderCode is the code of a token with header hb, valid claims
// and a 3-byte signature, for a verifier trusting mainKey under testKID in
// a JWKS.
func referenceHeaderCode(hb []byte) Code {
	if !referenceIsJSONObject(hb) {
		return CodeMalformed
	}
	kid, hasKID, e := referenceHeader(hb)
	switch {
	case e != nil:
		return e.Code
	case !hasKID:
		return CodeMissingKID
	case kid != testKID:
		return CodeUnknownKID
	}
	return CodeBadSignature
}

func FuzzTokenHeader(f *testing.F) {
	for _, h := range []string{`{"alg":"EdDSA","typ":"JWT","kid":"k1"}`, `{"alg":"EdDSA","alg":"none"}`, `{"alg":"none","alg":"EdDSA","kid":""}`,
		`{"alg":"EdDSA","crit":null}`, `{"alg":"HS256","crit":["b64"]}`, `{"alg":"Ed\u0044SA","kid":"\u006b"}`, `{"ALG":"EdDSA"}`, `{"alg":"EdDSA","kid":1}`, `[]`, ` {"alg":"EdDSA"} `,
		`{"alg":"EdDSA","kid":"` + testKID + `"}`, `{"alg":"EdDSA","kid":"` + testKID + `","x":1e999}`, "{\"alg\":\"EdDSA\",\"kid\":\"\xff\"}", `null`} {
		f.Add([]byte(h))
	}
	srv := newJWKSServer(f, mainKey.jwk(testKID))
	v := newJWKSVerifier(f, srv.url(), func() time.Time { return testNow })
	payload := b64([]byte(mustJSON(f, validClaims())))
	f.Fuzz(func(t *testing.T, hb []byte) {
		tok := b64(hb) + "." + payload + ".c2ln"
		_, err := v.Verify(context.Background(), testRequest(tok))
		require.Equal(t, referenceHeaderCode(hb), codeOf(t, err), "%q", hb)
	})
}

func TestTokenKeyIsSHA256(t *testing.T) {
	toks := []string{"", "a.b.c", mintWith(t, nil), string(bytes.Repeat([]byte("x"), MaxTokenBytes))}
	for _, n := range []int{511, 512, 513, 1024, 1025} { // around tokenKey's buffer size
		toks = append(toks, string(bytes.Repeat([]byte{byte(n)}, n)))
	}
	for _, tok := range toks {
		assert.Equal(t, sha256.Sum256([]byte(tok)), tokenKey(tok))
	}
}
