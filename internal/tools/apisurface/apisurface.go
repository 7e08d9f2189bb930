// Package apisurface counts the exported names a package declares, for the
// API budget tests of the root package and of contracts (their
// apisurface_test.go): one walk, so that both budgets count alike.
package apisurface

import "go/ast"

// Names lists the exported names declared by files: "func F", "method T.M"
// (a method of an exported type), "type T", "const C" and "var V". For each
// exported type, more, when set, may add the names that type brings (the
// root adds the methods an alias of an internal type makes reachable).
func Names(files []*ast.File, more func(f *ast.File, spec *ast.TypeSpec) []string) []string {
	var names []string
	for _, f := range files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() {
					continue
				}
				if d.Recv == nil {
					names = append(names, "func "+d.Name.Name)
				} else if recv := ReceiverName(d); ast.IsExported(recv) {
					names = append(names, "method "+recv+"."+d.Name.Name)
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if !s.Name.IsExported() {
							continue
						}
						names = append(names, "type "+s.Name.Name)
						if more != nil {
							names = append(names, more(f, s)...)
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

// ReceiverName is the type name of a method's receiver (T of *T, T[P] or
// *T[P, Q]); "" when it is not a plain name.
func ReceiverName(d *ast.FuncDecl) string {
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
	if id, ok := recv.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}
