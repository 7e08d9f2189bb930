//go:build conformance

package slug

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The tests of this file compare Make with slugs that the real python-slugify has just written
// into the folder named by SUPERVAIZER_SLUG_REFERENCE ("make conformance-slug" runs
// pyref/slugref.py there, then these tests).

func referenceDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("SUPERVAIZER_SLUG_REFERENCE")
	require.NotEmpty(t, dir, "SUPERVAIZER_SLUG_REFERENCE must name the folder written by pyref/slugref.py (run make conformance-slug)")
	return dir
}

// TestConformancePythonScripts compares Make with python-slugify on the freshly generated
// multi-script corpus, and the corpus with the committed one (stale testdata fails here too).
func TestConformancePythonScripts(t *testing.T) {
	fresh, err := os.ReadFile(filepath.Join(referenceDir(t), "python_slugify_scripts.json"))
	require.NoError(t, err)
	committed, err := os.ReadFile(filepath.Join("testdata", "python_slugify_scripts.json"))
	require.NoError(t, err)
	assert.True(t, string(fresh) == string(committed),
		"testdata/python_slugify_scripts.json is stale: regenerate it with pyref/slugref.py corpus")

	var cases []referenceCase
	require.NoError(t, json.Unmarshal(fresh, &cases))
	require.GreaterOrEqual(t, len(cases), 2000)
	for _, c := range cases {
		if got := Make(c.Name); got != c.Slug {
			t.Errorf("Make(%+q) = %q, python-slugify gives %q", c.Name, got, c.Slug)
		}
	}
}

// sweepCase is one code point of the Basic Multilingual Plane between "a" and "b".
type sweepCase struct {
	Name     string `json:"name"`
	Slug     string `json:"slug"`
	Unknown  bool   `json:"unknown"`  // text-unidecode marks a character of its NFKD form "[?]"
	Assigned bool   `json:"assigned"` // assigned in the Python interpreter's Unicode version
}

// TestConformancePythonSweep compares Make with python-slugify for every code point of the
// Basic Multilingual Plane. They must agree except where text-unidecode has no transliteration
// and marks the character "[?]", which python-slugify turns into a separator: there the
// character either disappears (the rule of Make) or keeps the library's transliteration.
// Code points unassigned in the Python interpreter's Unicode version are reported, not checked.
func TestConformancePythonSweep(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(referenceDir(t), "sweep.json"))
	require.NoError(t, err)
	var cases []sweepCase
	require.NoError(t, json.Unmarshal(data, &cases))
	require.Greater(t, len(cases), 60000)

	var agree, dropped, transliterated, unassigned int
	perRange := map[string]int{}
	for _, c := range cases {
		r, _ := utf8.DecodeRuneInString(c.Name[1:])
		got := Make(c.Name)
		switch {
		case got == c.Slug:
			agree++
			continue
		case !c.Assigned:
			unassigned++
			continue
		case !c.Unknown:
			t.Errorf("Make(%+q) = %q, python-slugify gives %q (U+%04X)", c.Name, got, c.Slug, r)
			continue
		case got == "ab":
			dropped++
		default:
			assert.Regexp(t, `^a[a-z0-9-]*b$`, got, "U+%04X", r)
			transliterated++
		}
		perRange[fmt.Sprintf("U+%04X", r&^0xFF)]++
	}
	t.Logf("%d code points: %d agree with python-slugify; where text-unidecode has no transliteration, "+
		"%d disappear and %d keep the library's transliteration; %d unassigned in Python's Unicode version differ",
		len(cases), agree, dropped, transliterated, unassigned)
	ranges := make([]string, 0, len(perRange))
	for k := range perRange {
		ranges = append(ranges, k)
	}
	sort.Strings(ranges)
	var sb strings.Builder
	for _, k := range ranges {
		fmt.Fprintf(&sb, " %s:%d", k, perRange[k])
	}
	t.Logf("differences per 256 code points:%s", sb.String())
	assert.Greater(t, agree, 40000)
}
