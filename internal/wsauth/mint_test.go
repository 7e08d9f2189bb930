package wsauth

import (
	"bytes"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Reusable token-minting helpers and fixtures for this package's tests.

const (
	testIssuer        = "https://studio.supervaize.com"
	testServerID      = "studio-server-1"
	testAudience      = AudiencePrefix + testServerID
	testAgentSlug     = "research-agent"
	testAgentID       = "studio-agent-42"
	testUnlinkedAgent = "unlinked-agent"
	testWorkspaceID   = "ws-1"
	testWorkspaceSlug = "acme"
	testKID           = "grant-key-2026-10"
	testIAT           = 1791700000
	testEXP           = 1791700600
	testJWKSPath      = "/jwks.json"
)

// testNow lies between testIAT and testEXP.
var testNow = time.Unix(1791700300, 0)

// testInvokeScope is the first required scope of an action call.
const testInvokeScope = "supervaizer/action.invoke"

var testScopes = []string{testInvokeScope, "job.start"}

// testKey is a deterministic Ed25519 key pair.
type testKey struct {
	priv ed25519.PrivateKey
	pub  ed25519.PublicKey
}

func newTestKey(seed byte) testKey {
	priv := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{seed}, ed25519.SeedSize))
	return testKey{priv: priv, pub: priv.Public().(ed25519.PublicKey)}
}

var (
	mainKey  = newTestKey(1) // the key the verifiers trust
	otherKey = newTestKey(2) // a key nobody trusts
)

// pem returns the public key in PEM SubjectPublicKeyInfo form.
func (k testKey) pem(t testing.TB) string {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(k.pub)
	require.NoError(t, err)
	return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
}

// jwk returns the public key as an OKP/Ed25519 JWK.
func (k testKey) jwk(kid string) map[string]any {
	return map[string]any{"kty": "OKP", "crv": "Ed25519", "kid": kid, "alg": "EdDSA", "use": "sig", "x": b64(k.pub)}
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// validHeader returns a header that verifies with either key source.
func validHeader() map[string]any {
	return map[string]any{"alg": "EdDSA", "typ": "JWT", "kid": testKID}
}

// validClaims returns the claims of the workspace-token rules, valid at testNow for
// the request of testRequest.
func validClaims() map[string]any {
	return map[string]any{
		"iss":                 testIssuer,
		"aud":                 testAudience,
		"sub":                 "workspace-agent-grant:grant-01",
		"grant_id":            "grant-01",
		"workspace_id":        testWorkspaceID,
		"workspace_slug":      testWorkspaceSlug,
		"agent_id":            testAgentID,
		"agent_slug":          testAgentSlug,
		"server_id":           testServerID,
		"scopes":              []any{"supervaizer/surface.load", testInvokeScope, "job.start", "resource.contacts.list"},
		"agent_workspace_ref": "acme-prod",
		"iat":                 testIAT,
		"exp":                 testEXP,
		"jti":                 "tok-9c1e",
	}
}

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// signRaw builds a compact JWS from header and payload bytes used verbatim,
// signed with priv.
func signRaw(priv ed25519.PrivateKey, header, payload string) string {
	signing := b64([]byte(header)) + "." + b64([]byte(payload))
	return signing + "." + b64(ed25519.Sign(priv, []byte(signing)))
}

// mint signs header and claims with priv.
func mint(t testing.TB, priv ed25519.PrivateKey, header, claims map[string]any) string {
	t.Helper()
	return signRaw(priv, mustJSON(t, header), mustJSON(t, claims))
}

// mintWith signs the valid header and claims with mainKey after mod (if any)
// changed them.
func mintWith(t testing.TB, mod func(h, c map[string]any)) string {
	t.Helper()
	h, c := validHeader(), validClaims()
	if mod != nil {
		mod(h, c)
	}
	return mint(t, mainKey.priv, h, c)
}

// testRequest is an action call matching validClaims.
func testRequest(tok string) Request {
	return Request{
		Header:        "Bearer " + tok,
		WorkspaceID:   testWorkspaceID,
		WorkspaceSlug: testWorkspaceSlug,
		AgentSlug:     testAgentSlug,
		Scopes:        testScopes,
	}
}

// testDir serves testAgentSlug (linked to testAgentID) and testUnlinkedAgent
// (no Studio id yet).
type testDir struct {
	mu  sync.RWMutex
	ids map[string]string // slug → Studio id ("" = not linked)
}

func newTestDir() *testDir {
	return &testDir{ids: map[string]string{testAgentSlug: testAgentID, testUnlinkedAgent: ""}}
}

func (d *testDir) Serves(slug string) bool {
	d.mu.RLock()
	defer d.mu.RUnlock()
	_, ok := d.ids[slug]
	return ok
}

func (d *testDir) StudioAgentID(slug string) (string, bool) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	id := d.ids[slug]
	return id, id != ""
}

// testClock is a settable clock.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func newTestClock(t time.Time) *testClock { return &testClock{t: t} }

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

func (c *testClock) Advance(d time.Duration) { c.Set(c.Now().Add(d)) }

// pemSettings trusts mainKey through a PEM.
func pemSettings(t testing.TB) Settings {
	return Settings{Enabled: true, Issuer: testIssuer, PublicKeyPEM: mainKey.pem(t)}
}

// newPEMVerifier returns a verifier trusting mainKey by PEM, at testNow.
func newPEMVerifier(t testing.TB, opts ...Option) *Verifier {
	t.Helper()
	opts = append([]Option{WithClock(func() time.Time { return testNow })}, opts...)
	v, err := New(pemSettings(t), testServerID, newTestDir(), opts...)
	require.NoError(t, err)
	return v
}

// jwksServer serves a JWKS document and counts fetches.
type jwksServer struct {
	*httptest.Server
	mu      sync.Mutex
	status  int
	body    []byte
	paths   []string
	fetches atomic.Int64
	gate    chan struct{} // when non-nil, requests wait for it to close
}

// newJWKSServer serves {"keys": keys} at testJWKSPath.
func newJWKSServer(t testing.TB, keys ...any) *jwksServer {
	t.Helper()
	s := &jwksServer{status: http.StatusOK}
	s.setKeys(t, keys...)
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.fetches.Add(1)
		s.mu.Lock()
		s.paths = append(s.paths, r.URL.RequestURI())
		status, body, gate := s.status, s.body, s.gate
		s.mu.Unlock()
		if gate != nil {
			<-gate
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write(body)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *jwksServer) setKeys(t testing.TB, keys ...any) {
	s.setBody(http.StatusOK, []byte(mustJSON(t, map[string]any{"keys": keys})))
}

func (s *jwksServer) setBody(status int, body []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status, s.body = status, body
}

func (s *jwksServer) setGate(gate chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gate = gate
}

func (s *jwksServer) requestPaths() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.paths...)
}

func (s *jwksServer) url() string { return s.URL + testJWKSPath }

// newJWKSVerifier returns a verifier using the JWKS of url, with clock.
func newJWKSVerifier(t testing.TB, url string, clock func() time.Time, opts ...Option) *Verifier {
	t.Helper()
	opts = append([]Option{WithClock(clock)}, opts...)
	v, err := New(Settings{Enabled: true, Issuer: testIssuer, JWKSURL: url}, testServerID, newTestDir(), opts...)
	require.NoError(t, err)
	return v
}
