package supervaizer

import (
	"context"

	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/internal/wsctx"
)

type agentKey struct{}

// WorkspaceFrom returns the verified workspace context of the current request:
// the claims of the Studio-signed workspace token (or the local-mode context,
// whose GrantID is contracts.LocalModeGrantID). It is absent for the bootstrap
// actions and surface, which run without a workspace token.
func WorkspaceFrom(ctx context.Context) (*contracts.VerifiedWorkspaceContext, bool) {
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
func withCall(ctx context.Context, a *Agent, ws *contracts.VerifiedWorkspaceContext) context.Context {
	return &callContext{Context: ctx, agent: a, ws: ws}
}

// callContext carries the agent and the verified workspace of a call.
type callContext struct {
	context.Context
	agent *Agent
	ws    *contracts.VerifiedWorkspaceContext
}

func (c *callContext) Value(key any) any {
	if _, ok := key.(agentKey); ok {
		return c.agent
	}
	if c.ws != nil && wsctx.IsKey(key) {
		return c.ws
	}
	return c.Context.Value(key)
}
