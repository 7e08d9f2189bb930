package apishape

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The root's shape after issue 34: a house a newcomer finds their way in.
const (
	// maxRootFiles bounds the root package's non-test files.
	maxRootFiles = 25
	// maxServerFuncs bounds the functions (methods or not, exported or not,
	// function literals included) that take a *Server: the rest take what
	// they use.
	maxServerFuncs = 60
)

// rootFiles parses the root package's non-test files.
func rootFiles(t *testing.T) (*token.FileSet, map[string]*ast.File) {
	t.Helper()
	entries, err := os.ReadDir(repoRoot)
	require.NoError(t, err)
	fset := token.NewFileSet()
	files := map[string]*ast.File{}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(repoRoot, name), nil, parser.ParseComments)
		require.NoError(t, err)
		files[name] = f
	}
	require.NotEmpty(t, files)
	return fset, files
}

// TestRootFileCount: the root keeps at most maxRootFiles non-test files.
func TestRootFileCount(t *testing.T) {
	_, files := rootFiles(t)
	assert.LessOrEqual(t, len(files), maxRootFiles,
		"the root package has %d non-test files (at most %d): a subsystem belongs in its own package", len(files), maxRootFiles)
}

// TestServerFunctionsBudget: at most maxServerFuncs functions take a
// *Server, as receiver or parameter.
func TestServerFunctionsBudget(t *testing.T) {
	_, files := rootFiles(t)
	isServer := func(e ast.Expr) bool {
		s, ok := e.(*ast.StarExpr)
		if !ok {
			return false
		}
		id, ok := s.X.(*ast.Ident)
		return ok && id.Name == "Server"
	}
	var takers []string
	for name, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			var ft *ast.FuncType
			label := name + ": func literal"
			switch x := n.(type) {
			case *ast.FuncDecl:
				ft, label = x.Type, name+": "+x.Name.Name
				if x.Recv != nil && len(x.Recv.List) > 0 && isServer(x.Recv.List[0].Type) {
					takers = append(takers, label)
					return true
				}
			case *ast.FuncLit:
				ft = x.Type
			default:
				return true
			}
			for _, p := range ft.Params.List {
				if isServer(p.Type) {
					takers = append(takers, label)
					break
				}
			}
			return true
		})
	}
	assert.Greater(t, len(takers), 10, "the count must see the Server's methods")
	assert.LessOrEqual(t, len(takers), maxServerFuncs,
		"%d functions take a *Server (at most %d): give a function what it uses (the logger, the config, an agent), or a component its own type", len(takers), maxServerFuncs)
}

// a2aMethodName matches the names of the A2A methods of both bindings.
var a2aMethodName = regexp.MustCompile(`^(message/|tasks/|SendMessage$|SendStreamingMessage$|GetTask$|CancelTask$|SubscribeToTask$|ListTasks$|GetExtendedAgentCard$|[A-Za-z]*TaskPushNotificationConfigs?$)`)

// TestRootNamesNoA2ABinding: the A2A bindings are internal/a2abind's; no root
// file names an A2A method (in code or a comment), refers to a binding
// version or to the a2atask package's methods and versions.
func TestRootNamesNoA2ABinding(t *testing.T) {
	fset, files := rootFiles(t)
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.BasicLit:
				if s, err := strconv.Unquote(x.Value); err == nil && x.Kind == token.STRING && a2aMethodName.MatchString(s) {
					t.Errorf("%s: the A2A method %q is named in the root", fset.Position(x.Pos()), s)
				}
			case *ast.SelectorExpr:
				if id, ok := x.X.(*ast.Ident); ok && id.Name == "a2atask" &&
					(strings.HasPrefix(x.Sel.Name, "Method") || strings.HasPrefix(x.Sel.Name, "ProtocolVersion")) {
					t.Errorf("%s: a2atask.%s is named in the root", fset.Position(x.Pos()), x.Sel.Name)
				}
			}
			return true
		})
		for _, cg := range f.Comments {
			for _, word := range strings.Fields(cg.Text()) {
				word = strings.Trim(word, "`.,;:()[]\"'")
				if a2aMethodName.MatchString(word) || word == "binding03" || word == "binding10" {
					t.Errorf("%s: a comment names %q", fset.Position(cg.Pos()), word)
				}
			}
		}
	}
}
