package testing

import (
	"crypto/rsa"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/supervaize/supervaizer-go/studio"
)

// Defaults of a [FakeStudioAPI].
const (
	// DefaultAccountKey is the Studio account key (SUPERVAIZE_API_KEY) a
	// FakeStudioAPI accepts unless [WithAccountKey] sets another.
	DefaultAccountKey = "svtest-account-key"
	// WaitTimeout bounds the Wait methods of a FakeStudioAPI.
	WaitTimeout = 10 * time.Second
	// DropConnection, given to [FakeStudioAPI.FailNext] as the status, makes
	// the fake close the connection without answering: a transport failure,
	// which the SDK retries.
	DropConnection = 0
)

// Paths of the workspace API, relative to its base /w/<workspace id>/api/v1;
// make them absolute with [FakeStudioAPI.WorkspacePath].
const (
	EventsPath        = "/ctrl-events/"
	ContextSearchPath = "/context/search/"
	ContextOpenPath   = "/context/open/"
	agentsPath        = "/agents/"
	agentsBySlugPath  = "/agents/by-slug/"
)

// maxAPIBody bounds every request body the fake reads.
const maxAPIBody = 4 << 20

// APIOption configures [NewFakeStudioAPI].
type APIOption func(*apiConfig)

type apiConfig struct {
	accountKey  string
	workspaceID string
}

// WithAccountKey sets the Studio account key the fake accepts ("Authorization:
// Api-Key <key>"). Default: [DefaultAccountKey].
func WithAccountKey(key string) APIOption { return func(c *apiConfig) { c.accountKey = key } }

// WithWorkspaceID sets the controller owner's workspace (SUPERVAIZE_WORKSPACE_ID):
// the workspace of the API paths and of the "workspace" header. Default:
// [DefaultWorkspaceID].
func WithWorkspaceID(id string) APIOption { return func(c *apiConfig) { c.workspaceID = id } }

// FakeStudioAPI is a fake of Studio's HTTP side, the endpoints a controller
// attached to Studio calls, served by an
// httptest server:
//
//   - POST /w/{ws}/api/v1/ctrl-events/: controller events, all recorded;
//     server.register is answered with a valid supervaizer_handshake
//     binding every registered agent to
//     [FakeStudio.StudioAgentID];
//   - GET /w/{ws}/api/v1/agents/{id} and /agents/by-slug/{slug}: the agent
//     lookup, with parameters set by [FakeStudioAPI.SetAgent]
//     encrypted for the controller key received in server.register;
//   - POST /api/v1/rule-checkpoints/: rule checkpoints, for snapshots made by
//     [FakeStudioAPI.RuleSnapshot], answered per [FakeStudioAPI.SetDecision];
//     a checkpoint of a case never announced (agent.case.start or
//     agent.case.update) is answered 409;
//   - POST /w/{ws}/api/v1/context/search/ and /context/open/: the context
//     client, over the items of [FakeStudioAPI.AddContext];
//   - POST /w/{ws}/api/v1/billing/consumption/: billable consumption in the
//     SDK's provisional wire format, with receipts and duplicate detection.
//
// Every request must carry the account headers: "Authorization: Api-Key
// <key>" (401 otherwise), "workspace: <ws>" (403), an accept header allowing
// application/json (406) and, on POST, a JSON content type (415). A body that
// breaks the wire format is answered 400 with {"detail": …}, so SDK
// regressions show up as errors. [FakeStudioAPI.FailNext] injects failures.
//
// What the fake received is exposed by typed accessors returning copies; it is
// safe for concurrent use. It never logs: the keys and tokens it receives stay
// in memory.
type FakeStudioAPI struct {
	t      testing.TB
	studio *FakeStudio
	key    string
	ws     string
	srv    *httptest.Server
	decoy  *httptest.Server
	decoys atomic.Int64

	mu           sync.Mutex
	changed      chan struct{} // closed and replaced on every recorded request
	seq          int
	requests     []RecordedRequest
	failures     []injectedFailure
	events       []StudioEvent
	regs         []ServerRegistration
	controller   *rsa.PublicKey // from the last server.register
	expectKey    string
	expectSet    bool
	editHS       func(response map[string]any)
	agents       map[string]AgentDetail // by slug
	tokens       map[string]string      // checkpoint token -> snapshot hash
	decisions    map[decisionKey]string
	announced    map[caseKey]bool
	checkpoints  []checkpointRec
	contextItems []ContextItem
	contextCalls []ContextCall
	billing      []billingRec
	receipts     map[string]string // idempotency key -> receipt id
}

type injectedFailure struct {
	path   string
	status int
}

type caseKey struct{ jobID, caseID string }

// RecordedRequest is one request the fake Studio API received, whatever its
// outcome. Headers and bodies are not kept (they carry secrets); the typed
// records ([StudioEvent], [CheckpointCall], …) hold the decoded bodies.
type RecordedRequest struct {
	Seq    int    // 1-based position among every request the fake received
	Method string // GET, POST, …
	Path   string // URL path, decoded
	Status int    // the status answered; DropConnection when the connection was dropped
}

// NewFakeStudioAPI starts a fake Studio API for studio (whose server id and
// Studio agent ids the handshake announces) on an httptest server, closed by
// t.Cleanup. It also starts the decoy server that rule snapshots name as
// their checkpoint_url; see [FakeStudioAPI.SnapshotURLCalls].
func NewFakeStudioAPI(t testing.TB, studio *FakeStudio, opts ...APIOption) *FakeStudioAPI {
	t.Helper()
	if studio == nil {
		t.Fatalf("svtest: NewFakeStudioAPI: nil FakeStudio")
		return nil
	}
	cfg := apiConfig{accountKey: DefaultAccountKey, workspaceID: DefaultWorkspaceID}
	for _, o := range opts {
		o(&cfg)
	}
	if strings.TrimSpace(cfg.accountKey) == "" || strings.TrimSpace(cfg.workspaceID) == "" {
		t.Fatalf("svtest: NewFakeStudioAPI: the account key and the workspace id must not be blank")
		return nil
	}
	f := newFakeStudioAPI(t, studio, cfg)
	f.srv = httptest.NewServer(f)
	f.decoy = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		f.decoys.Add(1)
		writeAPIJSON(w, http.StatusTeapot, map[string]any{"detail": "svtest: the snapshot's checkpoint_url must never be called"})
	}))
	t.Cleanup(func() {
		f.srv.Close()
		f.decoy.Close()
	})
	return f
}

// newFakeStudioAPI returns the fake API's state, not yet served.
func newFakeStudioAPI(t testing.TB, studio *FakeStudio, cfg apiConfig) *FakeStudioAPI {
	return &FakeStudioAPI{
		t: t, studio: studio, key: cfg.accountKey, ws: cfg.workspaceID,
		changed:   make(chan struct{}),
		agents:    map[string]AgentDetail{},
		tokens:    map[string]string{},
		decisions: map[decisionKey]string{},
		announced: map[caseKey]bool{},
		receipts:  map[string]string{},
	}
}

// Studio returns the fake Studio whose identity the API serves.
func (f *FakeStudioAPI) Studio() *FakeStudio { return f.studio }

// URL returns Studio's base URL (SUPERVAIZE_API_URL).
func (f *FakeStudioAPI) URL() string { return f.srv.URL }

// AccountKey returns the Studio account key the fake accepts (SUPERVAIZE_API_KEY).
func (f *FakeStudioAPI) AccountKey() string { return f.key }

// WorkspaceID returns the controller owner's workspace (SUPERVAIZE_WORKSPACE_ID).
func (f *FakeStudioAPI) WorkspaceID() string { return f.ws }

// WorkspacePath returns the absolute URL path of rel (for example
// [EventsPath] or [studio.BillingConsumptionPath]) under the workspace
// API base, /w/<workspace id>/api/v1.
func (f *FakeStudioAPI) WorkspacePath(rel string) string { return "/w/" + f.ws + "/api/v1" + rel }

// ClientConfig returns the configuration of a [studio.Client] on the
// fake: its URL, workspace and account key. Edit it (Timeout, MaxRetries,
// Logger, …) before [studio.NewClient].
func (f *FakeStudioAPI) ClientConfig() studio.Config {
	return studio.Config{APIURL: f.srv.URL, WorkspaceID: f.ws, APIKey: f.key}
}

// Client returns a new Studio client on the fake ([FakeStudioAPI.ClientConfig]).
func (f *FakeStudioAPI) Client() *studio.Client {
	f.t.Helper()
	a, err := studio.NewClient(f.ClientConfig())
	if err != nil {
		f.t.Fatalf("svtest: NewClient: %v", err)
	}
	return a
}

// Env returns the Studio account variables of a controller attached to the
// fake: SUPERVAIZE_API_URL, SUPERVAIZE_API_KEY and SUPERVAIZE_WORKSPACE_ID.
func (f *FakeStudioAPI) Env() map[string]string {
	return map[string]string{
		studio.EnvAPIURL:      f.srv.URL,
		studio.EnvAPIKey:      f.key,
		studio.EnvWorkspaceID: f.ws,
	}
}

// FailNext makes the next request whose URL path is path (absolute, for
// example api.WorkspacePath(svtest.EventsPath) or
// studio.RuleCheckpointsPath) fail with status (400–599), answered with
// {"detail": "svtest: injected failure"}, or with [DropConnection] by closing
// the connection unanswered. Calls queue up: two calls fail the next two
// requests. The failed request is recorded, not processed.
func (f *FakeStudioAPI) FailNext(path string, status int) {
	f.t.Helper()
	if status != DropConnection && (status < 400 || status > 599) {
		f.t.Fatalf("svtest: FailNext(%q, %d): the status must be 400–599 or DropConnection", path, status)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failures = append(f.failures, injectedFailure{path: path, status: status})
}

// Requests returns every request received so far, in order.
func (f *FakeStudioAPI) Requests() []RecordedRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.requests)
}

// SnapshotURLCalls returns how many requests reached the checkpoint_url of the
// rule snapshots ([FakeStudioAPI.RuleSnapshot]): the SDK must post checkpoints
// to the account's API URL only, so it stays 0.
func (f *FakeStudioAPI) SnapshotURLCalls() int { return int(f.decoys.Load()) }

// apiError is an answer other than 2xx.
type apiError struct {
	status int
	detail string
}

func (e *apiError) Error() string { return e.detail }

func badRequest(format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, detail: fmt.Sprintf(format, args...)}
}

// ServeHTTP implements the fake (see [FakeStudioAPI]); it can also be called
// in memory.
func (f *FakeStudioAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, readErr := io.ReadAll(http.MaxBytesReader(w, r.Body, maxAPIBody))
	f.mu.Lock()
	f.seq++
	seq := f.seq
	f.requests = append(f.requests, RecordedRequest{Seq: seq, Method: r.Method, Path: r.URL.Path})
	idx := len(f.requests) - 1
	fail, failed := f.takeFailure(r.URL.Path)
	f.notifyLocked()
	f.mu.Unlock()

	var status int
	var resp any
	switch {
	case failed:
		status, resp = fail.status, map[string]any{"detail": "svtest: injected failure"}
	case readErr != nil:
		status, resp = http.StatusRequestEntityTooLarge, map[string]any{"detail": "request body too large or unreadable"}
	default:
		status, resp = f.serve(r, body, seq)
	}
	f.mu.Lock()
	f.requests[idx].Status = status
	f.notifyLocked()
	f.mu.Unlock()
	if status == DropConnection {
		panic(http.ErrAbortHandler) // the server closes the connection without answering
	}
	writeAPIJSON(w, status, resp)
}

// takeFailure removes and returns the first failure injected for path.
// Callers hold mu.
func (f *FakeStudioAPI) takeFailure(path string) (injectedFailure, bool) {
	for i, fl := range f.failures {
		if fl.path == path {
			f.failures = slices.Delete(f.failures, i, i+1)
			return fl, true
		}
	}
	return injectedFailure{}, false
}

// notifyLocked wakes the Wait methods. Callers hold mu.
func (f *FakeStudioAPI) notifyLocked() {
	close(f.changed)
	f.changed = make(chan struct{})
}

func writeAPIJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"detail":"svtest: cannot encode the answer"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// serve checks the account headers and routes the request; it returns the
// status and the JSON body of the answer.
func (f *FakeStudioAPI) serve(r *http.Request, body []byte, seq int) (int, any) {
	if err := f.checkHeaders(r); err != nil {
		return err.status, map[string]any{"detail": err.detail}
	}
	status, resp, err := f.route(r, body, seq)
	if err != nil {
		var ae *apiError
		if !errors.As(err, &ae) {
			ae = &apiError{status: http.StatusInternalServerError, detail: err.Error()}
		}
		return ae.status, map[string]any{"detail": ae.detail}
	}
	return status, resp
}

// checkHeaders checks the headers every controller → Studio call carries.
func (f *FakeStudioAPI) checkHeaders(r *http.Request) *apiError {
	if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), []byte("Api-Key "+f.key)) != 1 {
		return &apiError{status: http.StatusUnauthorized, detail: "invalid or missing account key (Authorization: Api-Key <key>)"}
	}
	if r.Header.Get("workspace") != f.ws {
		return &apiError{status: http.StatusForbidden, detail: "the workspace header does not name the account's workspace"}
	}
	if !acceptsJSON(r.Header.Get("Accept")) {
		return &apiError{status: http.StatusNotAcceptable, detail: "accept: application/json is required"}
	}
	if r.Method == http.MethodPost {
		if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
			return &apiError{status: http.StatusUnsupportedMediaType, detail: "Content-Type: application/json is required"}
		}
	}
	return nil
}

// acceptsJSON reports whether an accept header allows application/json.
func acceptsJSON(accept string) bool {
	for part := range strings.SplitSeq(accept, ",") {
		mt, _, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err == nil && (mt == "application/json" || mt == "application/*" || mt == "*/*") {
			return true
		}
	}
	return false
}

// route dispatches an authenticated request.
func (f *FakeStudioAPI) route(r *http.Request, body []byte, seq int) (int, any, error) {
	path := r.URL.Path
	if path == studio.RuleCheckpointsPath {
		if err := requireMethod(r, http.MethodPost); err != nil {
			return 0, nil, err
		}
		return f.handleCheckpoint(r, body, seq)
	}
	rel, ok := strings.CutPrefix(path, "/w/"+f.ws+"/api/v1")
	if !ok {
		return 0, nil, &apiError{status: http.StatusNotFound, detail: "not found"}
	}
	method := http.MethodPost
	var handle func() (int, any, error)
	switch {
	case rel == EventsPath:
		handle = func() (int, any, error) { return f.handleEvent(body, seq) }
	case rel == ContextSearchPath:
		handle = func() (int, any, error) { return f.handleSearch(body, seq) }
	case rel == ContextOpenPath:
		handle = func() (int, any, error) { return f.handleOpen(body, seq) }
	case rel == studio.BillingConsumptionPath:
		handle = func() (int, any, error) { return f.handleBilling(body, seq) }
	case strings.HasPrefix(rel, agentsBySlugPath) && len(rel) > len(agentsBySlugPath):
		method = http.MethodGet
		handle = func() (int, any, error) { return f.handleLookup("", strings.TrimPrefix(rel, agentsBySlugPath)) }
	case strings.HasPrefix(rel, agentsPath) && len(rel) > len(agentsPath) && !strings.Contains(rel[len(agentsPath):], "/"):
		method = http.MethodGet
		handle = func() (int, any, error) { return f.handleLookup(strings.TrimPrefix(rel, agentsPath), "") }
	default:
		return 0, nil, &apiError{status: http.StatusNotFound, detail: "not found"}
	}
	if err := requireMethod(r, method); err != nil {
		return 0, nil, err
	}
	return handle()
}

func requireMethod(r *http.Request, method string) error {
	if r.Method != method {
		return &apiError{status: http.StatusMethodNotAllowed, detail: "method not allowed, use " + method}
	}
	return nil
}

// decodeBody decodes a body that must be a JSON object into dst.
func decodeBody(body []byte, dst any) error {
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(body, &probe); err != nil || probe == nil {
		return badRequest("the body must be a JSON object")
	}
	if err := json.Unmarshal(body, dst); err != nil {
		return badRequest("the body does not match the wire format: %v", err)
	}
	return nil
}

// wait blocks until cond (called with mu held) is true, for at most
// WaitTimeout, then ends the test.
func (f *FakeStudioAPI) wait(t testing.TB, what string, cond func() bool) {
	t.Helper()
	timer := time.NewTimer(WaitTimeout)
	defer timer.Stop()
	for {
		f.mu.Lock()
		ok, ch := cond(), f.changed
		f.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-timer.C:
			t.Fatalf("svtest: FakeStudioAPI: timed out after %s waiting for %s", WaitTimeout, what)
			return
		}
	}
}
