package golden_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/supervaize/supervaizer-go/testing/golden"
)

// exampleT is the testing.TB the examples pass: it prints what a test
// would report, its temporary folder dir written as ".". Only Helper and
// Errorf are called.
type exampleT struct {
	testing.TB
	dir string
}

func (exampleT) Helper() {}

func (t exampleT) Errorf(format string, args ...any) {
	fmt.Println(strings.ReplaceAll(fmt.Sprintf(format, args...), t.dir, "."))
}

// exampleDir is a folder holding testdata/start.golden.json and
// testdata/events.golden.txt, as a package's testdata does.
func exampleDir() string {
	dir, err := os.MkdirTemp("", "golden-example")
	if err != nil {
		panic(err)
	}
	_ = os.MkdirAll(filepath.Join(dir, "testdata"), 0o755)
	_ = os.WriteFile(filepath.Join(dir, "testdata", "start.golden.json"), []byte("{\n  \"status\": \"ok\",\n  \"effects\": []\n}\n"), 0o644)
	_ = os.WriteFile(filepath.Join(dir, "testdata", "events.golden.txt"), []byte("id: 1\nevent: effect\ndata: {}\n\n"), 0o644)
	return dir
}

func ExampleJSON() {
	dir := exampleDir()
	defer os.RemoveAll(dir)
	t := exampleT{dir: dir} // in a test: the test's t
	// Key order and white space do not matter.
	fmt.Println(golden.JSON(t, filepath.Join(dir, "testdata", "start.golden.json"), []byte(`{"effects":[],"status":"ok"}`)))
	// Output: true
}

func ExampleBytes() {
	dir := exampleDir()
	defer os.RemoveAll(dir)
	t := exampleT{dir: dir}
	// The SSE stream as sent, byte for byte.
	fmt.Println(golden.Bytes(t, filepath.Join(dir, "testdata", "events.golden.txt"), []byte("id: 1\nevent: effect\ndata: {}\n\n")))
	// Output: true
}

func ExampleJSONUpdate() {
	dir := exampleDir()
	defer os.RemoveAll(dir)
	t := exampleT{dir: dir}
	path := filepath.Join(dir, "testdata", "start.golden.json")
	update := true // in a test: a flag of the package's own, *update
	golden.JSONUpdate(t, path, []byte(`{"status":"ok","effects":[{"type":"job.started"}]}`), update)
	b, _ := os.ReadFile(path)
	fmt.Print(string(b))
	// Output:
	// {
	//   "status": "ok",
	//   "effects": [
	//     {
	//       "type": "job.started"
	//     }
	//   ]
	// }
}

func ExampleBytesUpdate() {
	dir := exampleDir()
	defer os.RemoveAll(dir)
	t := exampleT{dir: dir}
	path := filepath.Join(dir, "testdata", "events.golden.txt")
	// Compare, whatever the environment says: every byte counts, and the
	// first line that differs is reported.
	fmt.Println(golden.BytesUpdate(t, path, []byte("id: 1\nevent: effect\ndata: { }\n\n"), false))
	// Rewrite: the bytes are written as they are.
	golden.BytesUpdate(t, path, []byte("id: 2\r\nevent: effect\r\n\r\n"), true)
	b, _ := os.ReadFile(path)
	fmt.Printf("%q\n", b)
	// Output:
	// golden file ./testdata/events.golden.txt differs from line 3 on (run the test with SUPERVAIZER_UPDATE_GOLDEN=1 to rewrite it)
	// want: "data: {}"
	// got:  "data: { }"
	// false
	// "id: 2\r\nevent: effect\r\n\r\n"
}

func ExampleUpdate() {
	// SUPERVAIZER_UPDATE_GOLDEN=1 go test ./... rewrites every golden file;
	// Update says whether this run does.
	mode := "compare"
	if golden.Update() {
		mode = "rewrite"
	}
	fmt.Fprintln(os.Stderr, "golden files:", mode)
	fmt.Println(golden.UpdateEnv)
	// Output: SUPERVAIZER_UPDATE_GOLDEN
}
