package wsauth

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

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

// segmentDecoder decodes base64url segments the way the token parser does
// (see Verifier.newExpected): padding is tolerated and non-zero trailing bits are
// rejected.
var segmentDecoder = jwt.NewParser(jwt.WithPaddingAllowed(), jwt.WithStrictDecoding())

// base64url reports whether seg holds only the base64url alphabet,
// optionally followed by '=' padding. encoding/base64, under jwt/v5's
// decoder, would silently skip line breaks.
func base64url(seg string) bool {
	body := strings.TrimRight(seg, "=")
	for i := range len(body) {
		if !base64urlAlphabet[body[i]] {
			return false
		}
	}
	return true
}

// base64urlAlphabet marks the bytes of the base64url alphabet.
var base64urlAlphabet = func() (a [256]bool) {
	for _, c := range []byte("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") {
		a[c] = true
	}
	return a
}()

// decodeSegment decodes one base64url segment (see base64url).
func decodeSegment(seg string) ([]byte, bool) {
	if !base64url(seg) {
		return nil, false
	}
	b, err := segmentDecoder.DecodeSegment(seg)
	return b, err == nil
}

// checkFormat runs the parts of steps 4–5 that jwt/v5's parser leaves out,
// on a token no longer than MaxTokenBytes: every segment is base64url only,
// and the header is valid UTF-8 (encoding/json would read invalid bytes as
// U+FFFD). The parser checks the rest: three segments, the padding and
// trailing bits of each, and JSON.
func checkFormat(tok string) *Error {
	h, rest, _ := strings.Cut(tok, ".")
	p, s, ok := strings.Cut(rest, ".")
	if !ok || strings.Contains(s, ".") {
		return failf(CodeMalformed, "expected three dot-separated segments")
	}
	if !base64url(h) || !base64url(p) || !base64url(s) {
		return failf(CodeMalformed, "invalid base64url segment")
	}
	if !headerUTF8(h) {
		return failf(CodeMalformed, "header and payload must be UTF-8 JSON objects")
	}
	return nil
}

// headerUTF8 reports whether the header segment h (base64url, checked)
// decodes to valid UTF-8, or does not decode at all (the parser then
// reports it malformed). A header of up to 384 bytes, as every real one,
// is decoded on the stack.
func headerUTF8(h string) bool {
	var buf [384]byte
	body := strings.TrimRight(h, "=")
	if base64.RawURLEncoding.DecodedLen(len(body)) > len(buf) {
		hb, ok := decodeSegment(h)
		return !ok || utf8.Valid(hb)
	}
	n, err := base64.RawURLEncoding.Strict().Decode(buf[:], []byte(body))
	return err != nil || utf8.Valid(buf[:n])
}

// formatError is the rest of step 5 on what jwt/v5's parser decoded: the
// header must be an object (JSON null decodes to a nil map) without crit,
// and the payload an object (the parser accepts JSON null). crit lists
// header extensions the recipient must understand (RFC 7515 §4.1.11); this
// verifier implements none, so any crit, even an empty or ill-typed one, is
// refused rather than ignored. These are format failures, reported before
// the alg check.
func formatError(t *jwt.Token, tc *tokenClaims) *Error {
	if _, crit := t.Header["crit"]; crit {
		return failf(CodeMalformed, "critical header extensions are not supported")
	}
	if t.Header == nil || !tc.object {
		return failf(CodeMalformed, "header and payload must be UTF-8 JSON objects")
	}
	return nil
}

// jsonObject parses b on t and reports whether it is valid UTF-8 holding
// exactly one JSON object (surrounding whitespace allowed, nothing else).
func jsonObject(t *wire.Tape, b []byte) bool {
	return t.Parse(b) && t.Nodes[0].Kind == wire.Object
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

// tokenClaims are the claims of a token as jwt/v5's parser sees them: it
// decodes the payload into them (UnmarshalJSON) and validates the
// registered claims through the jwt.Claims methods.
type tokenClaims struct {
	*claims // nil unless the payload passed step 9
	// object is set once the payload was read as a JSON object: a payload
	// of JSON null never reaches UnmarshalJSON.
	object bool
	// invalid is the step 9 failure. It is not returned by UnmarshalJSON,
	// which the parser calls before the signature check, but reported once
	// the signature has been verified.
	invalid *Error
	// The numeric dates as jwt/v5 compares them (see unixDate). exp is
	// one second later than the claim: the parser's token expires at exp +
	// leeway, the spec's one second after it (now is in whole seconds).
	expiresAt, issuedAt, notBefore *jwt.NumericDate
	// dates holds the values expiresAt, issuedAt and notBefore point to.
	dates [3]jwt.NumericDate
	// verifiedFor is set when the token enters the verified-token cache:
	// the expectations (audience) it passed steps 10–11 against.
	verifiedFor *expected
}

// inWindow reports whether, at nowSec, the token is within the validity
// window jwt/v5's validator accepts (steps 12–13, in whole seconds with
// leeway seconds): exp + leeway ≥ now, and iat − leeway ≤ now and nbf −
// leeway ≤ now when present. Written so that nothing overflows (now is
// within ±2^62 s and the leeway below 2^34 s). It lets a cache hit skip the
// validator, which allocates; outside the window the validator decides.
func (tc *tokenClaims) inWindow(nowSec, leeway int64) bool {
	return tc.exp >= nowSec-leeway &&
		(!tc.hasIAT || tc.iat <= nowSec+leeway) &&
		(!tc.hasNBF || tc.nbf <= nowSec+leeway)
}

var errNotObject = errors.New("payload is not a UTF-8 JSON object")

// UnmarshalJSON reads the payload on a tape: valid UTF-8 holding one JSON
// object, then its claims (step 9).
func (tc *tokenClaims) UnmarshalJSON(b []byte) error {
	t := wire.Get()
	defer wire.Put(t)
	if !jsonObject(t, b) {
		return errNotObject
	}
	tc.object = true
	if tc.claims, tc.invalid = parseClaims(t); tc.invalid != nil {
		return nil
	}
	tc.dates[0] = unixDate(tc.exp)
	tc.dates[0].Time = tc.dates[0].Add(time.Second)
	tc.expiresAt = &tc.dates[0]
	if tc.hasIAT {
		tc.dates[1] = unixDate(tc.iat)
		tc.issuedAt = &tc.dates[1]
	}
	if tc.hasNBF {
		tc.dates[2] = unixDate(tc.nbf)
		tc.notBefore = &tc.dates[2]
	}
	return nil
}

// unixDate returns the date sec seconds after the Unix epoch, clamped to
// ±2^62 s: time.Unix wraps around near the int64 limits, and no comparison
// with now ± leeway (at most ±2^63 ns) changes within the clamp.
func unixDate(sec int64) jwt.NumericDate {
	const bound = 1 << 62
	return jwt.NumericDate{Time: time.Unix(min(max(sec, -bound), bound), 0)}
}

// GetExpirationTime implements jwt.Claims.
func (tc *tokenClaims) GetExpirationTime() (*jwt.NumericDate, error) { return tc.expiresAt, nil }

// GetIssuedAt implements jwt.Claims.
func (tc *tokenClaims) GetIssuedAt() (*jwt.NumericDate, error) { return tc.issuedAt, nil }

// GetNotBefore implements jwt.Claims.
func (tc *tokenClaims) GetNotBefore() (*jwt.NumericDate, error) { return tc.notBefore, nil }

// GetIssuer implements jwt.Claims.
func (tc *tokenClaims) GetIssuer() (string, error) {
	if tc.claims == nil {
		return "", nil
	}
	return tc.iss, nil
}

// GetSubject implements jwt.Claims; sub is not checked.
func (tc *tokenClaims) GetSubject() (string, error) { return "", nil }

// GetAudience implements jwt.Claims.
func (tc *tokenClaims) GetAudience() (jwt.ClaimStrings, error) {
	if tc.claims == nil {
		return nil, nil
	}
	return tc.aud, nil
}

// parseClaims runs step 9 on the payload's tape (a JSON object, parsed by
// tokenClaims.UnmarshalJSON). Types are checked strictly: string claims must be JSON
// strings, aud a string or an array of strings, scopes a non-empty array of
// strings, exp (required), iat and nbf (optional) JSON numbers with an
// integral value that fits in an int64. An optional claim that is null counts
// as absent; unknown claims are ignored; of a claim given twice, the last
// counts (as encoding/json decodes an object into a map). The claims' strings
// are substrings of one copy of the payload.
func parseClaims(t *wire.Tape) (*claims, *Error) {
	d := claimsDecoder{t: t, src: string(t.Src)}
	d.index()
	c := &claims{}
	var e *Error
	if c.iss, e = d.str("iss"); e != nil {
		return nil, e
	}
	if c.aud, e = d.aud(); e != nil {
		return nil, e
	}
	if e = d.checkOptStr("sub"); e != nil {
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
	if e = d.checkOptStr("jti"); e != nil {
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

// claimNames are the claims parseClaims reads.
var claimNames = [...]string{"iss", "aud", "sub", "grant_id", "workspace_id", "workspace_slug", "agent_id",
	"agent_slug", "server_id", "scopes", "agent_workspace_ref", "jti", "exp", "iat", "nbf"}

// claimSlot returns the index of name in claimNames, -1 for another name.
func claimSlot(name []byte) int {
	switch string(name) {
	case "iss":
		return 0
	case "aud":
		return 1
	case "sub":
		return 2
	case "grant_id":
		return 3
	case "workspace_id":
		return 4
	case "workspace_slug":
		return 5
	case "agent_id":
		return 6
	case "agent_slug":
		return 7
	case "server_id":
		return 8
	case "scopes":
		return 9
	case "agent_workspace_ref":
		return 10
	case "jti":
		return 11
	case "exp":
		return 12
	case "iat":
		return 13
	case "nbf":
		return 14
	}
	return -1
}

// claimsDecoder reads the claims of a payload's tape; src is the payload as
// a string, of which the claims' strings are substrings.
type claimsDecoder struct {
	t   *wire.Tape
	src string
	// values holds the value node of each claim of claimNames, 0 when
	// absent (node 0 is the payload object itself).
	values [len(claimNames)]int32
}

// index records the value node of every claim in one pass over the
// payload's members; of a claim given twice, the last counts, as
// encoding/json decodes an object into a map.
func (d *claimsDecoder) index() {
	obj := d.t.Nodes[0]
	for m := int32(1); m < obj.Next; m = d.t.Nodes[m+1].Next {
		key := d.t.Key(m)
		if d.t.Nodes[m].Esc {
			key = d.t.Str(m)
		}
		if slot := claimSlot(key); slot >= 0 {
			d.values[slot] = m + 1
		}
	}
}

// get returns the value node of claim name; a null claim counts as absent.
func (d *claimsDecoder) get(name string) (int32, bool) {
	slot := claimSlot([]byte(name))
	if slot < 0 {
		return 0, false
	}
	i := d.values[slot]
	if i == 0 || d.t.Nodes[i].Kind == wire.Null {
		return 0, false
	}
	return i, true
}

// stringAt returns the string at node i.
func (d *claimsDecoder) stringAt(i int32) string {
	nd := d.t.Nodes[i]
	if !nd.Esc {
		return d.src[nd.Start+1 : nd.End-1]
	}
	return string(d.t.Str(i))
}

// str returns the required string claim name.
func (d *claimsDecoder) str(name string) (string, *Error) {
	i, ok := d.get(name)
	if !ok || d.t.Nodes[i].Kind != wire.String {
		return "", invalidClaim(name, !ok, "a string")
	}
	return d.stringAt(i), nil
}

// optStr returns the optional string claim name, nil when absent.
func (d *claimsDecoder) optStr(name string) (*string, *Error) {
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

// checkOptStr checks the optional string claim name, whose value is not
// kept.
func (d *claimsDecoder) checkOptStr(name string) *Error {
	if i, ok := d.get(name); ok && d.t.Nodes[i].Kind != wire.String {
		return invalidClaim(name, false, "a string")
	}
	return nil
}

// aud returns the aud claim: a string, or an array of strings.
func (d *claimsDecoder) aud() ([]string, *Error) {
	if i, ok := d.get("aud"); ok && d.t.Nodes[i].Kind == wire.String {
		return []string{d.stringAt(i)}, nil
	}
	return d.strings("aud", true, "a string or an array of strings")
}

// strings returns the array of strings claim name (empty only when
// allowEmpty).
func (d *claimsDecoder) strings(name string, allowEmpty bool, want string) ([]string, *Error) {
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
func (d *claimsDecoder) integral(name string, required bool) (n int64, present bool, e *Error) {
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
