package supervaizer

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/conversation"
	"github.com/supervaize/supervaizer-go/internal/a2abind"
)

// Conversations and token usage (spec items 81 and 82): the agent's
// conversation action (AgentSpec.Conversation) answers A2A text messages
// (internal/a2abind/conversation.go); the usage a handler reports
// (conversation.ReportUsage) is summed per call, put in the conversation
// output, kept per job in the store (the task view's usage sums) and handed
// to the interceptors (Call.Usage).

// WithConversationLimits bounds the history kept for the conversations of
// A2A text messages (conversation.Limits; a zero field takes its default:
// 50 turns, 64 KiB, kept 7 days after the last turn, 1,000 conversations
// per workspace).
func WithConversationLimits(l conversation.Limits) Option {
	return func(c *config) { c.conversations = l }
}

// Conversation is the conversation action of agent slug.
func (p *a2aPipeline) Conversation(slug string) string {
	if a := p.bySlug[slug]; a != nil && a.spec.Conversation != "" && a.action(a.spec.Conversation) != nil {
		return a.spec.Conversation
	}
	return ""
}

// History is the conversations' history.
func (p *a2aPipeline) History() *a2abind.History { return p.history }

// isConversation reports whether action is the conversation action of
// agent slug.
func (s *Server) isConversation(slug, action string) bool {
	a := s.bySlug[slug]
	return a != nil && a.spec.Conversation != "" && a.spec.Conversation == action
}

// withUsage puts the usage the handler reported in the conversation output
// of its result (conversation.Output.Usage), when the action is the
// agent's conversation action and the result carries an output.
func (s *Server) withUsage(ctx context.Context, req *ActionRequest, res *ActionResult, u conversation.Usage) {
	if u.IsZero() || !s.isConversation(req.AgentSlug, req.Action) {
		return
	}
	raw, ok := res.Extra[conversation.ResultKey]
	if !ok {
		return
	}
	var out map[string]json.RawMessage
	if json.Unmarshal(raw, &out) != nil || out == nil {
		return
	}
	out["usage"], _ = json.Marshal(u) // four integers: cannot fail
	b, err := json.Marshal(out)
	if err != nil {
		s.logger.LogAttrs(ctx, slog.LevelWarn, "conversation output: usage not added", slog.String("error", err.Error()))
		return
	}
	extra := make(contracts.Extra, len(res.Extra))
	for k, v := range res.Extra {
		extra[k] = v
	}
	extra[conversation.ResultKey] = b
	res.Extra = extra
}

// keepUsage adds a call's usage to its job's sum in the store (A2A calls:
// the derived job id) and hands it to the call's interceptors.
func (s *Server) keepUsage(ctx context.Context, c *Call, req *ActionRequest, u conversation.Usage) {
	if u.IsZero() {
		return
	}
	c.Usage = c.Usage.Add(u)
	if req.JobID == "" {
		return
	}
	if err := s.tasks.AddUsage(ctx, recordWorkspace(req), req.AgentSlug, req.JobID, u); err != nil {
		s.logger.LogAttrs(ctx, slog.LevelWarn, "token usage: job sum not kept", slog.String("job_id", req.JobID), slog.String("error", err.Error()))
	}
}
