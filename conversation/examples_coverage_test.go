package conversation_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/internal/tools/apisurface"
)

// TestEveryIdentifierHasAnExample: every exported name of the package
// (apisurface.Names; a method as Type_Method) has a runnable Example
// function; a constant is shown by a runnable Example that uses it.
func TestEveryIdentifierHasAnExample(t *testing.T) {
	names, err := filepath.Glob("*.go")
	require.NoError(t, err)
	fset := token.NewFileSet()
	var files []*ast.File
	examples := map[string]bool{} // name → has an Output comment
	used := map[string]bool{}     // identifiers used by a runnable Example
	for _, name := range names {
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		require.NoError(t, err)
		if !strings.HasSuffix(name, "_test.go") {
			files = append(files, f)
			continue
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok {
				continue
			}
			ex, ok := strings.CutPrefix(fd.Name.Name, "Example")
			if !ok {
				continue
			}
			runs := hasOutput(f, fd)
			examples[ex] = runs
			if runs {
				ast.Inspect(fd.Body, func(n ast.Node) bool {
					if sel, ok := n.(*ast.SelectorExpr); ok {
						used[sel.Sel.Name] = true
					}
					return true
				})
			}
		}
	}
	exported := apisurface.Names(files, nil)
	require.NotEmpty(t, exported)
	for _, n := range exported {
		kind, name, _ := strings.Cut(n, " ")
		name = strings.ReplaceAll(name, ".", "_")
		if kind == "const" {
			assert.True(t, used[name], "no runnable Example uses %s", name)
			continue
		}
		runs, ok := examples[name]
		if assert.True(t, ok, "no Example%s", name) {
			assert.True(t, runs, "Example%s has no Output comment: it would not run", name)
		}
	}
}

// hasOutput reports whether the example function d holds an Output
// comment, so that go test runs it.
func hasOutput(f *ast.File, d *ast.FuncDecl) bool {
	for _, c := range f.Comments {
		if c.Pos() > d.Body.Lbrace && c.End() < d.Body.Rbrace && strings.Contains(c.Text(), "Output:") {
			return true
		}
	}
	return false
}
