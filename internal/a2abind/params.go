package a2abind

// Decoding the params of the A2A task methods (both bindings) from the
// request's tape: the message's one data part, the metadata keys of the
// mapping, the configuration and the task id (spec open-questions item 65).

import (
	"strconv"
	"strings"

	"github.com/supervaize/supervaizer-go/a2atask"
	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/errcode"
	"github.com/supervaize/supervaizer-go/internal/jsonrpc"
	"github.com/supervaize/supervaizer-go/internal/wire"
)

// taskShape is the -32602 message of tasks/get, tasks/cancel and
// tasks/resubscribe params without a task id (and of their 1.0 names).
const taskShape = `Invalid A2A task params: params must be {"id":"<task id>"}`

// taskParams is a decoded tasks/get, tasks/cancel or tasks/resubscribe
// params object (and their 1.0 names).
type taskParams struct {
	id   string
	meta meta
}

// decodeMessage decodes the params of a message method of binding b, once
// the A2A-Version header is one the bindings speak.
func decodeMessage(b binding) func(c *Call) (message, *jsonrpc.Error) {
	return func(c *Call) (message, *jsonrpc.Error) {
		if rpcErr := versionError(c.R); rpcErr != nil {
			return message{input: -1}, rpcErr
		}
		return parseMessage(c.T, c.Params, b)
	}
}

// decodeTask decodes the params of a task method, once the A2A-Version
// header is one the bindings speak.
func decodeTask(c *Call) (taskParams, *jsonrpc.Error) {
	if rpcErr := versionError(c.R); rpcErr != nil {
		return taskParams{}, rpcErr
	}
	id, m, rpcErr := parseTaskParams(c.T, c.Params)
	return taskParams{id: id, meta: m}, rpcErr
}

// meta holds the params.metadata keys of the mapping ("" when absent).
type meta struct {
	workspaceID, userID, surface, agentSlug string
	// supervisor is the raw metadata.argus_supervisor object of a call
	// under a campaign lease (nil when absent).
	supervisor []byte
}

// message is a decoded message/send or message/stream params object.
type message struct {
	messageID, taskID, contextID, action string
	// text is the message's text when it has text parts and no data part
	// (joined by a line break): a conversation's message, for the agent's
	// conversation action (conversation.go).
	text         string
	conversation bool
	input        int32 // node of data.input on the tape, -1 when absent
	blocking     bool
	meta         meta
}

// shapeError is the -32602 error of A2A params that break their shape: msg
// names the expected shape, the problem where it breaks.
func shapeError(msg string, loc []any, problem string) *jsonrpc.Error {
	return paramsError(msg, loc, problem, "a2a_shape")
}

// paramsError is a -32602 error with one problem of type typ at loc.
func paramsError(msg string, loc []any, problem, typ string) *jsonrpc.Error {
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
	return &jsonrpc.Error{Code: errcode.InvalidParams, Message: msg,
		Data: map[string]any{"errors": []contracts.Problem{{Loc: loc, Msg: problem, Type: typ, Path: path.String()}}}}
}

// identifierError is the -32602 error of an identifier that breaks
// contracts.CheckIdentifier (spec open-questions item 74: at most 256 bytes,
// no control characters, no U+2028/U+2029), naming the field at loc; nil
// when id is one. It is checked before any handler or store call.
func identifierError(loc []any, id string) *jsonrpc.Error {
	err := contracts.CheckIdentifier(id)
	if err == nil {
		return nil
	}
	var field strings.Builder
	for i, l := range loc {
		if i > 0 {
			field.WriteByte('.')
		}
		field.WriteString(l.(string))
	}
	problem := field.String() + ": " + err.Error()
	return paramsError("Invalid A2A params: "+problem, loc, problem, "identifier")
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
func parseMeta(t *wire.Tape, params int32, shape string) (meta, *jsonrpc.Error) {
	var m meta
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
	if sup, ok := member(t, md, MetaSupervisor); ok && t.Nodes[sup].Kind != wire.Null {
		if !isObject(t, sup) {
			return m, shapeError(shape, []any{"params", "metadata", MetaSupervisor}, "must be an object")
		}
		m.supervisor = t.Raw(sup)
	}
	return m, nil
}

// MetaSupervisor is the metadata member of a call made under a campaign
// lease (the campaign-control extension, spec item 85).
const MetaSupervisor = "argus_supervisor"

// parseMessage reads message/send and message/stream params (SendMessage
// and SendStreamingMessage in the 1.0 binding): exactly one data part
// {"kind":"data","data":{"action":…,"input":{…}}} (1.0: {"data":{…}}).
func parseMessage(t *wire.Tape, params int32, b binding) (message, *jsonrpc.Error) {
	m := message{input: -1}
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
		if rpcErr := identifierError([]any{"params", "message", k}, v); rpcErr != nil {
			return m, rpcErr
		}
		ids[i] = v
	}
	m.messageID, m.taskID, m.contextID = ids[0], ids[1], ids[2]
	parts, ok := member(t, msg, "parts")
	if text, isText := textParts(t, parts, ok, b); isText {
		m.text, m.conversation = text, true
		var rpcErr *jsonrpc.Error
		if m.blocking, rpcErr = b.configuration(t, params); rpcErr != nil {
			return m, rpcErr
		}
		meta, err := parseMeta(t, params, shape)
		m.meta = meta
		return m, err
	}
	if !ok || t.Nodes[parts].Kind != wire.Array || t.Nodes[parts].N != 1 {
		return m, shapeError(shape, []any{"params", "message", "parts"}, "exactly one part is required")
	}
	part := parts + 1
	if !isObject(t, part) {
		return m, shapeError(shape, []any{"params", "message", "parts", 0}, "a data part is required")
	}
	if rpcErr := b.checkPart(t, part); rpcErr != nil {
		return m, rpcErr
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
	var rpcErr *jsonrpc.Error
	if m.blocking, rpcErr = b.configuration(t, params); rpcErr != nil {
		return m, rpcErr
	}
	meta, err := parseMeta(t, params, shape)
	m.meta = meta
	return m, err
}

// parseTaskParams reads tasks/get, tasks/cancel and tasks/resubscribe
// params: {"id": <task id>, "metadata": {…}}.
func parseTaskParams(t *wire.Tape, params int32) (string, meta, *jsonrpc.Error) {
	if params < 0 || !isObject(t, params) {
		return "", meta{}, shapeError(taskShape, []any{"params"}, "params must be an object with an id")
	}
	id, ok := optString(t, params, "id")
	if !ok || strings.TrimSpace(id) == "" {
		return "", meta{}, shapeError(taskShape, []any{"params", "id"}, "a non-blank string is required")
	}
	if rpcErr := identifierError([]any{"params", "id"}, id); rpcErr != nil {
		return "", meta{}, rpcErr
	}
	meta, err := parseMeta(t, params, taskShape)
	return id, meta, err
}

// textParts reads the parts of a conversation's message: one or more text
// parts and nothing else, their texts joined by a line break. isText is
// false for any other parts, which the data part's rules then read.
func textParts(t *wire.Tape, parts int32, present bool, b binding) (text string, isText bool) {
	if !present || t.Nodes[parts].Kind != wire.Array || t.Nodes[parts].N < 1 {
		return "", false
	}
	var sb strings.Builder
	for p, i := parts+1, 0; p < t.Nodes[parts].Next; p, i = t.Nodes[p].Next, i+1 {
		if !isObject(t, p) {
			return "", false
		}
		s, ok := b.text(t, p)
		if !ok {
			return "", false
		}
		if i > 0 {
			sb.WriteByte('\n')
		}
		sb.WriteString(s)
	}
	return sb.String(), true
}
