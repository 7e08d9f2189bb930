package golden

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
		{name: "JSON update writes indented JSON", check: checkJSON, got: got, update: true, wantOK: true, wantFile: indented},
		{name: "JSON update rewrites", check: checkJSON, existing: `{"old":true}`, got: got, update: true, wantOK: true, wantFile: indented},
		{name: "JSON update refuses non-JSON", check: checkJSON, existing: `{"old":true}`, got: []byte(`{`), update: true,
			wantMsg: "got is not JSON", wantFile: `{"old":true}`},
		{name: "JSON equal", check: checkJSON, existing: "{\n \"a\": \"x\", \"b\": [1, 2]\n}", got: got, wantOK: true},
		{name: "JSON different", check: checkJSON, existing: `{"a":"y","b":[1,2]}`, got: got, wantMsg: "golden file"},
		{name: "JSON missing file", check: checkJSON, got: got, wantMsg: "run the test with SUPERVAIZER_UPDATE_GOLDEN=1 to create it"},
		{name: "bytes update writes as is", check: checkBytes, existing: "old\n", got: []byte("a\r\nb"), update: true, wantOK: true, wantFile: "a\r\nb"},
		{name: "bytes equal", check: checkBytes, existing: "a\nb\n", got: []byte("a\nb\n"), wantOK: true},
		{name: "bytes same JSON other spacing", check: checkBytes, existing: `{"a": 1}`, got: []byte(`{"a":1}`),
			wantMsg: "differs from line 1 on"},
		{name: "bytes other line", check: checkBytes, existing: "a\nb\nc\n", got: []byte("a\nB\nc\n"),
			wantMsg: "differs from line 2 on (run the test with SUPERVAIZER_UPDATE_GOLDEN=1 to rewrite it)\nwant: \"b\"\ngot:  \"B\""},
		{name: "bytes missing final newline", check: checkBytes, existing: "a\n", got: []byte("a"), wantMsg: "differs from line 2 on"},
		{name: "bytes missing file", check: checkBytes, got: got, wantMsg: "run the test with SUPERVAIZER_UPDATE_GOLDEN=1 to create it"},
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
	for name, check := range map[string]func(testing.TB, string, []byte, bool) bool{"JSON": checkJSON, "bytes": checkBytes} {
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
	assert.Nil(t, flag.Lookup("update"), "internal/tools/golden registers -update")
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
			t.Setenv(updateEnv, tt.env)
			assert.Equal(t, tt.want, Update())
		})
	}
}
