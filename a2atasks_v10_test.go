package supervaizer_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
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
	svtest "github.com/supervaize/supervaizer-go/testing"
)

// The A2A 1.0 binding's tests: the 1.0 params read onto the same call as
// their 0.3 twins, the answers written in the A2A 1.0 protobuf-JSON form.
// The answers are decoded strictly into the members of the A2A 1.0 messages
// (a2a.proto, JSON names): a member no 1.0 message has (a kind, say) fails.

type part10 struct {
	Text      *string         `json:"text"`
	Raw       *string         `json:"raw"`
	URL       *string         `json:"url"`
	Data      json.RawMessage `json:"data"`
	Metadata  json.RawMessage `json:"metadata"`
	Filename  string          `json:"filename"`
	MediaType string          `json:"mediaType"`
}

type message10 struct {
	MessageID        string          `json:"messageId"`
	ContextID        string          `json:"contextId"`
	TaskID           string          `json:"taskId"`
	Role             string          `json:"role"`
	Parts            []part10        `json:"parts"`
	Metadata         json.RawMessage `json:"metadata"`
	Extensions       []string        `json:"extensions"`
	ReferenceTaskIDs []string        `json:"referenceTaskIds"`
}

type status10 struct {
	State     string     `json:"state"`
	Message   *message10 `json:"message"`
	Timestamp string     `json:"timestamp"`
}

type artifact10 struct {
	ArtifactID  string          `json:"artifactId"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parts       []part10        `json:"parts"`
	Metadata    json.RawMessage `json:"metadata"`
	Extensions  []string        `json:"extensions"`
}

type task10 struct {
	ID        string          `json:"id"`
	ContextID string          `json:"contextId"`
	Status    status10        `json:"status"`
	Artifacts []artifact10    `json:"artifacts"`
	History   []message10     `json:"history"`
	Metadata  json.RawMessage `json:"metadata"`
}

type statusUpdate10 struct {
	TaskID    string          `json:"taskId"`
	ContextID string          `json:"contextId"`
	Status    status10        `json:"status"`
	Metadata  json.RawMessage `json:"metadata"`
}

type artifactUpdate10 struct {
	TaskID    string          `json:"taskId"`
	ContextID string          `json:"contextId"`
	Artifact  artifact10      `json:"artifact"`
	Append    bool            `json:"append"`
	LastChunk bool            `json:"lastChunk"`
	Metadata  json.RawMessage `json:"metadata"`
}

// stream10 is a StreamResponse (SendMessageResponse: task or message only).
type stream10 struct {
	Task           *task10           `json:"task"`
	Message        *message10        `json:"message"`
	StatusUpdate   *statusUpdate10   `json:"statusUpdate"`
	ArtifactUpdate *artifactUpdate10 `json:"artifactUpdate"`
}

// strict decodes raw into out, refusing members out does not have.
func strict(tb testing.TB, raw []byte, out any) {
	tb.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	require.NoError(tb, dec.Decode(out), "an A2A 1.0 %T: %s", out, raw)
}

// oneOf10 decodes a SendMessageResponse or StreamResponse: exactly one member.
func oneOf10(tb testing.TB, raw []byte) stream10 {
	tb.Helper()
	var r stream10
	strict(tb, raw, &r)
	set := 0
	for _, p := range []bool{r.Task != nil, r.Message != nil, r.StatusUpdate != nil, r.ArtifactUpdate != nil} {
		if p {
			set++
		}
	}
	require.Equal(tb, 1, set, "exactly one member: %s", raw)
	return r
}

// call10 posts a 1.0 call with A2A-Version 1.0 (and the token, if any).
func call10(tb testing.TB, srv http.Handler, method string, params any, token string) rpcResponse {
	tb.Helper()
	r := httptest.NewRequest(http.MethodPost, "http://localhost/a2a", bytes.NewReader(rpcBody(tb, "v1", method, params)))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set(supervaizer.HeaderAPIKey, testWriteKey)
	r.Header.Set(a2atask.HeaderVersion, a2atask.ProtocolVersion10)
	if token != "" {
		r.Header.Set(supervaizer.HeaderWorkspaceAuthorization, token)
	}
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, r)
	require.Equal(tb, http.StatusOK, w.Code, "body: %s", w.Body)
	return decodeRPC(tb, w)
}

// sent10 decodes the result of SendMessage.
func sent10(tb testing.TB, resp rpcResponse) stream10 {
	tb.Helper()
	require.Nil(tb, resp.Error, "error: %+v", resp.Error)
	r := oneOf10(tb, resp.Result)
	require.Nil(tb, r.StatusUpdate)
	require.Nil(tb, r.ArtifactUpdate)
	return r
}

// sentTask10 decodes a SendMessage result that must be a task.
func sentTask10(tb testing.TB, resp rpcResponse) task10 {
	tb.Helper()
	r := sent10(tb, resp)
	require.NotNil(tb, r.Task, "a task: %s", resp.Result)
	return *r.Task
}

// gotTask10 decodes a GetTask or CancelTask result: a Task.
func gotTask10(tb testing.TB, resp rpcResponse) task10 {
	tb.Helper()
	require.Nil(tb, resp.Error, "error: %+v", resp.Error)
	var task task10
	strict(tb, resp.Result, &task)
	return task
}

// message10Params is SendMessage params calling action with input (nil:
// none) in the 1.0 shape, changed by mod.
func message10Params(messageID, action string, input any, mod func(params, message map[string]any)) map[string]any {
	data := map[string]any{"action": action}
	if input != nil {
		data["input"] = input
	}
	msg := map[string]any{"messageId": messageID, "role": "ROLE_USER", "parts": []any{map[string]any{"data": data}}}
	p := map[string]any{"message": msg, "configuration": map[string]any{"returnImmediately": true}}
	if mod != nil {
		mod(p, msg)
	}
	return p
}

// TestA2A10TaskStates: every task state in its 1.0 name, for SendMessage and
// GetTask; the 1.0 task has the 0.3 task's content, no kind and no history.
func TestA2A10TaskStates(t *testing.T) {
	tests := []struct {
		status   string
		awaiting bool
		want     string
	}{
		{"pending", false, "TASK_STATE_SUBMITTED"},
		{"running", false, "TASK_STATE_WORKING"},
		{"awaiting", false, "TASK_STATE_INPUT_REQUIRED"},
		{"active", true, "TASK_STATE_INPUT_REQUIRED"},
		{"completed", false, "TASK_STATE_COMPLETED"},
		{"failed", false, "TASK_STATE_FAILED"},
		{"stopped", false, "TASK_STATE_CANCELED"},
		{"paused-by-vendor", false, "TASK_STATE_UNSPECIFIED"},
	}
	srv, _ := newTaskServer(t, supervaizer.WithLocalMode(true))
	for i, tt := range tests {
		t.Run(fmt.Sprintf("%s awaiting=%v", tt.status, tt.awaiting), func(t *testing.T) {
			msgID := fmt.Sprintf("msg-state10-%d", i)
			input := map[string]any{"topic_id": "batteries", "status": tt.status, "awaiting": tt.awaiting, "text": "label " + tt.status}
			task := sentTask10(t, call10(t, srv, a2atask.MethodSendMessage, message10Params(msgID, "job.start", input, nil), ""))
			assert.Equal(t, tt.want, task.Status.State)
			assert.Equal(t, derived("a2a-", "local", msgID), task.ID)
			assert.Equal(t, derived("a2a-ctx-", "local", msgID), task.ContextID)
			assert.Nil(t, task.History, "an empty history is omitted")
			require.NotNil(t, task.Status.Message)
			assert.Equal(t, "ROLE_AGENT", task.Status.Message.Role)
			assert.Equal(t, task.ID, task.Status.Message.TaskID)
			assert.Equal(t, task.ContextID, task.Status.Message.ContextID)
			require.Len(t, task.Status.Message.Parts, 1)
			require.NotNil(t, task.Status.Message.Parts[0].Text)
			assert.Equal(t, "label "+tt.status, *task.Status.Message.Parts[0].Text)
			require.Len(t, task.Artifacts, 1)
			assert.Equal(t, a2atask.ArtifactJobState, task.Artifacts[0].ArtifactID)
			require.Len(t, task.Artifacts[0].Parts, 1)
			var st supervaizer.JobState
			require.NoError(t, contracts.Unmarshal(task.Artifacts[0].Parts[0].Data, &st))
			assert.Equal(t, tt.status, st.Job.Status)

			got := gotTask10(t, call10(t, srv, a2atask.MethodGetTask, map[string]any{"id": task.ID}, ""))
			assert.Equal(t, task, got, "GetTask answers the same task")
		})
	}
}

// TestA2A10OneCall: a 1.0 call is its 0.3 twin: the same messageId through
// either binding is the same job, started once; the answers carry the same
// content in their two shapes.
func TestA2A10OneCall(t *testing.T) {
	srv, jobs := newTaskServer(t, supervaizer.WithLocalMode(true))
	input := map[string]any{"topic_id": "t", "status": "active", "text": "Working"}
	v03 := taskOf(t, callA2A(t, srv, a2aCall{method: a2atask.MethodMessageSend, params: taskMessage("msg-twin", "job.start", input, nil)}))
	require.Equal(t, 1, jobs.count())
	first := jobs.last()

	resp := call10(t, srv, a2atask.MethodSendMessage, message10Params("msg-twin", "job.start", input, nil), "")
	v10 := sentTask10(t, resp)
	assert.Equal(t, 1, jobs.count(), "replayed: the job started once")
	assert.Equal(t, v03.ID, v10.ID)
	assert.Equal(t, v03.ContextID, v10.ContextID)
	assert.Equal(t, a2atask.TaskState(v03.Status.State).ProtoName(), v10.Status.State)
	assert.Equal(t, v03.Status.Message.MessageID, v10.Status.Message.MessageID)
	assert.JSONEq(t, string(v03.Artifacts[0].Parts[0].Data), string(v10.Artifacts[0].Parts[0].Data))

	again := call10(t, srv, a2atask.MethodSendMessage, message10Params("msg-twin", "job.start", input, nil), "")
	assert.Equal(t, string(resp.Result), string(again.Result), "byte-identical")

	call10(t, srv, a2atask.MethodSendMessage, message10Params("msg-new", "job.start", input, func(p, m map[string]any) {
		m["taskId"], m["contextId"] = "job-named", "mission-named"
		p["metadata"] = map[string]any{a2atask.MetaUserID: "user-7", a2atask.MetaSurface: "job.start"}
	}), "")
	req := jobs.last()
	assert.Equal(t, "msg-new", req.RequestID)
	assert.Equal(t, "msg-new", req.IdempotencyKey)
	assert.Equal(t, "job-named", req.JobID)
	assert.Equal(t, "mission-named", req.MissionID)
	assert.Equal(t, "user-7", req.Actor.UserID)
	assert.Equal(t, first.Workspace, req.Workspace)
	assert.Equal(t, first.AgentSlug, req.AgentSlug)
	assert.Equal(t, "job.start", req.Surface)
}

// TestA2A10Answers: a result without job_state is {"message":…} holding the
// v2 result; an error result of a job action is a failed task.
func TestA2A10Answers(t *testing.T) {
	srv, _ := newTaskServer(t, supervaizer.WithLocalMode(true))
	help := sent10(t, call10(t, srv, a2atask.MethodSendMessage, message10Params("msg-help10", "topic.help", nil, nil), ""))
	require.NotNil(t, help.Message)
	assert.Equal(t, "ROLE_AGENT", help.Message.Role)
	assert.Equal(t, "a2a-reply-msg-help10", help.Message.MessageID)
	assert.Equal(t, derived("a2a-ctx-", "local", "msg-help10"), help.Message.ContextID)
	require.Len(t, help.Message.Parts, 1)
	assert.JSONEq(t, `{"status":"ok","effects":[{"type":"help.given","data":{"text":"pick a topic"}}]}`, string(help.Message.Parts[0].Data))

	note := sent10(t, call10(t, srv, a2atask.MethodSendMessage, message10Params("msg-note10", "note.fail", map[string]any{}, nil), ""))
	require.NotNil(t, note.Message)
	assert.Contains(t, string(note.Message.Parts[0].Data), `"code":"note_refused"`)

	failed := sentTask10(t, call10(t, srv, a2atask.MethodSendMessage, message10Params("msg-rej10", "job.start", map[string]any{"topic_id": "reject"}, nil), ""))
	assert.Equal(t, "TASK_STATE_FAILED", failed.Status.State)
	assert.Empty(t, failed.Artifacts)
	require.NotNil(t, failed.Status.Message)
	assert.JSONEq(t, `{"code":"topic_rejected","message":"the topic \"reject\" is refused"}`, string(failed.Status.Message.Parts[0].Data))
}

// TestA2A10Parts: the one part of a 1.0 message, each kind refused or
// accepted.
func TestA2A10Parts(t *testing.T) {
	call := map[string]any{"action": "note.echo", "input": map[string]any{"n": 1}}
	tests := []struct {
		name  string
		parts any
		code  int
		loc   string // the path of the -32602 problem
	}{
		{name: "a data part", parts: []any{map[string]any{"data": call}}},
		{name: "a data part with mediaType application/json", parts: []any{map[string]any{"data": call, "mediaType": "application/json"}}},
		{name: "a data part with media_type", parts: []any{map[string]any{"data": call, "media_type": "application/json"}}},
		{name: "a data part with a JSON media type", parts: []any{map[string]any{"data": call, "mediaType": "application/vnd.example+json"}}},
		{name: "a data part with metadata and a filename", parts: []any{map[string]any{"data": call, "metadata": map[string]any{"k": "v"}, "filename": "call.json"}}},
		{name: "a 0.3 kind beside the data member", parts: []any{map[string]any{"kind": "data", "data": call}}},
		{name: "a data part of another media type", parts: []any{map[string]any{"data": call, "mediaType": "text/csv"}}, code: int(errcode.ContentTypeNotSupported)},
		{name: "both media type spellings", parts: []any{map[string]any{"data": call, "mediaType": "application/json", "media_type": "application/json"}}, code: -32602, loc: "/params/message/parts/0/media_type"},
		{name: "a media type that is a number", parts: []any{map[string]any{"data": call, "mediaType": 7}}, code: -32602, loc: "/params/message/parts/0/mediaType"},
		{name: "a text part", parts: []any{map[string]any{"text": "start a job"}}, code: -32602, loc: "/params/message/parts"},
		{name: "a raw part", parts: []any{map[string]any{"raw": "aGk=", "mediaType": "application/json"}}, code: -32602, loc: "/params/message/parts/0/raw"},
		{name: "a url part", parts: []any{map[string]any{"url": "https://example.com/call.json"}}, code: -32602, loc: "/params/message/parts/0/url"},
		{name: "data and text in one part", parts: []any{map[string]any{"data": call, "text": "x"}}, code: -32602, loc: "/params/message/parts/0/text"},
		{name: "data that is a string", parts: []any{map[string]any{"data": "job.start"}}, code: -32602, loc: "/params/message/parts/0/data"},
		{name: "data that is a list", parts: []any{map[string]any{"data": []any{call}}}, code: -32602, loc: "/params/message/parts/0/data"},
		{name: "a part without content", parts: []any{map[string]any{}}, code: -32602, loc: "/params/message/parts/0/data"},
		{name: "a part that is not an object", parts: []any{"data"}, code: -32602, loc: "/params/message/parts/0"},
		{name: "data with another key", parts: []any{map[string]any{"data": map[string]any{"action": "note.echo", "why": 1}}}, code: -32602, loc: "/params/message/parts/0/data/why"},
		{name: "data without an action", parts: []any{map[string]any{"data": map[string]any{"input": map[string]any{}}}}, code: -32602, loc: "/params/message/parts/0/data/action"},
		{name: "two parts", parts: []any{map[string]any{"data": call}, map[string]any{"data": call}}, code: -32602, loc: "/params/message/parts"},
		{name: "no part", parts: []any{}, code: -32602, loc: "/params/message/parts"},
	}
	srv, jobs := newTaskServer(t, supervaizer.WithLocalMode(true))
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seen := jobs.count()
			params := message10Params(fmt.Sprintf("msg-part-%d", i), "", nil, func(_, m map[string]any) { m["parts"] = tt.parts })
			resp := call10(t, srv, a2atask.MethodSendMessage, params, "")
			if tt.code == 0 {
				r := sent10(t, resp)
				require.NotNil(t, r.Message, "note.echo answers a message")
				assert.Contains(t, string(r.Message.Parts[0].Data), `"input":{"n":1}`)
				assert.Equal(t, seen+1, jobs.count())
				return
			}
			require.NotNil(t, resp.Error, "result: %s", resp.Result)
			assert.Equal(t, tt.code, resp.Error.Code)
			assert.Equal(t, seen, jobs.count(), "no handler runs")
			if tt.code == -32602 {
				assert.Contains(t, resp.Error.Message, `exactly one data part {"data":`)
				assertProblemPath(t, resp.Error.Data, tt.loc)
			}
		})
	}
}

// assertProblemPath checks the path of the one problem of a -32602's data.
func assertProblemPath(t *testing.T, data json.RawMessage, path string) {
	t.Helper()
	var d struct {
		Errors []struct {
			Path string `json:"path"`
			Type string `json:"type"`
		} `json:"errors"`
	}
	require.NoError(t, json.Unmarshal(data, &d))
	require.Len(t, d.Errors, 1, "data: %s", data)
	assert.Equal(t, path, d.Errors[0].Path)
	assert.Equal(t, "a2a_shape", d.Errors[0].Type)
}

// TestA2A10Params: the members of SendMessage params besides the part, in
// their JSON and proto names.
func TestA2A10Params(t *testing.T) {
	tests := []struct {
		name  string
		mod   func(p, m map[string]any)
		loc   string // "": accepted
		check func(t *testing.T, req supervaizer.ActionRequest)
	}{
		{name: "proto field names", mod: func(_, m map[string]any) {
			m["message_id"], m["task_id"], m["context_id"] = m["messageId"], "job-snake", "mission-snake"
			delete(m, "messageId")
		}, check: func(t *testing.T, req supervaizer.ActionRequest) {
			assert.Equal(t, "job-snake", req.JobID)
			assert.Equal(t, "mission-snake", req.MissionID)
		}},
		{name: "role, extensions and referenceTaskIds are read by no mapping", mod: func(_, m map[string]any) {
			m["role"], m["extensions"], m["referenceTaskIds"] = "ROLE_AGENT", []any{"https://example.com/ext"}, []any{"job-0"}
		}},
		{name: "a tenant", mod: func(p, _ map[string]any) { p["tenant"] = "acme" }},
		{name: "return_immediately", mod: func(p, _ map[string]any) { p["configuration"] = map[string]any{"return_immediately": true} }},
		{name: "historyLength and acceptedOutputModes", mod: func(p, _ map[string]any) {
			p["configuration"] = map[string]any{"returnImmediately": true, "historyLength": 0, "acceptedOutputModes": []any{"application/json"}}
		}},
		{name: "metadata", mod: func(p, _ map[string]any) {
			p["metadata"] = map[string]any{a2atask.MetaUserID: "user-3", "other": 1}
		}, check: func(t *testing.T, req supervaizer.ActionRequest) { assert.Equal(t, "user-3", req.Actor.UserID) }},
		{name: "both messageId and message_id", mod: func(_, m map[string]any) { m["message_id"] = "x" }, loc: "/params/message/message_id"},
		{name: "both taskId and task_id", mod: func(_, m map[string]any) { m["taskId"], m["task_id"] = "a", "b" }, loc: "/params/message/task_id"},
		{name: "both contextId and context_id", mod: func(_, m map[string]any) { m["contextId"], m["context_id"] = "a", "b" }, loc: "/params/message/context_id"},
		{name: "a blank messageId", mod: func(_, m map[string]any) { m["messageId"] = " " }, loc: "/params/message/messageId"},
		{name: "a message_id that is a number", mod: func(_, m map[string]any) { m["message_id"] = 7; delete(m, "messageId") }, loc: "/params/message/message_id"},
		{name: "a task_id that is a number", mod: func(_, m map[string]any) { m["task_id"] = 7 }, loc: "/params/message/task_id"},
		{name: "both returnImmediately and return_immediately", mod: func(p, _ map[string]any) {
			p["configuration"] = map[string]any{"returnImmediately": true, "return_immediately": true}
		}, loc: "/params/configuration/return_immediately"},
		{name: "a returnImmediately that is a string", mod: func(p, _ map[string]any) {
			p["configuration"] = map[string]any{"returnImmediately": "yes"}
		}, loc: "/params/configuration/returnImmediately"},
		{name: "a configuration that is a list", mod: func(p, _ map[string]any) { p["configuration"] = []any{} }, loc: "/params/configuration"},
		{name: "metadata that is a string", mod: func(p, _ map[string]any) { p["metadata"] = "x" }, loc: "/params/metadata"},
		{name: "no message", mod: func(p, _ map[string]any) { delete(p, "message") }, loc: "/params/message"},
	}
	srv, jobs := newTaskServer(t, supervaizer.WithLocalMode(true))
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seen := jobs.count()
			params := message10Params(fmt.Sprintf("msg-param-%d", i), "job.start", map[string]any{"topic_id": "t"}, tt.mod)
			resp := call10(t, srv, a2atask.MethodSendMessage, params, "")
			if tt.loc == "" {
				task := sentTask10(t, resp)
				assert.Equal(t, "TASK_STATE_SUBMITTED", task.Status.State, "returnImmediately: answered at once")
				require.Equal(t, seen+1, jobs.count())
				req := jobs.last()
				assert.Equal(t, fmt.Sprintf("msg-param-%d", i), req.RequestID)
				if tt.check != nil {
					tt.check(t, req)
				}
				return
			}
			require.NotNil(t, resp.Error, "result: %s", resp.Result)
			assert.Equal(t, -32602, resp.Error.Code)
			assertProblemPath(t, resp.Error.Data, tt.loc)
			assert.Equal(t, seen, jobs.count(), "no handler runs")
		})
	}
}

// TestA2A10Errors: the refusals of the 1.0 methods, each with its code.
func TestA2A10Errors(t *testing.T) {
	srv, _ := newTaskServer(t, supervaizer.WithLocalMode(true))
	sentTask10(t, call10(t, srv, a2atask.MethodSendMessage, message10Params("msg-err", "job.start", map[string]any{"topic_id": "t", "status": "running"},
		func(_, m map[string]any) { m["taskId"] = "job-err" }), ""))
	gotTask10(t, call10(t, srv, a2atask.MethodCancelTask, map[string]any{"id": "job-err"}, ""))
	noStop, _ := serveTaskAgent(t, newTaskAgent(t, "job.sync"), supervaizer.WithLocalMode(true))
	sentTask10(t, call10(t, noStop, a2atask.MethodSendMessage, message10Params("msg-nostop", "job.start", map[string]any{"topic_id": "t"},
		func(_, m map[string]any) { m["taskId"] = "job-nostop" }), ""))

	tests := []struct {
		name   string
		srv    http.Handler
		method string
		params any
		code   int
	}{
		{"GetTask of an unknown task", srv, a2atask.MethodGetTask, map[string]any{"id": "job-none"}, int(errcode.TaskNotFound)},
		{"GetTask without an id", srv, a2atask.MethodGetTask, map[string]any{"name": "tasks/job-err"}, -32602},
		{"GetTask with params that are a list (the envelope refuses them)", srv, a2atask.MethodGetTask, []any{"job-err"}, -32600},
		{"CancelTask of an unknown task", srv, a2atask.MethodCancelTask, map[string]any{"id": "job-none"}, int(errcode.TaskNotFound)},
		{"CancelTask of a canceled task", srv, a2atask.MethodCancelTask, map[string]any{"id": "job-err"}, int(errcode.TaskNotCancelable)},
		{"CancelTask of an agent without job.stop", noStop, a2atask.MethodCancelTask, map[string]any{"id": "job-nostop"}, int(errcode.TaskNotCancelable)},
		{"CreateTaskPushNotificationConfig", srv, a2atask.MethodCreateTaskPushNotificationConfig, map[string]any{"taskId": "job-err", "url": "https://example.com/h"}, int(errcode.PushNotificationNotSupported)},
		{"GetTaskPushNotificationConfig", srv, a2atask.MethodGetTaskPushNotificationConfig, map[string]any{"taskId": "job-err", "id": "c"}, int(errcode.PushNotificationNotSupported)},
		{"ListTaskPushNotificationConfigs", srv, a2atask.MethodListTaskPushNotificationConfigs, map[string]any{"taskId": "job-err"}, int(errcode.PushNotificationNotSupported)},
		{"DeleteTaskPushNotificationConfig", srv, a2atask.MethodDeleteTaskPushNotificationConfig, map[string]any{"taskId": "job-err", "id": "c"}, int(errcode.PushNotificationNotSupported)},
		{"ListTasks", srv, a2atask.MethodListTasks, map[string]any{"pageSize": 10}, int(errcode.UnsupportedOperation)},
		{"GetExtendedAgentCard", srv, a2atask.MethodGetExtendedAgentCard, map[string]any{}, int(errcode.UnsupportedOperation)},
		{"an unknown method", srv, "SendMessageBatch", map[string]any{}, -32601},
		{"a 0.3 name in another case", srv, "Message/Send", map[string]any{}, -32601},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := call10(t, tt.srv, tt.method, tt.params, "")
			require.NotNil(t, resp.Error, "result: %s", resp.Result)
			assert.Equal(t, tt.code, resp.Error.Code, "message: %s", resp.Error.Message)
			assert.NotEmpty(t, resp.Error.Message)
		})
	}
}

// TestA2AVersionHeader: an A2A-Version naming 0.3 or 1.0 (any patch), or
// none, is served by either binding; any other version is -32009 on every
// A2A method, never on the supervaizer/* methods.
func TestA2AVersionHeader(t *testing.T) {
	srv, _ := newTaskServer(t, supervaizer.WithLocalMode(true))
	startTask(t, srv, "job-v", "active", "")
	tests := []struct {
		version string
		served  bool
	}{
		{"", true}, {"1.0", true}, {"1.0.3", true}, {"1", true}, {"0.3", true}, {"0.3.0", true}, {" 1.0 ", true},
		{"2.0", false}, {"1.1", false}, {"0.2", false}, {"0.2.6", false}, {"v1.0", false}, {"latest", false}, {"-1.0", false},
	}
	for _, tt := range tests {
		for _, method := range []string{a2atask.MethodGetTask, a2atask.MethodTasksGet} {
			t.Run(fmt.Sprintf("%q %s", tt.version, method), func(t *testing.T) {
				r := httptest.NewRequest(http.MethodPost, "http://localhost/a2a", bytes.NewReader(rpcBody(t, 1, method, map[string]any{"id": "job-v"})))
				r.Header.Set(supervaizer.HeaderAPIKey, testWriteKey)
				r.Header.Set(a2atask.HeaderVersion, tt.version)
				w := httptest.NewRecorder()
				srv.ServeHTTP(w, r)
				resp := decodeRPC(t, w)
				if tt.served {
					require.Nil(t, resp.Error, "error: %+v", resp.Error)
					return
				}
				require.NotNil(t, resp.Error, "result: %s", resp.Result)
				assert.Equal(t, int(errcode.VersionNotSupported), resp.Error.Code)
				assert.JSONEq(t, fmt.Sprintf(`{"version":%q,"supported":["1.0","0.3"]}`, strings.TrimSpace(tt.version)), string(resp.Error.Data))
			})
		}
	}
	t.Run("a stream's one event", func(t *testing.T) {
		hs := httptest.NewServer(srv)
		t.Cleanup(hs.Close)
		req, err := http.NewRequest(http.MethodPost, hs.URL+"/a2a", bytes.NewReader(rpcBody(t, "s-1", a2atask.MethodSubscribeToTask, map[string]any{"id": "job-v"})))
		require.NoError(t, err)
		req.Header.Set(supervaizer.HeaderAPIKey, testWriteKey)
		req.Header.Set(a2atask.HeaderVersion, "3.0")
		events := readStream(t, req)
		require.Len(t, events, 1)
		require.NotNil(t, events[0].Error)
		assert.Equal(t, int(errcode.VersionNotSupported), events[0].Error.Code)
	})
	t.Run("not the supervaizer methods", func(t *testing.T) {
		h := newHarness(t)
		r := httptest.NewRequest(http.MethodPost, "http://localhost/a2a", bytes.NewReader(goldenRequest(t, "ok_surface_bootstrap_no_token")))
		r.Header.Set(supervaizer.HeaderAPIKey, testWriteKey)
		r.Header.Set(a2atask.HeaderVersion, "9.9")
		w := httptest.NewRecorder()
		h.srv.ServeHTTP(w, r)
		assert.Nil(t, decodeRPC(t, w).Error)
	})
}

// readStream reads a whole stream's events.
func readStream(t *testing.T, req *http.Request) []streamEvent {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	var out []streamEvent
	var buf bytes.Buffer
	_, err = buf.ReadFrom(resp.Body)
	require.NoError(t, err)
	for line := range strings.Lines(buf.String()) {
		if data, ok := strings.CutPrefix(strings.TrimSpace(line), "data: "); ok {
			var ev streamEvent
			require.NoError(t, json.Unmarshal([]byte(data), &ev))
			out = append(out, ev)
		}
	}
	return out
}

// TestA2A10Blocking: SendMessage waits by default (returnImmediately false)
// for a terminal or input-required state, within the same bound as 0.3's
// blocking; returnImmediately answers at once.
func TestA2A10Blocking(t *testing.T) {
	t.Run("bounded", func(t *testing.T) {
		srv, _ := newTaskServer(t, supervaizer.WithLocalMode(true), supervaizer.WithHTTPSettings(supervaizer.HTTPSettings{A2ABlocking: 200 * time.Millisecond}))
		params := message10Params("msg-wait10", "job.start", map[string]any{"topic_id": "t", "status": "active"}, func(p, _ map[string]any) { delete(p, "configuration") })
		start := time.Now()
		task := sentTask10(t, call10(t, srv, a2atask.MethodSendMessage, params, ""))
		assert.Equal(t, "TASK_STATE_WORKING", task.Status.State)
		assert.GreaterOrEqual(t, time.Since(start), 200*time.Millisecond, "waited for the bound")
	})
	t.Run("input-required and returnImmediately answer at once", func(t *testing.T) {
		srv, _ := newTaskServer(t, supervaizer.WithLocalMode(true), supervaizer.WithHTTPSettings(supervaizer.HTTPSettings{A2ABlocking: 30 * time.Second}))
		start := time.Now()
		awaiting := message10Params("msg-await10", "job.start", map[string]any{"topic_id": "t", "status": "active", "awaiting": true},
			func(p, _ map[string]any) { p["configuration"] = map[string]any{"returnImmediately": false} })
		assert.Equal(t, "TASK_STATE_INPUT_REQUIRED", sentTask10(t, call10(t, srv, a2atask.MethodSendMessage, awaiting, "")).Status.State)
		at := message10Params("msg-now10", "job.start", map[string]any{"topic_id": "t", "status": "active"}, nil)
		assert.Equal(t, "TASK_STATE_WORKING", sentTask10(t, call10(t, srv, a2atask.MethodSendMessage, at, "")).Status.State)
		assert.Less(t, time.Since(start), 10*time.Second, "neither waited for the 30 s bound")
	})
}

// stream10Of decodes a 1.0 stream event.
func stream10Of(t *testing.T, ev streamEvent) stream10 {
	t.Helper()
	require.Nil(t, ev.Error, "error: %+v", ev.Error)
	return oneOf10(t, ev.Result)
}

// TestA2A10Stream: SendStreamingMessage and SubscribeToTask answer the
// {"task":…} first, then {"artifactUpdate":…} and {"statusUpdate":…} for each
// change, and end after a terminal or input-required state; SubscribeToTask
// refuses a terminal task (-32004).
func TestA2A10Stream(t *testing.T) {
	srv, _ := newTaskServer(t, supervaizer.WithLocalMode(true))
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)

	events, resp := openStream(t, hs.URL, a2atask.MethodSendStreamingMessage, message10Params("msg-stream10", "job.start",
		map[string]any{"topic_id": "t", "status": "pending"}, func(_, m map[string]any) { m["taskId"] = "job-s10" }))
	assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	first := stream10Of(t, next(t, events))
	require.NotNil(t, first.Task)
	assert.Equal(t, "TASK_STATE_SUBMITTED", first.Task.Status.State)

	resumed, _ := openStream(t, hs.URL, a2atask.MethodSubscribeToTask, map[string]any{"id": "job-s10"})
	require.NotNil(t, stream10Of(t, next(t, resumed)).Task)

	advanceJob(t, srv, "adv10-1", "job-s10", "running")
	advanceJob(t, srv, "adv10-2", "job-s10", "completed")
	for _, evs := range []<-chan streamEvent{events, resumed} {
		for _, want := range []string{"TASK_STATE_WORKING", "TASK_STATE_COMPLETED"} {
			art := stream10Of(t, next(t, evs))
			require.NotNil(t, art.ArtifactUpdate, "an artifactUpdate")
			assert.Equal(t, "job-s10", art.ArtifactUpdate.TaskID)
			assert.True(t, art.ArtifactUpdate.LastChunk)
			assert.False(t, art.ArtifactUpdate.Append)
			assert.Equal(t, a2atask.ArtifactJobState, art.ArtifactUpdate.Artifact.ArtifactID)
			st := stream10Of(t, next(t, evs))
			require.NotNil(t, st.StatusUpdate, "a statusUpdate")
			assert.Equal(t, want, st.StatusUpdate.Status.State)
			assert.Equal(t, "job-s10", st.StatusUpdate.TaskID)
		}
		ended(t, evs)
	}

	terminal, _ := openStream(t, hs.URL, a2atask.MethodSubscribeToTask, map[string]any{"id": "job-s10"})
	ev := next(t, terminal)
	require.NotNil(t, ev.Error)
	assert.Equal(t, int(errcode.UnsupportedOperation), ev.Error.Code)
	ended(t, terminal)

	help, _ := openStream(t, hs.URL, a2atask.MethodSendStreamingMessage, message10Params("msg-shelp10", "topic.help", nil, nil))
	require.NotNil(t, stream10Of(t, next(t, help)).Message, "a message: the stream's one event")
	ended(t, help)
}

// TestA2A10TokenScopes: the 1.0 methods need the credentials of their 0.3
// twins.
func TestA2A10TokenScopes(t *testing.T) {
	fake := svtest.NewFakeStudio(t)
	a := newTaskAgent(t, "job.stop", "job.sync")
	fake.Link(a, testStudioAgentID)
	srv, jobs := serveTaskAgent(t, a, supervaizer.WithWorkspaceAuth(testWorkspaceAuth(fake)))
	token := func(scopes ...string) string { return mintToken(fake, taskClaims(scopes...)) }
	all := token(supervaizer.MethodActionInvoke, "job.start", "job.sync", "job.stop")
	task := sentTask10(t, call10(t, srv, a2atask.MethodSendMessage, message10Params("msg-tok10", "job.start", map[string]any{"topic_id": "t", "status": "active"}, nil), all))
	assert.Equal(t, "a2a:grant-01", jobs.last().Actor.UserID)
	other := mintToken(fake, func(c *svtest.Claims) {
		taskClaims(supervaizer.MethodActionInvoke, "job.sync", "job.stop")(c)
		c.WorkspaceID = "ws-2"
	})
	send := message10Params("msg-tok10b", "job.start", map[string]any{"topic_id": "t"}, nil)
	id := map[string]any{"id": task.ID}
	tests := []struct {
		name, method string
		params       any
		token        string
		code         int
		reason       string
	}{
		{"SendMessage without a token", a2atask.MethodSendMessage, send, "", -32030, "workspace_authorization_missing"},
		{"SendMessage without the action scope", a2atask.MethodSendMessage, send, token(supervaizer.MethodActionInvoke), -32030, "workspace_authorization_missing_scope"},
		{"GetTask without the job.sync scope", a2atask.MethodGetTask, id, token(supervaizer.MethodActionInvoke, "job.start"), -32030, "workspace_authorization_missing_scope"},
		{"GetTask with the job.sync scope", a2atask.MethodGetTask, id, token(supervaizer.MethodActionInvoke, "job.sync"), 0, ""},
		{"GetTask of another workspace's task", a2atask.MethodGetTask, id, other, int(errcode.TaskNotFound), ""},
		{"CancelTask without the job.stop scope", a2atask.MethodCancelTask, id, token(supervaizer.MethodActionInvoke, "job.sync"), -32030, "workspace_authorization_missing_scope"},
		{"CancelTask of another workspace's task", a2atask.MethodCancelTask, id, other, int(errcode.TaskNotFound), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seen := jobs.count()
			resp := call10(t, srv, tt.method, tt.params, tt.token)
			if tt.code == 0 {
				assert.Equal(t, "TASK_STATE_WORKING", gotTask10(t, resp).Status.State)
				return
			}
			assertRefused(t, resp, tt.code, tt.reason)
			assert.Equal(t, seen, jobs.count(), "no handler runs")
		})
	}
}

// FuzzA2A10Params: whatever the params of a 1.0 method hold, the answer is
// one valid JSON-RPC response with the request's id, its error from the
// protocol's table, its result the method's 1.0 shape; nothing panics.
func FuzzA2A10Params(f *testing.F) {
	paths, err := filepath.Glob(filepath.Join("testdata", "a2a", "v10_*.request.json"))
	require.NoError(f, err)
	require.NotEmpty(f, paths)
	methods := []string{a2atask.MethodSendMessage, a2atask.MethodGetTask, a2atask.MethodCancelTask}
	for _, p := range paths {
		body, err := os.ReadFile(p)
		require.NoError(f, err)
		var env struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		require.NoError(f, json.Unmarshal(body, &env))
		for i, m := range methods {
			if m == env.Method {
				f.Add([]byte(env.Params), uint8(i))
			}
		}
	}
	for _, s := range []string{
		`{"message":{"messageId":"m1","parts":[{"data":{"action":"job.start","input":{"topic_id":"t"}}}]},"configuration":{"returnImmediately":true}}`,
		`{"message":{"message_id":"m2","task_id":"j","context_id":"c","parts":[{"data":{"action":"topic.help"},"media_type":"application/json"}]}}`,
		`{"message":{"messageId":"m3","parts":[{"data":{"action":"job.start","input":{"topic_id":"reject"}}}]},"metadata":{"supervaizer/workspace_id":"w"}}`,
		`{"message":{"messageId":"m4","parts":[{"text":"hi","data":{}}]}}`, `{"message":{"messageId":"m5","parts":[{"raw":"!!"}]}}`,
		`{"message":{"parts":[]}}`, `{}`, `[]`, `null`, `{"id":"job-1","metadata":{"supervaizer/agent_slug":"none"}}`,
		`{"message":{"messageId":"m6","messageId":"m7","parts":[{"data":{"action":"job.start"}}]}}`,
	} {
		f.Add([]byte(s), uint8(0))
		f.Add([]byte(s), uint8(1))
	}
	srv, _ := newTaskServer(f, supervaizer.WithLocalMode(true), supervaizer.WithHTTPSettings(supervaizer.HTTPSettings{A2ABlocking: time.Millisecond}))
	f.Fuzz(func(t *testing.T, params []byte, which uint8) {
		method := methods[int(which)%len(methods)]
		body := append(append([]byte(`{"jsonrpc":"2.0","id":"f","method":"`+method+`","params":`), params...), '}')
		r := httptest.NewRequest(http.MethodPost, "http://localhost/a2a", bytes.NewReader(body))
		r.Header.Set(supervaizer.HeaderAPIKey, testWriteKey)
		r.Header.Set(a2atask.HeaderVersion, a2atask.ProtocolVersion10)
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, r)
		require.Equal(t, http.StatusOK, w.Code, "body: %s", w.Body)
		e := checkRPCResponse(t, w.Body.Bytes())
		if e != nil {
			return // not valid JSON params: an error of the table, any id
		}
		resp := decodeRPC(t, w)
		require.Equal(t, `"f"`, string(resp.ID))
		if method == a2atask.MethodSendMessage {
			r := oneOf10(t, resp.Result)
			require.True(t, r.Task != nil || r.Message != nil, "a task or a message: %s", resp.Result)
			return
		}
		var task task10
		strict(t, resp.Result, &task)
		require.NotEmpty(t, task.ID)
		require.True(t, strings.HasPrefix(task.Status.State, "TASK_STATE_"), "state: %s", task.Status.State)
	})
}
