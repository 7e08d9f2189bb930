package jsonrpc

import "github.com/supervaize/supervaizer-go/errcode"

// Messages of the envelope errors produced by [DecodeRequest].
const (
	MessageParseError     = "Parse error"
	MessageInvalidRequest = "Invalid Request"
)

// Validation problem types used in [Detail.Type] by [DecodeRequest].
const (
	DetailTypeMissing    = "missing"     // a required key is absent
	DetailTypeTypeError  = "type_error"  // a value has a forbidden JSON type
	DetailTypeValueError = "value_error" // a value or key has the right type but is not allowed
)

// Error is a JSON-RPC error object, the "error" member of a response.
//
// It is a wire value, not a Go error: callers map their own errors onto it.
type Error struct {
	// Code is the JSON-RPC error code; [AppendError] refuses 0.
	Code errcode.Code
	// Message is a short, human-readable description.
	Message string
	// Data is marshalled as the "data" member; it is omitted when nil or
	// when it marshals to null. It must never carry secrets or rejected input.
	Data any
}

// Detail is one validation problem listed in the "errors" array of an error's
// data, for example
// {"loc":["params"],"msg":"must be an object","type":"type_error","path":"/params"}.
// Msg never quotes the rejected value.
type Detail struct {
	// Loc is the path of the offending key as segments (strings and
	// integers); it is empty, not nil, for a problem with the whole request.
	Loc []any `json:"loc"`
	// Msg describes the problem in one line.
	Msg string `json:"msg"`
	// Type classifies the problem, such as [DetailTypeMissing].
	Type string `json:"type"`
	// Path is Loc as a JSON Pointer (RFC 6901); empty for the whole request.
	Path string `json:"path,omitempty"`
}

// newParseError returns the -32700 error for a body that is not valid JSON.
func newParseError() *Error {
	return &Error{Code: errcode.ParseError, Message: MessageParseError}
}

// newInvalidRequest returns the -32600 error listing details as data.errors.
func newInvalidRequest(details []Detail) *Error {
	return &Error{
		Code:    errcode.InvalidRequest,
		Message: MessageInvalidRequest,
		Data:    map[string]any{"errors": details},
	}
}
