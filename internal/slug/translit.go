package slug

import (
	"strings"
	"unicode/utf8"

	"github.com/gosimple/unidecode"
)

// This file holds the transliteration half of step 2 of the slug algorithm. The character table
// is the one of github.com/gosimple/unidecode (Apache License 2.0); the few code points on which
// it disagrees with the text-unidecode backend of python-slugify are listed in overrides.

// unknownMark is what the library returns for a character it knows but cannot transliterate
// (possibly followed by a space). A character without a transliteration disappears from the
// slug, so the mark counts as an empty transliteration.
const unknownMark = "[?]"

// overrides gives the transliteration of python-slugify's backend (text-unidecode) for the code
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
var overrides = map[rune]string{
	'\u0404': "E",   // Є CYRILLIC CAPITAL LETTER UKRAINIAN IE
	'\u05C0': "|",   // ׀ HEBREW PUNCTUATION PASEQ
	'\u1E9C': "s",   // ẜ LATIN SMALL LETTER LONG S WITH DIAGONAL STROKE
	'\u1E9D': "s",   // ẝ LATIN SMALL LETTER LONG S WITH HIGH STROKE
	'\u1E9F': "d",   // ẟ LATIN SMALL LETTER DELTA
	'\u20AC': "EUR", // € EURO SIGN
	'\u2132': "",    // Ⅎ TURNED CAPITAL F
	'\u3057': "si",  // し HIRAGANA LETTER SI
	'\u3061': "ti",  // ち HIRAGANA LETTER TI
	'\u3063': "tu",  // っ HIRAGANA LETTER SMALL TU
	'\u3064': "tu",  // つ HIRAGANA LETTER TU
	'\u30B7': "si",  // シ KATAKANA LETTER SI
	'\u30C1': "ti",  // チ KATAKANA LETTER TI
	'\u30C3': "tu",  // ッ KATAKANA LETTER SMALL TU
	'\u30C4': "tu",  // ツ KATAKANA LETTER TU
	'\u4E00': "Yi ", // 一 CJK UNIFIED IDEOGRAPH-4E00
}

// transliterate returns the ASCII transliteration of the non-ASCII rune r, or "" when r has
// none. The case of the result is irrelevant to slugs (step 5 lowercases it).
func transliterate(r rune) string {
	if s, ok := overrides[r]; ok {
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
// Each run of non-ASCII runes without an override is passed to the library in one call. When the
// result holds no unknown mark, no rune of the run produced one and it is the concatenation of
// the runes' transliterations; otherwise the run is transliterated rune by rune.
func appendTransliterated(dst []byte, s string) []byte {
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			dst = append(dst, c)
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if o, ok := overrides[r]; ok {
			dst = append(dst, o...)
			i += size
			continue
		}
		j := i + size
		for j < len(s) && s[j] >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[j:])
			if _, ok := overrides[r]; ok {
				break
			}
			j += size
		}
		if t := unidecode.Unidecode(s[i:j]); !strings.Contains(t, unknownMark) {
			dst = append(dst, t...)
		} else {
			for _, r := range s[i:j] {
				dst = append(dst, transliterate(r)...)
			}
		}
		i = j
	}
	return dst
}
