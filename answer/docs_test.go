package answer_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/answer"
)

// docsPage is the package's page in docs/.
const docsPage = "../docs/envelopes.md"

// fenced returns the lines between the first line equal to open after
// offset and the next line equal to close, and where that block ends.
func fenced(t *testing.T, doc string, offset int, open, close string) (string, int) {
	t.Helper()
	i := strings.Index(doc[offset:], "\n"+open+"\n")
	require.GreaterOrEqual(t, i, 0, "no %s block in %s", open, docsPage)
	start := offset + i + len(open) + 2
	j := strings.Index(doc[start:], "\n"+close+"\n")
	require.GreaterOrEqual(t, j, 0, "the %s block of %s is not closed", open, docsPage)
	return doc[start : start+j+1], start + j
}

// TestDocsPageShowsWhatRuns: the complete example of docs/envelopes.md runs,
// and prints the transcript the page shows after it (prompts, the fenced
// answer, the correction, the handoff); the strict schema shown is
// Schema[Envelope]()'s.
func TestDocsPageShowsWhatRuns(t *testing.T) {
	raw, err := os.ReadFile(docsPage)
	require.NoError(t, err)
	doc := string(raw)
	program, end := fenced(t, doc, 0, "```go", "```")
	transcript, end := fenced(t, doc, end, "````text", "````")
	schema, _ := fenced(t, doc, end, "```json", "```")

	dir := t.TempDir()
	main := filepath.Join(dir, "main.go")
	require.NoError(t, os.WriteFile(main, []byte(program), 0o600))
	cmd := exec.Command("go", "run", main)
	out, err := cmd.Output()
	require.NoError(t, err, "the example of %s does not run", docsPage)
	assert.Equal(t, transcript, string(out), "%s shows another transcript than its example prints", docsPage)

	want, err := answer.Schema[answer.Envelope]()
	require.NoError(t, err)
	assert.Equal(t, string(want)+"\n", schema)
}
