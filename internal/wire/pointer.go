package wire

import "strings"

// PointerToken escapes s as a JSON Pointer reference token (RFC 6901):
// "~" becomes "~0" and "/" becomes "~1".
func PointerToken(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// UnescapePointerToken is the inverse of PointerToken.
func UnescapePointerToken(tok string) string {
	if !strings.Contains(tok, "~") {
		return tok
	}
	return strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
}
