package conversation_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/conversation"
	svtest "github.com/supervaize/supervaizer-go/testing"
)

// TestPackageDocHandler runs the package comment's handler as written: a
// call of the conversation action answers the reply, with the usage
// reported.
func TestPackageDocHandler(t *testing.T) {
	agent, err := supervaizer.NewAgent(supervaizer.AgentSpec{Name: "Helpdesk", Version: "1.0.0", Description: "Answers questions.",
		Conversation: "ask", Registration: supervaizer.RegistrationSpec{Actions: supervaizer.Actions("ask")}})
	require.NoError(t, err)

	supervaizer.HandleActionFor(agent, "ask", func(ctx context.Context, req *supervaizer.ActionRequest, in conversation.Input) (*supervaizer.ActionResult, error) {
		conversation.ReportUsage(ctx, conversation.Usage{InputTokens: 12, OutputTokens: 5})
		return conversation.Reply(&conversation.Output{Response: "Hello"}), nil
	})

	ts := svtest.NewTestServer(t, []*supervaizer.Agent{agent})
	res, err := ts.Invoke(t.Context(), ts.Request("ask", map[string]any{"content": "Hi"}))
	require.NoError(t, err)
	require.Equal(t, contracts.StatusOK, res.Status)
	assert.Contains(t, string(res.Extra[conversation.ResultKey]), `"response":"Hello"`)
}
