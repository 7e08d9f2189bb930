// Package slug derives an agent's identity from its name: the slug and the legacy agent id,
// exactly as the Python reference SDK does.
//
// [Make] reproduces python-slugify's slugify() with its default options and its default
// transliteration backend, text-unidecode (python-slugify switches to the Unidecode package when
// text-unidecode is not installed; the two disagree on some characters such as Є, ℗ and Ⅎ).
// [LegacyAgentID] reproduces the reference's shortuuid-based id.
//
// # Transliteration coverage
//
// Step 2 of the slug algorithm normalizes the name to NFKD, then transliterates each remaining
// non-ASCII code point of the Basic Multilingual Plane with the table of
// github.com/gosimple/unidecode (Apache License 2.0; a copy generated from it, translit_table.go,
// whose license is LICENSE.unidecode, so that no table of pointers is left for the garbage
// collector to scan): Latin, Greek, Cyrillic, Armenian, Hebrew,
// Arabic, the Indic scripts, Thai, Georgian, Hangul, kana, CJK ideographs, and most symbols.
// Sixteen code points on which that table and text-unidecode would give different slugs follow
// text-unidecode (see override in translit.go): kana written in Kunrei style (し → si, つ → tu),
// 一 → yi, Є → e, € → eur, ẜ, ẝ, ẟ, Ⅎ and the Hebrew paseq.
//
// Examples: "Ærø Straße" → "aero-strasse", "Жёлтый щит" → "zheltyi-shchit",
// "Ελλάδα" → "ellada", "北京" → "bei-jing", "東京 タワー" → "dong-jing-tawa", "서울" → "seoul",
// "Café – 50 € ©" → "cafe-50-eur-c".
//
// A character without a transliteration disappears: code points outside the Basic Multilingual
// Plane (most emoji), private-use characters, and characters the table does not know (CJK
// Extension A, Vai, Tai Tham, Balinese and other recent or rare scripts). A name whose slug comes
// out empty is rejected by agent construction.
//
// # Known differences from python-slugify
//
// text-unidecode marks the characters it does not know with "[?]", which python-slugify turns
// into a separator ("a\u3400b" gives "a-b" there and "ab" here, where the character simply
// disappears): CJK Extension A, the private-use area, and many symbols and rare scripts. Of the
// characters it marks, 44 have a transliteration in the table and keep it here (Latin
// Extended-C letters such as ⱡ, Phonetic Extensions letters such as ᵬ, and ⅎ). On every other
// character of the Basic Multilingual Plane, Make agrees with python-slugify; the conformance
// tests (make conformance-slug) check this against the real python-slugify.
//
// Normalization uses golang.org/x/text, whose Unicode version may differ from the Python
// interpreter's for recently assigned characters.
package slug
