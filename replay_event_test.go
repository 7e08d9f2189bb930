package supervaizer_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	supervaizer "github.com/supervaize/supervaizer-go"
)

// TestReplayedStartRepublishesEffects pins the rule docs/protocol.md states:
// a replayed job.start is a successful call, so it publishes its effects
// again, identical to the original's, under the retry's request_id.
func TestReplayedStartRepublishesEffects(t *testing.T) {
	sa := newServeAgent(t)
	base, stop := sa.serve(t)
	client := &http.Client{}
	events := openEvents(t, client, base, supervaizer.LocalModeAPIKey, nil)
	require.Equal(t, "supervaizer.connected", events.next(t).Name)

	call := func(requestID string) {
		params := map[string]any{"action_request": map[string]any{
			"request_id": requestID, "actor": map[string]any{"user_id": "you"}, "workspace": map[string]any{"id": "ws-local"},
			"mission_id": "m-1", "agent_slug": "serve-agent", "surface": "job.start", "action": "job.start",
			"job_id": "job-1", "idempotency_key": "setup-1", "input": map[string]any{},
		}}
		req, err := http.NewRequest(http.MethodPost, base+"/a2a", bytes.NewReader(rpcBody(t, 1, supervaizer.MethodActionInvoke, params)))
		require.NoError(t, err)
		req.Header.Set(supervaizer.HeaderAPIKey, supervaizer.LocalModeAPIKey)
		resp, err := client.Do(req)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		_ = resp.Body.Close()
	}
	call("req-original")
	call("req-retry")

	var first, replay effectData
	e1, e2 := events.nextEffect(t), events.nextEffect(t)
	require.NoError(t, json.Unmarshal([]byte(e1.Data), &first))
	require.NoError(t, json.Unmarshal([]byte(e2.Data), &replay))
	assert.Equal(t, "req-original", first.RequestID)
	assert.Equal(t, "req-retry", replay.RequestID, "the event carries the retry's request_id")
	assert.Equal(t, first.Effects, replay.Effects, "the replay publishes the original effects")
	assert.Equal(t, "job-1", replay.Effects[0]["job_id"], "consumers can deduplicate by the effect's job_id")
	require.NoError(t, stop())
}
