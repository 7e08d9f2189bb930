package slug

import (
	"strings"
	"unicode/utf8"

	"github.com/gosimple/unidecode"
)

// This file holds the transliteration half of step 2 of the slug algorithm. The character table
// is the one of github.com/gosimple/unidecode (Apache License 2.0); the few code points on which
// it disagrees with the text-unidecode backend of python-slugify are listed in override.

// unknownMark is what the library returns for a character it knows but cannot transliterate
// (possibly followed by a space). A character without a transliteration disappears from the
// slug, so the mark counts as an empty transliteration.
const unknownMark = "[?]"

// override gives the transliteration of python-slugify's backend (text-unidecode) for the code
// points, reachable after NFKD, where the library's transliteration would give another slug:
//
//   - kana: the library writes Hepburn (shi, chi, tsu) where text-unidecode writes Kunrei (si,
//     ti, tu), so 東京タワーしち gives dong-jing-tawasiti in both;
//   - U+4E00 (一, "one"): the library has no transliteration for the first ideograph of its
//     table; text-unidecode gives "Yi ";
//   - Є (Ukrainian capital ie) is "E" in text-unidecode, as є is in both;
//   - € is "EUR" in text-unidecode, "EU" in the library;
//   - ẜ, ẝ and ẟ are unknown to the library and letters in text-unidecode;
//   - Ⅎ has no transliteration in text-unidecode (the library gives "F");
//   - the Hebrew paseq ׀ is "|" (a separator) in text-unidecode and empty in the library.
//
// Every entry is checked against python-slugify by the reference tests in testdata.
func override(r rune) (string, bool) {
	switch r {
	case '\u0404': // Є CYRILLIC CAPITAL LETTER UKRAINIAN IE
		return "E", true
	case '\u05C0': // ׀ HEBREW PUNCTUATION PASEQ
		return "|", true
	case '\u1E9C': // ẜ LATIN SMALL LETTER LONG S WITH DIAGONAL STROKE
		return "s", true
	case '\u1E9D': // ẝ LATIN SMALL LETTER LONG S WITH HIGH STROKE
		return "s", true
	case '\u1E9F': // ẟ LATIN SMALL LETTER DELTA
		return "d", true
	case '\u20AC': // € EURO SIGN
		return "EUR", true
	case '\u2132': // Ⅎ TURNED CAPITAL F
		return "", true
	case '\u3057': // し HIRAGANA LETTER SI
		return "si", true
	case '\u3061': // ち HIRAGANA LETTER TI
		return "ti", true
	case '\u3063': // っ HIRAGANA LETTER SMALL TU
		return "tu", true
	case '\u3064': // つ HIRAGANA LETTER TU
		return "tu", true
	case '\u30B7': // シ KATAKANA LETTER SI
		return "si", true
	case '\u30C1': // チ KATAKANA LETTER TI
		return "ti", true
	case '\u30C3': // ッ KATAKANA LETTER SMALL TU
		return "tu", true
	case '\u30C4': // ツ KATAKANA LETTER TU
		return "tu", true
	case '\u4E00': // 一 CJK UNIFIED IDEOGRAPH-4E00
		return "Yi ", true
	}
	return "", false
}

// transliterate returns the ASCII transliteration of the non-ASCII rune r, or "" when r has
// none. The case of the result is irrelevant to slugs (step 5 lowercases it).
func transliterate(r rune) string {
	if s, ok := override(r); ok {
		return s
	}
	return fromLibrary(unidecode.Unidecode(string(r)))
}

// fromLibrary maps the library's unknown mark to the empty transliteration.
func fromLibrary(s string) string {
	if strings.HasPrefix(s, unknownMark) {
		return ""
	}
	return s
}

// appendTransliterated implements the transliteration half of step 2: it appends s to dst with
// every non-ASCII rune replaced by its transliteration, which may be empty.
//
// Each span of s without an override is passed to the library in one call (the library keeps
// ASCII as is). When the result holds no unknown mark, no rune of the span produced one and it
// is the concatenation of the runes' transliterations; otherwise the span is transliterated rune
// by rune.
func appendTransliterated(dst []byte, s string) []byte {
	for start := 0; start < len(s); {
		end, ascii := start, true
		for end < len(s) {
			if s[end] < utf8.RuneSelf {
				end++
				continue
			}
			r, size := utf8.DecodeRuneInString(s[end:])
			if _, ok := override(r); ok {
				break
			}
			ascii = false
			end += size
		}
		span := s[start:end]
		if ascii {
			dst = append(dst, span...)
		} else if t := unidecode.Unidecode(span); !strings.Contains(t, unknownMark) {
			dst = append(dst, t...)
		} else {
			for _, r := range span {
				if r < utf8.RuneSelf {
					dst = append(dst, byte(r))
				} else {
					dst = append(dst, transliterate(r)...)
				}
			}
		}
		if end < len(s) { // s[end:] starts with a rune that has an override
			r, size := utf8.DecodeRuneInString(s[end:])
			o, _ := override(r)
			dst = append(dst, o...)
			end += size
		}
		start = end
	}
	return dst
}
