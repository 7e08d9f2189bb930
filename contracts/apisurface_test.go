package contracts_test

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

// maxContractsNames is the budget of exported names of package contracts,
// counted as the root package counts its own (apisurface_test.go there):
// top-level funcs, methods on exported types, types, consts and vars of the
// non-test files. The models carry no JSON methods (Marshal and Unmarshal
// encode them); the budget is the issue's, so the package cannot grow
// silently back towards one method pair per model.
const maxContractsNames = 250

// parseNonTest parses every non-test Go file of dir, whatever its build
// constraints, by file name.
func parseNonTest(t *testing.T, dir string, mode parser.Mode) map[string]*ast.File {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	require.NoError(t, err)
	fset := token.NewFileSet()
	files := map[string]*ast.File{}
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, mode)
		require.NoError(t, err)
		files[name] = f
	}
	require.NotEmpty(t, files, "no Go file in %s", dir)
	return files
}

// exportedNames lists the exported names of the package in dir.
func exportedNames(t *testing.T, dir, pkgName string) []string {
	t.Helper()
	var files []*ast.File
	for _, f := range parseNonTest(t, dir, 0) {
		if f.Name.Name == pkgName {
			files = append(files, f)
		}
	}
	return apisurface.Names(files, nil)
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
	n := 0
	for name, f := range parseNonTest(t, ".", parser.ImportsOnly) {
		for _, imp := range f.Imports {
			n++
			path := strings.Trim(imp.Path.Value, `"`)
			assert.False(t, strings.HasPrefix(path, "github.com/supervaize/supervaizer-go"), "%s imports %s", name, path)
			assert.NotEqual(t, "unsafe", path, "%s imports unsafe", name)
		}
	}
	assert.Greater(t, n, 10, "the check must see the package's imports")
}
