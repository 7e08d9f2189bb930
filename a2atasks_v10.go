package supervaizer

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/supervaize/supervaizer-go/a2atask"
	"github.com/supervaize/supervaizer-go/internal/encode"
)

// The A2A 1.0 JSON-RPC binding: SendMessage, SendStreamingMessage, GetTask,
// CancelTask and SubscribeToTask run the code paths of message/send,
// message/stream, tasks/get, tasks/cancel and tasks/resubscribe (a2atasks.go,
// a2atasks_stream.go) with binding10; what is here is only how the answers
// are written in the 1.0 protobuf-JSON form (the A2A 1.0 a2a.proto messages,
// with their JSON member names): no kind members, enums by name
// (TASK_STATE_*, ROLE_AGENT), a part is its oneof member ({"text":…} or
// {"data":…}), empty lists omitted, and the result of SendMessage and of each
// stream event wrapped in the member naming it ({"task":…}, {"message":…},
// {"statusUpdate":…}, {"artifactUpdate":…}). The params are read by
// parseMessage and parseTaskParams with binding10.

// appendTask10 appends the 1.0 Task of v: the fields of the 0.3 Task
// (appendTask) without kind and without the empty history.
func appendTask10(dst []byte, v *jobView, failure []byte) []byte {
	dst = append(dst, `{"id":`...)
	dst = encode.AppendString(dst, v.id, false)
	dst = append(dst, `,"contextId":`...)
	dst = encode.AppendString(dst, v.mission, false)
	dst = appendStatus10(dst, v, v.taskState(), failure)
	if v.state != nil {
		dst = append(dst, `,"artifacts":[`...)
		dst = appendArtifact10(dst, v.state)
		dst = append(dst, ']')
	}
	return append(dst, '}')
}

// appendStatus10 appends ,"status":{…} of a 1.0 task or status update: the
// state's TASK_STATE_* name, and the agent message of appendStatus.
func appendStatus10(dst []byte, v *jobView, state a2atask.TaskState, failure []byte) []byte {
	dst = append(dst, `,"status":{"state":"`...)
	dst = append(dst, state.ProtoName()...)
	dst = append(dst, '"')
	if v.text != "" || failure != nil {
		dst = append(dst, `,"message":{"messageId":`...)
		dst = encode.AppendString(dst, "a2a-status-"+v.id+"-"+string(state), false)
		dst = append(dst, `,"contextId":`...)
		dst = encode.AppendString(dst, v.mission, false)
		dst = append(dst, `,"taskId":`...)
		dst = encode.AppendString(dst, v.id, false)
		if failure != nil {
			dst = append(dst, `,"role":"ROLE_AGENT","parts":[{"data":`...)
			dst = append(dst, failure...)
		} else {
			dst = append(dst, `,"role":"ROLE_AGENT","parts":[{"text":`...)
			dst = encode.AppendString(dst, v.text, false)
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

// appendReply10 appends {"message":…}: the agent message whose data part
// holds the v2 result raw of a call answered without a task.
func appendReply10(dst []byte, req *ActionRequest, raw []byte) []byte {
	dst = append(dst, `{"message":{"messageId":`...)
	dst = encode.AppendString(dst, "a2a-reply-"+req.RequestID, false)
	dst = append(dst, `,"contextId":`...)
	dst = encode.AppendString(dst, req.MissionID, false)
	dst = append(dst, `,"role":"ROLE_AGENT","parts":[{"data":`...)
	dst = append(dst, raw...)
	return append(dst, `}]}}`...)
}

// appendArtifactUpdate10 appends {"artifactUpdate":…}: the new job_state of
// v, whole (not appended to an earlier chunk).
func appendArtifactUpdate10(dst []byte, v *jobView) []byte {
	dst = append(dst, `{"artifactUpdate":{"taskId":`...)
	dst = encode.AppendString(dst, v.id, false)
	dst = append(dst, `,"contextId":`...)
	dst = encode.AppendString(dst, v.mission, false)
	dst = append(dst, `,"artifact":`...)
	dst = appendArtifact10(dst, v.state)
	return append(dst, `,"lastChunk":true}}`...)
}

// appendStatusUpdate10 appends {"statusUpdate":…}: the state of v. The 1.0
// event has no final member: the stream ends after the event of a final
// state.
func appendStatusUpdate10(dst []byte, v *jobView, state a2atask.TaskState) []byte {
	dst = append(dst, `{"statusUpdate":{"taskId":`...)
	dst = encode.AppendString(dst, v.id, false)
	dst = append(dst, `,"contextId":`...)
	dst = encode.AppendString(dst, v.mission, false)
	dst = appendStatus10(dst, v, state, nil)
	return append(dst, `}}`...)
}

// terminalSubscription is the 1.0 answer of SubscribeToTask on a terminal
// task: an operation A2A 1.0 does not offer on it (the 0.3
// tasks/resubscribe answers the Task and ends).
func terminalSubscription(id string, state a2atask.TaskState) *Error {
	return newError(a2atask.CodeUnsupportedOperation, "Unsupported operation: the task is "+string(state)+", a terminal state: read it with GetTask",
		map[string]any{"id": id})
}

// versionHeaderKey is the A2A-Version header's key in an http.Header
// ("A2a-Version": canonicalized once, not per call).
var versionHeaderKey = http.CanonicalHeaderKey(a2atask.HeaderVersion)

// a2aVersionError answers a call whose A2A-Version header names a protocol
// version neither binding speaks (A2A 1.0: VersionNotSupportedError). An
// absent or empty header, and any 0.3.x or 1.0.x, is served; the method
// name chooses the binding.
func a2aVersionError(r *http.Request) *Error {
	vals := r.Header[versionHeaderKey]
	if len(vals) == 0 {
		return nil
	}
	v := strings.TrimSpace(vals[0])
	if v == "" || majorMinor(v) == a2atask.ProtocolVersion03 || majorMinor(v) == a2atask.ProtocolVersion10 {
		return nil
	}
	return newError(a2atask.CodeVersionNotSupported, "Version not supported: "+strconv.Quote(v),
		map[string]any{"version": v, "supported": []string{a2atask.ProtocolVersion10, a2atask.ProtocolVersion03}})
}

// majorMinor is the major.minor of a version ("1.0.2" → "1.0", "1" →
// "1.0", "00.3" → "0.3"); "" when v does not start with numbers.
func majorMinor(v string) string {
	major, rest, _ := strings.Cut(v, ".")
	minor, _, _ := strings.Cut(rest, ".")
	if minor == "" {
		minor = "0"
	}
	ma, err := strconv.ParseUint(major, 10, 32)
	if err != nil {
		return ""
	}
	mi, err := strconv.ParseUint(minor, 10, 32)
	if err != nil {
		return ""
	}
	return strconv.FormatUint(ma, 10) + "." + strconv.FormatUint(mi, 10)
}
