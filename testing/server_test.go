package testing_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	supervaizer "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/checkpoint"
	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/errcode"
	"github.com/supervaize/supervaizer-go/resource"
	svtest "github.com/supervaize/supervaizer-go/testing"
)

func TestTestServerInvoke(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		action   string
		input    any
		wantCode errcode.Code   // 0 means success
		wantData map[string]any // checked when set
	}{
		{"ok", contracts.DefaultStartAction, startInput{TopicID: "t-1"}, 0, nil},
		{"raw input", contracts.DefaultStartAction, json.RawMessage(`{"topic_id":"t-1"}`), 0, nil},
		{"missing field", contracts.DefaultStartAction, map[string]any{}, errcode.InvalidParams, nil},
		{"input not an object", echoAction, []int{1}, errcode.InvalidParams, nil},
		{"undeclared action", "job.nope", nil, errcode.ActionNotRegistered,
			map[string]any{"agent_slug": agentSlug, "action": "job.nope"}},
		{"handler error", boomAction, nil, errcode.InternalError,
			map[string]any{"agent_slug": agentSlug, "action": boomAction}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ts := svtest.NewTestServer(t, []*supervaizer.Agent{newServedAgent(t, startIdempotent)})
			res, err := ts.Invoke(t.Context(), ts.Request(tt.action, tt.input))
			assert.Equal(t, tt.wantCode, supervaizer.CodeOf(err), "error: %v", err)
			if tt.wantCode == 0 {
				require.NotNil(t, res)
				assert.Equal(t, contracts.StatusOK, res.Status)
				return
			}
			assert.Nil(t, res)
			var e *supervaizer.Error
			require.ErrorAs(t, err, &e)
			assert.NotEmpty(t, e.Error())
			if tt.wantData != nil {
				assert.Equal(t, tt.wantData, e.Data())
			}
		})
	}
}

func TestTestServerInvalidParamsData(t *testing.T) {
	t.Parallel()
	ts := svtest.NewTestServer(t, []*supervaizer.Agent{newServedAgent(t, startIdempotent)})
	_, err := ts.Invoke(t.Context(), ts.Request(contracts.DefaultStartAction, map[string]any{}))
	require.Equal(t, errcode.InvalidParams, supervaizer.CodeOf(err))
	var e *supervaizer.Error
	require.ErrorAs(t, err, &e)
	data, ok := e.Data().(map[string]any)
	require.True(t, ok)
	assert.Contains(t, data, "errors")
}

func TestTestServerLoadSurface(t *testing.T) {
	t.Parallel()
	ts := svtest.NewTestServer(t, []*supervaizer.Agent{newServedAgent(t, startIdempotent)})
	res, err := ts.LoadSurface(t.Context(), ts.SurfaceRequest(surfaceID))
	require.NoError(t, err)
	assert.Equal(t, surfaceID, res.Surface)
	require.NotNil(t, res.A2UICatalogVersion)
	assert.Equal(t, "1.0.0", *res.A2UICatalogVersion)
	assert.JSONEq(t, `{"type":"Configurator","surface":"dashboard"}`, string(res.Document))

	_, err = ts.LoadSurface(t.Context(), ts.SurfaceRequest("mission.nope"))
	assert.Equal(t, errcode.SurfaceNotRegistered, supervaizer.CodeOf(err))

	req := ts.SurfaceRequest(surfaceID)
	req.Mission = &contracts.MissionContext{ID: "another-mission"}
	_, err = ts.LoadSurface(t.Context(), req)
	assert.Equal(t, errcode.InvalidParams, supervaizer.CodeOf(err), "mission.id must equal mission_id")

	// The token mirrors the request: no workspace id, no workspace_id claim.
	req = ts.SurfaceRequest(surfaceID)
	req.Workspace = contracts.WorkspaceRef{}
	_, err = ts.LoadSurface(t.Context(), req)
	var e *supervaizer.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, errcode.Unauthorized, supervaizer.CodeOf(e))
	assert.Equal(t, map[string]any{"code": "workspace_authorization_invalid_claims"}, e.Data())
}

func TestTestServerCall(t *testing.T) {
	t.Parallel()
	ts := svtest.NewTestServer(t, []*supervaizer.Agent{newServedAgent(t, startIdempotent)})
	req := ts.Request(echoAction, nil)
	tests := []struct {
		name, method string
		params       any
		token        string
		want         string // a fragment of the body
	}{
		{"success", supervaizer.MethodActionInvoke, map[string]any{"action_request": req}, ts.Studio.TokenForAction(req), `"result":{"status":"ok"`},
		{"flat params", supervaizer.MethodActionInvoke, req, ts.Studio.TokenForAction(req), `"result":{"status":"ok"`},
		{"raw params", supervaizer.MethodActionInvoke, json.RawMessage(`{"x":1}`), "", `"code":-32602`},
		{"no token", supervaizer.MethodActionInvoke, req, "", `"workspace_authorization_missing"`},
		{"unknown method", "supervaizer/nope", nil, "", `"code":-32601`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			body, err := ts.Call(t.Context(), tt.method, tt.params, tt.token)
			require.NoError(t, err)
			assert.True(t, json.Valid(body))
			assert.Contains(t, string(body), `"jsonrpc":"2.0"`)
			assert.Contains(t, string(body), tt.want)
		})
	}

	_, err := ts.Call(t.Context(), "m", func() {}, "")
	assert.ErrorContains(t, err, "encode the JSON-RPC request")
}

func TestTestServerHTTPError(t *testing.T) {
	t.Parallel()
	ts := svtest.NewTestServer(t, []*supervaizer.Agent{newServedAgent(t, startIdempotent)})
	ts.APIKey = "wrong"
	_, err := ts.Invoke(t.Context(), ts.Request(echoAction, nil))
	var he *svtest.HTTPError
	require.ErrorAs(t, err, &he)
	assert.Equal(t, http.StatusUnauthorized, he.StatusCode)
	assert.Contains(t, he.Body, "Invalid or missing API key")
	assert.Contains(t, err.Error(), "HTTP 401 Unauthorized")
	assert.Equal(t, errcode.InternalError, supervaizer.CodeOf(err))

	_, err = ts.LoadSurface(t.Context(), ts.SurfaceRequest(surfaceID))
	require.ErrorAs(t, err, &he)
}

func TestTestServerIsolation(t *testing.T) {
	t.Setenv("SUPERVAIZER_API_KEY", "env-key")
	t.Setenv("SUPERVAIZER_SERVER_ID", "env-server")
	t.Setenv("SUPERVAIZER_WORKSPACE_AUTH_REQUIRED", "false")
	t.Setenv("SUPERVAIZER_LOCAL_MODE", "true")
	ts := svtest.NewTestServer(t, []*supervaizer.Agent{newServedAgent(t, startIdempotent)})
	assert.Equal(t, svtest.DefaultAPIKey, ts.Server.APIKey())
	assert.Equal(t, svtest.DefaultAPIKey, ts.APIKey)
	assert.Equal(t, svtest.DefaultServerID, ts.Server.ServerID())
	_, err := ts.Invoke(t.Context(), ts.Request(echoAction, nil))
	require.NoError(t, err)
	// Workspace authorization is on: no local-mode bypass.
	body, err := ts.Call(t.Context(), supervaizer.MethodActionInvoke, ts.Request(echoAction, nil), "")
	require.NoError(t, err)
	assert.Contains(t, string(body), "workspace_authorization_missing")
}

func TestTestServerOptionsOverride(t *testing.T) {
	t.Parallel()
	ts := svtest.NewTestServer(t, []*supervaizer.Agent{newServedAgent(t, startIdempotent)},
		supervaizer.WithMaxBodyBytes(64))
	_, err := ts.Invoke(t.Context(), ts.Request(echoAction, nil))
	var he *svtest.HTTPError
	require.ErrorAs(t, err, &he)
	assert.Equal(t, http.StatusRequestEntityTooLarge, he.StatusCode)
}

func TestTestServerInvalidConfiguration(t *testing.T) {
	t.Parallel()
	rec := newRecordingTB(t)
	ts := svtest.NewTestServer(rec, []*supervaizer.Agent{newServedAgent(t, startIdempotent)}, supervaizer.WithMaxBodyBytes(-1))
	assert.Nil(t, ts)
	require.Len(t, rec.messages(), 1)
	assert.Contains(t, rec.messages()[0], "WithMaxBodyBytes")

	rec = newRecordingTB(t)
	assert.Nil(t, svtest.NewTestServer(rec, nil))
	assert.Len(t, rec.messages(), 1)
}

func TestTestServerMultiAgent(t *testing.T) {
	t.Parallel()
	first := newServedAgent(t, startIdempotent)
	second := newAgent(t, "Writer Agent")
	svtest.NewFakeStudio(t).Link(second, "studio-writer") // linked by another Studio handshake before
	second.HandleAction(echoAction, echo)
	ts := svtest.NewTestServer(t, []*supervaizer.Agent{first, second})

	req := ts.Request(echoAction, nil)
	assert.Equal(t, agentSlug, req.AgentSlug, "the first agent by default")
	res, err := ts.Invoke(t.Context(), req)
	require.NoError(t, err)
	assert.Equal(t, svtest.DefaultStudioAgentID(agentSlug), res.Effects[0].Data["agent_id"])

	req.AgentSlug = "writer-agent"
	res, err = ts.Invoke(t.Context(), req)
	require.NoError(t, err)
	assert.Equal(t, "studio-writer", res.Effects[0].Data["agent_id"], "an existing link is kept")
}

func TestTestServerURL(t *testing.T) {
	t.Parallel()
	var base string
	t.Run("serve", func(t *testing.T) {
		ts := svtest.NewTestServer(t, []*supervaizer.Agent{newServedAgent(t, startIdempotent)})
		base = ts.URL()
		assert.Equal(t, base, ts.URL(), "started once")

		req := ts.Request(echoAction, nil)
		body, err := contracts.Marshal(map[string]any{"jsonrpc": "2.0", "id": "rpc-1", "method": supervaizer.MethodActionInvoke,
			"params": map[string]any{"action_request": req}})
		require.NoError(t, err)
		hr, err := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/a2a", strings.NewReader(string(body)))
		require.NoError(t, err)
		hr.Header.Set("Content-Type", "application/json")
		hr.Header.Set(supervaizer.HeaderAPIKey, ts.APIKey)
		hr.Header.Set(supervaizer.HeaderWorkspaceAuthorization, ts.Studio.TokenForAction(req))
		resp, err := http.DefaultClient.Do(hr)
		require.NoError(t, err)
		defer func() { _ = resp.Body.Close() }()
		out, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		assert.Contains(t, string(out), `"id":"rpc-1","result":{"status":"ok"`)
	})
	// The test's cleanup shut the server down and closed the HTTP server.
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, base+"/.well-known/health", nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	if err == nil {
		_ = resp.Body.Close()
	}
	assert.Error(t, err)
}

func TestTestServerURLAfterCleanup(t *testing.T) {
	t.Parallel()
	rec := newRecordingTB(t)
	var ts *svtest.TestServer
	t.Run("build", func(t *testing.T) {
		rec.TB = t
		ts = svtest.NewTestServer(rec, []*supervaizer.Agent{newServedAgent(t, startIdempotent)})
	})
	assert.Empty(t, ts.URL())
	require.Len(t, rec.messages(), 1)
	assert.Contains(t, rec.messages()[0], "after the test ended")
}

func TestTestServerShutdownOnCleanup(t *testing.T) {
	t.Parallel()
	var ts *svtest.TestServer
	t.Run("build", func(t *testing.T) {
		ts = svtest.NewTestServer(t, []*supervaizer.Agent{newServedAgent(t, startIdempotent)})
	})
	_, err := ts.Invoke(context.Background(), ts.Request(echoAction, nil))
	var he *svtest.HTTPError
	require.ErrorAs(t, err, &he)
	assert.Equal(t, http.StatusServiceUnavailable, he.StatusCode)
}

func TestTestServerRequests(t *testing.T) {
	t.Parallel()
	ts := svtest.NewTestServer(t, []*supervaizer.Agent{newServedAgent(t, startIdempotent)})
	req := ts.Request(contracts.DefaultStartAction, startInput{TopicID: "t-1"})
	req.IdempotencyKey, req.JobID = "setup-7f3c", "job-77"
	raw, err := contracts.Marshal(req)
	require.NoError(t, err)
	svtest.Golden(t, filepath.Join("testdata", "action_request.golden.json"), raw)

	sreq := ts.SurfaceRequest(surfaceID)
	raw, err = contracts.Marshal(sreq)
	require.NoError(t, err)
	svtest.Golden(t, filepath.Join("testdata", "surface_request.golden.json"), raw)

	assert.NotEqual(t, ts.Request(echoAction, nil).RequestID, ts.Request(echoAction, nil).RequestID)
}

func TestTestServerRequestUnencodableInput(t *testing.T) {
	t.Parallel()
	rec := newRecordingTB(t)
	ts := svtest.NewTestServer(rec, []*supervaizer.Agent{newServedAgent(t, startIdempotent)})
	require.NotNil(t, ts)
	ts.Request(echoAction, map[string]any{"f": func() {}})
	require.Len(t, rec.messages(), 1)
	assert.Contains(t, rec.messages()[0], "encode the action input")
}

func TestTestServerInvokeRawGolden(t *testing.T) {
	t.Parallel()
	ts := svtest.NewTestServer(t, []*supervaizer.Agent{newServedAgent(t, startIdempotent)})
	raw, err := ts.InvokeRaw(t.Context(), startRequest(ts, contracts.DefaultStartAction, "battery-market"))
	require.NoError(t, err)
	svtest.Golden(t, filepath.Join("testdata", "job_start.result.golden.json"), raw)

	sraw, err := ts.LoadSurfaceRaw(t.Context(), ts.SurfaceRequest(surfaceID))
	require.NoError(t, err)
	svtest.Golden(t, filepath.Join("testdata", "dashboard.result.golden.json"), sraw)

	_, err = ts.LoadSurfaceRaw(t.Context(), ts.SurfaceRequest("nope"))
	assert.Equal(t, errcode.SurfaceNotRegistered, supervaizer.CodeOf(err))
}

func TestTestServerWithToken(t *testing.T) {
	t.Parallel()
	ts := svtest.NewTestServer(t, []*supervaizer.Agent{newServedAgent(t, startIdempotent)})
	req := ts.Request(echoAction, nil)
	_, err := ts.InvokeWithToken(t.Context(), req, "")
	assert.Equal(t, "workspace_authorization_missing", svtest.AuthCode(err))
	res, err := ts.InvokeWithToken(t.Context(), req, ts.Studio.TokenForAction(req))
	require.NoError(t, err)
	assert.Equal(t, contracts.StatusOK, res.Status)

	sreq := ts.SurfaceRequest(surfaceID)
	_, err = ts.LoadSurfaceWithToken(t.Context(), sreq, ts.Studio.TokenForAction(req))
	assert.Equal(t, "workspace_authorization_missing_scope", svtest.AuthCode(err))
	_, err = ts.LoadSurfaceWithToken(t.Context(), sreq, ts.Studio.TokenForSurface(sreq))
	require.NoError(t, err)
}

func TestAuthCode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"nil", nil, ""},
		{"plain error", errors.New("x"), ""},
		{"other code", wireError(t, errcode.InvalidParams, "m", map[string]any{"code": "x"}), ""},
		{"no data", wireError(t, errcode.Unauthorized, "m", nil), ""},
		{"code not a string", wireError(t, errcode.Unauthorized, "m", map[string]any{"code": 1}), ""},
		{"unauthorized", wireError(t, errcode.Unauthorized, "m", map[string]any{"code": "workspace_authorization_expired"}), "workspace_authorization_expired"},
		{"wrapped", fmt.Errorf("w: %w", wireError(t, errcode.Unauthorized, "m", map[string]any{"code": "c"})), "c"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.want, svtest.AuthCode(tt.err))
		})
	}
}

// TestCodeOfReportsTheCodeSent: whatever error a handler returns, the client
// reads -32603, and CodeOf of what it reads says so (open question 61).
func TestCodeOfReportsTheCodeSent(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
	}{
		{"plain error", errors.New("database down")},
		{"*Error invalid params", wireError(t, errcode.InvalidParams, "invalid", nil)},
		{"*Error unauthorized, wrapped", fmt.Errorf("w: %w", wireError(t, errcode.Unauthorized, "no", nil))},
		{"*Error action not registered", wireError(t, errcode.ActionNotRegistered, "nope", nil)},
		{"blocked", &checkpoint.BlockedError{OccurrenceID: "o", Phase: "before", Status: checkpoint.Stop}},
		{"resource error", &resource.RefusalError{Code: "duplicate_email", Message: "taken"}},
		{"not found", resource.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ts := svtest.NewTestServer(t, []*supervaizer.Agent{newAgent(t, agentName)})
			ts.Server.HandleAction(boomAction, func(context.Context, *supervaizer.ActionRequest) (*supervaizer.ActionResult, error) {
				return nil, tt.err
			})
			req := ts.Request(boomAction, nil)
			raw, err := ts.Call(t.Context(), supervaizer.MethodActionInvoke, req, ts.Studio.TokenForAction(req))
			require.NoError(t, err)
			assert.JSONEq(t, fmt.Sprintf(`{"code":-32603,"message":"Action handler failed","data":{"agent_slug":%q,"action":%q}}`,
				req.AgentSlug, boomAction), string(rpcErrorMember(t, raw)))
			_, err = ts.Invoke(t.Context(), req)
			assert.Equal(t, errcode.InternalError, supervaizer.CodeOf(err), "CodeOf(%v)", err)
		})
	}
}

// rpcErrorMember returns the error member of a JSON-RPC response.
func rpcErrorMember(t *testing.T, raw []byte) json.RawMessage {
	t.Helper()
	var resp struct {
		Error json.RawMessage `json:"error"`
	}
	require.NoError(t, json.Unmarshal(raw, &resp))
	return resp.Error
}

// wireError is the *supervaizer.Error a client reads for the JSON-RPC error
// object {"code", "message", "data"}: decoded from the wire, as the kit does.
func wireError(t testing.TB, code errcode.Code, message string, data any) *supervaizer.Error {
	t.Helper()
	raw, err := json.Marshal(map[string]any{"code": code, "message": message, "data": data})
	require.NoError(t, err)
	var e supervaizer.Error
	require.NoError(t, json.Unmarshal(raw, &e))
	return &e
}
