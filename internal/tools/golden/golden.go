// Package golden is the golden-file helper of the SDK's own tests. The
// packages svtest itself imports (internal/jsonrpc, internal/sse, contracts,
// …) cannot import svtest from their own tests, so they call this package.
// It registers no command-line flag, as svtest registers none: a test
// package is free to declare its own -update.
//
// With SUPERVAIZER_UPDATE_GOLDEN=1, as svtest.Golden reads it (one command
// updates every golden file of the module), each helper rewrites its file
// from what the test got instead of comparing; review the diff after each
// update.
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

// updateEnv is the environment variable svtest.Golden reads.
const updateEnv = "SUPERVAIZER_UPDATE_GOLDEN"

// Update reports whether SUPERVAIZER_UPDATE_GOLDEN is set to a true value.
func Update() bool {
	on, err := strconv.ParseBool(os.Getenv(updateEnv))
	return err == nil && on
}

// JSON compares got with the JSON file at path (assert.JSONEq: key order and
// white space do not matter) and reports a difference with t.Errorf. Under
// SUPERVAIZER_UPDATE_GOLDEN ([Update]) it writes got instead, indented, creating the directory.
// It returns whether got matched (or was written).
func JSON(t testing.TB, path string, got []byte) bool {
	t.Helper()
	return checkJSON(t, path, got, Update())
}

// Bytes compares got with the file at path byte for byte (for wire bytes
// whose key order, spacing or line ends are part of what is tested) and
// reports the first line that differs with t.Errorf. With
// SUPERVAIZER_UPDATE_GOLDEN ([Update]) it writes got as it is. It returns whether got matched (or was
// written).
func Bytes(t testing.TB, path string, got []byte) bool {
	t.Helper()
	return checkBytes(t, path, got, Update())
}

func checkJSON(t testing.TB, path string, got []byte, update bool) bool {
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
	return assert.JSONEq(t, string(want), string(got), "golden file %s differs (run the test with SUPERVAIZER_UPDATE_GOLDEN=1 to rewrite it)", path)
}

func checkBytes(t testing.TB, path string, got []byte, update bool) bool {
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
	t.Errorf("golden file %s differs from line %d on (run the test with SUPERVAIZER_UPDATE_GOLDEN=1 to rewrite it)\nwant: %q\ngot:  %q",
		path, n, wantLine, gotLine)
	return false
}

func read(t testing.TB, path string) ([]byte, bool) {
	t.Helper()
	want, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("golden: %v (run the test with SUPERVAIZER_UPDATE_GOLDEN=1 to create it)", err)
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
