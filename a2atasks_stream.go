package supervaizer

import (
	"bytes"
	"context"
	"sync"
	"time"

	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/internal/encode"
	"github.com/supervaize/supervaizer-go/internal/jsonrpc"
	"github.com/supervaize/supervaizer-go/internal/wire"
)

// message/stream and tasks/resubscribe: text/event-stream responses served
// by the task view's broker (a2atasks_view.go), with the limits of
// GET /a2a/events. Each event's data is a JSON-RPC response with the
// request's id: first the Task, then a status-update for each change of the
// job's status (or status text) and an artifact-update for each new
// job_state, the last status-update with final: true at a terminal or
// input-required state, after which the stream ends. A JSON-RPC error found
// before the Task (params, credentials, the action's own checks) is the
// stream's one event.

// stream serves a streaming method of binding b: message/stream or
// tasks/resubscribe, or their 1.0 names SendStreamingMessage and
// SubscribeToTask (whose events take the 1.0 shapes, a2atasks_v10.go).
// rpcErr is the error of its params, answered as the stream's one event;
// else start runs the call (send) or reads the task it follows (resume).
func (b a2aBinding) stream(s *Server, c *Call, rpcErr *Error, start func() (jobView, a2aMeta, string, []byte, *Error)) {
	ctx, cancel := context.WithCancel(c.r.Context())
	c.r = c.r.WithContext(ctx)
	r := c.r
	var polling sync.WaitGroup
	defer polling.Wait() // after cancel: no refresh outlives the call
	defer cancel()

	id := c.rpc.ID
	var key string   // the view key of the followed task
	var last jobView // what the client has seen
	first := func() ([]byte, bool) {
		var v jobView
		var meta a2aMeta
		var message []byte
		if rpcErr == nil {
			v, meta, key, message, rpcErr = start()
		}
		switch {
		case rpcErr != nil:
			return s.errorFrame(id, rpcErr), true
		case message != nil: // the stream's one event
			return sseFrame(nil, append(append(jsonrpc.AppendResultPrefix(nil, id), message...), '}')), true
		}
		last = v
		frame := sseFrame(nil, append(appendTaskResult(jsonrpc.AppendResultPrefix(nil, id), &v, b), '}'))
		if final := v.state == nil || v.taskState().Final(); final || key == "" {
			return frame, true
		}
		if s.hasAction(s.a2aAgent(meta), contracts.DefaultSyncAction) {
			polling.Go(func() { s.pollSync(c, meta, v) })
		}
		return frame, false
	}
	s.tasks.events.ServeStream(c.w, r, first, func(data []byte) ([]byte, bool) {
		k, rec, ok := splitTaskEvent(data)
		if !ok || k != key {
			return nil, false
		}
		v, ok := decodeRecord(rec)
		if !ok {
			return nil, false
		}
		return appendUpdates(id, &last, &v, b)
	})
}

// streamSendMethod serves message/stream (SendStreamingMessage).
func (b a2aBinding) streamSendMethod(s *Server, c *Call, m a2aMessage, rpcErr *Error) {
	b.stream(s, c, rpcErr, func() (jobView, a2aMeta, string, []byte, *Error) { return s.streamSend(c, m, b) })
}

// streamResumeMethod serves tasks/resubscribe (SubscribeToTask).
func (b a2aBinding) streamResumeMethod(s *Server, c *Call, p a2aTaskParams, rpcErr *Error) {
	b.stream(s, c, rpcErr, func() (jobView, a2aMeta, string, []byte, *Error) {
		v, meta, key, err := s.streamResume(c, p, b)
		return v, meta, key, nil, err
	})
}

// pollSync refreshes the job through job.sync while the stream is open, so
// that a job progressing in the agent's background shows; results go to the
// view, which the stream follows. It stops at the first failure (a token
// without the job.sync scope, say).
func (s *Server) pollSync(c *Call, meta a2aMeta, v jobView) {
	tick := time.NewTicker(a2aPollInterval)
	defer tick.Stop()
	for {
		select {
		case <-c.r.Context().Done():
			return
		case <-tick.C:
			nv, ok := s.a2aSync(c, meta, v)
			if !ok || nv.taskState().Final() {
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
func (s *Server) streamSend(c *Call, m a2aMessage, b a2aBinding) (_ jobView, _ a2aMeta, key string, message []byte, _ *Error) {
	t := c.t
	req := s.messageRequest(c, t, &m)
	var call a2aInvocation
	raw, rpcErr := s.invoke(c, &req, t, m.input, &call, nil)
	if rpcErr != nil {
		return jobView{}, m.meta, "", nil, rpcErr
	}
	v := call.view
	if !call.read {
		jobAction := s.isJobAction(req.AgentSlug, req.Action)
		var isTask bool
		if v, isTask = answerView(&req, raw, jobAction); !isTask || v.state == nil {
			return v, m.meta, "", appendAnswer(nil, &req, raw, jobAction, b), nil
		}
	}
	return v, m.meta, taskKey(recordWorkspace(&req), req.AgentSlug, v.id), nil, nil
}

// streamResume reads the task tasks/resubscribe follows, as tasks/get does.
// SubscribeToTask (1.0) refuses a terminal task.
func (s *Server) streamResume(c *Call, p a2aTaskParams, b a2aBinding) (jobView, a2aMeta, string, *Error) {
	id, meta := p.id, p.meta
	vc, slug, rpcErr := s.a2aAuthorize(c, meta, contracts.DefaultSyncAction)
	if rpcErr != nil {
		return jobView{}, meta, "", rpcErr
	}
	v, rpcErr := s.a2aTask(c.r.Context(), vc, slug, id)
	if rpcErr != nil {
		return jobView{}, meta, "", rpcErr
	}
	if b == binding10 && v.taskState().Terminal() {
		return jobView{}, meta, "", terminalSubscription(id, v.taskState())
	}
	return v, meta, taskKey(vc.WorkspaceID, slug, id), nil
}

// errorFrame is the SSE frame of a JSON-RPC error response.
func (s *Server) errorFrame(id []byte, e *Error) []byte {
	out, err := jsonrpc.AppendError(nil, id, &jsonrpc.Error{Code: int(e.code), Message: e.message, Data: e.data})
	if err != nil {
		out, _ = jsonrpc.AppendError(nil, id, &jsonrpc.Error{Code: int(CodeInternalError), Message: "Internal error"})
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
// artifact-update when the job_state changed, then a status-update when the
// state or status text changed, final at a terminal or input-required state
// (then the stream ends). last becomes v. In the 1.0 binding the events are
// artifactUpdate and statusUpdate, without final.
func appendUpdates(id []byte, last, v *jobView, b a2aBinding) ([]byte, bool) {
	state := v.taskState()
	final := state.Final()
	var out []byte
	if !bytes.Equal(last.state, v.state) && b == binding10 {
		out = sseFrame(out, append(appendArtifactUpdate10(jsonrpc.AppendResultPrefix(nil, id), v), '}'))
	} else if !bytes.Equal(last.state, v.state) {
		ev := jsonrpc.AppendResultPrefix(nil, id)
		ev = append(ev, `{"kind":"artifact-update","taskId":`...)
		ev = encode.AppendString(ev, v.id, false)
		ev = append(ev, `,"contextId":`...)
		ev = encode.AppendString(ev, v.mission, false)
		ev = append(ev, `,"artifact":`...)
		ev = appendArtifact(ev, v.state)
		ev = append(ev, `,"append":false,"lastChunk":true}}`...)
		out = sseFrame(out, ev)
	}
	if changed := state != last.taskState() || v.text != last.text || (final && out != nil); changed && b == binding10 {
		out = sseFrame(out, append(appendStatusUpdate10(jsonrpc.AppendResultPrefix(nil, id), v, state), '}'))
	} else if changed {
		ev := jsonrpc.AppendResultPrefix(nil, id)
		ev = append(ev, `{"kind":"status-update","taskId":`...)
		ev = encode.AppendString(ev, v.id, false)
		ev = append(ev, `,"contextId":`...)
		ev = encode.AppendString(ev, v.mission, false)
		ev = appendStatus(ev, v, state, nil)
		if final {
			ev = append(ev, `,"final":true}}`...)
		} else {
			ev = append(ev, `,"final":false}}`...)
		}
		out = sseFrame(out, ev)
	}
	*last = *v
	return out, final && out != nil
}

// taskEvent is the data the view publishes for a changed record:
// {"key":…,"record":…}.
func taskEvent(key string, record []byte) []byte {
	out := make([]byte, 0, len(key)+len(record)+24)
	out = append(out, `{"key":`...)
	out = encode.AppendString(out, key, false)
	out = append(out, `,"record":`...)
	out = append(out, record...)
	return append(out, '}')
}

// splitTaskEvent reads a taskEvent.
func splitTaskEvent(data []byte) (string, []byte, bool) {
	t := wire.Get()
	defer wire.Put(t)
	if !t.Parse(data) || !isObject(t, 0) {
		return "", nil, false
	}
	key, _ := optString(t, 0, "key")
	rec, ok := member(t, 0, "record")
	if !ok {
		return "", nil, false
	}
	return key, bytes.Clone(t.Raw(rec)), true
}
