package supervaizer

// Decoding the params of the A2A task methods (both bindings) from the
// request's tape: the message's one data part, the metadata keys of the
// mapping, the configuration and the task id (spec open-questions item 65).

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/supervaize/supervaizer-go/a2atask"
	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/internal/wire"
)

// emptyInput is the input of a call without one; never modified.
var emptyInput = json.RawMessage("{}")

// a2aMeta holds the params.metadata keys of the mapping ("" when absent).
type a2aMeta struct {
	workspaceID, userID, surface, agentSlug string
}

// a2aMessage is a decoded message/send or message/stream params object.
type a2aMessage struct {
	messageID, taskID, contextID, action string
	input                                int32 // node of data.input on the tape, -1 when absent
	blocking                             bool
	meta                                 a2aMeta
}

// shapeError is the -32602 error of A2A params that break their shape: msg
// names the expected shape, the problem where it breaks.
func shapeError(msg string, loc []any, problem string) *Error {
	var path strings.Builder
	for _, l := range loc {
		path.WriteByte('/')
		switch v := l.(type) {
		case string:
			path.WriteString(wire.PointerToken(v))
		case int:
			path.WriteString(strconv.Itoa(v))
		}
	}
	return invalidParams(msg, []contracts.Problem{{Loc: loc, Msg: problem, Type: "a2a_shape", Path: path.String()}})
}

// member returns the node of key in the object at obj.
func member(t *wire.Tape, obj int32, key string) (int32, bool) {
	return t.Member(obj, []byte(key))
}

// optString reads the optional string key of the object at obj: "" when
// absent, ok false when present but not a string.
func optString(t *wire.Tape, obj int32, key string) (string, bool) {
	n, found := member(t, obj, key)
	if !found {
		return "", true
	}
	if t.Nodes[n].Kind != wire.String {
		return "", false
	}
	return string(t.Str(n)), true
}

// isObject reports whether the node n is an object.
func isObject(t *wire.Tape, n int32) bool { return t.Nodes[n].Kind == wire.Object }

// parseMeta reads params.metadata (optional object; the mapping's keys are
// strings when present).
func parseMeta(t *wire.Tape, params int32, shape string) (a2aMeta, *Error) {
	var m a2aMeta
	md, ok := member(t, params, "metadata")
	if !ok || t.Nodes[md].Kind == wire.Null {
		return m, nil
	}
	if !isObject(t, md) {
		return m, shapeError(shape, []any{"params", "metadata"}, "must be an object")
	}
	for _, f := range [...]struct {
		key string
		dst *string
	}{
		{a2atask.MetaWorkspaceID, &m.workspaceID}, {a2atask.MetaUserID, &m.userID},
		{a2atask.MetaSurface, &m.surface}, {a2atask.MetaAgentSlug, &m.agentSlug},
	} {
		v, ok := optString(t, md, f.key)
		if !ok {
			return m, shapeError(shape, []any{"params", "metadata", f.key}, "must be a string")
		}
		*f.dst = v
	}
	return m, nil
}

// parseMessage reads message/send and message/stream params (SendMessage
// and SendStreamingMessage in the 1.0 binding): exactly one data part
// {"kind":"data","data":{"action":…,"input":{…}}} (1.0: {"data":{…}}).
func parseMessage(t *wire.Tape, params int32, b a2aBinding) (a2aMessage, *Error) {
	m := a2aMessage{input: -1}
	shape := b.shape()
	if params < 0 || !isObject(t, params) {
		return m, shapeError(shape, []any{"params"}, "params must be an object with a message")
	}
	if t.Repeated { // read differently by different decoders: refused, as in the request models
		return m, shapeError(shape, []any{"params"}, "a key is given twice")
	}
	msg, ok := member(t, params, "message")
	if !ok || !isObject(t, msg) {
		return m, shapeError(shape, []any{"params", "message"}, "an object is required")
	}
	var ids [3]string // messageId, taskId, contextId
	for i, f := range [...]struct {
		camel, snake string
		required     bool
	}{
		{"messageId", "message_id", true},
		{"taskId", "task_id", false},
		{"contextId", "context_id", false},
	} {
		k, dup := b.key(t, msg, f.camel, f.snake)
		if dup {
			return m, shapeError(shape, []any{"params", "message", f.snake}, "given both as "+f.camel+" and "+f.snake)
		}
		v, ok := optString(t, msg, k)
		switch {
		case f.required && (!ok || strings.TrimSpace(v) == ""):
			return m, shapeError(shape, []any{"params", "message", k}, "a non-blank string is required")
		case !ok:
			return m, shapeError(shape, []any{"params", "message", k}, "must be a string")
		}
		ids[i] = v
	}
	m.messageID, m.taskID, m.contextID = ids[0], ids[1], ids[2]
	parts, ok := member(t, msg, "parts")
	if !ok || t.Nodes[parts].Kind != wire.Array || t.Nodes[parts].N != 1 {
		return m, shapeError(shape, []any{"params", "message", "parts"}, "exactly one part is required")
	}
	part := parts + 1
	if !isObject(t, part) {
		return m, shapeError(shape, []any{"params", "message", "parts", 0}, "a data part is required")
	}
	if b == binding10 {
		if rpcErr := checkPart10(t, part); rpcErr != nil {
			return m, rpcErr
		}
	} else if kind, ok := optString(t, part, "kind"); !ok || kind != "data" {
		return m, shapeError(shape, []any{"params", "message", "parts", 0, "kind"}, `"data" is required`)
	}
	data, ok := member(t, part, "data")
	if !ok || !isObject(t, data) {
		return m, shapeError(shape, []any{"params", "message", "parts", 0, "data"}, "an object is required")
	}
	for k := data + 1; k < t.Nodes[data].Next; k = t.Nodes[k+1].Next {
		if name := t.Str(k); string(name) != "action" && string(name) != "input" {
			return m, shapeError(shape, []any{"params", "message", "parts", 0, "data", string(name)}, "only action and input are allowed")
		}
	}
	if m.action, ok = optString(t, data, "action"); !ok || strings.TrimSpace(m.action) == "" {
		return m, shapeError(shape, []any{"params", "message", "parts", 0, "data", "action"}, "a declared action id is required")
	}
	if in, ok := member(t, data, "input"); ok {
		if !isObject(t, in) {
			return m, shapeError(shape, []any{"params", "message", "parts", 0, "data", "input"}, "must be an object")
		}
		m.input = in
	}
	var rpcErr *Error
	if m.blocking, rpcErr = parseConfiguration(t, params, b); rpcErr != nil {
		return m, rpcErr
	}
	meta, err := parseMeta(t, params, shape)
	m.meta = meta
	return m, err
}

// checkPart10 checks the one part of a 1.0 message: a data part, whose
// content is the member data (the part's oneof content holds exactly one of
// text, raw, url and data), with no media type or application/json. The
// data object itself is read as in the 0.3 binding.
func checkPart10(t *wire.Tape, part int32) *Error {
	for _, other := range [...]string{"text", "raw", "url"} {
		if _, ok := member(t, part, other); ok {
			return shapeError(a2aShape10, []any{"params", "message", "parts", 0, other}, "a data part is required: its content is the member data alone")
		}
	}
	k, dup := binding10.key(t, part, "mediaType", "media_type")
	if dup {
		return shapeError(a2aShape10, []any{"params", "message", "parts", 0, "media_type"}, "given both as mediaType and media_type")
	}
	mt, ok := optString(t, part, k)
	if !ok {
		return shapeError(a2aShape10, []any{"params", "message", "parts", 0, k}, "must be a string")
	}
	if mt != "" && !isJSONContentType(mt) {
		return newError(a2atask.CodeContentTypeNotSupported, "Content type not supported: "+mt+" (a data part is application/json)",
			map[string]any{"mediaType": mt, "supported": []string{"application/json"}})
	}
	return nil
}

// parseConfiguration reads params.configuration: whether the call waits
// for a terminal or input-required state. In the 0.3 binding it waits when
// blocking is true; in the 1.0 binding unless returnImmediately is true.
func parseConfiguration(t *wire.Tape, params int32, b a2aBinding) (blocking bool, _ *Error) {
	shape := b.shape()
	field := "blocking"
	blocking = b == binding10
	cfg, ok := member(t, params, "configuration")
	if !ok || t.Nodes[cfg].Kind == wire.Null {
		return blocking, nil
	}
	if !isObject(t, cfg) {
		return blocking, shapeError(shape, []any{"params", "configuration"}, "must be an object")
	}
	if b == binding10 {
		var dup bool
		if field, dup = b.key(t, cfg, "returnImmediately", "return_immediately"); dup {
			return blocking, shapeError(shape, []any{"params", "configuration", "return_immediately"}, "given both as returnImmediately and return_immediately")
		}
	}
	if n, ok := member(t, cfg, field); ok {
		switch t.Nodes[n].Kind {
		case wire.True:
			blocking = b == binding03
		case wire.False, wire.Null:
		default:
			return blocking, shapeError(shape, []any{"params", "configuration", field}, "must be a boolean")
		}
	}
	return blocking, nil
}

// parseTaskParams reads tasks/get, tasks/cancel and tasks/resubscribe
// params: {"id": <task id>, "metadata": {…}}.
func parseTaskParams(t *wire.Tape, params int32) (string, a2aMeta, *Error) {
	if params < 0 || !isObject(t, params) {
		return "", a2aMeta{}, shapeError(a2aTaskShape, []any{"params"}, "params must be an object with an id")
	}
	id, ok := optString(t, params, "id")
	if !ok || strings.TrimSpace(id) == "" {
		return "", a2aMeta{}, shapeError(a2aTaskShape, []any{"params", "id"}, "a non-blank string is required")
	}
	meta, err := parseMeta(t, params, a2aTaskShape)
	return id, meta, err
}
