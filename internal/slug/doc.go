// Package slug derives an agent's identity from its name: the slug (registration.md §2.1) and
// the legacy agent id (registration.md §2.3), exactly as the Python reference SDK does.
//
// [Make] reproduces python-slugify's slugify() with its default options and its default
// transliteration backend, text-unidecode (python-slugify switches to the Unidecode package when
// that is installed; the two disagree on a handful of covered characters such as Є, ℗ and Ⅎ).
// [LegacyAgentID] reproduces the reference's shortuuid-based id.
//
// # Transliteration coverage
//
// Step 2 of the slug algorithm normalizes the name to NFKD, then transliterates each remaining
// non-ASCII code point with a table taken from text-unidecode for these ranges:
//
//   - U+0080–U+04FF: Latin-1 Supplement, Latin Extended-A and -B, IPA Extensions, Spacing
//     Modifier Letters, Combining Diacritical Marks, Greek and Coptic, Cyrillic;
//   - U+1E00–U+21FF: Latin Extended Additional, Greek Extended, General Punctuation,
//     Superscripts and Subscripts, Currency Symbols, Letterlike Symbols, Number Forms, Arrows.
//
// NFKD first reduces many other characters to these ranges or to ASCII: fullwidth forms,
// ligatures such as ﬁ, circled and superscript digits, vulgar fractions, the ideographic space.
// Examples: "Ærø Straße" → "aero-strasse", "Жёлтый щит" → "zheltyi-shchit",
// "Ελλάδα" → "ellada", "Café – 50 € ©" → "cafe-50-eur-c".
//
// # Known differences from python-slugify
//
// Any other code point has no transliteration and disappears, as the spec says. text-unidecode
// covers the whole Basic Multilingual Plane, so for such characters the slugs differ:
//
//   - CJK ideographs, kana, Hangul, and the Armenian, Hebrew, Arabic, Indic, Thai, Georgian,
//     Ethiopic and other scripts are dropped here, while python-slugify romanizes them
//     ("北京" gives "bei-jing" there and "" here);
//   - symbols outside the covered ranges (mathematical operators, box drawing, dingbats,
//     emoji of the Basic Multilingual Plane) are dropped here; text-unidecode gives some of
//     them an ASCII form, most often punctuation, which becomes a separator;
//   - the few code points inside the covered ranges that text-unidecode marks as unknown
//     (mostly unassigned ones) are dropped here, where text-unidecode inserts "[?]", which
//     becomes a separator;
//   - ℶ, ℷ and ℸ (U+2136–U+2138) decompose to Hebrew letters, which are dropped here.
//
// Outside the Basic Multilingual Plane (emoji, for instance) both implementations drop every
// character. Normalization uses golang.org/x/text, whose Unicode version may differ from the
// Python interpreter's for recently assigned characters.
package slug
