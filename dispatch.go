package supervaizer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"sync"
	"time"

	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/errcode"
	"github.com/supervaize/supervaizer-go/internal/a2abind"
	"github.com/supervaize/supervaizer-go/internal/jsonrpc"
	"github.com/supervaize/supervaizer-go/internal/sse"
	"github.com/supervaize/supervaizer-go/internal/taskview"
	"github.com/supervaize/supervaizer-go/internal/validate"
	"github.com/supervaize/supervaizer-go/internal/wire"
)

// The one way through POST /a2a (docs/architecture.md):
//
//	transport key → size limit → JSON-RPC envelope → the method's table
//	entry (interceptors around it) → params decoded → drop client
//	workspace_authorization → workspace token (unless bootstrap) → handler
//	lookup → handler (interceptors around it) → result validated → SSE
//	publish (actions) → response
//
// Each step has one error, mapped once to its JSON-RPC code. The body is parsed
// once, into a tape (internal/wire): the envelope, the request model and a
// typed handler's input are read from it; nothing re-parses the body.

// EventEffect is the name of the SSE event published after each successful action.
const EventEffect = "supervaizer.effect"

// otherMethod is the method label of a call of a method the server does not serve.
const otherMethod = "other"

// refusal is the answer of a request refused before any method: an HTTP
// status with a detail, or a JSON-RPC error of the envelope.
type refusal struct {
	status int
	detail string
	rpc    *Error
}

func (s *Server) serveA2A(w http.ResponseWriter, r *http.Request) {
	s.inflight.Add(1)
	defer s.inflight.Done()
	c := getCall(w, r)
	defer putCall(c)
	t := wire.Get()
	defer wire.Put(t)
	c.t = t
	if !s.readCall(c, &c.refusal) {
		s.refuse(r.Context(), c)
		return
	}
	sv := s.methods[c.rpc.Method]
	if sv == nil {
		sv = s.otherMethod
	}
	c.entry = sv
	if sv != s.otherMethod {
		c.Method = sv.m.name
	} else {
		c.Method = otherMethod
	}
	if sv.stream != nil {
		c.Streaming = true
		sv.stream(r.Context(), c)
		return
	}
	sv.unary(r.Context(), c)
}

// readCall takes a POST /a2a request up to its JSON-RPC envelope, read into
// c: the transport key, the shutdown and start states, the content type, the
// body within its size limit, the envelope. It returns false with the
// refusal when one of them refuses the request.
func (s *Server) readCall(c *Call, ref *refusal) bool {
	r := c.r
	scope, index, status, detail := s.keys.checkAny(s.logger, r, ScopeWrite, ScopeA2A) // the method's own scope: checkMethodKey
	if status != 0 {
		ref.status, ref.detail = status, detail
		return false
	}
	c.keyScope, c.keyIndex = scope, index
	if s.closing.Load() {
		ref.status, ref.detail = http.StatusServiceUnavailable, "server is shutting down"
		return false
	}
	if s.studio != nil && !s.started.Load() {
		// Attached to Studio: without the handshake no token could verify.
		ref.status, ref.detail = http.StatusServiceUnavailable, "controller not started: Server.Start has not registered it with Studio"
		return false
	}
	if ct := r.Header.Get("Content-Type"); ct != "" && !jsonrpc.IsJSONContentType(ct) {
		ref.status, ref.detail = http.StatusUnsupportedMediaType, "Content-Type must be application/json"
		return false
	}
	body, status, detail := readBody(c.w, r, s.cfg.maxBody)
	if status != 0 {
		ref.status, ref.detail = status, detail
		return false
	}
	// The body is parsed once, into c.t: the envelope, the request model
	// and the typed input are all read from it.
	rpcErr := jsonrpc.DecodeInto(c.t, body, &c.rpc)
	if rpcErr != nil {
		ref.status, ref.rpc = http.StatusOK, newError(rpcErr.Code, rpcErr.Message, rpcErr.Data)
		return false
	}
	return true
}

// writeRefusal answers a request refused before any method.
func writeRefusal(logger *slog.Logger, c *Call) {
	ref := &c.refusal
	if ref.rpc != nil {
		c.end(int(ref.rpc.code), http.StatusOK)
		writeRPCError(logger, c.w, c.rpc.ID, ref.rpc)
		return
	}
	c.end(0, ref.status)
	writeDetail(c.w, ref.status, ref.detail)
}

// serveUnary serves a unary method of c's entry: the result is encoded
// (once) straight after the response's prefix.
func (s *Server) serveUnary(ctx context.Context, c *Call) {
	c.use(ctx)
	buf := getResponseBuffer()
	defer putResponseBuffer(buf)
	*buf = jsonrpc.AppendResultPrefix((*buf)[:0], c.rpc.ID)
	m := c.entry.m
	var err *Error
	if status, detail := checkMethodKey(s.logger, c); status != 0 {
		c.end(0, status)
		writeDetail(c.w, status, detail)
		return
	}
	*buf, err = m.unary(s, c, *buf)
	if err != nil {
		c.end(int(err.code), http.StatusOK)
		writeRPCError(s.logger, c.w, c.rpc.ID, err)
		return
	}
	c.end(0, http.StatusOK)
	c.w.Header()["Content-Type"] = headerJSON
	*buf = append(*buf, '}')
	_, _ = c.w.Write(*buf) // Write does not retain its argument
}

// serveStream serves a streaming method of c's entry (text/event-stream).
// The call's code is 0: its errors are events of the stream.
func (s *Server) serveStream(ctx context.Context, c *Call) {
	c.use(ctx)
	sw := statusWriter{ResponseWriter: c.w}
	c.w = &sw
	if status, detail := checkMethodKey(s.logger, c); status != 0 {
		c.end(0, status)
		writeDetail(c.w, status, detail)
		return
	}
	c.r = c.r.WithContext(sse.WithHolder(c.r.Context(), keyHolder(c.keyIndex))) // one key's streams are bounded
	c.entry.m.stream(s, c)
	c.end(0, sw.status)
}

// statusWriter records the status of a response.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(p)
}

// Unwrap gives http.ResponseController the writer underneath.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// responseBuffers recycles the buffers that responses are assembled in.
var responseBuffers = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledResponse bounds the buffers kept: a rare huge response is not
// kept alive by the pool.
const maxPooledResponse = 64 << 10

func getResponseBuffer() *[]byte { return responseBuffers.Get().(*[]byte) }

func putResponseBuffer(b *[]byte) {
	if cap(*b) <= maxPooledResponse {
		responseBuffers.Put(b)
	}
}

// decodeParams decodes the request model m from the params at node of t
// (-1: absent, read as {}): params[key] when that key is present, else params
// itself (both the wrapped and the flat form are valid). It returns the node
// of the request, -1 when it is not on t.
func decodeParams(v *validate.Validator, m contracts.Model, t *wire.Tape, node int32, key string, dst any) (int32, error) {
	if node < 0 {
		return -1, v.Decode(m, []byte("{}"), dst)
	}
	if inner, ok := t.Member(node, []byte(key)); ok {
		node = inner
	}
	return node, v.DecodeAt(m, t, node, dst)
}

// actionParams is the decoded params of supervaizer/action.invoke: the
// request and the node of its input on the call's tape (-1 when absent).
type actionParams struct {
	req   ActionRequest
	input int32
}

// decodeAction decodes the params of supervaizer/action.invoke.
func decodeAction(v *validate.Validator, c *Call) (*actionParams, *Error) {
	p := &actionParams{input: -1}
	node, err := decodeParams(v, contracts.ModelActionRequest, c.t, c.rpc.ParamsNode, "action_request", &p.req)
	if err != nil {
		return nil, requestError("Invalid Supervaizer v2 action request", err)
	}
	if node >= 0 {
		if in, ok := c.t.Member(node, []byte("input")); ok {
			p.input = in
		}
	}
	return p, nil
}

// invokeAction serves supervaizer/action.invoke: it appends the result to dst.
func invokeAction(s *Server, c *Call, p *actionParams, dst []byte) ([]byte, *Error) {
	return s.invoke(c, &p.req, c.t, p.input, nil, dst)
}

// invoke runs a decoded action request through the rest of the pipeline
// (admission, handler lookup, idempotency layer, handler, result validation,
// task view, SSE publish) and appends the result to dst. The input of req is
// at node input of t when input >= 0 (the body's one parse). call is nil
// for action.invoke; for an A2A call it completes the request from the
// verified workspace before the handler runs (the mapping's actor) and
// receives what the task view read from the result (internal/a2abind).
//
// supervaizer/action.invoke and the A2A task methods (internal/a2abind) both come
// through here: every check applies to both, once.
func (s *Server) invoke(c *Call, req *ActionRequest, t *wire.Tape, input int32, a2a *a2aRead, dst []byte) ([]byte, *Error) {
	c.note(s.bySlug[req.AgentSlug], "action", req.Action, req.Workspace.ID) // observer.go
	ctx, ws, rpcErr := s.admit(c, isBootstrapAction(req.Action), req.Workspace, req.AgentSlug, req.Action)
	if rpcErr != nil {
		return dst, rpcErr
	}
	req.WorkspaceAuthorization = ws // never the client's
	if ws != nil {
		c.WorkspaceID = ws.WorkspaceID
	}
	if s.bySlug[req.AgentSlug].bindingMissing(s.localAuth, ws) { // a business result, before the handler (auth.go)
		raw, err := contracts.Marshal(Fail(contracts.ErrorWorkspaceBindingMissing, "%s", bindingMissingMessage(req.AgentSlug)))
		if err != nil {
			return dst, failedWith(req, err)
		}
		return append(dst, raw...), nil
	}
	if a2a != nil {
		a2abind.Actor(req, ws)
	}
	a := s.bySlug[req.AgentSlug]
	var h ActionHandler
	if a != nil {
		h = a.action(req.Action)
	}
	if h == nil {
		return dst, newError(errcode.ActionNotRegistered, "Action handler not registered: "+req.Action,
			map[string]any{"agent_slug": req.AgentSlug, "action": req.Action})
	}
	if holder := s.idem.holder; holder != nil && holder.stale() {
		// The instance id claim is not renewed: another process may hold it
		// by now; no action runs until it is (spec item 73, instance.go).
		return dst, retryLater(req, errClaimNotRenewed)
	}
	call := withCall(ctx, a, ws)
	if a2a != nil {
		call.emit = a2a.emit
	}
	if input >= 0 {
		call.tape = t
		call.inputNode = input
	}
	defer func() { call.tape = nil }() // t goes back to its pool after this call
	ctx = call
	var start time.Time // read only for the debug line below: no clock read otherwise
	debug := s.logger.Enabled(ctx, slog.LevelDebug)
	if debug {
		start = time.Now()
	}
	n := len(dst)
	var effects []byte
	ran := false // the handler ran for this call, its answer not a replay
	// rt receives the tape the result's validation worked on, so that the
	// task view reads the result without parsing it again (parsed false:
	// the view parses it).
	rt := wire.Get()
	defer wire.Put(rt)
	parsed := false
	if req.IdempotencyKey != "" && a.isIdempotent(req.Action) {
		// The idempotency layer keeps the result it stores: its own buffer.
		var raw []byte
		raw, rpcErr = s.idem.run(ctx, req, func(ctx context.Context) ([]byte, *Error) {
			raw, _, _, err := s.runAction(ctx, c, h, req, true, nil, nil)
			ran = err == nil
			return raw, err
		})
		dst = append(dst, raw...)
		if rpcErr == nil {
			noteIdempotency(c, ran, raw) // observer.go
		}
	} else {
		dst, effects, parsed, rpcErr = s.runAction(ctx, c, h, req, false, dst, rt)
		ran = rpcErr == nil
	}
	usage := call.reported()
	s.keepUsage(ctx, c, req, usage) // actions.go
	if a2a != nil {
		a2a.usage = usage
	}
	if rpcErr != nil {
		return dst[:n], rpcErr
	}
	var tape *wire.Tape // the tape of the result, when its validation left one
	if parsed {
		tape = rt
	}
	if isDryRun(s.bySlug[req.AgentSlug], req, dst[n:], tape) { // no effect published, no task view, no figure (actions.go)
		return dst, nil
	}
	if ran { // a replayed answer never brings an older job state back
		var job *taskview.Job
		if a2a != nil {
			job = &a2a.job
		}
		read := s.tasks.Observe(ctx, recordWorkspace(req), req.AgentSlug, dst[n:], tape, job)
		if a2a != nil {
			a2a.read = read
		}
	}
	s.publishEffects(ctx, req, dst[n:], effects)
	if debug {
		s.logger.LogAttrs(ctx, slog.LevelDebug, "action invoked", slog.String("agent_slug", req.AgentSlug),
			slog.String("action", req.Action), slog.String("request_id", req.RequestID), slog.Duration("elapsed", time.Since(start)))
	}
	return dst, nil
}

// actionFailed is the -32603 error of a failed action handler.
func actionFailed(req *ActionRequest) *Error {
	return newError(errcode.InternalError, "Action handler failed", map[string]any{"agent_slug": req.AgentSlug, "action": req.Action})
}

// surfaceFailed is the -32603 error of a failed surface handler.
func surfaceFailed(req *SurfaceRequest) *Error {
	return newError(errcode.InternalError, "Surface handler failed", map[string]any{"agent_slug": req.AgentSlug, "surface": req.Surface})
}

// runAction calls the handler, validates its result and appends it to dst.
// strict marks the result as the idempotency layer's
// (replay_safety.strictly_idempotent_response).
//
// effects is the result's "effects" value in dst as the validation read it
// (nil when it did not). When t is not nil, parsed reports that it holds
// the tape of the appended result ([validate.Validator.AppendResultTape]).
func (s *Server) runAction(ctx context.Context, c *Call, h ActionHandler, req *ActionRequest, strict bool, dst []byte, t *wire.Tape) (_, effects []byte, parsed bool, _ *Error) {
	c.act, c.actReq, c.surf, c.surfReq = h, req, nil, nil
	err := s.handler(ctx, c) // the interceptors around runHandler (observer.go)
	res := c.actRes
	c.act, c.actReq, c.actRes = nil, nil, nil
	if err != nil {
		if e, ok := isInputError(err); ok {
			return dst, nil, false, e
		}
		handlerFailed(ctx, s.logger, "action", req.AgentSlug, req.Action, req.RequestID, err)
		return dst, nil, false, actionFailed(req)
	}
	if res == nil {
		handlerFailed(ctx, s.logger, "action", req.AgentSlug, req.Action, req.RequestID, errors.New("handler returned no result"))
		return dst, nil, false, actionFailed(req)
	}
	if perr := dryRunProblem(s.bySlug[req.AgentSlug], req, res); perr != nil { // actions.go
		handlerFailed(ctx, s.logger, "action", req.AgentSlug, req.Action, req.RequestID, perr)
		return dst, nil, false, actionFailed(req)
	}
	if cc, ok := ctx.Value(inputKey{}).(*callContext); ok {
		withUsage(ctx, s.logger, s.bySlug[req.AgentSlug], req, res, cc.reported()) // actions.go
	}
	if strict {
		markStrict(res, req.IdempotencyKey)
	}
	if dst == nil {
		dst = make([]byte, 0, 1024)
	}
	dst, effects, parsed, verr := appendResult(s.validator, dst, res, t)
	if verr != nil {
		handlerFailed(ctx, s.logger, "action", req.AgentSlug, req.Action, req.RequestID, fmt.Errorf("invalid result: %w", verr))
		return dst, nil, false, actionFailed(req)
	}
	return dst, effects, parsed, nil
}

// publishEffects publishes the supervaizer.effect event of a successful
// action. The effects are serialized like the result's, so they are taken
// from raw, the result JSON as sent (fresh, replayed or built by the
// idempotency layer), which always carries "effects": effects when the
// result's validation found them there, else read from raw.
func (s *Server) publishEffects(ctx context.Context, req *ActionRequest, raw, effects []byte) {
	ok := effects != nil
	if !ok {
		effects, ok = jsonrpc.Member(raw, "effects")
	}
	if !ok {
		s.logger.LogAttrs(ctx, slog.LevelError, "effect event: result without effects", slog.String("action", req.Action))
		return
	}
	data := make([]byte, 0, len(effects)+len(req.AgentSlug)+len(req.Action)+len(req.RequestID)+64)
	data = append(data, `{"agent_slug":`...)
	data = jsonrpc.AppendHTMLString(data, req.AgentSlug)
	data = append(data, `,"action":`...)
	data = jsonrpc.AppendHTMLString(data, req.Action)
	data = append(data, `,"request_id":`...)
	data = jsonrpc.AppendHTMLString(data, req.RequestID)
	data = append(data, `,"effects":`...)
	data = append(data, effects...)
	s.publish(ctx, EventEffect, append(data, '}'))
}

// admit is the workspace step of the pipeline: a
// bootstrap call gets no verified context, even with a token; any other call
// is verified with the scopes [the method's token scope, id] before any
// handler lookup. The caller puts the returned verified workspace in the
// handler's context (withCall); the client's workspace_authorization is
// never used.
func (s *Server) admit(c *Call, bootstrap bool, ws contracts.WorkspaceRef, agentSlug, id string) (context.Context, *contracts.VerifiedWorkspaceContext, *Error) {
	r := c.r
	ctx := r.Context()
	if bootstrap {
		return ctx, nil, nil
	}
	if c.verified != nil {
		return ctx, c.verified, nil
	}
	vc, err := s.authorize(ctx, r, ws, agentSlug, []string{c.entry.m.tokenScope, id})
	if err != nil {
		return nil, nil, err
	}
	return ctx, vc, nil
}

// decodeSurface decodes the params of supervaizer/surface.load.
func decodeSurface(v *validate.Validator, c *Call) (*SurfaceRequest, *Error) {
	req := new(SurfaceRequest)
	if _, err := decodeParams(v, contracts.ModelSurfaceRequest, c.t, c.rpc.ParamsNode, "surface_request", req); err != nil {
		return nil, requestError("Invalid Supervaizer v2 surface request", err)
	}
	return req, nil
}

// loadSurface serves supervaizer/surface.load: it appends the result to dst.
func loadSurface(s *Server, c *Call, req *SurfaceRequest, dst []byte) ([]byte, *Error) {
	c.note(s.bySlug[req.AgentSlug], "surface", req.Surface, req.Workspace.ID) // observer.go
	ctx, ws, rpcErr := s.admit(c, isBootstrapSurface(req.Surface), req.Workspace, req.AgentSlug, req.Surface)
	if rpcErr != nil {
		return dst, rpcErr
	}
	req.WorkspaceAuthorization = ws // never the client's
	if ws != nil {
		c.WorkspaceID = ws.WorkspaceID
	}
	if s.bySlug[req.AgentSlug].bindingMissing(s.localAuth, ws) { // auth.go
		return dst, authFailure(contracts.ErrorWorkspaceBindingMissing, bindingMissingMessage(req.AgentSlug))
	}
	a := s.bySlug[req.AgentSlug]
	var h SurfaceHandler
	if a != nil {
		h = a.surface(req.Surface)
	}
	if h == nil {
		return dst, newError(errcode.SurfaceNotRegistered, "Surface handler not registered: "+req.Surface,
			map[string]any{"agent_slug": req.AgentSlug, "surface": req.Surface})
	}
	ctx = withCall(ctx, a, ws)
	c.surf, c.surfReq, c.act, c.actReq = h, req, nil, nil
	err := s.handler(ctx, c) // the interceptors around runHandler (observer.go)
	res := c.surfRes
	c.surf, c.surfReq, c.surfRes = nil, nil, nil
	if err == nil && res == nil {
		err = errors.New("handler returned no result")
	}
	if err == nil {
		err = s.bySlug[req.AgentSlug].surfaceVersionProblem(res) // actions.go
	}
	if err != nil {
		handlerFailed(ctx, s.logger, "surface", req.AgentSlug, req.Surface, req.RequestID, err)
		return dst, surfaceFailed(req)
	}
	dst, verr := appendSurfaceResult(s.validator, dst, res)
	if verr != nil {
		handlerFailed(ctx, s.logger, "surface", req.AgentSlug, req.Surface, req.RequestID, fmt.Errorf("invalid result: %w", verr))
		return dst, surfaceFailed(req)
	}
	return dst, nil
}

// requestError maps a request-model failure to -32602 with data.errors.
func requestError(msg string, err error) *Error {
	var ve *contracts.ValidationError
	if errors.As(err, &ve) {
		return invalidParams(msg, ve.Problems)
	}
	return invalidParams(msg, []contracts.Problem{{Loc: []any{}, Msg: "invalid request", Type: "invalid"}})
}

func handlerFailed(ctx context.Context, logger *slog.Logger, kind, slug, id, requestID string, err error) {
	logger.LogAttrs(ctx, slog.LevelError, kind+" handler failed", slog.String("agent_slug", slug),
		slog.String(kind, id), slog.String("request_id", requestID), slog.String("error", err.Error()))
}

// panicError carries a recovered handler panic to the log.
type panicError struct {
	value any
	stack []byte
}

func (p *panicError) Error() string { return fmt.Sprintf("panic: %v\n%s", p.value, p.stack) }

// appendResult encodes and validates an action result. A panic while it is
// encoded (a value whose MarshalJSON panics) is recovered like a handler's:
// the call fails with -32603 and the cause is logged, so the idempotency
// record is released as for an invalid result (spec item 69).
func appendResult(v *validate.Validator, dst []byte, res *ActionResult, t *wire.Tape) (out, effects []byte, parsed bool, err error) {
	n := len(dst)
	defer func() {
		if v := recover(); v != nil {
			out, effects, parsed, err = dst[:n], nil, false, &panicError{value: v, stack: debug.Stack()}
		}
	}()
	return v.AppendResultTape(dst, res, t)
}

// appendSurfaceResult is appendResult for a surface result.
func appendSurfaceResult(v *validate.Validator, dst []byte, res *SurfaceResult) (out []byte, err error) {
	n := len(dst)
	defer func() {
		if v := recover(); v != nil {
			out, err = dst[:n], &panicError{value: v, stack: debug.Stack()}
		}
	}()
	return v.AppendValue(dst, contracts.ModelSurfaceResult, res)
}

func callAction(ctx context.Context, h ActionHandler, req *ActionRequest) (res *ActionResult, err error) {
	defer func() {
		if v := recover(); v != nil {
			res, err = nil, &panicError{value: v, stack: debug.Stack()}
		}
	}()
	return h(ctx, req)
}

func callSurface(ctx context.Context, h SurfaceHandler, req *SurfaceRequest) (res *SurfaceResult, err error) {
	defer func() {
		if v := recover(); v != nil {
			res, err = nil, &panicError{value: v, stack: debug.Stack()}
		}
	}()
	return h(ctx, req)
}

func writeRPCError(logger *slog.Logger, w http.ResponseWriter, id json.RawMessage, e *Error) {
	out, err := jsonrpc.AppendError(nil, id, &jsonrpc.Error{Code: e.code, Message: e.message, Data: e.data})
	if err != nil {
		logger.Error("encode JSON-RPC error", slog.Int("code", int(e.code)), slog.Any("error", err))
		out, _ = jsonrpc.AppendError(nil, id, &jsonrpc.Error{Code: errcode.InternalError, Message: "Internal error"})
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}
