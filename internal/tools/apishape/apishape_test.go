// Package apishape checks the shape of the repository's public API as a
// whole (issue 28): no public package re-exports an internal declaration
// (an alias of an internal type, or a constant or variable defined as an
// internal one, which go doc shows as "= internalpkg.Name" and whose methods
// it does not list), no Go file imports unsafe, and no module depends on
// curve25519-voi (signatures are verified with crypto/ed25519).
package apishape

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// repoRoot is the repository's root, from this package's folder.
const repoRoot = "../../.."

// goFiles returns every .go file of the repository (every module), testdata
// and hidden folders excluded.
func goFiles(t *testing.T) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != repoRoot && (n == "testdata" || n == "node_modules" || strings.HasPrefix(n, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".go") {
			out = append(out, path)
		}
		return nil
	})
	require.NoError(t, err)
	require.NotEmpty(t, out)
	return out
}

// public reports whether the file at path belongs to a public package: not
// a test file, not under an internal folder, not an example program.
func public(path string) bool {
	rel := filepath.ToSlash(strings.TrimPrefix(path, repoRoot+"/"))
	if strings.HasSuffix(rel, "_test.go") {
		return false
	}
	for _, seg := range strings.Split(filepath.Dir(rel), "/") {
		switch seg {
		case "internal", "examples", "e2e", "conformance":
			return false
		}
	}
	return true
}

// internalImports maps the names under which f imports an internal package
// to that package's path.
func internalImports(f *ast.File) map[string]string {
	m := map[string]string{}
	for _, imp := range f.Imports {
		p, err := strconv.Unquote(imp.Path.Value)
		if err != nil || !strings.Contains("/"+p+"/", "/internal/") {
			continue
		}
		name := p[strings.LastIndex(p, "/")+1:]
		if imp.Name != nil {
			name = imp.Name.Name
		}
		m[name] = p
	}
	return m
}

// internalRef returns "pkg.Name" when e is a selector on an internal import
// (possibly generic, pkg.Name[T]), else "".
func internalRef(e ast.Expr, imports map[string]string) string {
	switch x := e.(type) {
	case *ast.IndexExpr:
		return internalRef(x.X, imports)
	case *ast.IndexListExpr:
		return internalRef(x.X, imports)
	case *ast.ParenExpr:
		return internalRef(x.X, imports)
	case *ast.SelectorExpr:
		if id, ok := x.X.(*ast.Ident); ok {
			if _, internal := imports[id.Name]; internal {
				return id.Name + "." + x.Sel.Name
			}
		}
	}
	return ""
}

// TestNoReexportOfInternalDeclarations: no public package declares an alias
// of an internal type, nor a constant or variable defined as an internal
// one.
func TestNoReexportOfInternalDeclarations(t *testing.T) {
	fset := token.NewFileSet()
	var found []string
	checked := 0
	for _, path := range goFiles(t) {
		if !public(path) {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		checked++
		imports := internalImports(f)
		if len(imports) == 0 {
			continue
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, spec := range gd.Specs {
				switch s := spec.(type) {
				case *ast.TypeSpec:
					if s.Assign.IsValid() && s.Name.IsExported() {
						if ref := internalRef(s.Type, imports); ref != "" {
							found = append(found, fset.Position(s.Pos()).String()+": type "+s.Name.Name+" = "+ref)
						}
					}
				case *ast.ValueSpec:
					for i, name := range s.Names {
						if !name.IsExported() || i >= len(s.Values) {
							continue
						}
						if ref := internalRef(s.Values[i], imports); ref != "" {
							found = append(found, fset.Position(name.Pos()).String()+": "+gd.Tok.String()+" "+name.Name+" = "+ref)
						}
					}
				}
			}
		}
	}
	assert.Positive(t, checked)
	assert.Empty(t, found, "public declarations re-exporting internal ones")
}

// TestNoUnsafe: no Go file of the repository imports unsafe.
func TestNoUnsafe(t *testing.T) {
	fset := token.NewFileSet()
	var found []string
	for _, path := range goFiles(t) {
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		require.NoError(t, err)
		for _, imp := range f.Imports {
			if imp.Path.Value == `"unsafe"` {
				found = append(found, fset.Position(imp.Pos()).String())
			}
		}
	}
	assert.Empty(t, found, "imports of unsafe")
}

// TestStandardCrypto: no module requires curve25519-voi, and the back-channel
// package internal/sdkhook is gone.
func TestStandardCrypto(t *testing.T) {
	var mods []string
	err := filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != repoRoot && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if !d.IsDir() && (d.Name() == "go.mod" || d.Name() == "go.sum") {
			mods = append(mods, path)
		}
		return nil
	})
	require.NoError(t, err)
	require.NotEmpty(t, mods)
	for _, m := range mods {
		b, err := os.ReadFile(m)
		require.NoError(t, err)
		assert.NotContains(t, string(b), "curve25519-voi", m)
	}
	_, err = os.Stat(filepath.Join(repoRoot, "internal", "sdkhook"))
	assert.True(t, os.IsNotExist(err), "internal/sdkhook still exists")
}

// maxRootFileLines bounds the root package's non-test files: the root is thin
// glue to the subsystems (issue 28), and a file longer than this holds a
// subsystem of its own.
const maxRootFileLines = 600

// TestRootFilesStayThin: no non-test file of the root package is longer than
// maxRootFileLines lines.
func TestRootFilesStayThin(t *testing.T) {
	entries, err := os.ReadDir(repoRoot)
	require.NoError(t, err)
	checked := 0
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(repoRoot, name))
		require.NoError(t, err)
		checked++
		lines := strings.Count(string(b), "\n")
		assert.LessOrEqual(t, lines, maxRootFileLines, "%s has %d lines: move a subsystem to its own file or package", name, lines)
	}
	assert.Positive(t, checked)
}

// TestInternalHoldsWhatTheLibraryRuns: internal/ holds the library's own
// internals and, under internal/tools, the development tools (load check,
// apicheck, test helpers), apart (issue 34). Every internal package outside
// internal/tools is built into the module's public packages; no package
// under internal/tools is.
func TestInternalHoldsWhatTheLibraryRuns(t *testing.T) {
	const tools = "github.com/supervaize/supervaizer-go/internal/tools/"
	list := func(args ...string) []string {
		cmd := exec.Command("go", append([]string{"list"}, args...)...)
		cmd.Dir = repoRoot
		out, err := cmd.Output()
		require.NoError(t, err, "go list %s", strings.Join(args, " "))
		return strings.Fields(string(out))
	}
	var library, internals []string
	for _, p := range list("./...") {
		if strings.Contains(p+"/", "/internal/") {
			internals = append(internals, p)
		} else {
			library = append(library, p)
		}
	}
	require.NotEmpty(t, library)
	deps := map[string]bool{}
	for _, p := range list(append([]string{"-deps"}, library...)...) {
		deps[p] = true
	}
	var tooled int
	for _, p := range internals {
		if strings.HasPrefix(p, tools) {
			tooled++
			assert.False(t, deps[p], "%s is a development tool, yet the library imports it", p)
			continue
		}
		assert.True(t, deps[p], "%s is in internal/ but no library package imports it: a tool goes under internal/tools", p)
	}
	assert.Positive(t, tooled, "no package under internal/tools")
}

// TestJSONRPCCodesDeclaredOnce: every JSON-RPC error code (-32768 to -32000)
// is declared once, as an errcode.Code in package errcode (issue 34): no other
// constant or variable of a non-test file, in any module, is given one as a
// literal, and no other package declares a type Code of integers.
func TestJSONRPCCodesDeclaredOnce(t *testing.T) {
	const home = "errcode/errcode.go"
	var found []string
	seen := map[int64]string{}
	for _, path := range goFiles(t) {
		rel := filepath.ToSlash(strings.TrimPrefix(path, repoRoot+"/"))
		if strings.HasSuffix(rel, "_test.go") {
			continue
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		for _, decl := range f.Decls {
			g, ok := decl.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, spec := range g.Specs {
				switch s := spec.(type) {
				case *ast.TypeSpec:
					if id, ok := s.Type.(*ast.Ident); ok && s.Name.Name == "Code" && strings.HasPrefix(id.Name, "int") && rel != home {
						found = append(found, fset.Position(s.Pos()).String()+": type Code "+id.Name)
					}
				case *ast.ValueSpec:
					for i, v := range s.Values {
						u, ok := v.(*ast.UnaryExpr)
						if !ok || u.Op != token.SUB {
							continue
						}
						lit, ok := u.X.(*ast.BasicLit)
						if !ok || lit.Kind != token.INT {
							continue
						}
						n, err := strconv.ParseInt(lit.Value, 0, 64)
						if err != nil || n < 32000 || n > 32768 {
							continue
						}
						at := fset.Position(s.Names[i].Pos()).String()
						if rel != home {
							found = append(found, at+": "+s.Names[i].Name+" = -"+lit.Value)
						} else if prev, dup := seen[n]; dup {
							found = append(found, at+": -"+lit.Value+" already declared at "+prev)
						} else {
							seen[n] = at
						}
					}
				}
			}
		}
	}
	assert.Empty(t, found, "JSON-RPC codes declared outside package errcode, or twice")
	assert.GreaterOrEqual(t, len(seen), 16, "package errcode declares the codes")
}

// TestEnvironmentReadInOnePlace: the library reads the environment
// (os.Getenv, os.LookupEnv, os.Environ, or a getenv function it was given)
// in exactly one non-test file, options.go, through supervaizer.ReadEnv
// (issue 34). Examples, commands, the development tools and the test kit's
// golden switch (testing/golden, which svtest.Golden and the SDK's own
// tests share) are not the library.
func TestEnvironmentReadInOnePlace(t *testing.T) {
	const home = "options.go"
	notLibrary := func(rel string) bool {
		for _, p := range []string{"examples/", "cmd/", "e2e/", "conformance/", "internal/tools/"} {
			if strings.HasPrefix(rel, p) {
				return true
			}
		}
		return rel == "testing/golden/golden.go"
	}
	readers := map[string]bool{}
	for _, path := range goFiles(t) {
		rel := filepath.ToSlash(strings.TrimPrefix(path, repoRoot+"/"))
		if strings.HasSuffix(rel, "_test.go") || notLibrary(rel) {
			continue
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			switch fn := call.Fun.(type) {
			case *ast.SelectorExpr:
				if x, ok := fn.X.(*ast.Ident); ok && x.Name == "os" && (fn.Sel.Name == "Getenv" || fn.Sel.Name == "LookupEnv" || fn.Sel.Name == "Environ") {
					readers[rel] = true
				}
				if strings.EqualFold(fn.Sel.Name, "getenv") {
					readers[rel] = true
				}
			case *ast.Ident:
				if strings.EqualFold(fn.Name, "getenv") {
					readers[rel] = true
				}
			}
			return true
		})
	}
	assert.Equal(t, map[string]bool{home: true}, readers, "library files reading the environment")
}
