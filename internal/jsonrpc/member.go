package jsonrpc

import (
	"encoding/json"

	"github.com/supervaize/supervaizer-go/contracts"
)

// Member returns the value of the top-level key of obj, which must be valid
// JSON (an encoder's output, or a validated document: obj is not checked).
// The value is a subslice of obj with its capacity clipped. ok is false when
// obj is not an object or lacks the key. Keys are compared after unescaping;
// with a duplicated key the last wins, as in encoding/json.
func Member(obj []byte, key string) (value json.RawMessage, ok bool) {
	s := scanner{data: obj}
	s.skipSpace()
	if s.pos >= len(obj) || obj[s.pos] != '{' {
		return nil, false
	}
	s.pos++
	for {
		s.skipSpace()
		if s.pos >= len(obj) || obj[s.pos] != '"' {
			return value, ok
		}
		k := unquote(s.scanString())
		s.skipSpace()
		if s.pos >= len(obj) || obj[s.pos] != ':' {
			return nil, false
		}
		s.pos++
		s.skipSpace()
		start := s.pos
		s.skipValue()
		if string(k) == key {
			value, ok = obj[start:s.pos:s.pos], true
		}
		s.skipSpace()
		if s.pos >= len(obj) || obj[s.pos] != ',' {
			return value, ok
		}
		s.pos++
	}
}

// AppendHTMLString appends s as a JSON string literal exactly as
// encoding/json.Marshal writes it: like [AppendError]'s strings, and in
// addition <, > and & escaped as \u003c, \u003e and \u0026.
func AppendHTMLString(dst []byte, s string) []byte {
	return contracts.AppendJSONString(dst, s, true)
}
