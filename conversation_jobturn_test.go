package supervaizer_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/conversation"
)

// TestConversationJobTurns: a text message whose handler starts a job adds
// its exchange to the history (the message, and the answer naming the
// job), on message/send and message/stream, in both bindings; a retried
// messageId adds nothing. The code before the fix left the history
// unchanged: this test failed.
func TestConversationJobTurns(t *testing.T) {
	for _, v := range []string{"0.3", "1.0"} {
		t.Run(v, func(t *testing.T) {
			var mu sync.Mutex
			var seen []conversation.Turn // the history the last call was handed
			a, err := supervaizer.NewAgent(supervaizer.AgentSpec{
				Name: "Chat Agent", Version: "1.0.0", Description: "Answers questions.", Conversation: "chat.ask",
				Registration: supervaizer.RegistrationSpec{Actions: supervaizer.Actions("chat.ask")},
			})
			require.NoError(t, err)
			supervaizer.HandleActionFor(a, "chat.ask", func(_ context.Context, req *supervaizer.ActionRequest, in conversation.Input) (*supervaizer.ActionResult, error) {
				mu.Lock()
				seen = in.History
				mu.Unlock()
				if in.Content == "look" {
					return conversation.Reply(&conversation.Output{Response: "seen"}), nil
				}
				res := supervaizer.OK(supervaizer.JobStarted(req.JobID, nil))
				res.JobState = &supervaizer.JobState{Job: supervaizer.Job{ID: req.JobID, AgentSlug: chatAgentSlug, MissionID: req.MissionID,
					Status: "running", Source: supervaizer.JobSource{Type: "fresh_start"}}}
				return res, nil
			})
			srv, err := supervaizer.NewServer([]*supervaizer.Agent{a}, supervaizer.WithEnv(emptyEnv), supervaizer.WithServerID(testServerID),
				supervaizer.WithAPIKey(testWriteKey, supervaizer.ScopeWrite), supervaizer.WithLocalMode(true))
			require.NoError(t, err)
			history := func(messageID string) []conversation.Turn {
				t.Helper()
				replyOf(t, v, callA2A(t, srv, a2aCall{method: sendMethods[v], params: textMessage(v, messageID, "ctx-jt", "look")}))
				mu.Lock()
				defer mu.Unlock()
				return seen
			}

			resp := callA2A(t, srv, a2aCall{method: sendMethods[v], params: textMessage(v, "jt-1", "ctx-jt", "run it")})
			require.Nil(t, resp.Error, "%+v", resp.Error)
			got := history("jt-look-1")
			require.Len(t, got, 2, "the job's exchange: %+v", got)
			assert.Equal(t, conversation.Turn{Role: conversation.RoleUser, Content: "run it"}, got[0])
			assert.Equal(t, conversation.RoleAssistant, got[1].Role)
			assert.Regexp(t, `^Job a2a-[0-9a-f]+ started$`, got[1].Content)

			resp = callA2A(t, srv, a2aCall{method: sendMethods[v], params: textMessage(v, "jt-1", "ctx-jt", "run it")})
			require.Nil(t, resp.Error, "%+v", resp.Error)
			assert.Len(t, history("jt-look-2"), 4, "the retried messageId appended nothing (the two looks did)")

			w := postA2A(t, srv, a2aCall{method: streamMethods[v], params: textMessage(v, "jt-2", "ctx-jt", "stream it")})
			require.NotEmpty(t, sseData(w.Body.String()))
			got = history("jt-look-3")
			require.Len(t, got, 8, "the streamed job's exchange")
			assert.Equal(t, conversation.Turn{Role: conversation.RoleUser, Content: "stream it"}, got[6])
			assert.Regexp(t, `^Job a2a-[0-9a-f]+ started$`, got[7].Content)
		})
	}
}
