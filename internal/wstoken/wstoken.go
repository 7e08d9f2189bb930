// Package wstoken writes what a Studio signs: Ed25519 key pairs as PEM and
// workspace authorization tokens (EdDSA JWTs with the claims of the
// workspace-token rules, docs/authorization.md). The supervaizer command's
// keygen, token and check use it; internal/wsauth, the SDK's verifier, is
// what its tests check the tokens against.
//
// Tokens are signed by github.com/golang-jwt/jwt/v5, the library the
// verifier parses them with. A token is a bearer credential: never log one.
package wstoken

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// AudiencePrefix prefixes the server id in the audience a controller
// expects by default: "supervaizer-server:<server id>".
const AudiencePrefix = "supervaizer-server:"

// Claims are the claims of a workspace authorization token. [Sign] writes
// exactly these: a zero field is absent from the token (nil Scopes is absent,
// an empty non-nil Scopes is []), Set then writes raw values over them and
// Omit finally removes claims by name, so a conformance check can produce any
// payload.
type Claims struct {
	Issuer            string    // iss
	Audience          string    // aud
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

// Payload returns the JSON payload of the claims.
func (c Claims) Payload() map[string]any {
	m := make(map[string]any, 16)
	str := func(name, v string) {
		if v != "" {
			m[name] = v
		}
	}
	str("iss", c.Issuer)
	str("aud", c.Audience)
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

// Sign signs c with key (alg EdDSA, typ JWT, and kid when not empty) and
// returns the compact token.
func Sign(key ed25519.PrivateKey, kid string, c Claims) (string, error) {
	if len(key) != ed25519.PrivateKeySize {
		return "", errors.New("wstoken: the signing key is not an Ed25519 private key")
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodEdDSA, jwt.MapClaims(c.Payload()))
	if kid != "" {
		tok.Header["kid"] = kid
	}
	return tok.SignedString(key)
}

// NewJTI returns a random token id ("tok-" and 24 hex digits).
func NewJTI() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return "tok-" + hex.EncodeToString(b[:])
}

// GenerateKey returns a new Ed25519 key pair.
func GenerateKey() (ed25519.PublicKey, ed25519.PrivateKey, error) {
	return ed25519.GenerateKey(rand.Reader)
}

// PrivateKeyPEM encodes key as a PKCS #8 "PRIVATE KEY" PEM block, the form
// openssl genpkey -algorithm ed25519 writes.
func PrivateKeyPEM(key ed25519.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// PublicKeyPEM encodes key as a SubjectPublicKeyInfo "PUBLIC KEY" PEM block,
// the form SUPERVAIZER_WORKSPACE_AUTH_PUBLIC_KEY takes.
func PublicKeyPEM(key ed25519.PublicKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), nil
}

// ParsePrivateKeyPEM decodes the first PEM block of data as a PKCS #8
// Ed25519 private key.
func ParsePrivateKeyPEM(data []byte) (ed25519.PrivateKey, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, errors.New("no PEM block found")
	}
	if block.Type != "PRIVATE KEY" {
		return nil, fmt.Errorf("a PEM block of type %q, not PRIVATE KEY (PKCS #8)", block.Type)
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, err
	}
	key, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("a %T, not an Ed25519 private key", k)
	}
	return key, nil
}
