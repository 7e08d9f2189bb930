// Package keyesc is the escape of the parts of a store key (package store's
// Key): ASCII letters, digits and "-._~" (RFC 3986 unreserved) are kept as
// they are, every other byte becomes %XX in upper-case hex. store.Key and
// the keys the SDK builds in place on its hot paths (the task view's) share
// it, so that both always write the same key.
package keyesc

// UpperHex are the digits of an escape.
const UpperHex = "0123456789ABCDEF"

// Safe marks the bytes a key part keeps as they are.
var Safe = func() (t [256]bool) {
	for c := range len(t) {
		t[c] = 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
			c == '-' || c == '.' || c == '_' || c == '~'
	}
	return t
}()

// Append appends s escaped to dst, each run of safe bytes at once.
func Append[S string | []byte](dst []byte, s S) []byte {
	for len(s) > 0 {
		i := 0
		for i < len(s) && Safe[s[i]] {
			i++
		}
		dst = append(dst, s[:i]...)
		if i == len(s) {
			return dst
		}
		c := s[i]
		dst = append(dst, '%', UpperHex[c>>4], UpperHex[c&0xF])
		s = s[i+1:]
	}
	return dst
}
