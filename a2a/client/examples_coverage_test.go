package client_test

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
// function; a constant of an exported type (Binding10, OpSend,
// CapabilityAccepted, ...) is shown by its type's.
func TestEveryIdentifierHasAnExample(t *testing.T) {
	names, err := filepath.Glob("*.go")
	require.NoError(t, err)
	fset := token.NewFileSet()
	var files []*ast.File
	examples := map[string]bool{} // name → has an Output comment
	constType := map[string]string{}
	for _, name := range names {
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		require.NoError(t, err)
		if !strings.HasSuffix(name, "_test.go") {
			files = append(files, f)
			typedConsts(f, constType)
			continue
		}
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok {
				if ex, ok := strings.CutPrefix(fd.Name.Name, "Example"); ok {
					examples[ex] = hasOutput(f, fd)
				}
			}
		}
	}
	exported := apisurface.Names(files, nil)
	require.NotEmpty(t, exported)
	for _, n := range exported {
		kind, name, _ := strings.Cut(n, " ")
		name = strings.ReplaceAll(name, ".", "_")
		if typ, ok := constType[name]; ok && kind == "const" {
			name = typ
		}
		runs, ok := examples[name]
		if assert.True(t, ok, "no Example%s", name) {
			assert.True(t, runs, "Example%s has no Output comment: it would not run", name)
		}
	}
}

// typedConsts records the exported type of each constant of f declared
// with one (an iota continuation takes the type above it).
func typedConsts(f *ast.File, out map[string]string) {
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		var typ *ast.Ident
		for _, s := range g.Specs {
			v := s.(*ast.ValueSpec)
			if id, ok := v.Type.(*ast.Ident); ok {
				typ = id
			} else if len(v.Values) > 0 {
				typ = nil
			}
			for _, n := range v.Names {
				if typ != nil && typ.IsExported() {
					out[n.Name] = typ.Name
				}
			}
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
