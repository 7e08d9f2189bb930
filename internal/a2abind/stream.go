package a2abind

import (
	"bytes"
	"time"

	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/errcode"
	"github.com/supervaize/supervaizer-go/internal/jsonrpc"
	"github.com/supervaize/supervaizer-go/internal/sse"
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

// streamStart is what a stream's start found: the task it follows and the
// key of its view, the call's metadata and verified workspace, or the one
// answer that ends the stream at once (msg).
type streamStart struct {
	v   taskview.Job
	m   meta
	key string
	vc  *contracts.VerifiedWorkspaceContext
	msg []byte
}

// serveStream serves a streaming method of binding b. rpcErr is the error
// of its params, answered as the stream's one event; else start runs the
// call (send) or reads the task it follows (resume). The stream receives
// only its task's events (routed by task), the task's one refresher
// refreshes it meanwhile (follow), and it ends at the task's final state,
// at the blocking bound or when its token expires (plus leeway), the last
// event then carrying the state it knows (spec item 72).
func serveStream(p Pipeline, c *Call, b binding, rpcErr *jsonrpc.Error, start func() (streamStart, *jsonrpc.Error)) {
	id := c.ID
	var st streamStart
	var last taskview.Job // what the client has seen
	release := func() {}
	defer func() { release() }()
	first := func() ([]byte, bool) {
		if rpcErr == nil {
			st, rpcErr = start()
		}
		v := st.v
		switch {
		case rpcErr != nil:
			return errorFrame(id, rpcErr), true
		case st.msg != nil: // the stream's one answer: a Message, or the failed Task of an error result
			frame := sseFrame(nil, append(append(jsonrpc.AppendResultPrefix(nil, id), st.msg...), '}'))
			if v.ID != "" && b.settledUpdate() {
				frame = settledFrame(frame, id, &v, b)
			}
			return frame, true
		}
		last = v
		last.State = bytes.Clone(v.State)
		frame := sseFrame(nil, append(b.appendTaskResult(jsonrpc.AppendResultPrefix(nil, id), &v, nil), '}'))
		if final := v.State == nil || v.TaskState().Final(); final || st.key == "" {
			if b.settledUpdate() {
				frame = settledFrame(frame, id, &v, b)
			}
			return frame, true
		}
		release = follow(p, c, st.m, st.vc, st.key, v)
		return frame, false
	}
	p.Tasks().Events.Serve(c.W, c.R, sse.Stream{
		First: first,
		Topic: func() string { return st.key },
		Until: func() time.Time {
			until := time.Now().Add(blockingBound(p))
			if exp := tokenExpiry(c); !exp.IsZero() {
				if end := exp.Add(p.TokenLeeway()); end.Before(until) {
					until = end
				}
			}
			return until
		},
		Last: func() []byte { return settledFrame(nil, id, &last, b) },
		Frame: func(data []byte) ([]byte, bool) {
			k, rec, ok := taskview.SplitEvent(data)
			if !ok || k != st.key {
				return nil, false
			}
			v, ok := taskview.DecodeRecord(rec)
			if !ok {
				return nil, false
			}
			return appendUpdates(id, &last, &v, b)
		},
	})
}

// streamSendMethod serves message/stream (SendStreamingMessage).
func streamSendMethod(b binding) func(p Pipeline, c *Call, m message, rpcErr *jsonrpc.Error) {
	return func(p Pipeline, c *Call, m message, rpcErr *jsonrpc.Error) {
		if rpcErr == nil && m.conversation {
			converseStream(p, c, m, b, nil)
			return
		}
		serveStream(p, c, b, rpcErr, func() (streamStart, *jsonrpc.Error) { return streamSend(p, c, m, b) })
	}
}

// streamResumeMethod serves tasks/resubscribe (SubscribeToTask).
func streamResumeMethod(b binding) func(p Pipeline, c *Call, tp taskParams, rpcErr *jsonrpc.Error) {
	return func(p Pipeline, c *Call, tp taskParams, rpcErr *jsonrpc.Error) {
		serveStream(p, c, b, rpcErr, func() (streamStart, *jsonrpc.Error) { return streamResume(p, c, tp, b) })
	}
}

// streamSend runs the message/stream call (as message/send, never blocking)
// and returns the task it answers and the key of its view, or the one
// answer that ends the stream at once: the Message of a result without a
// task, or the failed Task of an error result.
func streamSend(p Pipeline, c *Call, m message, b binding) (streamStart, *jsonrpc.Error) {
	if m.meta.supervisor != nil {
		return streamStart{m: m.meta}, unsupervisable()
	}
	req := messageRequest(p, c, &m)
	raw, v, read, rpcErr := p.Invoke(c, &req, m.input, nil)
	if rpcErr != nil {
		return streamStart{m: m.meta}, rpcErr
	}
	if !read {
		jobAction := p.IsJobAction(req.AgentSlug, req.Action)
		var isTask bool
		if v, isTask = answerView(&req, raw, jobAction); !isTask || v.State == nil {
			return streamStart{v: v, m: m.meta, msg: withUsage(appendAnswer(nil, &req, raw, jobAction, b), usageJSON(c), b)}, nil
		}
	}
	return streamStart{v: v, m: m.meta, key: taskview.Key(recordWorkspace(&req), req.AgentSlug, v.ID), vc: req.WorkspaceAuthorization}, nil
}

// streamResume reads the task tasks/resubscribe follows, as tasks/get does;
// b may refuse the task it reads (SubscribeToTask, a terminal task).
func streamResume(p Pipeline, c *Call, tp taskParams, b binding) (streamStart, *jsonrpc.Error) {
	id, m := tp.id, tp.meta
	vc, slug, rpcErr := authorize(p, c, m, contracts.DefaultSyncAction)
	if rpcErr != nil {
		return streamStart{m: m}, rpcErr
	}
	v, rpcErr := task(p, c.R.Context(), vc, slug, id)
	if rpcErr != nil {
		return streamStart{m: m}, rpcErr
	}
	if rpcErr := b.resumeRefused(id, &v); rpcErr != nil {
		return streamStart{m: m}, rpcErr
	}
	return streamStart{v: v, m: m, key: taskview.Key(vc.WorkspaceID, slug, id), vc: vc}, nil
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
