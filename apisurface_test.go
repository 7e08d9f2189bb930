package supervaizer_test

import (
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/supervaize/supervaizer-go/internal/tools/apisurface"
)

// maxRootNames is the budget of exported names of the root package: what an
// agent author learns. A subsystem with its own vocabulary lives in its own
// package (studio, checkpoint, resource), not here. The interceptor (Call,
// Interceptor, UnaryFunc, StreamFunc, HandlerFunc, WithInterceptors) is in
// the root: its Call carries the pipeline's state, which no other package
// can reach.
const maxRootNames = 148

// modulePath is the root package's import path.
const modulePath = "github.com/supervaize/supervaizer-go"

// parsePackage parses the files of this build of the package named name in
// dir, without the tests.
func parsePackage(t *testing.T, fset *token.FileSet, dir, name string) []*ast.File {
	t.Helper()
	pkg, err := build.ImportDir(dir, 0)
	require.NoError(t, err)
	require.Equal(t, name, pkg.Name)
	var files []*ast.File
	for _, file := range pkg.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(dir, file), nil, 0)
		require.NoError(t, err)
		files = append(files, f)
	}
	return files
}

// internalAliasMethods returns the exported methods reachable through spec
// when it is an alias of a type of one of the module's internal packages
// (imports maps a file's import names to paths), named after the alias:
// go doc does not show them on the alias, but an author can call them.
func internalAliasMethods(t *testing.T, fset *token.FileSet, imports map[string]string, spec *ast.TypeSpec) []string {
	t.Helper()
	if !spec.Assign.IsValid() {
		return nil
	}
	rhs := spec.Type
	switch x := rhs.(type) {
	case *ast.IndexExpr:
		rhs = x.X
	case *ast.IndexListExpr:
		rhs = x.X
	}
	sel, ok := rhs.(*ast.SelectorExpr)
	if !ok {
		return nil
	}
	pkgName, ok := sel.X.(*ast.Ident)
	if !ok {
		return nil
	}
	path := imports[pkgName.Name]
	if !strings.HasPrefix(path, modulePath+"/internal/") {
		return nil
	}
	dir := "." + strings.TrimPrefix(path, modulePath)
	var names []string
	for _, f := range parsePackage(t, fset, dir, pkgName.Name) {
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv != nil && fd.Name.IsExported() && apisurface.ReceiverName(fd) == sel.Sel.Name {
				names = append(names, "method "+spec.Name.Name+"."+fd.Name.Name+" (through an alias of "+path+"."+sel.Sel.Name+")")
			}
		}
	}
	return names
}

// fileImports maps the import names of f to their paths.
func fileImports(f *ast.File) map[string]string {
	imports := map[string]string{}
	for _, is := range f.Imports {
		path := strings.Trim(is.Path.Value, `"`)
		name := path[strings.LastIndex(path, "/")+1:]
		if is.Name != nil {
			name = is.Name.Name
		}
		imports[name] = path
	}
	return imports
}

// rootExportedNames lists the exported names of the root package's non-test
// files: top-level funcs, methods on exported types, types, consts and vars,
// and the methods reachable through an alias of an internal type.
func rootExportedNames(t *testing.T) []string {
	t.Helper()
	fset := token.NewFileSet()
	return apisurface.Names(parsePackage(t, fset, ".", "supervaizer"), func(f *ast.File, spec *ast.TypeSpec) []string {
		return internalAliasMethods(t, fset, fileImports(f), spec)
	})
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

// TestInternalAliasMethods: the budget counts what an alias of an internal
// type lets an author call, and nothing for an alias of a public type or a
// defined type.
func TestInternalAliasMethods(t *testing.T) {
	tests := []struct {
		name, src string
		want      []string
	}{
		{"alias of an internal type", `type Secret = redact.Secret`, []string{
			"method Secret.Value", "method Secret.IsZero", "method Secret.String", "method Secret.GoString",
			"method Secret.LogValue", "method Secret.MarshalText", "method Secret.Format"}},
		{"alias of a public type", `type Request = contracts.ActionRequest`, nil},
		{"defined type", `type Secret redact.Secret`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fset := token.NewFileSet()
			src := "package p\nimport (\n\t\"" + modulePath + "/internal/redact\"\n\t\"" + modulePath + "/contracts\"\n)\n" + tt.src + "\n"
			f, err := parser.ParseFile(fset, "p.go", src, 0)
			require.NoError(t, err)
			spec := f.Decls[len(f.Decls)-1].(*ast.GenDecl).Specs[0].(*ast.TypeSpec)
			var got []string
			for _, n := range internalAliasMethods(t, fset, fileImports(f), spec) {
				got = append(got, n[:strings.Index(n, " (")])
			}
			assert.ElementsMatch(t, tt.want, got)
		})
	}
}
