package errcode_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/errcode"
	svtest "github.com/supervaize/supervaizer-go/testing"
)

// TestPackageDocCodeOf runs the package comment's comparison as written: a
// call without a workspace token is answered Unauthorized.
func TestPackageDocCodeOf(t *testing.T) {
	agent, err := supervaizer.NewAgent(supervaizer.AgentSpec{Name: "Code Agent", Version: "1.0.0"})
	require.NoError(t, err)
	agent.HandleAction("job.start", func(context.Context, *supervaizer.ActionRequest) (*supervaizer.ActionResult, error) {
		return supervaizer.OK(), nil
	})
	ts := svtest.NewTestServer(t, []*supervaizer.Agent{agent})
	_, err = ts.InvokeWithToken(t.Context(), ts.Request("job.start", map[string]any{}), "")
	unauthorized := false
	if supervaizer.CodeOf(err) == errcode.Unauthorized {
		// the workspace token failed a check: data.code says which
		unauthorized = true
	}
	assert.True(t, unauthorized, "err: %v", err)
}
