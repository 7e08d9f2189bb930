package testing

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
)

// UpdateGoldenEnv is the environment variable that makes [Golden] rewrite its
// files instead of comparing: SUPERVAIZER_UPDATE_GOLDEN=1 go test ./... (any
// value [strconv.ParseBool] reads as true). The kit registers no test flag,
// so a test package is free to declare its own -update and pass it to
// [GoldenUpdate].
const UpdateGoldenEnv = "SUPERVAIZER_UPDATE_GOLDEN"

// Golden compares got with the JSON golden file at path (assert.JSONEq: key
// order and white space do not matter) and reports a difference with t.Errorf:
//
//	svtest.Golden(t, filepath.Join("testdata", "start.golden.json"), raw)
//
// When the environment variable [UpdateGoldenEnv] is true, Golden (re)writes
// the file instead, indented, creating its directory. It returns whether got
// matched (or was written). Review the diff after each update.
func Golden(t testing.TB, path string, got []byte) bool {
	t.Helper()
	return GoldenUpdate(t, path, got, updateFromEnv())
}

// GoldenUpdate is [Golden] with the choice made by the caller: it rewrites
// the file when update is true, and compares otherwise, whatever the
// environment says. Use it with a flag of your own:
//
//	var update = flag.Bool("update", false, "rewrite the golden files")
//	…
//	svtest.GoldenUpdate(t, filepath.Join("testdata", "start.golden.json"), raw, *update)
func GoldenUpdate(t testing.TB, path string, got []byte, update bool) bool {
	t.Helper()
	if update {
		var buf bytes.Buffer
		if err := json.Indent(&buf, got, "", "  "); err != nil {
			t.Errorf("svtest: golden file %s not written: got is not JSON: %v", path, err)
			return false
		}
		buf.WriteByte('\n')
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Errorf("svtest: golden file: %v", err)
			return false
		}
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Errorf("svtest: golden file: %v", err)
			return false
		}
		return true
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("svtest: golden file: %v (run the test with %s=1 to create it)", err, UpdateGoldenEnv)
		return false
	}
	return assert.JSONEq(t, string(want), string(got), "golden file %s differs (run the test with %s=1 to rewrite it)", path, UpdateGoldenEnv)
}

// updateFromEnv reports whether UpdateGoldenEnv is set to a true value.
func updateFromEnv() bool {
	on, err := strconv.ParseBool(os.Getenv(UpdateGoldenEnv))
	return err == nil && on
}
