package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/supervaize/supervaizer-go/internal/encode"
)

// AppendResult appends the success response {"jsonrpc":"2.0","id":…,"result":…}
// to dst and returns the extended slice.
//
// id must be nil, the literal null, or a valid JSON id such as [Request.ID];
// the "id" key is omitted when id is nil or null.
// result must be valid JSON and is copied verbatim; a nil result is written
// as null, since a JSON-RPC success response always has a "result" member.
func AppendResult(dst []byte, id, result json.RawMessage) []byte {
	dst = AppendResultPrefix(dst, id)
	if len(result) == 0 {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, result...)
	}
	return append(dst, '}')
}

// AppendResultPrefix appends what [AppendResult] writes before the result,
// {"jsonrpc":"2.0","id":…,"result":, so that a result can be encoded in place;
// the caller then appends the result and the closing brace.
func AppendResultPrefix(dst []byte, id json.RawMessage) []byte {
	dst = append(dst, `{"jsonrpc":"2.0"`...)
	dst = appendID(dst, id)
	return append(dst, `,"result":`...)
}

// AppendError appends the error response
// {"jsonrpc":"2.0","id":…,"error":{"code":…,"message":…,"data":…}} to dst and
// returns the extended slice.
//
// The "id" key is omitted when id is nil or null, as in [AppendResult], and
// "data" is omitted when e.Data is nil or marshals to null. The message and
// data are written without HTML escaping; invalid UTF-8 in the message is
// replaced by U+FFFD, so the output is always valid JSON.
//
// AppendError fails, returning dst unchanged, when e is nil, e.Code is 0
// (never sent on the wire) or e.Data cannot be marshalled.
func AppendError(dst []byte, id json.RawMessage, e *Error) ([]byte, error) {
	if e == nil {
		return dst, errors.New("jsonrpc: AppendError called with a nil *Error")
	}
	if e.Code == 0 {
		return dst, errors.New("jsonrpc: error code 0 is not a valid JSON-RPC code")
	}
	start := len(dst)
	dst = append(dst, `{"jsonrpc":"2.0"`...)
	dst = appendID(dst, id)
	dst = append(dst, `,"error":{"code":`...)
	dst = strconv.AppendInt(dst, int64(e.Code), 10)
	dst = append(dst, `,"message":`...)
	dst = appendString(dst, e.Message)
	if e.Data != nil {
		withoutData := len(dst)
		dst = append(dst, `,"data":`...)
		valueStart := len(dst)
		var err error
		if dst, err = appendValue(dst, e.Data); err != nil {
			return dst[:start], fmt.Errorf("jsonrpc: encoding error data: %w", err)
		}
		if string(dst[valueStart:]) == "null" {
			dst = dst[:withoutData]
		}
	}
	return append(dst, "}}"...), nil
}

// appendID appends `,"id":<id>` unless id is absent or null.
func appendID(dst []byte, id json.RawMessage) []byte {
	if len(id) == 0 || string(id) == "null" {
		return dst
	}
	dst = append(dst, `,"id":`...)
	return append(dst, id...)
}

// appendValue appends v marshalled as compact JSON without HTML escaping.
func appendValue(dst []byte, v any) ([]byte, error) {
	buf := bytes.NewBuffer(dst)
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return dst, err
	}
	// Encode terminates the value with a newline.
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
}

// appendString appends s as a JSON string literal escaped like
// encoding/json without HTML escaping: quotes, backslashes, control
// characters, U+2028 and U+2029; invalid UTF-8 becomes \ufffd.
func appendString(dst []byte, s string) []byte { return encode.AppendString(dst, s, false) }
