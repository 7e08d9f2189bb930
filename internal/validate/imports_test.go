package validate

import (
	"go/parser"
	"go/token"
	"io/fs"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNoUnsafe: the wire truth and the hot-path machinery behind it read
// values through reflect, never through package unsafe.
func TestNoUnsafe(t *testing.T) {
	for _, dir := range []string{".", "../encode", "../wire", "../../contracts"} {
		fset := token.NewFileSet()
		pkgs, err := parser.ParseDir(fset, dir, func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, parser.ImportsOnly)
		require.NoError(t, err, dir)
		require.NotEmpty(t, pkgs, dir)
		for _, pkg := range pkgs {
			for name, f := range pkg.Files {
				for _, imp := range f.Imports {
					path, err := strconv.Unquote(imp.Path.Value)
					require.NoError(t, err)
					assert.NotEqual(t, "unsafe", path, "%s imports unsafe", name)
				}
			}
		}
	}
}
