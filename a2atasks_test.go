package supervaizer_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	supervaizer "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/a2atask"
	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/errcode"
	"github.com/supervaize/supervaizer-go/store"
	svtest "github.com/supervaize/supervaizer-go/testing"
)

// derived is the id item 65 derives from a message id when the message
// names no task or context.
func derived(prefix, workspaceID, messageID string) string {
	sum := sha256.Sum256([]byte(workspaceID + "\n" + messageID))
	return prefix + hex.EncodeToString(sum[:])[:32]
}

// TestA2ATaskStates: every job status maps to its task state (item 65's
// table), a step awaiting a person makes a running job input-required, and
// the task carries the job id, the mission id, the status text and the
// validated job_state as its one artifact.
func TestA2ATaskStates(t *testing.T) {
	tests := []struct {
		status   string
		awaiting bool
		want     a2atask.TaskState
	}{
		{"pending", false, a2atask.StateSubmitted},
		{"queued", false, a2atask.StateSubmitted},
		{"submitted", false, a2atask.StateSubmitted},
		{"running", false, a2atask.StateWorking},
		{"active", false, a2atask.StateWorking},
		{"in_progress", false, a2atask.StateWorking},
		{"Running", false, a2atask.StateWorking},
		{"awaiting", false, a2atask.StateInputRequired},
		{"input_required", false, a2atask.StateInputRequired},
		{"active", true, a2atask.StateInputRequired},
		{"pending", true, a2atask.StateInputRequired},
		{"completed", false, a2atask.StateCompleted},
		{"done", false, a2atask.StateCompleted},
		{"completed", true, a2atask.StateCompleted},
		{"failed", false, a2atask.StateFailed},
		{"error", false, a2atask.StateFailed},
		{"stopped", false, a2atask.StateCanceled},
		{"cancelled", false, a2atask.StateCanceled},
		{"canceled", false, a2atask.StateCanceled},
		{"paused-by-vendor", false, a2atask.StateUnknown},
	}
	srv, _ := newTaskServer(t, supervaizer.WithLocalMode(true))
	for i, tt := range tests {
		t.Run(fmt.Sprintf("%s awaiting=%v", tt.status, tt.awaiting), func(t *testing.T) {
			msgID := fmt.Sprintf("msg-state-%d", i)
			input := map[string]any{"topic_id": "batteries", "status": tt.status, "awaiting": tt.awaiting, "text": "label " + tt.status}
			task := taskOf(t, callA2A(t, srv, a2aCall{method: a2atask.MethodMessageSend, params: taskMessage(msgID, "job.start", input, nil)}))
			assert.Equal(t, tt.want, task.Status.State)
			assert.Equal(t, derived("a2a-", "local", msgID), task.ID)
			assert.Equal(t, derived("a2a-ctx-", "local", msgID), task.ContextID)
			assert.NotNil(t, task.History)
			assert.Empty(t, task.History)
			require.NotNil(t, task.Status.Message)
			assert.Equal(t, "agent", task.Status.Message.Role)
			require.Len(t, task.Status.Message.Parts, 1)
			assert.Equal(t, "text", task.Status.Message.Parts[0].Kind)
			assert.Equal(t, "label "+tt.status, task.Status.Message.Parts[0].Text)
			require.Len(t, task.Artifacts, 1)
			art := task.Artifacts[0]
			assert.Equal(t, a2atask.ArtifactJobState, art.ArtifactID)
			require.Len(t, art.Parts, 1)
			assert.Equal(t, "data", art.Parts[0].Kind)
			var st supervaizer.JobState
			require.NoError(t, contracts.Unmarshal(art.Parts[0].Data, &st))
			assert.Equal(t, task.ID, st.Job.ID)
			assert.Equal(t, tt.status, st.Job.Status)
		})
	}
}

// TestA2AAnswers: how each kind of result is answered, and what the mapped
// action.invoke request carries.
func TestA2AAnswers(t *testing.T) {
	tests := []struct {
		name     string
		params   map[string]any
		check    func(t *testing.T, resp rpcResponse, req supervaizer.ActionRequest)
		wantKind string
	}{
		{
			name: "result without job_state is an agent message holding the v2 result", wantKind: "message",
			params: taskMessage("msg-help", "topic.help", nil, nil),
			check: func(t *testing.T, resp rpcResponse, req supervaizer.ActionRequest) {
				var msg a2atask.Message
				require.NoError(t, json.Unmarshal(resp.Result, &msg))
				assert.Equal(t, "agent", msg.Role)
				assert.Equal(t, "a2a-reply-msg-help", msg.MessageID)
				require.Len(t, msg.Parts, 1)
				assert.JSONEq(t, `{"status":"ok","effects":[{"type":"help.given","data":{"text":"pick a topic"}}]}`, string(msg.Parts[0].Data))
				assert.Equal(t, "{}", string(req.Input), "an absent input is {}")
			},
		},
		{
			name: "error result of a non-job action is a message holding the error", wantKind: "message",
			params: taskMessage("msg-note", "note.fail", map[string]any{}, nil),
			check: func(t *testing.T, resp rpcResponse, _ supervaizer.ActionRequest) {
				var msg a2atask.Message
				require.NoError(t, json.Unmarshal(resp.Result, &msg))
				var res supervaizer.ActionResult
				require.NoError(t, contracts.Unmarshal(msg.Parts[0].Data, &res))
				assert.Equal(t, "error", res.Status)
				require.Len(t, res.Errors, 1)
				assert.Equal(t, "note_refused", res.Errors[0].Code)
			},
		},
		{
			name: "error result of a job action is a failed task", wantKind: "task",
			params: taskMessage("msg-reject", "job.start", map[string]any{"topic_id": "reject"}, nil),
			check: func(t *testing.T, resp rpcResponse, req supervaizer.ActionRequest) {
				task := taskOf(t, resp)
				assert.Equal(t, a2atask.StateFailed, task.Status.State)
				assert.Equal(t, req.JobID, task.ID)
				assert.Empty(t, task.Artifacts)
				require.NotNil(t, task.Status.Message)
				assert.JSONEq(t, `{"code":"topic_rejected","message":"the topic \"reject\" is refused"}`, string(task.Status.Message.Parts[0].Data))
			},
		},
		{
			name: "task and context ids are the job and mission ids", wantKind: "task",
			params: taskMessage("msg-ids", "job.start", map[string]any{"topic_id": "t"}, func(_, m map[string]any) {
				m["taskId"], m["contextId"] = "job-given", "mission-given"
			}),
			check: func(t *testing.T, resp rpcResponse, req supervaizer.ActionRequest) {
				task := taskOf(t, resp)
				assert.Equal(t, "job-given", task.ID)
				assert.Equal(t, "mission-given", task.ContextID)
				assert.Equal(t, "job-given", req.JobID)
				assert.Equal(t, "mission-given", req.MissionID)
				assert.Equal(t, "msg-ids", req.RequestID)
				assert.Equal(t, "msg-ids", req.IdempotencyKey)
				assert.Equal(t, "local", req.Actor.UserID)
				assert.Equal(t, "local", req.Workspace.ID)
				assert.Equal(t, "job.start", req.Surface)
				assert.Equal(t, taskAgentSlug, req.AgentSlug)
			},
		},
		{
			name: "metadata names the workspace, user and surface", wantKind: "message",
			params: taskMessage("msg-meta", "note.echo", map[string]any{"k": 1}, func(p, _ map[string]any) {
				p["metadata"] = map[string]any{a2atask.MetaWorkspaceID: "ws-meta", a2atask.MetaUserID: "user-meta",
					a2atask.MetaSurface: "mission.overview", a2atask.MetaAgentSlug: taskAgentSlug, "other": 7}
			}),
			check: func(t *testing.T, _ rpcResponse, req supervaizer.ActionRequest) {
				assert.Equal(t, "ws-meta", req.Workspace.ID)
				assert.Equal(t, "user-meta", req.Actor.UserID)
				assert.Equal(t, "mission.overview", req.Surface)
				assert.JSONEq(t, `{"k":1}`, string(req.Input))
				assert.Equal(t, derived("a2a-", "ws-meta", "msg-meta"), req.JobID)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, jobs := newTaskServer(t, supervaizer.WithLocalMode(true))
			resp := callA2A(t, srv, a2aCall{method: a2atask.MethodMessageSend, params: tt.params})
			require.Nil(t, resp.Error, "error: %+v", resp.Error)
			var kind struct{ Kind string }
			require.NoError(t, json.Unmarshal(resp.Result, &kind))
			assert.Equal(t, tt.wantKind, kind.Kind)
			tt.check(t, resp, jobs.last())
		})
	}
}

// TestA2ARefusals: every refusal keeps its JSON-RPC code; -32602 names the
// data part an A2A message must carry.
func TestA2ARefusals(t *testing.T) {
	send := func(mod func(p, m map[string]any)) a2aCall {
		return a2aCall{method: a2atask.MethodMessageSend, params: taskMessage("msg-r", "job.start", map[string]any{"topic_id": "t"}, mod)}
	}
	parts := func(ps ...any) func(_, m map[string]any) { return func(_, m map[string]any) { m["parts"] = ps } }
	dataPart := func(data any) map[string]any { return map[string]any{"kind": "data", "data": data} }
	tests := []struct {
		name     string
		call     a2aCall
		code     int
		message  string // contained in the error message
		problem  string // data.errors[0].path, when set
		noAgent  bool   // the handler must not run
		stopless bool   // the agent declares no job.stop
	}{
		{name: "no parts", call: send(parts()), code: -32602, message: `{"kind":"data","data":{"action":`, problem: "/params/message/parts"},
		{name: "text part", call: send(parts(map[string]any{"kind": "text", "text": "start"})), code: -32602, message: `no conversation action for a text message; params.message must carry exactly one data part {"kind":"data","data":{"action":"<action id>","input":{...}}}`, problem: "/params/message/parts"},
		{name: "two data parts", call: send(parts(dataPart(map[string]any{"action": "job.start"}), dataPart(map[string]any{"action": "job.start"}))), code: -32602, problem: "/params/message/parts"},
		{name: "no action", call: send(parts(dataPart(map[string]any{"input": map[string]any{}}))), code: -32602, problem: "/params/message/parts/0/data/action"},
		{name: "blank action", call: send(parts(dataPart(map[string]any{"action": " "}))), code: -32602, problem: "/params/message/parts/0/data/action"},
		{name: "input not an object", call: send(parts(dataPart(map[string]any{"action": "job.start", "input": "x"}))), code: -32602, problem: "/params/message/parts/0/data/input"},
		{name: "other data key", call: send(parts(dataPart(map[string]any{"action": "job.start", "job_id": "j"}))), code: -32602, problem: "/params/message/parts/0/data/job_id"},
		{name: "data not an object", call: send(parts(dataPart([]any{1}))), code: -32602, problem: "/params/message/parts/0/data"},
		{name: "no message id", call: send(func(_, m map[string]any) { delete(m, "messageId") }), code: -32602, problem: "/params/message/messageId"},
		{name: "task id not a string", call: send(func(_, m map[string]any) { m["taskId"] = 5 }), code: -32602, problem: "/params/message/taskId"},
		{name: "blocking not a boolean", call: send(func(p, _ map[string]any) { p["configuration"] = map[string]any{"blocking": "yes"} }), code: -32602, problem: "/params/configuration/blocking"},
		{name: "metadata workspace not a string", call: send(func(p, _ map[string]any) { p["metadata"] = map[string]any{a2atask.MetaWorkspaceID: 1} }), code: -32602, problem: "/params/metadata/supervaizer~1workspace_id"},
		{name: "no message", call: a2aCall{method: a2atask.MethodMessageSend, params: map[string]any{}}, code: -32602, problem: "/params/message"},
		{name: "key given twice", call: a2aCall{raw: []byte(`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"messageId":"m","messageId":"n","parts":[{"kind":"data","data":{"action":"job.start"}}]}}}`)}, code: -32602, problem: "/params"},
		{name: "input breaks the action's schema", call: send(parts(dataPart(map[string]any{"action": "job.start", "input": map[string]any{"topic_id": 3}}))), code: -32602, message: "Invalid Supervaizer v2 action request", noAgent: true},
		{name: "undeclared action", call: send(parts(dataPart(map[string]any{"action": "job.nope"}))), code: int(errcode.ActionNotRegistered), noAgent: true},
		{name: "tasks/get of an unknown task", call: a2aCall{method: a2atask.MethodTasksGet, params: map[string]any{"id": "job-none"}}, code: int(errcode.TaskNotFound), noAgent: true},
		{name: "tasks/get without id", call: a2aCall{method: a2atask.MethodTasksGet, params: map[string]any{}}, code: -32602, message: `{"id":"<task id>"}`, problem: "/params/id"},
		{name: "tasks/cancel of an unknown task", call: a2aCall{method: a2atask.MethodTasksCancel, params: map[string]any{"id": "job-none"}}, code: int(errcode.TaskNotFound), noAgent: true},
		{name: "tasks/cancel without job.stop", call: a2aCall{method: a2atask.MethodTasksCancel, params: map[string]any{"id": "job-known"}}, code: int(errcode.TaskNotCancelable), stopless: true},
		{name: "push notification config set", call: a2aCall{method: "tasks/pushNotificationConfig/set", params: map[string]any{}}, code: int(errcode.PushNotificationNotSupported), noAgent: true},
		{name: "push notification config list", call: a2aCall{method: "tasks/pushNotificationConfig/list", params: map[string]any{}}, code: int(errcode.PushNotificationNotSupported), noAgent: true},
		{name: "other A2A method", call: a2aCall{method: "agent/getAuthenticatedExtendedCard", params: map[string]any{}}, code: -32601, noAgent: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			with := []string{"job.stop", "job.sync"}
			if tt.stopless {
				with = with[1:]
			}
			srv, jobs := serveTaskAgent(t, newTaskAgent(t, with...), supervaizer.WithLocalMode(true))
			if tt.stopless {
				startTask(t, srv, "job-known", "active", "")
			}
			seen := jobs.count()
			resp := callA2A(t, srv, tt.call)
			require.NotNil(t, resp.Error, "result: %s", resp.Result)
			assert.Equal(t, tt.code, resp.Error.Code, "error: %+v", resp.Error)
			assert.Contains(t, resp.Error.Message, tt.message)
			if tt.problem != "" {
				var data struct {
					Errors []struct{ Path string } `json:"errors"`
				}
				require.NoError(t, json.Unmarshal(resp.Error.Data, &data), "data: %s", resp.Error.Data)
				require.NotEmpty(t, data.Errors)
				assert.Equal(t, tt.problem, data.Errors[0].Path)
				if tt.call.method != a2atask.MethodTasksGet {
					assert.Contains(t, resp.Error.Message, `exactly one data part {"kind":"data","data":{"action":"<action id>","input":{...}}}`, "-32602 names the shape")
				}
			}
			if tt.noAgent || tt.problem != "" {
				assert.Equal(t, seen, jobs.count(), "no handler runs")
			}
		})
	}
}

// startTask starts job id with the status and status text through
// message/send and returns the task.
func startTask(tb testing.TB, srv http.Handler, id, status, token string) a2atask.Task {
	tb.Helper()
	params := taskMessage("start-"+id, "job.start", map[string]any{"topic_id": "t", "status": status}, func(_, m map[string]any) {
		m["taskId"], m["contextId"] = id, "mission-"+id
	})
	return taskOf(tb, callA2A(tb, srv, a2aCall{method: a2atask.MethodMessageSend, params: params, token: token}))
}

// TestA2ATokenScopes: an A2A call needs exactly the credentials of the
// action.invoke call it maps to; tasks/get and tasks/cancel need those of
// job.sync and job.stop; another workspace's task is not found.
func TestA2ATokenScopes(t *testing.T) {
	fake := svtest.NewFakeStudio(t)
	a := newTaskAgent(t, "job.stop", "job.sync")
	fake.Link(a, testStudioAgentID)
	srv, jobs := serveTaskAgent(t, a, supervaizer.WithWorkspaceAuth(testWorkspaceAuth(fake)))
	token := func(scopes ...string) string { return mintToken(fake, taskClaims(scopes...)) }
	all := token(supervaizer.MethodActionInvoke, "job.start", "job.sync", "job.stop")
	task := startTask(t, srv, "job-ws1", "active", all)
	assert.Equal(t, "a2a:grant-01", jobs.last().Actor.UserID, "the actor is the grant")
	assert.Equal(t, testWorkspaceID, jobs.last().Workspace.ID, "the workspace is the token's")
	other := mintToken(fake, func(c *svtest.Claims) {
		taskClaims(supervaizer.MethodActionInvoke, "job.sync", "job.stop")(c)
		c.WorkspaceID = "ws-2"
	})

	send := func(action string) any {
		return taskMessage("msg-"+action, action, map[string]any{"topic_id": "t"}, nil)
	}
	tests := []struct {
		name   string
		call   a2aCall
		code   int
		reason string // data.code of a -32030
	}{
		{name: "no token", call: a2aCall{method: a2atask.MethodMessageSend, params: send("job.start")}, code: -32030, reason: "workspace_authorization_missing"},
		{name: "message/send without the action scope", call: a2aCall{method: a2atask.MethodMessageSend, params: send("job.start"), token: token(supervaizer.MethodActionInvoke)}, code: -32030, reason: "workspace_authorization_missing_scope"},
		{name: "message/send without the method scope", call: a2aCall{method: a2atask.MethodMessageSend, params: send("job.start"), token: token("job.start")}, code: -32030, reason: "workspace_authorization_missing_scope"},
		{name: "message/send for another workspace than the token's", call: a2aCall{method: a2atask.MethodMessageSend, token: all,
			params: taskMessage("msg-ws", "job.start", map[string]any{"topic_id": "t"}, func(p, _ map[string]any) {
				p["metadata"] = map[string]any{a2atask.MetaWorkspaceID: "ws-2"}
			})}, code: -32030, reason: "workspace_authorization_wrong_workspace"},
		{name: "tasks/get without the job.sync scope", call: a2aCall{method: a2atask.MethodTasksGet, params: map[string]any{"id": task.ID}, token: token(supervaizer.MethodActionInvoke, "job.start")}, code: -32030, reason: "workspace_authorization_missing_scope"},
		{name: "tasks/get with the job.sync scope", call: a2aCall{method: a2atask.MethodTasksGet, params: map[string]any{"id": task.ID}, token: token(supervaizer.MethodActionInvoke, "job.sync")}},
		{name: "tasks/get of another workspace's task", call: a2aCall{method: a2atask.MethodTasksGet, params: map[string]any{"id": task.ID}, token: other}, code: int(errcode.TaskNotFound)},
		{name: "tasks/cancel without the job.stop scope", call: a2aCall{method: a2atask.MethodTasksCancel, params: map[string]any{"id": task.ID}, token: token(supervaizer.MethodActionInvoke, "job.sync")}, code: -32030, reason: "workspace_authorization_missing_scope"},
		{name: "tasks/cancel of another workspace's task", call: a2aCall{method: a2atask.MethodTasksCancel, params: map[string]any{"id": task.ID}, token: other}, code: int(errcode.TaskNotFound)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seen := jobs.count()
			resp := callA2A(t, srv, tt.call)
			if tt.code == 0 {
				got := taskOf(t, resp)
				assert.Equal(t, a2atask.StateWorking, got.Status.State)
				return
			}
			assertRefused(t, resp, tt.code, tt.reason)
			assert.Equal(t, seen, jobs.count(), "no handler runs")
		})
	}
}

// TestA2AReplay: the same messageId again is the same task, byte-identical,
// and the job is started once; another input under it is a conflict.
func TestA2AReplay(t *testing.T) {
	srv, jobs := newTaskServer(t, supervaizer.WithLocalMode(true))
	call := a2aCall{method: a2atask.MethodMessageSend, params: taskMessage("msg-once", "job.start", map[string]any{"topic_id": "t", "status": "active"}, nil)}
	first := postA2A(t, srv, call)
	second := postA2A(t, srv, call)
	require.Equal(t, http.StatusOK, first.Code)
	assert.Equal(t, first.Body.String(), second.Body.String())
	assert.Equal(t, 1, jobs.count(), "the job started once")
	taskOf(t, decodeRPC(t, first))

	conflict := taskOf(t, callA2A(t, srv, a2aCall{method: a2atask.MethodMessageSend, params: taskMessage("msg-once", "job.start", map[string]any{"topic_id": "other"}, nil)}))
	assert.Equal(t, a2atask.StateFailed, conflict.Status.State)
	assert.Contains(t, string(conflict.Status.Message.Parts[0].Data), `"code":"idempotency_conflict"`)
	assert.Equal(t, 1, jobs.count())
}

// TestA2AGetAndCancel: tasks/get refreshes through job.sync; tasks/cancel
// runs job.stop and a canceled task cannot be canceled again; a job.stop
// refusal is -32002.
func TestA2AGetAndCancel(t *testing.T) {
	srv, jobs := newTaskServer(t, supervaizer.WithLocalMode(true))
	task := startTask(t, srv, "job-1", "pending", "")
	assert.Equal(t, a2atask.StateSubmitted, task.Status.State)

	jobs.mu.Lock()
	jobs.jobs["job-1"].status = "running"
	jobs.mu.Unlock()
	got := taskOf(t, callA2A(t, srv, a2aCall{method: a2atask.MethodTasksGet, params: map[string]any{"id": "job-1"}}))
	assert.Equal(t, a2atask.StateWorking, got.Status.State, "refreshed through job.sync")
	assert.Equal(t, "job.sync", jobs.last().Action)
	assert.Equal(t, "mission-job-1", jobs.last().MissionID)

	canceled := taskOf(t, callA2A(t, srv, a2aCall{method: a2atask.MethodTasksCancel, params: map[string]any{"id": "job-1"}}))
	assert.Equal(t, a2atask.StateCanceled, canceled.Status.State)
	assert.Equal(t, "job.stop", jobs.last().Action)
	again := callA2A(t, srv, a2aCall{method: a2atask.MethodTasksCancel, params: map[string]any{"id": "job-1"}})
	require.NotNil(t, again.Error)
	assert.Equal(t, int(errcode.TaskNotCancelable), again.Error.Code)

	busy := taskOf(t, callA2A(t, srv, a2aCall{method: a2atask.MethodMessageSend, params: taskMessage("msg-busy", "job.start",
		map[string]any{"topic_id": "t", "status": "active"}, func(_, m map[string]any) { m["contextId"] = "unstoppable" })}))
	refused := callA2A(t, srv, a2aCall{method: a2atask.MethodTasksCancel, params: map[string]any{"id": busy.ID}})
	require.NotNil(t, refused.Error)
	assert.Equal(t, int(errcode.TaskNotCancelable), refused.Error.Code)
}

// TestA2ATaskViewSurvivesRestart: the view is in the configured store: a
// new process on the same bbolt file answers tasks/get, its agent knowing
// nothing of the job; effects without a job_state update the status.
func TestA2ATaskViewSurvivesRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "view.db")
	st, err := store.Open(path)
	require.NoError(t, err)
	srv, _ := newTaskServer(t, supervaizer.WithLocalMode(true), supervaizer.WithStore(st))
	startTask(t, srv, "job-r", "active", "")
	advance := taskMessage("msg-adv", "job.advance", map[string]any{"status": "completed", "effect": true}, func(_, m map[string]any) {
		m["taskId"], m["contextId"] = "job-r", "mission-job-r"
	})
	resp := callA2A(t, srv, a2aCall{method: a2atask.MethodMessageSend, params: advance})
	require.Nil(t, resp.Error)
	require.NoError(t, srv.Shutdown(context.Background()))
	require.NoError(t, st.Close())

	st2, err := store.Open(path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st2.Close() })
	srv2, jobs2 := newTaskServer(t, supervaizer.WithLocalMode(true), supervaizer.WithStore(st2))
	got := taskOf(t, callA2A(t, srv2, a2aCall{method: a2atask.MethodTasksGet, params: map[string]any{"id": "job-r"}}))
	assert.Equal(t, a2atask.StateCompleted, got.Status.State, "the effect's status, kept in the store")
	assert.Equal(t, "job-r", got.ID)
	assert.Equal(t, "mission-job-r", got.ContextID)
	require.NotNil(t, got.Status.Message)
	assert.Equal(t, "now completed", got.Status.Message.Parts[0].Text)
	require.Len(t, got.Artifacts, 1)
	assert.Equal(t, "job.sync", jobs2.last().Action, "the refresh was tried and failed: the view answers")

	other := callA2A(t, srv2, a2aCall{method: a2atask.MethodTasksGet, params: map[string]any{"id": "job-r",
		"metadata": map[string]any{a2atask.MetaWorkspaceID: "ws-other"}}})
	require.NotNil(t, other.Error)
	assert.Equal(t, int(errcode.TaskNotFound), other.Error.Code, "views are per workspace")
}

// TestA2ABlocking: configuration.blocking waits for a terminal or
// input-required state, within the bound.
func TestA2ABlocking(t *testing.T) {
	t.Run("until the job completes", func(t *testing.T) {
		srv, _ := newTaskServer(t, supervaizer.WithLocalMode(true))
		done := make(chan a2atask.Task, 1)
		go func() {
			params := taskMessage("msg-block", "job.start", map[string]any{"topic_id": "t", "status": "active"}, func(p, m map[string]any) {
				m["taskId"] = "job-b"
				p["configuration"] = map[string]any{"blocking": true}
			})
			w := postA2A(t, srv, a2aCall{method: a2atask.MethodMessageSend, params: params})
			var resp rpcResponse
			if json.Unmarshal(w.Body.Bytes(), &resp) == nil {
				var task a2atask.Task
				_ = json.Unmarshal(resp.Result, &task)
				done <- task
			}
			close(done)
		}()
		select {
		case task := <-done:
			t.Fatalf("answered before the job ended: %+v", task)
		case <-time.After(150 * time.Millisecond):
		}
		advance := taskMessage("msg-adv-b", "job.advance", map[string]any{"status": "completed"}, func(_, m map[string]any) { m["taskId"] = "job-b" })
		require.Nil(t, callA2A(t, srv, a2aCall{method: a2atask.MethodMessageSend, params: advance}).Error)
		select {
		case task := <-done:
			assert.Equal(t, a2atask.StateCompleted, task.Status.State)
			assert.Equal(t, "job-b", task.ID)
		case <-time.After(5 * time.Second):
			t.Fatal("no answer after the job completed")
		}
	})
	t.Run("bounded", func(t *testing.T) {
		srv, _ := newTaskServer(t, supervaizer.WithLocalMode(true), supervaizer.WithHTTPSettings(supervaizer.HTTPSettings{A2ABlocking: 200 * time.Millisecond}))
		params := taskMessage("msg-bound", "job.start", map[string]any{"topic_id": "t", "status": "active"}, func(p, _ map[string]any) {
			p["configuration"] = map[string]any{"blocking": true}
		})
		start := time.Now()
		task := taskOf(t, callA2A(t, srv, a2aCall{method: a2atask.MethodMessageSend, params: params}))
		assert.Equal(t, a2atask.StateWorking, task.Status.State)
		assert.GreaterOrEqual(t, time.Since(start), 200*time.Millisecond)
	})
	t.Run("input-required answers at once", func(t *testing.T) {
		srv, _ := newTaskServer(t, supervaizer.WithLocalMode(true))
		params := taskMessage("msg-await", "job.start", map[string]any{"topic_id": "t", "status": "active", "awaiting": true}, func(p, _ map[string]any) {
			p["configuration"] = map[string]any{"blocking": true}
		})
		start := time.Now()
		task := taskOf(t, callA2A(t, srv, a2aCall{method: a2atask.MethodMessageSend, params: params}))
		assert.Equal(t, a2atask.StateInputRequired, task.Status.State)
		assert.Less(t, time.Since(start), 2*time.Second)
	})
}

// FuzzA2AMessageSend: whatever message/send params hold, the answer is one
// valid JSON-RPC response (a result or an error, the request's id) and
// nothing panics.
func FuzzA2AMessageSend(f *testing.F) {
	for _, seed := range []string{
		`{"message":{"messageId":"m1","parts":[{"kind":"data","data":{"action":"job.start","input":{"topic_id":"t"}}}]}}`,
		`{"message":{"messageId":"m2","taskId":"j","contextId":"c","parts":[{"kind":"data","data":{"action":"topic.help"}}]},"configuration":{"blocking":false}}`,
		`{"message":{"messageId":"m3","parts":[{"kind":"data","data":{"action":"job.start","input":{"topic_id":"reject"}}}]},"metadata":{"supervaizer/workspace_id":"w"}}`,
		`{"message":{"messageId":"m4","parts":[{"kind":"text","text":"hi"}]}}`,
		`{"message":{"parts":[]}}`, `{}`, `[]`, `null`, `{"message":{"messageId":"\u0000","parts":[{"kind":"data","data":{"action":"job.advance","input":{"status":"x"}}}]}}`,
	} {
		f.Add([]byte(seed))
	}
	srv, _ := newTaskServer(f, supervaizer.WithLocalMode(true), supervaizer.WithHTTPSettings(supervaizer.HTTPSettings{A2ABlocking: time.Millisecond}))
	f.Fuzz(func(t *testing.T, params []byte) {
		body := append(append([]byte(`{"jsonrpc":"2.0","id":"f","method":"message/send","params":`), params...), '}')
		w := postA2A(t, srv, a2aCall{raw: body})
		require.Equal(t, http.StatusOK, w.Code, "body: %s", w.Body)
		var resp struct {
			JSONRPC string           `json:"jsonrpc"`
			ID      json.RawMessage  `json:"id"`
			Result  *json.RawMessage `json:"result"`
			Error   *rpcError        `json:"error"`
		}
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &resp), "body: %s", w.Body)
		require.Equal(t, "2.0", resp.JSONRPC)
		require.True(t, (resp.Result == nil) != (resp.Error == nil), "exactly one of result and error: %s", w.Body)
		if resp.Error != nil {
			require.NotZero(t, resp.Error.Code)
			return
		}
		require.Equal(t, `"f"`, string(resp.ID))
		var kind struct{ Kind string }
		require.NoError(t, json.Unmarshal(*resp.Result, &kind))
		require.Contains(t, []string{"task", "message"}, kind.Kind)
	})
}

// The message/send benchmark against action.invoke for the same action
// (job.sync on a known job: no idempotency record, a job_state answered):
// the A2A path adds the params translation and the Task encoding. Compare
// their cpu-ns/op (issue 26: at most 15 % more).
func benchTaskServer(b *testing.B) http.Handler {
	srv, _ := newTaskServer(b, supervaizer.WithLocalMode(true))
	startTask(b, srv, "job-bench", "active", "")
	return srv
}

func BenchmarkA2AMessageSend(b *testing.B) {
	srv := benchTaskServer(b)
	body := rpcBody(b, "rpc-1", a2atask.MethodMessageSend, taskMessage("msg-bench", "job.sync", nil, func(_, m map[string]any) {
		m["taskId"], m["contextId"] = "job-bench", "mission-job-bench"
	}))
	benchA2A(b, srv, body, `"kind":"task"`)
}

// BenchmarkA2ASendMessage is BenchmarkA2AMessageSend through the A2A 1.0
// binding (SendMessage, returnImmediately): the same call, the 1.0 params
// and Task encoding.
func BenchmarkA2ASendMessage(b *testing.B) {
	srv := benchTaskServer(b)
	body := rpcBody(b, "rpc-1", a2atask.MethodSendMessage, message10Params("msg-bench", "job.sync", nil, func(_, m map[string]any) {
		m["taskId"], m["contextId"] = "job-bench", "mission-job-bench"
	}))
	benchA2A(b, srv, body, `{"task":{"id":"job-bench"`)
}

func BenchmarkA2AActionInvoke(b *testing.B) {
	srv := benchTaskServer(b)
	body := rpcBody(b, "rpc-1", supervaizer.MethodActionInvoke, map[string]any{
		"request_id": "msg-bench", "actor": map[string]any{"user_id": "local"}, "workspace": map[string]any{"id": "local"},
		"mission_id": "mission-job-bench", "agent_slug": taskAgentSlug, "surface": "job.start", "action": "job.sync", "job_id": "job-bench",
	})
	benchA2A(b, srv, body, `"job_state"`)
}

func benchA2A(b *testing.B, srv http.Handler, body []byte, want string) {
	b.Helper()
	w := postA2A(b, srv, a2aCall{raw: body})
	if !strings.Contains(w.Body.String(), want) {
		b.Fatalf("answer: %s", w.Body)
	}
	b.ReportAllocs()
	cpu := processCPU()
	for b.Loop() {
		w := postA2A(b, srv, a2aCall{raw: body})
		if w.Code != http.StatusOK {
			b.Fatalf("HTTP %d", w.Code)
		}
	}
	// CPU time per call, garbage collection included: on a shared machine
	// wall time mostly measures the other processes.
	b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
}
