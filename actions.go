package supervaizer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/conversation"
	"github.com/supervaize/supervaizer-go/errcode"
	"github.com/supervaize/supervaizer-go/internal/a2abind"
	"github.com/supervaize/supervaizer-go/internal/callstate"
	"github.com/supervaize/supervaizer-go/internal/jsonrpc"
	"github.com/supervaize/supervaizer-go/internal/validate"
	"github.com/supervaize/supervaizer-go/internal/wire"
	"github.com/supervaize/supervaizer-go/internal/wsctx"
	"github.com/supervaize/supervaizer-go/studio"
)

// ActionRequest is a supervaizer/action.invoke request. Its
// WorkspaceAuthorization holds the verified workspace context (nil for the
// bootstrap actions); see also [WorkspaceFrom].
type ActionRequest = contracts.ActionRequest

// ActionResult is what an action handler returns; build it with [OK], [Fail]
// and the effect constructors.
type ActionResult = contracts.ActionResult

// Effect records what an action did; it is also streamed over SSE.
type Effect = contracts.Effect

// ActionHandler handles one action. ctx is cancelled when Studio disconnects.
// A returned error, a panic or a result that breaks the contract is answered
// with -32603 "Action handler failed" (the detail is logged, never sent).
// Business failures are results with status "error" (see [Fail]).
type ActionHandler func(ctx context.Context, req *ActionRequest) (*ActionResult, error)

// MethodHandler handles an agent method (agent.refresh, agent.custom.<key>);
// params are the method's declared params.
type MethodHandler func(ctx context.Context, req *ActionRequest, params map[string]any) (*ActionResult, error)

// HandlerRegistry is where handlers are registered: an *[Agent], or a *[Server]
// that carries exactly one agent.
type HandlerRegistry interface {
	agentFor(op string) *Agent
}

func (a *Agent) agentFor(string) *Agent { return a }

// studioInputKeys returns the keys Studio adds to the input of the action id,
// which its strict input type tolerates (spec item 77): the job name on the
// registration's setup preview action and the rule snapshot on its start
// action, whatever their ids. They reach the handler in req.Input, never in
// the typed input.
func (a *Agent) studioInputKeys(id string) []string {
	preview, start := contracts.DefaultPreviewAction, contracts.DefaultStartAction
	if a.reg != nil && a.reg.JobPolicy.Setup != nil {
		preview, start = a.reg.JobPolicy.Setup.PreviewAction, a.reg.JobPolicy.Setup.StartAction
	}
	var keys []string
	if id == preview {
		keys = append(keys, "name")
	}
	if id == start {
		keys = append(keys, "rule_snapshot")
	}
	return keys
}

// HandleActionFor registers a typed handler for the action id: the request's
// input is validated against the JSON Schema derived from In (one source of
// truth; see [contracts.NewInputValidator]) and decoded into In before h runs.
// Invalid input is answered with -32602 naming the offending keys, and h does
// not run. It panics, like [Agent.HandleAction], when the action is not declared
// or already handled, or when In has no JSON Schema mapping.
func HandleActionFor[In any](r HandlerRegistry, id string, h func(ctx context.Context, req *ActionRequest, in In) (*ActionResult, error)) {
	a := r.agentFor("HandleActionFor")
	if h == nil {
		panic(fmt.Sprintf("supervaizer: HandleActionFor(%q) on agent %q: nil handler", id, a.slug))
	}
	iv, err := validate.NewInput(reflect.TypeFor[In](), a.studioInputKeys(id)...)
	if err != nil {
		panic(fmt.Sprintf("supervaizer: HandleActionFor(%q) on agent %q: %v", id, a.slug, err))
	}
	a.HandleAction(id, func(ctx context.Context, req *ActionRequest) (*ActionResult, error) {
		var ps []contracts.Problem
		if t, node, ok := inputOnTape(ctx, req.Input); ok {
			ps = iv.ValidateAt(t, node) // the body's one parse
		} else {
			ps = iv.Validate(req.Input)
		}
		if len(ps) > 0 {
			return nil, invalidInput(ps)
		}
		var in In
		if err := json.Unmarshal(req.Input, &in); err != nil {
			return nil, invalidInput([]contracts.Problem{{Loc: []any{"input"}, Msg: "cannot be decoded into the input type", Type: "decode", Path: "/input"}})
		}
		return h(ctx, req, in)
	})
}

// invalidParams is the -32602 error of a request that breaks its model.
func invalidParams(msg string, ps []contracts.Problem) *Error {
	return newError(errcode.InvalidParams, msg, map[string]any{"errors": ps})
}

// inputError is a -32602 raised by the SDK's own input validation inside a
// handler it wraps (typed actions, resources, datasets). The dispatcher sends it
// as is; every other handler error, including an *Error a handler returns,
// becomes -32603.
type inputError struct{ e *Error }

func (i *inputError) Error() string { return i.e.message }

// Unwrap exposes the *Error to errors.As; CodeOf reports its -32602.
func (i *inputError) Unwrap() error { return i.e }

// invalidInput is the -32602 error of input that breaks the action's input type.
func invalidInput(ps []contracts.Problem) error {
	return &inputError{e: invalidParams("Invalid Supervaizer v2 action request", ps)}
}

func isInputError(err error) (*Error, bool) {
	ie, ok := err.(*inputError)
	if !ok {
		return nil, false
	}
	return ie.e, true
}

type agentKey struct{}

// Workspace is the verified workspace context of a request: the claims of
// the Studio-signed workspace token (workspace, agent, scopes, grant), or the
// local-mode context, whose GrantID is contracts.LocalModeGrantID.
type Workspace = contracts.VerifiedWorkspaceContext

// WorkspaceFrom returns the verified workspace context of the current
// request. It is absent for the bootstrap actions and surface, which run
// without a workspace token.
func WorkspaceFrom(ctx context.Context) (*Workspace, bool) {
	return wsctx.From(ctx)
}

// AgentFrom returns the agent the current request is addressed to.
func AgentFrom(ctx context.Context) (*Agent, bool) {
	a, ok := ctx.Value(agentKey{}).(*Agent)
	return a, ok && a != nil
}

func withWorkspace(ctx context.Context, ws *contracts.VerifiedWorkspaceContext) context.Context {
	return wsctx.With(ctx, ws)
}

func withAgent(ctx context.Context, a *Agent) context.Context {
	return context.WithValue(ctx, agentKey{}, a)
}

// withCall is withAgent(withWorkspace(ctx, ws), a) in one allocation; a nil
// ws adds no workspace.
func withCall(ctx context.Context, a *Agent, ws *contracts.VerifiedWorkspaceContext) *callContext {
	return &callContext{Context: ctx, agent: a, ws: ws, inputNode: -1}
}

// callContext carries the agent and the verified workspace of a call, and
// where the request's input is on the tape of the request body (the body is
// parsed once: the typed input is checked on that tape).
type callContext struct {
	context.Context
	agent     *Agent
	ws        *contracts.VerifiedWorkspaceContext
	tape      *wire.Tape
	inputNode int32

	// What the handler reports during the call (package conversation):
	// the sum of its token usage, and where its partial text goes (nil:
	// the call is not streamed).
	mu    sync.Mutex
	usage conversation.Usage
	emit  func(text string)
}

// AddUsage adds to the call's token usage (callstate.Recorder).
func (c *callContext) AddUsage(input, output, cacheCreation, cacheRead int64) {
	c.mu.Lock()
	c.usage = c.usage.Add(conversation.Usage{InputTokens: input, OutputTokens: output,
		CacheCreationInputTokens: cacheCreation, CacheReadInputTokens: cacheRead})
	c.mu.Unlock()
}

// Emit hands a chunk of partial text to the call's stream
// (callstate.Recorder).
func (c *callContext) Emit(text string) bool {
	if c.emit == nil {
		return false
	}
	c.emit(text)
	return true
}

// reported is the usage the handler reported.
func (c *callContext) reported() conversation.Usage {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.usage
}

type inputKey struct{}

// inputOnTape returns the tape of the request body and the node of input on
// it, when input is the request's input as parsed there.
func inputOnTape(ctx context.Context, input []byte) (*wire.Tape, int32, bool) {
	c, ok := ctx.Value(inputKey{}).(*callContext)
	if !ok || c.tape == nil || c.inputNode < 0 {
		return nil, 0, false
	}
	raw := c.tape.Raw(c.inputNode)
	if len(raw) == 0 || len(raw) != len(input) || &raw[0] != &input[0] {
		return nil, 0, false
	}
	return c.tape, c.inputNode, true
}

func (c *callContext) Value(key any) any {
	switch key.(type) {
	case agentKey:
		return c.agent
	case inputKey:
		return c
	case callstate.Key:
		return callstate.Recorder(c)
	}
	if c.ws != nil && wsctx.IsKey(key) {
		return c.ws
	}
	return c.Context.Value(key)
}

// Dry runs leave no trace, and A2UI versions are pinned (spec item 79).
//
// A dry-run result is the result of an action the registration declares
// dry_run, or any result carrying a dry_run outcome. It publishes no effect,
// updates no task view and so counts in no health figure; one carrying
// job_state is invalid (-32603, the reason logged). A surface result whose
// a2ui_version differs from its agent's registration is invalid (-32603,
// both versions logged).

var (
	keyDryRun    = []byte(`"dry_run"`)
	dryRunMember = []byte("dry_run")
	escapeU      = []byte(`\u`)
)

// declaresDryRun reports whether the registration of a (nil: no agent) declares
// the action id dry_run.
func (a *Agent) declaresDryRun(id string) bool {
	if a == nil || a.reg == nil {
		return false
	}
	d := a.reg.Capabilities.Action(id)
	return d != nil && d.DryRun
}

// dryRunProblem returns why res, the result of req, is an invalid dry-run
// result, or nil; a is req's agent.
func dryRunProblem(a *Agent, req *ActionRequest, res *ActionResult) error {
	if res.JobState == nil || (res.DryRun == nil && !a.declaresDryRun(req.Action)) {
		return nil
	}
	return fmt.Errorf("invalid result: a dry-run result carries job_state (action %q is a dry run: it leaves no job behind)", req.Action)
}

// isDryRun reports whether raw, the result of req as sent (fresh or
// replayed), is a dry-run result; a is req's agent. t, when not nil, is the
// tape of raw (its validation's): its top-level members are read instead of
// scanning raw.
func isDryRun(a *Agent, req *ActionRequest, raw []byte, t *wire.Tape) bool {
	if a.declaresDryRun(req.Action) {
		return true
	}
	if t != nil {
		v, ok := t.Member(0, dryRunMember)
		return ok && t.Nodes[v].Kind != wire.Null
	}
	if !bytes.Contains(raw, keyDryRun) && !bytes.Contains(raw, escapeU) {
		return false // most results: no parse (a key spelled with \u escapes is read by the parse)
	}
	v, ok := jsonrpc.Member(raw, "dry_run")
	return ok && !bytes.Equal(v, []byte("null"))
}

// surfaceVersionProblem returns why res, a surface result of a, breaks
// the agent's pinned a2ui_version, or nil. A result without a2ui_version
// pins nothing.
func (a *Agent) surfaceVersionProblem(res *SurfaceResult) error {
	if a == nil || a.reg == nil || res.A2UIVersion == nil || *res.A2UIVersion == a.reg.Versions.A2UIVersion {
		return nil
	}
	return fmt.Errorf("invalid result: a2ui_version %q differs from the registration's a2ui_version %q", *res.A2UIVersion, a.reg.Versions.A2UIVersion)
}

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

// isConversation reports whether action is the conversation action of a
// (nil: no agent).
func (a *Agent) isConversation(action string) bool {
	return a != nil && a.spec.Conversation != "" && a.spec.Conversation == action
}

// withUsage puts the usage the handler reported in the conversation output
// of its result (conversation.Output.Usage), when the action is the
// agent's conversation action and the result carries an output.
func withUsage(ctx context.Context, logger *slog.Logger, a *Agent, req *ActionRequest, res *ActionResult, u conversation.Usage) {
	if u.IsZero() || !a.isConversation(req.Action) {
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
		logger.LogAttrs(ctx, slog.LevelWarn, "conversation output: usage not added", slog.String("error", err.Error()))
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
	if skus := s.cfg.usageSKUs; !skus.IsZero() {
		billUsage(ctx, s.logger, s.Studio(), skus, s.bySlug[req.AgentSlug], req, u, &s.inflight)
	}
}

// WithUsageBilling reports the token usage of each call (what its handlers
// reported with conversation.ReportUsage) to Studio's billing as
// consumption of the call's job (an A2A call: its derived job id): one
// record per token kind that skus maps to a SKU of the agent's billing
// catalog, once per call (its idempotency key is the call's, so a retried
// call bills nothing new). NewServer refuses a SKU missing from an agent's
// BillingCatalog. It needs the controller attached to Studio;
// reports run after the answer, and a failed one is logged.
func WithUsageBilling(skus conversation.BillingSKUs) Option {
	return func(c *config) { c.usageSKUs = skus }
}

// checkUsageSKUs refuses a WithUsageBilling mapping naming a SKU that an
// agent's billing catalog (its spec's, known before Start) does not list:
// each of that agent's reports would fail.
func checkUsageSKUs(skus conversation.BillingSKUs, agents []*Agent) error {
	if skus.IsZero() {
		return nil
	}
	var errs []error
	for _, a := range agents {
		for _, k := range [...]struct{ field, sku string }{
			{"InputTokens", skus.InputTokens}, {"OutputTokens", skus.OutputTokens},
			{"CacheCreationInputTokens", skus.CacheCreationInputTokens}, {"CacheReadInputTokens", skus.CacheReadInputTokens},
		} {
			if k.sku != "" && !slices.ContainsFunc(a.spec.BillingCatalog, func(it contracts.BillingItem) bool { return it.SKU == k.sku }) {
				errs = append(errs, fmt.Errorf("supervaizer: WithUsageBilling: %s SKU %q is not in the billing catalog of agent %q", k.field, k.sku, a.slug))
			}
		}
	}
	return errors.Join(errs...)
}

// usageBillingTimeout bounds one billing report of a call's usage.
const usageBillingTimeout = 30 * time.Second

// billUsage reports a call's usage to Studio's billing (WithUsageBilling)
// in the background, within the server's in-flight work (inflight).
func billUsage(ctx context.Context, logger *slog.Logger, client *studio.Client, skus conversation.BillingSKUs, a *Agent,
	req *ActionRequest, u conversation.Usage, inflight *callTracker) {
	if client == nil || a == nil {
		return
	}
	now := time.Now().UTC()
	var records []studio.Consumption
	for _, k := range [...]struct {
		kind, sku string
		n         int64
	}{
		{"input", skus.InputTokens, u.InputTokens}, {"output", skus.OutputTokens, u.OutputTokens},
		{"cache_creation_input", skus.CacheCreationInputTokens, u.CacheCreationInputTokens},
		{"cache_read_input", skus.CacheReadInputTokens, u.CacheReadInputTokens},
	} {
		if k.sku == "" || k.n <= 0 {
			continue
		}
		records = append(records, studio.Consumption{SKU: k.sku, Quantity: float64(k.n), JobID: req.JobID, OccurredAt: now,
			IdempotencyKey: "usage:" + req.AgentSlug + ":" + req.JobID + ":" + req.RequestID + ":" + k.kind,
			Metadata:       map[string]any{"action": req.Action, "token_kind": k.kind}})
	}
	if len(records) == 0 {
		return
	}
	inflight.Add(1)
	go func() {
		defer inflight.Add(-1)
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), usageBillingTimeout)
		defer cancel()
		if _, err := client.ReportConsumption(ctx, req.AgentSlug, a.spec.BillingCatalog, records...); err != nil {
			logger.LogAttrs(ctx, slog.LevelError, "token usage: billing report failed", slog.String("agent_slug", req.AgentSlug),
				slog.String("job_id", req.JobID), slog.String("error", err.Error()))
		}
	}()
}
