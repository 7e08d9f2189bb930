package doccheck

import (
	"go/doc/comment"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pkgDocBlocks returns the code blocks of every package comment in the
// module (test files and testdata excluded), with the file and line of the
// comment that holds them.
func pkgDocBlocks(t *testing.T, root string) []block {
	t.Helper()
	var out []block
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (n == "testdata" || strings.HasPrefix(n, ".")) {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil && path != root {
				return filepath.SkipDir // a nested module checks its own documentation
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.PackageClauseOnly)
		if err != nil {
			return err
		}
		if f.Doc == nil {
			return nil
		}
		var p comment.Parser
		for _, b := range p.Parse(f.Doc.Text()).Content {
			if c, ok := b.(*comment.Code); ok {
				out = append(out, block{file: path, line: fset.Position(f.Doc.Pos()).Line, code: c.Text})
			}
		}
		return nil
	})
	require.NoError(t, err)
	return out
}

// isGoFragment reports whether code parses as Go statements or declarations
// (the indented blocks that are wire formats or shell commands do not).
func isGoFragment(code string) bool {
	fset := token.NewFileSet()
	if _, err := parser.ParseFile(fset, "", "package p\nfunc _() {\n"+code+"\n}\n", parser.SkipObjectResolution); err == nil {
		return true
	}
	_, err := parser.ParseFile(fset, "", "package p\n"+code, parser.SkipObjectResolution)
	return err == nil
}

// TestPackageDocsCompile vets every package-comment code block that is a
// complete Go file (it starts with a package clause), such as doc.go's quick
// start, the first thing pkg.go.dev shows.
func TestPackageDocsCompile(t *testing.T) {
	root := repoRoot(t)
	var files []block
	quickStart := false
	for _, b := range pkgDocBlocks(t, root) {
		if isGoFile(b.code) {
			files = append(files, b)
			quickStart = quickStart || b.file == filepath.Join(root, "doc.go")
		}
	}
	require.True(t, quickStart, "doc.go's quick start is a complete Go file")
	vetBlocks(t, root, files)
}

// TestPackageDocFragmentsParse: a package-comment block that is Go but not a
// complete file must at least be valid Go syntax.
func TestPackageDocFragmentsParse(t *testing.T) {
	root := repoRoot(t)
	n := 0
	for _, b := range pkgDocBlocks(t, root) {
		code := strings.TrimSpace(b.code)
		if isGoFile(code) || !looksLikeGo(code) {
			continue
		}
		n++
		require.True(t, isGoFragment(b.code), "%s:%d: a Go block of the package comment does not parse:\n%s", b.file, b.line, b.code)
	}
	require.NotZero(t, n)
}

// looksLikeGo tells the Go blocks from wire formats and shell commands: Go
// blocks use an assignment, a call or a declaration keyword.
func looksLikeGo(code string) bool {
	if strings.HasPrefix(code, "go get ") || strings.HasPrefix(code, "id:") || strings.HasPrefix(code, "curl ") {
		return false
	}
	for _, tok := range []string{":=", "func ", "import ", "(", "{"} {
		if strings.Contains(code, tok) {
			return true
		}
	}
	return false
}

// TestNoSnippetServesWithoutTimeouts: the README, the docs and the package
// comments serve with the SDK's call (timeouts and a header limit), never with
// http.ListenAndServe, which has none.
func TestNoSnippetServesWithoutTimeouts(t *testing.T) {
	root := repoRoot(t)
	blocks := append(markdownGoBlocks(t, root), pkgDocBlocks(t, root)...)
	require.NotEmpty(t, blocks)
	for _, b := range blocks {
		assert.NotContains(t, b.code, "http.ListenAndServe(", "%s:%d serves without timeouts: use srv.ListenAndServe(ctx)", b.file, b.line)
	}
}

// TestEveryVariableInDeploying: every SUPERVAIZER_* and SUPERVAIZE_* variable
// named in the repository's Go files outside tests (what users set) is a row
// of docs/deploying.md's table. Variables only tests read are listed there
// too, by hand.
func TestEveryVariableInDeploying(t *testing.T) {
	root := repoRoot(t)
	doc, err := os.ReadFile(filepath.Join(root, "docs", "deploying.md"))
	require.NoError(t, err)
	rows := map[string]bool{}
	for line := range strings.Lines(string(doc)) {
		if strings.HasPrefix(line, "| `SUPERVAIZ") {
			for _, m := range envVar.FindAllString(strings.SplitN(line, "|", 3)[1], -1) {
				rows[m] = true
			}
		}
	}
	require.NotEmpty(t, rows)
	seen := map[string]string{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (n == "testdata" || n == "node_modules" || strings.HasPrefix(n, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range envVar.FindAllString(string(b), -1) {
			if !strings.HasSuffix(m, "_") { // a prefix such as SUPERVAIZER_WORKSPACE_AUTH_
				seen[m] = path
			}
		}
		return nil
	})
	require.NoError(t, err)
	require.NotEmpty(t, seen)
	for v, path := range seen {
		assert.True(t, rows[v], "%s (used in %s) is missing from docs/deploying.md's table", v, path)
	}
}

var envVar = regexp.MustCompile(`\bSUPERVAIZER?_[A-Z0-9_]+`)
