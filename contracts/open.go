package contracts

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Extra holds the keys of an open model that its Go type does not declare.
// They survive a decode/encode round trip unchanged and are written after the
// declared keys, in key order. A declared key never comes from Extra.
type Extra map[string]json.RawMessage

// foldedKeyError reports a key that differs from a declared key only in letter case.
type foldedKeyError struct{ key, declared string }

func (e *foldedKeyError) Error() string { return "contracts: " + e.message() }

func (e *foldedKeyError) message() string {
	return fmt.Sprintf("key %q differs from %q only in letter case", e.key, e.declared)
}

// FoldKey folds an object key the way encoding/json matches object keys to
// struct fields (the folding of bytes.EqualFold): two keys fold alike exactly
// when encoding/json would read them into the same field. [Unmarshal] and the
// Validator refuse a key that folds like a declared key without being it;
// code that checks keys of its own (resource fields, request keys) folds them
// with FoldKey to refuse the same keys. strings.ToLower is not enough: the
// long s (U+017F) matches "s" and the Kelvin sign (U+212A) "k".
func FoldKey(k string) string {
	var b strings.Builder
	b.Grow(len(k))
	for _, r := range k {
		if r < utf8.RuneSelf {
			if 'a' <= r && r <= 'z' {
				r -= 'a' - 'A'
			}
			b.WriteByte(byte(r))
			continue
		}
		b.WriteRune(foldRune(r))
	}
	return b.String()
}

// foldRune returns the smallest rune of r's case-folding orbit.
func foldRune(r rune) rune {
	for {
		r2 := unicode.SimpleFold(r)
		if r2 <= r {
			return r2
		}
		r = r2
	}
}
