package studio

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/internal/redact"
)

// Environment variables of the Studio registration.
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

// ErrHandshake wraps every failure of the registration handshake;
// the message names what is wrong, never the key.
var ErrHandshake = errors.New("supervaizer: Studio registration handshake failed")

// KeyFingerprint is what the SDK logs in place of a key, and what Studio
// reports of the key it stored: the first 12 hexadecimal characters of the
// SHA-256 of its UTF-8 bytes.
func KeyFingerprint(key string) string { return redact.Fingerprint(key) }

// ParseControllerKey reads an RSA private key in PEM (PKCS#8 or PKCS#1), as
// SUPERVAIZER_PRIVATE_KEY holds it. A value whose line breaks were written as
// the two characters \n is accepted. The key must have at least
// [ControllerKeyBits] bits.
func ParseControllerKey(raw string) (*rsa.PrivateKey, error) {
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
	return k, CheckControllerKey(k)
}

// CheckControllerKey reports whether k is a valid RSA key of at least
// [ControllerKeyBits] bits.
func CheckControllerKey(k *rsa.PrivateKey) error {
	if k.N == nil || k.N.BitLen() < ControllerKeyBits {
		return fmt.Errorf("the controller RSA key must have at least %d bits", ControllerKeyBits)
	}
	return k.Validate()
}

// ServerURI is "server:" and the MAC address of the first non-loopback
// interface with a 6-byte hardware address, as 6 hyphen-separated uppercase
// hex pairs. Without one (containers without a network, sandboxes), the
// address is derived from the server id: the first 6 bytes of
// SHA-256("supervaizer-server-uri:" + serverID), marked locally administered
// and unicast. It is stable for a given SUPERVAIZER_SERVER_ID.
func ServerURI(serverID string) string {
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

// RegisterDetails is the details object of server.register.
type RegisterDetails struct {
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
	Agents                    []AgentRegistration `json:"agents"`
}

// AgentRegistration is an agent's registration payload in server.register.
// Optional strings are null when nil.
type AgentRegistration struct {
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

// LocalAgent is what the handshake checks of an agent the controller serves.
type LocalAgent struct {
	Slug     string
	StudioID string // the Studio agent id the agent is linked to, "" when not linked yet
}

// AgentLink binds a local agent slug to its Studio agent id.
type AgentLink struct{ Slug, ID string }

// Handshake is a verified registration handshake.
type Handshake struct {
	ServerID string
	Audience string      // the audience of the workspace tokens Studio mints
	Links    []AgentLink // in local agent order
}

// KeyMismatchError is a handshake in which Studio did not confirm it stored
// the controller API key. Its fields are what the controller logs; none is a
// secret.
type KeyMismatchError struct {
	ServerID, LocalFingerprint, StoredFingerprint, Reason string
}

// Error names the mismatch and the fingerprints, never the key.
func (e *KeyMismatchError) Error() string {
	return fmt.Sprintf("%v: Studio did not confirm it stored this controller's API key (controller_api_key_match is not true; server_id %q, reason %q, local key fingerprint %s, Studio's stored fingerprint %q); check SUPERVAIZER_API_KEY",
		ErrHandshake, e.ServerID, e.Reason, e.LocalFingerprint, e.StoredFingerprint)
}

// Unwrap returns [ErrHandshake].
func (e *KeyMismatchError) Unwrap() error { return ErrHandshake }

func handshakeErr(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrHandshake}, args...)...)
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

// parseHandshake runs the checks of the protocol in order on the
// server.register response. Workspace authorization is always enabled on a
// Studio-attached controller (NewServer enforces it), so check 4 always runs.
// Nothing is applied here: the caller installs the audience and the links
// only when every check passed.
func parseHandshake(body []byte, localFingerprint, localAudience string, agents []LocalAgent) (*Handshake, error) {
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
		return nil, &KeyMismatchError{ServerID: serverID, LocalFingerprint: localFingerprint, StoredFingerprint: stored, Reason: reason}
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
	out := &Handshake{ServerID: serverID, Audience: aud}
	var missing []string
	for _, a := range agents {
		id, ok := bySlug[a.Slug]
		switch {
		case !ok:
			missing = append(missing, a.Slug)
		case a.StudioID != "" && a.StudioID != id:
			return nil, handshakeErr("agent id mismatch for agent %q: it is linked to Studio agent %q, the handshake binds %q", a.Slug, a.StudioID, id)
		default:
			out.Links = append(out.Links, AgentLink{Slug: a.Slug, ID: id})
		}
	}
	if len(missing) > 0 {
		return nil, handshakeErr("Studio returned no workspace-authorization binding for the agents: %s", strings.Join(missing, ", "))
	}
	return out, nil
}

// agentDetail is what the agent lookup reads.
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

// decryptParameters decrypts parameters_encrypted: standard base64 of the
// RSA-OAEP (SHA-256, MGF1-SHA-256) encrypted 32-byte AES key, a 16-byte IV and
// the AES-256-CBC ciphertext with PKCS#7 padding of a JSON array of
// {"name", "value"} objects. Errors never include plaintext.
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

// Register posts server.register (source: the server uri) with details and
// runs the handshake checks of the protocol in order on the answer: Studio
// stored details.APIKey (compared by fingerprint), the workspace-token
// audience is present and equals audience when that is set, and every local
// agent is bound to a Studio agent id (equal to the one it is linked to, if
// any). The controller API key is masked in every error. A failed call is
// returned as is; a failed check wraps [ErrHandshake] (a key mismatch is a
// [*KeyMismatchError]). Nothing is applied: the caller installs the audience
// and the links.
func (c *Client) Register(ctx context.Context, uri string, details RegisterDetails, audience string, agents []LocalAgent) (*Handshake, error) {
	body, err := c.sendEvent(ctx, Event{Type: EventServerRegister, Source: ServerSource(uri), Details: details}, details.APIKey)
	if err != nil {
		return nil, fmt.Errorf("supervaizer: server.register: %w", err)
	}
	return parseHandshake(body, KeyFingerprint(details.APIKey), audience, agents)
}

// LookupFailedError is an agent lookup that got no usable answer: a non-2xx
// answer or a transport failure. The agent is left as it was.
type LookupFailedError struct{ Err error }

// Error is the error of the call.
func (e *LookupFailedError) Error() string { return e.Err.Error() }

// Unwrap returns the error of the call.
func (e *LookupFailedError) Unwrap() error { return e.Err }

// LookupAgent runs the agent lookup of the protocol for the agent slug:
// GET /agents/{linkedID} when the agent is linked, else
// /agents/by-slug/{slug}. The answer must carry an id unless the agent is
// linked, equal to linkedID when it is; the parameters of a configured agent
// are decrypted with key. On success the result is kept for [Client.Agent].
// A failed call is a [*LookupFailedError]. When the parameters cannot be
// decrypted, the Agent returned still carries the id Studio sent. mask lists
// values (besides the account key) masked in errors.
func (c *Client) LookupAgent(ctx context.Context, slug, linkedID string, key *rsa.PrivateKey, mask ...string) (Agent, error) {
	path := "/agents/by-slug/" + url.PathEscape(slug)
	if linkedID != "" {
		path = "/agents/" + url.PathEscape(linkedID)
	}
	body, err := c.call(ctx, http.MethodGet, path, nil, mask...)
	if err != nil {
		return Agent{}, &LookupFailedError{Err: err}
	}
	d, err := parseAgentDetail(body)
	if err != nil {
		return Agent{}, fmt.Errorf("supervaizer: agent lookup %q: %w", slug, err)
	}
	switch {
	case d.id == "" && linkedID == "":
		return Agent{}, fmt.Errorf("supervaizer: agent lookup %q: Studio returned no agent id and the agent is not linked (keys received: [%s])", slug, strings.Join(d.keys, ", "))
	case d.id != "" && linkedID != "" && d.id != linkedID:
		return Agent{}, fmt.Errorf("supervaizer: agent lookup %q: agent ID mismatch: linked to Studio agent %q, Studio returned %q", slug, linkedID, d.id)
	}
	sa := Agent{ID: linkedID, Status: d.status, OnboardingStatus: d.onboarding}
	if linkedID == "" {
		sa.ID = d.id
	}
	if d.onboarding == "configured" && d.hasEncrypted {
		params, err := decryptParameters(key, d.encrypted)
		if err != nil {
			return Agent{ID: sa.ID}, fmt.Errorf("supervaizer: agent lookup %q: parameters_encrypted: %w", slug, err)
		}
		sa.Parameters = params
	}
	c.setAgent(slug, sa)
	return sa, nil
}
