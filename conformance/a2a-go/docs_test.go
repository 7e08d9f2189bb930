package a2ago

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDocsSnippet builds the a2a-go blocks of docs/a2a.md and
// docs/conversations.md (fenced "```go a2a-go": the SDK's own doc check,
// which compiles its "```go" blocks inside the SDK module, leaves them to
// this module, which requires a2a-go).
func TestDocsSnippet(t *testing.T) {
	var blocks []string
	for _, doc := range []string{"../../docs/a2a.md", "../../docs/conversations.md"} {
		found := snippets(t, doc)
		require.NotEmpty(t, found, "%s has an a2a-go example", doc)
		blocks = append(blocks, found...)
	}
	for i, code := range blocks {
		dir, err := os.MkdirTemp(".", "snippet-")
		require.NoError(t, err)
		t.Cleanup(func() { _ = os.RemoveAll(dir) })
		require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte(code), 0o600))
		out, err := exec.CommandContext(t.Context(), "go", "vet", "./"+filepath.Base(dir)).CombinedOutput()
		require.NoError(t, err, "block %d does not pass go vet:\n%s", i, out)
	}
}

// snippets returns the "```go a2a-go" blocks of the Markdown file doc.
func snippets(t *testing.T, doc string) []string {
	t.Helper()
	f, err := os.Open(doc)
	require.NoError(t, err)
	defer f.Close()
	var blocks []string
	var cur *strings.Builder
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case cur == nil && strings.TrimSpace(line) == "```go a2a-go":
			cur = &strings.Builder{}
		case cur != nil && strings.TrimSpace(line) == "```":
			blocks = append(blocks, cur.String())
			cur = nil
		case cur != nil:
			cur.WriteString(line + "\n")
		}
	}
	require.NoError(t, sc.Err())
	return blocks
}
