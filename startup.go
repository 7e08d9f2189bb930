package supervaizer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/internal/preview"
	"github.com/supervaize/supervaizer-go/internal/redact"
	"github.com/supervaize/supervaizer-go/internal/wsauth"
)

// Mode is how a controller runs, decided by its configuration.
type Mode string

const (
	// ModeLocal is development mode (SUPERVAIZER_LOCAL_MODE=true): no Studio,
	// the development API key by default, and workspace tokens not verified
	// unless workspace-authorization settings are configured.
	ModeLocal Mode = "local"
	// ModeAttached is a controller attached to Studio with an account: it
	// registers at startup and verifies Studio's workspace tokens.
	ModeAttached Mode = "attached to Studio"
	// ModeStandalone is neither: it verifies workspace tokens with the
	// configured settings but does not register with Studio.
	ModeStandalone Mode = "standalone"
)

// Mode reports how the controller runs.
func (s *Server) Mode() Mode {
	switch {
	case s.cfg.localMode:
		return ModeLocal
	case s.cfg.studioAttached:
		return ModeAttached
	default:
		return ModeStandalone
	}
}

// errNeverAuthorizes is the configuration error of a controller that would
// answer every non-bootstrap call -32030 workspace_authorization_not_configured.
var errNeverAuthorizes = errors.New("supervaizer: this configuration can never authorize a call: " +
	"workspace tokens are not verified and local mode is off. " +
	"For development without Studio set SUPERVAIZER_LOCAL_MODE=true (or WithLocalMode(true)); " +
	"to verify Studio's workspace tokens set SUPERVAIZER_WORKSPACE_AUTH_REQUIRED=true, SUPERVAIZER_WORKSPACE_AUTH_ISSUER " +
	"and SUPERVAIZER_WORKSPACE_AUTH_PUBLIC_KEY or SUPERVAIZER_WORKSPACE_AUTH_JWKS_URL (or WithWorkspaceAuth); " +
	"see docs/deploying.md")

// errIncompleteLocalAuth is the configuration error of a local-mode controller
// given some workspace-authorization settings without enabling them: the
// local-mode bypass then does not apply and no token can be verified.
var errIncompleteLocalAuth = errors.New("supervaizer: local mode (SUPERVAIZER_LOCAL_MODE) with incomplete workspace authorization can never authorize a call: " +
	"some SUPERVAIZER_WORKSPACE_AUTH_* settings are set but SUPERVAIZER_WORKSPACE_AUTH_REQUIRED is not true. " +
	"Unset every SUPERVAIZER_WORKSPACE_AUTH_* variable to run in local mode without tokens, or set " +
	"SUPERVAIZER_WORKSPACE_AUTH_REQUIRED=true, SUPERVAIZER_WORKSPACE_AUTH_ISSUER and SUPERVAIZER_WORKSPACE_AUTH_PUBLIC_KEY " +
	"or SUPERVAIZER_WORKSPACE_AUTH_JWKS_URL to verify them")

// envStudioAgentID names the variable holding the Studio agent id of the single
// agent of a standalone controller (see [AgentSpec].StudioAgentID).
const envStudioAgentID = "SUPERVAIZER_STUDIO_AGENT_ID"

// resolveStudioAgentIDs links the single agent to SUPERVAIZER_STUDIO_AGENT_ID
// when it is set; the variable cannot name the ids of several agents.
func resolveStudioAgentIDs(c *config, agents []*Agent) error {
	id := strings.TrimSpace(c.env.StudioAgentID)
	if id == "" {
		return nil
	}
	if len(agents) > 1 {
		return fmt.Errorf("supervaizer: %s holds the Studio agent id of a single agent, but this controller serves %d agents: "+
			"unset it and set AgentSpec.StudioAgentID of each agent", envStudioAgentID, len(agents))
	}
	if err := agents[0].linkStudioAgent(id); err != nil {
		return fmt.Errorf("supervaizer: %s: %w", envStudioAgentID, err)
	}
	return nil
}

// checkCanAuthorize refuses a configuration under which the built-in verifier
// can never accept a token and the local-mode bypass does not apply: no
// verification at all, or verification on a controller not attached to Studio
// whose agents have no Studio agent id (every token names one; spec item 70).
// A custom [WorkspaceVerifier] is trusted to decide for itself.
func (s *Server) checkCanAuthorize() error {
	if s.cfg.verifier != nil || s.localAuth {
		return nil
	}
	if s.startup.auth.Enabled {
		if s.cfg.studioAttached {
			return nil // the registration handshake gives the ids
		}
		var missing []string
		for _, a := range s.agents {
			if _, ok := a.StudioAgentID(); !ok {
				missing = append(missing, a.slug)
			}
		}
		if len(missing) == 0 {
			return nil
		}
		return fmt.Errorf("supervaizer: this configuration can never authorize a call to agent %s: "+
			"workspace tokens are verified and carry the Studio agent id, which a controller not attached to Studio must be given. "+
			"Set %s to the agent's Studio agent id (a single agent) or AgentSpec.StudioAgentID of each agent; "+
			"or attach the controller to Studio with SUPERVAIZE_API_URL, SUPERVAIZE_API_KEY and SUPERVAIZE_WORKSPACE_ID "+
			"(its registration handshake gives the ids); see docs/deploying.md",
			strings.Join(missing, ", "), envStudioAgentID)
	}
	if s.cfg.localMode {
		return errIncompleteLocalAuth
	}
	return errNeverAuthorizes
}

// startupInfo is what the startup log reports beyond the configuration.
type startupInfo struct {
	url  string          // where the controller listens, "" when unknown
	auth wsauth.Settings // the resolved workspace-authorization settings
}

// start runs Start and, the first time, announces the controller at url.
func (s *Server) start(ctx context.Context, url string) error {
	already := s.started.Load()
	if !already {
		s.startup.url = url
	}
	if err := s.Start(ctx); err != nil {
		return err
	}
	if already { // Start had run (and logged) before the address was known
		s.logger.LogAttrs(ctx, slog.LevelInfo, "controller listening", slog.String("url", url))
		logPreview(ctx, s.logger, s.preview, url)
	}
	return nil
}

// logStartup writes the startup lines: address and mode, the API key to send,
// how workspace tokens are checked, what is not configured and the variable
// that fixes it, and the declared actions and surfaces without a handler.
func (s *Server) logStartup(ctx context.Context) {
	info := s.startup
	slugs := make([]string, len(s.agents))
	for i, a := range s.agents {
		slugs[i] = a.slug
	}
	attrs := []slog.Attr{slog.String("mode", string(s.Mode()))}
	if info.url != "" {
		attrs = append(attrs, slog.String("url", info.url))
	}
	attrs = append(attrs, slog.String("server_id", s.serverID), slog.Any("agents", slugs))
	s.logger.LogAttrs(ctx, slog.LevelInfo, "controller ready", attrs...)
	if info.url != "" { // else logged by start once the address is known
		logPreview(ctx, s.logger, s.preview, info.url)
	}

	// Where the state lives: one instance's own, or shared by several.
	s.logger.LogAttrs(ctx, slog.LevelInfo, "store and event stream",
		slog.String("store", s.storeName), slog.String("events", s.eventsName))

	// The API key. Only the local-mode development key is ever printed.
	key := s.keys.primary.Value()
	source := s.cfg.apiKeySource()
	if s.cfg.localMode && key == LocalModeAPIKey {
		s.logger.LogAttrs(ctx, slog.LevelInfo, "send this development API key in the X-API-Key header",
			slog.String("api_key", key), slog.String("source", source))
	} else {
		s.logger.LogAttrs(ctx, slog.LevelInfo, "API key (send it in the X-API-Key header)",
			slog.String("api_key_fingerprint", redact.Fingerprint(key)), slog.String("source", source))
	}

	// Workspace tokens.
	switch {
	case s.localAuth:
		s.logger.LogAttrs(ctx, slog.LevelWarn, "local mode: workspace tokens are not verified; handlers receive an unverified context with grant_id \"local-mode\" (development only)")
	case s.cfg.verifier != nil:
		s.logger.LogAttrs(ctx, slog.LevelInfo, "workspace tokens are checked by the verifier given with WithWorkspaceVerifier")
	default:
		keySource := "SUPERVAIZER_WORKSPACE_AUTH_JWKS_URL"
		if info.auth.PublicKeyPEM != "" {
			keySource = "SUPERVAIZER_WORKSPACE_AUTH_PUBLIC_KEY"
		}
		audience := info.auth.Audience
		if audience == "" {
			audience = "from the Studio handshake, else " + wsauth.AudiencePrefix + s.serverID
		}
		s.logger.LogAttrs(ctx, slog.LevelInfo, "workspace tokens are verified (Ed25519)",
			slog.String("issuer", info.auth.Issuer), slog.String("key_source", keySource), slog.String("audience", audience))
	}

	// What is not configured, with the variable that fixes it.
	notSet := func(what, fix string) {
		s.logger.LogAttrs(ctx, slog.LevelWarn, "not configured: "+what, slog.String("fix", fix))
	}
	if source == keySourceGenerated {
		notSet("the API key was generated for this process only and changes at each restart", "set SUPERVAIZER_API_KEY")
	}
	if s.cfg.publicURL == "" && !s.cfg.localMode {
		notSet("no public URL: Agent Cards take their URLs from the Host header of each discovery request", "set SUPERVAIZER_PUBLIC_URL")
	}
	if s.Mode() == ModeStandalone {
		// Standalone is deliberate: no SUPERVAIZE_* variable is set (a
		// partial account fails NewServer) and tokens are verified without a
		// handshake. It is said, not warned about.
		s.logger.LogAttrs(ctx, slog.LevelInfo, "standalone: not attached to Studio, the controller does not register and sends no events",
			slog.String("to_attach", "set SUPERVAIZE_API_URL, SUPERVAIZE_API_KEY and SUPERVAIZE_WORKSPACE_ID"))
	}
	s.warnMissingHandlers()
	warnMisnamedActions(ctx, s.logger, s.agents)
}

// protocolAction is an action id the protocol gives a role through the job
// policy: declared without that policy, it is a plain action of that name.
type protocolAction struct {
	id   string
	role func(p contracts.JobPolicy) bool // whether the policy gives id its role
	fix  string
}

var protocolActions = []protocolAction{{
	id:   contracts.DefaultSyncAction,
	role: func(p contracts.JobPolicy) bool { return p.Sync != nil && p.Sync.Action == contracts.DefaultSyncAction },
	fix:  "set RegistrationSpec.JobPolicy to &contracts.JobPolicy{Sync: &contracts.JobSyncPolicy{SupportedStatuses: …}} (job_policy.sync), or rename the action",
}, {
	id: contracts.DefaultPreviewAction,
	role: func(p contracts.JobPolicy) bool {
		return p.Setup != nil && p.Setup.PreviewAction == contracts.DefaultPreviewAction
	},
	fix: "set RegistrationSpec.JobPolicy to &contracts.JobPolicy{Setup: &contracts.JobSetupPolicy{}} (job_policy.setup), or rename the action",
}}

// warnMisnamedActions logs, at startup, each declared action whose name
// promises a role only the job policy gives (job.sync, job.start.preview)
// when the policy does not give it: Studio then treats it as a plain action
// (job.sync without job_policy.sync is never called to sync a job).
// step.awaiting.submit is not one: an awaiting step names the action that
// submits it (Awaiting.Action), so it is what its name says with or without
// job_policy.setup.
func warnMisnamedActions(ctx context.Context, logger *slog.Logger, agents []*Agent) {
	for _, a := range agents {
		if a.reg == nil {
			continue
		}
		for _, d := range a.reg.Capabilities.Actions {
			for _, pa := range protocolActions {
				if d.ID == pa.id && !pa.role(a.reg.JobPolicy) {
					logger.LogAttrs(ctx, slog.LevelWarn, "action "+pa.id+" is not what its name says: the job policy does not name it, so Studio treats it as a plain action",
						slog.String("agent_slug", a.slug), slog.String("action", pa.id), slog.String("fix", pa.fix))
				}
			}
		}
	}
}

// logPreview says where the local preview is served (discovery.go), under the
// controller's url: once, absolute, when the controller listens.
func logPreview(ctx context.Context, logger *slog.Logger, p *preview.Handler, url string) {
	if p != nil {
		logger.LogAttrs(ctx, slog.LevelInfo, "local preview: open it in a browser to see and use the surfaces",
			slog.String("url", url+previewPath))
	}
}

// Key sources reported at startup.
const (
	keySourceOption    = "WithAPIKey"
	keySourceEnv       = "SUPERVAIZER_API_KEY"
	keySourceLocal     = "local-mode default"
	keySourceGenerated = "generated"
)

// apiKeySource says where the write key came from, as NewServer resolved it.
func (c *config) apiKeySource() string {
	switch {
	case len(c.apiKeys) > 0:
		return keySourceOption
	case strings.TrimSpace(c.env.APIKey) != "":
		return keySourceEnv
	case c.localMode:
		return keySourceLocal
	default:
		return keySourceGenerated
	}
}

// warnMissingHandlers logs, once, the declared actions and surfaces that have
// no handler: calls to them are answered -32011 until one is registered.
func (s *Server) warnMissingHandlers() {
	s.warnOnce.Do(func() {
		for _, a := range s.agents {
			actions, surfaces := a.missingHandlers()
			if len(actions) == 0 && len(surfaces) == 0 {
				continue
			}
			s.logger.Warn("declared but no handler registered: calls are answered -32011",
				slog.String("agent_slug", a.slug), slog.Any("actions", actions), slog.Any("surfaces", surfaces))
		}
	})
}

// missingHandlers lists the declared actions and surfaces without a handler,
// leaving out the resource and dataset surfaces Studio generates itself.
func (a *Agent) missingHandlers() (actions, surfaces []string) {
	if a.reg == nil {
		return nil, nil
	}
	a.mu.RLock()
	defer a.mu.RUnlock()
	for _, d := range a.reg.Capabilities.Actions {
		if _, ok := a.actions[d.ID]; !ok {
			actions = append(actions, d.ID)
		}
	}
	studio := map[string]bool{} // surfaces Studio generates from auto_surface
	for _, r := range a.reg.Resources {
		if r.AutoSurface {
			studio["mission.agent.resource."+r.ID] = true
		}
	}
	for _, d := range a.reg.Datasets {
		if d.AutoSurface {
			studio["mission.agent.dataset."+d.ID] = true
		}
	}
	for _, id := range a.reg.Capabilities.Surfaces {
		if _, ok := a.surfaces[id]; !ok && !studio[id] {
			surfaces = append(surfaces, id)
		}
	}
	return actions, surfaces
}
