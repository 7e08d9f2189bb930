package research

// The companion test of docs/supervised.md's block (the doc check compiles
// it into this package and runs it): the agent opts in, and the start action
// never publishes under a campaign whose policy forbids it.

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/campaign"
	"github.com/supervaize/supervaizer-go/internal/callstate"
)

func TestSupervised(t *testing.T) {
	agent, err := supervaizer.NewAgent(supervaizer.AgentSpec{Name: "Research Agent", Version: "1.0.0",
		Registration: supervaizer.RegistrationSpec{Actions: supervaizer.Actions("job.start")}})
	require.NoError(t, err)
	require.NoError(t, supervised(agent))

	publishes := func(ctx context.Context) string {
		res, err := start(ctx, &supervaizer.ActionRequest{JobID: "job-1"})
		require.NoError(t, err)
		b, err := json.Marshal(res)
		require.NoError(t, err)
		return string(b)
	}
	assert.Contains(t, publishes(context.Background()), `"publish":true`, "outside a campaign")
	// The pipeline puts the campaign's policy in the handler's context.
	ctx := context.WithValue(context.Background(), callstate.PolicyKey{}, campaign.Policy{RemoteOnly: true, NoPublication: true})
	assert.Contains(t, publishes(ctx), `"publish":false`, "under no_publication")
}
