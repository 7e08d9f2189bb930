package supervaizer

import (
	"crypto/rsa"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/supervaize/supervaizer-go/conversation"
	"github.com/supervaize/supervaizer-go/internal/wsauth"
	"github.com/supervaize/supervaizer-go/observe"
	"github.com/supervaize/supervaizer-go/store"
	"github.com/supervaize/supervaizer-go/studio"
)

// Option configures a [Server]. Each option's documentation states its default.
type Option func(*config)

type config struct {
	logger         *slog.Logger
	maxBody        int64
	sseHeartbeat   time.Duration
	sseQueue       int
	sseReplay      int
	sseReplayBytes int
	idemRetention  time.Duration // 0: SUPERVAIZER_IDEMPOTENCY_RETENTION, else the default
	idemLease      time.Duration
	instanceID     string
	keptLimit      int           // WithKeptResultLimit (0: the default)
	storeTimeout   time.Duration // WithStoreTimeout (0: the default)
	dataDir        string        // SUPERVAIZER_DATA_DIR ("": the controller's folder, spoolDir)
	// Rule checkpoints shared by instances: poll interval and claim lease
	// (0: the defaults of WithCheckpointSharing).
	checkpointPoll, checkpointLease time.Duration
	publicURL                       string
	apiKeys                         []apiKey
	securityHeaders                 bool
	serverID                        string
	localMode                       bool
	localModeSet                    bool
	wsAuth                          *WorkspaceAuthSettings
	verifier                        WorkspaceVerifier
	primary                         string
	getenv                          func(string) string // WithEnv; read only by ReadEnv
	env                             Env                 // ReadEnv(getenv), once, by resolve
	studioAttached                  bool
	store                           store.Store
	backend                         store.Backend
	jwksRefetch                     *time.Duration
	jwksMaxAge                      *time.Duration
	addr                            string       // WithAddr (serve.go)
	http                            HTTPSettings // WithHTTPSettings (serve.go)
	errs                            []error
	preview                         *bool                    // WithPreview (discovery.go)
	observer                        observe.Observer         // WithObserver (observer.go)
	conversations                   conversation.Limits      // WithConversationLimits (actions.go)
	usageSKUs                       conversation.BillingSKUs // WithUsageBilling (actions.go)
	interceptors                    []Interceptor            // WithInterceptors (observer.go)

	// Studio attachment (attach.go).
	studio        *studio.Client
	controllerKey *rsa.PrivateKey
}

func defaultConfig() config {
	return config{
		maxBody:         defaultMaxBodyBytes,
		sseHeartbeat:    defaultSSEHeartbeat,
		sseQueue:        defaultSSEQueueSize,
		sseReplay:       defaultSSEReplay,
		sseReplayBytes:  defaultSSEReplayMiB << 20,
		securityHeaders: true,
		getenv:          os.Getenv,
	}
}

// WithLogger sets the logger. Default: [slog.Default] at the time [NewServer]
// runs. The SDK never logs tokens, keys or payloads; keys appear as
// fingerprints (except the local-mode development key, see [Server.Start]).
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// WithMaxBodyBytes limits the POST /a2a body; a larger body is answered 413
// before it is read in full. Default: 4 MiB.
func WithMaxBodyBytes(n int64) Option {
	return func(c *config) {
		c.check(n > 0, "the limit must be positive", "WithMaxBodyBytes(%d)", n)
		c.maxBody = n
	}
}

// WithSSEHeartbeat sets how long the event stream may stay silent before a
// heartbeat event. Default: 15 s.
func WithSSEHeartbeat(d time.Duration) Option {
	return func(c *config) {
		c.check(d > 0, "the interval must be positive", "WithSSEHeartbeat(%s)", d)
		c.sseHeartbeat = d
	}
}

// WithSSEQueueSize sets how many events wait for one slow SSE subscriber before
// the oldest is dropped. Default: 100.
func WithSSEQueueSize(n int) Option {
	return func(c *config) {
		c.check(n > 0, "the size must be positive", "WithSSEQueueSize(%d)", n)
		c.sseQueue = n
	}
}

// WithSSEReplay bounds the events kept for Last-Event-ID replay: at most
// events events and bytes bytes of event memory, the oldest evicted first. An
// event larger than bytes on its own reaches the open streams but is not kept.
// Defaults: 1,024 events and 16 MiB.
// Event ids increase across restarts (a boot epoch in their high bits), so a
// client resuming with an id from before a restart receives everything kept
// since.
func WithSSEReplay(events, bytes int) Option {
	return func(c *config) {
		c.check(events > 0 && bytes > 0, "both bounds must be positive", "WithSSEReplay(%d, %d)", events, bytes)
		c.sseReplay, c.sseReplayBytes = events, bytes
	}
}

// envIdempotencyRetention is the environment variable read for the
// idempotency retention when [WithIdempotencyRetention] is not given: a Go
// duration ("168h", "90m") or a number of days ("7d").
const envIdempotencyRetention = "SUPERVAIZER_IDEMPOTENCY_RETENTION"

// WithIdempotencyRetention sets how long idempotency records are kept: a
// sweep (at most hourly, in the background) removes those created longer ago.
// A retry with the same key after that runs the handler as a first attempt, so
// keep it longer than Studio may retry. A record whose attempt is in progress
// is never removed. Default: SUPERVAIZER_IDEMPOTENCY_RETENTION, else
// 7 days.
func WithIdempotencyRetention(d time.Duration) Option {
	return func(c *config) {
		c.check(d > 0, "the retention must be positive", "WithIdempotencyRetention(%s)", d)
		c.idemRetention = d
	}
}

// WithIdempotencyLease sets how long a record whose attempt is in progress
// blocks the retries that reach another instance (they answer
// idempotency_in_progress) before one of them may take the record over,
// presuming the attempt dead. The instance that owns the record takes it over
// at once after a restart (see [WithInstanceID]). Default:
// 10 min.
func WithIdempotencyLease(d time.Duration) Option {
	return func(c *config) {
		c.check(d > 0, "the lease must be positive", "WithIdempotencyLease(%s)", d)
		c.idemLease = d
	}
}

// WithKeptResultLimit bounds the results this process keeps in memory because
// the store failed to record them after their handler ran (see
// docs/deploying.md): while n are kept, a new idempotent call is refused
// before its handler with -32603 and data.retry true. Default: 1,000.
func WithKeptResultLimit(n int) Option {
	return func(c *config) {
		c.check(n > 0, "the limit must be positive", "WithKeptResultLimit(%d)", n)
		c.keptLimit = n
	}
}

// WithStoreTimeout bounds each store call the server makes while it serves a
// request (a record read or written): a store that does not answer within d
// fails the call, and a result whose write fails so is kept and retried
// instead of holding the call. Default: 5 s. The stores that run in the
// process ([store.Memory], [store.Bolt]) wait on no network and take no
// deadline.
func WithStoreTimeout(d time.Duration) Option {
	return func(c *config) {
		c.check(d > 0, "the timeout must be positive", "WithStoreTimeout(%s)", d)
		c.storeTimeout = d
	}
}

// WithCheckpointSharing sets how rule checkpoints behave when several
// controller instances share the store (see [WithBackend]). poll is how often
// a guarded step paused on a checkpoint re-reads its record, so that a
// decision persisted by another instance (Studio may send
// rule.checkpoint.resume to any of them) wakes it; lease is how long the
// claim of an instance that died keeps its occurrences from the others (a
// live instance renews its claims every third of the lease; the same
// instance restarted, see [WithInstanceID], takes them over at once).
// Defaults: poll 2 s when the store may be shared (it is not
// [store.Exclusive]), none otherwise (only this process writes decisions, and
// it wakes its steps itself); lease 30 s.
func WithCheckpointSharing(poll, lease time.Duration) Option {
	return func(c *config) {
		c.check(poll > 0 && lease > 0, "both durations must be positive", "WithCheckpointSharing(%s, %s)", poll, lease)
		c.checkpointPoll, c.checkpointLease = poll, lease
	}
}

// envInstanceID is the variable that names this instance when
// [WithInstanceID] is not given.
const envInstanceID = "SUPERVAIZER_INSTANCE_ID"

// WithInstanceID names this instance of the controller, stable across its
// restarts and distinct from every other instance sharing the store. A record
// left in progress by a crash is then taken over at once by the restarted
// instance instead of waiting for the lease. Default: SUPERVAIZER_INSTANCE_ID;
// without either, automatic for a store only one process can use
// ([store.Open], the in-memory store: any earlier process on it is gone) and
// none for a shared store (records of a crashed instance wait for the lease).
//
// On a shared store, [Server.Start] claims the id in the store and renews the
// claim every 2 s while the server runs: a second live process given the same
// id refuses to start with [ErrInstanceInUse], naming the variable. A process
// restarted after a crash finds its earlier boot's claim unchanged and takes it
// over once it has gone 10 s without renewal (at once after a clean shutdown).
// A holder that has not renewed for 5 s refuses action calls (-32603 with
// data.retry true) and fails readiness until it renews. Records are taken over
// at once only while the claim is held and renewed, and those of a boot
// displaced while perhaps alive (not known dead on this host) only after their
// lease: see docs/deploying.md.
func WithInstanceID(id string) Option {
	return func(c *config) { c.instanceID = strings.TrimSpace(id) }
}

// check records, when ok is false, the error of an option given an invalid
// value: call is the option's call with %-verbs for args, rule what it
// requires. NewServer reports every such error.
func (c *config) check(ok bool, rule, call string, args ...any) {
	if !ok {
		c.errs = append(c.errs, fmt.Errorf("supervaizer: "+call+": "+rule, args...))
	}
}

// parseRetention parses a Go duration or a whole number of days ("7d").
func parseRetention(v string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(v, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n <= 0 || n > 100*365 {
			return 0, errors.New("want a positive duration such as 168h or 7d")
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, errors.New("want a positive duration such as 168h or 7d")
	}
	return d, nil
}

// WithPublicURL sets the controller's public URL, used in Agent Cards and
// discovery documents. Default: SUPERVAIZER_PUBLIC_URL, else the scheme and
// Host of each discovery request.
func WithPublicURL(u string) Option { return func(c *config) { c.publicURL = u } }

// WithAPIKey adds a transport API key (X-API-Key) with its scope; repeat it for
// several keys. Default: SUPERVAIZER_API_KEY with the write scope; in local mode
// [LocalModeAPIKey]; otherwise a key generated for this process only, whose
// fingerprint is logged with a warning naming SUPERVAIZER_API_KEY, the
// variable that keeps a key across restarts. The SDK never changes the
// process environment (spec item 63).
func WithAPIKey(key string, scope KeyScope) Option {
	return func(c *config) { c.apiKeys = append(c.apiKeys, apiKey{key: key, scope: scope}) }
}

// WithSecurityHeaders turns the baseline security headers (nosniff, frame
// options, referrer policy, HSTS) on or off. Default: on.
func WithSecurityHeaders(on bool) Option { return func(c *config) { c.securityHeaders = on } }

// WithServerID sets the controller identity Studio binds grants to. Default:
// SUPERVAIZER_SERVER_ID, else a new UUID per process (with a warning: grants
// would not survive a restart).
func WithServerID(id string) Option { return func(c *config) { c.serverID = id } }

// WithLocalMode turns development mode on or off. Default: SUPERVAIZER_LOCAL_MODE.
// In local mode, with no Studio account and no workspace-authorization setting
// at all, workspace authorization is bypassed.
func WithLocalMode(on bool) Option {
	return func(c *config) { c.localMode, c.localModeSet = on, true }
}

// WithWorkspaceAuth sets the workspace-authorization settings explicitly; they
// replace the SUPERVAIZER_WORKSPACE_AUTH_* environment variables entirely.
func WithWorkspaceAuth(s WorkspaceAuthSettings) Option {
	return func(c *config) { c.wsAuth = &s }
}

// WithJWKSRefetchInterval sets how often, at most, an unknown key id makes the
// built-in verifier fetch the JWKS again (key rotation is picked up on the next
// fetch). Default: 10 s, so a flood of forged key ids cannot make every request
// trigger a fetch. Zero or less removes the limit (tests only).
func WithJWKSRefetchInterval(d time.Duration) Option { return func(c *config) { c.jwksRefetch = &d } }

// WithJWKSKeyMaxAge sets how long the built-in verifier trusts the keys of a
// successful JWKS fetch without another successful fetch. Every fetch replaces
// the trusted keys (a key Studio removed stops verifying); past the maximum
// age the next call that needs a key refetches, and a failed fetch keeps the
// previous keys only until their maximum age. Default: 10 min; never shorter
// than the refetch interval.
func WithJWKSKeyMaxAge(d time.Duration) Option { return func(c *config) { c.jwksMaxAge = &d } }

// WithWorkspaceVerifier replaces the built-in Ed25519 token verifier, for
// example with a test double. The dispatcher still calls it before any handler
// lookup, for every action and surface except the three bootstrap ids.
func WithWorkspaceVerifier(v WorkspaceVerifier) Option { return func(c *config) { c.verifier = v } }

// WithPrimaryAgent names the agent whose card is served at
// /.well-known/agent-card.json and /.well-known/agent.json. Default: the first agent.
func WithPrimaryAgent(slug string) Option { return func(c *config) { c.primary = slug } }

// WithStore sets where state that must survive a restart is kept: idempotency
// records and rule-checkpoint progress. Use [store.Open] for the embedded
// durable store, or any implementation of [store.Store] (for example one backed
// by your database for several instances). The caller closes it. Default: an
// in-memory store, with a warning at startup that the records do not survive a
// restart.
func WithStore(s store.Store) Option { return func(c *config) { c.store = s } }

// WithEnv replaces os.Getenv as the function [ReadEnv] reads the environment
// through when NewServer calls it (nil: an empty environment). Default:
// os.Getenv. Tests use it to isolate servers from the process
// environment. The server never changes the environment: a value it generates
// (API key, server id, controller key) lives for the process only, and
// startup logs it (a fingerprint for a secret) with the variable that makes
// it stable.
func WithEnv(getenv func(string) string) Option {
	return func(c *config) { c.getenv = getenv }
}

// --- Studio options (attach.go) ---

// WithStudio attaches the controller to Supervaize Studio with the client:
// Server.Start then posts server.register, validates the handshake and looks
// up the agents, and workspace authorization must be enabled.
// Default: a client built from SUPERVAIZE_API_URL, SUPERVAIZE_API_KEY and
// SUPERVAIZE_WORKSPACE_ID when any of them is set (all three are then
// required); not attached otherwise. Ignored in local mode.
func WithStudio(c *studio.Client) Option { return func(cfg *config) { cfg.studio = c } }

// WithControllerKey sets the controller's RSA key pair (at least 2048 bits);
// Studio encrypts agent parameters for its public key. Default:
// SUPERVAIZER_PRIVATE_KEY (PEM, PKCS#8 or PKCS#1), else a new 2048-bit key
// for the process only (never written to the environment). Only used when
// attached to Studio.
func WithControllerKey(k *rsa.PrivateKey) Option {
	return func(c *config) {
		if k == nil {
			c.errs = append(c.errs, errors.New("supervaizer: WithControllerKey(nil)"))
		}
		c.controllerKey = k
	}
}

// --- end of Studio options ---

func (c *config) resolve() error {
	if err := errors.Join(c.errs...); err != nil {
		return err
	}
	if c.getenv == nil {
		c.getenv = func(string) string { return "" }
	}
	c.env = ReadEnv(c.getenv)
	if c.logger == nil {
		c.logger = slog.Default()
	}
	if c.backend != nil && c.store != nil {
		return errors.New("supervaizer: WithStore and WithBackend both set a store: use one")
	}
	if !c.localModeSet {
		c.localMode = envBool(c.env.LocalMode)
	}
	if c.publicURL == "" {
		c.publicURL = strings.TrimSpace(c.env.PublicURL)
	}
	if c.instanceID == "" {
		c.instanceID = strings.TrimSpace(c.env.InstanceID)
	}
	c.dataDir = strings.TrimSpace(c.env.DataDir)
	if c.idemRetention == 0 {
		if v := strings.TrimSpace(c.env.IdempotencyRetention); v != "" {
			d, err := parseRetention(v)
			if err != nil {
				return fmt.Errorf("supervaizer: %s=%q: %w", envIdempotencyRetention, v, err)
			}
			c.idemRetention = d
		}
	}
	if c.publicURL != "" {
		u, err := url.Parse(c.publicURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
			return fmt.Errorf("supervaizer: the public URL (WithPublicURL or SUPERVAIZER_PUBLIC_URL) must be an absolute http(s) URL without credentials, query or fragment")
		}
		c.publicURL = strings.TrimRight(c.publicURL, "/")
	}
	return nil
}

// envBool reads a boolean environment value: 1, true, yes or on (any case,
// trimmed) is true.
func envBool(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "true", "yes", "on":
		return true
	}
	return false
}

// Env is the configuration the environment gives the SDK: the value of each
// variable it reads, as read ("" when unset). [ReadEnv] reads it; the SDK
// reads no variable anywhere else. docs/deploying.md lists every variable
// with its default and meaning.
type Env struct {
	Addr                 string // SUPERVAIZER_ADDR: the address ListenAndServe listens on (WithAddr)
	APIKey               string // SUPERVAIZER_API_KEY: the controller API key (WithAPIKey)
	ServerID             string // SUPERVAIZER_SERVER_ID: the controller identity (WithServerID)
	PublicURL            string // SUPERVAIZER_PUBLIC_URL: the public URL (WithPublicURL)
	LocalMode            string // SUPERVAIZER_LOCAL_MODE: development mode without Studio (WithLocalMode)
	InstanceID           string // SUPERVAIZER_INSTANCE_ID: this instance's stable name (WithInstanceID)
	IdempotencyRetention string // SUPERVAIZER_IDEMPOTENCY_RETENTION: how long idempotency records are kept
	StudioAgentID        string // SUPERVAIZER_STUDIO_AGENT_ID: the Studio agent id of a standalone controller's agent
	DataDir              string // SUPERVAIZER_DATA_DIR: the folder of the embedded store file (store.DefaultPath) and of the spool of kept results

	// Workspace-token verification (WithWorkspaceVerifier replaces it).
	WorkspaceAuthRequired string // SUPERVAIZER_WORKSPACE_AUTH_REQUIRED
	WorkspaceAuthIssuer   string // SUPERVAIZER_WORKSPACE_AUTH_ISSUER
	WorkspaceAuthAudience string // SUPERVAIZER_WORKSPACE_AUTH_AUDIENCE
	WorkspaceAuthKey      string // SUPERVAIZER_WORKSPACE_AUTH_PUBLIC_KEY
	WorkspaceAuthJWKSURL  string // SUPERVAIZER_WORKSPACE_AUTH_JWKS_URL
	WorkspaceAuthLeeway   string // SUPERVAIZER_WORKSPACE_AUTH_LEEWAY_SECONDS

	// The Studio attachment (WithStudio replaces the first four).
	StudioAPIURL      string // SUPERVAIZE_API_URL
	StudioAPIKey      string // SUPERVAIZE_API_KEY
	StudioWorkspaceID string // SUPERVAIZE_WORKSPACE_ID
	StudioMaxRetries  string // SUPERVAIZE_HTTP_MAX_RETRIES
	PrivateKey        string // SUPERVAIZER_PRIVATE_KEY: the controller RSA key (WithControllerKey)
	Environment       string // SUPERVAIZER_ENVIRONMENT: dev, staging, prod, … sent to Studio
}

// ReadEnv reads every variable the SDK knows through getenv (os.Getenv when
// nil) and returns their values. It is the one place the SDK reads its
// environment: [NewServer] calls it once, with os.Getenv or the function given
// to [WithEnv], and the options given to NewServer win over what it returns.
// A program calls it to see the configuration a deployment gives, for
// example the folder of the embedded store:
//
//	st, err := store.Open(store.DefaultPath(supervaizer.ReadEnv(nil).DataDir))
func ReadEnv(getenv func(string) string) Env {
	if getenv == nil {
		getenv = os.Getenv
	}
	return Env{
		Addr:                 getenv(envAddr),
		APIKey:               getenv(envAPIKey),
		ServerID:             getenv(envServerID),
		PublicURL:            getenv(envPublicURL),
		LocalMode:            getenv(envLocalMode),
		InstanceID:           getenv(envInstanceID),
		IdempotencyRetention: getenv(envIdempotencyRetention),
		StudioAgentID:        getenv(envStudioAgentID),
		DataDir:              getenv(store.EnvDataDir),

		WorkspaceAuthRequired: getenv(wsauth.EnvRequired),
		WorkspaceAuthIssuer:   getenv(wsauth.EnvIssuer),
		WorkspaceAuthAudience: getenv(wsauth.EnvAudience),
		WorkspaceAuthKey:      getenv(wsauth.EnvPublicKey),
		WorkspaceAuthJWKSURL:  getenv(wsauth.EnvJWKSURL),
		WorkspaceAuthLeeway:   getenv(wsauth.EnvLeewaySeconds),

		StudioAPIURL:      getenv(studio.EnvAPIURL),
		StudioAPIKey:      getenv(studio.EnvAPIKey),
		StudioWorkspaceID: getenv(studio.EnvWorkspaceID),
		StudioMaxRetries:  getenv(studio.EnvMaxRetries),
		PrivateKey:        getenv(studio.EnvPrivateKey),
		Environment:       getenv(studio.EnvEnvironment),
	}
}

// Names of the variables of the root package (the others are named by the
// packages that use them).
const (
	envAPIKey    = "SUPERVAIZER_API_KEY"
	envServerID  = "SUPERVAIZER_SERVER_ID"
	envPublicURL = "SUPERVAIZER_PUBLIC_URL"
	envLocalMode = "SUPERVAIZER_LOCAL_MODE"
)

// workspaceAuthSettings parses the workspace-token settings of e.
func (e Env) workspaceAuthSettings() (wsauth.Settings, error) {
	return wsauth.ParseSettings(wsauth.Values{
		Required: e.WorkspaceAuthRequired, Issuer: e.WorkspaceAuthIssuer, Audience: e.WorkspaceAuthAudience,
		PublicKey: e.WorkspaceAuthKey, JWKSURL: e.WorkspaceAuthJWKSURL, LeewaySeconds: e.WorkspaceAuthLeeway,
	})
}
