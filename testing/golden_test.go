package testing_test

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	svtest "github.com/supervaize/supervaizer-go/testing"
)

// goldenIndented is what an update writes for goldenGot.
const goldenIndented = "{\n  \"b\": [\n    1,\n    2\n  ],\n  \"a\": \"x\"\n}\n"

var goldenGot = []byte(`{"b":[1,2],"a":"x"}`)

// TestGoldenUpdate: GoldenUpdate compares JSON values, or rewrites the file
// when asked to, whatever the environment says.
func TestGoldenUpdate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		existing string // file content; "" means no file
		got      []byte
		update   bool
		wantOK   bool
		wantMsg  string // a fragment of the reported failure
		wantFile string // the file after the call; "" means unchanged or absent
	}{
		{name: "equal JSON", existing: "{\n \"a\": \"x\", \"b\": [1, 2]\n}", got: goldenGot, wantOK: true},
		{name: "different JSON", existing: `{"a":"y","b":[1,2]}`, got: goldenGot, wantMsg: "golden file"},
		{name: "missing file", got: goldenGot, wantMsg: "run the test with SUPERVAIZER_UPDATE_GOLDEN=1 to create it"},
		{name: "update rewrites", existing: `{"a":"y"}`, got: goldenGot, update: true, wantOK: true, wantFile: goldenIndented},
		{name: "update creates", got: goldenGot, update: true, wantOK: true, wantFile: goldenIndented},
		{name: "update refuses non-JSON", existing: `{"a":"y"}`, got: []byte(`{`), update: true, wantMsg: "got is not JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "sub", "case.golden.json")
			if tt.existing != "" {
				require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
				require.NoError(t, os.WriteFile(path, []byte(tt.existing), 0o644))
			}
			rec := newRecordingTB(t)
			assert.Equal(t, tt.wantOK, svtest.GoldenUpdate(rec, path, tt.got, tt.update))
			msgs := rec.messages()
			if tt.wantOK {
				assert.Empty(t, msgs)
			} else {
				require.NotEmpty(t, msgs)
				assert.Contains(t, msgs[0], tt.wantMsg)
			}
			if tt.wantFile != "" {
				b, err := os.ReadFile(path)
				require.NoError(t, err)
				assert.Equal(t, tt.wantFile, string(b))
			}
		})
	}
}

// TestGoldenEnvironment: Golden rewrites its file only when
// SUPERVAIZER_UPDATE_GOLDEN is true. Not parallel: it sets the environment.
func TestGoldenEnvironment(t *testing.T) {
	tests := []struct {
		env       string
		rewritten bool
	}{
		{"", false},
		{"0", false},
		{"no", false},
		{"1", true},
		{"true", true},
	}
	for _, tt := range tests {
		t.Run("env="+tt.env, func(t *testing.T) {
			t.Setenv(svtest.UpdateGoldenEnv, tt.env)
			path := filepath.Join(t.TempDir(), "case.golden.json")
			require.NoError(t, os.WriteFile(path, []byte(`{"a":"y"}`), 0o644))
			rec := newRecordingTB(t)
			assert.Equal(t, tt.rewritten, svtest.Golden(rec, path, goldenGot))
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			if tt.rewritten {
				assert.Empty(t, rec.messages())
				assert.Equal(t, goldenIndented, string(b))
			} else {
				assert.NotEmpty(t, rec.messages(), "a different golden file is reported")
				assert.JSONEq(t, `{"a":"y"}`, string(b), "the file is left alone")
			}
		})
	}
}

// TestNoUpdateFlag: the kit registers no test flag, so a test package may
// declare its own -update (testing/updateflag proves it compiles and runs).
func TestNoUpdateFlag(t *testing.T) {
	t.Parallel()
	assert.Nil(t, flag.Lookup("update"), "svtest or a package it imports registers -update")
}
