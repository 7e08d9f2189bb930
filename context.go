package supervaizer

import (
	"context"

	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/internal/wire"
	"github.com/supervaize/supervaizer-go/internal/wsctx"
)

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
	}
	if c.ws != nil && wsctx.IsKey(key) {
		return c.ws
	}
	return c.Context.Value(key)
}
