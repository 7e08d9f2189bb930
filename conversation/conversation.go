// Package conversation is the conversational payload of an agent's
// conversation action (spec open-questions items 81 and 82): what a user's
// message brings in ([Input]: the content, its context, the history), what
// the agent answers ([Output]: the response, attachments, the updated
// history, the token usage, the execution chain), and what a handler
// reports while it runs ([ReportUsage], [Emit]).
//
// An agent names one of its declared actions its conversation action
// (supervaizer.AgentSpec.Conversation) and registers it like any typed
// action, with [Input] as its input:
//
//	supervaizer.HandleActionFor(agent, "ask", func(ctx context.Context, req *supervaizer.ActionRequest, in conversation.Input) (*supervaizer.ActionResult, error) {
//		conversation.ReportUsage(ctx, conversation.Usage{InputTokens: 12, OutputTokens: 5})
//		return conversation.Reply(&conversation.Output{Response: "Hello"}), nil
//	})
//
// Studio calls it with supervaizer/action.invoke, as any action. An A2A
// client calls it with a plain text message (message/send, SendMessage, and
// their streaming forms): the SDK keeps each conversation's history (per
// verified workspace and contextId) and hands it to the handler in
// [Input.History]; the answer is an agent Message whose text part is the
// response (docs/conversations.md).
package conversation

import (
	"context"
	"encoding/json"
	"maps"
	"time"

	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/internal/callstate"
)

// Roles of a [Turn].
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// ResultKey is the member of the action result that holds the [Output]
// ({"status":"ok","effects":[],"data":{"response":…}}).
const ResultKey = "data"

// Input is the typed input of a conversation action. api_key never travels
// in a payload: an input carrying it is refused like any unknown key.
type Input struct {
	// Content is the user's message. Required.
	Content string `json:"content" sv:"nonblank"`
	// Context is what the caller knows around the message (free keys).
	Context map[string]any `json:"context,omitempty" sv:"null"`
	// History is the conversation so far, oldest first. For an A2A text
	// message, the SDK fills it from the history it keeps.
	History []Turn `json:"history,omitempty" sv:"null"`
	// Stream asks for partial text ([Emit]); the SDK sets it for an A2A
	// message/stream call.
	Stream bool `json:"stream,omitempty"`
	// ReadOnly asks the agent to answer without changing anything.
	ReadOnly bool `json:"read_only,omitempty"`
}

// Turn is one message of a conversation's history.
type Turn struct {
	Role        string       `json:"role" sv:"enum=user|assistant"`
	Content     string       `json:"content"`
	Attachments []Attachment `json:"attachments,omitempty" sv:"null"`
}

// Attachment is a piece of content beside a response: a document, a link,
// code (Type is the agent's vocabulary).
type Attachment struct {
	Type    string `json:"type" sv:"nonblank"`
	Content string `json:"content"`
}

// Output is the result data of a conversation action.
type Output struct {
	// Response is the answer's text.
	Response string `json:"response"`
	// Attachments accompany the response.
	Attachments []Attachment `json:"attachments,omitempty"`
	// History is the conversation including this exchange, when the
	// handler returns it.
	History []Turn `json:"history,omitempty"`
	// Usage is the call's token usage: the SDK sets it to the sum the
	// handler reported ([ReportUsage]) when it reported any.
	Usage *Usage `json:"usage,omitempty"`
	// Meta is the execution metadata.
	Meta *Meta `json:"meta,omitempty"`
}

// Meta is the execution metadata of an [Output]: the chain of agents that
// answered, and free keys (a router's confidence, a planner's iterations).
type Meta struct {
	// Agents is the execution chain, in order.
	Agents []string
	// Extra holds the free keys; a key "agents" there is ignored.
	Extra map[string]any
}

// MarshalJSON writes the free keys beside "agents".
func (m Meta) MarshalJSON() ([]byte, error) {
	out := make(map[string]any, len(m.Extra)+1)
	maps.Copy(out, m.Extra)
	delete(out, "agents")
	if m.Agents != nil {
		out["agents"] = m.Agents
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads "agents" and keeps the other keys in Extra.
func (m *Meta) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*m = Meta{}
	if a, ok := raw["agents"]; ok {
		if err := json.Unmarshal(a, &m.Agents); err != nil {
			return err
		}
		delete(raw, "agents")
	}
	for k, v := range raw {
		var x any
		if err := json.Unmarshal(v, &x); err != nil {
			return err
		}
		if m.Extra == nil {
			m.Extra = make(map[string]any, len(raw))
		}
		m.Extra[k] = x
	}
	return nil
}

// Usage counts the tokens a call used (the four counts of model
// providers' usage reports).
type Usage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
}

// Add returns the sum of u and v.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		InputTokens:              u.InputTokens + v.InputTokens,
		OutputTokens:             u.OutputTokens + v.OutputTokens,
		CacheCreationInputTokens: u.CacheCreationInputTokens + v.CacheCreationInputTokens,
		CacheReadInputTokens:     u.CacheReadInputTokens + v.CacheReadInputTokens,
	}
}

// IsZero reports whether every count is zero.
func (u Usage) IsZero() bool { return u == Usage{} }

// ReportUsage adds u to the usage of the current call: the SDK sums what a
// handler reports during a call, puts the sum in the conversation output and
// the A2A answer's metadata (supervaizer/usage), adds it to the job's sum in
// the store and hands it to the interceptors (Call.Usage). Outside a call
// (a context the SDK did not give) it does nothing. Negative counts are
// ignored.
func ReportUsage(ctx context.Context, u Usage) {
	r := callstate.From(ctx)
	if r == nil {
		return
	}
	r.AddUsage(max(u.InputTokens, 0), max(u.OutputTokens, 0), max(u.CacheCreationInputTokens, 0), max(u.CacheReadInputTokens, 0))
}

// Emit sends a chunk of the response as it is produced. On an A2A
// message/stream call each chunk is an artifact-update event of the
// conversation's task; the final [Output.Response] is still the whole
// answer. It reports false (and drops the chunk) when the call is not
// streamed: a handler may call it unconditionally.
func Emit(ctx context.Context, text string) bool {
	r := callstate.From(ctx)
	if r == nil || text == "" {
		return false
	}
	return r.Emit(text)
}

// Reply is the result of a conversation action answering out: status ok,
// the given effects, out under [ResultKey]. It panics when out cannot be
// encoded as JSON (a value in Context or Meta.Extra that JSON cannot hold).
func Reply(out *Output, effects ...contracts.Effect) *contracts.ActionResult {
	if out == nil {
		out = &Output{}
	}
	b, err := json.Marshal(out)
	if err != nil {
		panic("conversation: Reply: " + err.Error())
	}
	if effects == nil {
		effects = []contracts.Effect{}
	}
	return &contracts.ActionResult{Status: contracts.StatusOK, Effects: effects, Extra: contracts.Extra{ResultKey: b}}
}

// Limits bound the history the SDK keeps for the conversations of A2A text
// messages (supervaizer.WithConversationLimits). A zero field takes its
// default.
type Limits struct {
	// Turns is the most turns kept per conversation (a message and its
	// answer are two); older turns are dropped first. Default 50.
	Turns int
	// Bytes bounds the content kept per conversation (the sum of the
	// turns' content and attachments); older turns are dropped first.
	// Default 64 KiB.
	Bytes int
	// Retention is how long a conversation is kept after its last turn.
	// Default 7 days.
	Retention time.Duration
	// Contexts is the most conversations kept per workspace: a new one
	// beyond it drops the least recently used. Default 1,000.
	Contexts int
}

// The defaults of [Limits].
const (
	DefaultTurns     = 50
	DefaultBytes     = 64 << 10
	DefaultRetention = 7 * 24 * time.Hour
	DefaultContexts  = 1000
)

// WithDefaults returns l with each zero field set to its default.
func (l Limits) WithDefaults() Limits {
	if l.Turns <= 0 {
		l.Turns = DefaultTurns
	}
	if l.Bytes <= 0 {
		l.Bytes = DefaultBytes
	}
	if l.Retention <= 0 {
		l.Retention = DefaultRetention
	}
	if l.Contexts <= 0 {
		l.Contexts = DefaultContexts
	}
	return l
}

// BillingSKUs maps token kinds to SKUs of an agent's billing catalog
// (supervaizer.WithUsageBilling): the usage a call reports is billed as
// consumption of the call's job, one record per kind with a SKU ("": that
// kind is not billed).
type BillingSKUs struct {
	InputTokens              string
	OutputTokens             string
	CacheCreationInputTokens string
	CacheReadInputTokens     string
}

// IsZero reports whether no kind has a SKU.
func (b BillingSKUs) IsZero() bool { return b == BillingSKUs{} }
