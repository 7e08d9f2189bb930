package answer_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEveryIdentifierHasAnExample: every exported name of the package (a
// method as Type_Method) has a runnable Example function.
func TestEveryIdentifierHasAnExample(t *testing.T) {
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	fset := token.NewFileSet()
	var exported []string
	examples := map[string]bool{}
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		require.NoError(t, err)
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if strings.HasSuffix(name, "_test.go") {
					if ex, ok := strings.CutPrefix(d.Name.Name, "Example"); ok {
						require.NotNil(t, d.Body)
						examples[ex] = hasOutput(f, d)
					}
					continue
				}
				if !d.Name.IsExported() {
					continue
				}
				if d.Recv == nil {
					exported = append(exported, d.Name.Name)
					continue
				}
				recv := d.Recv.List[0].Type
				if star, ok := recv.(*ast.StarExpr); ok {
					recv = star.X
				}
				if id, ok := recv.(*ast.Ident); ok && id.IsExported() {
					exported = append(exported, id.Name+"_"+d.Name.Name)
				}
			case *ast.GenDecl:
				if strings.HasSuffix(name, "_test.go") {
					continue
				}
				for _, spec := range d.Specs {
					switch s := spec.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							exported = append(exported, s.Name.Name)
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								exported = append(exported, n.Name)
							}
						}
					}
				}
			}
		}
	}
	require.NotEmpty(t, exported)
	for _, name := range exported {
		if name == "Success" || name == "Fail" {
			name = "Status" // the constants of ExampleStatus
		}
		runs, ok := examples[name]
		if assert.True(t, ok, "no Example%s", name) {
			assert.True(t, runs, "Example%s has no Output comment: it would not run", name)
		}
	}
}

// hasOutput reports whether the example function d ends with an Output
// comment, so that go test runs it.
func hasOutput(f *ast.File, d *ast.FuncDecl) bool {
	for _, c := range f.Comments {
		if c.Pos() > d.Body.Lbrace && c.End() < d.Body.Rbrace && strings.Contains(c.Text(), "Output:") {
			return true
		}
	}
	return false
}
