package testing_test

import (
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sdkInternal prefixes the SDK's internal packages.
const sdkInternal = "github.com/supervaize/supervaizer-go/internal/"

// goList runs go list with args on the kit's package and returns the lines
// it prints.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	cmd := exec.Command("go", append(append([]string{"list"}, args...), ".")...)
	out, err := cmd.Output()
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, ee.Stderr)
	}
	require.NoError(t, err)
	return strings.Fields(string(out))
}

// TestBuildsOnThePublicAPI: the kit builds on the public API of the SDK and
// the real protocol only, as a user's code does. It imports no package under
// internal/ (the internal packages in its graph are there because the public
// packages it imports use them), so nothing lends it SDK state: agents are
// linked by Studio's registration handshake and wire errors are decoded with
// encoding/json. Nor does its graph hold any of internal/tools, the SDK's own
// development and test helpers (golden files are the public testing/golden).
func TestBuildsOnThePublicAPI(t *testing.T) {
	t.Parallel()
	imports := goList(t, "-f", `{{join .Imports " "}}`)
	require.NotEmpty(t, imports)
	assert.Contains(t, imports, "github.com/supervaize/supervaizer-go", "the kit imports the SDK")
	for _, imp := range imports {
		assert.False(t, strings.HasPrefix(imp, sdkInternal), "svtest imports %s", imp)
	}
	deps := goList(t, "-deps", "-f", "{{.ImportPath}}")
	for _, dep := range deps {
		assert.False(t, strings.HasPrefix(dep, sdkInternal+"tools/"), "svtest's graph holds %s, an SDK development helper", dep)
	}
	assert.NotContains(t, deps, sdkInternal+"sdkhook")
}
