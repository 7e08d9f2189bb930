package testing

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	supervaizer "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/errcode"
	"github.com/supervaize/supervaizer-go/store"
)

// shutdownTimeout bounds Server.Shutdown when a test ends.
const shutdownTimeout = 5 * time.Second

// TestServer is a [supervaizer.Server] set up for tests: isolated from the
// process environment, with a known API key and a [FakeStudio] whose settings
// it trusts and to which every agent is linked by Studio's registration
// handshake ([FakeStudio.Link]). Its helpers send calls through
// the real pipeline (API key, envelope, request model, workspace token,
// handler, result validation), in memory through ServeHTTP; [TestServer.URL]
// serves it over HTTP when a test needs a network client. It is safe for
// concurrent use.
//
// [NewAttachedTestServer] builds one attached to a [FakeStudioAPI], and
// [Connect] one that drives an already running controller over HTTP.
type TestServer struct {
	Server *supervaizer.Server // the server under test; nil for Connect
	Studio *FakeStudio         // the fake Studio whose tokens the server trusts
	API    *FakeStudioAPI      // the fake Studio API the server is attached to; nil unless attached
	APIKey string              // the transport key (X-API-Key): DefaultAPIKey, or the key given to Connect

	t         testing.TB
	store     *store.Memory        // the default store, closed with the server; nil for Connect
	agentSlug string               // the primary agent: the default agent_slug of built requests
	agents    []*supervaizer.Agent // the agents served; nil for Connect
	opts      []supervaizer.Option // the caller's options, applied again to a twin (twin.go)
	reqSeq    atomic.Uint64        // request ids of built requests
	rpcSeq    atomic.Uint64        // JSON-RPC ids
	baseURL   string               // Connect: the controller's base URL
	client    *http.Client         // Connect: the HTTP client

	mu          sync.Mutex
	http        *httptest.Server
	httpStarted bool
	closed      bool
}

// NewTestServer builds a test server for agents with a new [FakeStudio]; see
// [NewTestServerWithStudio].
func NewTestServer(t testing.TB, agents []*supervaizer.Agent, opts ...supervaizer.Option) *TestServer {
	t.Helper()
	return NewTestServerWithStudio(t, NewFakeStudio(t), agents, opts...)
}

// NewTestServerWithStudio builds a test server for agents that trusts studio.
// The server reads no environment variable (an empty [supervaizer.WithEnv]),
// has the write key [DefaultAPIKey], the server id studio is bound to, the
// workspace-authorization settings of [FakeStudio.Settings], a fresh
// in-memory store (idempotency records) and a data folder of its own, removed
// at the end of the test (its environment has only SUPERVAIZER_DATA_DIR, the
// folder of the spool file of results kept at shutdown). Before the server is built, every
// agent is linked to studio by the registration handshake ([FakeStudio.Link]
// with its existing or default Studio agent id), which, as Server.Start does
// in production, makes its registration final: register the handlers of an
// agent whose registration lists no surface and no action before calling
// NewTestServer. opts are applied after these defaults, so they can replace
// them:
// for example supervaizer.WithWorkspaceAuth(studio.JWKSSettings(studio.ServerID()))
// verifies tokens through the JWKS. An invalid configuration ends the test. At
// the end of the test Server.Shutdown runs, then the HTTP server, if started,
// is closed.
func NewTestServerWithStudio(t testing.TB, studio *FakeStudio, agents []*supervaizer.Agent, opts ...supervaizer.Option) *TestServer {
	t.Helper()
	serverID := studio.ServerID()
	for _, a := range agents {
		if a != nil { // NewServer reports nil agents
			studio.Link(a, "")
		}
	}
	mem := store.NewMemory()
	dataDir, err := os.MkdirTemp("", "svtest-data-")
	if err != nil {
		t.Fatalf("svtest: data folder: %v", err)
		return nil
	}
	t.Cleanup(func() { _ = os.RemoveAll(dataDir) })
	all := append([]supervaizer.Option{
		supervaizer.WithEnv(func(k string) string {
			if k == store.EnvDataDir {
				return dataDir
			}
			return ""
		}),
		supervaizer.WithAPIKey(DefaultAPIKey, supervaizer.ScopeWrite),
		supervaizer.WithServerID(serverID),
		supervaizer.WithWorkspaceAuth(studio.Settings(serverID)),
		supervaizer.WithStore(mem),
	}, opts...)
	srv, err := supervaizer.NewServer(agents, all...)
	if err != nil {
		t.Fatalf("svtest: NewServer: %v", err)
		return nil
	}
	ts := &TestServer{Server: srv, Studio: studio, APIKey: DefaultAPIKey, t: t, agentSlug: agents[0].Slug(), store: mem,
		agents: slices.Clone(agents), opts: slices.Clone(opts)}
	t.Cleanup(ts.close)
	return ts
}

// close shuts the server down, then closes the HTTP server if it was
// created and the default store. For Connect it only closes idle connections.
func (ts *TestServer) close() {
	ts.mu.Lock()
	hs := ts.http
	ts.closed = true
	ts.mu.Unlock()
	if ts.Server == nil {
		ts.client.CloseIdleConnections()
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := ts.Server.Shutdown(ctx); err != nil {
		ts.t.Errorf("svtest: Server.Shutdown: %v", err)
	}
	if hs != nil {
		hs.Close()
	}
	if err := ts.store.Close(); err != nil {
		ts.t.Errorf("svtest: close the store: %v", err)
	}
}

// URL returns the base URL of an httptest server serving the test server,
// started on first use (POST URL()+"/a2a" for JSON-RPC); for [Connect] the
// controller's URL. An attached test server listens on the public URL it
// registered with Studio. Calling it after the test's cleanup is reported
// through t.
func (ts *TestServer) URL() string {
	ts.t.Helper()
	if ts.Server == nil {
		return ts.baseURL
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.closed {
		ts.t.Fatalf("svtest: TestServer.URL called after the test ended")
		return ""
	}
	if ts.http == nil {
		ts.http = httptest.NewUnstartedServer(ts.Server)
	}
	if !ts.httpStarted {
		ts.http.Start()
		ts.httpStarted = true
	}
	return ts.http.URL
}

// Request returns a valid action request for action with defaults: a unique
// request id, actor [DefaultUserID], workspace [DefaultWorkspaceID] /
// [DefaultWorkspaceSlug], mission [DefaultMissionID], the first agent's slug
// (set AgentSlug for another agent) and surface = action. input is encoded
// with encoding/json (a json.RawMessage is used as is; nil sends {}); an input
// that cannot be encoded ends the test. Set IdempotencyKey, JobID and the
// other optional fields on the result as the call needs.
func (ts *TestServer) Request(action string, input any) contracts.ActionRequest {
	ts.t.Helper()
	return contracts.ActionRequest{
		RequestID: ts.nextRequestID(),
		Actor:     contracts.Actor{UserID: DefaultUserID},
		Workspace: contracts.WorkspaceRef{ID: DefaultWorkspaceID, Slug: DefaultWorkspaceSlug},
		MissionID: DefaultMissionID,
		AgentSlug: ts.agentSlug,
		Surface:   action,
		Action:    action,
		Input:     ts.encodeInput(input),
	}
}

// SurfaceRequest returns a valid surface-load request for surface, with the
// defaults of [TestServer.Request] and an empty input.
func (ts *TestServer) SurfaceRequest(surface string) contracts.SurfaceRequest {
	return contracts.SurfaceRequest{
		RequestID: ts.nextRequestID(),
		Actor:     contracts.Actor{UserID: DefaultUserID},
		Workspace: contracts.WorkspaceRef{ID: DefaultWorkspaceID, Slug: DefaultWorkspaceSlug},
		MissionID: DefaultMissionID,
		AgentSlug: ts.agentSlug,
		Surface:   surface,
	}
}

func (ts *TestServer) nextRequestID() string {
	return "req-" + strconv.FormatUint(ts.reqSeq.Add(1), 10)
}

func (ts *TestServer) encodeInput(input any) json.RawMessage {
	ts.t.Helper()
	switch in := input.(type) {
	case nil:
		return nil
	case json.RawMessage:
		return in
	}
	b, err := json.Marshal(input)
	if err != nil {
		ts.t.Fatalf("svtest: encode the action input: %v", err)
	}
	return b
}

// Invoke sends req as supervaizer/action.invoke through the real pipeline, with
// the API key and a freshly minted token carrying exactly the scopes the call
// needs. A JSON-RPC error is returned as a *[supervaizer.Error] (Code, Message,
// Data decoded from JSON), so [supervaizer.CodeOf] and [AuthCode] read it; an
// HTTP status other than 200 is an *[HTTPError].
func (ts *TestServer) Invoke(ctx context.Context, req contracts.ActionRequest) (*contracts.ActionResult, error) {
	return ts.InvokeWithToken(ctx, req, ts.Studio.TokenForAction(req))
}

// InvokeWithToken is [TestServer.Invoke] with the given workspace token ("" sends
// none), for negative tests: mint it from edited [FakeStudio.ActionClaims].
func (ts *TestServer) InvokeWithToken(ctx context.Context, req contracts.ActionRequest, token string) (*contracts.ActionResult, error) {
	raw, err := ts.invoke(ctx, req, token)
	if err != nil {
		return nil, err
	}
	var res contracts.ActionResult
	if err := contracts.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("svtest: decode the action result: %w", err)
	}
	return &res, nil
}

// InvokeRaw is [TestServer.Invoke] returning the result JSON exactly as the
// dispatcher sent it, for golden files and byte-level checks.
func (ts *TestServer) InvokeRaw(ctx context.Context, req contracts.ActionRequest) (json.RawMessage, error) {
	return ts.invoke(ctx, req, ts.Studio.TokenForAction(req))
}

func (ts *TestServer) invoke(ctx context.Context, req contracts.ActionRequest, token string) (json.RawMessage, error) {
	body, err := ts.Call(ctx, supervaizer.MethodActionInvoke, map[string]any{"action_request": req}, token)
	if err != nil {
		return nil, err
	}
	return decodeResponse(body)
}

// LoadSurface sends req as supervaizer/surface.load through the real pipeline,
// like [TestServer.Invoke].
func (ts *TestServer) LoadSurface(ctx context.Context, req contracts.SurfaceRequest) (*contracts.SurfaceResult, error) {
	return ts.LoadSurfaceWithToken(ctx, req, ts.Studio.TokenForSurface(req))
}

// LoadSurfaceWithToken is [TestServer.LoadSurface] with the given workspace
// token ("" sends none).
func (ts *TestServer) LoadSurfaceWithToken(ctx context.Context, req contracts.SurfaceRequest, token string) (*contracts.SurfaceResult, error) {
	raw, err := ts.loadSurface(ctx, req, token)
	if err != nil {
		return nil, err
	}
	var res contracts.SurfaceResult
	if err := contracts.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("svtest: decode the surface result: %w", err)
	}
	return &res, nil
}

// LoadSurfaceRaw is [TestServer.LoadSurface] returning the result JSON exactly
// as the dispatcher sent it.
func (ts *TestServer) LoadSurfaceRaw(ctx context.Context, req contracts.SurfaceRequest) (json.RawMessage, error) {
	return ts.loadSurface(ctx, req, ts.Studio.TokenForSurface(req))
}

func (ts *TestServer) loadSurface(ctx context.Context, req contracts.SurfaceRequest, token string) (json.RawMessage, error) {
	body, err := ts.Call(ctx, supervaizer.MethodSurfaceLoad, map[string]any{"surface_request": req}, token)
	if err != nil {
		return nil, err
	}
	return decodeResponse(body)
}

// AuthCode returns the workspace-authorization code (data.code, one of the
// workspace_authorization_* codes of the workspace-token rules) of a -32030 error
// found in err's chain, or "" when there is none.
func AuthCode(err error) string {
	var e *supervaizer.Error
	if !errors.As(err, &e) || supervaizer.CodeOf(e) != errcode.Unauthorized {
		return ""
	}
	data, _ := e.Data().(map[string]any)
	code, _ := data["code"].(string)
	return code
}

// Call is the low-level form: it POSTs the JSON-RPC request {"jsonrpc":"2.0",
// "id":<n>,"method":method,"params":params} to /a2a with the API key and, when
// token is not empty, the [supervaizer.HeaderWorkspaceAuthorization] header,
// and returns the response body as sent. params is encoded with encoding/json
// (pass a json.RawMessage for exact bytes). JSON-RPC errors are part of the
// body, not an error; an HTTP status other than 200 is an *[HTTPError].
func (ts *TestServer) Call(ctx context.Context, method string, params any, token string) (json.RawMessage, error) {
	body, err := contracts.Marshal(struct {
		JSONRPC string `json:"jsonrpc"`
		ID      uint64 `json:"id"`
		Method  string `json:"method"`
		Params  any    `json:"params,omitempty"`
	}{"2.0", ts.rpcSeq.Add(1), method, params})
	if err != nil {
		return nil, fmt.Errorf("svtest: encode the JSON-RPC request: %w", err)
	}
	if ts.Server == nil {
		return ts.callRemote(ctx, body, token)
	}
	r := httptest.NewRequestWithContext(ctx, http.MethodPost, "/a2a", bytes.NewReader(body))
	// An in-process call comes from this machine: a local-mode server
	// answers only loopback hosts.
	r.Host, r.RemoteAddr = "127.0.0.1", "127.0.0.1:1"
	setCallHeaders(r, ts.APIKey, token)
	w := httptest.NewRecorder()
	ts.Server.ServeHTTP(w, r)
	if w.Code != http.StatusOK {
		return nil, &HTTPError{StatusCode: w.Code, Body: w.Body.String()}
	}
	return w.Body.Bytes(), nil
}

func setCallHeaders(r *http.Request, apiKey, token string) {
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set(supervaizer.HeaderAPIKey, apiKey)
	if token != "" {
		r.Header.Set(supervaizer.HeaderWorkspaceAuthorization, "Bearer "+token)
	}
}

// HTTPError is an answer of /a2a with an HTTP status other than 200, given
// before JSON-RPC applies: a refused API key (401, 403), an unsupported
// content type (415), a body too large (413), a server shutting down (503).
type HTTPError struct {
	StatusCode int
	Body       string // the response body, e.g. {"detail":"Invalid or missing API key"}
}

// Error returns the status and body.
func (e *HTTPError) Error() string {
	return fmt.Sprintf("svtest: HTTP %d %s: %s", e.StatusCode, http.StatusText(e.StatusCode), e.Body)
}

// rpcResponse is a JSON-RPC response envelope. Its error object decodes
// into the SDK's own error type ([supervaizer.Error.UnmarshalJSON]).
type rpcResponse struct {
	Result json.RawMessage    `json:"result"`
	Error  *supervaizer.Error `json:"error"`
}

var errNoOutcome = errors.New("svtest: JSON-RPC response has neither a result nor an error")

// decodeResponse returns the result of a JSON-RPC response body, or its error
// as a *supervaizer.Error.
func decodeResponse(body []byte) (json.RawMessage, error) {
	var resp rpcResponse
	if err := json.Unmarshal(body, &resp); err != nil {
		return nil, fmt.Errorf("svtest: decode the JSON-RPC response: %w", err)
	}
	if resp.Error != nil {
		return nil, resp.Error
	}
	if len(resp.Result) == 0 || bytes.Equal(resp.Result, []byte("null")) {
		return nil, errNoOutcome
	}
	return resp.Result, nil
}
