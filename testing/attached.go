package testing

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	supervaizer "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/a2a"
	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/store"
	"github.com/supervaize/supervaizer-go/studio"
)

// Defaults of an attached test server.
const (
	// DefaultControllerID is the server id (SUPERVAIZER_SERVER_ID) of an
	// attached test server. Studio knows the controller under its own id,
	// [FakeStudio.ServerID], announced in the handshake's audience: the tokens
	// the fake Studio mints carry that one, so they pass only once the
	// handshake was applied.
	DefaultControllerID = "svtest-controller"
	// DefaultPublicURL is the public URL in [FakeStudioAPI.ServerOptions];
	// [NewAttachedTestServerWithAPI] replaces it with the URL it listens on.
	DefaultPublicURL = "http://controller.svtest.invalid"
)

// maxRemoteResponse bounds a response read by a connected TestServer.
const maxRemoteResponse = 16 << 20

// controllerKey is the process-wide test controller key: generating an RSA
// key for every test would be slow.
var controllerKey = sync.OnceValues(func() (*rsa.PrivateKey, error) {
	return rsa.GenerateKey(rand.Reader, studio.ControllerKeyBits)
})

// ControllerKey returns an RSA controller key pair (2048 bits) for tests,
// generated once per test binary and shared: pass it to
// [supervaizer.WithControllerKey]. It is a test key; never use it elsewhere.
func ControllerKey(t testing.TB) *rsa.PrivateKey {
	t.Helper()
	k, err := controllerKey()
	if err != nil {
		t.Fatalf("svtest: generate the controller key: %v", err)
	}
	return k
}

// ControllerKeyPEM returns [ControllerKey] as a PKCS#8 PEM block, the form of
// SUPERVAIZER_PRIVATE_KEY.
func ControllerKeyPEM(t testing.TB) string {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(ControllerKey(t))
	if err != nil {
		t.Fatalf("svtest: encode the controller key: %v", err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
}

// AttachedSettings returns the workspace-authorization settings of a
// controller attached to Studio: enabled, issuer [DefaultIssuer] and the
// current public key as PEM, but no audience, which Studio announces in the
// registration handshake. Unlike [FakeStudio.Settings] it does
// not rebind the fake Studio.
func (s *FakeStudio) AttachedSettings() supervaizer.WorkspaceAuthSettings {
	return supervaizer.WorkspaceAuthSettings{Enabled: true, Issuer: s.Issuer(), PublicKeyPEM: s.PublicKeyPEM()}
}

// ServerOptions returns the options of a controller attached to the fake:
// no environment (an empty [supervaizer.WithEnv]), the write key
// [DefaultAPIKey], the server id [DefaultControllerID], the workspace
// authorization of [FakeStudio.AttachedSettings], a new account on the fake
// ([FakeStudioAPI.Client]), the shared [ControllerKey] and the public URL
// [DefaultPublicURL]. Add options after them to replace them; then
// Server.Start registers with the fake. Use it to test startup failures, for
// which [NewAttachedTestServer] has no room.
func (f *FakeStudioAPI) ServerOptions() []supervaizer.Option {
	f.t.Helper()
	return []supervaizer.Option{
		supervaizer.WithEnv(func(string) string { return "" }),
		supervaizer.WithAPIKey(DefaultAPIKey, supervaizer.ScopeWrite),
		supervaizer.WithServerID(DefaultControllerID),
		supervaizer.WithWorkspaceAuth(f.studio.AttachedSettings()),
		supervaizer.WithStudio(f.Client()),
		supervaizer.WithControllerKey(ControllerKey(f.t)),
		supervaizer.WithPublicURL(DefaultPublicURL),
	}
}

// NewAttachedTestServer builds a test server for agents attached to a new
// [FakeStudioAPI] (of a new [FakeStudio]) and starts it; see
// [NewAttachedTestServerWithAPI].
func NewAttachedTestServer(t testing.TB, agents []*supervaizer.Agent, opts ...supervaizer.Option) *TestServer {
	t.Helper()
	return NewAttachedTestServerWithAPI(t, NewFakeStudioAPI(t, NewFakeStudio(t)), agents, opts...)
}

// NewAttachedTestServerWithAPI builds a test server for agents attached to
// api and runs Server.Start as main does: server.register, the handshake
// (which installs Studio's audience and links every agent to its Studio agent
// id) and the agent lookup. Configure api first (SetAgent,
// ExpectControllerAPIKey, FailNext, …) to shape the startup. The server has
// the options of [FakeStudioAPI.ServerOptions], a fresh in-memory store and,
// as its public URL, the address [TestServer.URL] serves it on; opts are
// applied last. A failed NewServer or Start ends the test. The returned
// server's API field is api; tokens minted by api.Studio() pass.
func NewAttachedTestServerWithAPI(t testing.TB, api *FakeStudioAPI, agents []*supervaizer.Agent, opts ...supervaizer.Option) *TestServer {
	t.Helper()
	hs := httptest.NewUnstartedServer(http.NotFoundHandler())
	mem := store.NewMemory()
	all := append(api.ServerOptions(), supervaizer.WithStore(mem), supervaizer.WithPublicURL("http://"+hs.Listener.Addr().String()))
	srv, err := supervaizer.NewServer(agents, append(all, opts...)...)
	if err != nil {
		hs.Close()
		_ = mem.Close()
		t.Fatalf("svtest: NewServer: %v", err)
		return nil
	}
	hs.Config.Handler = srv
	ts := &TestServer{Server: srv, Studio: api.Studio(), API: api, APIKey: DefaultAPIKey, t: t,
		agentSlug: agents[0].Slug(), store: mem, http: hs, agents: slices.Clone(agents), opts: slices.Clone(opts)}
	t.Cleanup(ts.close)
	if err := srv.Start(t.Context()); err != nil {
		t.Fatalf("svtest: Server.Start (registration with the fake Studio API): %v", err)
		return nil
	}
	return ts
}

// ResumeRequest returns the rule.checkpoint.resume request that delivers the
// decision status (allow or stop) for the paused checkpoint call: the
// defaults of [TestServer.Request], the call's job_id and case_id, and the
// input [CheckpointCall.ResumeInput].
func (ts *TestServer) ResumeRequest(call CheckpointCall, status, decisionID string) contracts.ActionRequest {
	ts.t.Helper()
	req := ts.Request(supervaizer.RuleCheckpointResumeAction, call.ResumeInput(status, decisionID))
	req.JobID, req.CaseID = call.JobID, call.CaseID
	return req
}

// Connect returns a TestServer that drives the controller already running at
// baseURL over HTTP, with the transport key apiKey and tokens minted by
// studio (which the controller must trust). Invoke, LoadSurface, Call,
// AssertConfirmIdempotent and the other helpers work as with
// [NewTestServer]; its Server field is nil and nothing is shut down at the
// end of the test. Connect reads the primary agent's card
// (/.well-known/agent-card.json) for the default agent_slug of built
// requests; a controller that does not serve it ends the test.
func Connect(t testing.TB, baseURL, apiKey string, studio *FakeStudio) *TestServer {
	t.Helper()
	if studio == nil {
		t.Fatalf("svtest: Connect: nil FakeStudio")
		return nil
	}
	tr, ok := http.DefaultTransport.(*http.Transport)
	if !ok {
		tr = &http.Transport{}
	} else {
		tr = tr.Clone()
	}
	ts := &TestServer{Studio: studio, APIKey: apiKey, t: t, baseURL: strings.TrimRight(baseURL, "/"),
		client: &http.Client{Transport: tr}}
	t.Cleanup(ts.close)
	slug, err := ts.primarySlug(t.Context())
	if err != nil {
		t.Fatalf("svtest: Connect(%s): %v", ts.baseURL, err)
		return nil
	}
	ts.agentSlug = slug
	return ts
}

// primarySlug reads the slug of the primary agent from its card.
func (ts *TestServer) primarySlug(ctx context.Context) (string, error) {
	r, err := http.NewRequestWithContext(ctx, http.MethodGet, ts.baseURL+a2a.WellKnownCardPath, nil)
	if err != nil {
		return "", err
	}
	status, body, err := ts.do(r)
	if err != nil {
		return "", err
	}
	if status != http.StatusOK {
		return "", &HTTPError{StatusCode: status, Body: string(body)}
	}
	var card struct {
		Supervaizer *struct {
			V2 struct {
				Agent struct {
					Slug string `json:"slug"`
				} `json:"agent"`
			} `json:"v2"`
		} `json:"supervaizer"`
	}
	if err := json.Unmarshal(body, &card); err != nil {
		return "", fmt.Errorf("the agent card is not JSON: %w", err)
	}
	if card.Supervaizer == nil || card.Supervaizer.V2.Agent.Slug == "" {
		return "", errors.New("the agent card has no supervaizer.v2 registration naming the agent slug")
	}
	return card.Supervaizer.V2.Agent.Slug, nil
}

// callRemote posts a JSON-RPC body to the connected controller.
func (ts *TestServer) callRemote(ctx context.Context, body []byte, token string) (json.RawMessage, error) {
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, ts.baseURL+"/a2a", bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("svtest: %w", err)
	}
	setCallHeaders(r, ts.APIKey, token)
	status, resp, err := ts.do(r)
	if err != nil {
		return nil, err
	}
	if status != http.StatusOK {
		return nil, &HTTPError{StatusCode: status, Body: string(resp)}
	}
	return resp, nil
}

// do sends r and reads the bounded response.
func (ts *TestServer) do(r *http.Request) (int, []byte, error) {
	resp, err := ts.client.Do(r)
	if err != nil {
		return 0, nil, fmt.Errorf("svtest: %s %s: %w", r.Method, r.URL.Path, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxRemoteResponse+1))
	if err != nil {
		return 0, nil, fmt.Errorf("svtest: %s %s: read the response: %w", r.Method, r.URL.Path, err)
	}
	if len(body) > maxRemoteResponse {
		return 0, nil, fmt.Errorf("svtest: %s %s: response larger than %d bytes", r.Method, r.URL.Path, maxRemoteResponse)
	}
	return resp.StatusCode, body, nil
}
