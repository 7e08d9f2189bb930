package a2abind

import (
	"strconv"

	"github.com/supervaize/supervaizer-go/a2atask"
	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/internal/encode"
	"github.com/supervaize/supervaizer-go/internal/jsonrpc"
	"github.com/supervaize/supervaizer-go/internal/taskview"
	"github.com/supervaize/supervaizer-go/internal/wire"
)

// binding is one A2A JSON-RPC binding: its method names and the shapes of
// its params and answers, where the versions differ. Everything else is one
// call: the same mapping, checks, task view and stream (docs/a2a.md, "Two
// bindings").
type binding interface {
	// name is the method table's binding column.
	name() string
	// methods are the binding's entries of the method table.
	methods() []Method
	// shape is the -32602 message of message params that break the shape.
	shape() string
	// key is the member under which obj holds the field named camel in
	// JSON; dup reports a field given twice (under two names).
	key(t *wire.Tape, obj int32, camel, snake string) (name string, dup bool)
	// text reads a text part (ok false for any other part).
	text(t *wire.Tape, part int32) (string, bool)
	// appendConversationReply appends the agent Message answering a
	// conversation: a text part, then the data part data (nil: none),
	// with the usage (nil: none) in its metadata as supervaizer/usage.
	appendConversationReply(dst []byte, req *contracts.ActionRequest, text string, data, usage []byte) []byte
	// appendTextArtifact appends the artifact-update of a streamed
	// conversation's "response" artifact: a text part (and the data part
	// data when not nil), appended to the chunks before when appendMode.
	appendTextArtifact(dst []byte, v *taskview.Job, text string, data []byte, appendMode, last bool) []byte
	// checkPart checks that the message's one part is a data part.
	checkPart(t *wire.Tape, part int32) *jsonrpc.Error
	// configuration reads params.configuration: whether the call waits for
	// a terminal or input-required state.
	configuration(t *wire.Tape, params int32) (blocking bool, _ *jsonrpc.Error)
	// appendTask appends the Task of v (with failure, a data part, for a
	// failed task); appendTaskResult the Task as the result of message/send
	// and the first event of a stream.
	appendTask(dst []byte, v *taskview.Job, failure []byte) []byte
	appendTaskResult(dst []byte, v *taskview.Job, failure []byte) []byte
	// appendReply appends the agent Message whose data part holds the v2
	// result raw of a call answered without a task.
	appendReply(dst []byte, req *contracts.ActionRequest, raw []byte) []byte
	// appendArtifactUpdate appends the event of a new job_state of v, whole;
	// appendStatusUpdate the event of v's state.
	appendArtifactUpdate(dst []byte, v *taskview.Job) []byte
	appendStatusUpdate(dst []byte, v *taskview.Job, state a2atask.TaskState, final bool) []byte
	// resumeRefused is the error of resubscribing to the task v, nil when
	// the binding follows it.
	resumeRefused(id string, v *taskview.Job) *jsonrpc.Error
	// wrapsResults reports whether the binding's results (Task, Message,
	// events) are wrapped in a member naming them (1.0: {"task":…}).
	wrapsResults() bool
	// settledUpdate reports whether a stream whose first Task is already
	// final ends with a status update of it (0.3: final true, spec item 72).
	settledUpdate() bool
}

// v03 is the A2A 0.3 binding: message/send, …; objects tagged by kind,
// lower-case task states, a Task or a Message as the result.
type v03 struct{}

func (v03) name() string { return "a2a/0.3" }

func (b v03) methods() []Method {
	return taskMethods(b, a2atask.MethodMessageSend, a2atask.MethodMessageStream, a2atask.MethodTasksGet,
		a2atask.MethodTasksCancel, a2atask.MethodTasksResubscribe)
}

// shape03 is the -32602 message of params that do not carry the one data
// part an action call is.
const shape03 = `Invalid A2A message: params.message must carry exactly one data part {"kind":"data","data":{"action":"<action id>","input":{...}}}`

func (v03) shape() string { return shape03 }

// wrapsResults: a 0.3 result is the object, tagged by kind.
func (v03) wrapsResults() bool { return false }

// key is camel: the 0.3 JSON names only.
func (v03) key(_ *wire.Tape, _ int32, camel, _ string) (string, bool) { return camel, false }

// checkPart: a part tagged "kind":"data".
func (v03) checkPart(t *wire.Tape, part int32) *jsonrpc.Error {
	if kind, ok := optString(t, part, "kind"); !ok || kind != "data" {
		return shapeError(shape03, []any{"params", "message", "parts", 0, "kind"}, `"data" is required`)
	}
	return nil
}

// text: a part tagged "kind":"text" with a string text.
func (v03) text(t *wire.Tape, part int32) (string, bool) {
	if kind, _ := optString(t, part, "kind"); kind != "text" {
		return "", false
	}
	n, ok := member(t, part, "text")
	if !ok || t.Nodes[n].Kind != wire.String {
		return "", false
	}
	return string(t.Str(n)), true
}

func (v03) appendConversationReply(dst []byte, req *contracts.ActionRequest, text string, data, usage []byte) []byte {
	dst = append(dst, `{"kind":"message","role":"agent","messageId":`...)
	dst = encode.AppendString(dst, "a2a-reply-"+req.RequestID, false)
	dst = append(dst, `,"contextId":`...)
	dst = encode.AppendString(dst, req.MissionID, false)
	dst = append(dst, `,"parts":[{"kind":"text","text":`...)
	dst = encode.AppendString(dst, text, false)
	dst = append(dst, '}')
	if data != nil {
		dst = append(dst, `,{"kind":"data","data":`...)
		dst = append(dst, data...)
		dst = append(dst, '}')
	}
	dst = append(dst, ']')
	return append(appendUsageMeta(dst, usage), '}')
}

func (v03) appendTextArtifact(dst []byte, v *taskview.Job, text string, data []byte, appendMode, last bool) []byte {
	dst = append(dst, `{"kind":"artifact-update","taskId":`...)
	dst = encode.AppendString(dst, v.ID, false)
	dst = append(dst, `,"contextId":`...)
	dst = encode.AppendString(dst, v.Mission, false)
	dst = append(dst, `,"artifact":{"artifactId":"`+ArtifactResponse+`","name":"`+ArtifactResponse+`","parts":[{"kind":"text","text":`...)
	dst = encode.AppendString(dst, text, false)
	dst = append(dst, '}')
	if data != nil {
		dst = append(dst, `,{"kind":"data","data":`...)
		dst = append(dst, data...)
		dst = append(dst, '}')
	}
	dst = append(dst, `]},"append":`...)
	dst = strconv.AppendBool(dst, appendMode)
	dst = append(dst, `,"lastChunk":`...)
	dst = strconv.AppendBool(dst, last)
	return append(dst, '}')
}

// configuration: the call waits when blocking is true.
func (v03) configuration(t *wire.Tape, params int32) (bool, *jsonrpc.Error) {
	return readBool(t, params, shape03, "blocking", false, true)
}

func (b v03) appendTaskResult(dst []byte, v *taskview.Job, failure []byte) []byte {
	return b.appendTask(dst, v, failure)
}

// appendTask appends the Task of v: the state, a status message with the
// status text (or with failure, a data part, for a failed task), the
// job_state artifact and an empty history. Nothing in it depends on the
// time: the same view is the same bytes.
func (v03) appendTask(dst []byte, v *taskview.Job, failure []byte) []byte {
	state := v.TaskState()
	dst = append(dst, `{"kind":"task","id":`...)
	dst = encode.AppendString(dst, v.ID, false)
	dst = append(dst, `,"contextId":`...)
	dst = encode.AppendString(dst, v.Mission, false)
	dst = appendStatus03(dst, v, state, failure)
	if v.State != nil {
		dst = append(dst, `,"artifacts":[`...)
		dst = appendArtifact03(dst, v.State)
		dst = append(dst, ']')
	}
	return append(dst, `,"history":[]}`...)
}

// appendStatus03 appends ,"status":{…} of a task.
func appendStatus03(dst []byte, v *taskview.Job, state a2atask.TaskState, failure []byte) []byte {
	dst = append(dst, `,"status":{"state":`...)
	dst = encode.AppendString(dst, string(state), false)
	if v.Text != "" || failure != nil {
		dst = append(dst, `,"message":{"kind":"message","role":"agent","messageId":`...)
		dst = encode.AppendString(dst, "a2a-status-"+v.ID+"-"+string(state), false)
		dst = append(dst, `,"taskId":`...)
		dst = encode.AppendString(dst, v.ID, false)
		dst = append(dst, `,"contextId":`...)
		dst = encode.AppendString(dst, v.Mission, false)
		if failure != nil {
			dst = append(dst, `,"parts":[{"kind":"data","data":`...)
			dst = append(dst, failure...)
			dst = append(dst, `}]}`...)
		} else {
			dst = append(dst, `,"parts":[{"kind":"text","text":`...)
			dst = encode.AppendString(dst, v.Text, false)
			dst = append(dst, `}]}`...)
		}
	}
	return append(dst, '}')
}

// appendArtifact03 appends the job_state artifact holding state.
func appendArtifact03(dst, state []byte) []byte {
	dst = append(dst, `{"artifactId":"`+a2atask.ArtifactJobState+`","name":"`+a2atask.ArtifactJobState+`","parts":[{"kind":"data","data":`...)
	dst = append(dst, state...)
	return append(dst, `}]}`...)
}

func (v03) appendReply(dst []byte, req *contracts.ActionRequest, raw []byte) []byte {
	dst = append(dst, `{"kind":"message","role":"agent","messageId":`...)
	dst = encode.AppendString(dst, "a2a-reply-"+req.RequestID, false)
	dst = append(dst, `,"contextId":`...)
	dst = encode.AppendString(dst, req.MissionID, false)
	dst = append(dst, `,"parts":[{"kind":"data","data":`...)
	dst = append(dst, raw...)
	return append(dst, `}]}`...)
}

func (v03) appendArtifactUpdate(dst []byte, v *taskview.Job) []byte {
	dst = append(dst, `{"kind":"artifact-update","taskId":`...)
	dst = encode.AppendString(dst, v.ID, false)
	dst = append(dst, `,"contextId":`...)
	dst = encode.AppendString(dst, v.Mission, false)
	dst = append(dst, `,"artifact":`...)
	dst = appendArtifact03(dst, v.State)
	return append(dst, `,"append":false,"lastChunk":true}`...)
}

// appendStatusUpdate: the event says final.
func (v03) appendStatusUpdate(dst []byte, v *taskview.Job, state a2atask.TaskState, final bool) []byte {
	dst = append(dst, `{"kind":"status-update","taskId":`...)
	dst = encode.AppendString(dst, v.ID, false)
	dst = append(dst, `,"contextId":`...)
	dst = encode.AppendString(dst, v.Mission, false)
	dst = appendStatus03(dst, v, state, nil)
	if final {
		return append(dst, `,"final":true}`...)
	}
	return append(dst, `,"final":false}`...)
}

// resumeRefused: tasks/resubscribe on a terminal task answers the Task and
// ends.
func (v03) resumeRefused(string, *taskview.Job) *jsonrpc.Error { return nil }

// settledUpdate: a 0.3 stream always ends with a status update with final
// true, even when its first Task is already settled (spec item 72; a2a-go's
// 0.3 server sends it).
func (v03) settledUpdate() bool { return true }

// readBool reads params.configuration[field], a boolean: the call waits
// (blocking) by default unless set, and when set true it waits when
// trueBlocks.
func readBool(t *wire.Tape, params int32, shape, field string, byDefault, trueBlocks bool) (blocking bool, _ *jsonrpc.Error) {
	blocking = byDefault
	cfg, ok := member(t, params, "configuration")
	if !ok || t.Nodes[cfg].Kind == wire.Null {
		return blocking, nil
	}
	if !isObject(t, cfg) {
		return blocking, shapeError(shape, []any{"params", "configuration"}, "must be an object")
	}
	return readConfigField(t, cfg, shape, field, blocking, trueBlocks)
}

// readConfigField reads the boolean field of the configuration object cfg.
func readConfigField(t *wire.Tape, cfg int32, shape, field string, blocking, trueBlocks bool) (bool, *jsonrpc.Error) {
	if n, ok := member(t, cfg, field); ok {
		switch t.Nodes[n].Kind {
		case wire.True:
			blocking = trueBlocks
		case wire.False, wire.Null:
		default:
			return blocking, shapeError(shape, []any{"params", "configuration", field}, "must be a boolean")
		}
	}
	return blocking, nil
}
