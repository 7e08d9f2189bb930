package supervaizer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/supervaize/supervaizer-go/a2atask"
	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/internal/jsonrpc"
	"github.com/supervaize/supervaizer-go/internal/wire"
)

// The one way through POST /a2a (ARCHITECTURE.md):
//
//	transport key (middleware) → size limit → JSON-RPC envelope → method →
//	request model → drop client workspace_authorization → workspace token
//	(unless bootstrap) → handler lookup → handler → result validated →
//	SSE publish (actions) → response
//
// Each step has one error, mapped once to its JSON-RPC code. The body is parsed
// once, into a tape (internal/wire): the envelope, the request model and a
// typed handler's input are read from it; nothing re-parses the body.

// maxInitialBody caps the buffer reserved from Content-Length before reading.
const maxInitialBody = 64 << 10

// EventEffect is the name of the SSE event published after each successful action.
const EventEffect = "supervaizer.effect"

func (s *Server) serveA2A(w http.ResponseWriter, r *http.Request) {
	s.inflight.Add(1)
	defer s.inflight.Done()
	if s.closing.Load() {
		writeDetail(w, http.StatusServiceUnavailable, "server is shutting down")
		return
	}
	if s.studio != nil && !s.started.Load() {
		// Attached to Studio: without the handshake no token could verify.
		writeDetail(w, http.StatusServiceUnavailable, "controller not started: Server.Start has not registered it with Studio")
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "" && !isJSONContentType(ct) {
		writeDetail(w, http.StatusUnsupportedMediaType, "Content-Type must be application/json")
		return
	}
	body, ok := s.readBody(w, r)
	if !ok {
		return
	}
	// The body is parsed once, into t: the envelope, the request model and
	// the typed input are all read from it.
	t := wire.Get()
	defer wire.Put(t)
	req, rpcErr := jsonrpc.Decode(t, body)
	if rpcErr != nil {
		if s.obs != nil {
			s.noteCode(r.Context(), req.Method, Code(rpcErr.Code))
		}
		s.writeRPCError(w, req.ID, newError(Code(rpcErr.Code), rpcErr.Message, rpcErr.Data))
		return
	}
	switch req.Method {
	case a2atask.MethodMessageStream, a2atask.MethodTasksResubscribe, a2atask.MethodSendStreamingMessage, a2atask.MethodSubscribeToTask:
		if s.obs != nil {
			s.noteCode(r.Context(), req.Method, 0) // the call ends with its stream
		}
		s.a2aStream(w, r, t, req) // text/event-stream (a2atasks_stream.go)
		return
	}
	// The result is encoded (once) straight after the response's prefix.
	buf := getResponseBuffer()
	defer putResponseBuffer(buf)
	*buf = jsonrpc.AppendResultPrefix((*buf)[:0], req.ID)
	var err *Error
	switch req.Method {
	case MethodActionInvoke:
		*buf, err = s.invokeAction(r, t, req.ParamsNode, *buf)
	case MethodSurfaceLoad:
		*buf, err = s.loadSurface(r, t, req.ParamsNode, *buf)
	case a2atask.MethodMessageSend, a2atask.MethodSendMessage, a2atask.MethodTasksGet, a2atask.MethodGetTask,
		a2atask.MethodTasksCancel, a2atask.MethodCancelTask: // the A2A task methods of both bindings (a2atasks.go)
		*buf, err = s.a2aMethod(r, t, req.Method, req.ParamsNode, *buf)
	default:
		if err = a2aVersionError(r); err == nil {
			err = methodNotFound(req.Method)
		}
	}
	if s.obs != nil {
		var code Code
		if err != nil {
			code = err.code
		}
		s.noteCode(r.Context(), req.Method, code)
	}
	if err != nil {
		s.writeRPCError(w, req.ID, err)
		return
	}
	w.Header()["Content-Type"] = headerJSON
	*buf = append(*buf, '}')
	_, _ = w.Write(*buf) // Write does not retain its argument
}

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

func isJSONContentType(ct string) bool {
	if ct == "application/json" { // the usual value, without parsing
		return true
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	return mt == "application/json" || (strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"))
}

// readBody reads the body within the size limit; a larger body is answered 413
// (before it is read when Content-Length announces it).
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	limit := s.cfg.maxBody
	if r.ContentLength > limit {
		writeDetail(w, http.StatusRequestEntityTooLarge, "Request body too large")
		return nil, false
	}
	// One allocation when Content-Length is right: the spare byte lets the
	// read that reports EOF happen without growing the buffer.
	// Size the buffer from Content-Length, but never reserve more than
	// maxInitialBody up front: a client announcing a large body must send it
	// before it costs that much memory.
	size := r.ContentLength
	if size < 0 {
		size = 512
	}
	size = min(size, maxInitialBody)
	buf := make([]byte, 0, size+1)
	body := http.MaxBytesReader(w, r.Body, limit)
	for {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, 512)
		}
		n, err := body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			return buf, true
		}
		if err != nil {
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) {
				writeDetail(w, http.StatusRequestEntityTooLarge, "Request body too large")
			} else {
				writeDetail(w, http.StatusBadRequest, "Could not read the request body")
			}
			return nil, false
		}
	}
}

// decodeParams decodes the request model m from the params at node of t
// (-1: absent, read as {}): params[key] when that key is present, else params
// itself (both the wrapped and the flat form are valid). It returns the node
// of the request, -1 when it is not on t.
func (s *Server) decodeParams(m contracts.Model, t *wire.Tape, node int32, key string, dst any) (int32, error) {
	if node < 0 {
		return -1, s.validator.Decode(m, []byte("{}"), dst)
	}
	if inner, ok := t.Member(node, []byte(key)); ok {
		node = inner
	}
	return node, s.validator.DecodeAt(m, t, node, dst)
}

// invokeAction serves supervaizer/action.invoke: it appends the result to dst.
func (s *Server) invokeAction(r *http.Request, t *wire.Tape, params int32, dst []byte) ([]byte, *Error) {
	var req contracts.ActionRequest
	node, err := s.decodeParams(contracts.ModelActionRequest, t, params, "action_request", &req)
	if err != nil {
		return dst, requestError("Invalid Supervaizer v2 action request", err)
	}
	input := int32(-1)
	if node >= 0 {
		if in, ok := t.Member(node, []byte("input")); ok {
			input = in
		}
	}
	return s.invoke(r, &req, t, input, nil, dst)
}

// invoke runs a decoded action request through the rest of the pipeline
// (admission, handler lookup, idempotency layer, handler, result validation,
// task view, SSE publish) and appends the result to dst. The input of req is
// at node input of t when input >= 0 (the body's one parse). call is nil
// for action.invoke; for an A2A call it completes the request from the
// verified workspace before the handler runs (the mapping's actor) and
// receives what the task view read from the result (a2atasks.go).
//
// supervaizer/action.invoke and the A2A task methods (a2atasks.go) both come
// through here: every check applies to both, once.
func (s *Server) invoke(r *http.Request, req *ActionRequest, t *wire.Tape, input int32, a2a *a2aInvocation, dst []byte) ([]byte, *Error) {
	if s.obs != nil {
		s.noteCall(r.Context(), "action", req.AgentSlug, req.Action, req.Workspace.ID) // observer.go
	}
	ctx, ws, rpcErr := s.admit(r, isBootstrapAction(req.Action), req.Workspace, req.AgentSlug, MethodActionInvoke, req.Action)
	if rpcErr != nil {
		return dst, rpcErr
	}
	req.WorkspaceAuthorization = ws // never the client's
	if s.obs != nil && ws != nil {
		s.noteCall(ctx, "action", req.AgentSlug, req.Action, ws.WorkspaceID)
	}
	if s.bindingMissing(req.AgentSlug, ws) { // a business result, before the handler (auth.go)
		raw, err := contracts.Marshal(Fail(contracts.ErrorWorkspaceBindingMissing, "%s", bindingMissingMessage(req.AgentSlug)))
		if err != nil {
			return dst, failedWith(req, err)
		}
		return append(dst, raw...), nil
	}
	if a2a != nil {
		a2aActor(req, ws)
	}
	a := s.bySlug[req.AgentSlug]
	var h ActionHandler
	if a != nil {
		h = a.action(req.Action)
	}
	if h == nil {
		return dst, newError(CodeActionNotRegistered, "Action handler not registered: "+req.Action,
			map[string]any{"agent_slug": req.AgentSlug, "action": req.Action})
	}
	call := withCall(ctx, a, ws)
	if input >= 0 {
		call.tape = t
		call.inputNode = input
	}
	defer func() { call.tape = nil }() // t goes back to its pool after this call
	ctx = call
	start := time.Now()
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
			raw, _, _, err := s.runAction(ctx, h, req, true, nil, nil)
			ran = err == nil
			return raw, err
		})
		dst = append(dst, raw...)
		if s.obs != nil && rpcErr == nil {
			s.noteIdempotency(ctx, ran, raw) // observer.go
		}
	} else {
		dst, effects, parsed, rpcErr = s.runAction(ctx, h, req, false, dst, rt)
		ran = rpcErr == nil
	}
	if rpcErr != nil {
		return dst[:n], rpcErr
	}
	if ran { // a replayed answer never brings an older job state back
		var tape *wire.Tape
		if parsed {
			tape = rt
		}
		s.tasks.observe(ctx, req, dst[n:], tape, a2a)
	}
	s.publishEffects(ctx, req, dst[n:], effects)
	s.logger.LogAttrs(ctx, slog.LevelDebug, "action invoked", slog.String("agent_slug", req.AgentSlug),
		slog.String("action", req.Action), slog.String("request_id", req.RequestID), slog.Duration("elapsed", time.Since(start)))
	return dst, nil
}

// actionFailed is the -32603 error of a failed action handler.
func actionFailed(req *ActionRequest) *Error {
	return newError(CodeInternalError, "Action handler failed", map[string]any{"agent_slug": req.AgentSlug, "action": req.Action})
}

// surfaceFailed is the -32603 error of a failed surface handler.
func surfaceFailed(req *SurfaceRequest) *Error {
	return newError(CodeInternalError, "Surface handler failed", map[string]any{"agent_slug": req.AgentSlug, "surface": req.Surface})
}

// runAction calls the handler, validates its result and appends it to dst.
// strict marks the result as the idempotency layer's
// (replay_safety.strictly_idempotent_response).
//
// effects is the result's "effects" value in dst as the validation read it
// (nil when it did not). When t is not nil, parsed reports that it holds
// the tape of the appended result ([validate.Validator.AppendResultTape]).
func (s *Server) runAction(ctx context.Context, h ActionHandler, req *ActionRequest, strict bool, dst []byte, t *wire.Tape) (_, effects []byte, parsed bool, _ *Error) {
	var res *ActionResult
	var err error
	if s.obs != nil {
		hctx, end := s.startHandler(ctx) // observer.go
		res, err = callAction(hctx, h, req)
		end(err)
	} else {
		res, err = callAction(ctx, h, req)
	}
	if err != nil {
		if e, ok := isInputError(err); ok {
			return dst, nil, false, e
		}
		s.handlerFailed(ctx, "action", req.AgentSlug, req.Action, req.RequestID, err)
		return dst, nil, false, actionFailed(req)
	}
	if res == nil {
		s.handlerFailed(ctx, "action", req.AgentSlug, req.Action, req.RequestID, errors.New("handler returned no result"))
		return dst, nil, false, actionFailed(req)
	}
	if strict {
		markStrict(res, req.IdempotencyKey)
	}
	if dst == nil {
		dst = make([]byte, 0, 1024)
	}
	dst, effects, parsed, verr := s.appendResult(dst, res, t)
	if verr != nil {
		s.handlerFailed(ctx, "action", req.AgentSlug, req.Action, req.RequestID, fmt.Errorf("invalid result: %w", verr))
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
// is verified with the scopes [method, id] before any handler lookup. The
// caller puts the returned verified workspace in the handler's context
// (withCall); the client's workspace_authorization is never used.
func (s *Server) admit(r *http.Request, bootstrap bool, ws contracts.WorkspaceRef, agentSlug, method, id string) (context.Context, *contracts.VerifiedWorkspaceContext, *Error) {
	ctx := r.Context()
	if bootstrap {
		return ctx, nil, nil
	}
	vc, err := s.authorize(ctx, r, ws, agentSlug, []string{method, id})
	if err != nil {
		return nil, nil, err
	}
	return ctx, vc, nil
}

// loadSurface serves supervaizer/surface.load: it appends the result to dst.
func (s *Server) loadSurface(r *http.Request, t *wire.Tape, params int32, dst []byte) ([]byte, *Error) {
	var req contracts.SurfaceRequest
	if _, err := s.decodeParams(contracts.ModelSurfaceRequest, t, params, "surface_request", &req); err != nil {
		return dst, requestError("Invalid Supervaizer v2 surface request", err)
	}
	if s.obs != nil {
		s.noteCall(r.Context(), "surface", req.AgentSlug, req.Surface, req.Workspace.ID) // observer.go
	}
	ctx, ws, rpcErr := s.admit(r, isBootstrapSurface(req.Surface), req.Workspace, req.AgentSlug, MethodSurfaceLoad, req.Surface)
	if rpcErr != nil {
		return dst, rpcErr
	}
	req.WorkspaceAuthorization = ws // never the client's
	if s.obs != nil && ws != nil {
		s.noteCall(ctx, "surface", req.AgentSlug, req.Surface, ws.WorkspaceID)
	}
	if s.bindingMissing(req.AgentSlug, ws) { // auth.go
		return dst, authFailure(contracts.ErrorWorkspaceBindingMissing, bindingMissingMessage(req.AgentSlug))
	}
	a := s.bySlug[req.AgentSlug]
	var h SurfaceHandler
	if a != nil {
		h = a.surface(req.Surface)
	}
	if h == nil {
		return dst, newError(CodeSurfaceNotRegistered, "Surface handler not registered: "+req.Surface,
			map[string]any{"agent_slug": req.AgentSlug, "surface": req.Surface})
	}
	ctx = withCall(ctx, a, ws)
	var res *SurfaceResult
	var err error
	if s.obs != nil {
		hctx, end := s.startHandler(ctx) // observer.go
		res, err = callSurface(hctx, h, &req)
		end(err)
	} else {
		res, err = callSurface(ctx, h, &req)
	}
	if err == nil && res == nil {
		err = errors.New("handler returned no result")
	}
	if err != nil {
		s.handlerFailed(ctx, "surface", req.AgentSlug, req.Surface, req.RequestID, err)
		return dst, surfaceFailed(&req)
	}
	dst, verr := s.appendSurfaceResult(dst, res)
	if verr != nil {
		s.handlerFailed(ctx, "surface", req.AgentSlug, req.Surface, req.RequestID, fmt.Errorf("invalid result: %w", verr))
		return dst, surfaceFailed(&req)
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

func (s *Server) handlerFailed(ctx context.Context, kind, slug, id, requestID string, err error) {
	s.logger.LogAttrs(ctx, slog.LevelError, kind+" handler failed", slog.String("agent_slug", slug),
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
func (s *Server) appendResult(dst []byte, res *ActionResult, t *wire.Tape) (out, effects []byte, parsed bool, err error) {
	n := len(dst)
	defer func() {
		if v := recover(); v != nil {
			out, effects, parsed, err = dst[:n], nil, false, &panicError{value: v, stack: debug.Stack()}
		}
	}()
	return s.validator.AppendResultTape(dst, res, t)
}

// appendSurfaceResult is appendResult for a surface result.
func (s *Server) appendSurfaceResult(dst []byte, res *SurfaceResult) (out []byte, err error) {
	n := len(dst)
	defer func() {
		if v := recover(); v != nil {
			out, err = dst[:n], &panicError{value: v, stack: debug.Stack()}
		}
	}()
	return s.validator.AppendValue(dst, contracts.ModelSurfaceResult, res)
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

func (s *Server) writeRPCError(w http.ResponseWriter, id json.RawMessage, e *Error) {
	out, err := jsonrpc.AppendError(nil, id, &jsonrpc.Error{Code: int(e.code), Message: e.message, Data: e.data})
	if err != nil {
		s.logger.Error("encode JSON-RPC error", slog.Int("code", int(e.code)), slog.Any("error", err))
		out, _ = jsonrpc.AppendError(nil, id, &jsonrpc.Error{Code: int(CodeInternalError), Message: "Internal error"})
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}
