package slug

import (
	"bytes"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Make returns the slug of an agent name, following the nine steps of the protocol's slug
// derivation (python-slugify with its default options):
//
//  1. replace each run of apostrophes (') with '-';
//  2. normalize to NFKD and transliterate to ASCII (see the package documentation);
//  3. decode HTML 4 named, decimal and lowercase-x hexadecimal character references;
//  4. normalize to NFKD again, without transliterating;
//  5. lowercase;
//  6. remove the remaining apostrophes;
//  7. remove each comma placed between two digits;
//  8. replace each run of characters outside [a-z0-9-] with '-';
//  9. collapse runs of '-' and trim '-' at both ends.
//
// The result matches ^([a-z0-9]+(-[a-z0-9]+)*)?$; it is empty when name has no letter or digit
// that survives these steps. Invalid UTF-8 bytes in name are dropped first, as Python does when
// it decodes bytes with errors="ignore". Make is idempotent: Make(Make(s)) == Make(s).
func Make(name string) string {
	if !utf8.ValidString(name) {
		name = strings.ToValidUTF8(name, "")
	}
	// Step 1 must run before NFKD: an apostrophe that NFKD produces (from U+FF07 FULLWIDTH
	// APOSTROPHE, say) is removed in step 6 instead of becoming a separator.
	name = norm.NFKD.String(replaceApostropheRuns(name))

	var scratch [64]byte
	b := appendTransliterated(scratch[:0], name) // step 2; b is ASCII
	if bytes.IndexByte(b, '&') >= 0 {
		b = decodeReferences(b) // step 3
		if !isASCII(b) {
			// Step 4. norm lets its argument escape; the clone keeps scratch on the stack.
			b = norm.NFKD.Bytes(bytes.Clone(b))
		}
	}
	return finish(b)
}

// isASCII reports whether b holds only ASCII bytes.
func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// replaceApostropheRuns implements step 1: each run of ASCII apostrophes becomes one '-'.
func replaceApostropheRuns(s string) string {
	if strings.IndexByte(s, '\'') < 0 {
		return s
	}
	var sb strings.Builder
	sb.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != '\'' {
			sb.WriteByte(s[i])
			continue
		}
		sb.WriteByte('-')
		for i+1 < len(s) && s[i+1] == '\'' {
			i++
		}
	}
	return sb.String()
}

// finish implements steps 5 to 9 in one pass over b, the output of step 4. Only ASCII matters
// here: after NFKD, the only characters whose lowercase form is ASCII are the ASCII capitals,
// and every non-ASCII byte falls in a run that step 8 replaces with '-'.
//
// Steps 8 and 9 together keep the runs of [a-z0-9] and join them with single '-'.
//
// Step 7 removes a comma whose neighbours in the text left by step 6 are both digits. Python's
// \d also matches non-ASCII digits, but such a digit is itself replaced in step 8 by a '-' that
// absorbs the comma, so checking ASCII digits gives the same slug.
func finish(b []byte) string {
	var sb strings.Builder
	sb.Grow(len(b))
	pendingSep := false
	var prev byte // previous byte of the text left by step 6
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A' // step 5
		}
		switch {
		case c == '\'':
			continue // step 6
		case c == ',' && isASCIIDigit(prev) && isASCIIDigit(nextAfterApostrophes(b, i+1)):
			continue // step 7; prev stays the digit before the comma
		case '0' <= c && c <= '9' || 'a' <= c && c <= 'z':
			if pendingSep && sb.Len() > 0 {
				sb.WriteByte('-')
			}
			pendingSep = false
			sb.WriteByte(c)
		default:
			pendingSep = true // steps 8 and 9
		}
		prev = c
	}
	return sb.String()
}

// nextAfterApostrophes returns the first byte of b[i:] that is not an apostrophe, or 0.
func nextAfterApostrophes(b []byte, i int) byte {
	for ; i < len(b); i++ {
		if b[i] != '\'' {
			return b[i]
		}
	}
	return 0
}

// isASCIIDigit reports whether c is an ASCII digit.
func isASCIIDigit(c byte) bool { return '0' <= c && c <= '9' }
