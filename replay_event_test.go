package supervaizer_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	supervaizer "github.com/supervaize/supervaizer-go"
	svtest "github.com/supervaize/supervaizer-go/testing"
)

// TestReplayedStartRepublishesEffects pins the rule docs/protocol.md states:
// a replayed job.start is a successful call, so it publishes its effects
// again, identical to the original's, under the retry's request_id.
func TestReplayedStartRepublishesEffects(t *testing.T) {
	ts := svtest.NewTestServer(t, []*supervaizer.Agent{newTestAgent(t, testAgentName)})
	ts.Server.HandleAction("job.start", func(_ context.Context, req *supervaizer.ActionRequest) (*supervaizer.ActionResult, error) {
		return supervaizer.OK(supervaizer.JobStarted(req.JobID, nil)), nil
	})
	client := &http.Client{}
	t.Cleanup(client.CloseIdleConnections)
	events := openEvents(t, client, ts.URL(), ts.APIKey, nil)
	require.Equal(t, "supervaizer.connected", events.next(t).Name)

	req := ts.Request("job.start", map[string]any{})
	req.JobID, req.IdempotencyKey = "job-1", "setup-1"
	for _, id := range []string{"req-original", "req-retry"} {
		req.RequestID = id
		_, err := ts.Invoke(t.Context(), req)
		require.NoError(t, err, id)
	}

	var first, replay effectData
	e1, e2 := events.nextEffect(t), events.nextEffect(t)
	require.NoError(t, json.Unmarshal([]byte(e1.Data), &first))
	require.NoError(t, json.Unmarshal([]byte(e2.Data), &replay))
	assert.Equal(t, "req-original", first.RequestID)
	assert.Equal(t, "req-retry", replay.RequestID, "the event carries the retry's request_id")
	assert.Equal(t, first.Effects, replay.Effects, "the replay publishes the original effects")
	assert.Equal(t, "job-1", replay.Effects[0]["job_id"], "consumers can deduplicate by the effect's job_id")
}
