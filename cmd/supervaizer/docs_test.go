package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// flagLine matches a flag in the usage PrintDefaults writes.
var flagLine = regexp.MustCompile(`(?m)^  (-[a-z-]+)`)

// TestDocsListEveryFlagAndCase: docs/cli.md names every flag of every
// command and every case check reports (by its name before the ':').
func TestDocsListEveryFlagAndCase(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "cli.md"))
	require.NoError(t, err)
	doc := string(b)
	for name := range commands {
		_, errOut, code := cli(t, name, "-h")
		require.Equal(t, 0, code)
		flags := flagLine.FindAllStringSubmatch(errOut, -1)
		require.NotEmpty(t, flags, name)
		for _, f := range flags {
			assert.Contains(t, doc, "`"+f[1], "docs/cli.md does not name %s's flag %s", name, f[1])
		}
	}
	url := startController(t, localEnv, nil)
	_, cases, _ := runCheckJSON(t, "-api-key", "local-dev", "-write", "-heartbeat-wait", "2s", url)
	require.NotEmpty(t, cases)
	for n := range cases {
		base, _, _ := strings.Cut(n, ":")
		assert.Contains(t, doc, "`"+base, "docs/cli.md does not describe the case %s", n)
	}
	for _, tc := range tokenCases {
		assert.Contains(t, doc, "`"+tc.name+"`")
	}
}
