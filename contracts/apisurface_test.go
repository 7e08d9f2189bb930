package contracts_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// maxContractsNames is the budget of exported names of package contracts,
// counted as the root package counts its own (apisurface_test.go there):
// top-level funcs, methods on exported types, types, consts and vars of the
// non-test files. It is today's count, so the package cannot grow silently;
// 150 of the names are the MarshalJSON/UnmarshalJSON pairs that keep the
// models open (Extra) and encoding/json's output pinned by the goldens.
const maxContractsNames = 375

// exportedNames lists the exported names of the package in dir.
func exportedNames(t *testing.T, dir, pkgName string) []string {
	t.Helper()
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	require.NoError(t, err)
	pkg, ok := pkgs[pkgName]
	require.True(t, ok, "no package %s in %s", pkgName, dir)
	var names []string
	for _, f := range pkg.Files {
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

// TestContractsExportedNamesBudget keeps package contracts within its
// budget: the wire truth (models, schema, Validate), not the SDK's hot-path
// machinery, which is internal.
func TestContractsExportedNamesBudget(t *testing.T) {
	names := exportedNames(t, ".", "contracts")
	t.Logf("package contracts exports %d names (budget %d)", len(names), maxContractsNames)
	assert.Greater(t, len(names), 100, "the count must see the package's names")
	assert.LessOrEqual(t, len(names), maxContractsNames,
		"package contracts exports %d names (budget %d): hot-path machinery belongs under internal/", len(names), maxContractsNames)
	for _, n := range names {
		for _, gone := range []string{"DecodeAt", "ValidateAt", "AppendResult", "AppendValue", "AppendJSONString"} {
			assert.NotContains(t, n, gone, "the tape-facing API is internal (internal/validate, internal/encode)")
		}
	}
}

// TestContractsImportsNothingOfOurs: contracts is the wire truth; the SDK's
// packages import it, never the other way.
func TestContractsImportsNothingOfOurs(t *testing.T) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, parser.ImportsOnly)
	require.NoError(t, err)
	n := 0
	for _, f := range pkgs["contracts"].Files {
		for _, imp := range f.Imports {
			n++
			path := strings.Trim(imp.Path.Value, `"`)
			assert.False(t, strings.HasPrefix(path, "github.com/supervaize/supervaizer-go"), "%s imports %s", fset.Position(imp.Pos()).Filename, path)
			assert.NotEqual(t, "unsafe", path, "%s imports unsafe", fset.Position(imp.Pos()).Filename)
		}
	}
	assert.Greater(t, n, 10, "the check must see the package's imports")
}
