// Package golden compares what a test got with a golden file in testdata/,
// and rewrites the files when asked to. JSON compares JSON values (key order
// and white space do not matter); Bytes compares byte for byte, for wire
// bytes whose key order, spacing or line ends are part of what is tested (an
// SSE stream, a canonical encoding).
//
//	golden.JSON(t, filepath.Join("testdata", "start.golden.json"), raw)
//	golden.Bytes(t, filepath.Join("testdata", "events.golden.txt"), stream)
//
// With SUPERVAIZER_UPDATE_GOLDEN=1 ([UpdateEnv], which [Update] reads, as
// svtest.Golden does: one command updates every golden file of a module),
// JSON and Bytes rewrite their files from what the test got instead of
// comparing; review the diff after each update. The package registers no
// command-line flag: a test package may declare its own -update and pass it
// to [JSONUpdate] or [BytesUpdate]. It imports nothing of the SDK, so the
// SDK's own packages test with it too.
package golden

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// UpdateEnv is the environment variable that makes [JSON] and [Bytes]
// rewrite their files instead of comparing: any value [strconv.ParseBool]
// reads as true.
const UpdateEnv = "SUPERVAIZER_UPDATE_GOLDEN"

// rewriteHint and createHint end the messages of a difference and of a
// missing file: how to rewrite or create the file.
const (
	rewriteHint = "(run the test with " + UpdateEnv + "=1 to rewrite it)"
	createHint  = "(run the test with " + UpdateEnv + "=1 to create it)"
)

// Update reports whether [UpdateEnv] is set to a true value.
func Update() bool {
	on, err := strconv.ParseBool(os.Getenv(UpdateEnv))
	return err == nil && on
}

// JSON compares got with the JSON file at path (assert.JSONEq: key order and
// white space do not matter) and reports a difference with t.Errorf. Under
// SUPERVAIZER_UPDATE_GOLDEN ([Update]) it writes got instead, indented,
// creating the directory. It returns whether got matched (or was written).
func JSON(t testing.TB, path string, got []byte) bool {
	t.Helper()
	return JSONUpdate(t, path, got, Update())
}

// Bytes compares got with the file at path byte for byte (for wire bytes
// whose key order, spacing or line ends are part of what is tested) and
// reports the first line that differs with t.Errorf. With
// SUPERVAIZER_UPDATE_GOLDEN ([Update]) it writes got as it is. It returns
// whether got matched (or was written).
func Bytes(t testing.TB, path string, got []byte) bool {
	t.Helper()
	return BytesUpdate(t, path, got, Update())
}

// JSONUpdate is [JSON] with the choice made by the caller: it rewrites the
// file when update is true, and compares otherwise, whatever the environment
// says. Use it with a flag of your own.
func JSONUpdate(t testing.TB, path string, got []byte, update bool) bool {
	t.Helper()
	if update {
		var buf bytes.Buffer
		if err := json.Indent(&buf, got, "", "  "); err != nil {
			t.Errorf("golden: %s not written: got is not JSON: %v", path, err)
			return false
		}
		buf.WriteByte('\n')
		return write(t, path, buf.Bytes())
	}
	want, ok := read(t, path)
	if !ok {
		return false
	}
	return assert.JSONEq(t, string(want), string(got), "golden file %s differs "+rewriteHint, path)
}

// BytesUpdate is [Bytes] with the choice made by the caller, as
// [JSONUpdate].
func BytesUpdate(t testing.TB, path string, got []byte, update bool) bool {
	t.Helper()
	if update {
		return write(t, path, got)
	}
	want, ok := read(t, path)
	if !ok {
		return false
	}
	if bytes.Equal(want, got) {
		return true
	}
	n, wantLine, gotLine := firstDifferentLine(want, got)
	t.Errorf("golden file %s differs from line %d on "+rewriteHint+"\nwant: %q\ngot:  %q", path, n, wantLine, gotLine)
	return false
}

func read(t testing.TB, path string) ([]byte, bool) {
	t.Helper()
	want, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("golden: %v "+createHint, err)
		return nil, false
	}
	return want, true
}

func write(t testing.TB, path string, content []byte) bool {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Errorf("golden: %v", err)
		return false
	}
	if err := os.WriteFile(path, content, 0o644); err != nil {
		t.Errorf("golden: %v", err)
		return false
	}
	return true
}

// firstDifferentLine returns the 1-based number of the first line where want
// and got differ, and that line of each ("" past the end).
func firstDifferentLine(want, got []byte) (n int, wantLine, gotLine string) {
	lw, lg := strings.Split(string(want), "\n"), strings.Split(string(got), "\n")
	for i := range max(len(lw), len(lg)) {
		var w, g string
		if i < len(lw) {
			w = lw[i]
		}
		if i < len(lg) {
			g = lg[i]
		}
		if i >= len(lw) || i >= len(lg) || w != g {
			return i + 1, w, g
		}
	}
	return 0, "", ""
}
