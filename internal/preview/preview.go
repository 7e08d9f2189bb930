// Package preview serves the local preview of a controller's agents under
// /_preview/: the registration summary, every declared surface rendered from
// its real surface.load result, the jobs started from the preview, and a live
// panel of the controller's events.
//
// The preview never sees the controller's API key: its small JSON endpoints
// build the JSON-RPC request server-side and hand it to [Config.Call], which
// posts it to the controller's own /a2a pipeline in-process (same validation,
// idempotency and local-mode context as any client). Every page carries a
// strict Content-Security-Policy (no inline script, no remote origin) and
// every agent-provided string is escaped by html/template or written with
// textContent by the script.
package preview

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"mime"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/supervaize/supervaizer-go/internal/loopback"
)

// Prefix is the path the preview is served under.
const Prefix = "/_preview/"

// JSON-RPC methods the preview calls.
const (
	methodActionInvoke = "supervaizer/action.invoke"
	methodSurfaceLoad  = "supervaizer/surface.load"
)

// The request context of every call the preview makes: a local workspace,
// mission and actor (the controller runs in local mode, where workspace
// authorization is bypassed).
const (
	WorkspaceID = "ws-local"
	MissionID   = "mission-local"
	ActorID     = "preview"
)

// ContentSecurityPolicy is sent with every preview response: scripts, styles
// and connections from the controller's own origin only, no inline script,
// no frames, no plugins.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// maxAPIBody bounds the body of a preview API request (an uploaded import
// file travels in it).
const maxAPIBody = 8 << 20

// maxReplayKeys bounds the idempotency keys remembered to recognize a replay.
const maxReplayKeys = 1024

// maxJobs bounds the jobs remembered for the jobs view.
const maxJobs = 200

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Agent is one agent of the controller as the preview shows it.
type Agent struct {
	Slug         string
	Name         string
	Version      string
	Description  string
	CardPath     string          // path of its Agent Card on the controller
	Registration json.RawMessage // the registration as sent to Studio
	// The agent's introduction, as Studio's agent list shows it: the
	// overview leads with it.
	Tagline      string
	Summary      string
	ExampleGoals []string
}

// Config wires the preview to its controller.
type Config struct {
	Agents []Agent
	// Call posts a JSON-RPC request body to the controller's POST /a2a
	// in-process, with the controller's own key, and returns the response
	// body. The key never reaches the preview.
	Call func(ctx context.Context, body []byte) ([]byte, error)
	// Events serves the controller's event stream (GET /a2a/events) to the
	// page's event panel, in-process, without a key.
	Events http.Handler
	// AllowRemote serves the preview on any connection; by default only
	// loopback connections addressed by a loopback host name are answered,
	// which also defeats DNS rebinding.
	AllowRemote bool
}

// Handler serves the preview; mount it at [Prefix].
type Handler struct {
	cfg    Config
	agents []*agentView
	bySlug map[string]*agentView
	pages  map[string]*template.Template
	static http.Handler
	seq    atomic.Uint64

	mu      sync.Mutex
	replays map[string]string // idempotency key -> digest of the first result
	keys    []string          // replays keys, oldest first
	jobs    map[string]*jobView
	order   []string // job ids, oldest first
}

// agentView is an agent with its decoded registration.
type agentView struct {
	Agent
	reg *registration
}

// New builds the preview handler.
func New(cfg Config) (*Handler, error) {
	if cfg.Call == nil || cfg.Events == nil {
		return nil, errors.New("preview: Config.Call and Config.Events are required")
	}
	h := &Handler{cfg: cfg, bySlug: map[string]*agentView{}, replays: map[string]string{}, jobs: map[string]*jobView{}}
	for _, a := range cfg.Agents {
		reg, err := parseRegistration(a.Registration)
		if err != nil {
			return nil, fmt.Errorf("preview: agent %q: %w", a.Slug, err)
		}
		v := &agentView{Agent: a, reg: reg}
		h.agents = append(h.agents, v)
		h.bySlug[a.Slug] = v
	}
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	h.pages = pages
	sub, err := fs.Sub(staticFS, "static")
	if err != nil {
		return nil, err
	}
	h.static = http.StripPrefix(Prefix+"static/", http.FileServer(http.FS(sub)))
	return h, nil
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.allowed(r) {
		http.NotFound(w, r)
		return
	}
	hd := w.Header()
	hd.Set("Content-Security-Policy", ContentSecurityPolicy)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Cache-Control", "no-store")
	hd.Set("Referrer-Policy", "no-referrer")
	path := r.URL.Path
	switch {
	case r.Method == http.MethodGet && path == Prefix:
		h.serveOverview(w, r)
	case r.Method == http.MethodGet && path == Prefix+"surface":
		h.serveSurface(w, r)
	case r.Method == http.MethodGet && path == Prefix+"jobs":
		h.serveJobs(w, r)
	case r.Method == http.MethodGet && path == Prefix+"events":
		h.serveEvents(w, r)
	case r.Method == http.MethodGet && strings.HasPrefix(path, Prefix+"static/"):
		h.static.ServeHTTP(w, r)
	case r.Method == http.MethodPost && path == Prefix+"api/invoke":
		h.serveInvoke(w, r)
	case r.Method == http.MethodPost && path == Prefix+"api/sync":
		h.serveSync(w, r)
	default:
		http.NotFound(w, r)
	}
}

// serveEvents relays the controller's event stream. The page passes the id
// of the last event it showed as ?after= (an EventSource cannot set
// Last-Event-ID on its first connection), so no event is missed between pages.
func (h *Handler) serveEvents(w http.ResponseWriter, r *http.Request) {
	if after := r.URL.Query().Get("after"); after != "" && r.Header.Get("Last-Event-ID") == "" {
		r = r.Clone(r.Context())
		r.Header.Set("Last-Event-ID", after)
	}
	h.cfg.Events.ServeHTTP(w, r)
}

// allowed answers only loopback connections addressed by a loopback host,
// unless AllowRemote is set.
func (h *Handler) allowed(r *http.Request) bool {
	if h.cfg.AllowRemote {
		return true
	}
	if la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		if !loopback.Addr(la.String()) {
			return false
		}
	} else if !loopback.Addr(r.RemoteAddr) {
		return false
	}
	return loopback.Host(r.Host)
}

// sameOrigin refuses cross-site calls to the JSON endpoints: they must be
// JSON (a cross-origin page cannot send that without a preflight the preview
// never answers) and, when the browser says where they come from, from the
// preview's own origin.
func sameOrigin(r *http.Request) bool {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		return false
	}
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" {
		return false
	}
	if o := r.Header.Get("Origin"); o != "" && o != "http://"+r.Host && o != "https://"+r.Host {
		return false
	}
	return true
}

// --- calls into the controller ---

// rpcResponse is a JSON-RPC response of the controller.
type rpcResponse struct {
	Result json.RawMessage `json:"result"`
	Error  *rpcError       `json:"error"`
}

type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

func (e *rpcError) Error() string { return fmt.Sprintf("%s (JSON-RPC %d)", e.Message, e.Code) }

// call is one request to the controller: an action or a surface load.
type call struct {
	Agent          string          `json:"agent"`
	Surface        string          `json:"surface"`
	Action         string          `json:"action,omitempty"`
	JobID          string          `json:"job_id,omitempty"`
	CaseID         string          `json:"case_id,omitempty"`
	StepID         string          `json:"step_id,omitempty"`
	IdempotencyKey string          `json:"idempotency_key,omitempty"`
	Input          json.RawMessage `json:"input,omitempty"`
}

// request builds the JSON-RPC body of c.
func (h *Handler) request(c call) []byte {
	n := h.seq.Add(1)
	req := map[string]any{
		"request_id": "preview-" + strconv.FormatUint(n, 10),
		"actor":      map[string]any{"user_id": ActorID},
		"workspace":  map[string]any{"id": WorkspaceID},
		"mission_id": MissionID,
		"agent_slug": c.Agent,
		"surface":    c.Surface,
	}
	for k, v := range map[string]string{"job_id": c.JobID, "case_id": c.CaseID, "step_id": c.StepID} {
		if v != "" {
			req[k] = v
		}
	}
	if len(c.Input) > 0 {
		req["input"] = c.Input
	} else {
		req["input"] = map[string]any{}
	}
	method, param := methodSurfaceLoad, "surface_request"
	if c.Action != "" {
		method, param = methodActionInvoke, "action_request"
		req["action"] = c.Action
		if c.IdempotencyKey != "" {
			req["idempotency_key"] = c.IdempotencyKey
		}
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": n, "method": method, "params": map[string]any{param: req}})
	return b
}

// do sends c to the controller.
func (h *Handler) do(ctx context.Context, c call) (json.RawMessage, *rpcResponse, error) {
	raw, err := h.cfg.Call(ctx, h.request(c))
	if err != nil {
		return nil, nil, err
	}
	var resp rpcResponse
	if err := json.Unmarshal(raw, &resp); err != nil {
		return raw, nil, fmt.Errorf("the controller answered %q", truncate(string(raw), 200))
	}
	return raw, &resp, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// actionResult is the part of an action result the preview reads.
type actionResult struct {
	Status   string            `json:"status"`
	Effects  []json.RawMessage `json:"effects"`
	JobState json.RawMessage   `json:"job_state"`
}

// loadSurface calls surface.load and returns the document.
func (h *Handler) loadSurface(ctx context.Context, c call) (json.RawMessage, error) {
	c.Action, c.IdempotencyKey = "", ""
	_, resp, err := h.do(ctx, c)
	if err != nil {
		return nil, err
	}
	if resp.Error != nil {
		return nil, resp.Error
	}
	var res struct {
		Document json.RawMessage `json:"document"`
	}
	if err := json.Unmarshal(resp.Result, &res); err != nil || len(res.Document) == 0 {
		return nil, errors.New("the surface result has no document")
	}
	return res.Document, nil
}

// --- JSON endpoints ---

// invokeAnswer is the answer of POST /_preview/api/invoke.
type invokeAnswer struct {
	IdempotencyKey string          `json:"idempotency_key"`
	JobID          string          `json:"job_id,omitempty"`
	Replayed       bool            `json:"replayed"`
	Response       json.RawMessage `json:"response"`
}

func (h *Handler) serveInvoke(w http.ResponseWriter, r *http.Request) {
	c, ok := h.readCall(w, r)
	if !ok {
		return
	}
	a := h.bySlug[c.Agent]
	if c.Action == "" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "action is required"})
		return
	}
	if c.IdempotencyKey == "" {
		c.IdempotencyKey = "preview-" + randomHex(12)
	}
	if c.JobID == "" && a.startsJob(c.Action) {
		c.JobID = "job-" + randomHex(6)
	}
	raw, resp, err := h.do(r.Context(), c)
	if err != nil {
		writeJSON(w, http.StatusBadGateway, map[string]string{"error": err.Error()})
		return
	}
	ans := invokeAnswer{IdempotencyKey: c.IdempotencyKey, JobID: c.JobID, Response: raw}
	if resp.Error == nil {
		ans.Replayed = h.seen(c.IdempotencyKey, resp.Result)
		h.recordJob(c.Agent, resp.Result)
	}
	writeJSON(w, http.StatusOK, ans)
}

// serveSync calls the agent's job.sync action for a job of the session.
func (h *Handler) serveSync(w http.ResponseWriter, r *http.Request) {
	c, ok := h.readCall(w, r)
	if !ok {
		return
	}
	a := h.bySlug[c.Agent]
	h.mu.Lock()
	j := h.jobs[c.JobID]
	h.mu.Unlock()
	if j == nil || j.Agent != c.Agent {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "no such job in this preview session"})
		return
	}
	c.Action, c.Input, c.IdempotencyKey = a.syncAction(), nil, ""
	if c.Surface == "" {
		c.Surface = c.Action
	}
	raw, resp, err := h.do(r.Context(), c)
	if err != nil {
		writeJSON(w, http.StatusBadGateway, map[string]string{"error": err.Error()})
		return
	}
	if resp.Error == nil {
		h.recordJob(c.Agent, resp.Result)
	}
	writeJSON(w, http.StatusOK, invokeAnswer{JobID: c.JobID, Response: raw})
}

func (h *Handler) readCall(w http.ResponseWriter, r *http.Request) (call, bool) {
	var c call
	if !sameOrigin(r) {
		writeJSON(w, http.StatusForbidden, map[string]string{"error": "only the preview page may call this endpoint"})
		return c, false
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxAPIBody))
	if err != nil {
		writeJSON(w, http.StatusRequestEntityTooLarge, map[string]string{"error": "request too large"})
		return c, false
	}
	if err := json.Unmarshal(body, &c); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid JSON: " + err.Error()})
		return c, false
	}
	if _, ok := h.bySlug[c.Agent]; !ok {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "no such agent"})
		return c, false
	}
	return c, true
}

// startsJob reports whether action starts a job (the setup policy's start
// action): the preview then gives the request a new job id.
func (a *agentView) startsJob(action string) bool {
	start := "job.start"
	if s := a.reg.JobPolicy.Setup; s != nil && s.StartAction != "" {
		start = s.StartAction
	}
	return action == start
}

func (a *agentView) syncAction() string {
	if s := a.reg.JobPolicy.Sync; s != nil && s.Action != "" {
		return s.Action
	}
	return "job.sync"
}

// seen remembers the result of the first call with key and reports whether
// this result repeats it byte for byte: the idempotency layer replayed it.
func (h *Handler) seen(key string, result json.RawMessage) bool {
	sum := sha256.Sum256(result)
	digest := hex.EncodeToString(sum[:])
	h.mu.Lock()
	defer h.mu.Unlock()
	if first, ok := h.replays[key]; ok {
		return first == digest
	}
	if len(h.keys) >= maxReplayKeys {
		delete(h.replays, h.keys[0])
		h.keys = h.keys[1:]
	}
	h.replays[key] = digest
	h.keys = append(h.keys, key)
	return false
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// render executes a page template into a buffer first, so a template error
// is a clean 500.
func (h *Handler) render(w http.ResponseWriter, page string, data any) {
	var buf bytes.Buffer
	if err := h.pages[page].ExecuteTemplate(&buf, "layout", data); err != nil {
		http.Error(w, "preview: render "+page+": "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = buf.WriteTo(w)
}
