package slug

import (
	"unicode"
	"unicode/utf8"
)

// maxDecimalDigits is the longest decimal digit string CPython (3.11 and later) converts with
// int(); python-slugify's decimal pass fails as a whole on a longer one.
const maxDecimalDigits = 4300

// decodeReferences implements step 3 of the slug algorithm (see Make). It runs the three passes
// of python-slugify in its order, each on the output of the previous one:
//
//  1. named references: &name; where name is one of the 252 HTML 4 entity names (case-sensitive);
//  2. decimal references: &#<digits>;
//  3. hexadecimal references: &#x<hex digits>; (lowercase x only).
//
// Anything else, such as &AMP;, &apos;, &#X27; or a reference without its ';', is left as is.
// Because the passes are sequential, "&amp;#39;" becomes "'" while "&#38;amp;" becomes "&amp;".
//
// A numeric pass in which one reference is out of range (above U+10FFFF, or more than
// maxDecimalDigits decimal digits) decodes nothing at all: python-slugify swallows the exception
// raised by that reference and keeps the text of the whole pass unchanged.
//
// decodeReferences returns b itself when nothing is decoded.
func decodeReferences(b []byte) []byte {
	b = decodeNamed(b)
	b = decodeNumeric(b, 10)
	return decodeNumeric(b, 16)
}

// decodeNamed decodes the HTML 4 named character references in b.
func decodeNamed(b []byte) []byte {
	var out []byte
	copied := 0 // b[:copied] has been handled
	for i := 0; i < len(b); i++ {
		if b[i] != '&' {
			continue
		}
		end := i + 1
		for end < len(b) && isASCIIAlnum(b[end]) {
			end++
		}
		if end == len(b) || b[end] != ';' {
			continue
		}
		r, ok := html4Entities[string(b[i+1:end])]
		if !ok {
			continue
		}
		out = append(out, b[copied:i]...)
		out = utf8.AppendRune(out, r)
		copied = end + 1
		i = end
	}
	if copied == 0 {
		return b
	}
	return append(out, b[copied:]...)
}

// decodeNumeric decodes the numeric character references in b: &#<digits>; when base is 10,
// &#x<hex digits>; when base is 16.
func decodeNumeric(b []byte, base int) []byte {
	prefix := "&#"
	if base == 16 {
		prefix = "&#x"
	}
	var out []byte
	copied := 0 // b[:copied] has been handled
	for i := 0; i < len(b); i++ {
		if b[i] != '&' || !hasPrefix(b[i:], prefix) {
			continue
		}
		value, end, ok := parseNumber(b, i+len(prefix), base)
		if !ok {
			continue
		}
		if value < 0 {
			return b // out of range: the whole pass fails
		}
		out = append(out, b[copied:i]...)
		// Surrogates cannot be encoded in UTF-8 and become U+FFFD; like any other non-ASCII
		// rune left after step 4, they end up as a separator.
		out = utf8.AppendRune(out, value)
		copied = end + 1
		i = end
	}
	if copied == 0 {
		return b
	}
	return append(out, b[copied:]...)
}

// parseNumber reads one or more digits of the given base starting at b[start], followed by
// ';'. It reports ok = false when there is no such sequence; otherwise end is the index of the
// ';' and value is the code point, or -1 when the number is out of range.
func parseNumber(b []byte, start, base int) (value rune, end int, ok bool) {
	var v, digits int
	end = start
	for end < len(b) {
		r, size := utf8.DecodeRune(b[end:])
		d, isDigit := digitValue(r, base)
		if !isDigit {
			break
		}
		if v <= unicode.MaxRune {
			v = v*base + d
		}
		digits++
		end += size
	}
	if digits == 0 || end == len(b) || b[end] != ';' {
		return 0, 0, false
	}
	if v > unicode.MaxRune || (base == 10 && digits > maxDecimalDigits) {
		return -1, end, true
	}
	return rune(v), end, true
}

// digitValue returns the value of r as a digit in base 10 or 16, as CPython reads a string
// matched by python-slugify's \d and [\da-fA-F]: ASCII digits, any other Unicode decimal digit
// (category Nd), and in base 16 the letters a–f and A–F. Non-ASCII digits can only come from an
// earlier pass, as in "&#x&#1633;;" (ARABIC-INDIC DIGIT ONE, then "&#x1;").
func digitValue(r rune, base int) (int, bool) {
	switch {
	case '0' <= r && r <= '9':
		return int(r - '0'), true
	case base == 16 && 'a' <= r && r <= 'f':
		return int(r-'a') + 10, true
	case base == 16 && 'A' <= r && r <= 'F':
		return int(r-'A') + 10, true
	case r >= utf8.RuneSelf && unicode.IsDigit(r):
		return decimalDigitValue(r), true
	default:
		return 0, false
	}
}

// decimalDigitValue returns the value of the decimal digit r (category Nd). Unicode assigns
// decimal digits only in contiguous runs from 0 to 9, so the value is the offset of r in its
// range of the Nd table, modulo 10.
func decimalDigitValue(r rune) int {
	for _, rg := range unicode.Nd.R16 {
		if uint32(rg.Lo) <= uint32(r) && uint32(r) <= uint32(rg.Hi) {
			return int((uint32(r)-uint32(rg.Lo))/uint32(rg.Stride)) % 10
		}
	}
	for _, rg := range unicode.Nd.R32 {
		if rg.Lo <= uint32(r) && uint32(r) <= rg.Hi {
			return int((uint32(r)-rg.Lo)/rg.Stride) % 10
		}
	}
	return 0
}

// hasPrefix reports whether b starts with prefix.
func hasPrefix(b []byte, prefix string) bool {
	return len(b) >= len(prefix) && string(b[:len(prefix)]) == prefix
}

// isASCIIAlnum reports whether c is an ASCII letter or digit.
func isASCIIAlnum(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}
