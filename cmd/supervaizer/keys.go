package main

import (
	"crypto/ed25519"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/supervaize/supervaizer-go/internal/wstoken"
)

// Defaults of keygen and token. A standalone controller configured as
// docs/deploying.md says (the issuer and server id below, keygen's public
// key, SUPERVAIZER_STUDIO_AGENT_ID=DefaultStudioAgentID) accepts token's
// default token for the job.start action and surface of its agent.
const (
	defaultKeyFile       = "supervaizer-key.pem"
	defaultIssuer        = "supervaizer-dev"
	defaultServerID      = "dev-server"
	defaultStudioAgentID = "dev-agent"
	defaultWorkspaceID   = "ws-dev"
	defaultGrantID       = "grant-dev"
	defaultTTL           = 10 * time.Minute
	defaultScopes        = "supervaizer/action.invoke,supervaizer/surface.load,job.start"
)

// headerName is the header that carries a workspace token.
const headerName = "X-Supervaize-Workspace-Authorization"

// publicKeyFile returns the public key's file beside the private key file:
// supervaizer-key.pem -> supervaizer-key.pub.pem.
func publicKeyFile(private string) string {
	return strings.TrimSuffix(private, ".pem") + ".pub.pem"
}

// runKeygen writes a new Ed25519 key pair: the private key (PKCS #8 PEM,
// mode 0600) and the public key (SubjectPublicKeyInfo PEM, mode 0644). It
// never overwrites a file.
func runKeygen(args []string, stdout, stderr io.Writer) error {
	fset := newFlagSet("keygen", "", stderr)
	out := fset.String("out", defaultKeyFile, "the private key's file; the public key goes beside it, .pem replaced by .pub.pem")
	if err := parse(fset, args, 0); err != nil {
		return err
	}
	if !strings.HasSuffix(*out, ".pem") {
		return fmt.Errorf("%w: -out %q: the file name must end in .pem", errUsage, *out)
	}
	pubFile := publicKeyFile(*out)
	for _, f := range []string{*out, pubFile} {
		if _, err := os.Lstat(f); err == nil {
			return fmt.Errorf("%s exists: keygen never overwrites a key (remove it, or choose another -out)", f)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	pub, priv, err := wstoken.GenerateKey()
	if err != nil {
		return err
	}
	privPEM, err := wstoken.PrivateKeyPEM(priv)
	if err != nil {
		return err
	}
	pubPEM, err := wstoken.PublicKeyPEM(pub)
	if err != nil {
		return err
	}
	if err := writeNew(*out, privPEM, 0o600); err != nil {
		return err
	}
	if err := writeNew(pubFile, pubPEM, 0o644); err != nil {
		_ = os.Remove(*out) // no private key without its public half
		return err
	}
	fmt.Fprintf(stdout, "wrote %s (private key, mode 0600: keep it secret) and %s (public key)\n", *out, pubFile)
	fmt.Fprintf(stdout, "configure the controller with SUPERVAIZER_WORKSPACE_AUTH_PUBLIC_KEY=\"$(cat %s)\"\n", pubFile)
	return nil
}

// writeNew creates name with data and mode perm, failing if it exists.
func writeNew(name string, data []byte, perm os.FileMode) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		_ = os.Remove(name)
		return err
	}
	return f.Close()
}

// tokenFlags are the claims of a good token, shared by token and check.
type tokenFlags struct {
	keyFile       string
	kid           string
	issuer        string
	audience      string
	serverID      string
	agentID       string
	agentSlug     string
	workspace     string
	workspaceSlug string
	grantID       string
	scopes        string
	ttl           time.Duration
}

// register declares the flags on fs; keyDefault is -key's default.
func (tf *tokenFlags) register(fs *flag.FlagSet, keyDefault string) {
	fs.StringVar(&tf.keyFile, "key", keyDefault, "the Ed25519 private key (PEM, from supervaizer keygen) that signs tokens")
	fs.StringVar(&tf.kid, "kid", "", "the kid header of tokens (needed when the controller reads keys from a JWKS)")
	fs.StringVar(&tf.issuer, "issuer", defaultIssuer, "iss: the controller's SUPERVAIZER_WORKSPACE_AUTH_ISSUER")
	fs.StringVar(&tf.audience, "audience", "", "aud (default supervaizer-server:<server id>, or SUPERVAIZER_WORKSPACE_AUTH_AUDIENCE)")
	fs.StringVar(&tf.serverID, "server-id", defaultServerID, "server_id: the controller's SUPERVAIZER_SERVER_ID")
	fs.StringVar(&tf.agentID, "agent-id", defaultStudioAgentID, "agent_id: the Studio agent id (the controller's SUPERVAIZER_STUDIO_AGENT_ID)")
	fs.StringVar(&tf.workspace, "workspace", defaultWorkspaceID, "workspace_id: the workspace of the calls")
	fs.StringVar(&tf.workspaceSlug, "workspace-slug", "", "workspace_slug (optional)")
	fs.StringVar(&tf.grantID, "grant-id", defaultGrantID, "grant_id (sub is workspace-agent-grant:<grant id>)")
	fs.DurationVar(&tf.ttl, "ttl", defaultTTL, "lifetime: exp = iat + ttl")
}

// claims returns the claims of a good token for agentSlug with scopes, valid
// from now for the flags' TTL.
func (tf *tokenFlags) claims(agentSlug string, scopes []string, now time.Time) wstoken.Claims {
	aud := tf.audience
	if aud == "" {
		aud = wstoken.AudiencePrefix + tf.serverID
	}
	now = now.Truncate(time.Second)
	return wstoken.Claims{
		Issuer: tf.issuer, Audience: aud, Subject: "workspace-agent-grant:" + tf.grantID,
		GrantID: tf.grantID, WorkspaceID: tf.workspace, WorkspaceSlug: tf.workspaceSlug,
		AgentID: tf.agentID, AgentSlug: agentSlug, ServerID: tf.serverID, Scopes: scopes,
		IssuedAt: now, ExpiresAt: now.Add(tf.ttl), JTI: wstoken.NewJTI(),
	}
}

// loadKey reads the private key of -key.
func (tf *tokenFlags) loadKey() (ed25519.PrivateKey, error) {
	data, err := os.ReadFile(tf.keyFile)
	if err != nil {
		return nil, fmt.Errorf("read the signing key: %w", err)
	}
	key, err := wstoken.ParsePrivateKeyPEM(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", tf.keyFile, err)
	}
	return key, nil
}

// splitList splits a comma-separated list, dropping blank entries.
func splitList(s string) []string {
	var out []string
	for part := range strings.SplitSeq(s, ",") {
		if p := strings.TrimSpace(part); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// runToken prints the header line of a workspace token signed with the
// private key.
func runToken(args []string, stdout, stderr io.Writer) error {
	fset := newFlagSet("token", "", stderr)
	var tf tokenFlags
	tf.register(fset, defaultKeyFile)
	fset.StringVar(&tf.agentSlug, "agent", "", "agent_slug: the slug of the agent called (required)")
	fset.StringVar(&tf.scopes, "scopes", defaultScopes, "scopes, comma-separated: the JSON-RPC methods and the action and surface ids allowed")
	raw := fset.Bool("raw", false, "print the token alone, not the header line")
	if err := parse(fset, args, 0); err != nil {
		return err
	}
	if tf.agentSlug == "" {
		return fmt.Errorf("%w: -agent SLUG is required (the agent_slug of the calls, e.g. hello-agent)", errUsage)
	}
	if tf.ttl <= 0 {
		return fmt.Errorf("%w: -ttl must be positive", errUsage)
	}
	scopes := splitList(tf.scopes)
	if len(scopes) == 0 {
		return fmt.Errorf("%w: -scopes is empty (a token without scopes is invalid)", errUsage)
	}
	key, err := tf.loadKey()
	if err != nil {
		return err
	}
	tok, err := wstoken.Sign(key, tf.kid, tf.claims(tf.agentSlug, scopes, time.Now()))
	if err != nil {
		return err
	}
	if *raw {
		fmt.Fprintln(stdout, tok)
		return nil
	}
	fmt.Fprintf(stdout, "%s: Bearer %s\n", headerName, tok)
	return nil
}
