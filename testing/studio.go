package testing

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	supervaizer "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/contracts"
)

// Defaults of the fake Studio and of the requests a [TestServer] builds.
const (
	// DefaultIssuer is the iss of the tokens a [FakeStudio] mints.
	DefaultIssuer = "https://studio.supervaize.test"
	// DefaultServerID is the controller a new [FakeStudio] is bound to, and
	// the server id of a [TestServer].
	DefaultServerID = "studio-server-test"
	// DefaultGrantID is the grant_id of minted tokens.
	DefaultGrantID = "grant-test"
	// DefaultWorkspaceID and DefaultWorkspaceSlug are the workspace of the
	// requests a TestServer builds and of grants that name no workspace.
	DefaultWorkspaceID   = "ws-test"
	DefaultWorkspaceSlug = "test-workspace"
	// DefaultUserID is the actor of the requests a TestServer builds.
	DefaultUserID = "user-test"
	// DefaultMissionID is the mission of the requests a TestServer builds.
	DefaultMissionID = "mission-test"
	// DefaultAPIKey is the transport key (X-API-Key) of a TestServer.
	DefaultAPIKey = "svtest-api-key"
	// TokenLifetime is the lifetime of minted tokens (exp = iat + TokenLifetime).
	TokenLifetime = 10 * time.Minute
)

// audiencePrefix prefixes the server id in the expected audience.
const audiencePrefix = "supervaizer-server:"

// DefaultStudioAgentID returns the Studio agent id a [FakeStudio] gives an agent
// that was not linked to an explicit id: "studio-agent-" + agentSlug.
func DefaultStudioAgentID(agentSlug string) string { return "studio-agent-" + agentSlug }

// FakeStudio is a fake Supervaize Studio for tests: it holds Ed25519 signing
// keys, serves them as a JWKS, and mints real workspace authorization tokens
// (EdDSA JWTs) that the SDK's verifier accepts. It is
// bound to one controller (its server id, [DefaultServerID] unless
// [FakeStudio.Settings] names another) and remembers the Studio agent id of
// each agent it linked. It is safe for concurrent use.
//
// The JWKS publishes every key the fake Studio has signed with, plus the next
// key, ahead of its use: a verifier that fetched the set after the previous
// rotation resolves the key of a [FakeStudio.RotateKey] without refetching,
// which the SDK rate-limits.
type FakeStudio struct {
	t testing.TB

	mu       sync.Mutex
	keys     []signingKey // in creation order; keys[cur] signs, the last one is the next key
	cur      int
	serverID string
	agents   map[string]string     // agent slug -> Studio agent id
	bindings map[bindingKey]string // (agent slug, workspace id) -> agent_workspace_ref
	jwksSrv  *httptest.Server
}

type signingKey struct {
	kid  string
	priv ed25519.PrivateKey
}

type bindingKey struct{ agentSlug, workspaceID string }

// NewFakeStudio returns a fake Studio with a fresh Ed25519 key pair (and the
// pre-published next key), bound to [DefaultServerID]. Failures end the test
// through t; the JWKS server, if started, is closed by t.Cleanup.
func NewFakeStudio(t testing.TB) *FakeStudio {
	t.Helper()
	s := &FakeStudio{
		t:        t,
		serverID: DefaultServerID,
		agents:   map[string]string{},
		bindings: map[bindingKey]string{},
	}
	s.keys = []signingKey{s.newKey(1), s.newKey(2)}
	t.Cleanup(func() {
		s.mu.Lock()
		srv := s.jwksSrv
		s.mu.Unlock()
		if srv != nil {
			srv.Close()
		}
	})
	return s
}

func (s *FakeStudio) newKey(n int) signingKey {
	s.t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		s.t.Fatalf("svtest: generate an Ed25519 key: %v", err)
	}
	return signingKey{kid: fmt.Sprintf("fake-studio-key-%d", n), priv: priv}
}

// Issuer returns the iss of the minted tokens, [DefaultIssuer].
func (s *FakeStudio) Issuer() string { return DefaultIssuer }

// ServerID returns the server id of the controller the fake Studio is bound to.
func (s *FakeStudio) ServerID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.serverID
}

// KeyID returns the kid of the current signing key.
func (s *FakeStudio) KeyID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.keys[s.cur].kid
}

// PublicKeyPEM returns the current public key as PEM (SubjectPublicKeyInfo),
// the form of SUPERVAIZER_WORKSPACE_AUTH_PUBLIC_KEY. After [FakeStudio.RotateKey]
// a controller configured with the old PEM refuses new tokens
// (workspace_authorization_bad_signature).
func (s *FakeStudio) PublicKeyPEM() string {
	s.mu.Lock()
	pub := s.keys[s.cur].priv.Public()
	s.mu.Unlock()
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		s.t.Fatalf("svtest: encode the public key: %v", err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
}

// jwk is one OKP/Ed25519 entry of the JWKS.
type jwk struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	Kid string `json:"kid"`
	Alg string `json:"alg"`
	Use string `json:"use"`
	X   string `json:"x"`
}

// JWKS returns the JSON Web Key Set of the fake Studio:
// every key it has signed with and the next key, as OKP/Ed25519 entries with
// their kid.
func (s *FakeStudio) JWKS() []byte {
	s.mu.Lock()
	keys := make([]jwk, len(s.keys))
	for i, k := range s.keys {
		keys[i] = jwk{Kty: "OKP", Crv: "Ed25519", Kid: k.kid, Alg: "EdDSA", Use: "sig",
			X: base64.RawURLEncoding.EncodeToString(k.priv.Public().(ed25519.PublicKey))}
	}
	s.mu.Unlock()
	b, err := json.Marshal(struct {
		Keys []jwk `json:"keys"`
	}{keys})
	if err != nil {
		s.t.Fatalf("svtest: encode the JWKS: %v", err)
	}
	return b
}

// JWKSHandler returns an http.Handler serving [FakeStudio.JWKS] on GET (and
// HEAD); other methods get 405. It reflects rotations immediately.
func (s *FakeStudio) JWKSHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write(s.JWKS())
	})
}

// JWKSURL returns the URL of an httptest server serving [FakeStudio.JWKSHandler],
// started on first use and closed by t.Cleanup.
func (s *FakeStudio) JWKSURL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.jwksSrv == nil {
		s.jwksSrv = httptest.NewServer(s.JWKSHandler())
	}
	return s.jwksSrv.URL + "/.well-known/jwks.json"
}

// RotateKey makes the pre-published next key the signing key, publishes a new
// next key, and returns the new signing key's kid. Former keys stay in the
// JWKS, so tokens minted before the rotation keep verifying.
func (s *FakeStudio) RotateKey() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cur++
	s.keys = append(s.keys, s.newKey(len(s.keys)+1))
	return s.keys[s.cur].kid
}

// Settings binds the fake Studio to the controller serverID, as Studio's
// registration handshake does (tokens minted afterwards carry server_id
// serverID), and returns the matching workspace-authorization settings:
// enabled, issuer [DefaultIssuer], audience "supervaizer-server:<serverID>" and
// the current public key as PEM. Pass them to [supervaizer.WithWorkspaceAuth].
func (s *FakeStudio) Settings(serverID string) supervaizer.WorkspaceAuthSettings {
	set := s.bind(serverID)
	set.PublicKeyPEM = s.PublicKeyPEM()
	return set
}

// JWKSSettings is [FakeStudio.Settings] with the key taken from
// [FakeStudio.JWKSURL] instead of a PEM, the mode in which key rotation is
// picked up by the controller.
func (s *FakeStudio) JWKSSettings(serverID string) supervaizer.WorkspaceAuthSettings {
	set := s.bind(serverID)
	set.JWKSURL = s.JWKSURL()
	return set
}

func (s *FakeStudio) bind(serverID string) supervaizer.WorkspaceAuthSettings {
	s.mu.Lock()
	s.serverID = serverID
	s.mu.Unlock()
	return supervaizer.WorkspaceAuthSettings{Enabled: true, Issuer: s.Issuer(), Audience: audiencePrefix + serverID}
}

// Link links agent to the Studio agent id studioAgentID through Studio's
// registration handshake, as in production: a controller serving agent,
// attached to a fake Studio API of s, runs Server.Start (server.register,
// the handshake binding the agent's slug to studioAgentID, the agent
// lookup), then shuts down; the id becomes the agent_id of the tokens minted
// for the agent. An empty studioAgentID keeps the id the agent is already
// linked to, else uses [DefaultStudioAgentID]; an agent already linked to the
// id needs no handshake. A link that the SDK refuses (the agent is linked to
// another id: "agent id mismatch") ends the test.
//
// Call Link after registering the agent's handlers and before building the
// server that serves it, as [NewTestServer] does: like Server.Start, the
// handshake sends the agent's registration, which is final from then on; and
// the linking controller, like any server, gives an agent with rule
// checkpoints its own checkpoint runtime, which a server built afterwards
// replaces (once the linking controller has stopped, the agent also goes back
// to a server that served it before and still runs). A controller attached to a [FakeStudioAPI]
// ([NewAttachedTestServer], or Server.Start with
// [FakeStudioAPI.ServerOptions]) is linked by its own handshake and needs no
// Link.
func (s *FakeStudio) Link(agent *supervaizer.Agent, studioAgentID string) {
	s.t.Helper()
	if agent == nil {
		s.t.Fatalf("svtest: FakeStudio.Link: nil agent")
		return
	}
	known, linked := agent.StudioAgentID()
	if studioAgentID == "" {
		studioAgentID = known
		if !linked {
			studioAgentID = DefaultStudioAgentID(agent.Slug())
		}
	}
	s.mu.Lock()
	prev, had := s.agents[agent.Slug()]
	s.agents[agent.Slug()] = studioAgentID // what the handshake announces
	s.mu.Unlock()
	if linked && known == studioAgentID {
		return
	}
	if err := s.handshake(agent); err != nil {
		s.mu.Lock()
		if had {
			s.agents[agent.Slug()] = prev
		} else {
			delete(s.agents, agent.Slug())
		}
		s.mu.Unlock()
		s.t.Fatalf("svtest: FakeStudio.Link: %v", err)
	}
}

// StudioAgentID returns the Studio agent id of the agent slug: the id it was
// linked to, else [DefaultStudioAgentID].
func (s *FakeStudio) StudioAgentID(agentSlug string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id, ok := s.agents[agentSlug]; ok {
		return id
	}
	return DefaultStudioAgentID(agentSlug)
}

// BindWorkspace records the agent-side workspace binding of a grant: tokens
// minted for agentSlug in workspaceID carry agent_workspace_ref ref. An empty
// ref removes the binding.
func (s *FakeStudio) BindWorkspace(agentSlug, workspaceID, ref string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := bindingKey{agentSlug, workspaceID}
	if ref == "" {
		delete(s.bindings, k)
		return
	}
	s.bindings[k] = ref
}

// Grant is a Workspace Agent Grant: what a workspace admin accepted for an
// agent. [FakeStudio.Claims] turns it into token claims; its zero fields take
// the defaults listed below.
type Grant struct {
	ID                string   // grant_id; default DefaultGrantID
	WorkspaceID       string   // default DefaultWorkspaceID
	WorkspaceSlug     string   // default DefaultWorkspaceSlug when WorkspaceID is defaulted too
	AgentSlug         string   // the agent the grant is for; no default
	AgentID           string   // the Studio agent id; default FakeStudio.StudioAgentID(AgentSlug)
	ServerID          string   // default FakeStudio.ServerID()
	Scopes            []string // granted scopes; no default (an absent scopes claim is invalid)
	AgentWorkspaceRef string   // default: the ref recorded by FakeStudio.BindWorkspace, if any
}

// Claims are the claims of a workspace authorization token (the workspace-token rules
// the protocol). [FakeStudio.Mint] writes exactly these claims: a zero field is absent
// from the token (nil Scopes is absent, an empty non-nil Scopes is []), Set
// then writes raw values over them (wrong types, extra claims) and Omit
// finally removes claims by name, so negative tests can produce any payload.
type Claims struct {
	Issuer            string    // iss
	Audience          []string  // aud: one value is written as a string, several (or none, non-nil) as an array
	Subject           string    // sub
	GrantID           string    // grant_id
	WorkspaceID       string    // workspace_id
	WorkspaceSlug     string    // workspace_slug
	AgentID           string    // agent_id: the Studio agent id
	AgentSlug         string    // agent_slug
	ServerID          string    // server_id
	Scopes            []string  // scopes
	AgentWorkspaceRef string    // agent_workspace_ref
	IssuedAt          time.Time // iat, in whole seconds
	ExpiresAt         time.Time // exp, in whole seconds
	JTI               string    // jti

	Set  map[string]any // claims written after the fields, replacing them
	Omit []string       // claims removed last
}

// Grant returns the default grant of agentSlug: [DefaultGrantID] in the
// default workspace, for the agent's Studio agent id and the bound server, with
// the recorded workspace binding and no scopes.
func (s *FakeStudio) Grant(agentSlug string) Grant {
	return s.fillGrant(Grant{AgentSlug: agentSlug})
}

func (s *FakeStudio) fillGrant(g Grant) Grant {
	if g.ID == "" {
		g.ID = DefaultGrantID
	}
	if g.WorkspaceID == "" {
		g.WorkspaceID = DefaultWorkspaceID
		if g.WorkspaceSlug == "" {
			g.WorkspaceSlug = DefaultWorkspaceSlug
		}
	}
	if g.AgentID == "" && g.AgentSlug != "" {
		g.AgentID = s.StudioAgentID(g.AgentSlug)
	}
	if g.ServerID == "" {
		g.ServerID = s.ServerID()
	}
	if g.AgentWorkspaceRef == "" {
		s.mu.Lock()
		g.AgentWorkspaceRef = s.bindings[bindingKey{g.AgentSlug, g.WorkspaceID}]
		s.mu.Unlock()
	}
	g.Scopes = slices.Clone(g.Scopes)
	return g
}

// Claims returns the claims of a token for the grant g (zero fields take the
// defaults of [Grant]): iss [DefaultIssuer], aud "supervaizer-server:<server
// id>", sub "workspace-agent-grant:<grant id>", the grant's fields, iat now,
// exp now + [TokenLifetime] and a random jti. Modify them, then [FakeStudio.Mint].
func (s *FakeStudio) Claims(g Grant) Claims {
	g = s.fillGrant(g)
	now := time.Now().Truncate(time.Second)
	return Claims{
		Issuer:            s.Issuer(),
		Audience:          []string{audiencePrefix + g.ServerID},
		Subject:           "workspace-agent-grant:" + g.ID,
		GrantID:           g.ID,
		WorkspaceID:       g.WorkspaceID,
		WorkspaceSlug:     g.WorkspaceSlug,
		AgentID:           g.AgentID,
		AgentSlug:         g.AgentSlug,
		ServerID:          g.ServerID,
		Scopes:            g.Scopes,
		AgentWorkspaceRef: g.AgentWorkspaceRef,
		IssuedAt:          now,
		ExpiresAt:         now.Add(TokenLifetime),
		JTI:               s.randomJTI(),
	}
}

// ActionClaims returns the claims of a valid token for the action call req:
// its workspace (as is, even when empty) and agent, and exactly the scopes the
// call needs (supervaizer/action.invoke and the action id).
func (s *FakeStudio) ActionClaims(req contracts.ActionRequest) Claims {
	return s.callClaims(req.Workspace, req.AgentSlug, supervaizer.MethodActionInvoke, req.Action)
}

// SurfaceClaims returns the claims of a valid token for the surface load req:
// its workspace (as is, even when empty) and agent, and exactly the scopes the
// call needs (supervaizer/surface.load and the surface id).
func (s *FakeStudio) SurfaceClaims(req contracts.SurfaceRequest) Claims {
	return s.callClaims(req.Workspace, req.AgentSlug, supervaizer.MethodSurfaceLoad, req.Surface)
}

// callClaims returns the claims of a call; the workspace mirrors the request
// instead of taking the grant defaults.
func (s *FakeStudio) callClaims(ws contracts.WorkspaceRef, agentSlug string, scopes ...string) Claims {
	c := s.Claims(Grant{WorkspaceID: ws.ID, WorkspaceSlug: ws.Slug, AgentSlug: agentSlug, Scopes: scopes})
	if ws.ID == "" {
		c.WorkspaceID, c.WorkspaceSlug = "", ws.Slug
		s.mu.Lock()
		c.AgentWorkspaceRef = s.bindings[bindingKey{agentSlug, ""}]
		s.mu.Unlock()
	}
	return c
}

// TokenForAction mints a valid token for the action call req; see
// [FakeStudio.ActionClaims]. Send it in the
// [supervaizer.HeaderWorkspaceAuthorization] header.
func (s *FakeStudio) TokenForAction(req contracts.ActionRequest) string {
	return s.Mint(s.ActionClaims(req))
}

// TokenForSurface mints a valid token for the surface load req; see
// [FakeStudio.SurfaceClaims].
func (s *FakeStudio) TokenForSurface(req contracts.SurfaceRequest) string {
	return s.Mint(s.SurfaceClaims(req))
}

// Mint signs c with the current key (EdDSA, header kid set) and returns the
// compact token. Never log it outside tests.
func (s *FakeStudio) Mint(c Claims) string {
	s.t.Helper()
	s.mu.Lock()
	key := s.keys[s.cur]
	s.mu.Unlock()
	tok := jwt.NewWithClaims(jwt.SigningMethodEdDSA, jwt.MapClaims(c.payload()))
	tok.Header["kid"] = key.kid
	signed, err := tok.SignedString(key.priv)
	if err != nil {
		s.t.Fatalf("svtest: sign a workspace token: %v", err)
	}
	return signed
}

// payload returns the JSON payload of the claims.
func (c Claims) payload() map[string]any {
	m := make(map[string]any, 16)
	str := func(name, v string) {
		if v != "" {
			m[name] = v
		}
	}
	str("iss", c.Issuer)
	switch {
	case len(c.Audience) == 1:
		m["aud"] = c.Audience[0]
	case c.Audience != nil:
		m["aud"] = slices.Clone(c.Audience)
	}
	str("sub", c.Subject)
	str("grant_id", c.GrantID)
	str("workspace_id", c.WorkspaceID)
	str("workspace_slug", c.WorkspaceSlug)
	str("agent_id", c.AgentID)
	str("agent_slug", c.AgentSlug)
	str("server_id", c.ServerID)
	if c.Scopes != nil {
		m["scopes"] = slices.Clone(c.Scopes)
	}
	str("agent_workspace_ref", c.AgentWorkspaceRef)
	if !c.IssuedAt.IsZero() {
		m["iat"] = c.IssuedAt.Unix()
	}
	if !c.ExpiresAt.IsZero() {
		m["exp"] = c.ExpiresAt.Unix()
	}
	str("jti", c.JTI)
	for k, v := range c.Set {
		m[k] = v
	}
	for _, k := range c.Omit {
		delete(m, k)
	}
	return m
}

func (s *FakeStudio) randomJTI() string {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		s.t.Fatalf("svtest: random jti: %v", err)
	}
	return "tok-" + hex.EncodeToString(b[:])
}
