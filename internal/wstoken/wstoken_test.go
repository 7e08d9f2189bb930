package wstoken

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/internal/wsauth"
)

// directory serves one agent, linked to its Studio agent id.
type directory struct{ slug, id string }

func (d directory) Serves(slug string) bool { return slug == d.slug }
func (d directory) StudioAgentID(slug string) (string, bool) {
	return d.id, slug == d.slug && d.id != ""
}

func validClaims(now time.Time) Claims {
	return Claims{
		Issuer: "https://studio.example.test", Audience: AudiencePrefix + "srv-1", Subject: "workspace-agent-grant:g-1",
		GrantID: "g-1", WorkspaceID: "ws-1", WorkspaceSlug: "acme", AgentID: "studio-agent-1", AgentSlug: "hello-agent",
		ServerID: "srv-1", Scopes: []string{"supervaizer/action.invoke", "job.start"},
		IssuedAt: now, ExpiresAt: now.Add(10 * time.Minute), JTI: NewJTI(),
	}
}

// TestSignedTokensVerify: a token signed with Sign from a key that went
// through PrivateKeyPEM and ParsePrivateKeyPEM verifies with the SDK's
// verifier configured from PublicKeyPEM; each edited claim is refused with
// the code the spec gives it.
func TestSignedTokensVerify(t *testing.T) {
	t.Parallel()
	pub, priv, err := GenerateKey()
	require.NoError(t, err)
	privPEM, err := PrivateKeyPEM(priv)
	require.NoError(t, err)
	pubPEM, err := PublicKeyPEM(pub)
	require.NoError(t, err)
	parsed, err := ParsePrivateKeyPEM(privPEM)
	require.NoError(t, err)
	require.True(t, parsed.Equal(priv))

	now := time.Now().Truncate(time.Second)
	v, err := wsauth.New(wsauth.Settings{Enabled: true, Issuer: "https://studio.example.test", PublicKeyPEM: string(pubPEM)},
		"srv-1", directory{"hello-agent", "studio-agent-1"})
	require.NoError(t, err)
	req := wsauth.Request{WorkspaceID: "ws-1", WorkspaceSlug: "acme", AgentSlug: "hello-agent", Scopes: []string{"supervaizer/action.invoke", "job.start"}}
	tests := []struct {
		name string
		edit func(c *Claims)
		want wsauth.Code
	}{
		{"valid", func(*Claims) {}, ""},
		{"expired", func(c *Claims) { c.IssuedAt, c.ExpiresAt = now.Add(-time.Hour), now.Add(-10*time.Minute) }, wsauth.CodeExpired},
		{"wrong audience", func(c *Claims) { c.Audience = AudiencePrefix + "other" }, wsauth.CodeWrongAudience},
		{"wrong issuer", func(c *Claims) { c.Issuer = "https://other.test" }, wsauth.CodeWrongIssuer},
		{"missing scope", func(c *Claims) { c.Scopes = []string{"supervaizer/action.invoke"} }, wsauth.CodeMissingScope},
		{"other workspace", func(c *Claims) { c.WorkspaceID = "ws-2" }, wsauth.CodeWrongWorkspace},
		{"set and omit", func(c *Claims) { c.Set = map[string]any{"exp": "soon"}; c.Omit = []string{"grant_id"} }, wsauth.CodeInvalidClaims},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := validClaims(now)
			tt.edit(&c)
			tok, err := Sign(parsed, "k1", c)
			require.NoError(t, err)
			r := req
			r.Header = "Bearer " + tok
			_, err = v.Verify(context.Background(), r)
			if tt.want == "" {
				assert.NoError(t, err)
				return
			}
			var e *wsauth.Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, tt.want, e.Code)
		})
	}
}

func TestPayloadWritesOnlySetClaims(t *testing.T) {
	t.Parallel()
	assert.Empty(t, Claims{}.Payload())
	p := Claims{Scopes: []string{}, Audience: "a", Omit: []string{"aud"}}.Payload()
	assert.Equal(t, map[string]any{"scopes": []string{}}, p)
}

func TestParsePrivateKeyPEMRefuses(t *testing.T) {
	t.Parallel()
	rsaKey, err := rsa.GenerateKey(rand.Reader, 1024)
	require.NoError(t, err)
	der, err := x509.MarshalPKCS8PrivateKey(rsaKey)
	require.NoError(t, err)
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	pubPEM, err := PublicKeyPEM(pub)
	require.NoError(t, err)
	for name, data := range map[string][]byte{
		"not PEM":     []byte("hello"),
		"public key":  pubPEM,
		"RSA key":     pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}),
		"garbage DER": pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte{1, 2, 3}}),
	} {
		_, err := ParsePrivateKeyPEM(data)
		assert.Error(t, err, name)
	}
	_, err = Sign(ed25519.PrivateKey{1}, "", Claims{})
	assert.Error(t, err)
}

func FuzzParsePrivateKeyPEM(f *testing.F) {
	_, priv, err := GenerateKey()
	require.NoError(f, err)
	good, err := PrivateKeyPEM(priv)
	require.NoError(f, err)
	f.Add(good)
	f.Add([]byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		key, err := ParsePrivateKeyPEM(data)
		if err != nil {
			return
		}
		again, err := PrivateKeyPEM(key)
		require.NoError(t, err)
		back, err := ParsePrivateKeyPEM(again)
		require.NoError(t, err)
		assert.True(t, back.Equal(key))
	})
}
