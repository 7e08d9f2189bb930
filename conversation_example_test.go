package supervaizer_test

import (
	"context"
	"fmt"
	"log"
	"time"

	supervaizer "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/conversation"
)

// An agent names its conversation action; a plain text A2A message goes to
// it, with the conversation's history, and the answer is an agent Message.
func ExampleWithConversationLimits() {
	agent, err := supervaizer.NewAgent(supervaizer.AgentSpec{
		Name: "Helpdesk", Version: "1.0.0", Description: "Answers questions.",
		Conversation:         "ask",
		ConversationExamples: []string{"Which jobs failed today?"},
		Registration:         supervaizer.RegistrationSpec{Actions: supervaizer.Actions("ask")},
	})
	if err != nil {
		log.Fatal(err)
	}
	supervaizer.HandleActionFor(agent, "ask", func(ctx context.Context, _ *supervaizer.ActionRequest, in conversation.Input) (*supervaizer.ActionResult, error) {
		conversation.ReportUsage(ctx, conversation.Usage{InputTokens: 8, OutputTokens: 3})
		return conversation.Reply(&conversation.Output{Response: "You said: " + in.Content}), nil
	})
	srv, err := supervaizer.NewServer([]*supervaizer.Agent{agent},
		supervaizer.WithLocalMode(true), supervaizer.WithServerID("example-server"),
		supervaizer.WithEnv(func(string) string { return "" }),
		supervaizer.WithConversationLimits(conversation.Limits{Turns: 20, Retention: 24 * time.Hour}))
	if err != nil {
		log.Fatal(err)
	}
	exampleCall(srv, "message/send", `{"message":{"kind":"message","role":"user","messageId":"m-1","contextId":"c-1","parts":[{"kind":"text","text":"hello"}]}}`)
	// Output:
	// 200 {"jsonrpc":"2.0","id":1,"result":{"kind":"message","role":"agent","messageId":"a2a-reply-m-1","contextId":"c-1","parts":[{"kind":"text","text":"You said: hello"},{"kind":"data","data":{"usage":{"input_tokens":8,"output_tokens":3,"cache_creation_input_tokens":0,"cache_read_input_tokens":0}}}],"metadata":{"supervaizer/usage":{"input_tokens":8,"output_tokens":3,"cache_creation_input_tokens":0,"cache_read_input_tokens":0}}}}
}

// Token usage billed as consumption of each call's job: the SKUs belong to
// the agent's billing catalog; the reports go through the Studio client of
// an attached controller.
func ExampleWithUsageBilling() {
	agent, err := supervaizer.NewAgent(supervaizer.AgentSpec{
		Name: "Helpdesk", Version: "1.0.0", Conversation: "ask",
		Registration:   supervaizer.RegistrationSpec{Actions: supervaizer.Actions("ask")},
		BillingCatalog: contracts.BillingCatalog{{SKU: "input_tokens", Unit: "token"}, {SKU: "output_tokens", Unit: "token"}},
	})
	if err != nil {
		log.Fatal(err)
	}
	_, err = supervaizer.NewServer([]*supervaizer.Agent{agent}, supervaizer.WithLocalMode(true),
		supervaizer.WithEnv(func(string) string { return "" }),
		supervaizer.WithUsageBilling(conversation.BillingSKUs{InputTokens: "input_tokens", OutputTokens: "output_tokens"}))
	fmt.Println(err)
	// Output: <nil>
}
