package supervaizer

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/internal/validate"
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
	return newError(CodeInvalidParams, msg, map[string]any{"errors": ps})
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
