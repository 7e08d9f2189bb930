package a2ago

import (
	"encoding/json"
	"testing"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// usageOf reads the supervaizer/usage metadata of an answer.
func usageOf(t *testing.T, meta map[string]any) (input, output int64) {
	t.Helper()
	raw, err := json.Marshal(meta["supervaizer/usage"])
	require.NoError(t, err)
	var u struct {
		InputTokens  int64 `json:"input_tokens"`
		OutputTokens int64 `json:"output_tokens"`
	}
	require.NoError(t, json.Unmarshal(raw, &u), "%s", raw)
	return u.InputTokens, u.OutputTokens
}

// textOf is the text of a message's first part, which must be a text part.
func textOf(t *testing.T, m *a2a.Message) string {
	t.Helper()
	require.NotEmpty(t, m.Parts)
	p, ok := m.Parts[0].(a2a.TextPart)
	require.True(t, ok, "the first part is the text answer: %T", m.Parts[0])
	return p.Text
}

// TestConversationThroughA2AGo: a2a-go's client sends plain text messages
// to the example's conversation action (spec item 81): the agent's text
// answer, a second message of the same context seen with the first in its
// history (the stand-in model reads it: its input tokens count it), the
// usage in the metadata, and message/stream delivering partial chunks
// before the end.
func TestConversationThroughA2AGo(t *testing.T) {
	_, c := runExample(t, buildExample(t), localEnv(t.TempDir()))
	startJob(t, c.nonBlocking, "ev-batteries")

	q1 := "How many jobs are there?"
	res, err := c.nonBlocking.SendMessage(callCtx(t), &a2a.MessageSendParams{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: q1})})
	require.NoError(t, err)
	first, ok := res.(*a2a.Message)
	require.True(t, ok, "a conversation's answer is a Message: %T", res)
	a1 := textOf(t, first)
	assert.Equal(t, "This workspace has 1 research jobs: 1 awaiting.", a1)
	in1, out1 := usageOf(t, first.Metadata)
	assert.Equal(t, int64(len(q1)+3)/4, in1)
	assert.Equal(t, int64(len(a1)+3)/4, out1)

	q2 := "And now?"
	next := a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: q2})
	next.ContextID = first.ContextID
	res, err = c.nonBlocking.SendMessage(callCtx(t), &a2a.MessageSendParams{Message: next})
	require.NoError(t, err)
	second := res.(*a2a.Message)
	in2, _ := usageOf(t, second.Metadata)
	assert.Equal(t, int64(len(q2)+len(q1)+len(a1)+3)/4, in2, "the second message's history holds the first exchange")

	// message/stream: a task, partial chunks, then completed.
	var chunks int
	var final a2a.TaskState
	stream := a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: q1})
	for ev, err := range c.nonBlocking.SendStreamingMessage(callCtx(t), &a2a.MessageSendParams{Message: stream}) {
		require.NoError(t, err)
		switch e := ev.(type) {
		case *a2a.TaskArtifactUpdateEvent:
			if !e.LastChunk {
				require.Empty(t, final, "a chunk after the end")
				chunks++
			}
		case *a2a.TaskStatusUpdateEvent:
			final = e.Status.State
		}
	}
	assert.GreaterOrEqual(t, chunks, 2, "partial chunks before the end")
	assert.Equal(t, a2a.TaskStateCompleted, final)
}
