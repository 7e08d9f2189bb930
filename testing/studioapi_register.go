package testing

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/supervaize/supervaizer-go/studio"
)

// Agent statuses the lookup answers by default.
const (
	// DefaultAgentStatus is the status of an agent without [AgentDetail.Status].
	DefaultAgentStatus = "online"
	// OnboardingConfigured is the onboarding status of an agent whose
	// parameters Studio sends, the default when
	// [AgentDetail.Parameters] is set.
	OnboardingConfigured = "configured"
	// OnboardingPending is the default onboarding status of an agent without
	// parameters.
	OnboardingPending = "pending"
)

// KeyMismatchReason is the handshake reason of a controller key that differs
// from the one Studio stored ([FakeStudioAPI.ExpectControllerAPIKey]).
const KeyMismatchReason = "stored_controller_api_key_mismatch"

// StudioEvent is a controller event the fake received.
type StudioEvent struct {
	Seq        int               // position among all the requests (see [RecordedRequest])
	Type       string            // event_type, e.g. "agent.case.start"
	ObjectType string            // object_type
	Workspace  string            // workspace
	Source     map[string]string // source: {"server"}, {"agent"}, {"job"} or {"job", "case"}
	Details    json.RawMessage   // details, a JSON object as sent
}

// ServerRegistration is the details of a server.register event.
type ServerRegistration struct {
	Seq               int
	ServerID          string
	URL               string
	URI               string
	APIVersion        string
	ControllerVersion string
	Environment       string
	PublicKeyPEM      string            // the controller's RSA public key
	APIKey            string            // the controller's API key as sent: compare it, never log it
	Agents            []RegisteredAgent // details.agents, in order
	Details           json.RawMessage   // the whole details object
}

// RegisteredAgent is one agent payload of server.register.
type RegisteredAgent struct {
	Name          string
	ID            string // the legacy deterministic id
	Slug          string
	Version       string
	ServerAgentID string   // server_agent_id; "" when null
	BillingSKUs   []string // the SKUs of billing_catalog
	Raw           json.RawMessage
}

// AgentDetail configures what the agent lookup answers for an agent.
type AgentDetail struct {
	// Status is the agent's server status. Default: [DefaultAgentStatus].
	Status string
	// OnboardingStatus is the onboarding status. Default:
	// [OnboardingConfigured] when Parameters is set, else [OnboardingPending].
	OnboardingStatus string
	// Parameters are the agent's parameter values, sent in
	// parameters_encrypted: a JSON array of {"name", "value"} objects sorted by
	// name, encrypted for the controller's public key received in the last
	// server.register (RSA-OAEP SHA-256 AES-256 key, IV, AES-256-CBC with
	// PKCS#7, base64). Nil sends no parameters_encrypted.
	Parameters map[string]any
}

// SetAgent sets what the agent lookup answers for the agent slug. Agents
// without an AgentDetail are answered with the defaults, provided they were
// registered in server.register.
func (f *FakeStudioAPI) SetAgent(slug string, d AgentDetail) {
	f.mu.Lock()
	defer f.mu.Unlock()
	d.Parameters = maps.Clone(d.Parameters)
	f.agents[slug] = d
}

// ExpectControllerAPIKey makes key the controller API key Studio stored: the
// next handshakes answer controller_api_key_match true only when server.register
// carries key (compared in constant time), else false with reason
// [KeyMismatchReason], and report the fingerprint of key. Without it every key
// matches and the fingerprint is the received key's.
func (f *FakeStudioAPI) ExpectControllerAPIKey(key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.expectKey, f.expectSet = key, true
}

// EditHandshake makes fn edit every later server.register response (the whole
// body, {"id", "supervaizer_handshake": {…}}) before it is sent, for negative
// tests of the handshake checks. fn runs on the server's
// goroutine, without the fake's lock; nil removes the edit.
func (f *FakeStudioAPI) EditHandshake(fn func(response map[string]any)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.editHS = fn
}

// Events returns the controller events received so far, server.register
// included, in order.
func (f *FakeStudioAPI) Events() []StudioEvent {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]StudioEvent, len(f.events))
	for i, e := range f.events {
		out[i] = cloneEvent(e)
	}
	return out
}

func cloneEvent(e StudioEvent) StudioEvent {
	e.Source, e.Details = maps.Clone(e.Source), slices.Clone(e.Details)
	return e
}

// EventTypes returns the event_type of every event received so far, in order.
func (f *FakeStudioAPI) EventTypes() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]string, len(f.events))
	for i, e := range f.events {
		out[i] = e.Type
	}
	return out
}

// WaitEvents waits until n events of type eventType were received and returns
// them; after [WaitTimeout] it ends the test. Call it from the test's goroutine.
func (f *FakeStudioAPI) WaitEvents(t testing.TB, eventType string, n int) []StudioEvent {
	t.Helper()
	var out []StudioEvent
	f.wait(t, fmt.Sprintf("%d %s event(s)", n, eventType), func() bool {
		out = out[:0]
		for _, e := range f.events {
			if e.Type == eventType {
				out = append(out, cloneEvent(e))
			}
		}
		return len(out) >= n
	})
	return out
}

// Registrations returns the server.register details received so far, in order.
func (f *FakeStudioAPI) Registrations() []ServerRegistration {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]ServerRegistration, len(f.regs))
	for i, r := range f.regs {
		r.Agents = slices.Clone(r.Agents)
		out[i] = r
	}
	return out
}

// Registration returns the last server.register details received.
func (f *FakeStudioAPI) Registration() (ServerRegistration, bool) {
	regs := f.Registrations()
	if len(regs) == 0 {
		return ServerRegistration{}, false
	}
	return regs[len(regs)-1], true
}

// wireEvent is the body of a controller event.
type wireEvent struct {
	Source     map[string]string `json:"source"`
	Workspace  *string           `json:"workspace"`
	EventType  *string           `json:"event_type"`
	ObjectType *string           `json:"object_type"`
	Details    json.RawMessage   `json:"details"`
}

// handleEvent records a controller event; server.register gets the handshake.
func (f *FakeStudioAPI) handleEvent(body []byte, seq int) (int, any, error) {
	var ev wireEvent
	if err := decodeBody(body, &ev); err != nil {
		return 0, nil, err
	}
	if err := f.checkEvent(&ev); err != nil {
		return 0, nil, err
	}
	rec := StudioEvent{Seq: seq, Type: *ev.EventType, ObjectType: *ev.ObjectType, Workspace: *ev.Workspace,
		Source: ev.Source, Details: slices.Clone(ev.Details)}
	var reg *ServerRegistration
	var pub *rsa.PublicKey
	if rec.Type == string(studio.EventServerRegister) {
		r, k, err := parseRegistration(ev.Details)
		if err != nil {
			return 0, nil, err
		}
		r.Seq = seq
		reg, pub = &r, k
	}
	f.mu.Lock()
	f.events = append(f.events, rec)
	if job, c := ev.Source["job"], ev.Source["case"]; c != "" &&
		(rec.Type == string(studio.EventCaseStart) || rec.Type == string(studio.EventCaseUpdate)) {
		f.announced[caseKey{job, c}] = true
	}
	if reg != nil {
		f.regs = append(f.regs, *reg)
		f.controller = pub
	}
	f.notifyLocked()
	f.mu.Unlock()
	if reg != nil {
		return http.StatusOK, f.handshake(*reg), nil
	}
	return http.StatusOK, map[string]any{"id": fmt.Sprintf("evt-%d", seq)}, nil
}

// checkEvent checks the envelope of the protocol.
func (f *FakeStudioAPI) checkEvent(ev *wireEvent) error {
	switch {
	case ev.EventType == nil || strings.TrimSpace(*ev.EventType) == "":
		return badRequest("event_type is required")
	case ev.ObjectType == nil || strings.TrimSpace(*ev.ObjectType) == "":
		return badRequest("object_type is required")
	case ev.Workspace == nil || *ev.Workspace != f.ws:
		return badRequest("workspace must be the account's workspace")
	case !isJSONObject(ev.Details):
		return badRequest("details must be a JSON object")
	}
	set := 0
	for k, v := range ev.Source {
		switch k {
		case "server", "agent", "job":
			if strings.TrimSpace(v) == "" {
				return badRequest("source.%s is blank", k)
			}
			set++
		case "case":
			if strings.TrimSpace(v) == "" || ev.Source["job"] == "" {
				return badRequest("source.case needs a non-blank case id and its job")
			}
		default:
			return badRequest("source has an unknown member %q", k)
		}
	}
	if set != 1 {
		return badRequest("source must name exactly one of server, agent and job")
	}
	return nil
}

func isJSONObject(raw json.RawMessage) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(raw, &m) == nil && m != nil
}

// serverURIPattern is "server:" and a MAC address.
var serverURIPattern = regexp.MustCompile(`^server:[0-9A-F]{2}(-[0-9A-F]{2}){5}$`)

// wireRegistration is the part of server.register details the fake checks.
type wireRegistration struct {
	ServerID          string            `json:"server_id"`
	URL               string            `json:"url"`
	URI               string            `json:"uri"`
	APIVersion        string            `json:"api_version"`
	ControllerVersion string            `json:"controller_version"`
	Environment       string            `json:"environment"`
	PublicKey         string            `json:"public_key"`
	APIKey            string            `json:"api_key"`
	Agents            []json.RawMessage `json:"agents"`
}

type wireAgent struct {
	Name           string  `json:"name"`
	ID             string  `json:"id"`
	Slug           string  `json:"slug"`
	Version        string  `json:"version"`
	ServerAgentID  *string `json:"server_agent_id"`
	BillingCatalog []struct {
		SKU string `json:"sku"`
	} `json:"billing_catalog"`
}

// parseRegistration reads and checks server.register details.
func parseRegistration(details json.RawMessage) (ServerRegistration, *rsa.PublicKey, error) {
	var w wireRegistration
	if err := json.Unmarshal(details, &w); err != nil {
		return ServerRegistration{}, nil, badRequest("server.register details do not match the wire format: %v", err)
	}
	for _, f := range []struct{ name, v string }{
		{"server_id", w.ServerID}, {"url", w.URL}, {"api_version", w.APIVersion},
		{"controller_version", w.ControllerVersion}, {"environment", w.Environment}, {"api_key", w.APIKey},
	} {
		if strings.TrimSpace(f.v) == "" {
			return ServerRegistration{}, nil, badRequest("server.register details.%s is required", f.name)
		}
	}
	if !serverURIPattern.MatchString(w.URI) {
		return ServerRegistration{}, nil, badRequest("server.register details.uri must be server:<6 hyphen-separated uppercase hex pairs>")
	}
	pub, err := parseControllerPublicKey(w.PublicKey)
	if err != nil {
		return ServerRegistration{}, nil, badRequest("server.register details.public_key: %v", err)
	}
	if w.Agents == nil {
		return ServerRegistration{}, nil, badRequest("server.register details.agents must be an array")
	}
	reg := ServerRegistration{ServerID: w.ServerID, URL: w.URL, URI: w.URI, APIVersion: w.APIVersion,
		ControllerVersion: w.ControllerVersion, Environment: w.Environment, PublicKeyPEM: w.PublicKey,
		APIKey: w.APIKey, Details: slices.Clone(details), Agents: make([]RegisteredAgent, 0, len(w.Agents))}
	seen := map[string]bool{}
	for i, raw := range w.Agents {
		var a wireAgent
		if err := json.Unmarshal(raw, &a); err != nil || !isJSONObject(raw) {
			return ServerRegistration{}, nil, badRequest("server.register details.agents[%d] is not an agent payload", i)
		}
		if strings.TrimSpace(a.Slug) == "" || strings.TrimSpace(a.Name) == "" || strings.TrimSpace(a.ID) == "" {
			return ServerRegistration{}, nil, badRequest("server.register details.agents[%d] needs a name, an id and a slug", i)
		}
		if seen[a.Slug] {
			return ServerRegistration{}, nil, badRequest("server.register details.agents lists the slug %q twice", a.Slug)
		}
		seen[a.Slug] = true
		ra := RegisteredAgent{Name: a.Name, ID: a.ID, Slug: a.Slug, Version: a.Version, Raw: slices.Clone(raw)}
		if a.ServerAgentID != nil {
			ra.ServerAgentID = *a.ServerAgentID
		}
		for _, it := range a.BillingCatalog {
			ra.BillingSKUs = append(ra.BillingSKUs, it.SKU)
		}
		reg.Agents = append(reg.Agents, ra)
	}
	return reg, pub, nil
}

// parseControllerPublicKey reads an RSA public key (PEM SubjectPublicKeyInfo)
// of at least studio.ControllerKeyBits bits.
func parseControllerPublicKey(s string) (*rsa.PublicKey, error) {
	block, _ := pem.Decode([]byte(s))
	if block == nil || block.Type != "PUBLIC KEY" {
		return nil, fmt.Errorf("not a PEM PUBLIC KEY")
	}
	k, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("unparsable SubjectPublicKeyInfo")
	}
	rk, ok := k.(*rsa.PublicKey)
	if !ok || rk.N.BitLen() < studio.ControllerKeyBits {
		return nil, fmt.Errorf("not an RSA key of at least %d bits", studio.ControllerKeyBits)
	}
	return rk, nil
}

// handshake builds the server.register answer.
func (f *FakeStudioAPI) handshake(reg ServerRegistration) map[string]any {
	studioID := f.studio.ServerID()
	f.mu.Lock()
	expected, expectSet, edit := f.expectKey, f.expectSet, f.editHS
	f.mu.Unlock()
	match, stored, reason := true, studio.KeyFingerprint(reg.APIKey), any(nil)
	if expectSet {
		stored = studio.KeyFingerprint(expected)
		match = subtle.ConstantTimeCompare([]byte(reg.APIKey), []byte(expected)) == 1
		if !match {
			reason = KeyMismatchReason
		}
	}
	bindings := make([]any, len(reg.Agents))
	for i, a := range reg.Agents {
		bindings[i] = map[string]any{"id": f.studio.StudioAgentID(a.Slug), "slug": a.Slug}
	}
	resp := map[string]any{
		"id": "srv-" + studioID,
		"supervaizer_handshake": map[string]any{
			"server_id":                             studioID,
			"controller_api_key_match":              match,
			"stored_controller_api_key_fingerprint": stored,
			"reason":                                reason,
			"workspace_authorization": map[string]any{
				"audience":         audiencePrefix + studioID,
				"studio_server_id": studioID,
				"agents":           bindings,
			},
		},
	}
	if edit != nil {
		edit(resp)
	}
	return resp
}

// handleLookup answers the agent lookup by Studio id (id set) or by slug.
// The agents known are those of the last server.register and those set with
// SetAgent.
func (f *FakeStudioAPI) handleLookup(id, slug string) (int, any, error) {
	f.mu.Lock()
	names := map[string]string{} // slug -> name
	if n := len(f.regs); n > 0 {
		for _, a := range f.regs[n-1].Agents {
			names[a.Slug] = a.Name
		}
	}
	for s := range f.agents {
		if _, ok := names[s]; !ok {
			names[s] = ""
		}
	}
	details, pub := maps.Clone(f.agents), f.controller
	f.mu.Unlock()
	if id != "" {
		slug = ""
		for _, s := range slices.Sorted(maps.Keys(names)) {
			if f.studio.StudioAgentID(s) == id {
				slug = s
				break
			}
		}
	}
	name, ok := names[slug]
	if !ok {
		return 0, nil, &apiError{status: http.StatusNotFound, detail: "agent not found"}
	}
	d := details[slug]
	status, onboarding := d.Status, d.OnboardingStatus
	if status == "" {
		status = DefaultAgentStatus
	}
	if onboarding == "" {
		onboarding = OnboardingPending
		if d.Parameters != nil {
			onboarding = OnboardingConfigured
		}
	}
	resp := map[string]any{"id": f.studio.StudioAgentID(slug), "slug": slug, "status": status, "onboarding_status": onboarding}
	if name != "" {
		resp["name"] = name
	}
	if d.Parameters != nil {
		if pub == nil {
			return 0, nil, &apiError{status: http.StatusConflict, detail: "no controller public key: server.register was not received"}
		}
		enc, err := EncryptParameters(pub, d.Parameters)
		if err != nil {
			return 0, nil, err
		}
		resp["parameters_encrypted"] = enc
	}
	return http.StatusOK, resp, nil
}

// EncryptParameters encrypts agent parameter values for the controller key
// pub as Studio does in parameters_encrypted: standard base64
// of the RSA-OAEP (SHA-256, MGF1-SHA-256) encrypted random 32-byte AES key,
// a random 16-byte IV and the AES-256-CBC ciphertext (PKCS#7 padding) of the
// JSON array of {"name", "value"} objects, sorted by name.
func EncryptParameters(pub *rsa.PublicKey, params map[string]any) (string, error) {
	if pub == nil {
		return "", fmt.Errorf("svtest: EncryptParameters: nil public key")
	}
	names := make([]string, 0, len(params))
	for n := range params {
		names = append(names, n)
	}
	slices.Sort(names)
	type param struct {
		Name  string `json:"name"`
		Value any    `json:"value"`
	}
	list := make([]param, len(names))
	for i, n := range names {
		list[i] = param{n, params[n]}
	}
	plain, err := json.Marshal(list)
	if err != nil {
		return "", fmt.Errorf("svtest: EncryptParameters: encode: %w", err)
	}
	var key [32]byte
	iv := make([]byte, aes.BlockSize)
	if _, err := rand.Read(key[:]); err != nil {
		return "", err
	}
	if _, err := rand.Read(iv); err != nil {
		return "", err
	}
	wrapped, err := rsa.EncryptOAEP(sha256.New(), rand.Reader, pub, key[:], nil)
	if err != nil {
		return "", fmt.Errorf("svtest: EncryptParameters: %w", err)
	}
	block, err := aes.NewCipher(key[:])
	if err != nil {
		return "", err
	}
	pad := aes.BlockSize - len(plain)%aes.BlockSize
	plain = append(plain, bytes.Repeat([]byte{byte(pad)}, pad)...)
	ct := make([]byte, len(plain))
	cipher.NewCBCEncrypter(block, iv).CryptBlocks(ct, plain)
	out := make([]byte, 0, len(wrapped)+len(iv)+len(ct))
	out = append(append(append(out, wrapped...), iv...), ct...)
	return base64.StdEncoding.EncodeToString(out), nil
}
