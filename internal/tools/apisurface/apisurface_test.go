package apisurface

import (
	"go/ast"
	"go/parser"
	"go/token"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNames(t *testing.T) {
	src := `package p
type T struct{}
type u struct{}
type G[P any, Q any] struct{}
func (T) M() {}
func (*T) N() {}
func (u) M() {}
func (*G[P, Q]) M() {}
func F() {}
func f() {}
const C, c = 1, 2
var V int
`
	f, err := parser.ParseFile(token.NewFileSet(), "p.go", src, 0)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"type T", "type G", "method T.M", "method T.N", "method G.M", "func F", "const C", "var V"},
		Names([]*ast.File{f}, nil))
	more := Names([]*ast.File{f}, func(_ *ast.File, s *ast.TypeSpec) []string { return []string{"more " + s.Name.Name} })
	assert.Contains(t, more, "more T")
	assert.Contains(t, more, "more G")
	assert.NotContains(t, more, "more u")
}

// TestMissingExamples: a name without an Example, an Example without an
// Output comment, a method and an unused constant are reported; typed
// constants are shown by their type's Example, an untyped one by an Example
// that uses it.
func TestMissingExamples(t *testing.T) {
	missing, err := MissingExamples("testdata/examples")
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{
		"const Alone: no runnable ExampleAlone, none of its type, none using it",
		"func Silent: ExampleSilent has no Output comment: it would not run",
		"func Missing: no ExampleMissing",
		"method T.M: no ExampleT_M",
	}, missing)
	_, err = MissingExamples(t.TempDir())
	assert.Error(t, err, "a folder without exported names")
}
