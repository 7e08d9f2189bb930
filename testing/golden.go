package testing

import (
	"testing"

	"github.com/supervaize/supervaizer-go/testing/golden"
)

// UpdateGoldenEnv is the environment variable that makes [Golden] rewrite its
// files instead of comparing: SUPERVAIZER_UPDATE_GOLDEN=1 go test ./... (any
// value [strconv.ParseBool] reads as true), as the golden package
// (testing/golden, which also compares byte for byte) reads it. The kit
// registers no test flag, so a test package is free to declare its own
// -update and pass it to [GoldenUpdate].
const UpdateGoldenEnv = golden.UpdateEnv

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
	return golden.JSON(t, path, got)
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
	return golden.JSONUpdate(t, path, got, update)
}
