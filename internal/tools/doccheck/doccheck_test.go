// Package doccheck compiles every Go code block of the README and docs/, so the
// documentation cannot drift from the API.
package doccheck

import (
	"bufio"
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

type block struct {
	file string
	line int
	code string
}

func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		require.NotEqual(t, parent, dir, "go.mod not found")
		dir = parent
	}
}

// goBlocks returns the ```go fenced blocks of a Markdown file.
func goBlocks(t *testing.T, path string) []block {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var (
		out   []block
		cur   *block
		lines []string
		n     int
	)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		n++
		line := sc.Text()
		switch {
		case cur == nil && strings.TrimSpace(line) == "```go":
			cur, lines = &block{file: path, line: n}, nil
		case cur != nil && strings.TrimSpace(line) == "```":
			cur.code = strings.Join(lines, "\n") + "\n"
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			lines = append(lines, line)
		}
	}
	require.NoError(t, sc.Err())
	return out
}

// markdownGoBlocks returns the Go blocks of README.md and docs/*.md under root.
func markdownGoBlocks(t *testing.T, root string) []block {
	t.Helper()
	files := []string{filepath.Join(root, "README.md")}
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	require.NoError(t, err)
	files = append(files, docs...)
	var blocks []block
	for _, f := range files {
		blocks = append(blocks, goBlocks(t, f)...)
	}
	return blocks
}

// TestDocsCompile builds every Go block of README.md and docs/*.md. A block is
// a complete file of any package.
func TestDocsCompile(t *testing.T) {
	root := repoRoot(t)
	blocks := markdownGoBlocks(t, root)
	require.NotEmpty(t, blocks, "the README has at least one Go example")
	vetBlocks(t, root, blocks)
}

// vetBlocks type-checks and vets every block, each a complete Go file, as a
// package of its own inside the module: go vet needs a real directory, so each
// block is written to a fresh folder under internal/tools/doccheck (ignored by git)
// that is removed when the test ends.
func vetBlocks(t *testing.T, root string, blocks []block) {
	t.Helper()
	for _, b := range blocks {
		name := fmt.Sprintf("%s:%d", strings.TrimPrefix(b.file, root+string(filepath.Separator)), b.line)
		t.Run(name, func(t *testing.T) {
			require.True(t, isGoFile(b.code),
				"%s: a Go block must be a complete file starting with a package clause (use ```text for fragments)", name)
			dir, err := os.MkdirTemp(filepath.Join(root, "internal", "tools", "doccheck"), "blocks-")
			require.NoError(t, err)
			t.Cleanup(func() { _ = os.RemoveAll(dir) })
			require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte(b.code), 0o600))
			// go vet type-checks a package of any name, then runs the analyzers.
			cmd := exec.Command("go", "vet", "./internal/tools/doccheck/"+filepath.Base(dir))
			cmd.Dir = root
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "%s does not pass go vet:\n%s", name, out)
		})
	}
}

// isGoFile reports whether code starts with a package clause (after comments).
func isGoFile(code string) bool {
	_, err := parser.ParseFile(token.NewFileSet(), "", code, parser.PackageClauseOnly)
	return err == nil
}
