package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/conversation"
)

// askToken is a workspace token of wsA for the conversation action.
func askToken(t *testing.T, h *harness) string {
	t.Helper()
	return h.studio.TokenForAction(actionRequest(t, wsA, actionAsk, nil))
}

// textParams are message/send params of a text message (A2A 0.3).
func textParams(messageID, contextID, text string) map[string]any {
	return map[string]any{"message": map[string]any{"kind": "message", "role": "user", "messageId": messageID,
		"contextId": contextID, "parts": []any{map[string]any{"kind": "text", "text": text}}}}
}

// askReply is the agent Message answering a text message.
type askReply struct {
	Parts []struct {
		Text string
		Data json.RawMessage
	}
	Metadata map[string]conversation.Usage
}

// TestConversationAboutJobs: a text message asks the agent about its jobs;
// it answers from its own state, a second message of the same context sees
// the first in its history (the stand-in model reads it: more input
// tokens), and the usage is in the answer's metadata.
func TestConversationAboutJobs(t *testing.T) {
	h := newHarness(t)
	h.client.startJob(wsA, "job-1", "k-1", "eu-battery-market")
	token := askToken(t, h)

	q1 := "What is the status of job-1?"
	raw, rerr := h.client.call("message/send", textParams("q-1", "chat-1", q1), token)
	require.Nil(t, rerr, "%+v", rerr)
	var first askReply
	require.NoError(t, json.Unmarshal(raw, &first))
	a1 := "Job job-1 (topic eu-battery-market) is " + stateLabel(jobAwaiting) + "."
	assert.Equal(t, a1, first.Parts[0].Text)
	assert.Equal(t, conversation.Usage{InputTokens: int64(len(q1)+3) / 4, OutputTokens: int64(len(a1)+3) / 4}, first.Metadata["supervaizer/usage"])

	q2 := "How many jobs are there?"
	raw, rerr = h.client.call("message/send", textParams("q-2", "chat-1", q2), token)
	require.Nil(t, rerr, "%+v", rerr)
	var second askReply
	require.NoError(t, json.Unmarshal(raw, &second))
	assert.Equal(t, "This workspace has 1 research jobs: 1 "+jobAwaiting+".", second.Parts[0].Text)
	assert.Equal(t, int64(len(q2)+len(q1)+len(a1)+3)/4, second.Metadata["supervaizer/usage"].InputTokens,
		"the history of the context reached the handler")

	// Another workspace sees none of it.
	other := h.studio.TokenForAction(actionRequest(t, wsB, actionAsk, nil))
	raw, rerr = h.client.call("message/send", textParams("q-3", "chat-1", q2), other)
	require.Nil(t, rerr, "%+v", rerr)
	var third askReply
	require.NoError(t, json.Unmarshal(raw, &third))
	assert.Equal(t, "There are no research jobs in this workspace yet.", third.Parts[0].Text)
	assert.Equal(t, int64(len(q2)+3)/4, third.Metadata["supervaizer/usage"].InputTokens, "no history of another workspace")
}

// TestConversationStreamsChunks: message/stream delivers the answer in
// several chunks before the task completes.
func TestConversationStreamsChunks(t *testing.T) {
	h := newHarness(t)
	h.client.startJob(wsA, "job-1", "k-1", "eu-battery-market")
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"message/stream","params":%s}`, mustJSON(t, textParams("s-1", "chat-s", "What is the status of job-1?")))
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, h.srv.URL+"/a2a", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-API-Key", testAPIKey)
	req.Header.Set("X-Supervaize-Workspace-Authorization", "Bearer "+askToken(t, h))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var chunks, completed int
	for _, line := range strings.Split(string(raw), "\n") {
		switch {
		case strings.Contains(line, `"kind":"artifact-update"`) && strings.Contains(line, `"lastChunk":false`):
			require.Zero(t, completed, "a chunk after the end")
			chunks++
		case strings.Contains(line, `"state":"completed"`):
			completed++
		}
	}
	assert.GreaterOrEqual(t, chunks, 2, "partial chunks before the end: %s", raw)
	assert.Equal(t, 1, completed, "%s", raw)
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// TestConversationUsageBilled: with the agent attached to Studio, the usage
// of a conversation's call is billed as consumption of its job (the derived
// job id of the A2A call), once per call: the same message again bills
// nothing new (its records come back duplicate).
func TestConversationUsageBilled(t *testing.T) {
	h, api, _ := governedHarness(t, "allow", "allow")
	token := askToken(t, h)
	q := "How many jobs are there?"
	for range 2 {
		_, rerr := h.client.call("message/send", textParams("bill-1", "chat-b", q), token)
		require.Nil(t, rerr, "%+v", rerr)
	}
	recs := api.WaitBilling(t, 4)
	a := "There are no research jobs in this workspace yet."
	want := map[string]float64{skuInputTokens: float64((len(q) + 3) / 4), skuOutputTokens: float64((len(a) + 3) / 4)}
	seen := map[string][]string{}
	for _, r := range recs {
		assert.Equal(t, want[r.SKU], r.Quantity, r.SKU)
		assert.True(t, strings.HasPrefix(r.JobID, "a2a-"), "the derived job id: %s", r.JobID)
		seen[r.IdempotencyKey] = append(seen[r.IdempotencyKey], r.Status)
	}
	require.Len(t, seen, 2, "one record per token kind: %+v", recs)
	for key, statuses := range seen {
		assert.Equal(t, []string{"accepted", "duplicate"}, statuses, "%s: billed once", key)
	}
}
