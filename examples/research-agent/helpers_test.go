package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/errcode"
	sdkstudio "github.com/supervaize/supervaizer-go/studio"
	svtest "github.com/supervaize/supervaizer-go/testing"
)

// testAPIKey is the transport key of the agents the tests start.
const testAPIKey = "research-agent-test-key"

// harness is the research agent started in-process with newApp, configured
// from an environment of its own (workspace authorization ON, trusting a fake
// Studio that mints real Ed25519 tokens), served over HTTP by httptest.
type harness struct {
	t      testing.TB
	app    *app
	studio *svtest.FakeStudio
	srv    *httptest.Server
	dbPath string
	client *client
}

// studioEnv is the environment of an agent that trusts studio: the same
// variables an operator sets in production.
func studioEnv(studio *svtest.FakeStudio, dataDir string) map[string]string {
	return map[string]string{
		"SUPERVAIZER_API_KEY":                   testAPIKey,
		"SUPERVAIZER_SERVER_ID":                 studio.ServerID(),
		"SUPERVAIZER_DATA_DIR":                  dataDir,
		"SUPERVAIZER_WORKSPACE_AUTH_REQUIRED":   "true",
		"SUPERVAIZER_WORKSPACE_AUTH_ISSUER":     studio.Issuer(),
		"SUPERVAIZER_WORKSPACE_AUTH_PUBLIC_KEY": studio.PublicKeyPEM(),
	}
}

// newHarness starts the agent against a new fake Studio.
func newHarness(t *testing.T) *harness {
	t.Helper()
	studio := svtest.NewFakeStudio(t)
	return startHarness(t, studio, studioEnv(studio, t.TempDir()))
}

// startHarness starts the agent with env, attached to a fake Studio API of
// studio (unless env attaches it already) and started as main starts it
// (app.Start: registration, handshake, then the resumed deliveries), so the
// app's own server, with its checkpoint setup, is the one linked; every
// cleanup runs in the order main uses: the SDK server, the HTTP server, then
// the store.
func startHarness(t testing.TB, studio *svtest.FakeStudio, env map[string]string) *harness {
	t.Helper()
	var handler http.Handler // the app's, set before any request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	if env[sdkstudio.EnvAPIURL] == "" {
		env = maps.Clone(env)
		maps.Copy(env, svtest.NewFakeStudioAPI(t, studio).Env()) // SUPERVAIZE_API_URL, SUPERVAIZE_API_KEY, SUPERVAIZE_WORKSPACE_ID
		env["SUPERVAIZER_PUBLIC_URL"] = srv.URL                  // where the cards send callers
		env["SUPERVAIZER_PRIVATE_KEY"] = svtest.ControllerKeyPEM(t)
	}
	cfg, err := loadConfig(func(k string) string { return env[k] })
	if err != nil {
		srv.Close()
	}
	require.NoError(t, err)
	a, err := newApp(cfg)
	if err != nil {
		srv.Close()
	}
	require.NoError(t, err)
	handler = a.Handler()
	h := &harness{t: t, app: a, studio: studio, srv: srv, dbPath: cfg.DBPath}
	h.client = &client{t: t, base: h.srv.URL, studio: studio}
	t.Cleanup(func() { h.stop() })
	require.NoError(t, a.Start(t.Context()))
	id, linked := a.agent.StudioAgentID()
	require.True(t, linked, "linked by the registration handshake")
	require.Equal(t, studio.StudioAgentID(agentSlug), id)
	return h
}

// stop shuts the agent down (idempotent).
func (h *harness) stop() {
	if h.app == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(h.t, h.app.Shutdown(ctx))
	h.srv.Close()
	require.NoError(h.t, h.app.Close())
	h.app = nil
}

// workspace is a Studio workspace the tests call from.
type workspace struct{ id, slug string }

var (
	wsA = workspace{"ws-a", "acme"}
	wsB = workspace{"ws-b", "globex"}
)

const missionID = "mission-1"

var reqSeq atomic.Uint64

// actionRequest is a valid action request from ws.
func actionRequest(t testing.TB, ws workspace, action string, input any) contracts.ActionRequest {
	t.Helper()
	var raw json.RawMessage
	if input != nil {
		b, err := json.Marshal(input)
		require.NoError(t, err)
		raw = b
	}
	return contracts.ActionRequest{
		RequestID: fmt.Sprintf("req-%d", reqSeq.Add(1)), Actor: contracts.Actor{UserID: "user-1"},
		Workspace: contracts.WorkspaceRef{ID: ws.id, Slug: ws.slug}, MissionID: missionID,
		AgentSlug: agentSlug, Surface: action, Action: action, Input: raw,
	}
}

// surfaceRequest is a valid surface-load request from ws.
func surfaceRequest(ws workspace, surface string) contracts.SurfaceRequest {
	return contracts.SurfaceRequest{
		RequestID: fmt.Sprintf("req-%d", reqSeq.Add(1)), Actor: contracts.Actor{UserID: "user-1"},
		Workspace: contracts.WorkspaceRef{ID: ws.id, Slug: ws.slug}, MissionID: missionID,
		AgentSlug: agentSlug, Surface: surface,
	}
}

// client calls the agent over HTTP as Studio does: X-API-Key plus a freshly
// minted workspace token per call.
type client struct {
	t      testing.TB
	base   string
	studio *svtest.FakeStudio
	seq    atomic.Uint64
}

// rpcError is a JSON-RPC error object.
type rpcError struct {
	Code    errcode.Code    `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

// call posts one JSON-RPC request and returns its raw result or its error.
func (c *client) call(method string, params any, token string) (json.RawMessage, *rpcError) {
	c.t.Helper()
	resp, raw, err := postRPC(c.t.Context(), http.DefaultClient, c.base, c.seq.Add(1), method, params, token)
	require.NoError(c.t, err)
	require.Equal(c.t, http.StatusOK, resp.StatusCode, "body: %s", raw)
	var out rpcResponse
	require.NoError(c.t, json.Unmarshal(raw, &out))
	return out.Result, out.Error
}

// rpcResponse is a JSON-RPC response.
type rpcResponse struct {
	Result json.RawMessage `json:"result"`
	Error  *rpcError       `json:"error"`
}

// postRPC sends one JSON-RPC call to the agent at base with the test API key
// and, when set, a workspace token. It returns the response and its body, or
// the error of a call that got no answer (a dead agent, a cancelled
// context): the caller decides whether that fails its test.
func postRPC(ctx context.Context, hc *http.Client, base string, id any, method string, params any, token string) (*http.Response, []byte, error) {
	body, err := contracts.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		return nil, nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/a2a", bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(supervaizer.HeaderAPIKey, testAPIKey)
	if token != "" {
		req.Header.Set(supervaizer.HeaderWorkspaceAuthorization, "Bearer "+token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	return resp, raw, err
}

// invokeRaw calls an action with a valid token and returns the result as sent.
func (c *client) invokeRaw(req contracts.ActionRequest) (json.RawMessage, *rpcError) {
	c.t.Helper()
	return c.call(supervaizer.MethodActionInvoke, map[string]any{"action_request": req}, c.studio.TokenForAction(req))
}

// invoke calls an action that must succeed at the JSON-RPC level.
func (c *client) invoke(req contracts.ActionRequest) *contracts.ActionResult {
	c.t.Helper()
	raw, rerr := c.invokeRaw(req)
	require.Nil(c.t, rerr, "action %s: %+v", req.Action, rerr)
	var res contracts.ActionResult
	require.NoError(c.t, contracts.Unmarshal(raw, &res))
	return &res
}

// load loads a surface that must succeed.
func (c *client) load(req contracts.SurfaceRequest) (*contracts.SurfaceResult, map[string]any) {
	c.t.Helper()
	raw, rerr := c.call(supervaizer.MethodSurfaceLoad, map[string]any{"surface_request": req}, c.studio.TokenForSurface(req))
	require.Nil(c.t, rerr, "surface %s: %+v", req.Surface, rerr)
	var res contracts.SurfaceResult
	require.NoError(c.t, contracts.Unmarshal(raw, &res))
	var doc map[string]any
	require.NoError(c.t, json.Unmarshal(res.Document, &doc))
	return &res, doc
}

// startJob starts job id on topic from ws and returns the result.
func (c *client) startJob(ws workspace, id, key, topic string) *contracts.ActionResult {
	c.t.Helper()
	req := actionRequest(c.t, ws, actionStart, map[string]any{"topic_id": topic})
	req.JobID, req.IdempotencyKey = id, key
	res := c.invoke(req)
	require.Equal(c.t, contracts.StatusOK, res.Status, "job.start: %+v", res.Errors)
	return res
}

// jobRequest is an action request about job id.
func jobRequest(t testing.TB, ws workspace, action, id string, input any) contracts.ActionRequest {
	t.Helper()
	req := actionRequest(t, ws, action, input)
	req.JobID = id
	return req
}

// waitStatus calls job.sync until the job reaches status, and returns that
// result.
func (c *client) waitStatus(ws workspace, id, status string) *contracts.ActionResult {
	c.t.Helper()
	var last *contracts.ActionResult
	poll(c.t, func() bool {
		last = c.invoke(jobRequest(c.t, ws, actionSync, id, nil))
		return last.Status == contracts.StatusOK && last.JobState.Job.Status == status
	}, "job %s never reached %q", id, status)
	return last
}

// poll calls cond in the test's goroutine (so that cond may use require) until
// it returns true, for at most 10 s.
func poll(t testing.TB, cond func() bool, format string, args ...any) {
	t.Helper()
	waitUntil(t, 10*time.Second, cond, format, args...)
}

// waitUntil fails t with format and args unless cond holds within timeout.
func waitUntil(t testing.TB, timeout time.Duration, cond func() bool, format string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf(format, args...)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// dbPath is a fresh store file for a test.
func dbPath(t testing.TB) string { return filepath.Join(t.TempDir(), "supervaizer.db") }

// waitClosed waits at most 10 s for ch to be closed.
func waitClosed(t testing.TB, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}
