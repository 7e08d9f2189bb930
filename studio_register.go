package supervaizer

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/internal/wsauth"
)

// Environment variables of the Studio registration (studio.md §4, §6).
const (
	EnvPrivateKey  = "SUPERVAIZER_PRIVATE_KEY" // the controller's RSA private key, PEM
	EnvEnvironment = "SUPERVAIZER_ENVIRONMENT" // dev, staging, prod, …
)

// Defaults of the Studio registration.
const (
	DefaultEnvironment      = "dev"
	DefaultMaxExecutionTime = 3600 // seconds, agent payload max_execution_time
	DefaultInstructionsPath = "supervaize_instructions.html"
	ControllerKeyBits       = 2048 // size of a generated controller RSA key, and the minimum accepted
	RegistrationRefreshPath = "/api/supervaizer/registration/refresh"
)

// refreshTimeout bounds one background re-registration.
const refreshTimeout = 5 * time.Minute

// maxRefreshBody bounds the optional body of a refresh request.
const maxRefreshBody = 64 << 10

// maxLoggedReason bounds the refresh reason written to the log, in runes.
const maxLoggedReason = 200

// ErrStudioHandshake wraps every failure of the registration handshake
// (studio.md §5); the message names what is wrong, never the key.
var ErrStudioHandshake = errors.New("supervaizer: Studio registration handshake failed")

// studioLink is the Studio attachment of a Server.
type studioLink struct {
	account     *Account
	key         *rsa.PrivateKey
	publicPEM   string
	uri         string // server:<MAC>
	environment string

	syncMu  sync.Mutex // serializes Start and refreshes
	started bool
	refresh refresher
}

// Account returns the Studio account the controller is attached to, or nil
// when it is not attached (no account configured, or local mode). A nil
// *Account is usable: it drops events (see [Account.SendEvent]).
func (s *Server) Account() *Account {
	if s.studio == nil {
		return nil
	}
	return s.studio.account
}

// resolveStudio resolves the Studio attachment (studio.md §6 step 1): the
// account (option, else the environment), the public URL, the controller RSA
// key pair and the server URI. It runs before the workspace-authorization
// settings are resolved, which must then be enabled (step 3).
func (s *Server) resolveStudio() error {
	acct := s.cfg.account
	if s.cfg.localMode {
		if acct != nil || strings.TrimSpace(s.cfg.getenv(EnvStudioAPIURL)) != "" {
			s.logger.Info("local mode: the Studio account is ignored; the controller does not register with Studio")
		}
		return nil
	}
	if acct == nil {
		envCfg, err := AccountConfigFromEnv(s.cfg.getenv)
		if err != nil {
			return err
		}
		if envCfg.empty() {
			return nil
		}
		envCfg.Logger = s.logger
		if acct, err = NewAccount(envCfg); err != nil {
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
	env := strings.TrimSpace(s.cfg.getenv(EnvEnvironment))
	if env == "" {
		env = DefaultEnvironment
	}
	s.studio = &studioLink{
		account:     acct,
		key:         key,
		publicPEM:   string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})),
		uri:         serverURI(s.serverID),
		environment: env,
	}
	s.cfg.studioAttached = true
	return nil
}

// resolveControllerKey returns the controller RSA key: the option, else
// SUPERVAIZER_PRIVATE_KEY, else a new key exported to the environment (unless
// WithEnv isolates the server).
func (s *Server) resolveControllerKey() (*rsa.PrivateKey, error) {
	if k := s.cfg.controllerKey; k != nil {
		if err := checkControllerKey(k); err != nil {
			return nil, fmt.Errorf("supervaizer: WithControllerKey: %w", err)
		}
		return k, nil
	}
	if raw := s.cfg.getenv(EnvPrivateKey); strings.TrimSpace(raw) != "" {
		k, err := parseControllerKey(raw)
		if err != nil {
			return nil, fmt.Errorf("supervaizer: %s: %w", EnvPrivateKey, err)
		}
		return k, nil
	}
	k, err := rsa.GenerateKey(rand.Reader, ControllerKeyBits)
	if err != nil {
		return nil, fmt.Errorf("supervaizer: generate the controller RSA key: %w", err)
	}
	if s.cfg.exportEnv {
		der, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			return nil, fmt.Errorf("supervaizer: encode the controller RSA key: %w", err)
		}
		if err := os.Setenv(EnvPrivateKey, string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))); err != nil {
			return nil, fmt.Errorf("supervaizer: export %s: %w", EnvPrivateKey, err)
		}
	}
	s.logger.Warn("SUPERVAIZER_PRIVATE_KEY is not set: generated a controller RSA key pair; Studio-encrypted parameters will not survive a restart unless it is kept")
	return k, nil
}

// parseControllerKey reads an RSA private key in PEM (PKCS#8 or PKCS#1). A
// value whose line breaks were written as the two characters \n is accepted.
func parseControllerKey(raw string) (*rsa.PrivateKey, error) {
	raw = strings.TrimSpace(raw)
	if !strings.Contains(raw, "\n") && strings.Contains(raw, `\n`) {
		raw = strings.ReplaceAll(raw, `\n`, "\n")
	}
	block, _ := pem.Decode([]byte(raw))
	if block == nil {
		return nil, errors.New("not a PEM private key")
	}
	var k *rsa.PrivateKey
	switch block.Type {
	case "PRIVATE KEY":
		parsed, err := x509.ParsePKCS8PrivateKey(block.Bytes)
		if err != nil {
			return nil, errors.New("unparsable PKCS#8 private key")
		}
		rk, ok := parsed.(*rsa.PrivateKey)
		if !ok {
			return nil, errors.New("not an RSA private key")
		}
		k = rk
	case "RSA PRIVATE KEY":
		rk, err := x509.ParsePKCS1PrivateKey(block.Bytes)
		if err != nil {
			return nil, errors.New("unparsable PKCS#1 private key")
		}
		k = rk
	default:
		return nil, fmt.Errorf("PEM block %q is not a private key", block.Type)
	}
	return k, checkControllerKey(k)
}

func checkControllerKey(k *rsa.PrivateKey) error {
	if k.N == nil || k.N.BitLen() < ControllerKeyBits {
		return fmt.Errorf("the controller RSA key must have at least %d bits", ControllerKeyBits)
	}
	return k.Validate()
}

// serverURI is "server:" and the MAC address of the first non-loopback
// interface with a 6-byte hardware address, as 6 hyphen-separated uppercase
// hex pairs. Without one (containers without a network, sandboxes), the
// address is derived from the server id: the first 6 bytes of
// SHA-256("supervaizer-server-uri:" + serverID), marked locally administered
// and unicast. It is stable for a given SUPERVAIZER_SERVER_ID.
func serverURI(serverID string) string {
	if ifs, err := net.Interfaces(); err == nil {
		for _, i := range ifs {
			if i.Flags&net.FlagLoopback == 0 && len(i.HardwareAddr) == 6 && !allZero(i.HardwareAddr) {
				return "server:" + formatMAC(i.HardwareAddr)
			}
		}
	}
	return "server:" + fallbackMAC(serverID)
}

func fallbackMAC(serverID string) string {
	sum := sha256.Sum256([]byte("supervaizer-server-uri:" + serverID))
	mac := sum[:6]
	mac[0] = (mac[0] | 0x02) &^ 0x01
	return formatMAC(mac)
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

func formatMAC(b []byte) string {
	parts := make([]string, len(b))
	for i, c := range b {
		parts[i] = fmt.Sprintf("%02X", c)
	}
	return strings.Join(parts, "-")
}

// serverRegisterDetails is the details object of server.register (studio.md §4).
type serverRegisterDetails struct {
	ServerID                  string              `json:"server_id"`
	URL                       string              `json:"url"`
	URI                       string              `json:"uri"`
	APIVersion                string              `json:"api_version"`
	ControllerVersion         string              `json:"controller_version"`
	ControllerContractVersion any                 `json:"controller_contract_version"`
	APIBasePath               any                 `json:"api_base_path"`
	Endpoints                 any                 `json:"endpoints"`
	Environment               string              `json:"environment"`
	PublicKey                 string              `json:"public_key"`
	APIKey                    string              `json:"api_key"`
	Docs                      map[string]string   `json:"docs"`
	Agents                    []agentRegistration `json:"agents"`
}

// agentRegistration is an agent's registration payload (studio.md §3).
type agentRegistration struct {
	Name                        string                     `json:"name"`
	ID                          string                     `json:"id"`
	Author                      *string                    `json:"author"`
	Developer                   *string                    `json:"developer"`
	Maintainer                  *string                    `json:"maintainer"`
	Editor                      *string                    `json:"editor"`
	Version                     string                     `json:"version"`
	ReleaseNotesURL             *string                    `json:"release_notes_url"`
	Description                 string                     `json:"description"`
	APIPath                     string                     `json:"api_path"`
	Slug                        string                     `json:"slug"`
	Tags                        []string                   `json:"tags"`
	Methods                     map[string]any             `json:"methods"`
	ParametersSetup             []any                      `json:"parameters_setup"`
	ServerAgentID               *string                    `json:"server_agent_id"`
	ServerAgentStatus           *string                    `json:"server_agent_status"`
	ServerAgentOnboardingStatus *string                    `json:"server_agent_onboarding_status"`
	MaxExecutionTime            int                        `json:"max_execution_time"`
	InstructionsPath            string                     `json:"instructions_path"`
	DataResources               []any                      `json:"data_resources"`
	SupervaizerV2               json.RawMessage            `json:"supervaizer_v2"`
	Introduction                *contracts.Introduction    `json:"introduction,omitempty"`
	FullDescription             *contracts.FullDescription `json:"full_description,omitempty"`
	BillingCatalog              contracts.BillingCatalog   `json:"billing_catalog,omitempty"`
}

// nullable is nil for a blank string.
func nullable(s string) *string {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	return &s
}

// agentRegistration builds the payload of a (studio.md §3): unset optional
// strings and tags are null, server_agent_id is null until the agent is linked
// (open-questions item 48), parameters_setup is [] (item 49), and the
// introduction, full description and billing catalog are omitted when unset
// (the catalog also when empty, item 10).
func (s *Server) agentRegistration(a *Agent) agentRegistration {
	sp := a.spec
	p := agentRegistration{
		Name: sp.Name, ID: a.legacyID,
		Author: nullable(sp.Author), Developer: nullable(sp.Developer),
		Maintainer: nullable(sp.Maintainer), Editor: nullable(sp.Editor),
		Version: sp.Version, ReleaseNotesURL: nullable(sp.ReleaseNotesURL), Description: sp.Description,
		APIPath: "/agents/" + a.slug, Slug: a.slug,
		Methods: map[string]any{}, ParametersSetup: []any{}, DataResources: []any{},
		MaxExecutionTime: DefaultMaxExecutionTime, InstructionsPath: DefaultInstructionsPath,
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
	if s.studio != nil {
		if sa, ok := s.studio.account.StudioAgent(a.slug); ok {
			p.ServerAgentStatus, p.ServerAgentOnboardingStatus = nullable(sa.Status), nullable(sa.OnboardingStatus)
		}
	}
	return p
}

// registerDetails builds the server.register details (studio.md §4).
func (s *Server) registerDetails() serverRegisterDetails {
	public := s.cfg.publicURL
	contract := ControllerContract()
	d := serverRegisterDetails{
		ServerID: s.serverID, URL: public, URI: s.studio.uri,
		APIVersion: "v1", ControllerVersion: Version,
		ControllerContractVersion: contract["controller_contract_version"],
		APIBasePath:               contract["api_base_path"],
		Endpoints:                 contract["endpoints"],
		Environment:               s.studio.environment,
		PublicKey:                 s.studio.publicPEM,
		APIKey:                    s.APIKey(),
		Docs:                      map[string]string{"swagger": public + "/docs", "redoc": public + "/redoc", "openapi": public + "/openapi.json"},
		Agents:                    make([]agentRegistration, 0, len(s.agents)),
	}
	for _, a := range s.agents {
		d.Agents = append(d.Agents, s.agentRegistration(a))
	}
	return d
}

// startStudio runs steps 4–6 of studio.md §6 (server.register, handshake,
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
	key := s.APIKey()
	body, err := l.account.sendEvent(ctx, Event{Type: EventServerRegister, Source: ServerSource(l.uri), Details: s.registerDetails()}, key)
	if err != nil {
		return fmt.Errorf("supervaizer: server.register: %w", err)
	}
	local := make([]localAgent, len(s.agents))
	for i, a := range s.agents {
		id, _ := a.StudioAgentID()
		local[i] = localAgent{slug: a.slug, studioID: id}
	}
	hs, err := parseHandshake(body, KeyFingerprint(key), s.configuredAudience(), local)
	if err != nil {
		var km *keyMismatchError
		if errors.As(err, &km) {
			s.logger.LogAttrs(ctx, slog.LevelError, "Studio did not store the controller API key",
				slog.String("server_id", km.serverID), slog.String("local_server_id", s.serverID),
				slog.String("api_key_fingerprint", km.localFingerprint),
				slog.String("stored_controller_api_key_fingerprint", km.storedFingerprint),
				slog.String("reason", km.reason))
		}
		return err
	}
	s.SetWorkspaceAudience(hs.audience)
	for _, b := range hs.links {
		if err := s.bySlug[b.slug].LinkStudioAgent(b.id); err != nil {
			return fmt.Errorf("%w: %w", ErrStudioHandshake, err)
		}
	}
	s.logger.LogAttrs(ctx, slog.LevelInfo, "registered with Studio", slog.String("server_id", hs.serverID),
		slog.String("audience", hs.audience), slog.String("api_key_fingerprint", KeyFingerprint(key)))
	for _, a := range s.agents {
		if err := s.lookupAgent(ctx, a); err != nil {
			return err
		}
	}
	return nil
}

// configuredAudience is the locally configured workspace audience, "" when unset.
func (s *Server) configuredAudience() string {
	if s.cfg.wsAuth != nil {
		return s.cfg.wsAuth.Audience
	}
	st, err := wsauth.SettingsFromEnv(s.cfg.getenv)
	if err != nil { // reported by NewServer already
		return ""
	}
	return st.Audience
}

// localAgent is what the handshake needs to know about a local agent.
type localAgent struct{ slug, studioID string }

type agentBinding struct{ slug, id string }

// handshake is a verified registration handshake.
type handshake struct {
	serverID string
	audience string
	links    []agentBinding // in local agent order
}

// keyMismatchError is check 3 of the handshake; it carries what is logged.
type keyMismatchError struct {
	serverID, localFingerprint, storedFingerprint, reason string
}

func (e *keyMismatchError) Error() string {
	return fmt.Sprintf("%v: Studio did not confirm it stored this controller's API key (controller_api_key_match is not true; server_id %q, reason %q, local key fingerprint %s, Studio's stored fingerprint %q); check SUPERVAIZER_API_KEY",
		ErrStudioHandshake, e.serverID, e.reason, e.localFingerprint, e.storedFingerprint)
}

func (e *keyMismatchError) Unwrap() error { return ErrStudioHandshake }

func handshakeErr(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrStudioHandshake}, args...)...)
}

// jsonObject decodes raw as a JSON object; ok is false for anything else.
func jsonObject(raw []byte) (map[string]json.RawMessage, bool) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, false
	}
	return m, true
}

// jsonStr returns raw as a string when it is a JSON string.
func jsonStr(raw json.RawMessage) (string, bool) {
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

func sortedKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// parseHandshake runs the checks of studio.md §5 in order on the
// server.register response. Workspace authorization is always enabled on a
// Studio-attached controller (NewServer enforces it), so check 4 always runs.
// Nothing is applied here: the caller installs the audience and the links
// only when every check passed.
func parseHandshake(body []byte, localFingerprint, localAudience string, agents []localAgent) (*handshake, error) {
	top, ok := jsonObject(body)
	if !ok {
		return nil, handshakeErr("the server.register response is not a JSON object, so Studio's storage of the controller API key cannot be verified")
	}
	hsRaw, ok := top["supervaizer_handshake"]
	hs, isObj := jsonObject(hsRaw)
	if !ok || !isObj {
		return nil, handshakeErr("the server.register response has no supervaizer_handshake object (top-level keys received: [%s]); SUPERVAIZE_API_URL may point at a Studio without Supervaizer v2 support",
			strings.Join(sortedKeys(top), ", "))
	}
	serverID, _ := jsonStr(hs["server_id"])
	if !bytes.Equal(bytes.TrimSpace(hs["controller_api_key_match"]), []byte("true")) {
		stored, _ := jsonStr(hs["stored_controller_api_key_fingerprint"])
		reason, _ := jsonStr(hs["reason"])
		return nil, &keyMismatchError{serverID: serverID, localFingerprint: localFingerprint, storedFingerprint: stored, reason: reason}
	}
	wa, ok := jsonObject(hs["workspace_authorization"])
	if !ok {
		return nil, handshakeErr("supervaizer_handshake.workspace_authorization is missing or not an object")
	}
	aud, ok := jsonStr(wa["audience"])
	if !ok || strings.TrimSpace(aud) == "" {
		return nil, handshakeErr("supervaizer_handshake.workspace_authorization.audience is missing, not a string or blank")
	}
	if localAudience != "" && localAudience != aud {
		return nil, handshakeErr("the configured workspace audience (SUPERVAIZER_WORKSPACE_AUTH_AUDIENCE) %q differs from Studio's %q", localAudience, aud)
	}
	var rawBindings []json.RawMessage
	if raw := wa["agents"]; len(raw) == 0 || raw[0] != '[' || json.Unmarshal(raw, &rawBindings) != nil {
		return nil, handshakeErr("supervaizer_handshake.workspace_authorization.agents is missing or not an array")
	}
	bySlug := make(map[string]string, len(rawBindings))
	for i, raw := range rawBindings {
		b, ok := jsonObject(raw)
		id, idOK := jsonStr(b["id"])
		slug, slugOK := jsonStr(b["slug"])
		if !ok || !idOK || !slugOK || strings.TrimSpace(id) == "" || strings.TrimSpace(slug) == "" {
			return nil, handshakeErr("supervaizer_handshake.workspace_authorization.agents[%d] must be an object with non-blank string id and slug", i)
		}
		if prev, dup := bySlug[slug]; dup && prev != id {
			return nil, handshakeErr("supervaizer_handshake.workspace_authorization.agents binds the slug %q twice, to %q and %q", slug, prev, id)
		}
		bySlug[slug] = id
	}
	out := &handshake{serverID: serverID, audience: aud}
	var missing []string
	for _, a := range agents {
		id, ok := bySlug[a.slug]
		switch {
		case !ok:
			missing = append(missing, a.slug)
		case a.studioID != "" && a.studioID != id:
			return nil, handshakeErr("agent id mismatch for agent %q: it is linked to Studio agent %q, the handshake binds %q", a.slug, a.studioID, id)
		default:
			out.links = append(out.links, agentBinding{slug: a.slug, id: id})
		}
	}
	if len(missing) > 0 {
		return nil, handshakeErr("Studio returned no workspace-authorization binding for the agents: %s", strings.Join(missing, ", "))
	}
	return out, nil
}

// agentDetail is what the agent lookup reads (studio.md §7).
type agentDetail struct {
	id           string
	status       string
	onboarding   string
	encrypted    string
	hasEncrypted bool
	keys         []string
}

// parseAgentDetail reads a lookup response: a JSON object whose object,
// agent or data member, when an object, is the detail.
func parseAgentDetail(body []byte) (agentDetail, error) {
	top, ok := jsonObject(body)
	if !ok {
		return agentDetail{}, errors.New("the response is not a JSON object")
	}
	detail := top
	for _, k := range []string{"object", "agent", "data"} {
		if m, ok := jsonObject(top[k]); ok {
			detail = m
			break
		}
	}
	var d agentDetail
	d.keys = sortedKeys(detail)
	if raw := bytes.TrimSpace(detail["id"]); len(raw) > 0 {
		if s, ok := jsonStr(raw); ok {
			d.id = strings.TrimSpace(s)
		} else if raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9') {
			var n json.Number
			if json.Unmarshal(raw, &n) == nil {
				d.id = n.String()
			}
		}
	}
	d.status, _ = jsonStr(detail["status"])
	d.onboarding, _ = jsonStr(detail["onboarding_status"])
	d.encrypted, d.hasEncrypted = jsonStr(detail["parameters_encrypted"])
	return d, nil
}

// lookupAgent runs the agent lookup of studio.md §7 for a. A failed call
// (non-2xx or transport failure) is logged and leaves the agent unchanged; an
// id mismatch, a detail without any id or undecryptable parameters are errors.
func (s *Server) lookupAgent(ctx context.Context, a *Agent) error {
	acct := s.studio.account
	known, linked := a.StudioAgentID()
	path := "/agents/by-slug/" + url.PathEscape(a.slug)
	if linked {
		path = "/agents/" + url.PathEscape(known)
	}
	body, err := acct.call(ctx, http.MethodGet, path, nil, s.APIKey())
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("supervaizer: agent lookup %q: %w", a.slug, err)
		}
		s.logger.LogAttrs(ctx, slog.LevelWarn, "agent lookup failed; agent left unchanged",
			slog.String("agent_slug", a.slug), slog.String("error", err.Error()))
		return nil
	}
	d, err := parseAgentDetail(body)
	if err != nil {
		return fmt.Errorf("supervaizer: agent lookup %q: %w", a.slug, err)
	}
	switch {
	case d.id == "" && !linked:
		return fmt.Errorf("supervaizer: agent lookup %q: Studio returned no agent id and the agent is not linked (keys received: [%s])", a.slug, strings.Join(d.keys, ", "))
	case d.id != "" && linked && d.id != known:
		return fmt.Errorf("supervaizer: agent lookup %q: agent ID mismatch: linked to Studio agent %q, Studio returned %q", a.slug, known, d.id)
	}
	sa := StudioAgent{ID: known, Status: d.status, OnboardingStatus: d.onboarding}
	if !linked {
		if err := a.LinkStudioAgent(d.id); err != nil {
			return err
		}
		sa.ID = d.id
	}
	if d.onboarding == "configured" && d.hasEncrypted {
		params, err := decryptParameters(s.studio.key, d.encrypted)
		if err != nil {
			return fmt.Errorf("supervaizer: agent lookup %q: parameters_encrypted: %w", a.slug, err)
		}
		sa.Parameters = params
	}
	acct.setStudioAgent(a.slug, sa)
	s.logger.LogAttrs(ctx, slog.LevelInfo, "agent looked up in Studio", slog.String("agent_slug", a.slug),
		slog.String("studio_agent_id", sa.ID), slog.String("status", sa.Status),
		slog.String("onboarding_status", sa.OnboardingStatus), slog.Int("parameters", len(sa.Parameters)))
	return nil
}

// decryptParameters decrypts parameters_encrypted: standard base64 of the
// RSA-OAEP (SHA-256, MGF1-SHA-256) encrypted 32-byte AES key, a 16-byte IV and
// the AES-256-CBC ciphertext with PKCS#7 padding of a JSON array of
// {"name", "value"} objects (studio.md §7). Errors never include plaintext.
func decryptParameters(key *rsa.PrivateKey, encoded string) ([]AgentParameter, error) {
	data, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(encoded), ""))
	if err != nil {
		return nil, errors.New("not standard base64")
	}
	k := key.Size()
	if len(data) < k+2*aes.BlockSize || (len(data)-k-aes.BlockSize)%aes.BlockSize != 0 {
		return nil, fmt.Errorf("%d bytes is not an encrypted key of %d bytes, an IV and whole AES blocks", len(data), k)
	}
	aesKey, err := rsa.DecryptOAEP(sha256.New(), nil, key, data[:k], nil)
	if err != nil {
		return nil, errors.New("the AES key cannot be decrypted with the controller key (was it encrypted for SUPERVAIZER_PRIVATE_KEY?)")
	}
	if len(aesKey) != 32 {
		return nil, fmt.Errorf("the AES key has %d bytes, want 32", len(aesKey))
	}
	block, err := aes.NewCipher(aesKey)
	if err != nil {
		return nil, errors.New("invalid AES key")
	}
	iv, ct := data[k:k+aes.BlockSize], data[k+aes.BlockSize:]
	plain := make([]byte, len(ct))
	cipher.NewCBCDecrypter(block, iv).CryptBlocks(plain, ct)
	n := int(plain[len(plain)-1])
	if n == 0 || n > aes.BlockSize || !bytes.Equal(plain[len(plain)-n:], bytes.Repeat([]byte{byte(n)}, n)) {
		return nil, errors.New("invalid PKCS#7 padding")
	}
	return parseParameters(plain[:len(plain)-n])
}

// parseParameters reads the decrypted JSON array of {"name", "value"} objects.
func parseParameters(plain []byte) ([]AgentParameter, error) {
	var items []json.RawMessage
	if t := bytes.TrimSpace(plain); len(t) == 0 || t[0] != '[' || json.Unmarshal(t, &items) != nil {
		return nil, errors.New("the decrypted parameters are not a JSON array")
	}
	out := make([]AgentParameter, 0, len(items))
	seen := make(map[string]bool, len(items))
	for i, raw := range items {
		m, ok := jsonObject(raw)
		name, nameOK := jsonStr(m["name"])
		if !ok || !nameOK || strings.TrimSpace(name) == "" {
			return nil, fmt.Errorf("decrypted parameter %d is not an object with a non-blank string name", i)
		}
		if seen[name] {
			return nil, fmt.Errorf("decrypted parameter %q is listed twice", name)
		}
		seen[name] = true
		p := AgentParameter{Name: name}
		switch v := bytes.TrimSpace(m["value"]); {
		case len(v) == 0 || bytes.Equal(v, []byte("null")):
		case v[0] == '"':
			p.Value, _ = jsonStr(v)
		default:
			var buf bytes.Buffer
			if json.Compact(&buf, v) != nil {
				return nil, fmt.Errorf("decrypted parameter %q has an invalid value", name)
			}
			p.Value = buf.String()
		}
		out = append(out, p)
	}
	return out, nil
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
// handshake and the agent lookup) in the background; failures are logged
// (controller.md §12, studio.md §11).
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
		if _, ok := jsonObject(raw); !ok || json.Unmarshal(raw, &req) != nil {
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
	reason = truncateRunes(reason, maxLoggedReason)
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
