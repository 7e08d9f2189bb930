package supervaizer_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	sv "github.com/supervaize/supervaizer-go"
)

// TestRequestIdentifiersAreBoundedOnTheWire (spec item 74, issue 35 row 11):
// a request_id, job_id, mission_id or idempotency_key longer than 256 bytes
// of UTF-8, or holding a control character, U+2028 or U+2029, is answered
// -32602 naming the field (data.errors[].path), before the handler runs.
// It fails on the code before the rule: the 100 KB request_id, the NUL and
// the U+2028 reached the handler. The A2A messageId, taskId and contextId,
// which the A2A bindings decode, are not covered here.
func TestRequestIdentifiersAreBoundedOnTheWire(t *testing.T) {
	a, err := sv.NewAgent(sv.AgentSpec{Name: "Research Agent", Version: "1", Registration: mustRegistration(t, researchAgentSpec())})
	require.NoError(t, err)
	var calls atomic.Int32
	a.HandleAction("job.start", func(context.Context, *sv.ActionRequest) (*sv.ActionResult, error) {
		calls.Add(1)
		return sv.OK(), nil
	})
	a.HandleSurface("job.start", func(context.Context, *sv.SurfaceRequest) (*sv.SurfaceResult, error) {
		calls.Add(1)
		return &sv.SurfaceResult{Surface: "job.start", Document: json.RawMessage(`{"type":"Configurator"}`)}, nil
	})
	srv := newLocalServer(t, a)
	tests := []struct {
		name, method, key, id string
		refused               bool
	}{
		{"request_id of 100 KB", sv.MethodActionInvoke, "request_id", strings.Repeat("r", 100<<10), true},
		{"job_id with NUL", sv.MethodActionInvoke, "job_id", "job\x00", true},
		{"idempotency_key with U+2028", sv.MethodActionInvoke, "idempotency_key", "key\u2028", true},
		{"mission_id of 129 two-byte characters", sv.MethodSurfaceLoad, "mission_id", strings.Repeat("é", 129), true},
		{"request_id with U+2029", sv.MethodSurfaceLoad, "request_id", "r\u2029", true},
		{"request_id of 256 bytes", sv.MethodActionInvoke, "request_id", strings.Repeat("r", 256), false},
		{"job_id of 128 two-byte characters", sv.MethodSurfaceLoad, "job_id", strings.Repeat("é", 128), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			params := map[string]any{
				"request_id": "r-1", "actor": map[string]any{"user_id": "u-1"}, "workspace": map[string]any{"id": "w-1"},
				"mission_id": "m-1", "agent_slug": "research-agent", "surface": "job.start",
			}
			if tt.method == sv.MethodActionInvoke {
				params["action"] = "job.start"
			}
			params[tt.key] = tt.id
			body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": tt.method, "params": params})
			require.NoError(t, err)
			r := httptest.NewRequest("POST", "http://localhost/a2a", strings.NewReader(string(body)))
			r.Header.Set("X-API-Key", sv.LocalModeAPIKey)
			w := httptest.NewRecorder()
			before := calls.Load()
			srv.ServeHTTP(w, r)
			var resp struct {
				Error *struct {
					Code int `json:"code"`
					Data struct {
						Errors []struct{ Path, Type, Msg string } `json:"errors"`
					} `json:"data"`
				} `json:"error"`
			}
			require.NoError(t, json.Unmarshal(w.Body.Bytes(), &resp), w.Body.String())
			if !tt.refused {
				assert.Nil(t, resp.Error, w.Body.String())
				assert.Equal(t, before+1, calls.Load(), "the handler runs")
				return
			}
			require.NotNil(t, resp.Error, w.Body.String())
			assert.Equal(t, -32602, resp.Error.Code)
			require.Len(t, resp.Error.Data.Errors, 1, w.Body.String())
			assert.Equal(t, "/"+tt.key, resp.Error.Data.Errors[0].Path)
			assert.Equal(t, "identifier", resp.Error.Data.Errors[0].Type)
			assert.Equal(t, before, calls.Load(), "no handler call")
		})
	}
}
