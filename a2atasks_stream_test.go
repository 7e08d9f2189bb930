package supervaizer_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	supervaizer "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/a2atask"
	"github.com/supervaize/supervaizer-go/errcode"
)

// streamEvent is one event of an A2A stream: the JSON-RPC response in its data.
type streamEvent struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *rpcError       `json:"error"`
	Kind   string          `json:"-"`
}

// openStream posts a streaming call and returns a channel of its events,
// closed when the stream ends, and the comments (heartbeats) it saw.
func openStream(t *testing.T, base, method string, params any) (<-chan streamEvent, *http.Response) {
	t.Helper()
	body := rpcBody(t, "s-1", method, params)
	req, err := http.NewRequest(http.MethodPost, base+"/a2a", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(supervaizer.HeaderAPIKey, testWriteKey)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { _ = resp.Body.Close() })
	events := make(chan streamEvent, 16)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var ev streamEvent
			if json.Unmarshal([]byte(data), &ev) != nil {
				ev.Kind = "invalid: " + data
			} else if ev.Result != nil {
				var k struct{ Kind string }
				_ = json.Unmarshal(ev.Result, &k)
				ev.Kind = k.Kind
			} else {
				ev.Kind = "error"
			}
			events <- ev
		}
	}()
	return events, resp
}

// next returns the next event, failing after a while.
func next(t *testing.T, events <-chan streamEvent) streamEvent {
	t.Helper()
	select {
	case ev, ok := <-events:
		require.True(t, ok, "the stream ended")
		require.Equal(t, `"s-1"`, string(ev.ID), "each event answers the request's id: %s", ev.Kind)
		return ev
	case <-time.After(5 * time.Second):
		t.Fatal("no event")
		return streamEvent{}
	}
}

// ended checks that the stream ends with no further event.
func ended(t *testing.T, events <-chan streamEvent) {
	t.Helper()
	select {
	case ev, ok := <-events:
		require.False(t, ok, "unexpected event %s: %s", ev.Kind, ev.Result)
	case <-time.After(5 * time.Second):
		t.Fatal("the stream did not end")
	}
}

func statusUpdate(t *testing.T, ev streamEvent) a2atask.StatusUpdateEvent {
	t.Helper()
	require.Equal(t, "status-update", ev.Kind, "event: %s", ev.Result)
	var u a2atask.StatusUpdateEvent
	require.NoError(t, json.Unmarshal(ev.Result, &u))
	return u
}

func artifactUpdate(t *testing.T, ev streamEvent) a2atask.ArtifactUpdateEvent {
	t.Helper()
	require.Equal(t, "artifact-update", ev.Kind, "event: %s", ev.Result)
	var u a2atask.ArtifactUpdateEvent
	require.NoError(t, json.Unmarshal(ev.Result, &u))
	return u
}

// advanceJob sets the status of job id through action.invoke's A2A twin.
func advanceJob(t *testing.T, srv http.Handler, msgID, id, status string) {
	t.Helper()
	params := taskMessage(msgID, "job.advance", map[string]any{"status": status}, func(_, m map[string]any) { m["taskId"] = id })
	require.Nil(t, callA2A(t, srv, a2aCall{method: a2atask.MethodMessageSend, params: params}).Error)
}

// TestA2AMessageStream: the Task first, then for each change an
// artifact-update and a status-update, in order; the last is final at a
// terminal or input-required state, and the stream ends.
func TestA2AMessageStream(t *testing.T) {
	srv, _ := newTaskServer(t, supervaizer.WithLocalMode(true), supervaizer.WithSSEHeartbeat(20*time.Millisecond))
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)

	events, resp := openStream(t, hs.URL, a2atask.MethodMessageStream, taskMessage("msg-stream", "job.start",
		map[string]any{"topic_id": "t", "status": "pending"}, func(_, m map[string]any) { m["taskId"] = "job-s" }))
	assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	first := next(t, events)
	require.Equal(t, "task", first.Kind)
	var task a2atask.Task
	require.NoError(t, json.Unmarshal(first.Result, &task))
	assert.Equal(t, a2atask.StateSubmitted, task.Status.State)

	time.Sleep(60 * time.Millisecond) // heartbeats (comments) are skipped by clients
	advanceJob(t, srv, "adv-1", "job-s", "running")
	art := artifactUpdate(t, next(t, events))
	assert.Equal(t, "job-s", art.TaskID)
	assert.Equal(t, a2atask.ArtifactJobState, art.Artifact.ArtifactID)
	assert.Contains(t, string(art.Artifact.Parts[0].Data), `"status":"running"`)
	st := statusUpdate(t, next(t, events))
	assert.Equal(t, a2atask.StateWorking, st.Status.State)
	assert.False(t, st.Final)

	advanceJob(t, srv, "adv-2", "job-s", "running") // no change: no event
	advanceJob(t, srv, "adv-3", "job-s", "completed")
	artifactUpdate(t, next(t, events))
	st = statusUpdate(t, next(t, events))
	assert.Equal(t, a2atask.StateCompleted, st.Status.State)
	assert.True(t, st.Final)
	ended(t, events)
}

// TestA2AStreamOneEvent: a stream whose answer is not a task to follow has
// one event, then ends.
func TestA2AStreamOneEvent(t *testing.T) {
	srv, _ := newTaskServer(t, supervaizer.WithLocalMode(true))
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	tests := []struct {
		name   string
		method string
		params any
		kind   string
		code   int
	}{
		{"a result without job_state", a2atask.MethodMessageStream, taskMessage("m-help", "topic.help", nil, nil), "message", 0},
		{"a failed start", a2atask.MethodMessageStream, taskMessage("m-rej", "job.start", map[string]any{"topic_id": "reject"}, nil), "task", 0},
		{"a job awaiting a person", a2atask.MethodMessageStream, taskMessage("m-await", "job.start", map[string]any{"topic_id": "t", "status": "awaiting"}, nil), "task", 0},
		{"params without the data part", a2atask.MethodMessageStream, map[string]any{"message": map[string]any{"messageId": "m"}}, "error", -32602},
		{"resubscribe to an unknown task", a2atask.MethodTasksResubscribe, map[string]any{"id": "job-none"}, "error", int(errcode.TaskNotFound)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			events, _ := openStream(t, hs.URL, tt.method, tt.params)
			ev := next(t, events)
			assert.Equal(t, tt.kind, ev.Kind)
			if tt.code != 0 {
				require.NotNil(t, ev.Error)
				assert.Equal(t, tt.code, ev.Error.Code)
			}
			if tt.kind == "task" { // a settled Task: the 0.3 stream ends with a final status update (item 72)
				assert.True(t, statusUpdate(t, next(t, events)).Final)
			}
			ended(t, events)
		})
	}
}

// TestA2AResubscribe: tasks/resubscribe mid-job answers the task as it is,
// then its changes, and ends at the final state.
func TestA2AResubscribe(t *testing.T) {
	srv, _ := newTaskServer(t, supervaizer.WithLocalMode(true))
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	startTask(t, srv, "job-re", "active", "")
	events, _ := openStream(t, hs.URL, a2atask.MethodTasksResubscribe, map[string]any{"id": "job-re"})
	first := next(t, events)
	require.Equal(t, "task", first.Kind)
	var task a2atask.Task
	require.NoError(t, json.Unmarshal(first.Result, &task))
	assert.Equal(t, a2atask.StateWorking, task.Status.State)

	advanceJob(t, srv, "adv-re", "job-re", "stopped")
	artifactUpdate(t, next(t, events))
	st := statusUpdate(t, next(t, events))
	assert.Equal(t, a2atask.StateCanceled, st.Status.State)
	assert.True(t, st.Final)
	ended(t, events)
}
