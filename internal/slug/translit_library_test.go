package slug

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gosimple/unidecode"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// libraryTransliterated is step 2's transliteration as it was written on
// github.com/gosimple/unidecode itself, before the table was generated from it: each span of s
// without an override is passed to the library in one call; when the result holds the library's
// unknown mark ("[?]"), the span is transliterated rune by rune, a rune whose transliteration
// starts with the mark giving none. It is the reference the generated table is held to.
func libraryTransliterated(s string) string {
	var dst []byte
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
		} else if t := unidecode.Unidecode(span); !strings.Contains(t, "[?]") {
			dst = append(dst, t...)
		} else {
			for _, r := range span {
				if r < utf8.RuneSelf {
					dst = append(dst, byte(r))
				} else if o, ok := override(r); ok {
					dst = append(dst, o...)
				} else if t := unidecode.Unidecode(string(r)); !strings.HasPrefix(t, "[?]") {
					dst = append(dst, t...)
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
	return string(dst)
}

// TestTableMatchesLibrary holds the generated table (translit_table.go) to the library it was
// generated from, on every non-ASCII code point of the Basic Multilingual Plane. After a change
// of the library's version, run go generate in this package.
func TestTableMatchesLibrary(t *testing.T) {
	require.Len(t, translitLens, 0x10000)
	mismatches := 0
	for r := rune(utf8.RuneSelf); r <= 0xFFFF; r++ {
		want := unidecode.Unidecode(string(r))
		if strings.HasPrefix(want, "[?]") {
			want = ""
		}
		if got := fromTable(r); got != want {
			mismatches++
			assert.Equal(t, want, got, "%U", r)
			if mismatches > 20 {
				t.Fatal("more than 20 code points differ: regenerate the table (go generate)")
			}
		}
	}
	for _, r := range []rune{0, 'a', utf8.RuneSelf - 1, 0x10000, 0x1F600, utf8.MaxRune, -1} {
		assert.Empty(t, fromTable(r), "%U", r)
	}
}

// TestTransliterateMatchesLibrary checks appendTransliterated against the library on strings
// mixing ASCII, overrides, runes without a transliteration, runes outside the Basic
// Multilingual Plane, invalid UTF-8, and runes whose transliterations together spell the
// library's unknown mark.
func TestTransliterateMatchesLibrary(t *testing.T) {
	spans := []string{
		"北京", "東京タワー", "しち一", "a北しb京", "\u3400北\u3400", "\uA500ẟ\uA501", "ЄвроЄ",
		"서울", "ẞ€✓", "\U0001F600北", "x\u282A?]y", "[\u3400]", "€", "Agent 北京 2", "",
		"a\xffb\xc3", "\xe4\xb8", "Ærø Straße",
	}
	for r := rune(0x80); r < 0x10000; r += 7 {
		spans = append(spans, string([]rune{r, r + 1, 'a', r + 2, 0x3400, r + 3}))
	}
	for _, s := range spans {
		got := appendTransliterated(nil, s)
		require.Equal(t, libraryTransliterated(s), string(got), "%+q", s)
		for _, c := range got {
			require.Less(t, c, byte(utf8.RuneSelf), "%+q gives non-ASCII %q", s, got)
		}
	}
}

func FuzzTransliterate(f *testing.F) {
	for _, s := range []string{"北京", "東京 タワー", "a\u3400b", "x\u282A?]y", "Є€一し", "Ærø", "a\xffb"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := string(appendTransliterated(nil, s)), libraryTransliterated(s); got != want {
			t.Fatalf("appendTransliterated(%+q) = %q, the library %q", s, got, want)
		}
	})
}
