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
// on a token no longer than MaxTokenBytes: no segment holds a line break,
// which encoding/base64, under jwt/v5's decoder, would silently skip, and
// the header is valid UTF-8 (encoding/json would read invalid bytes as
// U+FFFD). The parser checks the rest: three segments, the base64url
// alphabet (strict decoding refuses every other byte), the padding and
// trailing bits of each segment, and JSON; malformedError then says which
// failed.
func checkFormat(tok string) *Error {
	h, rest, _ := strings.Cut(tok, ".")
	_, s, ok := strings.Cut(rest, ".")
	if !ok || strings.IndexByte(s, '.') >= 0 {
		return failf(CodeMalformed, "expected three dot-separated segments")
	}
	if strings.IndexByte(tok, '\n') >= 0 || strings.IndexByte(tok, '\r') >= 0 {
		return failf(CodeMalformed, "invalid base64url segment")
	}
	if !headerUTF8(h) {
		return malformedError(tok)
	}
	return nil
}

// malformedError is the error of a token (three segments, checked by
// checkFormat) that jwt/v5's parser found malformed: a segment outside the
// base64url alphabet, or a header or payload that does not decode to a JSON
// object.
func malformedError(tok string) *Error {
	for seg := range strings.SplitSeq(tok, ".") {
		if !base64url(seg) {
			return failf(CodeMalformed, "invalid base64url segment")
		}
	}
	return failf(CodeMalformed, "header and payload must be UTF-8 JSON objects")
}

// headerUTF8 reports whether the header segment h (without line breaks)
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
// registered claims through the jwt.Claims methods. One allocation holds
// the claims and what their slices and pointers refer to (up to four
// scopes).
type tokenClaims struct {
	claims // zero unless the payload passed step 9
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
	// store holds what the claims' slices and pointers refer to.
	store claimStore
}

// claimStore is the storage of a claims value's optional strings and of
// its aud and scopes when they are short.
type claimStore struct {
	aud                              [1]string
	scopes                           [4]string
	workspaceSlug, agentWorkspaceRef string
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

// UnmarshalJSON reads the payload (step 9): valid UTF-8 holding one JSON
// object, then its claims. encoding/json, which calls it, has checked that
// b is one valid JSON value; a payload without a backslash is read in a
// single pass (claimReader.scan), any other on a tape, which checks
// everything again.
func (tc *tokenClaims) UnmarshalJSON(b []byte) error {
	d := claimReader{src: string(b)} // the claims' strings are substrings of this copy
	if d.scan() {
		if !utf8.ValidString(d.src) {
			return errNotObject
		}
		tc.object = true
		return tc.setClaims(&d)
	}
	t := wire.Get()
	defer wire.Put(t)
	if !jsonObject(t, b) {
		return errNotObject
	}
	tc.object = true
	d.index(t)
	return tc.setClaims(&d)
}

// setClaims reads the claims from d (step 9) and the dates jwt/v5 checks.
// It returns nil: a step 9 failure is kept in tc.invalid, reported after
// the signature check.
func (tc *tokenClaims) setClaims(d *claimReader) error {
	if tc.invalid = parseClaims(d, &tc.claims, &tc.store); tc.invalid != nil {
		tc.claims = claims{}
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
func (tc *tokenClaims) GetIssuer() (string, error) { return tc.iss, nil }

// GetSubject implements jwt.Claims; sub is not checked.
func (tc *tokenClaims) GetSubject() (string, error) { return "", nil }

// GetAudience implements jwt.Claims.
func (tc *tokenClaims) GetAudience() (jwt.ClaimStrings, error) { return tc.aud, nil }

// parseClaims runs step 9 on the claims of a JSON object read by d into c,
// whose slices and pointers refer to st when they fit. Types are checked
// strictly: string claims must be JSON strings, aud a string or an array of
// strings, scopes a non-empty array of strings, exp (required), iat and nbf
// (optional) JSON numbers with an integral value that fits in an int64. An
// optional claim that is null counts as absent; unknown claims are ignored;
// of a claim given twice, the last counts (as encoding/json decodes an
// object into a map). Claims are checked in the order of their slots; on
// failure c is partly filled.
func parseClaims(d *claimReader, c *claims, st *claimStore) *Error {
	var e *Error
	if c.iss, e = reqStr(d, claimIss); e != nil {
		return e
	}
	if c.aud, e = audClaim(d, st.aud[:0]); e != nil {
		return e
	}
	if e = checkOptStr(d, claimSub); e != nil {
		return e
	}
	if c.grantID, e = reqStr(d, claimGrantID); e != nil {
		return e
	}
	if c.workspaceID, e = reqStr(d, claimWorkspaceID); e != nil {
		return e
	}
	if c.workspaceSlug, e = optStr(d, claimWorkspaceSlug, &st.workspaceSlug); e != nil {
		return e
	}
	if c.agentID, e = reqStr(d, claimAgentID); e != nil {
		return e
	}
	if c.agentSlug, e = reqStr(d, claimAgentSlug); e != nil {
		return e
	}
	if c.serverID, e = reqStr(d, claimServerID); e != nil {
		return e
	}
	if c.scopes, e = strsClaim(d, claimScopes, st.scopes[:0], false, "a non-empty array of strings"); e != nil {
		return e
	}
	if c.agentWorkspaceRef, e = optStr(d, claimAgentWorkspaceRef, &st.agentWorkspaceRef); e != nil {
		return e
	}
	if e = checkOptStr(d, claimJTI); e != nil {
		return e
	}
	if c.exp, _, e = integral(d, claimExp, true); e != nil {
		return e
	}
	if c.iat, c.hasIAT, e = integral(d, claimIAT, false); e != nil {
		return e
	}
	if c.nbf, c.hasNBF, e = integral(d, claimNBF, false); e != nil {
		return e
	}
	return nil
}

// The claims parseClaims reads, in the order it checks them: a claim's
// slot in claimNames and in a claimSource.
const (
	claimIss = iota
	claimAud
	claimSub
	claimGrantID
	claimWorkspaceID
	claimWorkspaceSlug
	claimAgentID
	claimAgentSlug
	claimServerID
	claimScopes
	claimAgentWorkspaceRef
	claimJTI
	claimExp
	claimIAT
	claimNBF
	numClaims
)

// claimNames are the names of the claims parseClaims reads, by slot.
var claimNames = [numClaims]string{"iss", "aud", "sub", "grant_id", "workspace_id", "workspace_slug", "agent_id",
	"agent_slug", "server_id", "scopes", "agent_workspace_ref", "jti", "exp", "iat", "nbf"}

// claimSlot returns the slot of claim name, -1 for another name.
func claimSlot[S string | []byte](name S) int {
	switch string(name) {
	case "iss":
		return claimIss
	case "aud":
		return claimAud
	case "sub":
		return claimSub
	case "grant_id":
		return claimGrantID
	case "workspace_id":
		return claimWorkspaceID
	case "workspace_slug":
		return claimWorkspaceSlug
	case "agent_id":
		return claimAgentID
	case "agent_slug":
		return claimAgentSlug
	case "server_id":
		return claimServerID
	case "scopes":
		return claimScopes
	case "agent_workspace_ref":
		return claimAgentWorkspaceRef
	case "jti":
		return claimJTI
	case "exp":
		return claimExp
	case "iat":
		return claimIAT
	case "nbf":
		return claimNBF
	}
	return -1
}

// reqStr returns the required string claim in slot.
func reqStr(d *claimReader, slot int) (string, *Error) {
	k, ok := d.kind(slot)
	if !ok || k != wire.String {
		return "", invalidClaim(claimNames[slot], !ok, "a string")
	}
	return d.str(slot), nil
}

// optStr returns the optional string claim in slot, stored in *dst; nil
// when absent.
func optStr(d *claimReader, slot int, dst *string) (*string, *Error) {
	k, ok := d.kind(slot)
	if !ok {
		return nil, nil
	}
	if k != wire.String {
		return nil, invalidClaim(claimNames[slot], false, "a string")
	}
	*dst = d.str(slot)
	return dst, nil
}

// checkOptStr checks the optional string claim in slot, whose value is not
// kept.
func checkOptStr(d *claimReader, slot int) *Error {
	if k, ok := d.kind(slot); ok && k != wire.String {
		return invalidClaim(claimNames[slot], false, "a string")
	}
	return nil
}

// audClaim returns the aud claim, a string or an array of strings, in buf
// when it fits.
func audClaim(d *claimReader, buf []string) ([]string, *Error) {
	if k, ok := d.kind(claimAud); ok && k == wire.String {
		return append(buf, d.str(claimAud)), nil
	}
	return strsClaim(d, claimAud, buf, true, "a string or an array of strings")
}

// strsClaim returns the array of strings claim in slot (empty only when
// allowEmpty), in buf when it fits.
func strsClaim(d *claimReader, slot int, buf []string, allowEmpty bool, want string) ([]string, *Error) {
	k, ok := d.kind(slot)
	if !ok {
		return nil, invalidClaim(claimNames[slot], true, want)
	}
	if k != wire.Array {
		return nil, invalidClaim(claimNames[slot], false, want)
	}
	elems, ok := d.strs(slot, buf)
	if !ok || len(elems) == 0 && !allowEmpty {
		return nil, invalidClaim(claimNames[slot], false, want)
	}
	return elems, nil
}

// integral returns the integer claim in slot; present is false for an
// absent optional claim.
func integral(d *claimReader, slot int, required bool) (n int64, present bool, e *Error) {
	k, ok := d.kind(slot)
	if !ok {
		if required {
			return 0, false, invalidClaim(claimNames[slot], true, "an integer")
		}
		return 0, false, nil
	}
	if k == wire.Number {
		if n, ok = parseIntegral(d.number(slot)); ok {
			return n, true, nil
		}
	}
	return 0, false, invalidClaim(claimNames[slot], false, "an integer")
}

// claimReader reads the claims of a payload (a JSON object) by slot; of a
// claim given twice, the last counts, as encoding/json decodes an object
// into a map. src is the payload as a string, of which the claims' strings
// are substrings. A plain payload (no backslash, so no escape sequence) is
// read by scan, relying on encoding/json's check that it is valid JSON;
// any other is read from its tape (index).
type claimReader struct {
	src    string
	t      *wire.Tape // nil for a plain payload
	values [numClaims]claimValue
}

// claimValue is the value of a claim: src[start:end], quotes and brackets
// included, and its tape node when the payload was read from a tape.
type claimValue struct {
	start, end int
	node       int32
	kind       wire.Kind
	set        bool
}

// index records the value of every claim from the payload's tape t (of
// src) in one pass over its members.
func (d *claimReader) index(t *wire.Tape) {
	d.t = t
	obj := t.Nodes[0]
	for m := int32(1); m < obj.Next; m = t.Nodes[m+1].Next {
		key := t.Key(m)
		if t.Nodes[m].Esc {
			key = t.Str(m)
		}
		if slot := claimSlot(key); slot >= 0 {
			nd := t.Nodes[m+1]
			d.values[slot] = claimValue{start: int(nd.Start), end: int(nd.End), node: m + 1, kind: nd.Kind, set: true}
		}
	}
}

// scan records the value of every claim of a plain payload in one pass,
// without a tape. It reports false when src holds a backslash or is not
// a JSON object as expected: the tape then judges it. It never reads
// outside src, whatever its bytes, but on bytes that are not valid JSON
// its answer means nothing.
func (d *claimReader) scan() bool {
	src := d.src
	if strings.IndexByte(src, '\\') >= 0 {
		return false
	}
	i := skipSpace(src, 0)
	if i >= len(src) || src[i] != '{' {
		return false
	}
	i = skipSpace(src, i+1)
	if i < len(src) && src[i] == '}' {
		return skipSpace(src, i+1) == len(src)
	}
	for {
		if i >= len(src) || src[i] != '"' {
			return false
		}
		n := strings.IndexByte(src[i+1:], '"')
		if n < 0 {
			return false
		}
		key := src[i+1 : i+1+n]
		i = skipSpace(src, i+n+2)
		if i >= len(src) || src[i] != ':' {
			return false
		}
		i = skipSpace(src, i+1)
		kind, end, ok := skipValue(src, i)
		if !ok {
			return false
		}
		if slot := claimSlot(key); slot >= 0 {
			d.values[slot] = claimValue{start: i, end: end, kind: kind, set: true}
		}
		if i = skipSpace(src, end); i >= len(src) {
			return false
		}
		switch src[i] {
		case ',':
			i = skipSpace(src, i+1)
		case '}':
			return skipSpace(src, i+1) == len(src)
		default:
			return false
		}
	}
}

// skipSpace returns the index of the first byte of s at or after i that is
// not JSON whitespace.
func skipSpace(s string, i int) int {
	for i < len(s) {
		switch s[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// skipValue returns the kind and the end of the JSON value at s[i] (in a
// string without a backslash); ok is false when there is none.
func skipValue(s string, i int) (kind wire.Kind, end int, ok bool) {
	if i >= len(s) {
		return 0, 0, false
	}
	switch c := s[i]; c {
	case '"':
		n := strings.IndexByte(s[i+1:], '"')
		return wire.String, i + n + 2, n >= 0
	case '{', '[':
		kind = wire.Object
		if c == '[' {
			kind = wire.Array
		}
		depth := 0
		for j := i; j < len(s); j++ {
			switch s[j] {
			case '"':
				n := strings.IndexByte(s[j+1:], '"')
				if n < 0 {
					return 0, 0, false
				}
				j += n + 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return kind, j + 1, true
				}
			}
		}
		return 0, 0, false
	case 't':
		return wire.True, i + 4, strings.HasPrefix(s[i:], "true")
	case 'f':
		return wire.False, i + 5, strings.HasPrefix(s[i:], "false")
	case 'n':
		return wire.Null, i + 4, strings.HasPrefix(s[i:], "null")
	}
	end = i
	for end < len(s) && numberByte[s[end]] {
		end++
	}
	return wire.Number, end, end > i && (s[i] == '-' || '0' <= s[i] && s[i] <= '9')
}

// numberByte marks the bytes a JSON number is written with.
var numberByte = func() (t [256]bool) {
	for _, c := range []byte("0123456789+-.eE") {
		t[c] = true
	}
	return t
}()

// kind returns the JSON kind of the claim in slot; ok is false when the
// claim is absent or null.
func (d *claimReader) kind(slot int) (k wire.Kind, ok bool) {
	v := d.values[slot]
	if !v.set || v.kind == wire.Null {
		return wire.Null, false
	}
	return v.kind, true
}

// str returns the claim in slot, a string, decoded.
func (d *claimReader) str(slot int) string {
	v := d.values[slot]
	if d.t != nil && d.t.Nodes[v.node].Esc {
		return string(d.t.Str(v.node))
	}
	return d.src[v.start+1 : v.end-1]
}

// number returns the literal of the claim in slot, a number.
func (d *claimReader) number(slot int) string {
	v := d.values[slot]
	return d.src[v.start:v.end]
}

// strs returns the elements of the claim in slot, an array, appended to
// buf (empty); ok is false when an element is not a string.
func (d *claimReader) strs(slot int, buf []string) (elems []string, ok bool) {
	v := d.values[slot]
	if d.t != nil {
		nd := d.t.Nodes[v.node]
		if int(nd.N) > cap(buf) {
			buf = make([]string, 0, nd.N)
		}
		for el := v.node + 1; el < nd.Next; el = d.t.Nodes[el].Next {
			e := d.t.Nodes[el]
			switch {
			case e.Kind != wire.String:
				return nil, false
			case e.Esc:
				buf = append(buf, string(d.t.Str(el)))
			default:
				buf = append(buf, d.src[e.Start+1:e.End-1])
			}
		}
		return buf, true
	}
	s := d.src[v.start+1 : v.end-1] // inside the brackets
	for i := skipSpace(s, 0); i < len(s); {
		if s[i] != '"' {
			return nil, false
		}
		n := strings.IndexByte(s[i+1:], '"')
		if n < 0 {
			return nil, false
		}
		buf = append(buf, s[i+1:i+1+n])
		if i = skipSpace(s, i+n+2); i < len(s) {
			if s[i] != ',' {
				return nil, false
			}
			i = skipSpace(s, i+1)
		}
	}
	return buf, true
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
