package supervaizer

import (
	"errors"
	"fmt"
)

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

// Error is sent to Studio as a JSON-RPC error object. Err is logged, never sent.
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

// Errorf returns an *Error with the code and a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// CodeOf returns the code that is sent for err: 0 for nil, the code of an
// *Error found in the chain, CodeInternalError for any other error.
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
