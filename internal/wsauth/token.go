package wsauth

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/golang-jwt/jwt/v5"
)

// HeaderName is the HTTP header that carries the workspace authorization
// token (matched case-insensitively, as all HTTP header names).
const HeaderName = "X-Supervaize-Workspace-Authorization"

// MaxTokenBytes caps the size of a token. A longer token is malformed and is
// rejected before any decoding.
const MaxTokenBytes = 8 << 10

// ExtractToken returns the token carried by a raw header value:
// the value is trimmed, an optional leading "Bearer "
// (any letter case, followed by a space) is removed, and the rest is trimmed
// again. An empty result means "no token". A value of just "Bearer" has no
// prefix (the space is part of it) and is returned as is.
func ExtractToken(header string) string {
	v := strings.TrimSpace(header)
	const prefix = "bearer "
	if len(v) >= len(prefix) && asciiEqualFold(v[:len(prefix)], prefix) {
		v = strings.TrimSpace(v[len(prefix):])
	}
	return v
}

// asciiEqualFold compares s with the lower-case ASCII string lower, ignoring
// ASCII letter case only.
func asciiEqualFold(s, lower string) bool {
	for i := range len(s) {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// segmentDecoder decodes base64url segments the way the jwt parser does with
// WithPaddingAllowed and WithStrictDecoding: padding is tolerated and
// non-zero trailing bits are rejected.
var segmentDecoder = jwt.NewParser(jwt.WithPaddingAllowed(), jwt.WithStrictDecoding())

// decodeSegment decodes one base64url segment. Only the base64url alphabet is
// accepted, optionally followed by '=' padding; in particular the line breaks
// that encoding/base64 would silently skip are rejected.
func decodeSegment(seg string) ([]byte, bool) {
	body := strings.TrimRight(seg, "=")
	for i := range len(body) {
		c := body[i]
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return nil, false
		}
	}
	b, err := segmentDecoder.DecodeSegment(seg)
	return b, err == nil
}

// parsedToken holds what steps 4–6 of the verification extract from a token
// before any key or signature work.
type parsedToken struct {
	kid          string
	hasKID       bool   // kid is a non-empty JSON string
	signingInput string // header.payload, the bytes the signature covers
	payload      []byte // the decoded payload, a JSON object
	sig          []byte // the decoded signature
}

// parseToken runs steps 4–6 of the workspace-token rules on a token no longer than
// MaxTokenBytes: three segments, base64url, UTF-8 JSON objects, alg EdDSA.
func parseToken(tok string) (parsedToken, *Error) {
	h, rest, _ := strings.Cut(tok, ".")
	p, s, ok := strings.Cut(rest, ".")
	if !ok || strings.Contains(s, ".") {
		return parsedToken{}, failf(CodeMalformed, "expected three dot-separated segments")
	}
	hb, ok1 := decodeSegment(h)
	pb, ok2 := decodeSegment(p)
	sig, ok3 := decodeSegment(s)
	if !ok1 || !ok2 || !ok3 {
		return parsedToken{}, failf(CodeMalformed, "invalid base64url segment")
	}
	if !isJSONObject(hb) || !isJSONObject(pb) {
		return parsedToken{}, failf(CodeMalformed, "header and payload must be UTF-8 JSON objects")
	}
	// A map, not a struct: encoding/json matches struct fields
	// case-insensitively, and "ALG" must not stand in for "alg".
	var header map[string]json.RawMessage
	if err := json.Unmarshal(hb, &header); err != nil {
		return parsedToken{}, failf(CodeMalformed, "header is not a JSON object")
	}
	if alg, ok := jsonString(header["alg"]); !ok || alg != "EdDSA" {
		return parsedToken{}, fail(CodeUnsupportedAlg)
	}
	// crit lists header extensions the recipient must understand (RFC 7515
	// the protocol); this verifier implements none, so any crit, even an empty or
	// ill-typed one, is refused rather than ignored.
	if _, ok := header["crit"]; ok {
		return parsedToken{}, failf(CodeMalformed, "critical header extensions are not supported")
	}
	pt := parsedToken{signingInput: tok[:len(h)+1+len(p)], payload: pb, sig: sig}
	if kid, ok := jsonString(header["kid"]); ok && kid != "" {
		pt.kid, pt.hasKID = kid, true
	}
	return pt, nil
}

// isJSONObject reports whether b is valid UTF-8 holding exactly one JSON
// object (surrounding whitespace allowed, nothing else).
func isJSONObject(b []byte) bool {
	b = bytes.TrimLeft(b, " \t\r\n")
	return len(b) > 0 && b[0] == '{' && utf8.Valid(b) && json.Valid(b)
}

// jsonString decodes raw when it is a JSON string.
func jsonString(raw json.RawMessage) (string, bool) {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// claims are the typed claims of a token that passed step 9.
type claims struct {
	iss               string
	aud               []string
	grantID           string
	workspaceID       string
	workspaceSlug     *string
	agentID           string
	agentSlug         string
	serverID          string
	scopes            []string
	agentWorkspaceRef *string
	iat               int64
	hasIAT            bool
	nbf               int64
	hasNBF            bool
	exp               int64
}

// parseClaims runs step 9 on claims decoded with
// json.Number. Types are checked strictly: string claims must be JSON
// strings, aud a string or an array of strings, scopes a non-empty array of
// strings, exp (required), iat and nbf (optional) JSON numbers with an integral
// value that fits in an int64. An optional claim that is null counts as
// absent; unknown claims are ignored.
func parseClaims(m map[string]any) (*claims, *Error) {
	c := &claims{}
	var e *Error
	str := func(name string, dst *string) {
		if e != nil {
			return
		}
		s, ok := m[name].(string)
		if !ok {
			e = invalidClaim(name, m[name], "a string")
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
			e = invalidClaim(name, v, "a string")
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
					return nil, invalidClaim("aud", m["aud"], "a string or an array of strings")
				}
				c.aud[i] = s
			}
		default:
			return nil, invalidClaim("aud", m["aud"], "a string or an array of strings")
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
		return nil, invalidClaim("scopes", m["scopes"], "a non-empty array of strings")
	}
	c.scopes = make([]string, len(scopes))
	for i, s := range scopes {
		if c.scopes[i], ok = s.(string); !ok {
			return nil, invalidClaim("scopes", m["scopes"], "a non-empty array of strings")
		}
	}
	c.agentWorkspaceRef = optStr("agent_workspace_ref")
	optStr("jti")
	if e != nil {
		return nil, e
	}
	if c.exp, ok = integralClaim(m["exp"]); !ok {
		return nil, invalidClaim("exp", m["exp"], "an integer")
	}
	if v, present := m["iat"]; present && v != nil {
		if c.iat, ok = integralClaim(v); !ok {
			return nil, invalidClaim("iat", v, "an integer")
		}
		c.hasIAT = true
	}
	if v, present := m["nbf"]; present && v != nil {
		if c.nbf, ok = integralClaim(v); !ok {
			return nil, invalidClaim("nbf", v, "an integer")
		}
		c.hasNBF = true
	}
	return c, nil
}

// invalidClaim builds the CodeInvalidClaims error for claim name. The message
// names the claim and the expected type, never the value.
func invalidClaim(name string, v any, want string) *Error {
	if v == nil {
		return failf(CodeInvalidClaims, "%q is missing or null (want %s)", name, want)
	}
	return failf(CodeInvalidClaims, "%q must be %s", name, want)
}

// integralClaim accepts a json.Number with an integral value that fits in an
// int64 (1791700600, 1791700600.0 and 1.7917006e9 alike) and rejects every
// other JSON type.
func integralClaim(v any) (int64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	return parseIntegral(string(n))
}

// parseIntegral parses a JSON number literal and reports whether its exact
// decimal value is an integer within the int64 range. It never builds a
// value longer than 19 digits, so exponents such as 1e999999999 cost nothing.
func parseIntegral(s string) (int64, bool) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, true
	}
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	mant, expStr, hasExp := s, "", false
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		mant, expStr, hasExp = s[:i], s[i+1:], true
	}
	intPart, frac, hasDot := strings.Cut(mant, ".")
	if intPart == "" || !isDigits(intPart) || !isDigits(frac) || (hasDot && frac == "") {
		return 0, false
	}
	// value = digits × 10^exp, with digits free of leading and trailing zeros.
	digits := strings.TrimLeft(intPart+frac, "0")
	trimmed := strings.TrimRight(digits, "0")
	exp := int64(len(digits)-len(trimmed)) - int64(len(frac))
	digits = trimmed
	if hasExp {
		unsigned := strings.TrimPrefix(strings.TrimPrefix(expStr, "+"), "-")
		if unsigned == "" || len(expStr)-len(unsigned) > 1 || !isDigits(unsigned) {
			return 0, false
		}
		e, err := strconv.ParseInt(expStr, 10, 32)
		if err != nil { // |exponent| ≥ 2^31: only a zero mantissa stays in range
			return 0, digits == ""
		}
		exp += e
	}
	if digits == "" {
		return 0, true
	}
	if exp < 0 || int64(len(digits))+exp > 19 {
		return 0, false // fractional, or beyond the int64 range
	}
	u, err := strconv.ParseUint(digits+strings.Repeat("0", int(exp)), 10, 64)
	switch {
	case err != nil:
		return 0, false
	case neg && u <= 1<<63:
		return -int64(u-1) - 1, true
	case !neg && u <= 1<<63-1:
		return int64(u), true
	}
	return 0, false
}

// isDigits reports whether s holds only ASCII digits (true for "").
func isDigits(s string) bool {
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
