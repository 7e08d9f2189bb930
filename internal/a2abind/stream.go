package a2abind

import (
	"bytes"
	"context"
	"sync"
	"time"

	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/errcode"
	"github.com/supervaize/supervaizer-go/internal/jsonrpc"
	"github.com/supervaize/supervaizer-go/internal/taskview"
)

// message/stream and tasks/resubscribe (SendStreamingMessage and
// SubscribeToTask): text/event-stream responses served by the task view's
// broker, with the limits of GET /a2a/events. Each event's data is a
// JSON-RPC response with the request's id: first the Task, then an artifact
// update for each new job_state and a status update for each change of the
// job's status (or status text), the last at a terminal or input-required
// state, after which the stream ends. A JSON-RPC error found before the Task
// (params, credentials, the action's own checks) is the stream's one event.

// serveStream serves a streaming method of binding b. rpcErr is the error
// of its params, answered as the stream's one event; else start runs the
// call (send) or reads the task it follows (resume).
func serveStream(p Pipeline, c *Call, b binding, rpcErr *jsonrpc.Error, start func() (taskview.Job, meta, string, []byte, *jsonrpc.Error)) {
	ctx, cancel := context.WithCancel(c.R.Context())
	c.R = c.R.WithContext(ctx)
	r := c.R
	var polling sync.WaitGroup
	defer polling.Wait() // after cancel: no refresh outlives the call
	defer cancel()

	id := c.ID
	var key string        // the view key of the followed task
	var last taskview.Job // what the client has seen
	first := func() ([]byte, bool) {
		var v taskview.Job
		var m meta
		var msg []byte
		if rpcErr == nil {
			v, m, key, msg, rpcErr = start()
		}
		switch {
		case rpcErr != nil:
			return errorFrame(id, rpcErr), true
		case msg != nil: // the stream's one answer: a Message, or the failed Task of an error result
			frame := sseFrame(nil, append(append(jsonrpc.AppendResultPrefix(nil, id), msg...), '}'))
			if v.ID != "" && b.settledUpdate() {
				frame = settledFrame(frame, id, &v, b)
			}
			return frame, true
		}
		last = v
		frame := sseFrame(nil, append(b.appendTaskResult(jsonrpc.AppendResultPrefix(nil, id), &v, nil), '}'))
		if final := v.State == nil || v.TaskState().Final(); final || key == "" {
			if b.settledUpdate() {
				frame = settledFrame(frame, id, &v, b)
			}
			return frame, true
		}
		if p.HasAction(agent(p, m), contracts.DefaultSyncAction) {
			polling.Go(func() { pollSync(p, c, m, v) })
		}
		return frame, false
	}
	p.Tasks().Events.ServeStream(c.W, r, first, func(data []byte) ([]byte, bool) {
		k, rec, ok := taskview.SplitEvent(data)
		if !ok || k != key {
			return nil, false
		}
		v, ok := taskview.DecodeRecord(rec)
		if !ok {
			return nil, false
		}
		return appendUpdates(id, &last, &v, b)
	})
}

// streamSendMethod serves message/stream (SendStreamingMessage).
func streamSendMethod(b binding) func(p Pipeline, c *Call, m message, rpcErr *jsonrpc.Error) {
	return func(p Pipeline, c *Call, m message, rpcErr *jsonrpc.Error) {
		if rpcErr == nil && m.conversation {
			converseStream(p, c, m, b, nil)
			return
		}
		serveStream(p, c, b, rpcErr, func() (taskview.Job, meta, string, []byte, *jsonrpc.Error) { return streamSend(p, c, m, b) })
	}
}

// streamResumeMethod serves tasks/resubscribe (SubscribeToTask).
func streamResumeMethod(b binding) func(p Pipeline, c *Call, tp taskParams, rpcErr *jsonrpc.Error) {
	return func(p Pipeline, c *Call, tp taskParams, rpcErr *jsonrpc.Error) {
		serveStream(p, c, b, rpcErr, func() (taskview.Job, meta, string, []byte, *jsonrpc.Error) {
			v, m, key, err := streamResume(p, c, tp, b)
			return v, m, key, nil, err
		})
	}
}

// pollSync refreshes the job through job.sync while the stream is open, so
// that a job progressing in the agent's background shows; results go to the
// view, which the stream follows. It stops at the first failure (a token
// without the job.sync scope, say).
func pollSync(p Pipeline, c *Call, m meta, v taskview.Job) {
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		select {
		case <-c.R.Context().Done():
			return
		case <-tick.C:
			nv, ok := refresh(p, c, m, v)
			if !ok || nv.TaskState().Final() {
				return
			}
			v = nv
		}
	}
}

// streamSend runs the message/stream call (as message/send, never blocking)
// and returns the task it answers and the key of its view, or the one
// answer that ends the stream at once: the Message of a result without a
// task, or the failed Task of an error result.
func streamSend(p Pipeline, c *Call, m message, b binding) (_ taskview.Job, _ meta, key string, msg []byte, _ *jsonrpc.Error) {
	req := messageRequest(p, c, &m)
	raw, v, read, rpcErr := p.Invoke(c, &req, m.input, nil)
	if rpcErr != nil {
		return taskview.Job{}, m.meta, "", nil, rpcErr
	}
	if !read {
		jobAction := p.IsJobAction(req.AgentSlug, req.Action)
		var isTask bool
		if v, isTask = answerView(&req, raw, jobAction); !isTask || v.State == nil {
			return v, m.meta, "", appendAnswer(nil, &req, raw, jobAction, b), nil
		}
	}
	return v, m.meta, taskview.Key(recordWorkspace(&req), req.AgentSlug, v.ID), nil, nil
}

// streamResume reads the task tasks/resubscribe follows, as tasks/get does;
// b may refuse the task it reads (SubscribeToTask, a terminal task).
func streamResume(p Pipeline, c *Call, tp taskParams, b binding) (taskview.Job, meta, string, *jsonrpc.Error) {
	id, m := tp.id, tp.meta
	vc, slug, rpcErr := authorize(p, c, m, contracts.DefaultSyncAction)
	if rpcErr != nil {
		return taskview.Job{}, m, "", rpcErr
	}
	v, rpcErr := task(p, c.R.Context(), vc, slug, id)
	if rpcErr != nil {
		return taskview.Job{}, m, "", rpcErr
	}
	if rpcErr := b.resumeRefused(id, &v); rpcErr != nil {
		return taskview.Job{}, m, "", rpcErr
	}
	return v, m, taskview.Key(vc.WorkspaceID, slug, id), nil
}

// settledFrame appends to frame the status update with final true that
// ends a stream of b whose first Task is already settled (0.3, spec item
// 72).
func settledFrame(frame, id []byte, v *taskview.Job, b binding) []byte {
	return sseFrame(frame, append(b.appendStatusUpdate(jsonrpc.AppendResultPrefix(nil, id), v, v.TaskState(), true), '}'))
}

// errorFrame is the SSE frame of a JSON-RPC error response.
func errorFrame(id []byte, e *jsonrpc.Error) []byte {
	out, err := jsonrpc.AppendError(nil, id, e)
	if err != nil {
		out, _ = jsonrpc.AppendError(nil, id, &jsonrpc.Error{Code: errcode.InternalError, Message: "Internal error"})
	}
	return sseFrame(nil, out)
}

// sseFrame appends "data: <json>\n\n" to dst. Compact JSON has no line
// break; any other JSON's line breaks are whitespace between tokens.
func sseFrame(dst, data []byte) []byte {
	dst = append(dst, "data: "...)
	n := len(dst)
	dst = append(dst, data...)
	for i := n; i < len(dst); i++ {
		if dst[i] == '\n' || dst[i] == '\r' {
			dst[i] = ' '
		}
	}
	return append(dst, "\n\n"...)
}

// appendUpdates makes the frames for the change from last to v: an
// artifact update when the job_state changed, then a status update when the
// state or status text changed, final at a terminal or input-required state
// (then the stream ends); each in b's shape. last becomes v.
func appendUpdates(id []byte, last, v *taskview.Job, b binding) ([]byte, bool) {
	state := v.TaskState()
	final := state.Final()
	var out []byte
	if !bytes.Equal(last.State, v.State) {
		out = sseFrame(out, append(b.appendArtifactUpdate(jsonrpc.AppendResultPrefix(nil, id), v), '}'))
	}
	if state != last.TaskState() || v.Text != last.Text || (final && out != nil) {
		out = sseFrame(out, append(b.appendStatusUpdate(jsonrpc.AppendResultPrefix(nil, id), v, state, final), '}'))
	}
	*last = *v
	return out, final && out != nil
}
