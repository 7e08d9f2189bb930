package testing_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	svtest "github.com/supervaize/supervaizer-go/testing"
)

func TestGolden(t *testing.T) {
	t.Parallel()
	got := []byte(`{"b":[1,2],"a":"x"}`)
	tests := []struct {
		name     string
		existing string // file content before the call; "" means no file
		got      []byte
		update   bool
		wantOK   bool
		wantMsg  string // a fragment of the reported failure
		wantFile string // file content after the call, when checked
	}{
		{name: "update writes indented JSON", got: got, update: true, wantOK: true,
			wantFile: "{\n  \"b\": [\n    1,\n    2\n  ],\n  \"a\": \"x\"\n}\n"},
		{name: "update rewrites", existing: `{"old":true}`, got: got, update: true, wantOK: true,
			wantFile: "{\n  \"b\": [\n    1,\n    2\n  ],\n  \"a\": \"x\"\n}\n"},
		{name: "update refuses non-JSON", existing: `{"old":true}`, got: []byte(`{`), update: true,
			wantMsg: "got is not JSON", wantFile: `{"old":true}`},
		{name: "equal JSON", existing: "{\n \"a\": \"x\", \"b\": [1, 2]\n}", got: got, wantOK: true},
		{name: "different JSON", existing: `{"a":"y","b":[1,2]}`, got: got, wantMsg: "golden file"},
		{name: "missing file", got: got, wantMsg: "run the test with -update to create it"},
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
			assert.Equal(t, tt.wantOK, svtest.Golden(rec, path, tt.got, tt.update))
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

func TestGoldenUpdateUnwritable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	blocker := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(blocker, nil, 0o644))
	rec := newRecordingTB(t)
	assert.False(t, svtest.Golden(rec, filepath.Join(blocker, "x.json"), []byte(`{}`), true))
	assert.Len(t, rec.messages(), 1)
}
