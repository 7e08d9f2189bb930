package supervaizer_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	supervaizer "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/a2atask"
)

// TestDocsA2ACurls runs the curl calls of docs/a2a.md, in order and with
// their headers, against the task agent in local mode: each answers a result
// (the streams: a first event), never an error, and the cancel cancels the
// task started first. The 0.3 methods answer a Task; the 1.0 SendMessage
// {"task": …} in the 1.0 shape.
func TestDocsA2ACurls(t *testing.T) {
	doc, err := os.ReadFile("docs/a2a.md")
	require.NoError(t, err)
	srv, _ := newTaskServer(t, supervaizer.WithLocalMode(true))
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	var methods []string
	for line := range strings.Lines(string(doc)) {
		if !strings.HasPrefix(line, "curl ") {
			continue
		}
		require.Contains(t, line, "'X-API-Key: "+supervaizer.LocalModeAPIKey+"'", "the local-mode key")
		_, body, ok := strings.Cut(line, "-d '")
		require.True(t, ok, "a curl posts its body with -d: %s", line)
		body = strings.TrimSuffix(strings.TrimSpace(body), "'")
		var req struct {
			Method string `json:"method"`
		}
		require.NoError(t, json.Unmarshal([]byte(body), &req), "body: %s", body)
		methods = append(methods, req.Method)
		t.Run(req.Method, func(t *testing.T) {
			result := docsCall(t, hs.URL, body, curlHeaders(line), strings.HasPrefix(line, "curl -sN"))
			if req.Method == a2atask.MethodSendMessage {
				var got struct {
					Task struct {
						ID     string `json:"id"`
						Status struct {
							State string `json:"state"`
						} `json:"status"`
					} `json:"task"`
				}
				require.NoError(t, json.Unmarshal(result, &got))
				assert.Equal(t, "job-43", got.Task.ID, "result: %s", result)
				assert.Equal(t, a2atask.StateSubmitted.ProtoName(), got.Task.Status.State, "returnImmediately: the job as started")
				return
			}
			var got struct{ Kind, ID string }
			require.NoError(t, json.Unmarshal(result, &got))
			assert.Equal(t, "task", got.Kind, "result: %s", result)
			if req.Method == a2atask.MethodTasksCancel {
				var task a2atask.Task
				require.NoError(t, json.Unmarshal(result, &task))
				assert.Equal(t, a2atask.StateCanceled, task.Status.State)
			}
		})
	}
	assert.ElementsMatch(t, []string{a2atask.MethodMessageSend, a2atask.MethodTasksGet, a2atask.MethodTasksResubscribe,
		a2atask.MethodTasksCancel, a2atask.MethodMessageStream, a2atask.MethodSendMessage}, methods,
		"one curl per 0.3 method, and the 1.0 SendMessage")
}

// curlHeaders reads the -H 'Name: value' options of a curl line.
func curlHeaders(line string) http.Header {
	h := http.Header{}
	for _, opt := range strings.Split(line, "-H '")[1:] {
		name, value, ok := strings.Cut(opt[:strings.IndexByte(opt, '\'')], ": ")
		if ok {
			h.Set(name, value)
		}
	}
	return h
}

// docsCall posts body and returns the result of the answer, or of the first
// event of a stream (the stream is then closed).
func docsCall(t *testing.T, base, body string, headers http.Header, stream bool) json.RawMessage {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/a2a", strings.NewReader(body))
	require.NoError(t, err)
	req.Header = headers.Clone()
	req.Header.Set(supervaizer.HeaderAPIKey, testWriteKey)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var raw []byte
	if stream {
		assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				raw = []byte(data)
				break
			}
		}
	} else {
		var b strings.Builder
		_, err := bufio.NewReader(resp.Body).WriteTo(&b)
		require.NoError(t, err)
		raw = []byte(b.String())
	}
	var answer struct {
		Result json.RawMessage `json:"result"`
		Error  *rpcError       `json:"error"`
	}
	require.NoError(t, json.Unmarshal(raw, &answer), "answer: %s", raw)
	require.Nil(t, answer.Error, "answer: %s", raw)
	return answer.Result
}
