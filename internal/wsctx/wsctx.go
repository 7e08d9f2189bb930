// Package wsctx carries the verified workspace context of a request in a
// context.Context, for the root package and the engines it uses.
package wsctx

import (
	"context"

	"github.com/supervaize/supervaizer-go/contracts"
)

type key struct{}

// With returns ctx carrying ws.
func With(ctx context.Context, ws *contracts.VerifiedWorkspaceContext) context.Context {
	return context.WithValue(ctx, key{}, ws)
}

// From returns the verified workspace context carried by ctx.
func From(ctx context.Context) (*contracts.VerifiedWorkspaceContext, bool) {
	ws, ok := ctx.Value(key{}).(*contracts.VerifiedWorkspaceContext)
	return ws, ok && ws != nil
}

// IsKey reports whether k is the key the workspace is carried under, for a
// context type that carries it in a field of its own (its Value method
// answers the workspace for this key).
func IsKey(k any) bool {
	_, ok := k.(key)
	return ok
}
