package supervaizer

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/supervaize/supervaizer-go/internal/redact"
	"github.com/supervaize/supervaizer-go/studio"
)

// This file attaches a Server to Supervaize Studio through a [studio.Client]:
// the attachment resolved by NewServer, the registration and handshake run by
// Start, the agent lookup and the registration refresh route.

// refreshTimeout bounds one background re-registration.
const refreshTimeout = 5 * time.Minute

// maxRefreshBody bounds the optional body of a refresh request.
const maxRefreshBody = 64 << 10

// maxLoggedReason bounds the refresh reason written to the log, in runes.
const maxLoggedReason = 200

// studioLink is the Studio attachment of a Server.
type studioLink struct {
	client      *studio.Client
	key         *rsa.PrivateKey
	publicPEM   string
	uri         string // server:<MAC>
	environment string

	syncMu  sync.Mutex // serializes Start and refreshes
	started bool
	refresh refresher
}

// Studio returns the Studio client the controller is attached to, or nil
// when it is not attached (no account configured, or local mode). A nil
// *studio.Client is usable: it drops events (see [studio.Client.SendEvent]).
func (s *Server) Studio() *studio.Client {
	if s.studio == nil {
		return nil
	}
	return s.studio.client
}

// resolveStudio resolves the Studio attachment: the
// account (option, else the environment), the public URL, the controller RSA
// key pair and the server URI. It runs before the workspace-authorization
// settings are resolved, which must then be enabled (step 3).
func (s *Server) resolveStudio() error {
	acct := s.cfg.studio
	if s.cfg.localMode {
		if acct != nil || strings.TrimSpace(s.cfg.env.StudioAPIURL) != "" {
			s.logger.Info("local mode: the Studio account is ignored; the controller does not register with Studio")
		}
		return nil
	}
	if acct == nil {
		e := s.cfg.env
		envCfg := studio.Config{APIURL: strings.TrimSpace(e.StudioAPIURL), APIKey: strings.TrimSpace(e.StudioAPIKey),
			WorkspaceID: strings.TrimSpace(e.StudioWorkspaceID)}
		if strings.TrimSpace(e.StudioMaxRetries) != "" {
			n, err := studio.ParseMaxRetries(e.StudioMaxRetries)
			if err != nil {
				return err
			}
			envCfg.MaxRetries = n
		}
		if envCfg.APIURL == "" && envCfg.APIKey == "" && envCfg.WorkspaceID == "" {
			return nil
		}
		envCfg.Logger = s.logger
		if o := s.cfg.observer; o != nil { // outgoing calls carry the trace context (observer.go)
			envCfg.HTTPClient = &http.Client{Transport: o.Transport(http.DefaultTransport)}
		}
		var err error
		if acct, err = studio.NewClient(envCfg); err != nil {
			return err
		}
	}
	if s.cfg.publicURL == "" {
		return errors.New("supervaizer: a controller attached to Studio needs its public URL: set SUPERVAIZER_PUBLIC_URL or use WithPublicURL")
	}
	key, err := s.resolveControllerKey()
	if err != nil {
		return err
	}
	der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return fmt.Errorf("supervaizer: encode the controller public key: %w", err)
	}
	env := strings.TrimSpace(s.cfg.env.Environment)
	if env == "" {
		env = studio.DefaultEnvironment
	}
	s.studio = &studioLink{
		client:      acct,
		key:         key,
		publicPEM:   string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})),
		uri:         studio.ServerURI(s.serverID),
		environment: env,
	}
	s.cfg.studioAttached = true
	return nil
}

// resolveControllerKey returns the controller RSA key: the option, else
// SUPERVAIZER_PRIVATE_KEY, else a new key for this process (the environment
// is never changed; the fingerprint of its public half is logged).
func (s *Server) resolveControllerKey() (*rsa.PrivateKey, error) {
	if k := s.cfg.controllerKey; k != nil {
		if err := studio.CheckControllerKey(k); err != nil {
			return nil, fmt.Errorf("supervaizer: WithControllerKey: %w", err)
		}
		return k, nil
	}
	if raw := s.cfg.env.PrivateKey; strings.TrimSpace(raw) != "" {
		k, err := studio.ParseControllerKey(raw)
		if err != nil {
			return nil, fmt.Errorf("supervaizer: %s: %w", studio.EnvPrivateKey, err)
		}
		return k, nil
	}
	k, err := rsa.GenerateKey(rand.Reader, studio.ControllerKeyBits)
	if err != nil {
		return nil, fmt.Errorf("supervaizer: generate the controller RSA key: %w", err)
	}
	der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	if err != nil {
		return nil, fmt.Errorf("supervaizer: encode the controller public key: %w", err)
	}
	// The key lives for this process only: the environment is never changed.
	s.logger.Warn("SUPERVAIZER_PRIVATE_KEY is not set: generated a controller RSA key pair for this process; Studio-encrypted parameters will not survive a restart unless SUPERVAIZER_PRIVATE_KEY is set",
		slog.String("controller_public_key_fingerprint", redact.Fingerprint(string(der))))
	return k, nil
}

// parseControllerKey reads an RSA private key in PEM (PKCS#8 or PKCS#1). A
// value whose line breaks were written as the two characters \n is accepted.
func nullable(s string) *string {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	return &s
}

// agentRegistration builds the payload of a (l nil: not attached): unset optional
// strings and tags are null, server_agent_id is null until the agent is linked,
// parameters_setup is [] (item 49), and the
// introduction, full description and billing catalog are omitted when unset
// (the catalog also when empty, item 10).
func (l *studioLink) agentRegistration(a *Agent) studio.AgentRegistration {
	sp := a.spec
	p := studio.AgentRegistration{
		Name: sp.Name, ID: a.legacyID,
		Author: nullable(sp.Author), Developer: nullable(sp.Developer),
		Maintainer: nullable(sp.Maintainer), Editor: nullable(sp.Editor),
		Version: sp.Version, ReleaseNotesURL: nullable(sp.ReleaseNotesURL), Description: sp.Description,
		APIPath: "/agents/" + a.slug, Slug: a.slug,
		Methods: map[string]any{}, ParametersSetup: []any{}, DataResources: []any{},
		MaxExecutionTime: studio.DefaultMaxExecutionTime, InstructionsPath: studio.DefaultInstructionsPath,
		SupervaizerV2:   a.RegistrationJSON(),
		Introduction:    sp.Introduction,
		FullDescription: sp.FullDescription,
		BillingCatalog:  sp.BillingCatalog, // omitempty: an empty catalog is omitted
	}
	if len(sp.Tags) > 0 {
		p.Tags = slices.Clone(sp.Tags)
	}
	if id, ok := a.StudioAgentID(); ok {
		p.ServerAgentID = &id
	}
	if l != nil {
		if sa, ok := l.client.Agent(a.slug); ok {
			p.ServerAgentStatus, p.ServerAgentOnboardingStatus = nullable(sa.Status), nullable(sa.OnboardingStatus)
		}
	}
	return p
}

// registerDetails builds the server.register details.
func (s *Server) registerDetails() studio.RegisterDetails {
	public := s.cfg.publicURL
	contract := controllerContract()
	d := studio.RegisterDetails{
		ServerID: s.serverID, URL: public, URI: s.studio.uri,
		APIVersion: "v1", ControllerVersion: Version,
		ControllerContractVersion: contract["controller_contract_version"],
		APIBasePath:               contract["api_base_path"],
		Endpoints:                 contract["endpoints"],
		Environment:               s.studio.environment,
		PublicKey:                 s.studio.publicPEM,
		APIKey:                    s.APIKey(),
		Docs:                      map[string]string{"swagger": public + "/docs", "redoc": public + "/redoc", "openapi": public + "/openapi.json"},
		Agents:                    make([]studio.AgentRegistration, 0, len(s.agents)),
	}
	for _, a := range s.agents {
		d.Agents = append(d.Agents, s.studio.agentRegistration(a))
	}
	return d
}

// startStudio runs steps 4–6 of the protocol (server.register, handshake,
// agent lookup) once. After a failure, a later call tries again.
func (s *Server) startStudio(ctx context.Context) error {
	l := s.studio
	if l == nil {
		return nil
	}
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	if l.started {
		return nil
	}
	if err := s.syncStudio(ctx); err != nil {
		return err
	}
	l.started = true
	return nil
}

// syncStudio posts server.register, validates and applies the handshake, then
// looks up every agent. Callers hold syncMu.
func (s *Server) syncStudio(ctx context.Context) error {
	l := s.studio
	local := make([]studio.LocalAgent, len(s.agents))
	for i, a := range s.agents {
		id, _ := a.StudioAgentID()
		local[i] = studio.LocalAgent{Slug: a.slug, StudioID: id}
	}
	hs, err := l.client.Register(ctx, l.uri, s.registerDetails(), s.cfg.configuredAudience(), local)
	if err != nil {
		var km *studio.KeyMismatchError
		if errors.As(err, &km) {
			s.logger.LogAttrs(ctx, slog.LevelError, "Studio did not store the controller API key",
				slog.String("server_id", km.ServerID), slog.String("local_server_id", s.serverID),
				slog.String("api_key_fingerprint", km.LocalFingerprint),
				slog.String("stored_controller_api_key_fingerprint", km.StoredFingerprint),
				slog.String("reason", km.Reason))
		}
		return err
	}
	// The audience Studio announced determines the expected audience and
	// server id of the workspace tokens the built-in verifier accepts.
	if s.tokens != nil {
		s.tokens.SetAudience(hs.Audience)
	}
	for _, b := range hs.Links {
		if err := s.bySlug[b.Slug].linkStudioAgent(b.ID); err != nil {
			return fmt.Errorf("%w: %w", studio.ErrHandshake, err)
		}
	}
	s.logger.LogAttrs(ctx, slog.LevelInfo, "registered with Studio", slog.String("server_id", hs.ServerID),
		slog.String("audience", hs.Audience), slog.String("api_key_fingerprint", redact.Fingerprint(s.APIKey())))
	for _, a := range s.agents {
		if err := s.studio.lookupAgent(ctx, s.logger, s.APIKey(), a); err != nil {
			return err
		}
	}
	return nil
}

// configuredAudience is the locally configured workspace audience, "" when unset.
func (c *config) configuredAudience() string {
	if c.wsAuth != nil {
		return c.wsAuth.Audience
	}
	st, err := c.env.workspaceAuthSettings()
	if err != nil { // reported by NewServer already
		return ""
	}
	return st.Audience
}

// lookupAgent runs the agent lookup for a and links it. A failed call
// (non-2xx or transport failure) is logged and leaves the agent unchanged; an
// id mismatch, a detail without any id or undecryptable parameters are errors.
func (l *studioLink) lookupAgent(ctx context.Context, logger *slog.Logger, apiKey string, a *Agent) error {
	known, _ := a.StudioAgentID()
	sa, err := l.client.LookupAgent(ctx, a.slug, known, l.key, apiKey)
	if lf := (*studio.LookupFailedError)(nil); errors.As(err, &lf) {
		if ctx.Err() != nil {
			return fmt.Errorf("supervaizer: agent lookup %q: %w", a.slug, lf.Err)
		}
		logger.LogAttrs(ctx, slog.LevelWarn, "agent lookup failed; agent left unchanged",
			slog.String("agent_slug", a.slug), slog.String("error", lf.Err.Error()))
		return nil
	}
	if known == "" && sa.ID != "" {
		if err := a.linkStudioAgent(sa.ID); err != nil {
			return err
		}
	}
	if err != nil {
		return err
	}
	logger.LogAttrs(ctx, slog.LevelInfo, "agent looked up in Studio", slog.String("agent_slug", a.slug),
		slog.String("studio_agent_id", sa.ID), slog.String("status", sa.Status),
		slog.String("onboarding_status", sa.OnboardingStatus), slog.Int("parameters", len(sa.Parameters)))
	return nil
}

// refresher runs one background re-registration at a time; requests that
// arrive meanwhile coalesce into one more run, that of the latest request.
// Once closed it starts nothing more.
type refresher struct {
	mu      sync.Mutex
	running bool
	closed  bool
	pending func()        // the run requested while one was running
	idle    chan struct{} // closed when the latest background goroutine ends
}

// trigger starts run in the background, or makes it the one pending run. It
// does nothing and reports false once the refresher is closed.
func (r *refresher) trigger(run func()) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	if r.running {
		r.pending = run
		return true
	}
	r.running = true
	idle := make(chan struct{})
	r.idle = idle
	go func() {
		defer close(idle)
		for run != nil {
			run()
			r.mu.Lock()
			run, r.pending = r.pending, nil
			r.running = run != nil
			r.mu.Unlock()
		}
	}()
	return true
}

// close stops the refresher: later triggers do nothing and the pending run is
// dropped. The channel returned is closed once the background goroutine, if
// any, has ended. close may be called more than once.
func (r *refresher) close() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	r.pending = nil
	if r.idle == nil {
		idle := make(chan struct{})
		close(idle)
		r.idle = idle
	}
	return r.idle
}

// stopStudio stops the registration refreshes for Shutdown, which has
// cancelled the context of the one in progress. The channel returned is
// closed once no refresh runs any more.
func (s *Server) stopStudio() <-chan struct{} {
	if s.studio == nil {
		idle := make(chan struct{})
		close(idle)
		return idle
	}
	return s.studio.refresh.close()
}

// refreshRequest is the optional body of POST /api/supervaizer/registration/refresh.
type refreshRequest struct {
	Reason      *string `json:"reason"`
	RequestedAt *string `json:"requested_at"`
}

// serveRegistrationRefresh answers 202 and re-sends server.register (with the
// handshake and the agent lookup) in the background; failures are logged.
func (s *Server) serveRegistrationRefresh(w http.ResponseWriter, r *http.Request) {
	if s.studio == nil {
		writeDetail(w, http.StatusServiceUnavailable, "No supervisor account configured")
		return
	}
	if s.closing.Load() {
		writeDetail(w, http.StatusServiceUnavailable, "server is shutting down")
		return
	}
	var body bytes.Buffer
	if _, err := body.ReadFrom(http.MaxBytesReader(w, r.Body, maxRefreshBody)); err != nil {
		if tooLarge := (*http.MaxBytesError)(nil); errors.As(err, &tooLarge) {
			writeDetail(w, http.StatusRequestEntityTooLarge, "Request body too large")
		} else {
			writeDetail(w, http.StatusBadRequest, "Could not read the request body")
		}
		return
	}
	var req refreshRequest
	if raw := bytes.TrimSpace(body.Bytes()); len(raw) > 0 {
		if raw[0] != '{' || json.Unmarshal(raw, &req) != nil {
			writeDetail(w, http.StatusUnprocessableEntity, "The refresh request body must be a JSON object with optional string reason and requested_at")
			return
		}
	}
	reason := ""
	if req.Reason != nil {
		reason = *req.Reason
	}
	if !s.studio.refresh.trigger(func() { s.refreshRegistration(reason) }) {
		writeDetail(w, http.StatusServiceUnavailable, "server is shutting down")
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"status": "accepted", "reason": req.Reason})
}

// refreshRegistration re-registers with Studio; it is bounded by
// refreshTimeout and by the server's lifetime (Shutdown cancels it), and logs
// its outcome. Once Shutdown has begun it does nothing.
func (s *Server) refreshRegistration(reason string) {
	ctx, cancel := context.WithTimeout(s.lifetime, refreshTimeout)
	defer cancel()
	reason = redact.Truncate(reason, maxLoggedReason)
	l := s.studio
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	if s.closing.Load() {
		s.logger.LogAttrs(ctx, slog.LevelInfo, "registration refresh skipped: the server is shutting down", slog.String("reason", reason))
		return
	}
	if err := s.syncStudio(ctx); err != nil {
		if s.lifetime.Err() != nil {
			s.logger.LogAttrs(ctx, slog.LevelInfo, "registration refresh cancelled: the server is shutting down", slog.String("reason", reason))
			return
		}
		s.logger.LogAttrs(ctx, slog.LevelError, "registration refresh failed", slog.String("reason", reason), slog.String("error", err.Error()))
		return
	}
	l.started = true
	s.logger.LogAttrs(ctx, slog.LevelInfo, "registration refreshed", slog.String("reason", reason))
}
