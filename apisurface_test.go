package supervaizer_test

import (
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// maxRootNames is the budget of exported names of the root package: what an
// agent author learns. A subsystem with its own vocabulary lives in its own
// package (studio, internal/checkpoint, resource), not here.
const maxRootNames = 168

// rootExportedNames lists the exported names of the root package's non-test
// files: top-level funcs, methods on exported types, types, consts and vars.
func rootExportedNames(t *testing.T) []string {
	t.Helper()
	fset := token.NewFileSet()
	pkg, err := build.ImportDir(".", 0) // the files of this build, without the tests
	require.NoError(t, err)
	require.Equal(t, "supervaizer", pkg.Name)
	var names []string
	for _, name := range pkg.GoFiles {
		f, err := parser.ParseFile(fset, name, nil, 0)
		require.NoError(t, err)
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() {
					continue
				}
				if d.Recv == nil {
					names = append(names, "func "+d.Name.Name)
					continue
				}
				recv := d.Recv.List[0].Type
				if s, ok := recv.(*ast.StarExpr); ok {
					recv = s.X
				}
				switch x := recv.(type) {
				case *ast.IndexExpr:
					recv = x.X
				case *ast.IndexListExpr:
					recv = x.X
				}
				if id, ok := recv.(*ast.Ident); ok && id.IsExported() {
					names = append(names, "method "+id.Name+"."+d.Name.Name)
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							names = append(names, "type "+s.Name.Name)
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								names = append(names, d.Tok.String()+" "+n.Name)
							}
						}
					}
				}
			}
		}
	}
	return names
}

// TestRootExportedNamesBudget keeps the root package within its budget, so
// the author-facing API cannot silently grow back.
func TestRootExportedNamesBudget(t *testing.T) {
	names := rootExportedNames(t)
	t.Logf("the root package exports %d names (budget %d)", len(names), maxRootNames)
	assert.Greater(t, len(names), 50, "the count must see the root's names")
	assert.LessOrEqual(t, len(names), maxRootNames,
		"the root package exports %d names (budget %d): move a subsystem's vocabulary to its own package", len(names), maxRootNames)
}
