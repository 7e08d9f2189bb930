package a2abind

import (
	"net/http"
	"sync"
	"time"

	"github.com/supervaize/supervaizer-go/a2atask"
	"github.com/supervaize/supervaizer-go/internal/jsonrpc"
	"github.com/supervaize/supervaizer-go/internal/taskview"
)

// A streamed conversation (message/stream, SendStreamingMessage, spec item
// 81) is a task: the Task working, an artifact-update of the "response"
// artifact per chunk of text the handler emits (conversation.Emit), then
// the whole answer (the response text part and the rest of the output as a
// data part, lastChunk) and the status update completed. The task is in the
// task view, so tasks/get answers it (its status message is the answer).

// ArtifactResponse is the artifact of a streamed conversation's answer.
const ArtifactResponse = "response"

// streamWriteTimeout bounds the write of each event of a streamed
// conversation.
const streamWriteTimeout = 10 * time.Second

// converseStream serves a conversation's message/stream.
func converseStream(p Pipeline, c *Call, m message, b binding, rpcErr *jsonrpc.Error) {
	// The stream counts in MaxEventStreams and its key's MaxStreamsPerKey,
	// as a task stream (spec item 72): beyond them, 503 with Retry-After.
	release, ok := p.Tasks().Events.Hold(c.W, c.R)
	if !ok {
		return
	}
	defer release()
	var x *exchange
	if rpcErr == nil {
		x, rpcErr = startExchange(p, c, &m, b, true)
	}
	h := c.W.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	c.W.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(c.W)
	var mu sync.Mutex // the handler may emit from several goroutines
	write := func(frame []byte) {
		_ = rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
		_, _ = c.W.Write(frame)
		_ = rc.Flush()
	}
	if rpcErr != nil {
		write(errorFrame(c.ID, rpcErr))
		return
	}
	ctx := c.R.Context()
	slug := x.req.AgentSlug
	v := taskview.Job{ID: x.req.JobID, Mission: x.req.MissionID, Status: "working"}
	p.Tasks().Record(ctx, x.workspaceID, slug, v)
	write(sseFrame(nil, append(b.appendTaskResult(jsonrpc.AppendResultPrefix(nil, c.ID), &v, nil), '}')))
	chunks := 0
	c.Emit = func(text string) {
		mu.Lock()
		defer mu.Unlock()
		if chunks < 0 { // the answer was written: a late chunk is dropped
			return
		}
		write(sseFrame(nil, append(b.appendTextArtifact(jsonrpc.AppendResultPrefix(nil, c.ID), &v, text, nil, chunks > 0, false), '}')))
		chunks++
	}
	raw, jv, read, rpcErr := p.Invoke(c, &x.req, -1, nil)
	mu.Lock()
	defer mu.Unlock()
	c.Emit, chunks = nil, -1
	if rpcErr != nil {
		v.Status, v.Text = "failed", rpcErr.Message
		p.Tasks().Record(ctx, x.workspaceID, slug, v)
		write(sseFrame(nil, append(withUsage(b.appendStatusUpdate(jsonrpc.AppendResultPrefix(nil, c.ID), &v, a2atask.StateFailed, true), usageJSON(c), b), '}')))
		return
	}
	text, rest, ok := reply(raw)
	switch {
	case read: // the handler started a job: the conversation's answer names it
		text, rest = jobStarted(jv.ID), nil
		remember(p, c, x, m.text, text)
	case !ok:
		v.Status, v.Text = "failed", "The conversation action answered an error"
		p.Tasks().Record(ctx, x.workspaceID, slug, v)
		write(sseFrame(nil, append(withUsage(b.appendStatusUpdate(jsonrpc.AppendResultPrefix(nil, c.ID), &v, a2atask.StateFailed, true), usageJSON(c), b), '}')))
		return
	default:
		remember(p, c, x, m.text, text)
	}
	write(sseFrame(nil, append(b.appendTextArtifact(jsonrpc.AppendResultPrefix(nil, c.ID), &v, text, rest, false, true), '}')))
	v.Status, v.Text = "completed", text
	p.Tasks().Record(ctx, x.workspaceID, slug, v)
	write(sseFrame(nil, append(withUsage(b.appendStatusUpdate(jsonrpc.AppendResultPrefix(nil, c.ID), &v, a2atask.StateCompleted, true), usageJSON(c), b), '}')))
}
