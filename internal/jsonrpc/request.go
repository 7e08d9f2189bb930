// Package jsonrpc decodes and encodes the JSON-RPC 2.0 envelopes of the
// controller's POST /a2a endpoint.
//
// [Decode] parses the body once into the caller's tape (internal/wire) and
// validates the envelope only: params are handed on as their node on that
// tape (and their raw bytes) for the method's request model, which is read
// from the same tape. [DecodeRequest] does the same on a tape of its own.
// [AppendResult] and [AppendError] write responses with a fixed key order and
// without HTML escaping.
//
// Decoding follows the SDK's decisions:
// a body that is not valid JSON is -32700 "Parse error"; valid JSON that is
// not a request object is -32600 "Invalid Request" with data.errors listing
// every problem. Keys are matched exactly: a key that differs from an
// envelope key only in letter case, or a key given twice, is rejected
// because lenient decoders (encoding/json matches keys case-insensitively)
// could read a different request from the same bytes.
package jsonrpc

import (
	"bytes"
	"encoding/json"
	"mime"
	"slices"
	"strings"

	"github.com/supervaize/supervaizer-go/internal/wire"
)

// Request is a decoded, validated JSON-RPC 2.0 request envelope.
//
// ID and Params alias the body given to [DecodeRequest], which must not be
// modified while the Request is in use. Their capacity is clipped, so
// appending to them never writes into the body.
type Request struct {
	// ID is the normalized request id: nil when absent or null; otherwise
	// a JSON string literal exactly as received, or a JSON integer literal
	// (decimal digits with an optional leading '-'; never "-0"). Integral
	// numbers such as 7.0 or 1e2 are normalized to 7 and 100.
	ID json.RawMessage
	// Method is the decoded method name; it may be empty.
	Method string
	// Params is the params object exactly as received, or {} when absent.
	Params json.RawMessage
	// ParamsNode is the node of the params object on the tape given to
	// [Decode], -1 when params is absent or the request is invalid.
	ParamsNode int32
}

// MaxIDDigits bounds the integer literal that an id in exponent or
// fractional notation (such as 1e2 or 7.0) may expand to. Larger values,
// such as 1e999999, make the request invalid instead of allocating
// their digits. Integer ids written without exponent are kept as received.
const MaxIDDigits = 1024

// The methods of the protocol: Decode returns these constants as
// Request.Method rather than a copy of the body's bytes.
const (
	MethodActionInvoke = "supervaizer/action.invoke"
	MethodSurfaceLoad  = "supervaizer/surface.load"
)

// methodString returns b as a string, without a copy for a method of the
// protocol.
func methodString(b []byte) string {
	switch string(b) {
	case MethodActionInvoke:
		return MethodActionInvoke
	case MethodSurfaceLoad:
		return MethodSurfaceLoad
	}
	return string(b)
}

// Envelope keys.
const (
	keyJSONRPC = "jsonrpc"
	keyID      = "id"
	keyMethod  = "method"
	keyParams  = "params"
)

// envelopeKeys lists the envelope keys, for the letter-case check.
var envelopeKeys = [...][]byte{[]byte(keyJSONRPC), []byte(keyID), []byte(keyMethod), []byte(keyParams)}

// DecodeRequest decodes and validates a JSON-RPC 2.0 request body.
//
// It always returns a non-nil *Request. On failure the *Error is -32700
// "Parse error" (body not valid JSON or not valid UTF-8, including an empty
// body or trailing data) or -32600 "Invalid Request" (with data
// {"errors": []Detail}), and only req.ID is meaningful: it is the id to echo
// in the error response, nil unless the body held exactly one valid id.
//
// A valid request is a JSON object whose "jsonrpc" is absent or "2.0",
// whose "method" is a string, whose "id" is absent, null, a string or an
// integral number, and whose "params" is absent or an object. Other keys are
// ignored, except that a key given twice or a key that differs from an
// envelope key only in letter case makes the request invalid.
func DecodeRequest(body []byte) (*Request, *Error) {
	t := wire.Get()
	defer wire.Put(t)
	return Decode(t, body)
}

// Decode is [DecodeRequest] on the caller's tape: body is parsed into t,
// the one parse of the body, so that the params (req.ParamsNode) and what
// they hold are read from t afterwards without scanning the bytes again.
func Decode(t *wire.Tape, body []byte) (*Request, *Error) {
	req := new(Request)
	return req, DecodeInto(t, body, req)
}

// DecodeInto is [Decode] filling the caller's req (no allocation for it).
func DecodeInto(t *wire.Tape, body []byte, req *Request) *Error {
	*req = Request{ParamsNode: -1}
	if !t.Parse(body) {
		return newParseError()
	}
	if root := t.Nodes[0]; root.Kind != wire.Object {
		msg := "request must be a JSON object"
		if root.Kind == wire.Array {
			msg = "batch requests are not supported; the request must be a JSON object"
		}
		return newInvalidRequest([]Detail{{Loc: []any{}, Msg: msg, Type: DetailTypeTypeError}})
	}
	env := envelope{t: t, params: -1, method: -1}
	if t.Repeated {
		t.RepeatedKeys(0, func(m int32) bool { env.repeated = append(env.repeated, m); return true })
	}
	for m := int32(1); m < t.Nodes[0].Next; m = t.Nodes[m+1].Next {
		env.member(m)
	}

	if !env.methodSeen {
		env.problem(keyMethod, "field required", DetailTypeMissing)
	}
	if len(env.problems) > 0 {
		if env.idValid {
			req.ID = env.id
		}
		return newInvalidRequest(env.problems)
	}
	req.ID, req.Method, req.ParamsNode = env.id, methodString(t.Str(env.method)), env.params
	if env.params >= 0 {
		req.Params = t.Raw(env.params)
	} else {
		req.Params = []byte("{}")
	}
	return nil
}

// envelope collects the members of one request object and their problems.
type envelope struct {
	t                                           *wire.Tape
	jsonrpcSeen, idSeen, methodSeen, paramsSeen bool

	id       []byte  // normalized id
	idValid  bool    // the only id seen is valid
	method   int32   // the string node of method
	params   int32   // the object node of params
	repeated []int32 // members whose key repeats an earlier one

	problems []Detail
}

// member checks the member at m (its key node; the value follows).
func (e *envelope) member(m int32) {
	t, v := e.t, m+1
	name, kind := t.Str(m), t.Nodes[v].Kind
	switch string(name) {
	case keyJSONRPC:
		if !e.first(&e.jsonrpcSeen, keyJSONRPC) {
			return
		}
		switch {
		case kind != wire.String:
			e.problem(keyJSONRPC, `must be the string "2.0"`, DetailTypeTypeError)
		case string(t.Str(v)) != "2.0":
			e.problem(keyJSONRPC, `must be the string "2.0"`, DetailTypeValueError)
		}
	case keyID:
		if !e.first(&e.idSeen, keyID) {
			e.idValid = false // ambiguous: echo no id
			return
		}
		var d *Detail
		e.id, d = normalizeID(t.Raw(v))
		if e.idValid = d == nil; !e.idValid {
			e.problems = append(e.problems, *d)
		}
	case keyMethod:
		if !e.first(&e.methodSeen, keyMethod) {
			return
		}
		if kind == wire.String {
			e.method = v
		} else {
			e.problem(keyMethod, "must be a string", DetailTypeTypeError)
		}
	case keyParams:
		if !e.first(&e.paramsSeen, keyParams) {
			return
		}
		if kind == wire.Object {
			e.params = v
		} else {
			e.problem(keyParams, "must be an object", DetailTypeTypeError)
		}
	default:
		if slices.Contains(e.repeated, m) {
			// The name is not echoed: it may be arbitrarily long.
			e.problems = append(e.problems, Detail{Loc: []any{}, Msg: "duplicate key", Type: DetailTypeValueError})
		}
		for _, k := range envelopeKeys {
			if bytes.EqualFold(name, k) {
				// Short by construction, since it folds to an envelope key.
				e.problem(string(name), `key differs only in letter case from "`+string(k)+`"`, DetailTypeValueError)
			}
		}
	}
}

// first marks the envelope key as seen and reports whether it was the first
// occurrence; a repeated key is a problem.
func (e *envelope) first(seen *bool, key string) bool {
	if *seen {
		e.problem(key, "duplicate key", DetailTypeValueError)
		return false
	}
	*seen = true
	return true
}

// problem records a problem with the top-level key.
func (e *envelope) problem(key, msg, typ string) {
	e.problems = append(e.problems, keyDetail(key, msg, typ))
}

// keyDetail returns the problem for the top-level key.
func keyDetail(key, msg, typ string) Detail {
	return Detail{Loc: []any{key}, Msg: msg, Type: typ, Path: "/" + wire.PointerToken(key)}
}

// IsJSONContentType reports whether ct is application/json or an
// application/*+json media type.
func IsJSONContentType(ct string) bool {
	if ct == "application/json" { // the usual value, without parsing
		return true
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	return mt == "application/json" || (strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"))
}
