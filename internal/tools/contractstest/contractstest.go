// Package contractstest holds the assertions the module's tests share about
// contracts values.
package contractstest

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/contracts"
)

// RequireProblem checks that err is (or wraps) a *contracts.ValidationError
// holding a problem at the JSON Pointer path, of the rule, whose message is not
// empty and contains msg ("" accepts any message); it stops the test
// otherwise, showing the problems err holds.
func RequireProblem(t testing.TB, err error, path, rule, msg string) {
	t.Helper()
	var ve *contracts.ValidationError
	require.ErrorAs(t, err, &ve)
	for _, p := range ve.Problems {
		if p.Path == path && p.Type == rule && p.Msg != "" && strings.Contains(p.Msg, msg) {
			return
		}
	}
	require.FailNowf(t, "missing validation problem", "no problem at %s (%s, message containing %q) in:\n%v", path, rule, msg, err)
}

// CorpusDoc is one document of the contracts corpus
// (contracts/testdata/corpus/<Model>/<valid|invalid>/<file>.json).
type CorpusDoc struct {
	Name  string // <Model>/<valid|invalid>/<file>
	Model contracts.Model
	Valid bool
	Raw   []byte
}

// CorpusDir is the folder of the contracts corpus, from any package of the
// module.
func CorpusDir(tb testing.TB) string {
	tb.Helper()
	_, file, _, ok := runtime.Caller(0)
	require.True(tb, ok, "no caller information")
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "contracts", "testdata", "corpus")
}

// LoadCorpus reads every document of the contracts corpus.
func LoadCorpus(tb testing.TB) []CorpusDoc {
	tb.Helper()
	dir := CorpusDir(tb)
	files, err := filepath.Glob(filepath.Join(dir, "*", "*", "*.json"))
	require.NoError(tb, err)
	require.NotEmpty(tb, files)
	docs := make([]CorpusDoc, 0, len(files))
	for _, f := range files {
		raw, err := os.ReadFile(f)
		require.NoError(tb, err)
		rel, err := filepath.Rel(dir, f)
		require.NoError(tb, err)
		parts := strings.Split(filepath.ToSlash(rel), "/")
		docs = append(docs, CorpusDoc{Name: strings.TrimSuffix(filepath.ToSlash(rel), ".json"),
			Model: contracts.Model(parts[0]), Valid: parts[1] == "valid", Raw: raw})
	}
	return docs
}

// Mutations returns variants of the JSON document raw: every value replaced by
// values of other types and lengths, every key removed, renamed to a
// case-variant, duplicated or completed by an unknown sibling, capped at
// limit variants (a deterministic spread over the document).
func Mutations(tb testing.TB, raw []byte, limit int) [][]byte {
	tb.Helper()
	var doc any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	require.NoError(tb, dec.Decode(&doc))
	replacements := []any{nil, true, json.Number("0"), json.Number("-1"), json.Number("1.5"), json.Number("2.0"),
		json.Number("1e3"), "", " ", "x", "ok", "2026-01-02T03:04:05Z", "not a date", strings.Repeat("é", 301),
		[]any{}, []any{"a", "a"}, []any{map[string]any{}}, map[string]any{}, map[string]any{"id": "x"}}
	// Two walks: the first counts the variants, the second encodes an even
	// spread of at most limit of them (encoding every variant of a large
	// registration would dominate the test).
	var out [][]byte
	n, stride := 0, 1
	emit := func(v any) {
		if n++; (n-1)%stride != 0 || len(out) >= limit {
			return
		}
		b, err := contracts.Marshal(v)
		require.NoError(tb, err)
		out = append(out, b)
	}
	// Walk every location; at each, emit the document with the location changed.
	var walk func(set func(any), v any)
	walk = func(set func(any), v any) {
		for _, r := range replacements {
			set(r)
			emit(doc)
		}
		set(v)
		switch v := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(v))
			for k := range v {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				child := v[k]
				delete(v, k)
				emit(doc)
				v[strings.ToUpper(k)] = child
				emit(doc)
				delete(v, strings.ToUpper(k))
				v["zz_unknown"] = child
				emit(doc)
				delete(v, "zz_unknown")
				v[k] = child
				walk(func(n any) { v[k] = n }, child)
				v[k] = child
			}
		case []any:
			for i := range v {
				walk(func(n any) { v[i] = n }, v[i])
			}
		}
	}
	stride = 1 << 62 // counting walk: encode nothing
	walk(func(n any) { doc = n }, doc)
	stride, n = max(1, (n+limit-1)/limit), 0
	walk(func(n any) { doc = n }, doc)
	// A duplicated key and an escaped key, which the tape refuses.
	if i := bytes.IndexByte(raw, '{'); i >= 0 {
		out = append(out, slices.Concat(raw[:i+1], []byte(`"status":"ok","status":1,`), raw[i+1:]))
		out = append(out, slices.Concat(raw[:i+1], []byte(`"st\u0061tus":"ok",`), raw[i+1:]))
	}
	return out
}
