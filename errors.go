package supervaizer

import "errors"

// Code is a JSON-RPC error code. The Supervaizer codes match the Python
// reference SDK.
type Code int

// JSON-RPC 2.0 and Supervaizer v2 error codes.
const (
	CodeParseError           Code = -32700 // body is not valid JSON
	CodeInvalidRequest       Code = -32600 // not a valid JSON-RPC request
	CodeMethodNotFound       Code = -32601 // unknown JSON-RPC method
	CodeInvalidParams        Code = -32602 // the action or surface request is invalid
	CodeInternalError        Code = -32603 // a handler failed or returned an invalid result
	CodeActionNotRegistered  Code = -32010 // no handler for (agent_slug, action)
	CodeSurfaceNotRegistered Code = -32011 // no handler for (agent_slug, surface)
	CodeUnauthorized         Code = -32030 // workspace authorization failed
)

// Error is a JSON-RPC error object: one the server sends for its own protocol
// checks (the codes above), or one a client receives (svtest returns the
// errors it reads as *Error). A handler does not choose a code: any error it
// returns, an *Error included, is sent as [CodeInternalError] with the message
// "Action handler failed" (or "Surface handler failed") and logged; report a
// business failure as a result with status "error" ([Fail]). Err is logged,
// never sent.
type Error struct {
	Code    Code
	Message string
	Data    any
	Err     error
}

// Error returns the message sent to Studio.
func (e *Error) Error() string { return e.Message }

// Unwrap returns the logged cause.
func (e *Error) Unwrap() error { return e.Err }

// Is matches on the code, so errors.Is(err, ErrInvalidParams) works through wrapping.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// Sentinel errors for errors.Is.
var (
	ErrInvalidParams        = &Error{Code: CodeInvalidParams, Message: "invalid params"}
	ErrActionNotRegistered  = &Error{Code: CodeActionNotRegistered, Message: "action handler not registered"}
	ErrSurfaceNotRegistered = &Error{Code: CodeSurfaceNotRegistered, Message: "surface handler not registered"}
	ErrUnauthorized         = &Error{Code: CodeUnauthorized, Message: "workspace authorization failed"}
	ErrInternal             = &Error{Code: CodeInternalError, Message: "internal error"}
)

// CodeOf returns the code of the JSON-RPC error err stands for: 0 for nil,
// the code of an *Error found in the chain (an error the server sent or a
// client received), CodeInternalError for any other error. It is the code on
// the wire for every error the SDK produces or reads; an error returned by a
// handler is always sent as CodeInternalError.
func CodeOf(err error) Code {
	if err == nil {
		return 0
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeInternalError
}
