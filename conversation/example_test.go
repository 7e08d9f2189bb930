package conversation_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/supervaize/supervaizer-go/conversation"
)

// A conversation action's handler reads the message and its history,
// reports the tokens its model used, and replies.
func Example() {
	handler := func(ctx context.Context, in conversation.Input) *conversation.Output {
		conversation.ReportUsage(ctx, conversation.Usage{InputTokens: 12, OutputTokens: 4})
		return &conversation.Output{
			Response: fmt.Sprintf("You asked %q (%d earlier turns).", in.Content, len(in.History)),
			Meta:     &conversation.Meta{Agents: []string{"router", "answerer"}},
		}
	}
	out := handler(context.Background(), conversation.Input{Content: "How many jobs ran?",
		History: []conversation.Turn{{Role: conversation.RoleUser, Content: "Hello"}, {Role: conversation.RoleAssistant, Content: "Hi!"}}})
	fmt.Println(out.Response)
	// Output: You asked "How many jobs ran?" (2 earlier turns).
}

func ExampleReply() {
	res := conversation.Reply(&conversation.Output{Response: "Three jobs ran today.",
		Attachments: []conversation.Attachment{{Type: "link", Content: "https://example.com/jobs"}}})
	fmt.Println(res.Status, string(res.Extra[conversation.ResultKey]))
	// Output: ok {"response":"Three jobs ran today.","attachments":[{"type":"link","content":"https://example.com/jobs"}]}
}

func ExampleMeta() {
	b, _ := json.Marshal(conversation.Meta{Agents: []string{"router", "planner"}, Extra: map[string]any{"planner_iterations": 2}})
	fmt.Println(string(b))
	var m conversation.Meta
	_ = json.Unmarshal(b, &m)
	fmt.Println(m.Agents, m.Extra["planner_iterations"])
	// Output:
	// {"agents":["router","planner"],"planner_iterations":2}
	// [router planner] 2
}

func ExampleUsage_Add() {
	sum := conversation.Usage{InputTokens: 10, OutputTokens: 2}.Add(conversation.Usage{InputTokens: 5, CacheReadInputTokens: 100})
	fmt.Printf("%+v %v\n", sum, sum.IsZero())
	// Output: {InputTokens:15 OutputTokens:2 CacheCreationInputTokens:0 CacheReadInputTokens:100} false
}

// Outside a call the SDK serves, ReportUsage and Emit do nothing.
func ExampleReportUsage() {
	conversation.ReportUsage(context.Background(), conversation.Usage{InputTokens: 1})
	fmt.Println(conversation.Emit(context.Background(), "partial"))
	// Output: false
}

func ExampleEmit() {
	stream := func(ctx context.Context, words []string) string {
		var all string
		for _, w := range words {
			conversation.Emit(ctx, w) // an artifact-update on message/stream; dropped otherwise
			all += w
		}
		return all
	}
	fmt.Println(stream(context.Background(), []string{"Three ", "jobs."}))
	// Output: Three jobs.
}

func ExampleLimits_WithDefaults() {
	l := conversation.Limits{Turns: 10}.WithDefaults()
	fmt.Println(l.Turns, l.Bytes, l.Retention, l.Contexts)
	// Output: 10 65536 168h0m0s 1000
}

func ExampleInput() {
	var in conversation.Input
	_ = json.Unmarshal([]byte(`{"content":"Summarize job-1","context":{"job_id":"job-1"},"read_only":true}`), &in)
	fmt.Println(in.Content, in.Context["job_id"], in.ReadOnly)
	// Output: Summarize job-1 job-1 true
}

func ExampleTurn() {
	t := conversation.Turn{Role: conversation.RoleAssistant, Content: "Done.", Attachments: []conversation.Attachment{{Type: "document", Content: "report.md"}}}
	b, _ := json.Marshal(t)
	fmt.Println(string(b))
	// Output: {"role":"assistant","content":"Done.","attachments":[{"type":"document","content":"report.md"}]}
}

func ExampleAttachment() {
	b, _ := json.Marshal(conversation.Attachment{Type: "job_code", Content: "fn(state => state)"})
	fmt.Println(string(b))
	// Output: {"type":"job_code","content":"fn(state =\u003e state)"}
}

func ExampleOutput() {
	b, _ := json.Marshal(conversation.Output{Response: "Hello", Usage: &conversation.Usage{InputTokens: 3, OutputTokens: 1}})
	fmt.Println(string(b))
	// Output: {"response":"Hello","usage":{"input_tokens":3,"output_tokens":1,"cache_creation_input_tokens":0,"cache_read_input_tokens":0}}
}

func ExampleMeta_MarshalJSON() {
	b, _ := conversation.Meta{Agents: []string{"router"}, Extra: map[string]any{"router_confidence": 5}}.MarshalJSON()
	fmt.Println(string(b))
	// Output: {"agents":["router"],"router_confidence":5}
}

func ExampleMeta_UnmarshalJSON() {
	var m conversation.Meta
	_ = m.UnmarshalJSON([]byte(`{"agents":["router","workflow_agent"],"router_confidence":5}`))
	fmt.Println(m.Agents, m.Extra["router_confidence"])
	// Output: [router workflow_agent] 5
}

func ExampleUsage() {
	b, _ := json.Marshal(conversation.Usage{InputTokens: 120, OutputTokens: 40, CacheReadInputTokens: 1000})
	fmt.Println(string(b))
	// Output: {"input_tokens":120,"output_tokens":40,"cache_creation_input_tokens":0,"cache_read_input_tokens":1000}
}

func ExampleUsage_IsZero() {
	fmt.Println(conversation.Usage{}.IsZero(), conversation.Usage{OutputTokens: 1}.IsZero())
	// Output: true false
}

func ExampleLimits() {
	fmt.Println(conversation.DefaultTurns, conversation.DefaultBytes, conversation.DefaultRetention, conversation.DefaultContexts)
	// Output: 50 65536 168h0m0s 1000
}

func ExampleBillingSKUs() {
	skus := conversation.BillingSKUs{InputTokens: "input_tokens", OutputTokens: "output_tokens"}
	fmt.Println(skus.IsZero(), conversation.BillingSKUs{}.IsZero())
	// Output: false true
}

func ExampleBillingSKUs_IsZero() {
	fmt.Println(conversation.BillingSKUs{CacheReadInputTokens: "cached_tokens"}.IsZero())
	// Output: false
}
