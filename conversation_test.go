package supervaizer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	supervaizer "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/conversation"
	"github.com/supervaize/supervaizer-go/store"
	svtest "github.com/supervaize/supervaizer-go/testing"
)

// The chat agent of the conversation tests: its conversation action
// chat.ask answers with the content it got and the number of turns of the
// history handed to it, reporting 10 input and 3 output tokens, in two
// partial chunks when streamed.
const chatAgentSlug = "chat-agent"

func newChatAgent(tb testing.TB, conv string, calls *sync.Map) *supervaizer.Agent {
	tb.Helper()
	a, err := supervaizer.NewAgent(supervaizer.AgentSpec{
		Name: "Chat Agent", Version: "1.0.0", Description: "Answers questions.", Conversation: conv,
		Registration: supervaizer.RegistrationSpec{Actions: supervaizer.Actions("chat.ask", "job.start")},
	})
	require.NoError(tb, err)
	supervaizer.HandleActionFor(a, "chat.ask", func(ctx context.Context, req *supervaizer.ActionRequest, in conversation.Input) (*supervaizer.ActionResult, error) {
		if calls != nil {
			n, _ := calls.LoadOrStore(req.RequestID, new(int))
			*n.(*int)++
		}
		conversation.ReportUsage(ctx, conversation.Usage{InputTokens: 4, OutputTokens: 1})
		conversation.ReportUsage(ctx, conversation.Usage{InputTokens: 6, OutputTokens: 2})
		answer := fmt.Sprintf("you said %q after %d turns", in.Content, len(in.History))
		if in.Stream {
			half := len(answer) / 2
			conversation.Emit(ctx, answer[:half])
			conversation.Emit(ctx, answer[half:])
		}
		if in.Content == "start a job" {
			res := supervaizer.OK(supervaizer.JobStarted(req.JobID, nil))
			res.JobState = &supervaizer.JobState{Job: supervaizer.Job{ID: req.JobID, AgentSlug: chatAgentSlug, MissionID: req.MissionID,
				Status: "running", Source: supervaizer.JobSource{Type: "fresh_start"}}}
			return res, nil
		}
		return conversation.Reply(&conversation.Output{Response: answer,
			Meta: &conversation.Meta{Agents: []string{"router", "chat"}}}), nil
	})
	a.HandleAction("job.start", func(context.Context, *supervaizer.ActionRequest) (*supervaizer.ActionResult, error) {
		return supervaizer.OK(), nil
	})
	return a
}

func newChatServer(tb testing.TB, conv string, st store.Store, calls *sync.Map) *supervaizer.Server {
	tb.Helper()
	opts := []supervaizer.Option{supervaizer.WithEnv(emptyEnv), supervaizer.WithServerID(testServerID),
		supervaizer.WithAPIKey(testWriteKey, supervaizer.ScopeWrite), supervaizer.WithLocalMode(true)}
	if st != nil {
		opts = append(opts, supervaizer.WithStore(st))
	}
	srv, err := supervaizer.NewServer([]*supervaizer.Agent{newChatAgent(tb, conv, calls)}, opts...)
	require.NoError(tb, err)
	return srv
}

// textMessage is message params of a text message of binding v ("0.3" or
// "1.0").
func textMessage(v, messageID, contextID string, texts ...string) map[string]any {
	parts := make([]any, len(texts))
	for i, t := range texts {
		if v == "0.3" {
			parts[i] = map[string]any{"kind": "text", "text": t}
		} else {
			parts[i] = map[string]any{"text": t}
		}
	}
	msg := map[string]any{"messageId": messageID, "parts": parts}
	if v == "0.3" {
		msg["kind"], msg["role"] = "message", "user"
	} else {
		msg["role"] = "ROLE_USER"
	}
	if contextID != "" {
		msg["contextId"] = contextID
	}
	return map[string]any{"message": msg}
}

// chatReply is the agent Message of a conversation's answer, in either
// binding's shape.
type chatReply struct {
	ContextID string `json:"contextId"`
	Role      string `json:"role"`
	Parts     []struct {
		Kind string          `json:"kind"`
		Text *string         `json:"text"`
		Data json.RawMessage `json:"data"`
	} `json:"parts"`
	Metadata map[string]conversation.Usage `json:"metadata"`
}

func replyOf(tb testing.TB, v string, resp rpcResponse) chatReply {
	tb.Helper()
	require.Nil(tb, resp.Error, "error: %+v", resp.Error)
	raw := resp.Result
	if v == "1.0" {
		var w struct{ Message json.RawMessage }
		require.NoError(tb, json.Unmarshal(raw, &w))
		require.NotNil(tb, w.Message, "result: %s", raw)
		raw = w.Message
	}
	var m chatReply
	require.NoError(tb, json.Unmarshal(raw, &m), "result: %s", raw)
	require.NotEmpty(tb, m.Parts, "result: %s", raw)
	require.NotNil(tb, m.Parts[0].Text, "result: %s", raw)
	return m
}

var sendMethods = map[string]string{"0.3": "message/send", "1.0": "SendMessage"}

func TestConversationTextMessage(t *testing.T) {
	for _, v := range []string{"0.3", "1.0"} {
		t.Run(v, func(t *testing.T) {
			srv := newChatServer(t, "chat.ask", nil, nil)
			first := replyOf(t, v, callA2A(t, srv, a2aCall{method: sendMethods[v], params: textMessage(v, "m-1", "ctx-1", "hello", "there")}))
			assert.Equal(t, `you said "hello\nthere" after 0 turns`, *first.Parts[0].Text)
			assert.Equal(t, "ctx-1", first.ContextID)
			require.Len(t, first.Parts, 2, "the rest of the output is a data part")
			assert.JSONEq(t, `{"meta":{"agents":["router","chat"]},"usage":{"input_tokens":10,"output_tokens":3,"cache_creation_input_tokens":0,"cache_read_input_tokens":0}}`, string(first.Parts[1].Data))
			assert.Equal(t, conversation.Usage{InputTokens: 10, OutputTokens: 3}, first.Metadata["supervaizer/usage"])

			second := replyOf(t, v, callA2A(t, srv, a2aCall{method: sendMethods[v], params: textMessage(v, "m-2", "ctx-1", "again")}))
			assert.Equal(t, `you said "again" after 2 turns`, *second.Parts[0].Text, "the second message sees the first exchange")

			retry := replyOf(t, v, callA2A(t, srv, a2aCall{method: sendMethods[v], params: textMessage(v, "m-2", "ctx-1", "again")}))
			assert.Equal(t, `you said "again" after 2 turns`, *retry.Parts[0].Text, "a retried messageId sees the history before it")
			third := replyOf(t, v, callA2A(t, srv, a2aCall{method: sendMethods[v], params: textMessage(v, "m-3", "ctx-1", "third")}))
			assert.Equal(t, `you said "third" after 4 turns`, *third.Parts[0].Text, "the retry appended nothing")

			other := replyOf(t, v, callA2A(t, srv, a2aCall{method: sendMethods[v], params: textMessage(v, "m-4", "", "new")}))
			assert.Equal(t, `you said "new" after 0 turns`, *other.Parts[0].Text)
			assert.NotEmpty(t, other.ContextID, "a message without contextId starts a conversation and names it")
		})
	}
}

func TestConversationWithoutAction(t *testing.T) {
	for _, v := range []string{"0.3", "1.0"} {
		t.Run(v, func(t *testing.T) {
			srv := newChatServer(t, "", nil, nil)
			resp := callA2A(t, srv, a2aCall{method: sendMethods[v], params: textMessage(v, "m-1", "", "hello")})
			require.NotNil(t, resp.Error)
			assert.Equal(t, -32602, resp.Error.Code)
			assert.Contains(t, resp.Error.Message, "no conversation action")
			assert.Contains(t, resp.Error.Message, `"action":"<action id>","input":{...}`, "the message shows the data part")
		})
	}
}

func TestConversationStartsJob(t *testing.T) {
	srv := newChatServer(t, "chat.ask", nil, nil)
	task := taskOf(t, callA2A(t, srv, a2aCall{method: "message/send", params: textMessage("0.3", "m-job", "ctx-j", "start a job")}))
	assert.Equal(t, "working", string(task.Status.State))
}

func TestConversationActionInvokeUnchanged(t *testing.T) {
	srv := newChatServer(t, "chat.ask", nil, nil)
	resp := callA2A(t, srv, a2aCall{method: supervaizer.MethodActionInvoke, params: map[string]any{"action_request": map[string]any{
		"request_id": "r-1", "actor": map[string]any{"user_id": "u"}, "workspace": map[string]any{"id": "local"}, "mission_id": "mission-1",
		"agent_slug": chatAgentSlug, "surface": "job.start", "action": "chat.ask",
		"input": map[string]any{"content": "hi", "history": []any{map[string]any{"role": "user", "content": "before"}}}}}})
	require.Nil(t, resp.Error, "%+v", resp.Error)
	var res struct {
		Status string
		Data   conversation.Output
	}
	require.NoError(t, json.Unmarshal(resp.Result, &res))
	assert.Equal(t, "ok", res.Status)
	assert.Equal(t, `you said "hi" after 1 turns`, res.Data.Response)
	assert.Equal(t, &conversation.Usage{InputTokens: 10, OutputTokens: 3}, res.Data.Usage, "the SDK puts the reported usage in the output")

	resp = callA2A(t, srv, a2aCall{method: supervaizer.MethodActionInvoke, params: map[string]any{"action_request": map[string]any{
		"request_id": "r-2", "actor": map[string]any{"user_id": "u"}, "workspace": map[string]any{"id": "local"}, "mission_id": "mission-1",
		"agent_slug": chatAgentSlug, "surface": "job.start", "action": "chat.ask",
		"input": map[string]any{"content": "hi", "api_key": "sk-secret"}}}})
	require.NotNil(t, resp.Error, "api_key never travels in a payload")
	assert.Equal(t, -32602, resp.Error.Code)
	assert.NotContains(t, string(resp.Error.Data), "sk-secret")
}

func TestConversationConcurrentTurns(t *testing.T) {
	srv := newChatServer(t, "chat.ask", nil, nil)
	const n = 8
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			replyOf(t, "0.3", callA2A(t, srv, a2aCall{method: "message/send", params: textMessage("0.3", fmt.Sprintf("c-%d", i), "ctx-c", "x")}))
		})
	}
	wg.Wait()
	last := replyOf(t, "0.3", callA2A(t, srv, a2aCall{method: "message/send", params: textMessage("0.3", "c-last", "ctx-c", "x")}))
	assert.True(t, strings.HasSuffix(*last.Parts[0].Text, fmt.Sprintf("after %d turns", 2*n)), "no turn lost: %s", *last.Parts[0].Text)
}

// TestConversationGolden pins the answer to a text message in both
// bindings: the agent Message (text part, data part, usage metadata).
func TestConversationGolden(t *testing.T) {
	for _, v := range []string{"0.3", "1.0"} {
		t.Run(v, func(t *testing.T) {
			srv := newChatServer(t, "chat.ask", nil, nil)
			w := postA2A(t, srv, a2aCall{method: sendMethods[v], params: textMessage(v, "m-1", "ctx-1", "hello")})
			path := filepath.Join("testdata", "conversation", "send_v"+strings.ReplaceAll(v, ".", "")+".response.json")
			got := w.Body.Bytes()
			if !svtest.Golden(t, path, got) {
				return
			}
			want, err := os.ReadFile(path)
			require.NoError(t, err)
			var compact bytes.Buffer
			require.NoError(t, json.Compact(&compact, want))
			assert.Equal(t, compact.String(), string(got), "byte for byte")
		})
	}
}

func TestConversationCardSkill(t *testing.T) {
	srv := newChatServer(t, "chat.ask", nil, nil)
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "http://localhost/.well-known/agent.json", nil))
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	var card struct {
		Skills []struct {
			ID         string
			InputModes []string
			Examples   []string
		}
	}
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &card))
	found := false
	for _, s := range card.Skills {
		if s.ID == "chat.ask" {
			found = true
			assert.Equal(t, []string{"text/plain", "application/json"}, s.InputModes)
			assert.Equal(t, []string{"What can you do?"}, s.Examples)
		} else {
			assert.Equal(t, []string{"application/json"}, s.InputModes, s.ID)
			assert.Empty(t, s.Examples, s.ID)
		}
	}
	assert.True(t, found, "card: %s", w.Body.String())
}

// FuzzConversationMessage: any message params sent to an agent with a
// conversation action get one JSON-RPC answer; a result is a Message whose
// first part is the text answer, or a Task.
func FuzzConversationMessage(f *testing.F) {
	for _, seed := range []string{
		`{"message":{"messageId":"m1","parts":[{"kind":"text","text":"hi"}]}}`,
		`{"message":{"messageId":"m2","contextId":"c","parts":[{"kind":"text","text":"a"},{"kind":"text","text":"b"}]}}`,
		`{"message":{"messageId":"m3","parts":[{"kind":"text","text":"start a job"}]}}`,
		`{"message":{"messageId":"m4","parts":[{"kind":"text","text":""}]}}`,
		`{"message":{"messageId":"m5","parts":[{"kind":"text","text":1}]}}`,
		`{"message":{"messageId":"m6","parts":[{"kind":"text","text":"x"},{"kind":"data","data":{}}]}}`,
		`{"message":{"messageId":"m7","parts":[{"text":"x"}]}}`, `{"message":{"parts":[]}}`, `{}`, `null`,
	} {
		f.Add([]byte(seed))
	}
	srv := newChatServer(f, "chat.ask", nil, nil)
	f.Fuzz(func(t *testing.T, params []byte) {
		body := append(append([]byte(`{"jsonrpc":"2.0","id":"f","method":"message/send","params":`), params...), '}')
		w := postA2A(t, srv, a2aCall{raw: body})
		require.Equal(t, http.StatusOK, w.Code, "body: %s", w.Body)
		var resp struct {
			Result *struct {
				Kind  string
				Parts []struct{ Kind string }
			} `json:"result"`
			Error *rpcError `json:"error"`
		}
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &resp), "body: %s", w.Body)
		require.True(t, (resp.Result == nil) != (resp.Error == nil), "exactly one of result and error: %s", w.Body)
		if resp.Error != nil {
			require.NotZero(t, resp.Error.Code)
			return
		}
		require.Contains(t, []string{"task", "message"}, resp.Result.Kind)
		if resp.Result.Kind == "message" {
			require.NotEmpty(t, resp.Result.Parts, "body: %s", w.Body)
		}
	})
}

// sseData splits an event stream's body into its events' data.
func sseData(body string) []json.RawMessage {
	var out []json.RawMessage
	for _, line := range strings.Split(body, "\n") {
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			out = append(out, json.RawMessage(d))
		}
	}
	return out
}

var streamMethods = map[string]string{"0.3": "message/stream", "1.0": "SendStreamingMessage"}
var getMethods = map[string]string{"0.3": "tasks/get", "1.0": "GetTask"}

// TestConversationStream: a streamed conversation is a task: working, an
// artifact-update per chunk the handler emits, the whole answer, then
// completed; tasks/get answers it; the history has the exchange.
func TestConversationStream(t *testing.T) {
	for _, v := range []string{"0.3", "1.0"} {
		t.Run(v, func(t *testing.T) {
			srv := newChatServer(t, "chat.ask", nil, nil)
			w := postA2A(t, srv, a2aCall{method: streamMethods[v], params: textMessage(v, "s-1", "ctx-s", "stream me")})
			require.Equal(t, http.StatusOK, w.Code)
			assert.Equal(t, "text/event-stream", w.Header().Get("Content-Type"))
			events := sseData(w.Body.String())
			require.Len(t, events, 5, "task, two chunks, the whole answer, completed: %s", w.Body)
			type result struct {
				Kind, ID, TaskID string
				Status           struct{ State string }
				Artifact         struct {
					ArtifactID string
					Parts      []struct{ Text string }
				}
				Append, LastChunk bool
				Task              *json.RawMessage
				ArtifactUpdate    *json.RawMessage
				StatusUpdate      *json.RawMessage
			}
			read := func(raw json.RawMessage) result {
				var env struct{ Result json.RawMessage }
				require.NoError(t, json.Unmarshal(raw, &env), "%s", raw)
				inner := env.Result
				var r result
				require.NoError(t, json.Unmarshal(inner, &r))
				for _, wrapped := range []*json.RawMessage{r.Task, r.ArtifactUpdate, r.StatusUpdate} {
					if wrapped != nil { // the 1.0 form: the event in the member naming it
						inner = *wrapped
						r = result{}
						require.NoError(t, json.Unmarshal(inner, &r))
					}
				}
				return r
			}
			working, completed := "working", "completed"
			if v == "1.0" {
				working, completed = "TASK_STATE_WORKING", "TASK_STATE_COMPLETED"
			}
			task := read(events[0])
			assert.Equal(t, working, task.Status.State)
			var chunks string
			for i, ev := range events[1:3] {
				a := read(ev)
				assert.Equal(t, "response", a.Artifact.ArtifactID)
				assert.Equal(t, i > 0, a.Append)
				assert.False(t, a.LastChunk)
				chunks += a.Artifact.Parts[0].Text
			}
			whole := `you said "stream me" after 0 turns`
			assert.Equal(t, whole, chunks)
			last := read(events[3])
			assert.True(t, last.LastChunk)
			assert.Equal(t, whole, last.Artifact.Parts[0].Text)
			assert.Equal(t, completed, read(events[4]).Status.State, "%s", events[4])

			got := callA2A(t, srv, a2aCall{method: getMethods[v], params: map[string]any{"id": task.ID}})
			require.Nil(t, got.Error, "%+v", got.Error)
			assert.Contains(t, string(got.Result), completed)
			assert.Contains(t, string(got.Result), `you said \"stream me\" after 0 turns`)

			next := replyOf(t, v, callA2A(t, srv, a2aCall{method: sendMethods[v], params: textMessage(v, "s-2", "ctx-s", "and now?")}))
			assert.Equal(t, `you said "and now?" after 2 turns`, *next.Parts[0].Text)
		})
	}
}

// TestConversationStreamGolden pins the events of a streamed conversation
// in both bindings (a JSON array of the events' data).
func TestConversationStreamGolden(t *testing.T) {
	for _, v := range []string{"0.3", "1.0"} {
		t.Run(v, func(t *testing.T) {
			srv := newChatServer(t, "chat.ask", nil, nil)
			w := postA2A(t, srv, a2aCall{method: streamMethods[v], params: textMessage(v, "s-1", "ctx-s", "stream me")})
			got, err := json.Marshal(sseData(w.Body.String()))
			require.NoError(t, err)
			path := filepath.Join("testdata", "conversation", "stream_v"+strings.ReplaceAll(v, ".", "")+".events.json")
			if !svtest.Golden(t, path, got) {
				return
			}
			want, err := os.ReadFile(path)
			require.NoError(t, err)
			var compact bytes.Buffer
			require.NoError(t, json.Compact(&compact, want))
			assert.Equal(t, compact.String(), string(got), "byte for byte")
		})
	}
}

// TestJobUsageSum: the usage of a job's calls is summed in the store, so
// tasks/get shows it after a restart (the bbolt file) and on another
// instance (the same store).
func TestJobUsageSum(t *testing.T) {
	path := filepath.Join(t.TempDir(), "data.db")
	st, err := store.Open(path)
	require.NoError(t, err)
	srv := newChatServer(t, "chat.ask", st, nil)
	task := taskOf(t, callA2A(t, srv, a2aCall{method: "message/send", params: textMessage("0.3", "u-1", "ctx-u", "start a job")}))
	// A second call of the same job: job.sync-like, through action.invoke.
	resp := callA2A(t, srv, a2aCall{method: supervaizer.MethodActionInvoke, params: map[string]any{"action_request": map[string]any{
		"request_id": "r-u2", "actor": map[string]any{"user_id": "u"}, "workspace": map[string]any{"id": "local"}, "mission_id": "ctx-u",
		"job_id": task.ID, "agent_slug": chatAgentSlug, "surface": "job.start", "action": "chat.ask", "input": map[string]any{"content": "more"}}}})
	require.Nil(t, resp.Error, "%+v", resp.Error)
	want := conversation.Usage{InputTokens: 20, OutputTokens: 6}
	usageOf := func(srv http.Handler) conversation.Usage {
		got := callA2A(t, srv, a2aCall{method: "tasks/get", params: map[string]any{"id": task.ID}})
		require.Nil(t, got.Error, "%+v", got.Error)
		var tk struct{ Metadata map[string]conversation.Usage }
		require.NoError(t, json.Unmarshal(got.Result, &tk))
		return tk.Metadata["supervaizer/usage"]
	}
	assert.Equal(t, want, usageOf(srv))
	require.NoError(t, st.Close())

	st, err = store.Open(path) // the restart
	require.NoError(t, err)
	defer st.Close()
	assert.Equal(t, want, usageOf(newChatServer(t, "chat.ask", st, nil)), "after a restart")
	assert.Equal(t, want, usageOf(newChatServer(t, "chat.ask", st, nil)), "on another server of the store")
}
