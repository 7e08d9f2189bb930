package apisurface

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
)

// MissingExamples checks that every exported name of the package in dir
// ([Names]; a method as Type_Method) has a runnable Example function (one
// with an Output comment, so that go test runs it). A constant is shown by
// an Example of its own, by one of its exported type, or by any runnable
// Example that uses it. It returns one line per name missing one.
func MissingExamples(dir string) ([]string, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	var files []*ast.File
	examples := map[string]bool{} // name → runnable
	used := map[string]bool{}     // identifiers a runnable Example uses
	constType := map[string]string{}
	for _, path := range paths {
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		if !strings.HasSuffix(path, "_test.go") {
			files = append(files, f)
			typedConsts(f, constType)
			continue
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv != nil || fd.Body == nil {
				continue
			}
			ex, ok := strings.CutPrefix(fd.Name.Name, "Example")
			if !ok {
				continue
			}
			runs := hasOutput(f, fd)
			examples[ex] = examples[ex] || runs
			if runs {
				ast.Inspect(fd.Body, func(n ast.Node) bool {
					switch n := n.(type) {
					case *ast.SelectorExpr:
						used[n.Sel.Name] = true
					case *ast.Ident:
						used[n.Name] = true
					}
					return true
				})
			}
		}
	}
	exported := Names(files, nil)
	if len(exported) == 0 {
		return nil, fmt.Errorf("apisurface: no exported name in %s", dir)
	}
	var missing []string
	for _, n := range exported {
		kind, name, _ := strings.Cut(n, " ")
		name = strings.ReplaceAll(name, ".", "_")
		runs, ok := examples[name]
		if kind == "const" && !runs {
			if typ := constType[name]; (typ != "" && examples[typ]) || used[name] {
				continue
			}
			missing = append(missing, fmt.Sprintf("const %s: no runnable Example%s, none of its type, none using it", name, name))
			continue
		}
		switch {
		case !ok:
			missing = append(missing, fmt.Sprintf("%s: no Example%s", n, name))
		case !runs:
			missing = append(missing, fmt.Sprintf("%s: Example%s has no Output comment: it would not run", n, name))
		}
	}
	return missing, nil
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
