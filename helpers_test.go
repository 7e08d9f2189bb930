package supervaizer_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	supervaizer "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/checkpoint"
	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/errcode"
	"github.com/supervaize/supervaizer-go/internal/tools/ssetest"
	"github.com/supervaize/supervaizer-go/resource"
	svtest "github.com/supervaize/supervaizer-go/testing"
)

// Identities shared by every test server and token. The values are those of
// the spec examples, so goldens read like the spec.
const (
	testIssuer        = "https://studio.supervaize.com"
	testServerID      = "studio-server-1"
	testStudioAgentID = "studio-agent-42"
	testAgentName     = "Research Agent"
	testAgentSlug     = "research-agent"
	testAgentVersion  = "1.0.0"
	testLegacyAgentID = "imussvG8U97vC93sU6egrt" // slug.LegacyAgentID("Research Agent")
	testWorkspaceID   = "ws-1"
	testWorkspaceSlug = "acme"
	testWriteKey      = "test-write-key"
	testReadKey       = "test-read-key"

	// Tokens are issued in the past and expire in 2100, so that goldens stay
	// stable whatever the wall clock says (the server uses the real clock).
	testTokenIAT = 1791700000 // 2026-10-11
	testTokenEXP = 4102444800 // 2100-01-01
)

// testActionIDs are the actions the test agent declares (besides the derived
// workspace_binding.options and workspace_binding.create).
var testActionIDs = []string{
	"job.start",                // typed input; returns job.started
	"job.sync",                 // echoes what the handler received
	"job.reject",               // business failure: status "error"
	"job.empty",                // ok without effects
	"job.nulls",                // a plain-map result full of nulls
	"job.bulk",                 // one effect with a message of input.size bytes
	"job.slow",                 // waits for harness.release or ctx
	"fail.error",               // returns an error
	"fail.panic",               // panics
	"fail.invalid",             // returns a result that breaks the contract
	"fail.nil",                 // returns nil, nil
	"job.unhandled",            // declared, never handled
	"workspace_binding.delete", // a custom workspace_binding id: not exempt
}

// handlerErrorKinds are the errors fail.error returns, by input.kind (the
// golden pairs handler_failed_error_<kind>): whatever its type or code, each
// goes on the wire as -32603 "Action handler failed" (open question 61). An
// *Error carrying a protocol code (one a handler received as a client,
// decoded here from the wire as svtest does: wireError) is no exception.
var handlerErrorKinds = map[string]error{
	"invalid_params":         fmt.Errorf("lookup: %w", wireError(errcode.InvalidParams, "invalid params", nil)),
	"coded":                  wireError(errcode.Unauthorized, "secret-coded-message", nil),
	"parse_error":            wireError(errcode.ParseError, "secret-parse", nil),
	"invalid_request":        wireError(errcode.InvalidRequest, "secret-request", nil),
	"method_not_found":       wireError(errcode.MethodNotFound, "secret-method", nil),
	"internal_error":         wireError(errcode.InternalError, "secret-internal", map[string]any{"secret": "x"}),
	"action_not_registered":  wireError(errcode.ActionNotRegistered, "secret-action", nil),
	"surface_not_registered": wireError(errcode.SurfaceNotRegistered, "secret-surface", nil),
	"blocked":                &checkpoint.BlockedError{OccurrenceID: "secret-occ", Phase: "before", Status: checkpoint.Stop},
	"recovery_required":      &checkpoint.RecoveryRequiredError{OccurrenceID: "secret-occ", Reason: checkpoint.RecoveryOccurrenceActive},
	"checkpoint_request":     &checkpoint.RequestError{StatusCode: 502, Body: "secret-body"},
	"resource_error":         &resource.RefusalError{Code: "duplicate_email", Message: "secret-resource"},
	"not_found":              fmt.Errorf("contact: %w", resource.ErrNotFound),
	"context_canceled":       context.Canceled,
}

// wireError is the *Error a client reads for the JSON-RPC error object
// {"code", "message", "data"}: decoded from the wire, as svtest does.
func wireError(code errcode.Code, message string, data any) *supervaizer.Error {
	raw, err := json.Marshal(map[string]any{"code": code, "message": message, "data": data})
	if err != nil {
		panic(err)
	}
	var e supervaizer.Error
	if err := json.Unmarshal(raw, &e); err != nil {
		panic(err)
	}
	return &e
}

// testSurfaceIDs are the surfaces the test agent declares (besides the derived
// workspace_binding.create).
var testSurfaceIDs = []string{
	"job.start",         // returns a document
	"surface.nodoc",     // result without a document
	"surface.baddoc",    // document that is not an object
	"surface.fail",      // returns an error
	"surface.unhandled", // declared, never handled
}

// allTestScopes is every scope the test agent's calls need.
func allTestScopes() []string {
	scopes := []string{supervaizer.MethodActionInvoke, supervaizer.MethodSurfaceLoad}
	for _, id := range slices.Concat(testActionIDs, testSurfaceIDs) {
		if !slices.Contains(scopes, id) {
			scopes = append(scopes, id)
		}
	}
	return scopes
}

// testClaims returns the claims of a token valid for every call of the test
// agent in workspace ws-1.
func testClaims() svtest.Claims {
	return svtest.Claims{
		Issuer:            testIssuer,
		Audience:          []string{"supervaizer-server:" + testServerID},
		Subject:           "workspace-agent-grant:grant-01",
		GrantID:           "grant-01",
		WorkspaceID:       testWorkspaceID,
		WorkspaceSlug:     testWorkspaceSlug,
		AgentID:           testStudioAgentID,
		AgentSlug:         testAgentSlug,
		ServerID:          testServerID,
		Scopes:            allTestScopes(),
		AgentWorkspaceRef: "acme-prod",
		IssuedAt:          time.Unix(testTokenIAT, 0),
		ExpiresAt:         time.Unix(testTokenEXP, 0),
		JTI:               "tok-9c1e",
	}
}

// mintToken has studio sign testClaims, changed by mod when not nil.
func mintToken(studio *svtest.FakeStudio, mod func(*svtest.Claims)) string {
	c := testClaims()
	if mod != nil {
		mod(&c)
	}
	return studio.Mint(c)
}

// testWorkspaceAuth trusts the tokens studio mints with testClaims' issuer;
// the audience is the server's own (supervaizer-server:<server id>).
func testWorkspaceAuth(studio *svtest.FakeStudio) supervaizer.WorkspaceAuthSettings {
	return supervaizer.WorkspaceAuthSettings{Enabled: true, Issuer: testIssuer, PublicKeyPEM: studio.PublicKeyPEM()}
}

// emptyEnv isolates a server from the process environment.
func emptyEnv(string) string { return "" }

// envOf returns a getenv reading only vars.
func envOf(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

// testRegistrationSpec declares the test agent's actions and surfaces, and a
// workspace binding that derives the three bootstrap ids.
func testRegistrationSpec(slug string) supervaizer.RegistrationSpec {
	return supervaizer.RegistrationSpec{
		AgentSlug:          slug,
		DisplayName:        "Research",
		A2UICatalogVersion: "research-catalog/1",
		Surfaces:           supervaizer.Surfaces(testSurfaceIDs...),
		Actions:            supervaizer.Actions(testActionIDs...),
		WorkspaceBinding: &contracts.WorkspaceBinding{
			Modes: []string{contracts.BindExisting, contracts.CreateAndBind},
		},
	}
}

// newTestAgent builds an agent named name from testRegistrationSpec.
func newTestAgent(tb testing.TB, name string) *supervaizer.Agent {
	tb.Helper()
	slug := strings.ToLower(strings.ReplaceAll(name, " ", "-"))
	reg := testRegistrationSpec(slug)
	a, err := supervaizer.NewAgent(supervaizer.AgentSpec{
		Name: name, Version: testAgentVersion, Description: "Turns a question into a sourced brief.",
		Developer: "Supervaize", Registration: reg,
	})
	require.NoError(tb, err)
	return a
}

// seenCall is what one handler invocation received.
type seenCall struct {
	id        string // action or surface id
	action    *supervaizer.ActionRequest
	surface   *supervaizer.SurfaceRequest
	ctxWS     *contracts.VerifiedWorkspaceContext
	ctxHasWS  bool
	agentSlug string // from supervaizer.AgentFrom
	ctx       context.Context
}

// harness is a test controller: the research agent with a handler for every
// declared id except job.unhandled and surface.unhandled, a count of handler
// calls and a record of what each call received.
type harness struct {
	srv    *supervaizer.Server
	agent  *supervaizer.Agent
	studio *svtest.FakeStudio // mints the workspace tokens the server trusts
	calls  atomic.Int64

	// release gates job.slow; closed (no wait) unless withSlowGate was used.
	release chan struct{}
	// slowStarted receives one value when job.slow begins, slowDone its ctx error.
	slowStarted chan struct{}
	slowDone    chan error

	mu   sync.Mutex
	last *seenCall // the most recent handler call
}

// harnessConfig tunes newHarness.
type harnessConfig struct {
	opts     []supervaizer.Option
	unlinked bool // do not link the Studio agent id
	slowGate bool // job.slow waits for release
	noAuth   bool // no WithWorkspaceAuth option
}

type harnessOption func(*harnessConfig)

func withServerOptions(opts ...supervaizer.Option) harnessOption {
	return func(c *harnessConfig) { c.opts = append(c.opts, opts...) }
}

func withUnlinkedAgent() harnessOption { return func(c *harnessConfig) { c.unlinked = true } }

func withSlowGate() harnessOption { return func(c *harnessConfig) { c.slowGate = true } }

// withoutWorkspaceAuth leaves workspace authorization to the other options and
// the (empty) environment, for local-mode tests.
func withoutWorkspaceAuth() harnessOption { return func(c *harnessConfig) { c.noAuth = true } }

// newHarness builds the test controller: server id studio-server-1, a write
// and a read API key, workspace tokens minted by a fake Studio (h.studio), the
// agent linked to studio-agent-42, the environment ignored.
func newHarness(tb testing.TB, hopts ...harnessOption) *harness {
	tb.Helper()
	var cfg harnessConfig
	for _, o := range hopts {
		o(&cfg)
	}
	h := &harness{
		agent:       newTestAgent(tb, testAgentName),
		studio:      svtest.NewFakeStudio(tb),
		release:     make(chan struct{}),
		slowStarted: make(chan struct{}, 16),
		slowDone:    make(chan error, 16),
	}
	if !cfg.slowGate {
		close(h.release)
	}
	if !cfg.unlinked {
		h.studio.Link(h.agent, testStudioAgentID)
	}
	opts := []supervaizer.Option{
		supervaizer.WithEnv(emptyEnv),
		supervaizer.WithServerID(testServerID),
		supervaizer.WithAPIKey(testWriteKey, supervaizer.ScopeWrite),
		supervaizer.WithAPIKey(testReadKey, supervaizer.ScopeRead),
	}
	if !cfg.noAuth {
		opts = append(opts, supervaizer.WithWorkspaceAuth(testWorkspaceAuth(h.studio)))
	}
	srv, err := supervaizer.NewServer([]*supervaizer.Agent{h.agent}, append(opts, cfg.opts...)...)
	require.NoError(tb, err)
	h.srv = srv
	h.registerHandlers(h.agent)
	return h
}

// validToken is a token h's server accepts for every test call.
func (h *harness) validToken() string { return mintToken(h.studio, nil) }

// jobStartInput is the typed input of job.start.
type jobStartInput struct {
	TopicID string `json:"topic_id"`
}

// bulkInput is the input of job.bulk.
type bulkInput struct {
	Size int `json:"size"`
}

// maxBulk bounds job.bulk, which fuzzing may reach.
const maxBulk = 1 << 20

func (h *harness) record(ctx context.Context, c seenCall) {
	h.calls.Add(1)
	c.ctx = ctx
	c.ctxWS, c.ctxHasWS = supervaizer.WorkspaceFrom(ctx)
	if a, ok := supervaizer.AgentFrom(ctx); ok {
		c.agentSlug = a.Slug()
	}
	h.mu.Lock()
	h.last = &c
	h.mu.Unlock()
}

// lastCall returns the most recent handler call.
func (h *harness) lastCall(tb testing.TB) seenCall {
	tb.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	require.NotNil(tb, h.last, "no handler ran")
	return *h.last
}

// echoData is the effect data of an echoing handler: the request as the handler
// received it, and whether ctx carries the same workspace context.
func echoData(ctx context.Context, req any) map[string]any {
	ws, ok := supervaizer.WorkspaceFrom(ctx)
	var inReq *contracts.VerifiedWorkspaceContext
	switch r := req.(type) {
	case *supervaizer.ActionRequest:
		inReq = r.WorkspaceAuthorization
	case *supervaizer.SurfaceRequest:
		inReq = r.WorkspaceAuthorization
	}
	return map[string]any{"request": req, "context_has_workspace": ok, "context_matches_request": ws == inReq}
}

func (h *harness) registerHandlers(a *supervaizer.Agent) {
	act := func(id string, fn supervaizer.ActionHandler) {
		a.HandleAction(id, func(ctx context.Context, req *supervaizer.ActionRequest) (*supervaizer.ActionResult, error) {
			h.record(ctx, seenCall{id: id, action: req})
			return fn(ctx, req)
		})
	}
	echo := func(ctx context.Context, req *supervaizer.ActionRequest) (*supervaizer.ActionResult, error) {
		return supervaizer.OK(supervaizer.Effect{Type: req.Action + ".echoed", JobID: req.JobID, Data: echoData(ctx, req)}), nil
	}
	supervaizer.HandleActionFor(a, "job.start", func(ctx context.Context, req *supervaizer.ActionRequest, in jobStartInput) (*supervaizer.ActionResult, error) {
		h.record(ctx, seenCall{id: "job.start", action: req})
		return supervaizer.OK(supervaizer.JobStarted(req.JobID, map[string]any{"topic_id": in.TopicID})), nil
	})
	act("job.sync", echo)
	act(contracts.BootstrapOptionsAction, echo)
	act(contracts.BootstrapCreateAction, echo)
	act("workspace_binding.delete", echo)
	act("job.reject", func(context.Context, *supervaizer.ActionRequest) (*supervaizer.ActionResult, error) {
		return supervaizer.Fail(contracts.ErrorInvalidInput, "topic %q is unknown", "battery-market"), nil
	})
	act("job.empty", func(context.Context, *supervaizer.ActionRequest) (*supervaizer.ActionResult, error) {
		return &supervaizer.ActionResult{Status: contracts.StatusOK}, nil
	})
	act("job.nulls", func(context.Context, *supervaizer.ActionRequest) (*supervaizer.ActionResult, error) {
		var res supervaizer.ActionResult // decoded from JSON: the explicit nulls are kept
		err := contracts.Unmarshal([]byte(`{"status":"ok","job_state":null,"custom":null,`+
			`"effects":[{"type":"job.nulls","job_id":null,"external_ref":null,"data":{"kept":null}}]}`), &res)
		return &res, err
	})
	act("job.bulk", func(_ context.Context, req *supervaizer.ActionRequest) (*supervaizer.ActionResult, error) {
		var in bulkInput
		_ = json.Unmarshal(req.Input, &in)
		in.Size = max(0, min(in.Size, maxBulk))
		return supervaizer.OK(supervaizer.Effect{Type: "job.bulk", Message: strings.Repeat("x", in.Size)}), nil
	})
	act("job.slow", func(ctx context.Context, _ *supervaizer.ActionRequest) (*supervaizer.ActionResult, error) {
		notify(h.slowStarted, struct{}{})
		select {
		case <-h.release:
			notify(h.slowDone, nil)
			return supervaizer.OK(supervaizer.Effect{Type: "job.slow.done"}), nil
		case <-ctx.Done():
			notify(h.slowDone, ctx.Err())
			return nil, ctx.Err()
		}
	})
	act("fail.error", func(_ context.Context, req *supervaizer.ActionRequest) (*supervaizer.ActionResult, error) {
		// Whatever the handler returns, -32603 goes on the wire: input.kind
		// picks the kind of error.
		var in struct{ Kind string }
		_ = json.Unmarshal(req.Input, &in)
		if err, ok := handlerErrorKinds[in.Kind]; ok {
			return nil, err
		}
		return nil, errors.New("database password=hunter2 rejected") // must never reach the client
	})
	act("fail.panic", func(context.Context, *supervaizer.ActionRequest) (*supervaizer.ActionResult, error) {
		panic("secret-panic-detail")
	})
	act("fail.invalid", func(context.Context, *supervaizer.ActionRequest) (*supervaizer.ActionResult, error) {
		return &supervaizer.ActionResult{Status: "done", Effects: []supervaizer.Effect{{Type: "secret-invalid-payload"}}}, nil
	})
	act("fail.nil", func(context.Context, *supervaizer.ActionRequest) (*supervaizer.ActionResult, error) {
		return nil, nil
	})

	surf := func(id string, fn supervaizer.SurfaceHandler) {
		a.HandleSurface(id, func(ctx context.Context, req *supervaizer.SurfaceRequest) (*supervaizer.SurfaceResult, error) {
			h.record(ctx, seenCall{id: id, surface: req})
			return fn(ctx, req)
		})
	}
	surf("job.start", func(ctx context.Context, req *supervaizer.SurfaceRequest) (*supervaizer.SurfaceResult, error) {
		return supervaizer.NewSurfaceResult(ctx, req.Surface, map[string]any{"type": "Form", "fields": []any{}, "submit": map[string]any{"action": "job.start", "label": "Start"}})
	})
	surf(contracts.BootstrapCreateSurface, func(ctx context.Context, req *supervaizer.SurfaceRequest) (*supervaizer.SurfaceResult, error) {
		doc := echoData(ctx, req)
		doc["type"] = "Configurator" // a document type the SDK does not interpret
		return supervaizer.NewSurfaceResult(ctx, req.Surface, doc)
	})
	surf("surface.nodoc", func(_ context.Context, req *supervaizer.SurfaceRequest) (*supervaizer.SurfaceResult, error) {
		return &supervaizer.SurfaceResult{Surface: req.Surface}, nil
	})
	surf("surface.baddoc", func(_ context.Context, req *supervaizer.SurfaceRequest) (*supervaizer.SurfaceResult, error) {
		return &supervaizer.SurfaceResult{Surface: req.Surface, Document: json.RawMessage(`"secret-document"`)}, nil
	})
	surf("surface.fail", func(context.Context, *supervaizer.SurfaceRequest) (*supervaizer.SurfaceResult, error) {
		return nil, errors.New("secret-surface-failure")
	})
}

// notify sends v on ch unless ch is full: observers are optional, and a
// handler must never block on them (fuzzing may call job.slow many times).
func notify[T any](ch chan T, v T) {
	select {
	case ch <- v:
	default:
	}
}

// rpcCall describes one POST /a2a.
type rpcCall struct {
	body   []byte
	key    string // X-API-Key; "" sends none
	token  string // X-Supervaize-Workspace-Authorization value; "" sends none
	header http.Header
}

// newRPCRequest builds a POST /a2a request.
func newRPCRequest(ctx context.Context, c rpcCall) *http.Request {
	r := httptest.NewRequestWithContext(ctx, http.MethodPost, "/a2a", bytes.NewReader(c.body))
	r.Host = "127.0.0.1:8080" // a local-mode server answers only loopback hosts
	r.Header.Set("Content-Type", "application/json")
	if c.key != "" {
		r.Header.Set(supervaizer.HeaderAPIKey, c.key)
	}
	if c.token != "" {
		r.Header.Set(supervaizer.HeaderWorkspaceAuthorization, c.token)
	}
	for k, vs := range c.header {
		r.Header[k] = vs
	}
	return r
}

// serve runs one POST /a2a through ServeHTTP.
func (h *harness) serve(c rpcCall) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.srv.ServeHTTP(w, newRPCRequest(context.Background(), c))
	return w
}

// rpcResponse is a decoded JSON-RPC response.
type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *rpcError       `json:"error"`
}

type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

// decodeRPC decodes a 200 JSON-RPC response.
func decodeRPC(tb testing.TB, w *httptest.ResponseRecorder) rpcResponse {
	tb.Helper()
	require.Equal(tb, http.StatusOK, w.Code, "body: %s", w.Body.String())
	var resp rpcResponse
	require.NoError(tb, json.Unmarshal(w.Body.Bytes(), &resp), "body: %s", w.Body.String())
	require.Equal(tb, "2.0", resp.JSONRPC)
	return resp
}

// invoke calls an action with the write key and token, and returns the response.
func (h *harness) invoke(tb testing.TB, token string, params map[string]any) rpcResponse {
	tb.Helper()
	return decodeRPC(tb, h.serve(rpcCall{body: rpcBody(tb, "rpc-1", supervaizer.MethodActionInvoke, params), key: testWriteKey, token: token}))
}

// rpcBody encodes a JSON-RPC request.
func rpcBody(tb testing.TB, id any, method string, params any) []byte {
	tb.Helper()
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	require.NoError(tb, err)
	return b
}

// actionParams returns flat V2ActionRequest params for action, changed by mod.
func actionParams(action string, mod func(map[string]any)) map[string]any {
	p := map[string]any{
		"request_id": "req-1",
		"actor":      map[string]any{"user_id": "user-9"},
		"workspace":  map[string]any{"id": testWorkspaceID, "slug": testWorkspaceSlug},
		"mission_id": "mis-3",
		"agent_slug": testAgentSlug,
		"surface":    "job.start",
		"action":     action,
		"job_id":     "job-77",
	}
	if action == "job.start" {
		p["input"] = map[string]any{"topic_id": "battery-market"}
	}
	if mod != nil {
		mod(p)
	}
	return p
}

// surfaceParams returns flat V2SurfaceRequest params for surface.
func surfaceParams(surface string, mod func(map[string]any)) map[string]any {
	p := actionParams("", nil)
	delete(p, "action")
	p["surface"] = surface
	if mod != nil {
		mod(p)
	}
	return p
}

// sseEvent is one Server-Sent Event as a client sees it.
type sseEvent = ssetest.Event

// sseClient reads an event stream in the background.
type sseClient struct {
	resp   *http.Response
	events chan sseEvent
	done   chan struct{} // closed when the stream ends
	cancel context.CancelFunc
}

// openEvents opens GET /a2a/events on base with key and the extra headers.
func openEvents(tb testing.TB, client *http.Client, base, key string, header http.Header) *sseClient {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/a2a/events", nil)
	require.NoError(tb, err)
	req.Header.Set(supervaizer.HeaderAPIKey, key)
	for k, vs := range header {
		req.Header[k] = vs
	}
	resp, err := client.Do(req)
	if err != nil {
		cancel()
		require.NoError(tb, err)
	}
	c := &sseClient{resp: resp, events: make(chan sseEvent, 4096), done: make(chan struct{}), cancel: cancel}
	if resp.StatusCode != http.StatusOK {
		close(c.done)
		close(c.events)
		return c
	}
	go c.read()
	tb.Cleanup(c.close)
	return c
}

func (c *sseClient) read() {
	defer close(c.done)
	defer close(c.events)
	r := bufio.NewReader(c.resp.Body)
	for {
		ev, err := ssetest.Read(r)
		if err != nil {
			return
		}
		c.events <- ev
	}
}

// next returns the next event, failing the test after timeout.
func (c *sseClient) next(tb testing.TB) sseEvent {
	tb.Helper()
	select {
	case ev, ok := <-c.events:
		require.True(tb, ok, "the event stream ended")
		return ev
	case <-time.After(10 * time.Second):
		require.FailNow(tb, "no event within 10s")
		return sseEvent{}
	}
}

// nextEffect skips heartbeats and returns the next supervaizer.effect event.
func (c *sseClient) nextEffect(tb testing.TB) sseEvent {
	tb.Helper()
	for {
		ev := c.next(tb)
		if ev.Name == supervaizer.EventEffect {
			return ev
		}
		require.Equal(tb, "supervaizer.heartbeat", ev.Name, "unexpected event %+v", ev)
	}
}

// close ends the stream from the client side and waits for the reader.
func (c *sseClient) close() {
	c.cancel()
	_ = c.resp.Body.Close()
	<-c.done
}

// effectData is the data of a supervaizer.effect event.
type effectData struct {
	AgentSlug string           `json:"agent_slug"`
	Action    string           `json:"action"`
	RequestID string           `json:"request_id"`
	Effects   []map[string]any `json:"effects"`
}

// newHTTPServer serves h over a real listener and returns it with a client;
// both are closed when the test ends.
func newHTTPServer(tb testing.TB, h http.Handler) (*httptest.Server, *http.Client) {
	tb.Helper()
	ts := httptest.NewServer(h)
	client := ts.Client()
	tb.Cleanup(func() {
		client.CloseIdleConnections()
		ts.Close()
	})
	return ts, client
}

// waitGoroutines polls until the number of goroutines is back to at most
// baseline, failing after a few seconds with a dump of the stacks.
func waitGoroutines(tb testing.TB, baseline int) {
	tb.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		n := runtime.NumGoroutine()
		if n <= baseline {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			require.FailNowf(tb, "goroutine leak", "%d goroutines, baseline %d:\n%s", n, baseline, buf)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// readGuard is a request body that records whether anything read it.
type readGuard struct {
	r    io.Reader
	read atomic.Bool
}

func (g *readGuard) Read(p []byte) (int, error) {
	g.read.Store(true)
	return g.r.Read(p)
}

// panicMessage runs fn and returns the message it panicked with ("" if none).
func panicMessage(fn func()) (msg string) {
	defer func() {
		if v := recover(); v != nil {
			msg, _ = v.(string)
			if msg == "" {
				if err, ok := v.(error); ok {
					msg = err.Error()
				}
			}
		}
	}()
	fn()
	return ""
}
