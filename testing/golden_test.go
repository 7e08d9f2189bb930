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

// TestGolden: Golden compares JSON values, or rewrites the file when the test
// binary runs with -update, the flag svtest registers (internal/golden tests
// both paths whatever the flag).
func TestGolden(t *testing.T) {
	t.Parallel()
	f := flag.Lookup("update")
	require.NotNil(t, f, "svtest registers -update")
	updating := f.Value.String() == "true"
	got := []byte(`{"b":[1,2],"a":"x"}`)
	tests := []struct {
		name     string
		existing string // file content; "" means no file
		wantOK   bool
		wantMsg  string // a fragment of the reported failure
	}{
		{name: "equal JSON", existing: "{\n \"a\": \"x\", \"b\": [1, 2]\n}", wantOK: true},
		{name: "different JSON", existing: `{"a":"y","b":[1,2]}`, wantMsg: "golden file"},
		{name: "missing file", wantMsg: "run the test with -update to create it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "case.golden.json")
			if tt.existing != "" {
				require.NoError(t, os.WriteFile(path, []byte(tt.existing), 0o644))
			}
			rec := newRecordingTB(t)
			assert.Equal(t, tt.wantOK || updating, svtest.Golden(rec, path, got))
			msgs := rec.messages()
			if updating {
				b, err := os.ReadFile(path)
				require.NoError(t, err)
				assert.Equal(t, "{\n  \"b\": [\n    1,\n    2\n  ],\n  \"a\": \"x\"\n}\n", string(b))
			}
			if tt.wantOK || updating {
				assert.Empty(t, msgs)
			} else {
				require.NotEmpty(t, msgs)
				assert.Contains(t, msgs[0], tt.wantMsg)
			}
		})
	}
}
