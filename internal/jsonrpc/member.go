package jsonrpc

import (
	"encoding/json"

	"github.com/supervaize/supervaizer-go/internal/encode"
	"github.com/supervaize/supervaizer-go/internal/wire"
)

// Member returns the value of the top-level key of obj, a JSON document.
// The value is a subslice of obj with its capacity clipped. ok is false when
// obj is not a valid JSON object or lacks the key. Keys are compared after
// unescaping; with a duplicated key the last wins, as in encoding/json.
func Member(obj []byte, key string) (value json.RawMessage, ok bool) {
	t := wire.Get()
	defer wire.Put(t)
	if !t.Parse(obj) {
		return nil, false
	}
	v, ok := t.Member(0, []byte(key))
	if !ok {
		return nil, false
	}
	return t.Raw(v), true
}

// AppendHTMLString appends s as a JSON string literal exactly as
// encoding/json.Marshal writes it: like [AppendError]'s strings, and in
// addition <, > and & escaped as \u003c, \u003e and \u0026.
func AppendHTMLString(dst []byte, s string) []byte {
	return encode.AppendString(dst, s, true)
}
