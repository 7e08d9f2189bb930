package supervaizer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/errcode"
	"github.com/supervaize/supervaizer-go/internal/wsauth"
)

// WorkspaceAuthSettings configures the verification of the Studio-signed
// workspace tokens. The environment equivalents are
// SUPERVAIZER_WORKSPACE_AUTH_REQUIRED, _ISSUER, _AUDIENCE, _PUBLIC_KEY,
// _JWKS_URL and _LEEWAY_SECONDS.
type WorkspaceAuthSettings struct {
	Enabled      bool           // turns verification on
	Issuer       string         // expected iss, required when enabled
	Audience     string         // expected aud; usually installed by the Studio handshake
	PublicKeyPEM string         // Studio's Ed25519 public key (PEM, SubjectPublicKeyInfo); wins over JWKSURL
	JWKSURL      string         // Studio's JWKS endpoint
	Leeway       *time.Duration // clock leeway for exp and iat; nil: 30 s
}

func (w WorkspaceAuthSettings) internal() wsauth.Settings {
	s := wsauth.Settings{Enabled: w.Enabled, Issuer: w.Issuer, Audience: w.Audience, PublicKeyPEM: w.PublicKeyPEM, JWKSURL: w.JWKSURL}
	if w.Leeway != nil {
		s.Leeway, s.LeewaySet = *w.Leeway, true
	}
	return s
}

// WorkspaceCheck is what the dispatcher asks a [WorkspaceVerifier] to prove.
type WorkspaceCheck struct {
	Header        string   // raw X-Supervaize-Workspace-Authorization value ("" when absent)
	WorkspaceID   string   // the request's workspace.id
	WorkspaceSlug string   // the request's workspace.slug ("" when absent)
	AgentSlug     string   // the request's agent_slug
	Scopes        []string // required scopes: the JSON-RPC method and the action or surface id
}

// WorkspaceVerifier verifies the workspace token of a request. The dispatcher
// calls it before the handler lookup for every action and surface except the
// bootstrap ids; a failure is answered with -32030 and no handler runs. Errors
// should be *AuthError; any other error is reported as
// workspace_authorization_not_configured (fail closed).
type WorkspaceVerifier interface {
	VerifyWorkspace(ctx context.Context, c WorkspaceCheck) (*contracts.VerifiedWorkspaceContext, error)
}

// AuthError is a workspace-authorization failure: Code is one of the
// workspace_authorization_* codes of the workspace-token rules (programs use it),
// Message is human-readable and never contains the token.
type AuthError struct {
	Code    string
	Message string
}

func (e *AuthError) Error() string { return e.Code + ": " + e.Message }

// The workspace-authorization codes the SDK itself produces outside the verifier.
const (
	authNotConfigured = string(wsauth.CodeNotConfigured)
	authUnknownAgent  = string(wsauth.CodeUnknownAgent)
)

// isBootstrapAction and isBootstrapSurface report whether a call runs without a
// workspace token: exactly the actions workspace_binding.options and
// workspace_binding.create and the surface workspace_binding.create.
func isBootstrapAction(id string) bool {
	return id == contracts.BootstrapOptionsAction || id == contracts.BootstrapCreateAction
}

func isBootstrapSurface(id string) bool { return id == contracts.BootstrapCreateSurface }

// bindingMissing reports whether a verified non-bootstrap call must be
// refused before its handler (spec item 78): the agent's registration
// requires a workspace binding and the token carries no
// agent_workspace_ref. Local mode, which verifies no token, is never
// refused.
func (a *Agent) bindingMissing(localAuth bool, vc *contracts.VerifiedWorkspaceContext) bool {
	if vc == nil || localAuth {
		return false
	}
	if a == nil || a.reg == nil || a.reg.WorkspaceBinding == nil || !a.reg.WorkspaceBinding.Required {
		return false
	}
	return vc.AgentWorkspaceRef == nil || strings.TrimSpace(*vc.AgentWorkspaceRef) == ""
}

// bindingMissingMessage is the message of a call refused by bindingMissing.
func bindingMissingMessage(agentSlug string) string {
	return fmt.Sprintf("Agent %q requires a workspace binding and the workspace token carries no agent_workspace_ref: bind the workspace first", agentSlug)
}

// tokenVerifier adapts the built-in verifier.
type tokenVerifier struct{ v *wsauth.Verifier }

func (t tokenVerifier) VerifyWorkspace(ctx context.Context, c WorkspaceCheck) (*contracts.VerifiedWorkspaceContext, error) {
	vc, err := t.v.Verify(ctx, wsauth.Request{Header: c.Header, WorkspaceID: c.WorkspaceID, WorkspaceSlug: c.WorkspaceSlug, AgentSlug: c.AgentSlug, Scopes: c.Scopes})
	if err != nil {
		var we *wsauth.Error
		if errors.As(err, &we) {
			return nil, &AuthError{Code: string(we.Code), Message: we.Message}
		}
		return nil, err
	}
	// The verifier's context is this call's own (nothing in it is shared
	// with its cache), and has the public type's fields: converted, not
	// copied (a field added to one and not the other fails to compile).
	return (*contracts.VerifiedWorkspaceContext)(vc), nil
}

// resolveAuthorization configures workspace verification and decides whether
// the local-mode bypass applies.
func (s *Server) resolveAuthorization() error {
	var settings wsauth.Settings
	if s.cfg.wsAuth != nil {
		settings = s.cfg.wsAuth.internal()
	} else {
		env, err := s.cfg.env.workspaceAuthSettings()
		if err != nil {
			return fmt.Errorf("supervaizer: workspace authorization: %w", err)
		}
		settings = env
	}
	if s.cfg.studioAttached && !settings.Enabled && s.cfg.verifier == nil {
		return errors.New("supervaizer: a controller attached to Studio must verify workspace tokens: set SUPERVAIZER_WORKSPACE_AUTH_REQUIRED=true, SUPERVAIZER_WORKSPACE_AUTH_ISSUER and SUPERVAIZER_WORKSPACE_AUTH_PUBLIC_KEY or SUPERVAIZER_WORKSPACE_AUTH_JWKS_URL")
	}
	if err := settings.Validate(); err != nil {
		return fmt.Errorf("supervaizer: workspace authorization: %w", err)
	}
	s.localAuth = s.cfg.localMode && !s.cfg.studioAttached && !settings.AnyConfigured() && s.cfg.verifier == nil
	s.startup.auth = settings // checked by Start (startup.go)
	if s.cfg.verifier != nil {
		s.verifier = s.cfg.verifier
		return nil
	}
	opts := []wsauth.Option{wsauth.WithLogger(s.logger)}
	if s.cfg.jwksRefetch != nil {
		opts = append(opts, wsauth.WithJWKSRefetchInterval(*s.cfg.jwksRefetch))
	}
	if s.cfg.jwksMaxAge != nil {
		opts = append(opts, wsauth.WithJWKSKeyMaxAge(*s.cfg.jwksMaxAge))
	}
	v, err := wsauth.New(settings, s.serverID, agentDirectory{s}, opts...)
	if err != nil {
		return fmt.Errorf("supervaizer: workspace authorization: %w", err)
	}
	s.tokens = v
	s.verifier = tokenVerifier{v: v}
	return nil
}

// authorize verifies the workspace token for one call, or applies the
// local-mode bypass. The returned error is the -32030 JSON-RPC error.
func (s *Server) authorize(ctx context.Context, r *http.Request, ws contracts.WorkspaceRef, agentSlug string, scopes []string) (*contracts.VerifiedWorkspaceContext, *Error) {
	if s.localAuth {
		a, ok := s.bySlug[agentSlug]
		if !ok {
			return nil, authFailure(authUnknownAgent, fmt.Sprintf("Agent %q is not served by this controller", agentSlug))
		}
		var slug *string
		if ws.Slug != "" {
			slug = new(ws.Slug)
		}
		return &contracts.VerifiedWorkspaceContext{
			GrantID: contracts.LocalModeGrantID, WorkspaceID: ws.ID, WorkspaceSlug: slug,
			AgentID: a.legacyID, AgentSlug: agentSlug, ServerID: s.serverID, Scopes: scopes,
		}, nil
	}
	vc, ae := verifyWorkspace(ctx, s.verifier, s.logger, WorkspaceCheck{
		Header: r.Header.Get(HeaderWorkspaceAuthorization), WorkspaceID: ws.ID, WorkspaceSlug: ws.Slug,
		AgentSlug: agentSlug, Scopes: scopes,
	})
	if ae != nil {
		return nil, authFailure(ae.Code, ae.Message)
	}
	return vc, nil
}

// verifyWorkspace asks the verifier to prove c and logs a failure (its code,
// never the token). Any error other than an *AuthError, or no context, fails
// closed as workspace_authorization_not_configured.
// The observer sees each verification through s.verifier (observedVerifier,
// observer.go).
func verifyWorkspace(ctx context.Context, v WorkspaceVerifier, logger *slog.Logger, c WorkspaceCheck) (*contracts.VerifiedWorkspaceContext, *AuthError) {
	vc, err := v.VerifyWorkspace(ctx, c)
	if err == nil && vc == nil {
		err = errors.New("verifier returned no context and no error")
	}
	if err == nil {
		return vc, nil
	}
	var ae *AuthError
	if !errors.As(err, &ae) {
		logger.LogAttrs(ctx, slog.LevelError, "workspace verifier failed", slog.String("agent_slug", c.AgentSlug), slog.Any("error", err))
		ae = &AuthError{Code: authNotConfigured, Message: "Workspace authorization could not be verified"}
	}
	logger.LogAttrs(ctx, slog.LevelWarn, "workspace authorization failed",
		slog.String("agent_slug", c.AgentSlug), slog.Any("scopes", c.Scopes), slog.String("code", ae.Code))
	return nil, ae
}

func authFailure(code, msg string) *Error {
	return newError(errcode.Unauthorized, msg, map[string]any{"code": code})
}
