package a2abind

import (
	"github.com/supervaize/supervaizer-go/a2atask"
	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/errcode"
	"github.com/supervaize/supervaizer-go/internal/encode"
	"github.com/supervaize/supervaizer-go/internal/jsonrpc"
	"github.com/supervaize/supervaizer-go/internal/taskview"
	"github.com/supervaize/supervaizer-go/internal/wire"
)

// v10 is the A2A 1.0 JSON-RPC binding: SendMessage, SendStreamingMessage,
// GetTask, CancelTask and SubscribeToTask run the calls of message/send,
// message/stream, tasks/get, tasks/cancel and tasks/resubscribe; what is here
// is how its params are read and its answers written in the 1.0
// protobuf-JSON form (the A2A 1.0 a2a.proto messages, with their JSON member
// names): no kind members, enums by name (TASK_STATE_*, ROLE_AGENT), a part
// is its oneof member ({"text":…} or {"data":…}), empty lists omitted, and
// the result of SendMessage and of each stream event wrapped in the member
// naming it ({"task":…}, {"message":…}, {"statusUpdate":…},
// {"artifactUpdate":…}).
type v10 struct{}

func (v10) name() string { return "a2a/1.0" }

func (b v10) methods() []Method {
	return append(taskMethods(b, a2atask.MethodSendMessage, a2atask.MethodSendStreamingMessage, a2atask.MethodGetTask,
		a2atask.MethodCancelTask, a2atask.MethodSubscribeToTask),
		refused(b, a2atask.MethodCreateTaskPushNotificationConfig, pushNotSupported),
		refused(b, a2atask.MethodGetTaskPushNotificationConfig, pushNotSupported),
		refused(b, a2atask.MethodListTaskPushNotificationConfigs, pushNotSupported),
		refused(b, a2atask.MethodDeleteTaskPushNotificationConfig, pushNotSupported),
		refused(b, a2atask.MethodListTasks, func() *jsonrpc.Error {
			return &jsonrpc.Error{Code: errcode.UnsupportedOperation,
				Message: "Unsupported operation: ListTasks (the agent keeps no list of tasks: read a task with GetTask and its id)"}
		}),
		refused(b, a2atask.MethodGetExtendedAgentCard, func() *jsonrpc.Error {
			return &jsonrpc.Error{Code: errcode.UnsupportedOperation,
				Message: "Unsupported operation: GetExtendedAgentCard (the Agent Card declares no extended card)"}
		}),
	)
}

// shape10 is the -32602 message of message params that break the shape: a
// part is a oneof, a data part is the member data.
const shape10 = `Invalid A2A message: params.message must carry exactly one data part {"data":{"action":"<action id>","input":{...}}}`

func (v10) shape() string { return shape10 }

// wrapsResults: a 1.0 result wraps its object ({"task":…}, {"message":…}).
func (v10) wrapsResults() bool { return true }

// key is camel, or its proto field name snake when only that one is present
// (protobuf-JSON readers accept both). dup reports both present: read
// differently by different decoders, refused like a repeated key.
func (v10) key(t *wire.Tape, obj int32, camel, snake string) (string, bool) {
	_, hasCamel := member(t, obj, camel)
	_, hasSnake := member(t, obj, snake)
	switch {
	case hasCamel && hasSnake:
		return camel, true
	case hasSnake:
		return snake, false
	}
	return camel, false
}

// checkPart checks the one part of a 1.0 message: a data part, whose
// content is the member data (the part's oneof content holds exactly one of
// text, raw, url and data), with no media type or application/json. The
// data object itself is read as in the 0.3 binding.
func (b v10) checkPart(t *wire.Tape, part int32) *jsonrpc.Error {
	for _, other := range [...]string{"text", "raw", "url"} {
		if _, ok := member(t, part, other); ok {
			return shapeError(shape10, []any{"params", "message", "parts", 0, other}, "a data part is required: its content is the member data alone")
		}
	}
	k, dup := b.key(t, part, "mediaType", "media_type")
	if dup {
		return shapeError(shape10, []any{"params", "message", "parts", 0, "media_type"}, "given both as mediaType and media_type")
	}
	mt, ok := optString(t, part, k)
	if !ok {
		return shapeError(shape10, []any{"params", "message", "parts", 0, k}, "must be a string")
	}
	if mt != "" && !jsonrpc.IsJSONContentType(mt) {
		return &jsonrpc.Error{Code: errcode.ContentTypeNotSupported, Message: "Content type not supported: " + mt + " (a data part is application/json)",
			Data: map[string]any{"mediaType": mt, "supported": []string{"application/json"}}}
	}
	return nil
}

// text: a part whose content is the member text alone.
func (v10) text(t *wire.Tape, part int32) (string, bool) {
	for _, other := range [...]string{"data", "raw", "url"} {
		if _, ok := member(t, part, other); ok {
			return "", false
		}
	}
	n, ok := member(t, part, "text")
	if !ok || t.Nodes[n].Kind != wire.String {
		return "", false
	}
	return string(t.Str(n)), true
}

func (v10) appendConversationReply(dst []byte, req *contracts.ActionRequest, text string, data, usage []byte) []byte {
	dst = append(dst, `{"message":{"messageId":`...)
	dst = encode.AppendString(dst, "a2a-reply-"+req.RequestID, false)
	dst = append(dst, `,"contextId":`...)
	dst = encode.AppendString(dst, req.MissionID, false)
	dst = append(dst, `,"role":"ROLE_AGENT","parts":[{"text":`...)
	dst = encode.AppendString(dst, text, false)
	dst = append(dst, '}')
	if data != nil {
		dst = append(dst, `,{"data":`...)
		dst = append(dst, data...)
		dst = append(dst, '}')
	}
	dst = append(dst, ']')
	return append(appendUsageMeta(dst, usage), `}}`...)
}

func (v10) appendTextArtifact(dst []byte, v *taskview.Job, text string, data []byte, appendMode, last bool) []byte {
	dst = append(dst, `{"artifactUpdate":{"taskId":`...)
	dst = encode.AppendString(dst, v.ID, false)
	dst = append(dst, `,"contextId":`...)
	dst = encode.AppendString(dst, v.Mission, false)
	dst = append(dst, `,"artifact":{"artifactId":"`+ArtifactResponse+`","name":"`+ArtifactResponse+`","parts":[{"text":`...)
	dst = encode.AppendString(dst, text, false)
	dst = append(dst, '}')
	if data != nil {
		dst = append(dst, `,{"data":`...)
		dst = append(dst, data...)
		dst = append(dst, '}')
	}
	dst = append(dst, `]}`...)
	if appendMode {
		dst = append(dst, `,"append":true`...)
	}
	if last {
		dst = append(dst, `,"lastChunk":true`...)
	}
	return append(dst, `}}`...)
}

// configuration: the call waits unless returnImmediately is true.
func (b v10) configuration(t *wire.Tape, params int32) (bool, *jsonrpc.Error) {
	cfg, ok := member(t, params, "configuration")
	if !ok || t.Nodes[cfg].Kind == wire.Null {
		return true, nil
	}
	if !isObject(t, cfg) {
		return true, shapeError(shape10, []any{"params", "configuration"}, "must be an object")
	}
	field, dup := b.key(t, cfg, "returnImmediately", "return_immediately")
	if dup {
		return true, shapeError(shape10, []any{"params", "configuration", "return_immediately"}, "given both as returnImmediately and return_immediately")
	}
	return readConfigField(t, cfg, shape10, field, true, false)
}

// appendTaskResult wraps the Task: {"task":…}.
func (b v10) appendTaskResult(dst []byte, v *taskview.Job, failure []byte) []byte {
	dst = append(dst, `{"task":`...)
	return append(b.appendTask(dst, v, failure), '}')
}

// appendTask appends the 1.0 Task of v: the fields of the 0.3 Task without
// kind and without the empty history.
func (v10) appendTask(dst []byte, v *taskview.Job, failure []byte) []byte {
	dst = append(dst, `{"id":`...)
	dst = encode.AppendString(dst, v.ID, false)
	dst = append(dst, `,"contextId":`...)
	dst = encode.AppendString(dst, v.Mission, false)
	dst = appendStatus10(dst, v, v.TaskState(), failure)
	if v.State != nil {
		dst = append(dst, `,"artifacts":[`...)
		dst = appendArtifact10(dst, v.State)
		dst = append(dst, ']')
	}
	return append(dst, '}')
}

// appendStatus10 appends ,"status":{…} of a 1.0 task or status update: the
// state's TASK_STATE_* name, and the agent message of the 0.3 status.
func appendStatus10(dst []byte, v *taskview.Job, state a2atask.TaskState, failure []byte) []byte {
	dst = append(dst, `,"status":{"state":"`...)
	dst = append(dst, state.ProtoName()...)
	dst = append(dst, '"')
	if v.Text != "" || failure != nil {
		dst = append(dst, `,"message":{"messageId":`...)
		dst = encode.AppendString(dst, "a2a-status-"+v.ID+"-"+string(state), false)
		dst = append(dst, `,"contextId":`...)
		dst = encode.AppendString(dst, v.Mission, false)
		dst = append(dst, `,"taskId":`...)
		dst = encode.AppendString(dst, v.ID, false)
		if failure != nil {
			dst = append(dst, `,"role":"ROLE_AGENT","parts":[{"data":`...)
			dst = append(dst, failure...)
		} else {
			dst = append(dst, `,"role":"ROLE_AGENT","parts":[{"text":`...)
			dst = encode.AppendString(dst, v.Text, false)
		}
		dst = append(dst, `}]}`...)
	}
	return append(dst, '}')
}

// appendArtifact10 appends the 1.0 job_state artifact holding state.
func appendArtifact10(dst, state []byte) []byte {
	dst = append(dst, `{"artifactId":"`+a2atask.ArtifactJobState+`","name":"`+a2atask.ArtifactJobState+`","parts":[{"data":`...)
	dst = append(dst, state...)
	return append(dst, `}]}`...)
}

// appendReply appends {"message":…}.
func (v10) appendReply(dst []byte, req *contracts.ActionRequest, raw []byte) []byte {
	dst = append(dst, `{"message":{"messageId":`...)
	dst = encode.AppendString(dst, "a2a-reply-"+req.RequestID, false)
	dst = append(dst, `,"contextId":`...)
	dst = encode.AppendString(dst, req.MissionID, false)
	dst = append(dst, `,"role":"ROLE_AGENT","parts":[{"data":`...)
	dst = append(dst, raw...)
	return append(dst, `}]}}`...)
}

// appendArtifactUpdate appends {"artifactUpdate":…}.
func (v10) appendArtifactUpdate(dst []byte, v *taskview.Job) []byte {
	dst = append(dst, `{"artifactUpdate":{"taskId":`...)
	dst = encode.AppendString(dst, v.ID, false)
	dst = append(dst, `,"contextId":`...)
	dst = encode.AppendString(dst, v.Mission, false)
	dst = append(dst, `,"artifact":`...)
	dst = appendArtifact10(dst, v.State)
	return append(dst, `,"lastChunk":true}}`...)
}

// appendStatusUpdate appends {"statusUpdate":…}. The 1.0 event has no final
// member: the stream ends after the event of a final state.
func (v10) appendStatusUpdate(dst []byte, v *taskview.Job, state a2atask.TaskState, _ bool) []byte {
	dst = append(dst, `{"statusUpdate":{"taskId":`...)
	dst = encode.AppendString(dst, v.ID, false)
	dst = append(dst, `,"contextId":`...)
	dst = encode.AppendString(dst, v.Mission, false)
	dst = appendStatus10(dst, v, state, nil)
	return append(dst, `}}`...)
}

// resumeRefused: SubscribeToTask on a terminal task is an operation A2A 1.0
// does not offer on it (the 0.3 tasks/resubscribe answers the Task and
// ends).
func (v10) resumeRefused(id string, v *taskview.Job) *jsonrpc.Error {
	state := v.TaskState()
	if !state.Terminal() {
		return nil
	}
	return &jsonrpc.Error{Code: errcode.UnsupportedOperation,
		Message: "Unsupported operation: the task is " + string(state) + ", a terminal state: read it with GetTask",
		Data:    map[string]any{"id": id}}
}

// settledUpdate: a 1.0 stream ends after the event of a final state, and
// its status update has no final member: the Task is that event.
func (v10) settledUpdate() bool { return false }
