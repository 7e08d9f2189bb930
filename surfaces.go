package supervaizer

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/supervaize/supervaizer-go/contracts"
)

// SurfaceRequest is a supervaizer/surface.load request.
type SurfaceRequest = contracts.SurfaceRequest

// SurfaceResult is what a surface handler returns: an A2UI document for the
// surface. Build it with [NewSurfaceResult].
type SurfaceResult = contracts.SurfaceResult

// SurfaceHandler loads one surface. Surface handlers must not create persistent
// business state. A returned error, a panic or a result that
// breaks the contract (including a missing document) is answered with -32603
// "Surface handler failed".
type SurfaceHandler func(ctx context.Context, req *SurfaceRequest) (*SurfaceResult, error)

// HandleSurface registers h for the surface id on the server's only agent. It
// panics when the server carries several agents (use [Agent.HandleSurface]),
// when the surface is not declared (a registration listing no surface and no
// action is declared by its handlers) or when it already has a handler.
func (s *Server) HandleSurface(id string, h SurfaceHandler) {
	s.agentFor("HandleSurface").HandleSurface(id, h)
}

// HandleAction registers h for the action id on the server's only agent. It
// panics when the server carries several agents (use [Agent.HandleAction]),
// when the action is not declared (a registration listing no surface and no
// action is declared by its handlers) or when it already has a handler.
func (s *Server) HandleAction(id string, h ActionHandler) {
	s.agentFor("HandleAction").HandleAction(id, h)
}

// NewSurfaceResult returns the result of a surface load: the document (any
// value that marshals to a JSON object, such as the a2ui documents) with the
// A2UI version and catalog version of the agent serving the request (taken from
// ctx inside a handler; left null otherwise).
func NewSurfaceResult(ctx context.Context, surface string, document any) (*SurfaceResult, error) {
	raw, err := contracts.Marshal(document)
	if err != nil {
		return nil, fmt.Errorf("supervaizer: surface %q: encode document: %w", surface, err)
	}
	res := &SurfaceResult{Surface: surface, Document: raw}
	if a, ok := AgentFrom(ctx); ok && a.reg != nil {
		res.A2UIVersion = new(a.reg.Versions.A2UIVersion)
		res.A2UICatalogVersion = new(a.reg.Versions.A2UICatalogVersion)
	}
	return res, nil
}

// StaticSurface returns a handler that loads the same document on every call:
// a form that does not depend on the request, such as a job.start form. The
// document is encoded once, here; it panics if the document cannot be
// encoded (a setup error, like those of [Server.HandleSurface]).
func StaticSurface(document any) SurfaceHandler {
	raw, err := contracts.Marshal(document)
	if err != nil {
		panic(fmt.Sprintf("supervaizer: StaticSurface: encode the document: %v", err))
	}
	return func(ctx context.Context, req *SurfaceRequest) (*SurfaceResult, error) {
		return NewSurfaceResult(ctx, req.Surface, json.RawMessage(raw))
	}
}
