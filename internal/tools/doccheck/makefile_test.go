package doccheck

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runMake runs make in the repository root with args and returns its output.
func runMake(t *testing.T, args ...string) string {
	t.Helper()
	_, err := exec.LookPath("make")
	require.NoError(t, err, "make runs the repository's checks: install it")
	cmd := exec.CommandContext(t.Context(), "make", append([]string{"-s", "--no-print-directory"}, args...)...)
	cmd.Dir = repoRoot(t)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "make %s:\n%s", strings.Join(args, " "), out)
	return string(out)
}

// TestMakeHelpAligned: make help prints every target with its description in
// one column, however long the longest target name.
func TestMakeHelpAligned(t *testing.T) {
	out := runMake(t, "help")
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	require.Greater(t, len(lines), 10, out)
	longest := 0
	for _, l := range lines {
		longest = max(longest, len(strings.Fields(l)[0]))
	}
	col := -1
	for _, l := range lines {
		name := strings.Fields(l)[0]
		rest := l[len(name):]
		start := len(name) + len(rest) - len(strings.TrimLeft(rest, " "))
		if col < 0 {
			col = start
		}
		assert.Equal(t, col, start, "the description of %s starts at column %d, the others' at %d:\n%s", name, start, col, out)
		assert.Greater(t, start, longest, "at least one space after the longest name")
	}
}

// TestMakeTestListIsPerRun: make test keeps the list of the tests that did
// not run in a file of its own run (mktemp, removed on exit), never in a fixed
// path that a second run of the same user would share and delete.
func TestMakeTestListIsPerRun(t *testing.T) {
	out := runMake(t, "-n", "-o", "lint", "test") // -n prints the recipe; -o lint leaves lint out
	require.Contains(t, out, `skipped=$(mktemp "${TMPDIR:-/tmp}/supervaizer-make-test-skipped.XXXXXX")`)
	require.Contains(t, out, `trap 'rm -f "$skipped"' EXIT`)
	require.Contains(t, out, `-summary "$skipped"`)
	assert.NotContains(t, out, "supervaizer-make-test-skipped-", "a fixed per-user file")
	assert.NotRegexp(t, `-summary /`, out, "a fixed path")
}

// TestMakeRunBuildsTelemetryOnlyWhenAsked: make run builds the example with
// -tags telemetry (the OpenTelemetry exporters, with gRPC and protobuf) only
// when the environment asks for telemetry (the example's TestDefaultBuild
// checks what the build without the tag leaves out).
func TestMakeRunBuildsTelemetryOnlyWhenAsked(t *testing.T) {
	for _, tc := range []struct {
		vars      []string
		telemetry bool
	}{
		{nil, false},
		{[]string{"SUPERVAIZER_DATABASE_URL=postgres://db/x"}, false},
		{[]string{"SUPERVAIZER_METRICS_ADDR=127.0.0.1:9464"}, true},
		{[]string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318"}, true},
		{[]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://127.0.0.1:4318/v1/traces"}, true},
	} {
		out := runMake(t, append([]string{"-n", "run"}, tc.vars...)...)
		require.Regexp(t, `go build -C examples/research-agent .*-o \S+/\.bin/research-agent \.`, out)
		assert.Equal(t, tc.telemetry, strings.Contains(out, "-tags telemetry"), "%v:\n%s", tc.vars, out)
	}
}
