package a2abind

import (
	"bytes"
	"sync"

	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/internal/encode"
	"github.com/supervaize/supervaizer-go/internal/taskview"
	"github.com/supervaize/supervaizer-go/internal/wire"
)

// The answer of an A2A task method: the task a validated v2 result makes
// (spec item 65), in the shapes of the call's binding.

// answerView reads the task a validated v2 result makes: its job_state's
// view, or for an error result of a job action the failed task (State nil).
// isTask is false when the result is answered with a Message.
func answerView(req *contracts.ActionRequest, raw []byte, jobAction bool) (taskview.Job, bool) {
	t := wire.Get()
	defer wire.Put(t)
	if !t.Parse(raw) || !isObject(t, 0) {
		return taskview.Job{}, false
	}
	if js, ok := member(t, 0, "job_state"); ok && isObject(t, js) {
		v := taskview.ReadJobState(t, js)
		v.State = bytes.Clone(v.State) // t goes back to its pool
		return v, true
	}
	if status, _ := optString(t, 0, "status"); jobAction && status == contracts.StatusError {
		return taskview.Job{ID: req.JobID, Mission: req.MissionID, Status: "failed"}, true
	}
	return taskview.Job{}, false
}

// appendAnswer appends the A2A answer to a validated v2 result: a Task when
// it carries a job_state, a failed Task for an error result of a job action
// (the error's code and message in the status message's data part), else an
// agent Message whose data part holds the result; each in b's shape.
func appendAnswer(dst []byte, req *contracts.ActionRequest, raw []byte, jobAction bool, b binding) []byte {
	t := wire.Get()
	defer wire.Put(t)
	if t.Parse(raw) && isObject(t, 0) {
		if js, ok := member(t, 0, "job_state"); ok && isObject(t, js) {
			v := taskview.ReadJobState(t, js)
			return b.appendTaskResult(dst, &v, nil)
		}
		if status, _ := optString(t, 0, "status"); jobAction && status == contracts.StatusError {
			v := taskview.Job{ID: req.JobID, Mission: req.MissionID, Status: "failed"}
			return b.appendTaskResult(dst, &v, firstError(t))
		}
	}
	return b.appendReply(dst, req, raw)
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

// resultStatus reads a validated v2 result's status.
func resultStatus(raw []byte) (string, bool) {
	t := wire.Get()
	defer wire.Put(t)
	if !t.Parse(raw) {
		return "", false
	}
	s, ok := optString(t, 0, "status")
	return s, ok
}

// buffers recycles the buffers a result is read into before its answer is
// written.
var buffers = sync.Pool{New: func() any { return new([]byte) }}

// maxPooled bounds the buffers kept: a rare huge result is not kept alive.
const maxPooled = 64 << 10

func getBuffer() *[]byte { return buffers.Get().(*[]byte) }

func putBuffer(b *[]byte) {
	if cap(*b) <= maxPooled {
		buffers.Put(b)
	}
}
