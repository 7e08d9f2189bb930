package store

import (
	"fmt"
	"strings"

	"github.com/supervaize/supervaizer-go/internal/keyesc"
)

// Separator separates the parts of a key built by [Key].
const Separator = '/'

// Key builds a hierarchical key from its parts, for example
// Key("idempotency", agentSlug, action, idempotencyKey). Each part is escaped
// so that the result is printable ASCII and different lists of parts never
// give the same key: ("a/b", "c") and ("a", "b/c") differ. Bytes other than
// ASCII letters, digits and "-._~" become %XX (upper-case hex); parts are
// joined with [Separator]. [ParseKey] reverses Key. Escaping can triple the
// length of a part; a Store rejects keys longer than [MaxKeyLen].
//
// Keys that share leading parts share a prefix: Key(a, b, ...) starts with
// Prefix(a), and no key built from a different first part does. The order of
// keys in a scan is the byte order of the escaped strings.
func Key(first string, rest ...string) string {
	n := escapedLen(first)
	for _, p := range rest {
		n += 1 + escapedLen(p)
	}
	var b strings.Builder
	b.Grow(n)
	appendEscaped(&b, first)
	for _, p := range rest {
		b.WriteByte(Separator)
		appendEscaped(&b, p)
	}
	return b.String()
}

// Prefix returns the prefix shared by every key that [Key] builds from parts
// followed by at least one more part, and by no other key that Key builds: it
// is Key(parts...) followed by [Separator]. Prefix() is "", which matches every key. Pass it to
// [Store.Scan] to visit a subtree.
func Prefix(parts ...string) string {
	if len(parts) == 0 {
		return ""
	}
	return Key(parts[0], parts[1:]...) + string(Separator)
}

// ParseKey splits a key built by [Key] into its parts. A string that Key
// cannot produce (an unescaped byte outside the safe set, a malformed or
// lower-case escape, or an escape of a safe byte) is an error wrapping
// [ErrInvalidKey], so ParseKey and Key are exact inverses.
func ParseKey(key string) ([]string, error) {
	parts := make([]string, 0, strings.Count(key, string(Separator))+1)
	start := 0
	for i := 0; i <= len(key); i++ {
		if i < len(key) && key[i] != Separator {
			continue
		}
		p, err := unescape(key[start:i], start)
		if err != nil {
			return nil, err
		}
		parts = append(parts, p)
		start = i + 1
	}
	return parts, nil
}

// safe reports whether c is kept as is by Key (RFC 3986 unreserved).
func safe(c byte) bool { return keyesc.Safe[c] }

// escapedLen returns the length of s once escaped.
func escapedLen(s string) int {
	n := len(s)
	for i := 0; i < len(s); i++ {
		if !keyesc.Safe[s[i]] {
			n += 2
		}
	}
	return n
}

// appendEscaped writes s, escaped, to b: each run of safe bytes at once
// (keyesc.Append, written to a Builder so that Key allocates once).
func appendEscaped(b *strings.Builder, s string) {
	for len(s) > 0 {
		i := 0
		for i < len(s) && keyesc.Safe[s[i]] {
			i++
		}
		b.WriteString(s[:i])
		if i == len(s) {
			return
		}
		c := s[i]
		b.WriteByte('%')
		b.WriteByte(keyesc.UpperHex[c>>4])
		b.WriteByte(keyesc.UpperHex[c&0xF])
		s = s[i+1:]
	}
}

// unescape reverses appendEscaped, accepting only its exact output. offset is
// the position of s in the key, for error messages.
func unescape(s string, offset int) (string, error) {
	if !strings.Contains(s, "%") {
		for i := 0; i < len(s); i++ {
			if !safe(s[i]) {
				return "", keyError(offset+i, "unescaped byte 0x%02X", s[i])
			}
		}
		return s, nil
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case safe(c):
			b = append(b, c)
		case c == '%':
			if i+2 >= len(s) {
				return "", keyError(offset+i, "truncated escape %q", s[i:])
			}
			hi, lo := fromHex(s[i+1]), fromHex(s[i+2])
			if hi < 0 || lo < 0 {
				return "", keyError(offset+i, "malformed escape %q", s[i:i+3])
			}
			d := byte(hi<<4 | lo)
			if safe(d) {
				return "", keyError(offset+i, "needless escape %q", s[i:i+3])
			}
			b = append(b, d)
			i += 2
		default:
			return "", keyError(offset+i, "unescaped byte 0x%02X", c)
		}
	}
	return string(b), nil
}

// keyError returns an error of ParseKey about the byte at offset.
func keyError(offset int, format string, args ...any) error {
	return fmt.Errorf("%w: %s at offset %d", ErrInvalidKey, fmt.Sprintf(format, args...), offset)
}

// fromHex returns the value of the upper-case hex digit c, or -1.
func fromHex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}
