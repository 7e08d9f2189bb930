package supervaizer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/supervaize/supervaizer-go/errcode"
)

// Error is a JSON-RPC error object: one the server sends for its own protocol
// checks (the codes above), or one a client receives, decoded from the wire
// with encoding/json ([Error.UnmarshalJSON]; svtest returns the errors it
// reads as *Error). Only the SDK builds one and a client only reads one, so
// the code it carries is always the code on the wire. A handler does not choose a code: any error
// it returns, whatever its type, is sent as [errcode.InternalError] with the
// message "Action handler failed" (or "Surface handler failed") and logged;
// report a business failure as a result with status "error" ([Fail]).
type Error struct {
	code    errcode.Code
	message string
	data    any
	err     error // logged, never sent
}

// newError returns the error object the server sends.
func newError(code errcode.Code, message string, data any) *Error {
	return &Error{code: code, message: message, data: data}
}

// UnmarshalJSON reads the JSON-RPC error object a client receives,
// {"code": …, "message": …, "data": …}: code is required and must be an
// integer, message a string (absent: empty), and data any JSON value, decoded
// as encoding/json decodes into an any (absent or null: no data). Other
// members are ignored; null leaves e unchanged. The logged cause never
// travels, so a decoded error unwraps to nil.
//
//	var resp struct {
//		Error *supervaizer.Error `json:"error"`
//	}
//	err := json.Unmarshal(body, &resp) // then supervaizer.CodeOf(resp.Error)
func (e *Error) UnmarshalJSON(b []byte) error {
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		return nil
	}
	var w struct {
		Code    *int   `json:"code"`
		Message string `json:"message"`
		Data    any    `json:"data"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return fmt.Errorf("supervaizer: decode a JSON-RPC error object: %w", err)
	}
	if w.Code == nil {
		return errors.New("supervaizer: JSON-RPC error object without a code")
	}
	*e = Error{code: errcode.Code(*w.Code), message: w.Message, data: w.Data}
	return nil
}

// Error returns the message sent on the wire.
func (e *Error) Error() string { return e.message }

// Unwrap returns the logged cause, if any.
func (e *Error) Unwrap() error { return e.err }

// Data returns the error object's data member: for -32602 the validation
// problems ({"errors":[...]}), for -32030 {"code": ...}, nil when absent.
func (e *Error) Data() any { return e.data }

// CodeOf returns the code of the JSON-RPC error err stands for, exactly the
// code sent on the wire: 0 for nil; the code of err itself when it is an
// *Error (one the server sent, or a client received and returned as is); and
// [errcode.InternalError] for any other error, which is what a handler's error
// becomes — an *Error wrapped by a handler (fmt.Errorf("…: %w", err)) included,
// since the dispatcher sends -32603 for it too (spec item 61). The -32602 of
// the SDK's own input validation inside a typed handler ([HandleActionFor]),
// returned as is, reports -32602.
func CodeOf(err error) errcode.Code {
	switch e := err.(type) {
	case nil:
		return 0
	case *Error:
		if e == nil {
			return errcode.InternalError
		}
		return e.code
	case *inputError:
		return e.e.code
	}
	return errcode.InternalError
}
