// Package updateflag_test is a user's test package as many are written: it
// declares its own -update flag and imports svtest. If svtest (or a package
// it imports) registered -update too, this test binary would panic at
// initialization with "flag redefined: update", before any test runs.
package updateflag_test

import (
	"context"
	"flag"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	supervaizer "github.com/supervaize/supervaizer-go"
	svtest "github.com/supervaize/supervaizer-go/testing"
)

var update = flag.Bool("update", false, "rewrite the golden files of this package")

func TestOwnUpdateFlag(t *testing.T) {
	f := flag.Lookup("update")
	require.NotNil(t, f)
	assert.Equal(t, "rewrite the golden files of this package", f.Usage, "the -update flag is this package's own")

	agent, err := supervaizer.NewAgent(supervaizer.AgentSpec{Name: "Greeter", Version: "1.0.0",
		Registration: supervaizer.RegistrationSpec{Actions: supervaizer.Actions("greet")}})
	require.NoError(t, err)
	agent.HandleAction("greet", func(context.Context, *supervaizer.ActionRequest) (*supervaizer.ActionResult, error) {
		return supervaizer.OK(supervaizer.Effect{Type: "greeted", Data: map[string]any{"text": "hello"}}), nil
	})
	ts := svtest.NewTestServer(t, []*supervaizer.Agent{agent})
	raw, err := ts.InvokeRaw(t.Context(), ts.Request("greet", nil))
	require.NoError(t, err)
	assert.True(t, svtest.GoldenUpdate(t, filepath.Join("testdata", "greet.golden.json"), raw, *update))
}
