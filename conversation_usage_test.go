package supervaizer_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/conversation"
	svtest "github.com/supervaize/supervaizer-go/testing"
)

// dataMessage is message params of binding v ("0.3" or "1.0") whose one
// data part calls action with input.
func dataMessage(v, messageID, action string, input any) map[string]any {
	part := map[string]any{"data": map[string]any{"action": action, "input": input}}
	msg := map[string]any{"messageId": messageID, "parts": []any{part}, "role": "ROLE_USER"}
	if v == "0.3" {
		part["kind"] = "data"
		msg["kind"], msg["role"] = "message", "user"
	}
	return map[string]any{"message": msg}
}

// answerUsage reads metadata["supervaizer/usage"] of the object a result
// is (0.3) or wraps (1.0: {"task":…}, {"message":…}, {"statusUpdate":…});
// found is false when the metadata has no such key.
func answerUsage(tb testing.TB, v string, result json.RawMessage) (u conversation.Usage, found bool) {
	tb.Helper()
	inner := result
	if v == "1.0" {
		var w map[string]json.RawMessage
		require.NoError(tb, json.Unmarshal(result, &w), "%s", result)
		require.Len(tb, w, 1, "a 1.0 result wraps one object: %s", result)
		for _, o := range w {
			inner = o
		}
	}
	var o struct {
		Metadata map[string]json.RawMessage `json:"metadata"`
	}
	require.NoError(tb, json.Unmarshal(inner, &o), "%s", inner)
	raw, found := o.Metadata["supervaizer/usage"]
	if found {
		require.NoError(tb, json.Unmarshal(raw, &u))
	}
	return u, found
}

// TestAnswerUsageMetadata: every A2A answer of a call whose handler reported
// usage carries it in its metadata (spec item 82), in both bindings: the
// Task of a job a conversation starts, the reply to a data-part call, the
// final event of a streamed conversation; an answer without usage has no
// such key.
func TestAnswerUsageMetadata(t *testing.T) {
	reported := conversation.Usage{InputTokens: 10, OutputTokens: 3}
	for _, v := range []string{"0.3", "1.0"} {
		t.Run(v, func(t *testing.T) {
			srv := newChatServer(t, "chat.ask", nil, nil)
			cases := []struct {
				name   string
				params map[string]any
				want   bool
			}{
				{"conversation starts a job", textMessage(v, "u-job", "ctx-u", "start a job"), true},
				{"data-part call with usage", dataMessage(v, "u-data", "chat.ask", map[string]any{"content": "hi"}), true},
				{"data-part call without usage", dataMessage(v, "u-none", "job.start", map[string]any{}), false},
			}
			for _, tc := range cases {
				resp := callA2A(t, srv, a2aCall{method: sendMethods[v], params: tc.params})
				require.Nil(t, resp.Error, "%s: %+v", tc.name, resp.Error)
				u, found := answerUsage(t, v, resp.Result)
				assert.Equal(t, tc.want, found, "%s: %s", tc.name, resp.Result)
				if tc.want {
					assert.Equal(t, reported, u, tc.name)
				}
			}

			w := postA2A(t, srv, a2aCall{method: streamMethods[v], params: textMessage(v, "u-s", "ctx-us", "stream me")})
			require.Equal(t, http.StatusOK, w.Code)
			events := sseData(w.Body.String())
			require.NotEmpty(t, events)
			for i, ev := range events {
				var env struct{ Result json.RawMessage }
				require.NoError(t, json.Unmarshal(ev, &env))
				u, found := answerUsage(t, v, env.Result)
				if i < len(events)-1 {
					assert.False(t, found, "only the final event carries the usage: %s", ev)
					continue
				}
				assert.True(t, found, "the final event carries the usage: %s", ev)
				assert.Equal(t, reported, u)
			}
		})
	}
}

// TestAnswerUsageGolden pins, in both bindings, the answers that carry the
// usage the handler reported: the Task of a job a conversation starts and
// the reply to a data-part call.
func TestAnswerUsageGolden(t *testing.T) {
	for _, v := range []string{"0.3", "1.0"} {
		for name, params := range map[string]map[string]any{
			"job":  textMessage(v, "g-job", "ctx-g", "start a job"),
			"data": dataMessage(v, "g-data", "chat.ask", map[string]any{"content": "hi"}),
		} {
			t.Run(v+"/"+name, func(t *testing.T) {
				srv := newChatServer(t, "chat.ask", nil, nil)
				got := postA2A(t, srv, a2aCall{method: sendMethods[v], params: params}).Body.Bytes()
				path := filepath.Join("testdata", "conversation", name+"_v"+strings.ReplaceAll(v, ".", "")+".response.json")
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
}
