package golden_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/testing/golden"
)

// recorder is a testing.TB that records what the helpers report instead of
// failing the test.
type recorder struct {
	testing.TB
	msgs []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.msgs = append(r.msgs, fmt.Sprintf(format, args...))
}

func TestCheck(t *testing.T) {
	t.Parallel()
	got := []byte(`{"b":[1,2],"a":"x"}`)
	indented := "{\n  \"b\": [\n    1,\n    2\n  ],\n  \"a\": \"x\"\n}\n"
	tests := []struct {
		name     string
		check    func(testing.TB, string, []byte, bool) bool
		existing string // file content before the call; "" means no file
		got      []byte
		update   bool
		wantOK   bool
		wantMsg  string // a fragment of the reported failure
		wantFile string // file content after the call, when checked
	}{
		{name: "JSON update writes indented JSON", check: golden.JSONUpdate, got: got, update: true, wantOK: true, wantFile: indented},
		{name: "JSON update rewrites", check: golden.JSONUpdate, existing: `{"old":true}`, got: got, update: true, wantOK: true, wantFile: indented},
		{name: "JSON update refuses non-JSON", check: golden.JSONUpdate, existing: `{"old":true}`, got: []byte(`{`), update: true,
			wantMsg: "got is not JSON", wantFile: `{"old":true}`},
		{name: "JSON equal", check: golden.JSONUpdate, existing: "{\n \"a\": \"x\", \"b\": [1, 2]\n}", got: got, wantOK: true},
		{name: "JSON different", check: golden.JSONUpdate, existing: `{"a":"y","b":[1,2]}`, got: got, wantMsg: "golden file"},
		{name: "JSON missing file", check: golden.JSONUpdate, got: got, wantMsg: "run the test with SUPERVAIZER_UPDATE_GOLDEN=1 to create it"},
		{name: "bytes update writes as is", check: golden.BytesUpdate, existing: "old\n", got: []byte("a\r\nb"), update: true, wantOK: true, wantFile: "a\r\nb"},
		{name: "bytes equal", check: golden.BytesUpdate, existing: "a\nb\n", got: []byte("a\nb\n"), wantOK: true},
		{name: "bytes same JSON other spacing", check: golden.BytesUpdate, existing: `{"a": 1}`, got: []byte(`{"a":1}`),
			wantMsg: "differs from line 1 on"},
		{name: "bytes other line", check: golden.BytesUpdate, existing: "a\nb\nc\n", got: []byte("a\nB\nc\n"),
			wantMsg: "differs from line 2 on (run the test with SUPERVAIZER_UPDATE_GOLDEN=1 to rewrite it)\nwant: \"b\"\ngot:  \"B\""},
		{name: "bytes missing final newline", check: golden.BytesUpdate, existing: "a\n", got: []byte("a"), wantMsg: "differs from line 2 on"},
		{name: "bytes missing file", check: golden.BytesUpdate, got: got, wantMsg: "run the test with SUPERVAIZER_UPDATE_GOLDEN=1 to create it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "sub", "case.golden")
			if tt.existing != "" {
				require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
				require.NoError(t, os.WriteFile(path, []byte(tt.existing), 0o644))
			}
			rec := &recorder{TB: t}
			assert.Equal(t, tt.wantOK, tt.check(rec, path, tt.got, tt.update))
			if tt.wantOK {
				assert.Empty(t, rec.msgs)
			} else {
				require.NotEmpty(t, rec.msgs)
				assert.Contains(t, rec.msgs[0], tt.wantMsg)
			}
			if tt.wantFile != "" {
				b, err := os.ReadFile(path)
				require.NoError(t, err)
				assert.Equal(t, tt.wantFile, string(b))
			}
		})
	}
}

func TestUpdateUnwritable(t *testing.T) {
	t.Parallel()
	blocker := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(blocker, nil, 0o644))
	for name, check := range map[string]func(testing.TB, string, []byte, bool) bool{"JSON": golden.JSONUpdate, "bytes": golden.BytesUpdate} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rec := &recorder{TB: t}
			assert.False(t, check(rec, filepath.Join(blocker, "x.json"), []byte(`{}`), true))
			assert.Len(t, rec.msgs, 1)
		})
	}
}

// TestUpdate: Update reads SUPERVAIZER_UPDATE_GOLDEN, as svtest.Golden
// does, and the package registers no -update flag (a test package that
// imports it may declare its own). Not parallel: it sets the environment.
func TestUpdate(t *testing.T) {
	assert.Nil(t, flag.Lookup("update"), "testing/golden registers -update")
	tests := []struct {
		env  string
		want bool
	}{
		{"", false},
		{"0", false},
		{"not a bool", false},
		{"1", true},
		{"true", true},
	}
	for _, tt := range tests {
		t.Run("env="+tt.env, func(t *testing.T) {
			t.Setenv(golden.UpdateEnv, tt.env)
			assert.Equal(t, tt.want, golden.Update())
		})
	}
}

// TestPackageDoc runs the package comment's two lines in a package whose
// testdata holds both golden files.
func TestPackageDoc(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "testdata"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "testdata", "start.golden.json"), []byte("{\"status\": \"ok\"}\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "testdata", "events.golden.txt"), []byte("id: 1\nevent: effect\ndata: {}\n\n"), 0o644))
	t.Chdir(dir)
	t.Setenv(golden.UpdateEnv, "") // compare, even under an update run
	raw, stream := []byte(`{"status":"ok"}`), []byte("id: 1\nevent: effect\ndata: {}\n\n")
	golden.JSON(t, filepath.Join("testdata", "start.golden.json"), raw)
	golden.Bytes(t, filepath.Join("testdata", "events.golden.txt"), stream)
}
