package supervaizer

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/supervaize/supervaizer-go/a2atask"
	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/internal/wire"
	"github.com/supervaize/supervaizer-go/internal/wsauth"
)

// The A2A task methods on POST /a2a (spec open-questions item 65). An A2A
// call is translated into the supervaizer/action.invoke request it maps to
// and run by invoke (dispatch.go), the one pipeline: admission and token
// scopes, handler lookup, input schema, idempotency record, result
// validation, task view and SSE publish all happen there, once. What is here
// is the translation: A2A params into an ActionRequest, the validated v2
// result back into a Task or a Message, and the task view (a2atasks_view.go).

// a2aStopAction is the action tasks/cancel maps to.
const a2aStopAction = "job.stop"

// a2aShape is the -32602 message of params that do not carry the one data
// part an action call is.
const a2aShape = `Invalid A2A message: params.message must carry exactly one data part {"kind":"data","data":{"action":"<action id>","input":{...}}}`

// a2aShape10 is a2aShape in the 1.0 binding, where a part is a oneof: a
// data part is the member data.
const a2aShape10 = `Invalid A2A message: params.message must carry exactly one data part {"data":{"action":"<action id>","input":{...}}}`

// a2aTaskShape is the -32602 message of tasks/get, tasks/cancel and
// tasks/resubscribe params without a task id (and of their 1.0 names).
const a2aTaskShape = `Invalid A2A task params: params must be {"id":"<task id>"}`

// a2aBinding is the A2A JSON-RPC binding a call speaks: its method names
// and the shapes of its params and answers. Everything else is one call:
// the same mapping, checks, task view and stream (docs/a2a.md, "Two
// bindings").
type a2aBinding uint8

const (
	// binding03 is A2A 0.3: message/send, …; objects tagged by kind,
	// lower-case task states, a Task or a Message as the result.
	binding03 a2aBinding = iota
	// binding10 is A2A 1.0: SendMessage, …; protobuf-JSON (a part is a
	// oneof member, TASK_STATE_* and ROLE_* enums, no kind), the result of
	// SendMessage and of each stream event wrapped in a member naming it.
	binding10
)

// shape is the -32602 message of message params that break the shape.
func (b a2aBinding) shape() string {
	if b == binding10 {
		return a2aShape10
	}
	return a2aShape
}

// key is the member under which obj holds the field named camel in JSON:
// camel, or in the 1.0 binding its proto field name snake when only that one
// is present (protobuf-JSON readers accept both). dup reports both present:
// read differently by different decoders, refused like a repeated key.
func (b a2aBinding) key(t *wire.Tape, obj int32, camel, snake string) (name string, dup bool) {
	if b != binding10 {
		return camel, false
	}
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

// a2aAgent is the agent an A2A call addresses: metadata, else the primary one.
func (s *Server) a2aAgent(meta a2aMeta) string {
	if meta.agentSlug != "" {
		return meta.agentSlug
	}
	return s.primary.slug
}

// a2aWorkspace is the workspace.id of an A2A call: metadata, else the
// workspace_id claim of the token (the verifier then checks the token as for
// any call), else in local mode "local".
func (s *Server) a2aWorkspace(c *Call, meta a2aMeta) string {
	if meta.workspaceID != "" {
		return meta.workspaceID
	}
	if ws := tokenWorkspace(c.r.Header.Get(HeaderWorkspaceAuthorization)); ws != "" {
		return ws
	}
	if s.localAuth {
		return "local"
	}
	return ""
}

// tokenWorkspace reads the workspace_id claim of a workspace token without
// verifying it: it only names the workspace the token is then verified
// against. "" when there is no readable claim.
func tokenWorkspace(header string) string {
	tok := wsauth.ExtractToken(header)
	if tok == "" {
		return ""
	}
	segs := strings.Split(tok, ".")
	if len(segs) != 3 {
		return ""
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(segs[1], "="))
	if err != nil {
		return ""
	}
	var claims struct {
		WorkspaceID string `json:"workspace_id"`
	}
	if json.Unmarshal(payload, &claims) != nil {
		return ""
	}
	return claims.WorkspaceID
}

// a2aDerive is prefix + the first 32 hex digits of SHA-256(workspace id +
// "\n" + message id).
func a2aDerive(prefix, workspaceID, messageID string) string {
	h := sha256.New()
	h.Write([]byte(workspaceID))
	h.Write([]byte{'\n'})
	h.Write([]byte(messageID))
	var sum [sha256.Size]byte
	return prefix + hex.EncodeToString(h.Sum(sum[:0])[:16])
}

// a2aInvocation is an A2A call on its way through invoke: the task view's
// reading of the result (read: the result had a job_state, view is its view).
type a2aInvocation struct {
	view jobView
	read bool
}

// a2aActor completes an A2A request from its verified workspace: the actor,
// unless metadata named one, is "a2a:" + the grant id ("local" in local mode).
func a2aActor(req *ActionRequest, ws *Workspace) {
	switch {
	case req.Actor.UserID != "":
	case ws == nil:
		req.Actor.UserID = "a2a"
	case ws.GrantID == contracts.LocalModeGrantID:
		req.Actor.UserID = "local"
	default:
		req.Actor.UserID = "a2a:" + ws.GrantID
	}
}

// a2aRequest builds the action.invoke request of an A2A call for action on
// job jobID of mission missionID.
func (s *Server) a2aRequest(c *Call, meta a2aMeta, requestID, action, jobID, missionID string) ActionRequest {
	surface := meta.surface
	if surface == "" {
		surface = contracts.DefaultStartAction // the surface Studio sends for job.sync and job.stop
	}
	return ActionRequest{
		RequestID: requestID, Actor: contracts.Actor{UserID: meta.userID},
		Workspace: contracts.WorkspaceRef{ID: s.a2aWorkspace(c, meta)},
		MissionID: missionID, AgentSlug: s.a2aAgent(meta), Surface: surface, Action: action,
		Input: emptyInput, JobID: jobID,
	}
}

// messageRequest maps message/send and message/stream onto action.invoke.
func (s *Server) messageRequest(c *Call, t *wire.Tape, m *a2aMessage) ActionRequest {
	req := s.a2aRequest(c, m.meta, m.messageID, m.action, m.taskID, m.contextID)
	req.IdempotencyKey = m.messageID
	if req.JobID == "" {
		req.JobID = a2aDerive("a2a-", req.Workspace.ID, m.messageID)
	}
	if req.MissionID == "" {
		req.MissionID = a2aDerive("a2a-ctx-", req.Workspace.ID, m.messageID)
	}
	if m.input >= 0 {
		req.Input = t.Raw(m.input) // on the tape: typed input is validated there
	}
	return req
}

// isJobAction reports whether an error result of the action is a failed
// task: the agent's start action, its job.sync and job.stop. (Declared
// scopes do not tell: an action's scope defaults to "job".)
func (s *Server) isJobAction(slug, action string) bool {
	a := s.bySlug[slug]
	if a == nil {
		return false
	}
	switch action {
	case contracts.DefaultStartAction, contracts.DefaultSyncAction, a2aStopAction:
		return true
	}
	return a.reg != nil && a.reg.JobPolicy.Setup != nil && action == a.reg.JobPolicy.Setup.StartAction
}

// hasAction reports whether the agent has a handler for the action.
func (s *Server) hasAction(slug, action string) bool {
	a := s.bySlug[slug]
	return a != nil && a.action(action) != nil
}

// a2aTaskParams is a decoded tasks/get, tasks/cancel or tasks/resubscribe
// params object (and their 1.0 names).
type a2aTaskParams struct {
	id   string
	meta a2aMeta
}

// decodeMessage decodes the params of a message method of binding b, once
// the A2A-Version header is one the bindings speak.
func (b a2aBinding) decodeMessage(_ *Server, c *Call) (a2aMessage, *Error) {
	if rpcErr := a2aVersionError(c.r); rpcErr != nil {
		return a2aMessage{input: -1}, rpcErr
	}
	return parseMessage(c.t, c.rpc.ParamsNode, b)
}

// decodeTask decodes the params of a task method, once the A2A-Version
// header is one the bindings speak.
func decodeTask(_ *Server, c *Call) (a2aTaskParams, *Error) {
	if rpcErr := a2aVersionError(c.r); rpcErr != nil {
		return a2aTaskParams{}, rpcErr
	}
	id, meta, rpcErr := parseTaskParams(c.t, c.rpc.ParamsNode)
	return a2aTaskParams{id: id, meta: meta}, rpcErr
}

// decodeNone decodes no params: the method answers an error (unsupported),
// once the A2A-Version header is one the bindings speak.
func decodeNone(_ *Server, c *Call) (struct{}, *Error) {
	return struct{}{}, a2aVersionError(c.r)
}

// send serves message/send (SendMessage in the 1.0 binding b): the
// mapped action.invoke call, its result as a Task or a Message, appended to
// dst.
func (b a2aBinding) send(s *Server, c *Call, m a2aMessage, dst []byte) ([]byte, *Error) {
	t := c.t
	req := s.messageRequest(c, t, &m)
	scratch := getResponseBuffer()
	defer putResponseBuffer(scratch)
	var call a2aInvocation
	raw, rpcErr := s.invoke(c, &req, t, m.input, &call, (*scratch)[:0])
	*scratch = raw
	if rpcErr != nil {
		return dst, rpcErr
	}
	if !call.read { // a replayed answer, or a result without job_state
		jobAction := s.isJobAction(req.AgentSlug, req.Action)
		if !m.blocking {
			return appendAnswer(dst, &req, raw, jobAction, b), nil
		}
		v, isTask := answerView(&req, raw, jobAction)
		if !isTask || v.state == nil {
			return appendAnswer(dst, &req, raw, jobAction, b), nil
		}
		call.view = v
	}
	if m.blocking && !call.view.taskState().Final() {
		call.view = s.awaitFinal(c, &req, m.meta, call.view)
	}
	return appendTaskResult(dst, &call.view, b), nil
}

// awaitFinal waits, up to the blocking bound, until the task view shows the
// job terminal or input-required. It refreshes through the agent's job.sync
// when it has one (the token must carry that scope), and reads the view in
// the store otherwise, which results and effects on any instance update.
func (s *Server) awaitFinal(c *Call, req *ActionRequest, meta a2aMeta, v jobView) jobView {
	ctx, cancel := context.WithTimeout(c.r.Context(), s.a2aBlocking())
	defer cancel()
	key := taskKey(recordWorkspace(req), req.AgentSlug, v.id)
	sync := s.hasAction(req.AgentSlug, contracts.DefaultSyncAction)
	tick := time.NewTicker(a2aPollInterval)
	defer tick.Stop()
	for !v.taskState().Final() {
		changed := s.tasks.watch(key)
		if nv, found, err := s.tasks.loadKey(ctx, key); err == nil && found {
			v = nv
		}
		if v.taskState().Final() {
			s.tasks.unwatch(key, changed)
			break
		}
		select {
		case <-changed:
		case <-tick.C:
			if sync {
				if nv, ok := s.a2aSync(c, meta, v); ok {
					v = nv
				} else {
					sync = false // the token cannot refresh: wait for the view
				}
			}
		case <-ctx.Done():
			s.tasks.unwatch(key, changed)
			return v
		}
		s.tasks.unwatch(key, changed)
	}
	return v
}

// a2aPollInterval is how often a waiting call refreshes a job.
const a2aPollInterval = 500 * time.Millisecond

// a2aSync refreshes the view of a job through the agent's job.sync, as the
// same caller (the same token and metadata). ok is false when the call
// failed; the failure is not the caller's answer.
func (s *Server) a2aSync(c *Call, meta a2aMeta, v jobView) (jobView, bool) {
	req := s.a2aRequest(c, meta, "a2a-sync-"+uuid.NewString(), contracts.DefaultSyncAction, v.id, v.mission)
	var call a2aInvocation
	raw, rpcErr := s.invoke(c, &req, nil, -1, &call, nil)
	if rpcErr != nil {
		return v, false
	}
	if call.read {
		return call.view, true
	}
	nv, isTask := answerView(&req, raw, true)
	if !isTask || nv.state == nil {
		return v, false
	}
	return nv, true
}

// a2aAuthorize admits a tasks/* call: the scopes of action.invoke for the
// action when the agent has it, action.invoke alone otherwise.
func (s *Server) a2aAuthorize(c *Call, meta a2aMeta, action string) (*Workspace, string, *Error) {
	slug := s.a2aAgent(meta)
	scopes := []string{MethodActionInvoke}
	if s.hasAction(slug, action) {
		scopes = append(scopes, action)
	}
	vc, rpcErr := s.authorize(c.r.Context(), c.r, contracts.WorkspaceRef{ID: s.a2aWorkspace(c, meta)}, slug, scopes)
	return vc, slug, rpcErr
}

// taskNotFound is the -32001 answer for a task unknown in the caller's
// workspace (a task of another workspace included: never a leak).
func taskNotFound(id string) *Error {
	return newError(a2atask.CodeTaskNotFound, "Task not found", map[string]any{"id": id})
}

// a2aTask reads the view of task id in the caller's verified workspace.
func (s *Server) a2aTask(ctx context.Context, vc *Workspace, slug, id string) (jobView, *Error) {
	v, found, err := s.tasks.loadKey(ctx, taskKey(vc.WorkspaceID, slug, id))
	if err != nil {
		s.logger.ErrorContext(ctx, "a2a task view: read failed", "error", err)
		return v, newError(CodeInternalError, "Task view unavailable", nil)
	}
	if !found {
		return v, taskNotFound(id)
	}
	return v, nil
}

// get serves tasks/get (GetTask): the job's last validated job_state,
// refreshed through job.sync when the agent has it.
func (b a2aBinding) get(s *Server, c *Call, p a2aTaskParams, dst []byte) ([]byte, *Error) {
	id, meta := p.id, p.meta
	vc, slug, rpcErr := s.a2aAuthorize(c, meta, contracts.DefaultSyncAction)
	if rpcErr != nil {
		return dst, rpcErr
	}
	v, rpcErr := s.a2aTask(c.r.Context(), vc, slug, id)
	if rpcErr != nil {
		return dst, rpcErr
	}
	if s.hasAction(slug, contracts.DefaultSyncAction) {
		if nv, ok := s.a2aSync(c, meta, v); ok {
			v = nv
		}
	}
	return appendTask(dst, &v, nil, b), nil
}

// cancel serves tasks/cancel (CancelTask): the agent's job.stop on the
// job.
func (b a2aBinding) cancel(s *Server, c *Call, p a2aTaskParams, dst []byte) ([]byte, *Error) {
	id, meta := p.id, p.meta
	vc, slug, rpcErr := s.a2aAuthorize(c, meta, a2aStopAction)
	if rpcErr != nil {
		return dst, rpcErr
	}
	v, rpcErr := s.a2aTask(c.r.Context(), vc, slug, id)
	if rpcErr != nil {
		return dst, rpcErr
	}
	if !s.hasAction(slug, a2aStopAction) {
		return dst, notCancelable(id, "the agent has no "+a2aStopAction+" action")
	}
	if v.taskState().Terminal() {
		return dst, notCancelable(id, "the task is "+string(v.taskState()))
	}
	req := s.a2aRequest(c, meta, "a2a-cancel-"+uuid.NewString(), a2aStopAction, v.id, v.mission)
	var call a2aInvocation
	raw, rpcErr := s.invoke(c, &req, nil, -1, &call, nil)
	if rpcErr != nil {
		return dst, rpcErr
	}
	if status, _ := resultStatus(raw); status == contracts.StatusError {
		return dst, notCancelable(id, "the agent refused to stop the job")
	}
	if call.read {
		v = call.view
	} else if nv, found, err := s.tasks.loadKey(c.r.Context(), taskKey(vc.WorkspaceID, slug, id)); err == nil && found {
		v = nv
	}
	return appendTask(dst, &v, nil, b), nil
}

// notCancelable is the -32002 answer of tasks/cancel.
func notCancelable(id, why string) *Error {
	return newError(a2atask.CodeTaskNotCancelable, "Task cannot be canceled: "+why, map[string]any{"id": id})
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
