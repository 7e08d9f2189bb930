package main

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/internal/wsauth"
	"github.com/supervaize/supervaizer-go/internal/wstoken"
)

// keygen writes a key pair in a temporary folder and returns the private
// key's file.
func keygen(t *testing.T) string {
	t.Helper()
	priv := filepath.Join(t.TempDir(), defaultKeyFile)
	out, errOut, code := cli(t, "keygen", "-out", priv)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "SUPERVAIZER_WORKSPACE_AUTH_PUBLIC_KEY")
	return priv
}

func TestKeygenWritesAPairAndNeverOverwrites(t *testing.T) {
	t.Parallel()
	priv := keygen(t)
	pub := filepath.Join(filepath.Dir(priv), "supervaizer-key.pub.pem")
	st, err := os.Stat(priv)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	privPEM, err := os.ReadFile(priv)
	require.NoError(t, err)
	pubPEM, err := os.ReadFile(pub)
	require.NoError(t, err)
	key, err := wstoken.ParsePrivateKeyPEM(privPEM)
	require.NoError(t, err)
	want, err := wstoken.PublicKeyPEM(key.Public().(ed25519.PublicKey))
	require.NoError(t, err)
	assert.Equal(t, string(want), string(pubPEM), "the public key is the private key's")

	_, errOut, code := cli(t, "keygen", "-out", priv)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "keygen never overwrites a key")
	again, err := os.ReadFile(priv)
	require.NoError(t, err)
	assert.Equal(t, privPEM, again)

	// A public key alone is not overwritten either, and no private key is written.
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "k.pub.pem"), []byte("x"), 0o644))
	_, errOut, code = cli(t, "keygen", "-out", filepath.Join(dir, "k.pem"))
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "k.pub.pem exists")
	assert.NoFileExists(t, filepath.Join(dir, "k.pem"))

	_, errOut, code = cli(t, "keygen", "-out", filepath.Join(dir, "k.key"))
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "must end in .pem")
}

// directory serves one agent linked to a Studio agent id.
type directory struct{ slug, id string }

func (d directory) Serves(slug string) bool                  { return slug == d.slug }
func (d directory) StudioAgentID(slug string) (string, bool) { return d.id, slug == d.slug }

// TestTokenDefaultsVerify: token's default token, printed as the header line,
// carries the claims docs/authorization.md lists and verifies with the SDK's
// verifier configured as docs/deploying.md's standalone controller (issuer,
// server id and Studio agent id of the defaults, keygen's public key); the
// flags change each claim.
func TestTokenDefaultsVerify(t *testing.T) {
	t.Parallel()
	priv := keygen(t)
	pubPEM, err := os.ReadFile(publicKeyFile(priv))
	require.NoError(t, err)
	v, err := wsauth.New(wsauth.Settings{Enabled: true, Issuer: defaultIssuer, PublicKeyPEM: string(pubPEM)}, defaultServerID, directory{"hello-agent", defaultStudioAgentID})
	require.NoError(t, err)
	out, errOut, code := cli(t, "token", "-key", priv, "-agent", "hello-agent")
	require.Equal(t, 0, code, errOut)
	name, value, ok := strings.Cut(strings.TrimSpace(out), ": ")
	require.True(t, ok, out)
	assert.Equal(t, wsauth.HeaderName, name)
	for _, scope := range []string{"supervaizer/action.invoke", "supervaizer/surface.load"} {
		_, err = v.Verify(context.Background(), wsauth.Request{Header: value, WorkspaceID: defaultWorkspaceID, AgentSlug: "hello-agent", Scopes: []string{scope, "job.start"}})
		assert.NoError(t, err, scope)
	}
	claims := payload(t, wsauth.ExtractToken(value))
	for _, k := range []string{"iss", "aud", "sub", "grant_id", "workspace_id", "agent_id", "agent_slug", "server_id", "scopes", "iat", "exp", "jti"} {
		assert.Contains(t, claims, k)
	}
	assert.Equal(t, "supervaizer-server:"+defaultServerID, claims["aud"])
	assert.InDelta(t, defaultTTL.Seconds(), claims["exp"].(float64)-claims["iat"].(float64), 0)

	out, errOut, code = cli(t, "token", "-key", priv, "-agent", "a", "-raw", "-issuer", "https://studio.test", "-audience", "aud-1",
		"-server-id", "srv-9", "-agent-id", "sa-9", "-workspace", "ws-9", "-workspace-slug", "acme", "-grant-id", "g-9",
		"-scopes", "supervaizer/action.invoke, job.sync", "-ttl", "5m", "-kid", "k-1")
	require.Equal(t, 0, code, errOut)
	claims = payload(t, strings.TrimSpace(out))
	want := map[string]any{"iss": "https://studio.test", "aud": "aud-1", "server_id": "srv-9", "agent_id": "sa-9", "agent_slug": "a",
		"workspace_id": "ws-9", "workspace_slug": "acme", "grant_id": "g-9", "sub": "workspace-agent-grant:g-9",
		"scopes": []any{"supervaizer/action.invoke", "job.sync"}}
	for k, w := range want {
		assert.Equal(t, w, claims[k], k)
	}
	assert.InDelta(t, (5 * time.Minute).Seconds(), claims["exp"].(float64)-claims["iat"].(float64), 0)
	header := segment(t, strings.TrimSpace(out), 0)
	assert.Equal(t, map[string]any{"alg": "EdDSA", "typ": "JWT", "kid": "k-1"}, header)

	for args, msg := range map[string]string{
		"-key " + priv:                          "-agent SLUG is required",
		"-key " + priv + " -agent a -ttl 0s":    "-ttl must be positive",
		"-key " + priv + " -agent a -scopes ,,": "-scopes is empty",
	} {
		_, errOut, code := cli(t, append([]string{"token"}, strings.Fields(args)...)...)
		assert.Equal(t, 2, code, args)
		assert.Contains(t, errOut, msg, args)
	}
	_, errOut, code = cli(t, "token", "-key", publicKeyFile(priv), "-agent", "a")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "not PRIVATE KEY")
}

// payload decodes a token's claims.
func payload(t *testing.T, tok string) map[string]any { return segment(t, tok, 1) }

func segment(t *testing.T, tok string, i int) map[string]any {
	t.Helper()
	parts := strings.Split(tok, ".")
	require.Len(t, parts, 3)
	b, err := base64.RawURLEncoding.DecodeString(parts[i])
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	return m
}

// TestKeygenAndTokenDefaultsInTheCurrentFolder: with no flags, keygen writes
// supervaizer-key.pem and supervaizer-key.pub.pem in the current folder and
// token signs with the former (not parallel: it changes the folder).
func TestKeygenAndTokenDefaultsInTheCurrentFolder(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	_, errOut, code := cli(t, "keygen")
	require.Equal(t, 0, code, errOut)
	st, err := os.Stat(filepath.Join(dir, defaultKeyFile))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	assert.FileExists(t, filepath.Join(dir, "supervaizer-key.pub.pem"))
	out, errOut, code := cli(t, "token", "-agent", "my-agent", "-raw")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "my-agent", payload(t, strings.TrimSpace(out))["agent_slug"])
	_, errOut, code = cli(t, "keygen")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "supervaizer-key.pem exists")
}
