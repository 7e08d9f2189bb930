package validate

import (
	"go/parser"
	"go/token"
	"path/filepath"
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
		names, err := filepath.Glob(filepath.Join(dir, "*.go")) // whatever their build constraints
		require.NoError(t, err, dir)
		fset, parsed := token.NewFileSet(), 0
		for _, name := range names {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
			require.NoError(t, err)
			parsed++
			for _, imp := range f.Imports {
				path, err := strconv.Unquote(imp.Path.Value)
				require.NoError(t, err)
				assert.NotEqual(t, "unsafe", path, "%s imports unsafe", name)
			}
		}
		require.NotZero(t, parsed, dir)
	}
}
