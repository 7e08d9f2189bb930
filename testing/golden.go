package testing

import (
	"testing"

	"github.com/supervaize/supervaizer-go/internal/golden"
)

// Golden compares got with the JSON golden file at path (assert.JSONEq: key
// order and white space do not matter) and reports a difference with t.Errorf:
//
//	svtest.Golden(t, filepath.Join("testdata", "start.golden.json"), raw)
//
// Importing svtest registers the -update test flag (do not declare your own):
// under -update Golden (re)writes the file instead, indented, creating its
// directory. It returns whether got matched (or was written). Review the diff
// after each update.
func Golden(t testing.TB, path string, got []byte) bool {
	t.Helper()
	return golden.JSON(t, path, got)
}
