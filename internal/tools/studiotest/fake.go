// Package studiotest is the recording Studio of the SDK's own tests (the root
// package and studio/): an httptest server whose default answers follow the
// spec examples, the identities they use, the test controller key and a log
// sink. It imports nothing of the module, so that any package's internal
// tests can use it.
package studiotest

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	_ "embed"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"github.com/supervaize/supervaizer-go/internal/tools/proctest"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// Identities of the Studio tests; they follow the spec examples.
const (
	AccountKey    = "acct-key-5f2b1c9e7d3a4b6c8e0f1a2b"
	ControllerKey = "ctrl-key-9a8b7c6d5e4f3a2b1c0d9e8f"
	ReadKey       = "ctrl-read-key-1234567890"
	Workspace     = "ws-1"
	Issuer        = "https://studio.supervaize.com"
	StudioServer  = "studio-server-1"
	Audience      = "supervaizer-server:" + StudioServer
	LocalServer   = "local-server-7"
	AgentName     = "Research Agent"
	AgentSlug     = "research-agent"
	StudioAgent   = "studio-agent-42"
	PublicURL     = "https://agents.example.com"
	EventsPath    = "/w/ws-1/api/v1/ctrl-events/"
)

// controllerPEM is a test-only controller RSA key (generating one per test
// would be slow).
//
//go:embed controller_key.test.pem
var controllerPEM string

var (
	// SigningKey signs the workspace tokens of the tests.
	SigningKey = ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, ed25519.SeedSize))

	// SigningPEM is the public half of SigningKey, PEM.
	SigningPEM = func() string {
		der, err := x509.MarshalPKIXPublicKey(SigningKey.Public())
		if err != nil {
			panic(err)
		}
		return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
	}()

	controllerOnce sync.Once
	controllerKey  *rsa.PrivateKey
)

// ControllerRSA returns the test controller key and its PEM.
func ControllerRSA(tb testing.TB) (*rsa.PrivateKey, string) {
	tb.Helper()
	controllerOnce.Do(func() {
		block, _ := pem.Decode([]byte(controllerPEM))
		if block == nil {
			return
		}
		k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
		if err == nil {
			controllerKey, _ = k.(*rsa.PrivateKey)
		}
	})
	if controllerKey == nil {
		tb.Fatal("studiotest: controller_key.test.pem is not a PKCS#8 RSA key")
	}
	return controllerKey, controllerPEM
}

// Fingerprint is the key fingerprint Studio reports (the first 12 hex
// characters of the SHA-256 of the key).
func Fingerprint(key string) string {
	d := sha256.Sum256([]byte(key))
	return hex.EncodeToString(d[:6])
}

// NewLogSink returns a debug-level text logger writing to a new buffer.
func NewLogSink() (*slog.Logger, *proctest.Buffer) {
	s := &proctest.Buffer{}
	return slog.New(slog.NewTextHandler(s, &slog.HandlerOptions{Level: slog.LevelDebug})), s
}

// Recorded is one request received by the fake Studio.
type Recorded struct {
	Method string
	Path   string
	Header http.Header
	Body   []byte
}

// JSON decodes the body as a JSON object.
func (r Recorded) JSON(tb testing.TB) map[string]any {
	tb.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		tb.Fatalf("studiotest: body of %s %s: %v", r.Method, r.Path, err)
	}
	return m
}

// Fake is an httptest Studio that records every request. Handlers are keyed
// by "METHOD /path" (path without the workspace API base); the
// server.register event and the agent lookups have defaults answering the
// registration handshake.
type Fake struct {
	Server *httptest.Server

	mu       sync.Mutex
	requests []Recorded
	routes   map[string]func(w http.ResponseWriter, body []byte)

	handshake map[string]any // the supervaizer_handshake of the default server.register answer
}

// New starts a Fake, closed when the test ends.
func New(t *testing.T) *Fake {
	f := &Fake{routes: map[string]func(http.ResponseWriter, []byte){}}
	f.handshake = map[string]any{
		"server_id":                             StudioServer,
		"controller_api_key_match":              true,
		"stored_controller_api_key_fingerprint": Fingerprint(ControllerKey),
		"reason":                                nil,
		"workspace_authorization": map[string]any{
			"audience":         Audience,
			"studio_server_id": StudioServer,
			"agents":           []any{map[string]any{"id": StudioAgent, "slug": AgentSlug}},
		},
	}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Server.Close)
	return f
}

// URL is the fake's base URL.
func (f *Fake) URL() string { return f.Server.URL }

func (f *Fake) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	path := strings.TrimPrefix(r.URL.Path, "/w/"+Workspace+"/api/v1")
	f.mu.Lock()
	f.requests = append(f.requests, Recorded{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
	h := f.routes[r.Method+" "+path]
	hs := f.handshake
	f.mu.Unlock()
	switch {
	case h != nil:
		h(w, body)
	case r.Method == http.MethodPost && path == "/ctrl-events/":
		write(w, http.StatusOK, map[string]any{"id": "srv_01", "supervaizer_handshake": hs})
	case r.Method == http.MethodGet && strings.HasPrefix(path, "/agents/"):
		id := strings.TrimPrefix(path, "/agents/")
		write(w, http.StatusOK, map[string]any{"object": map[string]any{"id": id, "status": "active", "onboarding_status": "pending"}})
	default:
		write(w, http.StatusNotFound, map[string]any{"detail": "Not Found"})
	}
}

func write(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// On installs a handler for "METHOD /path".
func (f *Fake) On(route string, h func(w http.ResponseWriter, body []byte)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.routes[route] = h
}

// Answer installs a fixed answer for "METHOD /path".
func (f *Fake) Answer(route string, status int, body string) {
	f.On(route, func(w http.ResponseWriter, _ []byte) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	})
}

// SetHandshake edits the default handshake.
func (f *Fake) SetHandshake(edit func(hs map[string]any)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	edit(f.handshake)
}

// Recorded returns the requests received so far.
func (f *Fake) Recorded() []Recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Recorded(nil), f.requests...)
}

// Count returns how many requests hit "METHOD path" (full URL path).
func (f *Fake) Count(method, path string) int {
	n := 0
	for _, r := range f.Recorded() {
		if r.Method == method && r.Path == path {
			n++
		}
	}
	return n
}

// EncryptParameters encrypts plaintext for pub like Studio does.
func EncryptParameters(tb testing.TB, pub *rsa.PublicKey, plaintext []byte) string {
	tb.Helper()
	aesKey, iv := make([]byte, 32), make([]byte, aes.BlockSize)
	_, _ = rand.Read(aesKey)
	_, _ = rand.Read(iv)
	n := aes.BlockSize - len(plaintext)%aes.BlockSize
	padded := append(bytes.Clone(plaintext), bytes.Repeat([]byte{byte(n)}, n)...)
	block, err := aes.NewCipher(aesKey)
	if err != nil {
		tb.Fatal(err)
	}
	ct := make([]byte, len(padded))
	cipher.NewCBCEncrypter(block, iv).CryptBlocks(ct, padded)
	ek, err := rsa.EncryptOAEP(sha256.New(), rand.Reader, pub, aesKey, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(append(append(ek, iv...), ct...))
}

// Handshake returns the handshake of the default server.register answer.
func (f *Fake) Handshake() map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.handshake
}

// FlakyTransport fails the first Fail round trips with an error that quotes
// the Authorization header, to prove that errors and logs mask it.
type FlakyTransport struct {
	Fail  int32
	Calls atomic.Int32
}

func (f *FlakyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if f.Calls.Add(1) <= f.Fail {
		return nil, errors.New("connection reset while sending " + r.Header.Get("Authorization"))
	}
	return http.DefaultTransport.RoundTrip(r)
}
