package testing

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Golden compares got with the JSON golden file at path (assert.JSONEq: key
// order and white space do not matter) and reports a difference with t.Errorf.
// With update set it (re)writes the file instead, indented, creating its
// directory; wire it to a test flag:
//
//	var update = flag.Bool("update", false, "rewrite golden files")
//
//	svtest.Golden(t, filepath.Join("testdata", "start.golden.json"), raw, *update)
//
// It returns whether got matched (or was written). Review the diff after each
// update.
func Golden(t testing.TB, path string, got []byte, update bool) bool {
	t.Helper()
	if update {
		var buf bytes.Buffer
		if err := json.Indent(&buf, got, "", "  "); err != nil {
			t.Errorf("svtest.Golden: %s not written: got is not JSON: %v", path, err)
			return false
		}
		buf.WriteByte('\n')
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Errorf("svtest.Golden: %v", err)
			return false
		}
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Errorf("svtest.Golden: %v", err)
			return false
		}
		return true
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("svtest.Golden: %v (run the test with -update to create it)", err)
		return false
	}
	return assert.JSONEq(t, string(want), string(got), "golden file %s differs (run the test with -update to rewrite it)", path)
}
