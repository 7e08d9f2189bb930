// Package doccheck compiles every Go code block of the README and docs/, so the
// documentation cannot drift from the API.
package doccheck

import (
	"bufio"
	"encoding/json"
	"fmt"
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

// TestDocsCompile builds every Go block of README.md and docs/*.md. A block is
// a complete file of any package.
func TestDocsCompile(t *testing.T) {
	root := repoRoot(t)
	files := []string{filepath.Join(root, "README.md")}
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	require.NoError(t, err)
	files = append(files, docs...)
	var blocks []block
	for _, f := range files {
		blocks = append(blocks, goBlocks(t, f)...)
	}
	require.NotEmpty(t, blocks, "the README has at least one Go example")
	tmp := t.TempDir()
	for i, b := range blocks {
		name := fmt.Sprintf("%s:%d", strings.TrimPrefix(b.file, root+string(filepath.Separator)), b.line)
		t.Run(name, func(t *testing.T) {
			require.True(t, strings.HasPrefix(strings.TrimSpace(b.code), "package "),
				"%s: a Go block must be a complete file starting with a package clause (use ```text for fragments)", name)
			real := filepath.Join(tmp, fmt.Sprintf("block%d.go", i))
			require.NoError(t, os.WriteFile(real, []byte(b.code), 0o600))
			virtualDir := filepath.Join(root, "internal", "doccheck", "blocks", fmt.Sprintf("b%d", i))
			overlay, err := json.Marshal(map[string]any{"Replace": map[string]string{filepath.Join(virtualDir, "main.go"): real}})
			require.NoError(t, err)
			ov := filepath.Join(tmp, fmt.Sprintf("overlay%d.json", i))
			require.NoError(t, os.WriteFile(ov, overlay, 0o600))
			// go build type-checks a package of any name; the output is discarded.
			cmd := exec.Command("go", "build", "-overlay", ov, "-o", os.DevNull, "./internal/doccheck/blocks/"+filepath.Base(virtualDir))
			cmd.Dir = root
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "%s does not compile:\n%s", name, out)
		})
	}
}
