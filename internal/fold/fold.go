// Package fold folds object keys the way encoding/json matches them to
// struct fields, for the checks that refuse keys differing only in case.
package fold

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Key folds a key the way encoding/json matches object keys to struct
// fields (the folding of bytes.EqualFold): two keys fold alike exactly when
// encoding/json would read them into the same field. Use it to refuse keys that
// differ from a declared key only in letter case. strings.ToLower is not
// enough: the long s (U+017F) matches "s" and the Kelvin sign (U+212A) "k".
func Key(k string) string {
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
