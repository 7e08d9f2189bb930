package slug

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/text/unicode/norm"
)

// slugPattern is the shape of every slug (including the empty one).
var slugPattern = regexp.MustCompile(`^([a-z0-9]+(-[a-z0-9]+)*)?$`)

func TestMake(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		// The examples of the protocol.
		{"spec: spaces", "Research Agent", "research-agent"},
		{"spec: several words", "Hello World AI Agent", "hello-world-ai-agent"},
		{"spec: underscore", "agent_interviewer", "agent-interviewer"},
		{"spec: apostrophe and accent", "L'Équipe 2", "l-equipe-2"},
		{"spec: capitals", "Agent Name", "agent-name"},
		{"spec: named reference", "Caf&eacute;", "cafe"},
		{"spec: thousands separator", "1,000 agents", "1000-agents"},

		// Step 1: an apostrophe in the name separates words; a run counts once.
		{"apostrophe", "Don't Stop", "don-t-stop"},
		{"apostrophe run", "a'''b'c", "a-b-c"},
		{"typographic apostrophe is removed", "Don’t Stop", "dont-stop"},
		{"fullwidth apostrophe is removed", "a\uFF07b", "ab"},

		// Step 3.
		{"amp", "R&amp;D", "r-d"},
		{"uppercase name is not HTML 4", "&AMP;", "amp"},
		{"apos is not HTML 4", "It&apos;s", "it-apos-s"},
		{"decimal apostrophe is removed", "It&#39;s", "its"},
		{"hex apostrophe is removed", "It&#x27;s", "its"},
		{"uppercase X is not decoded", "&#X27;", "x27"},
		{"missing semicolon", "&amp", "amp"},
		{"accent after decoding becomes a separator", "Caf&eacute;s", "cafe-s"},
		{"passes run in order", "&amp;#39;", ""},
		{"no second named pass", "&#38;amp;", "amp"},
		{"out of range cancels the decimal pass", "&#39;&#99999999;", "39-99999999"},
		{"out of range cancels only its pass", "a&#x110000;&#39;b", "a-x110000-b"},
		{"NFKD after decoding", "&frac12;", "1-2"},
		{"decoded comma between digits", "1&#44;000", "1000"},

		// Step 7.
		{"commas between digits", "1,2,3", "123"},
		{"double comma", "1,,2", "1-2"},
		{"comma next to a letter", "a,1", "a-1"},
		{"apostrophe removed before step 7", "1&#39;,2", "12"},

		// Steps 8 and 9.
		{"empty", "", ""},
		{"spaces only", "   ", ""},
		{"symbols only", "!@#$%^*()", ""},
		{"dashes only", "---", ""},
		{"leading and trailing separators", " -Agent- ", "agent"},
		{"separator runs", "a -_. b", "a-b"},
		{"dots", "v1.2.3", "v1-2-3"},
		{"control characters", "a\x00b\tc\nd", "a-b-c-d"},

		// Step 2.
		{"sharp s", "Straße", "strasse"},
		{"capital sharp s", "ẞ", "ss"},
		{"oe ligature", "Œuvre", "oeuvre"},
		{"slashed o", "søster", "soster"},
		{"ae and o", "Ærø", "aero"},
		{"thorn and eth", "Þórr Ðan", "thorr-dan"},
		{"stroke letters", "łódź đak ħ", "lodz-dak-h"},
		{"dotless and dotted i", "ılık İstanbul", "ilik-istanbul"},
		{"ij and eng and long s", "Ĳssel ŋa ſtop", "ijssel-nga-stop"},
		{"Cyrillic", "Жёлтый щит", "zheltyi-shchit"},
		{"Cyrillic iu ia", "Щука Юла Яма", "shchuka-iula-iama"},
		{"Cyrillic hard and soft signs vanish", "Подъезд объём Русь", "podezd-obem-rus"},
		{"Serbian", "Ђорђе", "djordje"},
		{"Greek", "Ελλάδα", "ellada"},
		{"Greek capitals", "ΣΊΣΥΦΟΣ", "sisuphos"},
		{"typographic quotes", "“Quoted” ‘single’", "quoted-single"},
		{"dashes", "en–dash em—dash", "en-dash-em-dash"},
		{"ellipsis", "wait…", "wait"},
		{"currency", "€5 £5", "eur5-ps5"},
		{"copyright and trade marks", "© ® ™", "c-r-tm"},
		{"multiplication and degree", "3×4 20°C", "3x4-20degc"},
		{"vulgar fraction", "½ price", "1-2-price"},
		{"no-break space", "non\u00a0breaking", "non-breaking"},
		{"fullwidth letters", "Ａｇｅｎｔ", "agent"},
		{"ligature", "ﬁle", "file"},
		{"superscript", "x²", "x2"},
		{"roman numeral", "Ⅻ", "xii"},
		{"arrow", "a→b", "a-b"},
		{"combining mark", "x\u0301y", "xy"},

		// Other scripts.
		{"Chinese", "北京", "bei-jing"},
		{"Japanese", "東京 タワー", "dong-jing-tawa"},
		{"Korean", "서울", "seoul"},
		{"Chinese and Latin", "北京 Agent", "bei-jing-agent"},
		{"kana as text-unidecode writes it", "しちつ シチツ", "sititu-sititu"},
		{"ideograph one", "一号", "yi-hao"},
		{"Ukrainian", "Європа", "evropa"},
		{"Hebrew", "עברית", "bryt"},
		{"Arabic", "مرحبا", "mrhb"},
		{"Devanagari", "नमस्ते", "nmste"},
		{"Thai", "สวัสดี", "swasdii"},

		// Characters without a transliteration disappear.
		{"CJK Extension A", "a\u3400b", "ab"},
		{"rupee sign", "a₹b", "ab"},
		{"private use", "Agent\uE000Smith", "agentsmith"},
		{"emoji are dropped", "Agent 😀 Smith", "agent-smith"},
		{"emoji only", "😀🚀", ""},

		// Invalid UTF-8 bytes are dropped.
		{"invalid UTF-8", "a\xffb\xc3", "ab"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := Make(tt.in)
			assert.Equal(t, tt.want, got, "Make(%q)", tt.in)
			assert.Regexp(t, slugPattern, got)
		})
	}
}

// TestMakePythonReference compares Make with python-slugify on testdata/python_slugify.json.
//
// The expected slugs were produced by python-slugify's slugify() with default options and the
// text-unidecode 1.3 backend, under CPython 3.11 (Unicode 14.0); pyref/slugref.py reproduces
// every one of them. The inputs are the examples above, every code point of U+0080–U+04FF and
// U+1E00–U+21FF between "A" and "b", and random mixes of such code points, ASCII punctuation and
// character references, leaving out the code points text-unidecode marks as unknown.
func TestMakePythonReference(t *testing.T) {
	cases := loadReference(t, "python_slugify.json")
	require.Len(t, cases, 3402)
	for _, c := range cases {
		if got := Make(c.Name); got != c.Slug {
			t.Errorf("Make(%+q) = %q, python-slugify gives %q", c.Name, got, c.Slug)
		}
	}
}

// TestMakePythonScripts compares Make with python-slugify on the multi-script corpus of
// testdata/python_slugify_scripts.json, written by "pyref/slugref.py corpus": every character
// of the Latin, Greek, Cyrillic, kana, Arabic, Hebrew, Devanagari, Thai, Armenian and Georgian
// blocks and of several symbol blocks, real words, random names in each script (CJK and Hangul
// included), mixed scripts, separator and punctuation runs and very long names. Characters that
// text-unidecode marks as unknown are left out: python-slugify turns them into a separator,
// while Make drops them (see the package documentation).
func TestMakePythonScripts(t *testing.T) {
	cases := loadReference(t, "python_slugify_scripts.json")
	require.GreaterOrEqual(t, len(cases), 2000)
	for _, c := range cases {
		if got := Make(c.Name); got != c.Slug {
			t.Errorf("Make(%+q) = %q, python-slugify gives %q", c.Name, got, c.Slug)
		}
	}
}

func TestMakeIdempotent(t *testing.T) {
	for _, file := range []string{"python_slugify.json", "python_slugify_scripts.json"} {
		for _, c := range loadReference(t, file) {
			assert.Equal(t, c.Slug, Make(c.Slug), "Make(%q)", c.Slug)
		}
	}
}

type referenceCase struct {
	Name string `json:"name"`
	Slug string `json:"slug"`
}

func loadReference(t *testing.T, file string) []referenceCase {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", file))
	require.NoError(t, err)
	var cases []referenceCase
	require.NoError(t, json.Unmarshal(data, &cases))
	return cases
}

func TestDecodeReferences(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"nothing", "plain text", "plain text"},
		{"named", "&eacute;&Eacute;&amp;&nbsp;", "é\u00c9&\u00a0"},
		{"name with digits", "&frac12;&sup2;", "½²"},
		{"unknown name", "&bogus;&AMP;&apos;", "&bogus;&AMP;&apos;"},
		{"no name", "&;", "&;"},
		{"no semicolon", "&amp &#39 &#x27", "&amp &#39 &#x27"},
		{"decimal", "&#65;&#0066;&#233;", "ABé"},
		{"hex", "&#x41;&#x0042;&#xE9;&#xe9;", "ABéé"},
		{"uppercase X", "&#X41;", "&#X41;"},
		{"empty numbers", "&#;&#x;", "&#;&#x;"},
		{"bad hex digit", "&#x4G;", "&#x4G;"},
		{"max code point", "&#1114111;&#x10FFFF;", "\U0010FFFF\U0010FFFF"},
		{"decimal out of range", "&#65;&#1114112;&#x41;", "&#65;&#1114112;A"},
		{"hex out of range", "&#65;&#x41;&#x110000;", "A&#x41;&#x110000;"},
		{"huge number", "&#x" + strings.Repeat("f", 40) + ";&#x41;", "&#x" + strings.Repeat("f", 40) + ";&#x41;"},
		{"too many decimal digits", "&#" + strings.Repeat("0", 4299) + "65;", "&#" + strings.Repeat("0", 4299) + "65;"},
		{"longest decimal", "&#" + strings.Repeat("0", 4298) + "65;", "A"},
		{"long hex has no limit", "&#x" + strings.Repeat("0", 5000) + "41;", "A"},
		{"surrogate", "&#xD800;", "\uFFFD"},
		{"nul", "&#0;", "\x00"},
		{"named then decimal", "&amp;#65;", "A"},
		{"decimal then hex", "&#38;#x41;", "A"},
		{"hex then nothing", "&#x26;amp;", "&amp;"},
		{"decimal digit for the hex pass", "&#x&#1633;;", "\x01"},
		{"Thai digit for the hex pass", "&#x&#3665;&#3664;;", "\x10"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.want, string(decodeReferences([]byte(tt.in))))
		})
	}
}

func TestDecimalDigitValue(t *testing.T) {
	// Every decimal digit whose compatibility decomposition is an ASCII digit (fullwidth,
	// mathematical) must have that digit's value.
	checked := 0
	for r := rune(utf8.RuneSelf); r <= unicode.MaxRune; r++ {
		if !unicode.IsDigit(r) {
			continue
		}
		d := norm.NFKD.String(string(r))
		if len(d) == 1 && '0' <= d[0] && d[0] <= '9' {
			assert.Equal(t, int(d[0]-'0'), decimalDigitValue(r), "%U", r)
			checked++
		}
	}
	assert.Greater(t, checked, 50)
	assert.Equal(t, 7, decimalDigitValue('٧')) // ARABIC-INDIC DIGIT SEVEN
	assert.Equal(t, 3, decimalDigitValue('३')) // DEVANAGARI DIGIT THREE
	assert.Equal(t, 9, decimalDigitValue('๙')) // THAI DIGIT NINE
	assert.Equal(t, 0, decimalDigitValue('𝟎')) // MATHEMATICAL BOLD DIGIT ZERO
}

func TestTransliterate(t *testing.T) {
	tests := map[rune]string{
		'ß': "ss", 'æ': "ae", 'Æ': "AE", 'œ': "oe", 'Œ': "OE", 'ø': "o", 'Ø': "O", 'đ': "d",
		'Đ': "D", 'ł': "l", 'Ł': "L", 'þ': "th", 'Þ': "Th", 'ð': "d", 'Ð': "D", 'ħ': "h",
		'ı': "i", 'ĳ': "ij", 'ſ': "s", 'Ж': "Zh", 'х': "kh", 'ц': "ts", 'ч': "ch", 'ш': "sh",
		'щ': "shch", 'ю': "iu", 'я': "ia", 'Ψ': "Ps", 'θ': "th",
		'‘': "'", '’': "'", '“': "\"", '”': "\"", '–': "-", '—': "--", '€': "EUR",
		'£': "PS", '©': "(c)", '®': "(r)", '×': "x", '°': "deg", '\u0301': "",
		'北': "Bei ", '京': "Jing ", 'タ': "ta", 'し': "si", 'ツ': "tu", '一': "Yi ",
		'ᄉ': "s", 'ᅥ': "eo", 'ᆯ': "l", 'א': "", 'ש': "sh", 'ก': "k", 'क': "k",
		'Є': "E", 'є': "ie", '׀': "|", 'Ⅎ': "", 'ẟ': "d",
		// Unknown to the library: no transliteration.
		'\u3400': "", '\uE000': "", '\uA500': "",
		// Outside the Basic Multilingual Plane: no transliteration.
		'😀': "", '\U00010000': "", '\U0010FFFF': "",
	}
	for r, want := range tests {
		assert.Equal(t, want, transliterate(r), "%U %c", r, r)
		assert.Equal(t, want, string(appendTransliterated(nil, string(r))), "%U %c", r, r)
	}
}

func FuzzMake(f *testing.F) {
	for _, s := range []string{
		"Research Agent", "L'Équipe 2", "Caf&eacute;", "1,000 agents", "&#x&#1633;;",
		"&amp;#39;", "&#39;&#99999999;", "Жёлтый щит", "Ελλάδα", "a\xffb", "½ ™ …", "&#65287;",
		"北京", "東京 タワー", "서울", "しちつ一€Є", "\u3400\uE000😀", "عربي עברית हिन्दी ไทย",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Make(s)
		if !slugPattern.MatchString(got) {
			t.Fatalf("Make(%q) = %q, not a slug", s, got)
		}
		if again := Make(got); again != got {
			t.Fatalf("Make(%q) = %q, but Make(%q) = %q", s, got, got, again)
		}
	})
}

func BenchmarkMake(b *testing.B) {
	for _, bb := range []struct{ name, in string }{
		{"ascii", "Research Agent"},
		{"accented", "L'Équipe de Recherche 2"},
		{"references", "R&amp;D Caf&eacute; &#39;2&#x27;"},
		{"cyrillic", "Исследовательский агент"},
		{"cjk", "北京研究代理"},
		{"mixed", "東京 タワー Agent 서울 2"},
	} {
		b.Run(bb.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Make(bb.in)
			}
		})
	}
}
