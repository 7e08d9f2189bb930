package supervaizer

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/supervaize/supervaizer-go/a2a"
	"github.com/supervaize/supervaizer-go/internal/a2abind"
	"github.com/supervaize/supervaizer-go/internal/preview"
	"github.com/supervaize/supervaizer-go/internal/redact"
	"github.com/supervaize/supervaizer-go/internal/sse"
	"github.com/supervaize/supervaizer-go/internal/taskview"
	"github.com/supervaize/supervaizer-go/internal/validate"
	"github.com/supervaize/supervaizer-go/internal/wsauth"
	"github.com/supervaize/supervaizer-go/store"
	"github.com/supervaize/supervaizer-go/studio"
)

// Version is the SDK version sent to Studio as controller_version in
// server.register: the last release of CHANGELOG.md (a test keeps the two
// equal, so a release updates both).
const Version = "0.2.0"

// JSON-RPC methods served on POST /a2a.
const (
	MethodActionInvoke = "supervaizer/action.invoke"
	MethodSurfaceLoad  = "supervaizer/surface.load"
)

// HTTP headers of the protocol.
const (
	HeaderAPIKey                 = "X-API-Key"
	HeaderWorkspaceAuthorization = "X-Supervaize-Workspace-Authorization"
)

// Defaults of the server options.
const (
	defaultMaxBodyBytes = 4 << 20          // POST /a2a body limit
	defaultSSEHeartbeat = 15 * time.Second // heartbeat after this much silence
	defaultSSEQueueSize = 100              // events queued per SSE subscriber
	defaultSSEReplay    = 1024             // events kept for Last-Event-ID replay
	defaultSSEReplayMiB = 16               // memory of the events kept for replay, in MiB
	LocalModeAPIKey     = "local-dev"      // the API key in local mode when none is set
)

// Server is an agent controller: an http.Handler serving the Agent Cards, the
// JSON-RPC endpoint POST /a2a and the event stream GET /a2a/events for its
// agents. Every /a2a call is checked (API key, body size, envelope, request
// model, workspace token), dispatched to the agent's handler and its result
// validated against the contracts before it is sent.
type Server struct {
	agents  []*Agent
	bySlug  map[string]*Agent
	primary *Agent

	logger    *slog.Logger
	cfg       config
	keys      apiKeys
	serverID  string
	verifier  WorkspaceVerifier
	tokens    *wsauth.Verifier // the built-in verifier, nil when replaced
	localAuth bool             // local-mode bypass of workspace authorization
	validator *validate.Validator
	broker    *sse.Broker
	idem      *idempotency
	tasks     *taskview.View   // the A2A task view (internal/taskview), beside the pipeline
	history   *a2abind.History // the conversations' history (actions.go)
	router    http.Handler

	// The method table as this server serves it, each entry wrapped in the
	// interceptors (dispatch.go, observer.go): methods by name, otherMethod
	// for a name it does not serve, refuse for a request refused before any
	// method, handler around each agent handler.
	methods     map[string]*served
	otherMethod *served
	refuse      UnaryFunc
	handler     HandlerFunc
	a2aPost     http.Handler     // POST /a2a with the router's middleware, served before routing (ServeHTTP)
	preview     *preview.Handler // the local preview, nil when not served (discovery.go)

	// Shared state of several instances (backend.go): the event log, nil
	// without a Backend; eventsReady once its retained events are read.
	events      store.EventLog
	eventsReady atomic.Bool
	followMu    sync.Mutex    // guards followDone: seal starts the follower, Shutdown waits for it
	followDone  chan struct{} // closed when the follower ends; nil until it starts
	storeName   string        // for the startup log
	eventsName  string

	studio *studioLink // Studio attachment, nil when not attached (attach.go)

	// lifetime is the context of the server's own background work (the
	// registration refresh); Shutdown cancels it with stop.
	lifetime context.Context
	stop     context.CancelFunc

	inflight callTracker // calls in progress; Shutdown waits for them
	closing  atomic.Bool
	started  atomic.Bool // Start completed (required before /a2a when attached to Studio)
	// startedCh is closed when Start first succeeds: guarded steps wait for
	// it before calling Studio (checkpoint.go).
	startedCh chan struct{}
	startOnce sync.Once
	warnOnce  sync.Once
	sealOnce  sync.Once // the registrations are final (seal)
	sealErr   error
	startup   startupInfo // what the startup log reports (startup.go)
}

// New builds an agent from spec and the controller serving it: the form of
// one agent per server. Register its handlers on the returned server with
// [Server.HandleSurface], [Server.HandleAction] and [HandleActionFor], then
// serve it. It fails like [NewAgent] and [NewServer].
func New(spec AgentSpec, opts ...Option) (*Server, error) {
	a, err := NewAgent(spec)
	if err != nil {
		return nil, err
	}
	return NewServer([]*Agent{a}, opts...)
}

// NewServer builds the controller for several agents (for one, use [New]). The first agent is the primary
// one (its card is also served at the A2A standard paths) unless
// [WithPrimaryAgent] names another. Configuration comes from the options, then
// from the environment, which NewServer reads once with [ReadEnv] (os.Getenv,
// or the function given to [WithEnv]): every variable of [Env]. An invalid
// configuration is an error that
// names the setting; nothing fails later as a confusing 401.
func NewServer(agents []*Agent, opts ...Option) (*Server, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	if err := cfg.resolve(); err != nil {
		return nil, err
	}
	if len(agents) == 0 {
		return nil, errors.New("supervaizer: NewServer needs at least one agent")
	}
	agents = slices.Clone(agents) // the caller's slice may change later
	lifetime, stop := context.WithCancel(context.Background())
	s := &Server{
		agents:    agents,
		bySlug:    make(map[string]*Agent, len(agents)),
		logger:    cfg.logger,
		cfg:       cfg,
		validator: validate.Default(),
		lifetime:  lifetime,
		stop:      stop,
		startedCh: make(chan struct{}),
	}
	for i, a := range agents {
		if a == nil {
			return nil, fmt.Errorf("supervaizer: NewServer: agents[%d] is nil", i)
		}
		if _, dup := s.bySlug[a.slug]; dup {
			return nil, fmt.Errorf("supervaizer: NewServer: two agents have the slug %q", a.slug)
		}
		s.bySlug[a.slug] = a
	}
	if err := checkUsageSKUs(cfg.usageSKUs, agents); err != nil {
		return nil, err
	}
	s.primary = agents[0]
	if cfg.primary != "" {
		p, ok := s.bySlug[cfg.primary]
		if !ok {
			return nil, fmt.Errorf("supervaizer: WithPrimaryAgent(%q): no such agent", cfg.primary)
		}
		s.primary = p
	}
	s.serverID = resolveIdentity(&s.cfg, s.logger)
	keys, err := resolveKeys(&s.cfg, s.logger)
	if err != nil {
		return nil, err
	}
	s.keys = keys
	// Studio account, controller key and URI; sets cfg.studioAttached (attach.go).
	if err := s.resolveStudio(); err != nil {
		return nil, err
	}
	if err := s.resolveAuthorization(); err != nil {
		return nil, err
	}
	if err := resolveStudioAgentIDs(&s.cfg, s.agents); err != nil { // startup.go
		return nil, err
	}
	streams := sse.NewLimiter(cfg.http.MaxEventStreams, cfg.http.MaxStreamsPerKey) // event and task streams, per key too (item 72)
	s.broker = sse.NewBroker(sse.Options{
		QueueSize:  cfg.sseQueue, // and the stream limits of WithHTTPSettings (serve.go):
		QueueBytes: cfg.http.EventQueueBytes, WriteTimeout: cfg.http.EventWriteTimeout, MaxStreams: cfg.http.MaxEventStreams, Limiter: streams,
		ReplaySize: cfg.sseReplay, ReplayBytes: cfg.sseReplayBytes,
		Heartbeat: cfg.sseHeartbeat, Logger: cfg.logger,
		Shared:  cfg.backend != nil,           // fed by the shared event log (backend.go)
		Observe: streamObserver(cfg.observer), // observer.go
	})
	// The store and the event stream (backend.go), every store call bounded
	// (backend.go), observed (observer.go).
	st := s.installHooks(withStoreDeadline(s.attachBackend(), cfg.storeTimeout))
	s.buildMethods(methodTable(), cfg.interceptorList())
	s.idem = newIdempotency(st, s.logger, idemConfig{lease: cfg.idemLease, retention: cfg.idemRetention, instance: cfg.instanceID,
		awaitOther: idemAwaitOther, keptLimit: cfg.keptLimit, spoolDir: spoolDir(&s.cfg, s.serverID, s.agents), storeTimeout: cfg.storeTimeout})
	s.idem.track = s.inflight.Add
	s.idem.life = lifetime
	s.tasks = taskview.New(st, s.logger, sse.Options{ // the A2A streams, with the limits of the event stream
		QueueSize: cfg.sseQueue, QueueBytes: cfg.http.EventQueueBytes, WriteTimeout: cfg.http.EventWriteTimeout,
		MaxStreams: cfg.http.MaxEventStreams, Limiter: streams, Heartbeat: cfg.sseHeartbeat, Logger: cfg.logger,
	})
	s.idem.alongside = taskViewWriter(s.tasks, s.bySlug) // the view's write goes with the done record (idempotency.go)
	s.history = a2abind.NewHistory(st, cfg.conversations)
	s.attachRuleCheckpoints(st) // rule-checkpoint runtime and resume handler (checkpoint.go)
	p, err := s.newPreview()    // the local preview (discovery.go)
	if err != nil {
		return nil, err
	}
	s.preview = p
	s.router = s.routes()
	for _, a := range agents {
		checkLanes(s.logger, a)
	}
	return s, nil
}

// resolveIdentity fixes the server id.
func resolveIdentity(c *config, logger *slog.Logger) string {
	id := strings.TrimSpace(c.serverID)
	if id == "" {
		id = strings.TrimSpace(c.env.ServerID)
	}
	if id == "" {
		id = uuid.NewString() // for this process only: the environment is never changed
		logger.Warn("SUPERVAIZER_SERVER_ID is not set: using a new server id; workspace grants bound to it will not survive a restart",
			slog.String("server_id", id))
	}
	return id
}

// resolveKeys fixes the transport API keys.
func resolveKeys(c *config, logger *slog.Logger) (apiKeys, error) {
	keys := c.apiKeys
	if len(keys) == 0 {
		if k := strings.TrimSpace(c.env.APIKey); k != "" {
			keys = []apiKey{{key: k, scope: ScopeWrite}}
		}
	}
	if len(keys) == 0 && c.localMode {
		keys = []apiKey{{key: LocalModeAPIKey, scope: ScopeWrite}}
	}
	if len(keys) == 0 {
		var raw [32]byte
		if _, err := rand.Read(raw[:]); err != nil {
			return apiKeys{}, fmt.Errorf("supervaizer: generate an API key: %w", err)
		}
		k := base64.RawURLEncoding.EncodeToString(raw[:])
		// For this process only: the environment is never changed.
		logger.Warn("SUPERVAIZER_API_KEY is not set: generated an API key for this process; set SUPERVAIZER_API_KEY to keep it across restarts",
			slog.String("api_key_fingerprint", redact.Fingerprint(k)))
		keys = []apiKey{{key: k, scope: ScopeWrite}}
	}
	for i, k := range keys {
		if strings.TrimSpace(k.key) == "" {
			return apiKeys{}, fmt.Errorf("supervaizer: API key %d is blank", i)
		}
		if k.scope != ScopeRead && k.scope != ScopeWrite && k.scope != ScopeA2A {
			return apiKeys{}, fmt.Errorf("supervaizer: API key %d (fingerprint %s) has an unknown scope %q", i, redact.Fingerprint(k.key), k.scope)
		}
	}
	ks := newAPIKeys(keys)
	if ks.primary.IsZero() {
		// No key could call /a2a, and Studio would be sent an empty key.
		return apiKeys{}, errors.New("supervaizer: no API key has the write scope: add one with WithAPIKey(key, ScopeWrite)")
	}
	return ks, nil
}

// ServerID returns the controller identity Studio binds grants to.
func (s *Server) ServerID() string { return s.serverID }

// APIKey returns the controller's write key, the effective key sent to Studio.
// Never log it; log [KeyFingerprint] instead.
func (s *Server) APIKey() string { return s.keys.primary.Value() }

// Agent returns the agent with the slug.
func (s *Server) Agent(slug string) (*Agent, bool) {
	a, ok := s.bySlug[slug]
	return a, ok
}

// agentDirectory answers the workspace-token verifier: which agents the
// server serves and their Studio agent ids.
type agentDirectory struct{ s *Server }

func (d agentDirectory) Serves(slug string) bool { _, ok := d.s.bySlug[slug]; return ok }

func (d agentDirectory) StudioAgentID(slug string) (string, bool) {
	a, ok := d.s.bySlug[slug]
	if !ok {
		return "", false
	}
	return a.StudioAgentID()
}

func (s *Server) agentFor(op string) *Agent {
	if len(s.agents) != 1 {
		panic(fmt.Sprintf("supervaizer: %s on a Server with %d agents: agent_slug is required (register on the *Agent)", op, len(s.agents)))
	}
	return s.agents[0]
}

// Start finishes the startup sequence before serving: it makes the
// registrations final and reports what they still lack (a scheduled start
// whose job.start has no handler, an action taken by [Agent.Idempotent] that
// no handler declared; see [AgentSpec].Registration); when attached to Studio
// it posts server.register, validates the handshake (installing Studio's
// audience and agent ids) and looks up the agents, returning
// the first failure (a configuration that can never authorize a call is
// refused first, with an error naming the variables to set) (calling Start again retries); then it logs, once, the
// mode, the API key to send (its fingerprint and source; the key itself only
// for the local-mode development key), how workspace tokens are checked, what
// is not configured with the variable that fixes it, and the declared actions
// and surfaces without a handler. [Server.ListenAndServe] and [Server.Serve]
// call it; call it yourself only when serving another way, after registering
// handlers and before serving.
func (s *Server) Start(ctx context.Context) error {
	if err := s.seal(); err != nil {
		return err
	}
	if err := s.checkCanAuthorize(); err != nil { // startup.go
		return err
	}
	if h := s.idem.holder; h != nil { // instance.go
		if err := h.claim(ctx); err != nil {
			return err
		}
	}
	if err := s.idem.replaySpool(ctx); err != nil { // idempotency_unrecorded.go
		return err
	}
	// Studio registration, handshake and agent lookup (attach.go).
	if err := s.startStudio(ctx); err != nil {
		return err
	}
	s.started.Store(true)
	s.startOnce.Do(func() {
		close(s.startedCh)
		s.logStartup(ctx) // startup.go
	})
	return nil
}

// ServeHTTP implements http.Handler. The first call makes the registrations
// final, like [Server.Start]; what they still lack (see [Server.Start]) is
// logged, never answered to a caller: each registration call has already
// refused what the registration cannot declare.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_ = s.seal() // logged by seal; Start returns it
	s.warnMissingHandlers()
	if refuseNonLocalHost(s.cfg.localMode, s.logger, w, r) { // serve.go
		return
	}
	// POST /a2a, the call path, skips the router: the same chain as its
	// route (security headers, write key, serveA2A) without chi's routing
	// context, which costs a copy of the request. A request already routed
	// by a parent chi router goes through ours, which honours its route path.
	if r.Method == http.MethodPost && r.URL.Path == "/a2a" && r.URL.RawPath == "" && r.Context().Value(chi.RouteCtxKey) == nil {
		s.a2aPost.ServeHTTP(w, r)
		return
	}
	s.router.ServeHTTP(w, r)
}

// seal makes the registration of every agent final, rebuilds the local
// preview from them and starts the server's background work (startFollowing,
// backend.go). It runs once, when the server starts or first serves, and
// cannot fail: it returns what the registrations lack ([Agent.incomplete]),
// which it also logs, for Start to report.
func (s *Server) seal() error {
	s.sealOnce.Do(func() {
		auto := false
		var errs []error
		for _, a := range s.agents {
			a.seal()
			errs = append(errs, a.incomplete())
			auto = auto || a.auto
		}
		if auto && s.preview != nil {
			// The registrations were validated when declared and the
			// preview's pages when NewServer built it: keep that one if
			// this fails all the same.
			if p, err := s.newPreview(); err != nil {
				s.logger.Error("the local preview keeps the registrations known at NewServer", slog.String("error", err.Error()))
			} else {
				s.preview = p
			}
		}
		if s.sealErr = errors.Join(errs...); s.sealErr != nil {
			s.logger.Error("the registration is incomplete", slog.String("error", s.sealErr.Error()))
		}
		s.startFollowing() // backend.go
	})
	return s.sealErr
}

// Shutdown cancels the server's background work (a registration refresh in
// progress), closes the SSE streams, then waits for in-flight /a2a calls and
// the background refresh to finish, or ctx to end. New /a2a calls and refresh
// requests are answered 503 once it has begun. Call it before
// http.Server.Shutdown, which would otherwise wait on open streams.
func (s *Server) Shutdown(ctx context.Context) error {
	s.closing.Store(true)
	s.stop()
	refreshed := s.stopStudio() // attach.go
	err := errors.Join(s.broker.Shutdown(ctx), s.tasks.Events.Shutdown(ctx))
	done := make(chan struct{})
	go func() {
		s.inflight.Wait()
		close(done)
	}()
	for _, ch := range []<-chan struct{}{refreshed, done} {
		select {
		case <-ch:
		case <-ctx.Done():
			s.idem.drain(ctx) // the kept results go to the spool file
			releaseInstance(ctx, s.idem.holder)
			return errors.Join(err, ctx.Err())
		}
	}
	s.idem.drain(ctx) // kept results: retried until ctx ends, then spooled (idempotency_unrecorded.go)
	releaseInstance(ctx, s.idem.holder)
	return errors.Join(err, s.stopFollowing(ctx)) // backend.go
}

// spoolDir is the folder of the spool file of kept results: the data folder
// (SUPERVAIZER_DATA_DIR), else the folder store.ControllerPath gives this
// controller (named by its agent's slug, or its server id when it carries
// several agents), as the research agent's database file. A server on an
// in-memory store has none: its records die with the process, so a spooled
// result would have nothing to complete at the next start.
func spoolDir(c *config, serverID string, agents []*Agent) string {
	if _, mem := c.store.(*store.Memory); c.backend == nil && (c.store == nil || mem) {
		return ""
	}
	name := serverID
	if len(agents) == 1 {
		name = agents[0].slug
	}
	path, _ := store.ControllerPath(c.dataDir, name)
	return filepath.Dir(path)
}

// releaseInstance gives up the instance id claim, once no call is left in
// flight (or ctx has ended), so that the next process with the id starts at
// once (instance.go).
func releaseInstance(ctx context.Context, h *instanceHolder) {
	if h != nil {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), instanceBeat)
		defer cancel()
		h.release(rctx)
	}
}

// callTracker counts the calls in progress. Unlike sync.WaitGroup, calls may
// keep starting while Wait waits: requests still arrive during Shutdown (they
// are then refused), and a WaitGroup forbids an Add from zero concurrent with
// Wait. The zero value is ready to use.
type callTracker struct {
	mu   sync.Mutex
	n    int
	cond *sync.Cond // signalled when n drops to zero
}

// Add adds delta to the count of calls in progress.
func (t *callTracker) Add(delta int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.n += delta
	if t.n < 0 {
		panic("supervaizer: negative count of calls in progress")
	}
	if t.n == 0 && t.cond != nil {
		t.cond.Broadcast()
	}
}

// Done ends one call.
func (t *callTracker) Done() { t.Add(-1) }

// Wait blocks until no call is in progress.
func (t *callTracker) Wait() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cond == nil {
		t.cond = sync.NewCond(&t.mu)
	}
	for t.n > 0 {
		t.cond.Wait()
	}
}

func (s *Server) routes() http.Handler {
	r := chi.NewRouter()
	var mws chi.Middlewares // the router's middleware; POST /a2a runs the same list (ServeHTTP)
	if s.cfg.securityHeaders {
		mws = append(mws, securityHeaders)
	}
	r.Use(mws...)
	r.NotFound(func(w http.ResponseWriter, _ *http.Request) { writeDetail(w, http.StatusNotFound, "Not Found") })
	r.MethodNotAllowed(func(w http.ResponseWriter, _ *http.Request) {
		writeDetail(w, http.StatusMethodNotAllowed, "Method Not Allowed")
	})
	cd := &cards{publicURL: s.cfg.publicURL, agents: s.agents, bySlug: s.bySlug, primary: s.primary, logger: s.logger}
	r.Get(a2a.AgentsListPath, cd.serveAgentsList)
	r.Get(a2a.HealthPath, healthHandler(s.agents, s.tasks))
	r.Get(a2a.WellKnownCardPath, cd.servePrimaryCard)
	r.Get(a2a.WellKnownCardPathV02, cd.servePrimaryCard)
	r.Get("/.well-known/agents/*", cd.serveAgentCard)
	a2aPost := http.Handler(http.HandlerFunc(s.serveA2A)) // its transport key checked by readCall (dispatch.go)
	r.Post("/a2a", a2aPost.ServeHTTP)
	s.a2aPost = mws.Handler(a2aPost)
	r.With(requireKey(&s.keys, s.logger, ScopeRead)).Get("/a2a/events", s.serveEvents)
	r.Get(ReadinessPath, s.serveReadiness)
	if s.cfg.localMode || s.cfg.studioAttached {
		r.With(requireKey(&s.keys, s.logger, ScopeRead)).Get("/api/supervaizer/contract", serveContract)
		s.mountDataResources(r) // DataResource REST routes (package resource)
	}
	// Studio registration refresh: 503 when not attached (attach.go).
	r.With(requireKey(&s.keys, s.logger, ScopeWrite)).Post(studio.RegistrationRefreshPath, s.serveRegistrationRefresh)
	s.mountPreview(r) // the local preview (discovery.go)
	return r
}

// Header values set on every response (see securityHeaders).
var (
	headerNosniff    = []string{"nosniff"}[:1:1]
	headerSameOrigin = []string{"SAMEORIGIN"}[:1:1]
	headerNoReferrer = []string{"no-referrer"}[:1:1]
	headerHSTS       = []string{"max-age=63072000; includeSubDomains"}[:1:1]
	headerJSON       = []string{"application/json"}[:1:1]
)

func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Shared values, set without allocating: a header value slice is
		// never changed in place (Add appends to a copy: its capacity is 1).
		h := w.Header()
		h["X-Content-Type-Options"] = headerNosniff
		h["X-Frame-Options"] = headerSameOrigin
		h["Referrer-Policy"] = headerNoReferrer
		h["Strict-Transport-Security"] = headerHSTS
		next.ServeHTTP(w, r)
	})
}

func writeDetail(w http.ResponseWriter, status int, detail string) {
	writeJSON(w, status, map[string]any{"detail": detail})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, `{"detail":"Internal Server Error"}`, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
