package wsauth

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/golang-jwt/jwt/v5"

	"github.com/supervaize/supervaizer-go/internal/wire"
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
	hasKID       bool       // kid is a non-empty JSON string
	signingInput string     // header.payload, the bytes the signature covers
	payload      *wire.Tape // the decoded payload, a JSON object, parsed
	sig          []byte     // the decoded signature
}

// release gives the payload's tape back.
func (pt *parsedToken) release() {
	if pt.payload != nil {
		wire.Put(pt.payload)
		pt.payload = nil
	}
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
	// Each is parsed once, on a tape (valid UTF-8 JSON, as encoding/json
	// reads it); keys are matched exactly (encoding/json would match struct
	// fields case-insensitively: "ALG" must not stand in for "alg"), and of
	// a key given twice the last counts.
	header, payload := wire.Get(), wire.Get()
	defer wire.Put(header)
	if !jsonObject(header, hb) || !jsonObject(payload, pb) {
		wire.Put(payload)
		return parsedToken{}, failf(CodeMalformed, "header and payload must be UTF-8 JSON objects")
	}
	pt := parsedToken{signingInput: tok[:len(h)+1+len(p)], payload: payload, sig: sig}
	// crit lists header extensions the recipient must understand (RFC 7515
	// §4.1.11); this verifier implements none, so any crit, even an empty or
	// ill-typed one, is refused rather than ignored. It makes the token
	// malformed, a format failure, so it is reported before the alg check.
	if _, ok := header.Member(0, []byte("crit")); ok {
		pt.release()
		return parsedToken{}, failf(CodeMalformed, "critical header extensions are not supported")
	}
	if alg, ok := tapeString(header, "alg"); !ok || alg != "EdDSA" {
		pt.release()
		return parsedToken{}, fail(CodeUnsupportedAlg)
	}
	if kid, ok := tapeString(header, "kid"); ok && kid != "" {
		pt.kid, pt.hasKID = kid, true
	}
	return pt, nil
}

// jsonObject parses b on t and reports whether it is valid UTF-8 holding
// exactly one JSON object (surrounding whitespace allowed, nothing else).
func jsonObject(t *wire.Tape, b []byte) bool {
	return t.Parse(b) && t.Nodes[0].Kind == wire.Object
}

// tapeString returns the member name of the object t holds when it is a
// JSON string.
func tapeString(t *wire.Tape, name string) (string, bool) {
	i, ok := t.Member(0, []byte(name))
	if !ok || t.Nodes[i].Kind != wire.String {
		return "", false
	}
	return string(t.Str(i)), true
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

// parseClaims runs step 9 on the payload's tape (a JSON object, parsed by
// parseToken). Types are checked strictly: string claims must be JSON
// strings, aud a string or an array of strings, scopes a non-empty array of
// strings, exp (required), iat and nbf (optional) JSON numbers with an
// integral value that fits in an int64. An optional claim that is null counts
// as absent; unknown claims are ignored; of a claim given twice, the last
// counts (as encoding/json decodes an object into a map). The claims' strings
// are substrings of one copy of the payload.
func parseClaims(t *wire.Tape) (*claims, *Error) {
	d := claimsDecoder{t: t, src: string(t.Src)}
	c := &claims{}
	var e *Error
	if c.iss, e = d.str("iss"); e != nil {
		return nil, e
	}
	if c.aud, e = d.aud(); e != nil {
		return nil, e
	}
	if _, e = d.optStr("sub"); e != nil {
		return nil, e
	}
	for _, f := range []struct {
		name string
		dst  *string
	}{{"grant_id", &c.grantID}, {"workspace_id", &c.workspaceID}} {
		if *f.dst, e = d.str(f.name); e != nil {
			return nil, e
		}
	}
	if c.workspaceSlug, e = d.optStr("workspace_slug"); e != nil {
		return nil, e
	}
	for _, f := range []struct {
		name string
		dst  *string
	}{{"agent_id", &c.agentID}, {"agent_slug", &c.agentSlug}, {"server_id", &c.serverID}} {
		if *f.dst, e = d.str(f.name); e != nil {
			return nil, e
		}
	}
	if c.scopes, e = d.strings("scopes", false, "a non-empty array of strings"); e != nil {
		return nil, e
	}
	if c.agentWorkspaceRef, e = d.optStr("agent_workspace_ref"); e != nil {
		return nil, e
	}
	if _, e = d.optStr("jti"); e != nil {
		return nil, e
	}
	if c.exp, _, e = d.integral("exp", true); e != nil {
		return nil, e
	}
	if c.iat, c.hasIAT, e = d.integral("iat", false); e != nil {
		return nil, e
	}
	if c.nbf, c.hasNBF, e = d.integral("nbf", false); e != nil {
		return nil, e
	}
	return c, nil
}

// claimsDecoder reads the claims of a payload's tape; src is the payload as
// a string, of which the claims' strings are substrings.
type claimsDecoder struct {
	t   *wire.Tape
	src string
}

// get returns the value node of claim name; a null claim counts as absent.
func (d claimsDecoder) get(name string) (int32, bool) {
	i, ok := d.t.Member(0, []byte(name))
	if !ok || d.t.Nodes[i].Kind == wire.Null {
		return 0, false
	}
	return i, true
}

// stringAt returns the string at node i.
func (d claimsDecoder) stringAt(i int32) string {
	nd := d.t.Nodes[i]
	if !nd.Esc {
		return d.src[nd.Start+1 : nd.End-1]
	}
	return string(d.t.Str(i))
}

// str returns the required string claim name.
func (d claimsDecoder) str(name string) (string, *Error) {
	i, ok := d.get(name)
	if !ok || d.t.Nodes[i].Kind != wire.String {
		return "", invalidClaim(name, !ok, "a string")
	}
	return d.stringAt(i), nil
}

// optStr returns the optional string claim name, nil when absent.
func (d claimsDecoder) optStr(name string) (*string, *Error) {
	i, ok := d.get(name)
	if !ok {
		return nil, nil
	}
	if d.t.Nodes[i].Kind != wire.String {
		return nil, invalidClaim(name, false, "a string")
	}
	s := d.stringAt(i)
	return &s, nil
}

// aud returns the aud claim: a string, or an array of strings.
func (d claimsDecoder) aud() ([]string, *Error) {
	if i, ok := d.get("aud"); ok && d.t.Nodes[i].Kind == wire.String {
		return []string{d.stringAt(i)}, nil
	}
	return d.strings("aud", true, "a string or an array of strings")
}

// strings returns the array of strings claim name (empty only when
// allowEmpty).
func (d claimsDecoder) strings(name string, allowEmpty bool, want string) ([]string, *Error) {
	i, ok := d.get(name)
	if !ok {
		return nil, invalidClaim(name, true, want)
	}
	nd := d.t.Nodes[i]
	if nd.Kind != wire.Array || nd.N == 0 && !allowEmpty {
		return nil, invalidClaim(name, false, want)
	}
	out := make([]string, 0, nd.N)
	for el := i + 1; el < nd.Next; el = d.t.Nodes[el].Next {
		if d.t.Nodes[el].Kind != wire.String {
			return nil, invalidClaim(name, false, want)
		}
		out = append(out, d.stringAt(el))
	}
	return out, nil
}

// integral returns the integer claim name; present is false for an absent
// optional claim.
func (d claimsDecoder) integral(name string, required bool) (n int64, present bool, e *Error) {
	i, ok := d.get(name)
	if !ok {
		if required {
			return 0, false, invalidClaim(name, true, "an integer")
		}
		return 0, false, nil
	}
	nd := d.t.Nodes[i]
	if nd.Kind == wire.Number {
		if n, ok = parseIntegral(d.src[nd.Start:nd.End]); ok {
			return n, true, nil
		}
	}
	return 0, false, invalidClaim(name, false, "an integer")
}

// invalidClaim builds the CodeInvalidClaims error for claim name. The message
// names the claim and the expected type, never the value.
func invalidClaim(name string, missing bool, want string) *Error {
	if missing {
		return failf(CodeInvalidClaims, "%q is missing or null (want %s)", name, want)
	}
	return failf(CodeInvalidClaims, "%q must be %s", name, want)
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
