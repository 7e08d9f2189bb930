package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReport(t *testing.T) {
	const pkg = `"Package":"example.com/p"`
	ev := func(fields string) string { return "{" + pkg + "," + fields + "}\n" }
	tests := []struct {
		name     string
		in       string
		wantOK   bool
		contains []string
		excludes []string
	}{
		{
			name: "pass",
			in: ev(`"Action":"run","Test":"TestA"`) +
				ev(`"Action":"output","Test":"TestA","Output":"=== RUN   TestA\n"`) +
				ev(`"Action":"output","Test":"TestA","Output":"    a_test.go:3: chatter\n"`) +
				ev(`"Action":"pass","Test":"TestA"`) +
				ev(`"Action":"pass","Elapsed":0.5`),
			wantOK:   true,
			contains: []string{"ok  \texample.com/p\t0.500s"},
			excludes: []string{"chatter", "did not run"},
		},
		{
			name: "skip with its reason",
			in: ev(`"Action":"run","Test":"TestDB"`) +
				ev(`"Action":"output","Test":"TestDB","Output":"=== RUN   TestDB\n"`) +
				ev(`"Action":"output","Test":"TestDB","Output":"    db_test.go:19: DB_URL is not set: needs a server\n"`) +
				ev(`"Action":"output","Test":"TestDB","Output":"--- SKIP: TestDB (0.00s)\n"`) +
				ev(`"Action":"skip","Test":"TestDB"`) +
				ev(`"Action":"pass","Elapsed":0.1`),
			wantOK:   true,
			contains: []string{"did not run", "example.com/p TestDB: DB_URL is not set: needs a server"},
		},
		{
			name: "a parent whose subtests were skipped is not listed",
			in: ev(`"Action":"output","Test":"TestS/a","Output":"    s_test.go:9: no server\n"`) +
				ev(`"Action":"skip","Test":"TestS/a"`) +
				ev(`"Action":"skip","Test":"TestS"`) +
				ev(`"Action":"pass"`),
			wantOK:   true,
			contains: []string{"TestS/a: no server"},
			excludes: []string{"TestS: "},
		},
		{
			name: "failure prints the test's output",
			in: ev(`"Action":"output","Test":"TestF","Output":"    f_test.go:7: expected 1, got 2\n"`) +
				ev(`"Action":"fail","Test":"TestF"`) +
				ev(`"Action":"fail","Elapsed":0.2`),
			wantOK:   false,
			contains: []string{"FAIL\texample.com/p\t0.200s", "--- FAIL: example.com/p TestF", "expected 1, got 2"},
		},
		{
			name: "build failure",
			in: `{"ImportPath":"example.com/p [example.com/p.test]","Action":"build-output","Output":"p.go:1: syntax error\n"}` + "\n" +
				`{"ImportPath":"example.com/p [example.com/p.test]","Action":"build-fail"}` + "\n" +
				ev(`"Action":"fail","Elapsed":0`),
			wantOK:   false,
			contains: []string{"FAIL\texample.com/p\t0.000s", "p.go:1: syntax error"},
		},
		{
			name:     "text that is not an event is passed through",
			in:       "go: downloading example.com/x v1.0.0\n" + ev(`"Action":"pass"`),
			wantOK:   true,
			contains: []string{"go: downloading example.com/x v1.0.0"},
		},
		{
			name:     "no event",
			in:       "",
			wantOK:   false,
			contains: []string{"no test event"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out strings.Builder
			ok, err := report(strings.NewReader(tt.in), &out)
			require.NoError(t, err)
			assert.Equal(t, tt.wantOK, ok, out.String())
			for _, s := range tt.contains {
				assert.Contains(t, out.String(), s)
			}
			for _, s := range tt.excludes {
				assert.NotContains(t, out.String(), s)
			}
		})
	}
}

func TestSkipReason(t *testing.T) {
	tests := []struct {
		lines []string
		want  string
	}{
		{[]string{"=== RUN   TestX\n", "    x_test.go:12: not here: see docs\n", "--- SKIP: TestX (0.00s)\n"}, "not here: see docs"},
		{[]string{"=== RUN   TestX\n", "--- SKIP: TestX (0.00s)\n"}, ""},
		{[]string{"    x_test.go:1: first\n", "        second line\n"}, "first second line"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, skipReason(tt.lines))
	}
}

func TestAppendSkipped(t *testing.T) {
	const skipped = "ok  \tex/a\t0.1s\n\n" + skippedHeader + "  ex/a TestX: no browser\n"
	tests := []struct {
		name    string
		reports []string
		want    string // the file's content; "" when it must not exist
	}{
		{"nothing skipped", []string{"ok  \tex/a\t0.1s\n"}, ""},
		{"one module", []string{skipped}, "  ex/a TestX: no browser\n"},
		{"two modules accumulate", []string{skipped, "ok  \tex/b\t0.1s\n\n" + skippedHeader + "  ex/b TestY: no database\n"},
			"  ex/a TestX: no browser\n  ex/b TestY: no database\n"},
		{"a failure after the list is left out", []string{skipped + "\ntestreport: no test event in the input\n"}, "  ex/a TestX: no browser\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "skipped.txt")
			for _, r := range tt.reports {
				require.NoError(t, appendSkipped(path, r))
			}
			got, err := os.ReadFile(path)
			if tt.want == "" {
				assert.ErrorIs(t, err, os.ErrNotExist)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, string(got))
		})
	}
}
