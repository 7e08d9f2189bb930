package a2abind

// Conversations (spec items 81 and 82): an A2A message with text parts and
// no data part goes to the agent's conversation action, with the history
// the SDK keeps for its context (history.go); the answer is an agent Message
// with the response as a text part and the rest of the output as a data
// part, or the Task of a job the handler started. The usage the handler
// reported is in the answer's metadata (supervaizer/usage).

import (
	"encoding/json"

	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/conversation"
	"github.com/supervaize/supervaizer-go/errcode"
	"github.com/supervaize/supervaizer-go/internal/encode"
	"github.com/supervaize/supervaizer-go/internal/jsonrpc"
	"github.com/supervaize/supervaizer-go/internal/wire"
)

// MetaUsage is the metadata key of the token usage of an A2A answer.
const MetaUsage = "supervaizer/usage"

// noConversation is the -32602 answer to a text message for an agent
// without a conversation action: its message shows the data part an action
// call is.
func noConversation(b binding) *jsonrpc.Error {
	return shapeError("Invalid A2A message: the agent has no conversation action for a text message; "+b.shape()[len("Invalid A2A message: "):],
		[]any{"params", "message", "parts"}, "a data part naming a declared action is required")
}

// exchange is a conversation's call: its request, the verified workspace
// the history belongs to, and the history handed to the handler.
type exchange struct {
	req         contracts.ActionRequest
	workspaceID string
	seen        bool // the message was answered before: nothing is appended
}

// startExchange admits a conversation's message and builds its request:
// the conversation action with the message's content and the context's
// history (stream set for a streamed call).
func startExchange(p Pipeline, c *Call, m *message, b binding, streamed bool) (*exchange, *jsonrpc.Error) {
	slug := agent(p, m.meta)
	action := p.Conversation(slug)
	if action == "" {
		return nil, noConversation(b)
	}
	vc, rpcErr := p.Authorize(c, workspace(p, c, m.meta), slug, []string{jsonrpc.MethodActionInvoke, action})
	if rpcErr != nil {
		return nil, rpcErr
	}
	m.action = action
	x := &exchange{req: messageRequest(p, c, m), workspaceID: vc.WorkspaceID}
	if m.contextID == "" {
		x.req.MissionID = derive("a2a-ctx-", vc.WorkspaceID, m.messageID)
	}
	hist, seen, err := p.History().Load(c.R.Context(), x.workspaceID, slug, x.req.MissionID, m.messageID)
	if err != nil {
		p.Logger().ErrorContext(c.R.Context(), "a2a conversation: history read failed", "error", err)
		return nil, &jsonrpc.Error{Code: errcode.InternalError, Message: "Conversation history unavailable"}
	}
	x.seen = seen
	in, err := json.Marshal(conversation.Input{Content: m.text, History: hist, Stream: streamed})
	if err != nil {
		return nil, &jsonrpc.Error{Code: errcode.InternalError, Message: "Internal error"}
	}
	x.req.Input = in
	return x, nil
}

// reply is what a conversation's validated result answers: the response,
// the rest of the output (nil when none), and whether it is a reply at all
// (false for a job_state result or an error result).
func reply(raw []byte) (text string, rest []byte, ok bool) {
	t := wire.Get()
	defer wire.Put(t)
	if !t.Parse(raw) || !isObject(t, 0) {
		return "", nil, false
	}
	if _, hasJob := member(t, 0, "job_state"); hasJob {
		return "", nil, false
	}
	if status, _ := optString(t, 0, "status"); status != contracts.StatusOK {
		return "", nil, false
	}
	data, found := member(t, 0, conversation.ResultKey)
	if !found || !isObject(t, data) {
		return "", nil, true
	}
	for k := data + 1; k < t.Nodes[data].Next; k = t.Nodes[k+1].Next {
		name := string(t.Str(k))
		if name == "response" {
			if t.Nodes[k+1].Kind == wire.String {
				text = string(t.Str(k + 1))
			}
			continue
		}
		if rest == nil {
			rest = []byte{'{'}
		} else {
			rest = append(rest, ',')
		}
		rest = encode.AppendString(rest, name, false)
		rest = append(rest, ':')
		rest = append(rest, t.Raw(k+1)...)
	}
	if rest != nil {
		rest = append(rest, '}')
	}
	return text, rest, true
}

// remember appends the exchange to the conversation's history (unless the
// message was answered before). A failure is logged: the answer stands.
func remember(p Pipeline, c *Call, x *exchange, content, response string) {
	if x.seen {
		return
	}
	err := p.History().Append(c.R.Context(), x.workspaceID, x.req.AgentSlug, x.req.MissionID, x.req.IdempotencyKey,
		conversation.Turn{Role: conversation.RoleUser, Content: content},
		conversation.Turn{Role: conversation.RoleAssistant, Content: response})
	if err != nil {
		p.Logger().ErrorContext(c.R.Context(), "a2a conversation: history write failed", "error", err)
	}
}

// jobStarted is the answer a conversation's history keeps (and a streamed
// conversation answers) when its handler started job id.
func jobStarted(id string) string { return "Job " + id + " started" }

// usageJSON is the JSON of the usage of the call's last invocation, nil
// when none was reported.
func usageJSON(c *Call) []byte {
	if c.Usage.IsZero() {
		return nil
	}
	b, _ := json.Marshal(c.Usage) // four integers: cannot fail
	return b
}

// appendUsageMeta appends ,"metadata":{"supervaizer/usage":…} when usage
// is not nil.
func appendUsageMeta(dst, usage []byte) []byte {
	if usage == nil {
		return dst
	}
	dst = append(dst, `,"metadata":{"`+MetaUsage+`":`...)
	dst = append(dst, usage...)
	return append(dst, '}')
}

// withUsage puts the usage (nil: none, dst unchanged) in the metadata of
// the answer dst ends with: the Task, Message or event of a 0.3 result, the
// object a 1.0 result wraps ({"task":…}, {"message":…}, {"statusUpdate":…}).
// None of those objects has metadata of its own.
func withUsage(dst, usage []byte, b binding) []byte {
	closing := 1
	if b.wrapsResults() {
		closing = 2
	}
	if usage == nil || len(dst) < closing {
		return dst
	}
	dst = appendUsageMeta(dst[:len(dst)-closing], usage)
	for range closing {
		dst = append(dst, '}')
	}
	return dst
}

// converse serves a conversation's message/send (SendMessage): the
// conversation action's answer as an agent Message, or the Task of the job
// it started.
func converse(p Pipeline, c *Call, m *message, b binding, dst []byte) ([]byte, *jsonrpc.Error) {
	x, rpcErr := startExchange(p, c, m, b, false)
	if rpcErr != nil {
		return dst, rpcErr
	}
	raw, v, read, rpcErr := p.Invoke(c, &x.req, -1, nil)
	if rpcErr != nil {
		return dst, rpcErr
	}
	usage := usageJSON(c)
	if read { // the handler started a job: the history has the exchange
		remember(p, c, x, m.text, jobStarted(v.ID))
		return withUsage(b.appendTaskResult(dst, &v, nil), usage, b), nil
	}
	text, rest, ok := reply(raw)
	if !ok {
		return withUsage(appendAnswer(dst, &x.req, raw, p.IsJobAction(x.req.AgentSlug, x.req.Action), b), usage, b), nil
	}
	remember(p, c, x, m.text, text)
	return b.appendConversationReply(dst, &x.req, text, rest, usage), nil
}

// withJobUsage adds the job's token usage sum (in the store: every call of
// the job on any instance) to the metadata of the Task that dst ends with,
// as supervaizer/usage; dst is unchanged when none was reported.
func withJobUsage(p Pipeline, c *Call, workspaceID, slug, jobID string, dst []byte) []byte {
	u, found, err := p.Tasks().Usage(c.R.Context(), workspaceID, slug, jobID)
	if err != nil {
		p.Logger().WarnContext(c.R.Context(), "a2a task: usage not read", "error", err)
	}
	if !found || len(dst) == 0 || dst[len(dst)-1] != '}' {
		return dst
	}
	b, _ := json.Marshal(u) // four integers: cannot fail
	return append(appendUsageMeta(dst[:len(dst)-1], b), '}')
}
