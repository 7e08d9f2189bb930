package a2abind

import (
	"bytes"
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
	"github.com/supervaize/supervaizer-go/errcode"
	"github.com/supervaize/supervaizer-go/internal/jsonrpc"
	"github.com/supervaize/supervaizer-go/internal/taskview"
	"github.com/supervaize/supervaizer-go/internal/wsauth"
)

// The calls of both bindings: message/send, tasks/get and tasks/cancel
// (SendMessage, GetTask, CancelTask), each mapped onto action.invoke.

// stopAction is the action tasks/cancel maps to.
const stopAction = "job.stop"

// agent is the agent an A2A call addresses: metadata, else the primary one.
func agent(p Pipeline, m meta) string {
	if m.agentSlug != "" {
		return m.agentSlug
	}
	return p.PrimaryAgent()
}

// workspace is the workspace.id of an A2A call: metadata, else the
// workspace_id claim of the token (the verifier then checks the token as for
// any call), else in local mode "local".
func workspace(p Pipeline, c *Call, m meta) string {
	if m.workspaceID != "" {
		return m.workspaceID
	}
	if ws := tokenWorkspace(c.R.Header.Get(wsauth.HeaderName)); ws != "" {
		return ws
	}
	if p.LocalAuth() {
		return "local"
	}
	return ""
}

// TokenWorkspace is the workspace a call names: the workspace_id claim of
// its workspace token (verified afterwards), else "local" in local mode.
func TokenWorkspace(p Pipeline, c *Call) string { return workspace(p, c, meta{}) }

// tokenWorkspace reads the workspace_id claim of a workspace token without
// verifying it: it only names the workspace the token is then verified
// against. "" when there is no readable claim.
func tokenWorkspace(header string) string {
	var claims struct {
		WorkspaceID string `json:"workspace_id"`
	}
	if !tokenClaims(header, &claims) {
		return ""
	}
	return claims.WorkspaceID
}

// tokenClaims decodes the payload of the workspace token in header into
// claims, unverified; false when there is no readable payload.
func tokenClaims(header string, claims any) bool {
	tok := wsauth.ExtractToken(header)
	if tok == "" {
		return false
	}
	segs := strings.Split(tok, ".")
	if len(segs) != 3 {
		return false
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(segs[1], "="))
	if err != nil {
		return false
	}
	return json.Unmarshal(payload, claims) == nil
}

// derive is prefix + the first 32 hex digits of SHA-256(workspace id +
// "\n" + message id).
func derive(prefix, workspaceID, messageID string) string {
	h := sha256.New()
	h.Write([]byte(workspaceID))
	h.Write([]byte{'\n'})
	h.Write([]byte(messageID))
	var sum [sha256.Size]byte
	return prefix + hex.EncodeToString(h.Sum(sum[:0])[:16])
}

// emptyInput is the input of a call without one; never modified.
var emptyInput = json.RawMessage("{}")

// request builds the action.invoke request of an A2A call for action on
// job jobID of mission missionID.
func request(p Pipeline, c *Call, m meta, requestID, action, jobID, missionID string) contracts.ActionRequest {
	surface := m.surface
	if surface == "" {
		surface = contracts.DefaultStartAction // the surface Studio sends for job.sync and job.stop
	}
	return contracts.ActionRequest{
		RequestID: requestID, Actor: contracts.Actor{UserID: m.userID},
		Workspace: contracts.WorkspaceRef{ID: workspace(p, c, m)},
		MissionID: missionID, AgentSlug: agent(p, m), Surface: surface, Action: action,
		Input: emptyInput, JobID: jobID,
	}
}

// messageRequest maps message/send and message/stream onto action.invoke.
func messageRequest(p Pipeline, c *Call, m *message) contracts.ActionRequest {
	req := request(p, c, m.meta, m.messageID, m.action, m.taskID, m.contextID)
	req.IdempotencyKey = m.messageID
	if req.JobID == "" {
		req.JobID = derive("a2a-", req.Workspace.ID, m.messageID)
	}
	if req.MissionID == "" {
		req.MissionID = derive("a2a-ctx-", req.Workspace.ID, m.messageID)
	}
	if m.input >= 0 {
		req.Input = c.T.Raw(m.input) // on the tape: typed input is validated there
	}
	return req
}

// Actor completes an A2A request from its verified workspace (ws nil: not
// verified) before its handler runs: the actor, unless metadata named one,
// is "a2a:" + the grant id ("local" in local mode).
func Actor(req *contracts.ActionRequest, ws *contracts.VerifiedWorkspaceContext) {
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

// recordWorkspace is the workspace a request's record belongs to: the
// verified one, else the request's workspace.id.
func recordWorkspace(req *contracts.ActionRequest) string {
	if req.WorkspaceAuthorization != nil {
		return req.WorkspaceAuthorization.WorkspaceID
	}
	return req.Workspace.ID
}

// sendMethod serves message/send (SendMessage): the mapped action.invoke
// call, its result as a Task or a Message, appended to dst.
func sendMethod(b binding) func(p Pipeline, c *Call, m message, dst []byte) ([]byte, *jsonrpc.Error) {
	return func(p Pipeline, c *Call, m message, dst []byte) ([]byte, *jsonrpc.Error) {
		if m.conversation {
			if m.meta.supervisor != nil {
				return dst, unsupervisable()
			}
			return converse(p, c, &m, b, dst)
		}
		req := messageRequest(p, c, &m)
		done := func(string) {}
		if m.meta.supervisor != nil {
			ctx, d, rpcErr := p.Supervised(c, req.AgentSlug, m.meta.supervisor, m.messageID, req.Action, "")
			if rpcErr != nil {
				return dst, rpcErr
			}
			c.R, done = c.R.WithContext(ctx), d
		}
		scratch := getBuffer()
		defer putBuffer(scratch)
		raw, v, read, rpcErr := p.Invoke(c, &req, m.input, (*scratch)[:0])
		*scratch = raw
		if rpcErr != nil {
			done("")
			return dst, rpcErr
		}
		done(req.JobID)
		if !read { // a replayed answer, or a result without job_state
			jobAction := p.IsJobAction(req.AgentSlug, req.Action)
			if !m.blocking {
				return withUsage(appendAnswer(dst, &req, raw, jobAction, b), usageJSON(c), b), nil
			}
			av, isTask := answerView(&req, raw, jobAction)
			if !isTask || av.State == nil {
				return withUsage(appendAnswer(dst, &req, raw, jobAction, b), usageJSON(c), b), nil
			}
			v = av
		}
		usage := usageJSON(c) // the call's: awaitFinal does not invoke
		if m.blocking && !v.TaskState().Final() {
			v = awaitFinal(p, c, &req, m.meta, v)
		}
		return withUsage(b.appendTaskResult(dst, &v, nil), usage, b), nil
	}
}

// awaitFinal waits, up to the blocking bound, until the task view shows the
// job terminal or input-required. The task's one refresher (follow)
// refreshes it meanwhile; the wait reads the view when it changes.
func awaitFinal(p Pipeline, c *Call, req *contracts.ActionRequest, m meta, v taskview.Job) taskview.Job {
	ctx, cancel := context.WithTimeout(c.R.Context(), blockingBound(p))
	defer cancel()
	tasks := p.Tasks()
	key := taskview.Key(recordWorkspace(req), req.AgentSlug, v.ID)
	release := follow(p, c, m, req.WorkspaceAuthorization, key, v)
	defer release()
	for !v.TaskState().Final() {
		changed := tasks.Watch(key)
		if nv, found, err := tasks.Load(ctx, key); err == nil && found {
			v = nv
		}
		if v.TaskState().Final() {
			tasks.Unwatch(key, changed)
			break
		}
		select {
		case <-changed:
		case <-ctx.Done():
			tasks.Unwatch(key, changed)
			return v
		}
		tasks.Unwatch(key, changed)
	}
	return v
}

// blockingBound is the bound of a blocking call and of a stream.
func blockingBound(p Pipeline) time.Duration {
	if bound := p.Blocking(); bound > 0 {
		return bound
	}
	return a2atask.DefaultBlockingTimeout
}

// follow makes the call a follower of the task at key (spec item 72): the
// task's one refresher in this process refreshes it through the agent's
// job.sync in process, as the call's verified workspace vc and actor (its
// token need not carry job.sync's scope), or, without job.sync or a
// verified workspace, by reading the view in the store (a change made on
// another instance). release ends the follow.
func follow(p Pipeline, c *Call, m meta, vc *contracts.VerifiedWorkspaceContext, key string, v taskview.Job) (release func()) {
	tasks := p.Tasks()
	if vc == nil || !p.HasAction(agent(p, m), contracts.DefaultSyncAction) {
		var last []byte
		return tasks.Follow(key, func(ctx context.Context) (bool, bool) {
			nv, raw, changed := tasks.Poll(ctx, key, last)
			last = raw
			return changed, changed && nv.TaskState().Final()
		})
	}
	base := request(p, c, m, "", contracts.DefaultSyncAction, v.ID, v.Mission)
	prev := v
	return tasks.Follow(key, func(ctx context.Context) (bool, bool) {
		req := base
		req.RequestID = "a2a-sync-" + uuid.NewString()
		nv, read, rpcErr := p.Refresh(ctx, vc, &req)
		if rpcErr != nil || !read {
			return false, rpcErr != nil && ctx.Err() == nil // job.sync cannot refresh it: the view's events still come
		}
		changed := nv.Status != prev.Status || nv.Text != prev.Text || nv.Awaiting != prev.Awaiting || !bytes.Equal(nv.State, prev.State)
		prev = nv
		prev.State = bytes.Clone(nv.State)
		return changed, nv.TaskState().Final()
	})
}

// tokenExpiry is the exp claim of the call's workspace token, read without
// verifying it (the call's authorization verified it), zero when there is
// none.
func tokenExpiry(c *Call) time.Time {
	var claims struct {
		Exp *json.Number `json:"exp"`
	}
	if !tokenClaims(c.R.Header.Get(wsauth.HeaderName), &claims) || claims.Exp == nil {
		return time.Time{}
	}
	sec, err := claims.Exp.Float64()
	if err != nil {
		return time.Time{}
	}
	return time.Unix(int64(sec), 0)
}

// refresh refreshes the view of a job through the agent's job.sync, as the
// same caller (the same token and metadata). ok is false when the call
// failed; the failure is not the caller's answer.
func refresh(p Pipeline, c *Call, m meta, v taskview.Job) (taskview.Job, bool) {
	req := request(p, c, m, "a2a-sync-"+uuid.NewString(), contracts.DefaultSyncAction, v.ID, v.Mission)
	raw, nv, read, rpcErr := p.Invoke(c, &req, -1, nil)
	if rpcErr != nil {
		return v, false
	}
	if read {
		return nv, true
	}
	av, isTask := answerView(&req, raw, true)
	if !isTask || av.State == nil {
		return v, false
	}
	return av, true
}

// authorize admits a tasks/* call: the scopes of action.invoke for the
// action when the agent has it, action.invoke alone otherwise.
func authorize(p Pipeline, c *Call, m meta, action string) (*contracts.VerifiedWorkspaceContext, string, *jsonrpc.Error) {
	slug := agent(p, m)
	scopes := []string{jsonrpc.MethodActionInvoke}
	if p.HasAction(slug, action) {
		scopes = append(scopes, action)
	}
	vc, rpcErr := p.Authorize(c, workspace(p, c, m), slug, scopes)
	return vc, slug, rpcErr
}

// taskNotFound is the -32001 answer for a task unknown in the caller's
// workspace (a task of another workspace included: never a leak).
func taskNotFound(id string) *jsonrpc.Error {
	return &jsonrpc.Error{Code: errcode.TaskNotFound, Message: "Task not found", Data: map[string]any{"id": id}}
}

// task reads the view of task id in the caller's verified workspace.
func task(p Pipeline, ctx context.Context, vc *contracts.VerifiedWorkspaceContext, slug, id string) (taskview.Job, *jsonrpc.Error) {
	v, found, err := p.Tasks().Load(ctx, taskview.Key(vc.WorkspaceID, slug, id))
	if err != nil {
		p.Logger().ErrorContext(ctx, "a2a task view: read failed", "error", err)
		return v, &jsonrpc.Error{Code: errcode.InternalError, Message: "Task view unavailable"}
	}
	if !found {
		return v, taskNotFound(id)
	}
	return v, nil
}

// getMethod serves tasks/get (GetTask): the job's last validated
// job_state, refreshed through job.sync when the agent has it.
func getMethod(b binding) func(p Pipeline, c *Call, tp taskParams, dst []byte) ([]byte, *jsonrpc.Error) {
	return func(p Pipeline, c *Call, tp taskParams, dst []byte) ([]byte, *jsonrpc.Error) {
		vc, slug, rpcErr := authorize(p, c, tp.meta, contracts.DefaultSyncAction)
		if rpcErr != nil {
			return dst, rpcErr
		}
		v, rpcErr := task(p, c.R.Context(), vc, slug, tp.id)
		if rpcErr != nil {
			return dst, rpcErr
		}
		if p.HasAction(slug, contracts.DefaultSyncAction) {
			if nv, ok := refresh(p, c, tp.meta, v); ok {
				v = nv
			}
		}
		return withJobUsage(p, c, vc.WorkspaceID, slug, v.ID, b.appendTask(dst, &v, nil)), nil
	}
}

// cancelMethod serves tasks/cancel (CancelTask): the agent's job.stop on
// the job.
func cancelMethod(b binding) func(p Pipeline, c *Call, tp taskParams, dst []byte) ([]byte, *jsonrpc.Error) {
	return func(p Pipeline, c *Call, tp taskParams, dst []byte) ([]byte, *jsonrpc.Error) {
		id := tp.id
		var canceled string // the job id once canceled, for a supervised cancel's record
		vc, slug, rpcErr := authorize(p, c, tp.meta, stopAction)
		if rpcErr != nil {
			return dst, rpcErr
		}
		v, rpcErr := task(p, c.R.Context(), vc, slug, id)
		if rpcErr != nil {
			return dst, rpcErr
		}
		if !p.HasAction(slug, stopAction) {
			return dst, notCancelable(id, "the agent has no "+stopAction+" action")
		}
		done := func(string) {}
		if tp.meta.supervisor != nil {
			ctx, d, rpcErr := p.Supervised(c, slug, tp.meta.supervisor, "", stopAction, v.ID)
			if rpcErr != nil {
				return dst, rpcErr
			}
			c.R, done = c.R.WithContext(ctx), d
		}
		defer func() { done(canceled) }()
		if v.TaskState().Terminal() {
			return dst, notCancelable(id, "the task is "+string(v.TaskState()))
		}
		req := request(p, c, tp.meta, "a2a-cancel-"+uuid.NewString(), stopAction, v.ID, v.Mission)
		raw, nv, read, rpcErr := p.Invoke(c, &req, -1, nil)
		if rpcErr != nil {
			return dst, rpcErr
		}
		if status, _ := resultStatus(raw); status == contracts.StatusError {
			return dst, notCancelable(id, "the agent refused to stop the job")
		}
		if read {
			v = nv
		} else if lv, found, err := p.Tasks().Load(c.R.Context(), taskview.Key(vc.WorkspaceID, slug, id)); err == nil && found {
			v = lv
		}
		if state := v.TaskState(); state != a2atask.StateCanceled {
			// The job settled otherwise first (it completed, say): the cancel lost the race.
			return dst, notCancelable(id, "the task is "+string(state)+" after "+stopAction)
		}
		canceled = v.ID
		return b.appendTask(dst, &v, nil), nil
	}
}

// unsupervisable is the -32053 answer of a send carrying
// metadata.argus_supervisor where the lease is not checked (a stream, a
// conversation message): a send under a lease is a message/send with a
// data part, never one that bypasses the check.
func unsupervisable() *jsonrpc.Error {
	return &jsonrpc.Error{Code: errcode.PolicyRefused,
		Message: "Refused by the campaign policy: a send under a lease is a non-streaming message with a data part"}
}

// notCancelable is the -32002 answer of tasks/cancel.
func notCancelable(id, why string) *jsonrpc.Error {
	return &jsonrpc.Error{Code: errcode.TaskNotCancelable, Message: "Task cannot be canceled: " + why, Data: map[string]any{"id": id}}
}
