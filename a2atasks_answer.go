package supervaizer

import (
	"bytes"
	"strings"
	"time"

	"github.com/supervaize/supervaizer-go/a2atask"
	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/internal/encode"
	"github.com/supervaize/supervaizer-go/internal/wire"
)

// The answer of an A2A task method: the task a validated v2 result makes
// (spec item 65), written as the a2atask wire types.

// jobView is what a task is made of: a job's id, mission, status and status
// text, whether a step awaits a person, and its last validated job_state
// (nil for a task without one: a failed start).
type jobView struct {
	id, mission, status, text string
	awaiting                  bool
	state                     []byte
}

// taskState maps the job status to the task state (a2atask.TaskState
// documents the table): a submitted or working job with a step awaiting a
// person is input-required.
func (v *jobView) taskState() a2atask.TaskState {
	st := stateOf(v.status)
	if v.awaiting && (st == a2atask.StateSubmitted || st == a2atask.StateWorking) {
		return a2atask.StateInputRequired
	}
	return st
}

// taskStates maps the conventional job statuses (lower case).
var taskStates = map[string]a2atask.TaskState{
	"pending": a2atask.StateSubmitted, "queued": a2atask.StateSubmitted, "submitted": a2atask.StateSubmitted,
	"running": a2atask.StateWorking, "active": a2atask.StateWorking, "working": a2atask.StateWorking, "in_progress": a2atask.StateWorking,
	"awaiting": a2atask.StateInputRequired, "awaiting_input": a2atask.StateInputRequired, "input_required": a2atask.StateInputRequired,
	"completed": a2atask.StateCompleted, "complete": a2atask.StateCompleted, "done": a2atask.StateCompleted, "succeeded": a2atask.StateCompleted,
	"failed": a2atask.StateFailed, "error": a2atask.StateFailed,
	"stopped": a2atask.StateCanceled, "cancelled": a2atask.StateCanceled, "canceled": a2atask.StateCanceled,
}

// stateOf maps a job status to a task state.
func stateOf(status string) a2atask.TaskState {
	if st, ok := taskStates[status]; ok {
		return st
	}
	if st, ok := taskStates[strings.ToLower(strings.TrimSpace(status))]; ok {
		return st
	}
	return a2atask.StateUnknown
}

// readJobState reads the view of the job_state at node js of t.
func readJobState(t *wire.Tape, js int32) jobView {
	v := jobView{state: t.Raw(js)}
	job, ok := member(t, js, "job")
	if !ok || !isObject(t, job) {
		return v
	}
	v.id, _ = optString(t, job, "id")
	v.mission, _ = optString(t, job, "mission_id")
	v.status, _ = optString(t, job, "status")
	if d, ok := member(t, job, "display"); ok && isObject(t, d) {
		v.text, _ = optString(t, d, "state_label")
	}
	cases, ok := member(t, js, "cases")
	if !ok || t.Nodes[cases].Kind != wire.Array {
		return v
	}
	for c := cases + 1; c < t.Nodes[cases].Next && !v.awaiting; c = t.Nodes[c].Next {
		steps, ok := member(t, c, "steps")
		if !ok || t.Nodes[steps].Kind != wire.Array {
			continue
		}
		for st := steps + 1; st < t.Nodes[steps].Next; st = t.Nodes[st].Next {
			if status, _ := optString(t, st, "status"); status == "awaiting" {
				if _, ok := member(t, st, "awaiting"); ok {
					v.awaiting = true
					break
				}
			}
		}
	}
	return v
}

// answerView reads the task a validated v2 result makes: its job_state's
// view, or for an error result of a job action the failed task (state nil).
// isTask is false when the result is answered with a Message.
func answerView(req *ActionRequest, raw []byte, jobAction bool) (jobView, bool) {
	t := wire.Get()
	defer wire.Put(t)
	if !t.Parse(raw) || !isObject(t, 0) {
		return jobView{}, false
	}
	if js, ok := member(t, 0, "job_state"); ok && isObject(t, js) {
		v := readJobState(t, js)
		v.state = bytes.Clone(v.state) // t goes back to its pool
		return v, true
	}
	if status, _ := optString(t, 0, "status"); jobAction && status == contracts.StatusError {
		return jobView{id: req.JobID, mission: req.MissionID, status: "failed"}, true
	}
	return jobView{}, false
}

// appendAnswer appends the A2A answer to a validated v2 result: a Task when
// it carries a job_state, a failed Task for an error result of a job action
// (the error's code and message in the status message's data part), else an
// agent Message whose data part holds the result. In the 1.0 binding the
// answer is wrapped: {"task":…} or {"message":…}.
func appendAnswer(dst []byte, req *ActionRequest, raw []byte, jobAction bool, b a2aBinding) []byte {
	t := wire.Get()
	defer wire.Put(t)
	if t.Parse(raw) && isObject(t, 0) {
		if js, ok := member(t, 0, "job_state"); ok && isObject(t, js) {
			v := readJobState(t, js)
			return appendTaskResultFailed(dst, &v, nil, b)
		}
		if status, _ := optString(t, 0, "status"); jobAction && status == contracts.StatusError {
			v := jobView{id: req.JobID, mission: req.MissionID, status: "failed"}
			return appendTaskResultFailed(dst, &v, firstError(t), b)
		}
	}
	if b == binding10 {
		return appendReply10(dst, req, raw)
	}
	dst = append(dst, `{"kind":"message","role":"agent","messageId":`...)
	dst = encode.AppendString(dst, "a2a-reply-"+req.RequestID, false)
	dst = append(dst, `,"contextId":`...)
	dst = encode.AppendString(dst, req.MissionID, false)
	dst = append(dst, `,"parts":[{"kind":"data","data":`...)
	dst = append(dst, raw...)
	return append(dst, `}]}`...)
}

// firstError is {"code":…,"message":…} of the first error of the result on
// t, for the data part of a failed task.
func firstError(t *wire.Tape) []byte {
	out := []byte(`{"code":`)
	code, msg := "error", ""
	if errs, ok := member(t, 0, "errors"); ok && t.Nodes[errs].Kind == wire.Array && t.Nodes[errs].N > 0 && isObject(t, errs+1) {
		if c, _ := optString(t, errs+1, "code"); c != "" {
			code = c
		}
		msg, _ = optString(t, errs+1, "message")
	}
	out = encode.AppendString(out, code, false)
	out = append(out, `,"message":`...)
	out = encode.AppendString(out, msg, false)
	return append(out, '}')
}

// appendTaskResult appends the Task of v as the result of message/send and
// the first event of a stream: the Task itself in the 0.3 binding,
// {"task":…} in the 1.0 binding.
func appendTaskResult(dst []byte, v *jobView, b a2aBinding) []byte {
	return appendTaskResultFailed(dst, v, nil, b)
}

// appendTaskResultFailed is appendTaskResult with a failure (see appendTask).
func appendTaskResultFailed(dst []byte, v *jobView, failure []byte, b a2aBinding) []byte {
	if b == binding10 {
		dst = append(dst, `{"task":`...)
		return append(appendTask10(dst, v, failure), '}')
	}
	return appendTask(dst, v, failure, b)
}

// appendTask appends the Task of v: the state, a status message with the
// status text (or with failure, a data part, for a failed task), the
// job_state artifact and an empty history. Nothing in it depends on the
// time: the same view is the same bytes.
func appendTask(dst []byte, v *jobView, failure []byte, b a2aBinding) []byte {
	if b == binding10 {
		return appendTask10(dst, v, failure)
	}
	state := v.taskState()
	dst = append(dst, `{"kind":"task","id":`...)
	dst = encode.AppendString(dst, v.id, false)
	dst = append(dst, `,"contextId":`...)
	dst = encode.AppendString(dst, v.mission, false)
	dst = appendStatus(dst, v, state, failure)
	if v.state != nil {
		dst = append(dst, `,"artifacts":[`...)
		dst = appendArtifact(dst, v.state)
		dst = append(dst, ']')
	}
	return append(dst, `,"history":[]}`...)
}

// appendStatus appends ,"status":{…} of a task.
func appendStatus(dst []byte, v *jobView, state a2atask.TaskState, failure []byte) []byte {
	dst = append(dst, `,"status":{"state":`...)
	dst = encode.AppendString(dst, string(state), false)
	if v.text != "" || failure != nil {
		dst = append(dst, `,"message":{"kind":"message","role":"agent","messageId":`...)
		dst = encode.AppendString(dst, "a2a-status-"+v.id+"-"+string(state), false)
		dst = append(dst, `,"taskId":`...)
		dst = encode.AppendString(dst, v.id, false)
		dst = append(dst, `,"contextId":`...)
		dst = encode.AppendString(dst, v.mission, false)
		if failure != nil {
			dst = append(dst, `,"parts":[{"kind":"data","data":`...)
			dst = append(dst, failure...)
			dst = append(dst, `}]}`...)
		} else {
			dst = append(dst, `,"parts":[{"kind":"text","text":`...)
			dst = encode.AppendString(dst, v.text, false)
			dst = append(dst, `}]}`...)
		}
	}
	return append(dst, '}')
}

// appendArtifact appends the job_state artifact holding state.
func appendArtifact(dst, state []byte) []byte {
	dst = append(dst, `{"artifactId":"`+a2atask.ArtifactJobState+`","name":"`+a2atask.ArtifactJobState+`","parts":[{"kind":"data","data":`...)
	dst = append(dst, state...)
	return append(dst, `}]}`...)
}

// a2aBlocking is the bound of a blocking message/send or SendMessage
// (HTTPSettings.A2ABlocking).
func (s *Server) a2aBlocking() time.Duration {
	if d := s.cfg.http.A2ABlocking; d > 0 {
		return d
	}
	return a2atask.DefaultBlockingTimeout
}

// methodNotFound answers a method POST /a2a does not serve: -32003 for the
// A2A push notification methods (0.3 and 1.0 names), -32004 for the 1.0
// operations the agent does not offer, -32601 for any other.
func methodNotFound(method string) *Error {
	switch method {
	case a2atask.MethodCreateTaskPushNotificationConfig, a2atask.MethodGetTaskPushNotificationConfig,
		a2atask.MethodListTaskPushNotificationConfigs, a2atask.MethodDeleteTaskPushNotificationConfig:
		return newError(a2atask.CodePushNotificationNotSupported, "Push Notification is not supported", nil)
	case a2atask.MethodListTasks:
		return newError(a2atask.CodeUnsupportedOperation, "Unsupported operation: ListTasks (the agent keeps no list of tasks: read a task with GetTask and its id)", nil)
	case a2atask.MethodGetExtendedAgentCard:
		return newError(a2atask.CodeUnsupportedOperation, "Unsupported operation: GetExtendedAgentCard (the Agent Card declares no extended card)", nil)
	}
	if strings.HasPrefix(method, a2atask.MethodPushConfigPrefix) {
		return newError(a2atask.CodePushNotificationNotSupported, "Push Notification is not supported", nil)
	}
	return newError(contracts.CodeMethodNotFound, "Method not found: "+method, nil)
}
