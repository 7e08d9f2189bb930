// Package errcode declares every JSON-RPC error code that supervaizer-go
// sends or reads, once, as a [Code]: those of JSON-RPC 2.0, of the A2A task
// methods, of Supervaizer v2 and of the campaign-control extension. It
// imports nothing, so that every package speaking JSON-RPC (the server in
// package supervaizer, the A2A wire types of package a2atask, a client) can
// use it.
//
// A code says which check refused a call; the error object's message and
// data say more. Compare the code of an error with supervaizer.CodeOf:
//
//	if supervaizer.CodeOf(err) == errcode.Unauthorized {
//		// the workspace token failed a check: data.code says which
//	}
//
// The server answers the codes below only from its own checks: whatever
// error a handler returns is [InternalError], and a business failure is a
// result with status "error", not a code.
package errcode

// Code is a JSON-RPC error code: the "code" member of a JSON-RPC error
// object. The Supervaizer codes match the Python reference SDK; the A2A
// codes, the A2A specification's.
type Code int

// JSON-RPC 2.0 codes, answered by POST /a2a before any handler runs (the
// first three) or by the method's own checks.
const (
	ParseError     Code = -32700 // the body is not valid JSON
	InvalidRequest Code = -32600 // valid JSON, but not a JSON-RPC 2.0 request object
	MethodNotFound Code = -32601 // a method the server does not serve
	InvalidParams  Code = -32602 // the params fail the method's request model, or a typed input is invalid
	InternalError  Code = -32603 // a handler failed, panicked or returned an invalid result
)

// A2A codes, answered by the A2A task methods (both bindings) besides those
// of JSON-RPC 2.0 and of Supervaizer, which keep their meaning there.
const (
	TaskNotFound                   Code = -32001 // an unknown task, or a task of another workspace
	TaskNotCancelable              Code = -32002 // a terminal task, or an agent without job.stop
	PushNotificationNotSupported   Code = -32003 // the push notification methods of both bindings
	UnsupportedOperation           Code = -32004 // ListTasks, GetExtendedAgentCard, SubscribeToTask on a terminal task
	ContentTypeNotSupported        Code = -32005 // an A2A 1.0 data part whose mediaType is not application/json
	InvalidAgentResponse           Code = -32006 // the remote agent's answer is invalid (read by clients; never sent)
	ExtendedAgentCardNotConfigured Code = -32007 // no extended Agent Card (read by clients; never sent)
	VersionNotSupported            Code = -32009 // an A2A-Version header naming neither 0.3 nor 1.0
)

// Supervaizer v2 codes of supervaizer/action.invoke and
// supervaizer/surface.load.
const (
	ActionNotRegistered  Code = -32010 // no handler for (agent_slug, action)
	SurfaceNotRegistered Code = -32011 // no handler for (agent_slug, surface)
	Unauthorized         Code = -32030 // the workspace token failed a check; data.code names it
)

// Codes of the campaign-control extension (urn:openoperator:campaign-control:v1).
const (
	LeaseHeld     Code = -32050 // the lease is held by another controller
	StaleEpoch    Code = -32051 // the controller epoch is not the lease's
	LeaseExpired  Code = -32052 // the lease has expired
	PolicyRefused Code = -32053 // the constraints cannot be enforced, or the call breaks them
)
