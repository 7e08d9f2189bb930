package supervaizer

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"time"

	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/conversation"
	"github.com/supervaize/supervaizer-go/errcode"
	"github.com/supervaize/supervaizer-go/internal/a2abind"
	"github.com/supervaize/supervaizer-go/internal/campaignctl"
	"github.com/supervaize/supervaizer-go/internal/jsonrpc"
	"github.com/supervaize/supervaizer-go/internal/taskview"
	"github.com/supervaize/supervaizer-go/internal/validate"
	"github.com/supervaize/supervaizer-go/internal/wire"
	"github.com/supervaize/supervaizer-go/internal/wsauth"
)

// The method table: every JSON-RPC method served on POST /a2a is one entry
// (name, binding, key scope, token scope, params decoder, unary or stream
// handler). dispatch.go serves an entry; the A2A bindings (package a2abind)
// bring theirs and reach the pipeline through a2aPipeline. A new method is
// one entry in methodTable and its handler (docs/architecture.md).

// method is one entry of the method table: a JSON-RPC method served on
// POST /a2a. Adding a method is adding an entry (methods.go lists them).
type method struct {
	name    string
	binding string   // the family of methods it belongs to: "supervaizer", an A2A binding, an extension
	key     KeyScope // the API key scope the call needs
	// tokenScope is the scope a workspace token must carry for the call,
	// with the id of the action or surface it calls.
	tokenScope string
	// unary serves a method answered with one JSON-RPC response: it
	// appends the result to dst. stream serves a method answered with an
	// event stream (an A2A binding's streaming methods). One of them is set.
	unary  func(s *Server, c *Call, dst []byte) ([]byte, *Error)
	stream func(s *Server, c *Call)
}

// unaryMethod is the entry of a unary method: its params decoded by decode
// (from c's tape, before anything else), then served by handle.
func unaryMethod[P any](name, binding string, key KeyScope, tokenScope string,
	decode func(v *validate.Validator, c *Call) (P, *Error), handle func(s *Server, c *Call, p P, dst []byte) ([]byte, *Error)) method {
	return method{name: name, binding: binding, key: key, tokenScope: tokenScope,
		unary: func(s *Server, c *Call, dst []byte) ([]byte, *Error) {
			p, err := decode(s.validator, c)
			if err != nil {
				return dst, err
			}
			return handle(s, c, p, dst)
		}}
}

// served is a method as one server serves it: its entry and the
// interceptors' chain around it, built once (buildMethods).
type served struct {
	m      *method
	unary  UnaryFunc
	stream StreamFunc
}

// buildMethods makes the server's chains: the table's entries and the
// fallback of a method it does not serve, each wrapped in the interceptors.
func (s *Server) buildMethods(table []method, ics []Interceptor) {
	s.methods = make(map[string]*served, len(table))
	wrap := func(m *method) *served {
		sv := &served{m: m}
		if m.stream != nil {
			sv.stream = chainStream(ics, func(ctx context.Context, c *Call) { s.serveStream(ctx, c) })
		} else {
			sv.unary = chainUnary(ics, func(ctx context.Context, c *Call) { s.serveUnary(ctx, c) })
		}
		return sv
	}
	for i := range table {
		if _, dup := s.methods[table[i].name]; dup {
			panic("supervaizer: the method table has " + table[i].name + " twice")
		}
		s.methods[table[i].name] = wrap(&table[i])
	}
	// An unknown name: -32601 for an a2a key too (A2A names it may try),
	// except supervaizer/* names, which need write (checkMethodKey).
	s.otherMethod = wrap(&method{name: otherMethod, binding: "", key: ScopeA2A, unary: unknownMethod})
	s.refuse = chainUnary(ics, func(_ context.Context, c *Call) { writeRefusal(s.logger, c) })
	s.handler = chainHandler(ics, runHandler)
}

// bindingSupervaizer is the binding of the supervaizer/* methods.
const bindingSupervaizer = "supervaizer"

// methodTable is every method served on POST /a2a: one entry each, the
// Supervaizer v2 methods and those of the A2A bindings (package a2abind).
func methodTable() []method {
	table := []method{
		unaryMethod(MethodActionInvoke, bindingSupervaizer, ScopeWrite, MethodActionInvoke, decodeAction, invokeAction),
		unaryMethod(MethodSurfaceLoad, bindingSupervaizer, ScopeWrite, MethodSurfaceLoad, decodeSurface, loadSurface),
	}
	for _, m := range a2abind.Methods() {
		table = append(table, bindingMethod(m))
	}
	return append(table, campaignTable()...)
}

// bindingMethod is the entry of a method of an A2A binding: the binding
// translates the call to and from the pipeline (a2aPipeline).
func bindingMethod(m a2abind.Method) method {
	e := method{name: m.Name, binding: m.Binding, key: ScopeA2A, tokenScope: m.TokenScope}
	if m.Stream != nil {
		e.stream = func(s *Server, c *Call) { m.Stream((*a2aPipeline)(s), c.bindingCall()) }
		return e
	}
	e.unary = func(s *Server, c *Call, dst []byte) ([]byte, *Error) {
		dst, err := m.Unary((*a2aPipeline)(s), c.bindingCall(), dst)
		return dst, fromRPC(err)
	}
	return e
}

// unknownMethod answers a method the table does not have.
func unknownMethod(_ *Server, c *Call, dst []byte) ([]byte, *Error) {
	return dst, fromRPC(a2abind.Unknown(c.bindingCall(), c.rpc.Method))
}

// bindingCall is c as a binding sees it.
func (c *Call) bindingCall() *a2abind.Call {
	c.a2a = a2abind.Call{R: c.r, W: c.w, T: c.t, Params: c.rpc.ParamsNode, ID: c.rpc.ID, Ref: c}
	return &c.a2a
}

// fromRPC is the *Error of a binding's error (nil for nil).
func fromRPC(e *jsonrpc.Error) *Error {
	if e == nil {
		return nil
	}
	return newError(e.Code, e.Message, e.Data)
}

// toRPC is e as a binding receives it.
func toRPC(e *Error) *jsonrpc.Error {
	if e == nil {
		return nil
	}
	return &jsonrpc.Error{Code: e.code, Message: e.message, Data: e.data}
}

// a2aPipeline is the narrow face of the server the A2A bindings translate
// to and from (a2abind.Pipeline).
type a2aPipeline Server

var _ a2abind.Pipeline = (*a2aPipeline)(nil)

// Invoke runs an A2A call's mapped request through invoke.
func (p *a2aPipeline) Invoke(bc *a2abind.Call, req *ActionRequest, input int32, dst []byte) ([]byte, taskview.Job, bool, *jsonrpc.Error) {
	c := bc.Ref.(*Call)
	c.r = bc.R // a stream's call continues with its own context
	var read a2aRead
	var t *wire.Tape
	if input >= 0 {
		t = bc.T
	}
	read.emit = bc.Emit
	raw, err := (*Server)(p).invoke(c, req, t, input, &read, dst)
	bc.Usage = read.usage
	return raw, read.job, read.read, toRPC(err)
}

// Refresh runs the job.sync request req in process, as vc: a call of its
// own (the watching call may end first), no token read (spec item 72).
func (p *a2aPipeline) Refresh(ctx context.Context, vc *contracts.VerifiedWorkspaceContext, req *ActionRequest) (taskview.Job, bool, *jsonrpc.Error) {
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, "/a2a", http.NoBody)
	if err != nil {
		return taskview.Job{}, false, &jsonrpc.Error{Code: errcode.InternalError, Message: "Internal error"}
	}
	s := (*Server)(p)
	c := getCall(nil, r)
	defer putCall(c)
	c.Method, c.verified = MethodActionInvoke, vc
	var read a2aRead
	if _, rpcErr := s.invoke(c, req, nil, -1, &read, nil); rpcErr != nil {
		return taskview.Job{}, false, toRPC(rpcErr)
	}
	return read.job, read.read, nil
}

// TokenLeeway is the workspace tokens' clock leeway.
func (p *a2aPipeline) TokenLeeway() time.Duration {
	if p.startup.auth.LeewaySet {
		return p.startup.auth.Leeway
	}
	return wsauth.DefaultLeeway
}

// Authorize verifies the call's workspace token.
func (p *a2aPipeline) Authorize(bc *a2abind.Call, workspaceID, slug string, scopes []string) (*contracts.VerifiedWorkspaceContext, *jsonrpc.Error) {
	vc, err := (*Server)(p).authorize(bc.R.Context(), bc.R, contracts.WorkspaceRef{ID: workspaceID}, slug, scopes)
	return vc, toRPC(err)
}

// PrimaryAgent is the primary agent's slug.
func (p *a2aPipeline) PrimaryAgent() string { return p.primary.slug }

// LocalAuth reports the local-mode bypass.
func (p *a2aPipeline) LocalAuth() bool { return p.localAuth }

// HasAction reports whether the agent has a handler for the action.
func (p *a2aPipeline) HasAction(slug, action string) bool {
	a := p.bySlug[slug]
	return a != nil && a.action(action) != nil
}

// IsJobAction reports whether an error result of the action is a failed
// task: the agent's start action, its job.sync and job.stop. (Declared
// scopes do not tell: an action's scope defaults to "job".)
func (p *a2aPipeline) IsJobAction(slug, action string) bool {
	a := p.bySlug[slug]
	if a == nil {
		return false
	}
	switch action {
	case contracts.DefaultStartAction, contracts.DefaultSyncAction, jobStopAction:
		return true
	}
	return a.reg != nil && a.reg.JobPolicy.Setup != nil && action == a.reg.JobPolicy.Setup.StartAction
}

// Tasks is the task view.
func (p *a2aPipeline) Tasks() *taskview.View { return p.tasks }

// Blocking is HTTPSettings.A2ABlocking.
func (p *a2aPipeline) Blocking() time.Duration { return p.cfg.http.A2ABlocking }

// Logger is the server's logger.
func (p *a2aPipeline) Logger() *slog.Logger { return p.logger }

// a2aRead is what the task view read from the result of an A2A call.
type a2aRead struct {
	job  taskview.Job
	read bool
	// emit receives the handler's partial text (nil: not streamed); usage
	// is what the handler reported.
	emit  func(text string)
	usage conversation.Usage
}

// jobStopAction is the action that stops a job (what A2A's cancel maps to).
const jobStopAction = "job.stop"

// campaignTable is the method table's entries of the campaign-control
// extension (internal/campaignctl): each served like a binding's method
// (bindingMethod), through the narrow face of the server.
func campaignTable() []method {
	out := make([]method, 0, len(campaignctl.Methods))
	for i := range campaignctl.Methods {
		cm := &campaignctl.Methods[i]
		out = append(out, bindingMethod(a2abind.Method{Name: cm.Name, Binding: campaignctl.Binding, TokenScope: cm.Name,
			Unary: func(p a2abind.Pipeline, bc *a2abind.Call, dst []byte) ([]byte, *jsonrpc.Error) {
				params, err := campaignctl.Decode(bc.T.Raw(bc.Params), cm)
				if err == nil {
					dst, err = p.(*a2aPipeline).serveCampaign(bc, cm, &params, dst)
				}
				return dst, err
			}}))
	}
	return out
}

// campaigns is the server's campaign-control state.
func (p *a2aPipeline) campaigns() *campaignctl.Service {
	st := p.idem.store
	return &campaignctl.Service{St: st, Logger: p.logger, Retention: p.idem.retention,
		Idem: func(ctx context.Context, ws, slug, action, key string) (bool, string, bool, error) {
			raw, found, err := st.Get(ctx, recordKey(ws, slug, action, key))
			if err != nil || !found {
				return false, "", found, err
			}
			var rec idemRecord
			if err := json.Unmarshal(raw, &rec); err != nil {
				return false, "", false, err
			}
			return rec.State == recordDone, rec.JobID, true, nil
		}}
}

// campaignCall admits a call of agent slug's campaign control: the agent
// serves it, and the token (of the call's workspace) carries scopes.
func (p *a2aPipeline) campaignCall(bc *a2abind.Call, slug string, scopes []string) (*Agent, *campaignctl.Call, *jsonrpc.Error) {
	a := p.bySlug[slug]
	if a == nil || a.campaignControl() == nil {
		return nil, nil, nil
	}
	vc, err := p.Authorize(bc, a2abind.TokenWorkspace(p, bc), slug, scopes)
	if err != nil {
		return nil, nil, err
	}
	return a, &campaignctl.Call{Ctx: bc.R.Context(), WS: vc.WorkspaceID, Slug: slug, CC: a.campaignControl()}, nil
}

// serveCampaign serves an admitted campaign/* call.
func (p *a2aPipeline) serveCampaign(bc *a2abind.Call, cm *campaignctl.Method, params *campaignctl.Params, dst []byte) ([]byte, *jsonrpc.Error) {
	slug := params.AgentSlug
	if slug == "" {
		slug = p.primary.slug
	}
	a, cx, err := p.campaignCall(bc, slug, []string{MethodActionInvoke, cm.Name})
	if err == nil && (cx == nil || (cm.Op == "intervene" && cx.CC.Intervene == nil)) {
		err = &jsonrpc.Error{Code: errcode.MethodNotFound, Message: "Method not found", Data: map[string]any{"method": cm.Name}}
	}
	if err != nil {
		return dst, err
	}
	bc.Ref.(*Call).note(a, "", "", cx.WS)
	cx.P = params
	res, err := cm.Serve(p.campaigns(), cx)
	if err != nil {
		return dst, err
	}
	b, merr := json.Marshal(res)
	if merr != nil {
		return dst, &jsonrpc.Error{Code: errcode.InternalError, Message: "Internal error"}
	}
	return append(dst, b...), nil
}

// Supervised admits an A2A send or cancel under a campaign lease.
func (p *a2aPipeline) Supervised(bc *a2abind.Call, slug string, raw []byte, messageID, action, taskID string) (context.Context, func(string), *jsonrpc.Error) {
	sm, err := campaignctl.ParseSupervisor(raw, messageID, taskID)
	if err != nil {
		return nil, nil, err
	}
	a, cx, err := p.campaignCall(bc, slug, []string{MethodActionInvoke})
	switch {
	case err != nil:
		return nil, nil, err
	case cx == nil:
		return nil, nil, &jsonrpc.Error{Code: errcode.PolicyRefused, Message: "Refused by the campaign policy: the agent does not serve campaign control"}
	case taskID == "" && !a.isIdempotent(action):
		return nil, nil, &jsonrpc.Error{Code: errcode.PolicyRefused,
			Message: "Refused by the campaign policy: action " + action + " is not idempotent: a send under a lease needs its idempotency record"}
	}
	return p.campaigns().Supervise(cx, sm, action, taskID)
}
