package testing_test

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	supervaizer "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/errcode"
	svtest "github.com/supervaize/supervaizer-go/testing"
)

// callWith invokes req with the token; it returns the JSON-RPC error, if any.
func callWith(t *testing.T, ts *svtest.TestServer, req contracts.ActionRequest, token string) error {
	t.Helper()
	_, err := ts.InvokeWithToken(t.Context(), req, token)
	return err
}

// authCode returns data.code of a -32030 error, "" for nil.
func authCode(t *testing.T, err error) string {
	t.Helper()
	if err == nil {
		return ""
	}
	require.Equal(t, errcode.Unauthorized, supervaizer.CodeOf(err), "error %v", err)
	code := svtest.AuthCode(err)
	require.NotEmpty(t, code)
	return code
}

func TestFakeStudioTokens(t *testing.T) {
	t.Parallel()
	hour := time.Hour
	tests := []struct {
		name     string
		edit     func(c *svtest.Claims)
		wantCode string // "" means accepted
	}{
		{"valid", func(*svtest.Claims) {}, ""},
		{"audience array", func(c *svtest.Claims) { c.Audience = append(c.Audience, "other") }, ""},
		{"expired", func(c *svtest.Claims) {
			c.IssuedAt, c.ExpiresAt = time.Now().Add(-2*hour), time.Now().Add(-hour)
		}, "workspace_authorization_expired"},
		{"not yet valid", func(c *svtest.Claims) { c.IssuedAt = time.Now().Add(hour) }, "workspace_authorization_not_yet_valid"},
		{"another workspace", func(c *svtest.Claims) { c.WorkspaceID = "ws-other" }, "workspace_authorization_wrong_workspace"},
		{"another workspace slug", func(c *svtest.Claims) { c.WorkspaceSlug = "other" }, "workspace_authorization_wrong_workspace"},
		{"missing scope", func(c *svtest.Claims) { c.Scopes = []string{supervaizer.MethodActionInvoke} }, "workspace_authorization_missing_scope"},
		{"empty scopes", func(c *svtest.Claims) { c.Scopes = []string{} }, "workspace_authorization_invalid_claims"},
		{"absent scopes", func(c *svtest.Claims) { c.Omit = []string{"scopes"} }, "workspace_authorization_invalid_claims"},
		{"exp of the wrong type", func(c *svtest.Claims) { c.Set = map[string]any{"exp": "soon"} }, "workspace_authorization_invalid_claims"},
		{"wrong issuer", func(c *svtest.Claims) { c.Issuer = "https://evil.test" }, "workspace_authorization_wrong_issuer"},
		{"wrong audience", func(c *svtest.Claims) { c.Audience = []string{"supervaizer-server:other"} }, "workspace_authorization_wrong_audience"},
		{"wrong server", func(c *svtest.Claims) { c.ServerID = "other" }, "workspace_authorization_wrong_server"},
		{"wrong agent id", func(c *svtest.Claims) { c.AgentID = "studio-agent-other" }, "workspace_authorization_wrong_agent"},
		{"wrong agent slug", func(c *svtest.Claims) { c.AgentSlug = "other-agent" }, "workspace_authorization_wrong_agent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ts := svtest.NewTestServer(t, []*supervaizer.Agent{newServedAgent(t, startIdempotent)})
			req := ts.Request(echoAction, nil)
			c := ts.Studio.ActionClaims(req)
			tt.edit(&c)
			assert.Equal(t, tt.wantCode, authCode(t, callWith(t, ts, req, ts.Studio.Mint(c))))
		})
	}
}

func TestFakeStudioRefusals(t *testing.T) {
	t.Parallel()
	ts := svtest.NewTestServer(t, []*supervaizer.Agent{newServedAgent(t, startIdempotent)})
	req := ts.Request(echoAction, nil)

	t.Run("no token", func(t *testing.T) {
		assert.Equal(t, "workspace_authorization_missing", authCode(t, callWith(t, ts, req, "")))
	})
	t.Run("untrusted key", func(t *testing.T) {
		other := svtest.NewFakeStudio(t)
		other.Settings(ts.Studio.ServerID())
		assert.Equal(t, "workspace_authorization_bad_signature", authCode(t, callWith(t, ts, req, other.TokenForAction(req))))
	})
	t.Run("token for another call", func(t *testing.T) {
		tok := ts.Studio.TokenForAction(ts.Request(contracts.DefaultStartAction, nil))
		assert.Equal(t, "workspace_authorization_missing_scope", authCode(t, callWith(t, ts, req, tok)))
	})
	t.Run("rotated key with a PEM", func(t *testing.T) {
		studio := svtest.NewFakeStudio(t)
		pts := svtest.NewTestServerWithStudio(t, studio, []*supervaizer.Agent{newServedAgent(t, startIdempotent)})
		preq := pts.Request(echoAction, nil)
		require.NoError(t, callWith(t, pts, preq, studio.TokenForAction(preq)))
		studio.RotateKey()
		assert.Equal(t, "workspace_authorization_bad_signature", authCode(t, callWith(t, pts, preq, studio.TokenForAction(preq))))
	})
}

func TestFakeStudioVerifiedContext(t *testing.T) {
	t.Parallel()
	ts := svtest.NewTestServer(t, []*supervaizer.Agent{newServedAgent(t, startIdempotent)})
	ts.Studio.BindWorkspace(agentSlug, svtest.DefaultWorkspaceID, "acme-prod")
	res, err := ts.Invoke(t.Context(), ts.Request(echoAction, nil))
	require.NoError(t, err)
	require.Len(t, res.Effects, 1)
	assert.Equal(t, map[string]any{
		"grant_id":            svtest.DefaultGrantID,
		"agent_id":            svtest.DefaultStudioAgentID(agentSlug),
		"scopes":              []any{supervaizer.MethodActionInvoke, echoAction},
		"agent_workspace_ref": "acme-prod",
	}, res.Effects[0].Data)

	ts.Studio.BindWorkspace(agentSlug, svtest.DefaultWorkspaceID, "")
	res, err = ts.Invoke(t.Context(), ts.Request(echoAction, nil))
	require.NoError(t, err)
	assert.NotContains(t, res.Effects[0].Data, "agent_workspace_ref")
}

// countingJWKS serves the studio's JWKS and counts the fetches.
func countingJWKS(t *testing.T, studio *svtest.FakeStudio) (url string, fetches *atomic.Int32) {
	t.Helper()
	fetches = new(atomic.Int32)
	h := studio.JWKSHandler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/jwks.json", fetches
}

func TestFakeStudioJWKSMode(t *testing.T) {
	t.Parallel()
	studio := svtest.NewFakeStudio(t)
	settings := studio.JWKSSettings(studio.ServerID())
	require.NotEmpty(t, settings.JWKSURL)
	require.Empty(t, settings.PublicKeyPEM)
	url, fetches := countingJWKS(t, studio)
	settings.JWKSURL = url
	ts := svtest.NewTestServerWithStudio(t, studio, []*supervaizer.Agent{newServedAgent(t, startIdempotent)},
		supervaizer.WithWorkspaceAuth(settings))

	_, err := ts.Invoke(t.Context(), ts.Request(echoAction, nil))
	require.NoError(t, err)
	assert.Equal(t, int32(1), fetches.Load())

	before := studio.KeyID()
	after := studio.RotateKey()
	require.NotEqual(t, before, after)
	assert.Equal(t, after, studio.KeyID())
	_, err = ts.Invoke(t.Context(), ts.Request(echoAction, nil))
	require.NoError(t, err, "the rotated key was published before its use")
	assert.Equal(t, int32(1), fetches.Load(), "no refetch needed")

	c := ts.Studio.ActionClaims(ts.Request(echoAction, nil))
	tok := studio.Mint(c)
	assert.Equal(t, after, tokenHeader(t, tok)["kid"])
}

func TestFakeStudioJWKSURL(t *testing.T) {
	t.Parallel()
	studio := svtest.NewFakeStudio(t)
	ts := svtest.NewTestServerWithStudio(t, studio, []*supervaizer.Agent{newServedAgent(t, startIdempotent)},
		supervaizer.WithWorkspaceAuth(studio.JWKSSettings(studio.ServerID())))
	_, err := ts.Invoke(t.Context(), ts.Request(echoAction, nil))
	require.NoError(t, err)
	assert.Equal(t, studio.JWKSURL(), studio.JWKSURL(), "one server per studio")
}

func TestFakeStudioJWKSDocument(t *testing.T) {
	t.Parallel()
	studio := svtest.NewFakeStudio(t)
	type key struct {
		Kty, Crv, Kid, Alg, Use, X string
	}
	read := func() []key {
		var doc struct{ Keys []key }
		require.NoError(t, json.Unmarshal(studio.JWKS(), &doc))
		return doc.Keys
	}
	keys := read()
	require.Len(t, keys, 2, "the signing key and the next key")
	assert.Equal(t, studio.KeyID(), keys[0].Kid)
	assert.NotEqual(t, keys[0].Kid, keys[1].Kid)
	for _, k := range keys {
		assert.Equal(t, "OKP", k.Kty)
		assert.Equal(t, "Ed25519", k.Crv)
		assert.Equal(t, "EdDSA", k.Alg)
		assert.Equal(t, "sig", k.Use)
		x, err := base64.RawURLEncoding.DecodeString(k.X)
		require.NoError(t, err)
		assert.Len(t, x, 32)
	}
	next := keys[1].Kid
	assert.Equal(t, next, studio.RotateKey())
	keys = read()
	require.Len(t, keys, 3, "former keys stay published")
	assert.Contains(t, studio.PublicKeyPEM(), "-----BEGIN PUBLIC KEY-----")
}

func TestFakeStudioJWKSHandler(t *testing.T) {
	t.Parallel()
	studio := svtest.NewFakeStudio(t)
	tests := []struct {
		method   string
		wantCode int
	}{
		{http.MethodGet, http.StatusOK},
		{http.MethodHead, http.StatusOK},
		{http.MethodPost, http.StatusMethodNotAllowed},
	}
	for _, tt := range tests {
		t.Run(tt.method, func(t *testing.T) {
			w := httptest.NewRecorder()
			studio.JWKSHandler().ServeHTTP(w, httptest.NewRequest(tt.method, "/jwks.json", nil))
			assert.Equal(t, tt.wantCode, w.Code)
			if tt.method == http.MethodGet {
				assert.Equal(t, "application/json", w.Header().Get("Content-Type"))
				assert.JSONEq(t, string(studio.JWKS()), w.Body.String())
			}
		})
	}
}

// tokenPart decodes segment i of a compact JWT.
func tokenPart(t *testing.T, tok string, i int) map[string]any {
	t.Helper()
	parts := strings.Split(tok, ".")
	require.Len(t, parts, 3)
	raw, err := base64.RawURLEncoding.DecodeString(parts[i])
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	return m
}

func tokenHeader(t *testing.T, tok string) map[string]any  { return tokenPart(t, tok, 0) }
func tokenPayload(t *testing.T, tok string) map[string]any { return tokenPart(t, tok, 1) }

func TestFakeStudioMintGolden(t *testing.T) {
	t.Parallel()
	studio := svtest.NewFakeStudio(t)
	c := svtest.Claims{
		Issuer:            "https://studio.supervaize.com",
		Audience:          []string{"supervaizer-server:studio-server-1"},
		Subject:           "workspace-agent-grant:grant-01",
		GrantID:           "grant-01",
		WorkspaceID:       "ws-1",
		WorkspaceSlug:     "acme",
		AgentID:           "studio-agent-42",
		AgentSlug:         "research-agent",
		ServerID:          "studio-server-1",
		Scopes:            []string{"supervaizer/surface.load", "supervaizer/action.invoke", "job.start", "resource.contacts.list"},
		AgentWorkspaceRef: "acme-prod",
		IssuedAt:          time.Unix(1791700000, 0),
		ExpiresAt:         time.Unix(1791700600, 0),
		JTI:               "tok-9c1e",
	}
	tok := studio.Mint(c)
	assert.Equal(t, map[string]any{"alg": "EdDSA", "typ": "JWT", "kid": studio.KeyID()}, tokenHeader(t, tok))
	payload, err := json.Marshal(tokenPayload(t, tok))
	require.NoError(t, err)
	svtest.Golden(t, filepath.Join("testdata", "token_payload.golden.json"), payload)
}

func TestFakeStudioClaimsEdits(t *testing.T) {
	t.Parallel()
	studio := svtest.NewFakeStudio(t)
	base := studio.Claims(svtest.Grant{AgentSlug: agentSlug, Scopes: []string{"a"}})
	tests := []struct {
		name  string
		edit  func(c *svtest.Claims)
		check func(t *testing.T, p map[string]any)
	}{
		{"single audience is a string", func(*svtest.Claims) {}, func(t *testing.T, p map[string]any) {
			assert.Equal(t, "supervaizer-server:"+svtest.DefaultServerID, p["aud"])
		}},
		{"several audiences are an array", func(c *svtest.Claims) { c.Audience = []string{"a", "b"} }, func(t *testing.T, p map[string]any) {
			assert.Equal(t, []any{"a", "b"}, p["aud"])
		}},
		{"zero fields are absent", func(c *svtest.Claims) { c.Subject, c.JTI, c.IssuedAt = "", "", time.Time{} }, func(t *testing.T, p map[string]any) {
			assert.NotContains(t, p, "sub")
			assert.NotContains(t, p, "jti")
			assert.NotContains(t, p, "iat")
			assert.Contains(t, p, "exp")
		}},
		{"empty scopes stay", func(c *svtest.Claims) { c.Scopes = []string{} }, func(t *testing.T, p map[string]any) {
			assert.Equal(t, []any{}, p["scopes"])
		}},
		{"set replaces and adds", func(c *svtest.Claims) { c.Set = map[string]any{"grant_id": 7, "extra": true} }, func(t *testing.T, p map[string]any) {
			assert.Equal(t, float64(7), p["grant_id"])
			assert.Equal(t, true, p["extra"])
		}},
		{"omit wins over set", func(c *svtest.Claims) {
			c.Set, c.Omit = map[string]any{"agent_id": "x"}, []string{"agent_id", "exp"}
		}, func(t *testing.T, p map[string]any) {
			assert.NotContains(t, p, "agent_id")
			assert.NotContains(t, p, "exp")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := base
			tt.edit(&c)
			tt.check(t, tokenPayload(t, studio.Mint(c)))
		})
	}
}

func TestFakeStudioClaimsDefaults(t *testing.T) {
	t.Parallel()
	studio := svtest.NewFakeStudio(t)
	studio.BindWorkspace(agentSlug, "ws-2", "ref-2")

	c := studio.Claims(svtest.Grant{AgentSlug: agentSlug})
	assert.Equal(t, svtest.DefaultIssuer, c.Issuer)
	assert.Equal(t, []string{"supervaizer-server:" + svtest.DefaultServerID}, c.Audience)
	assert.Equal(t, "workspace-agent-grant:"+svtest.DefaultGrantID, c.Subject)
	assert.Equal(t, svtest.DefaultWorkspaceID, c.WorkspaceID)
	assert.Equal(t, svtest.DefaultWorkspaceSlug, c.WorkspaceSlug)
	assert.Equal(t, svtest.DefaultStudioAgentID(agentSlug), c.AgentID)
	assert.Equal(t, svtest.DefaultServerID, c.ServerID)
	assert.Nil(t, c.Scopes)
	assert.Empty(t, c.AgentWorkspaceRef)
	assert.Equal(t, svtest.TokenLifetime, c.ExpiresAt.Sub(c.IssuedAt))
	assert.WithinDuration(t, time.Now(), c.IssuedAt, 5*time.Second)
	assert.NotEqual(t, c.JTI, studio.Claims(svtest.Grant{}).JTI, "random jti")

	c = studio.Claims(svtest.Grant{AgentSlug: agentSlug, WorkspaceID: "ws-2", ServerID: "srv-9", Scopes: []string{"x"}})
	assert.Empty(t, c.WorkspaceSlug, "no default slug for an explicit workspace")
	assert.Equal(t, "ref-2", c.AgentWorkspaceRef)
	assert.Equal(t, []string{"supervaizer-server:srv-9"}, c.Audience)
	assert.Equal(t, []string{"x"}, c.Scopes)

	assert.Equal(t, svtest.Grant{
		ID: svtest.DefaultGrantID, WorkspaceID: svtest.DefaultWorkspaceID, WorkspaceSlug: svtest.DefaultWorkspaceSlug,
		AgentSlug: agentSlug, AgentID: svtest.DefaultStudioAgentID(agentSlug), ServerID: svtest.DefaultServerID,
	}, studio.Grant(agentSlug))

	set := studio.Settings("srv-9")
	assert.Equal(t, supervaizer.WorkspaceAuthSettings{
		Enabled: true, Issuer: svtest.DefaultIssuer, Audience: "supervaizer-server:srv-9", PublicKeyPEM: studio.PublicKeyPEM(),
	}, set)
	assert.Equal(t, "srv-9", studio.ServerID(), "Settings binds the studio")
}

func TestFakeStudioSurfaceClaims(t *testing.T) {
	t.Parallel()
	studio := svtest.NewFakeStudio(t)
	req := contracts.SurfaceRequest{AgentSlug: agentSlug, Surface: surfaceID, Workspace: contracts.WorkspaceRef{ID: "ws-3", Slug: "s3"}}
	c := studio.SurfaceClaims(req)
	assert.Equal(t, []string{supervaizer.MethodSurfaceLoad, surfaceID}, c.Scopes)
	assert.Equal(t, "ws-3", c.WorkspaceID)
	assert.Equal(t, "s3", c.WorkspaceSlug)
	p := tokenPayload(t, studio.TokenForSurface(req))
	assert.Equal(t, []any{supervaizer.MethodSurfaceLoad, surfaceID}, p["scopes"])
}

func TestFakeStudioLink(t *testing.T) {
	t.Parallel()
	studio := svtest.NewFakeStudio(t)
	a := newAgent(t, agentName)
	studio.Link(a, "studio-agent-42")
	id, ok := a.StudioAgentID()
	require.True(t, ok)
	assert.Equal(t, "studio-agent-42", id)
	assert.Equal(t, "studio-agent-42", studio.StudioAgentID(agentSlug))
	assert.Equal(t, svtest.DefaultStudioAgentID("unknown"), studio.StudioAgentID("unknown"))

	// An empty id keeps the existing link.
	other := svtest.NewFakeStudio(t)
	other.Link(a, "")
	assert.Equal(t, "studio-agent-42", other.StudioAgentID(agentSlug))

	rec := newRecordingTB(t)
	refusing := svtest.NewFakeStudio(rec)
	refusing.Link(a, "studio-agent-other")
	require.Len(t, rec.messages(), 1)
	assert.Contains(t, rec.messages()[0], "agent id mismatch")
	assert.Contains(t, rec.messages()[0], "registration handshake failed", "the SDK's handshake refused it")
	assert.Equal(t, svtest.DefaultStudioAgentID(agentSlug), refusing.StudioAgentID(agentSlug), "a refused link is not recorded")
	refusing.Link(nil, "x")
	assert.Len(t, rec.messages(), 2)
}

// TestFakeStudioLinkIsTheHandshake: Link goes through Server.Start and
// Studio's registration handshake, so the agent's registration is final
// afterwards, as in production.
func TestFakeStudioLinkIsTheHandshake(t *testing.T) {
	t.Parallel()
	a, err := supervaizer.NewAgent(supervaizer.AgentSpec{Name: "Auto Agent", Version: "1.0.0"})
	require.NoError(t, err)
	a.HandleAction(echoAction, echo)
	svtest.NewFakeStudio(t).Link(a, "studio-auto")
	id, ok := a.StudioAgentID()
	require.True(t, ok)
	assert.Equal(t, "studio-auto", id)
	require.NotNil(t, a.Registration(), "the handlers declared the registration Studio received")
	assert.True(t, a.Registration().Capabilities.HasAction(echoAction))
	assert.Panics(t, func() { a.HandleAction("late", echo) }, "the registration is final after the handshake")
}
