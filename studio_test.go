package supervaizer

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/contracts"
)

// The -update flag rewrites golden files. The external test package of this
// directory may declare it too (both are linked into one binary), so it is
// declared only when nobody did, and read through flag.Lookup.
func init() {
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite golden files")
	}
}

func studioUpdating() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// studioGolden compares got with testdata/studio/<name>, or rewrites it under -update.
func studioGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "studio", name)
	if studioUpdating() {
		var buf bytes.Buffer
		require.NoError(t, json.Indent(&buf, got, "", "  "))
		buf.WriteByte('\n')
		require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.JSONEq(t, string(want), string(got))
}

// Identities of the Studio tests; they follow the spec examples.
const (
	stAccountKey    = "acct-key-5f2b1c9e7d3a4b6c8e0f1a2b"
	stControllerKey = "ctrl-key-9a8b7c6d5e4f3a2b1c0d9e8f"
	stReadKey       = "ctrl-read-key-1234567890"
	stWorkspace     = "ws-1"
	stIssuer        = "https://studio.supervaize.com"
	stStudioServer  = "studio-server-1"
	stAudience      = "supervaizer-server:" + stStudioServer
	stLocalServer   = "local-server-7"
	stAgentName     = "Research Agent"
	stAgentSlug     = "research-agent"
	stStudioAgent   = "studio-agent-42"
	stPublicURL     = "https://agents.example.com"
	stEventsPath    = "/w/ws-1/api/v1/ctrl-events/"
)

var (
	stSigningKey = ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, ed25519.SeedSize))

	stSigningPEM = func() string {
		der, err := x509.MarshalPKIXPublicKey(stSigningKey.Public())
		if err != nil {
			panic(err)
		}
		return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
	}()

	stRSAOnce sync.Once
	stRSAKey  *rsa.PrivateKey
	stRSAPEM  string
)

// stControllerRSA is the test controller key of testdata/studio (a test-only
// key, generating one per test would be slow).
func stControllerRSA(tb testing.TB) (*rsa.PrivateKey, string) {
	tb.Helper()
	stRSAOnce.Do(func() {
		b, err := os.ReadFile(filepath.Join("testdata", "studio", "controller_key.test.pem"))
		if err != nil {
			return
		}
		stRSAPEM = string(b)
		stRSAKey, _ = parseControllerKey(stRSAPEM)
	})
	require.NotNil(tb, stRSAKey, "testdata/studio/controller_key.test.pem")
	return stRSAKey, stRSAPEM
}

// logSink collects log output for assertions.
type logSink struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logSink) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logSink) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func newLogSink() (*slog.Logger, *logSink) {
	s := &logSink{}
	return slog.New(slog.NewTextHandler(s, &slog.HandlerOptions{Level: slog.LevelDebug})), s
}

// recorded is one request received by the fake Studio.
type recorded struct {
	Method string
	Path   string
	Header http.Header
	Body   []byte
}

func (r recorded) json(tb testing.TB) map[string]any {
	tb.Helper()
	var m map[string]any
	require.NoError(tb, json.Unmarshal(r.Body, &m))
	return m
}

// fakeStudio is an httptest Studio that records every request. Handlers are
// keyed by "METHOD /path" (path without the workspace API base); the
// server.register event and the agent lookups have defaults answering the
// handshake of studio.md §5.
type fakeStudio struct {
	srv *httptest.Server

	mu       sync.Mutex
	requests []recorded
	routes   map[string]func(w http.ResponseWriter, body []byte)

	handshake map[string]any // the supervaizer_handshake of the default server.register answer
}

func newFakeStudio(t *testing.T) *fakeStudio {
	f := &fakeStudio{routes: map[string]func(http.ResponseWriter, []byte){}}
	f.handshake = map[string]any{
		"server_id":                             stStudioServer,
		"controller_api_key_match":              true,
		"stored_controller_api_key_fingerprint": KeyFingerprint(stControllerKey),
		"reason":                                nil,
		"workspace_authorization": map[string]any{
			"audience":         stAudience,
			"studio_server_id": stStudioServer,
			"agents":           []any{map[string]any{"id": stStudioAgent, "slug": stAgentSlug}},
		},
	}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeStudio) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	path := strings.TrimPrefix(r.URL.Path, "/w/"+stWorkspace+"/api/v1")
	f.mu.Lock()
	f.requests = append(f.requests, recorded{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
	h := f.routes[r.Method+" "+path]
	hs := f.handshake
	f.mu.Unlock()
	switch {
	case h != nil:
		h(w, body)
	case r.Method == http.MethodPost && path == "/ctrl-events/":
		writeJSON(w, http.StatusOK, map[string]any{"id": "srv_01", "supervaizer_handshake": hs})
	case r.Method == http.MethodGet && strings.HasPrefix(path, "/agents/"):
		id := strings.TrimPrefix(path, "/agents/")
		writeJSON(w, http.StatusOK, map[string]any{"object": map[string]any{"id": id, "status": "active", "onboarding_status": "pending"}})
	default:
		writeDetail(w, http.StatusNotFound, "Not Found")
	}
}

// on installs a handler for "METHOD /path".
func (f *fakeStudio) on(route string, h func(w http.ResponseWriter, body []byte)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.routes[route] = h
}

// answer installs a fixed answer for "METHOD /path".
func (f *fakeStudio) answer(route string, status int, body string) {
	f.on(route, func(w http.ResponseWriter, _ []byte) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	})
}

// setHandshake edits the default handshake.
func (f *fakeStudio) setHandshake(edit func(hs map[string]any)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	edit(f.handshake)
}

func (f *fakeStudio) recorded() []recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]recorded(nil), f.requests...)
}

// count returns how many requests hit "METHOD path" (full URL path).
func (f *fakeStudio) count(method, path string) int {
	n := 0
	for _, r := range f.recorded() {
		if r.Method == method && r.Path == path {
			n++
		}
	}
	return n
}

func (f *fakeStudio) account(tb testing.TB, mod ...func(*AccountConfig)) *Account {
	tb.Helper()
	cfg := AccountConfig{APIURL: f.srv.URL, WorkspaceID: stWorkspace, APIKey: stAccountKey}
	for _, m := range mod {
		m(&cfg)
	}
	a, err := NewAccount(cfg)
	require.NoError(tb, err)
	a.retryDelay = time.Millisecond
	return a
}

// stAgent builds an agent declaring job.start and context.assign.
func stAgent(tb testing.TB, name string, mod ...func(*AgentSpec)) *Agent {
	tb.Helper()
	slug := strings.ToLower(strings.ReplaceAll(name, " ", "-"))
	reg, err := BuildRegistration(RegistrationSpec{
		AgentSlug: slug, DisplayName: name, A2UICatalogVersion: slug + ".2026-05-16",
		Actions: Actions("job.start", ContextAssignAction),
	})
	require.NoError(tb, err)
	spec := AgentSpec{Name: name, Version: "1.0.0", Description: "Turns a question into a sourced brief.", Registration: reg}
	for _, m := range mod {
		m(&spec)
	}
	a, err := NewAgent(spec)
	require.NoError(tb, err)
	return a
}

// studioServer builds a controller attached to f with workspace
// authorization on, isolated from the process environment.
func studioServer(t *testing.T, f *fakeStudio, agents []*Agent, opts ...Option) (*Server, *logSink) {
	t.Helper()
	key, _ := stControllerRSA(t)
	logger, sink := newLogSink()
	if agents == nil {
		agents = []*Agent{stAgent(t, stAgentName)}
	}
	base := []Option{
		WithAccount(f.account(t)), WithLogger(logger),
		WithEnv(func(k string) string { return map[string]string{"SUPERVAIZER_SERVER_ID": stLocalServer}[k] }),
		WithWorkspaceAuth(WorkspaceAuthSettings{Enabled: true, Issuer: stIssuer, PublicKeyPEM: stSigningPEM}),
		WithAPIKey(stControllerKey, ScopeWrite), WithAPIKey(stReadKey, ScopeRead),
		WithPublicURL(stPublicURL), WithControllerKey(key),
	}
	srv, err := NewServer(agents, append(base, opts...)...)
	require.NoError(t, err)
	return srv, sink
}

// assertNoSecrets checks that no account or controller key leaks into s.
func assertNoSecrets(t *testing.T, s string) {
	t.Helper()
	assert.NotContains(t, s, stAccountKey)
	assert.NotContains(t, s, stControllerKey)
}

func TestAccountHeadersAndBase(t *testing.T) {
	t.Parallel()
	f := newFakeStudio(t)
	a := f.account(t)
	assert.Equal(t, f.srv.URL+"/w/ws-1/api/v1", a.WorkspaceAPIBase())
	_, err := a.SendEvent(context.Background(), Event{Type: EventAgentPing, Source: AgentSource(stAgentSlug)})
	require.NoError(t, err)
	reqs := f.recorded()
	require.Len(t, reqs, 1)
	r := reqs[0]
	assert.Equal(t, http.MethodPost, r.Method)
	assert.Equal(t, stEventsPath, r.Path)
	assert.Equal(t, "Api-Key "+stAccountKey, r.Header.Get("Authorization"))
	assert.Equal(t, "application/json", r.Header.Get("accept"))
	assert.Equal(t, stWorkspace, r.Header.Get("workspace"))
	assert.JSONEq(t, `{"source":{"agent":"research-agent"},"workspace":"ws-1","event_type":"agent.ping","object_type":"agent","details":{}}`, string(r.Body))
}

func TestNewAccountConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		cfg     AccountConfig
		wantErr string
	}{
		{"ok trimmed", AccountConfig{APIURL: " https://studio.example.com/ ", WorkspaceID: " ws-1 ", APIKey: " k "}, ""},
		{"missing all", AccountConfig{}, "missing APIURL (SUPERVAIZE_API_URL), WorkspaceID (SUPERVAIZE_WORKSPACE_ID), APIKey (SUPERVAIZE_API_KEY)"},
		{"missing key", AccountConfig{APIURL: "https://s", WorkspaceID: "w"}, "missing APIKey (SUPERVAIZE_API_KEY)"},
		{"relative url", AccountConfig{APIURL: "studio.example.com", WorkspaceID: "w", APIKey: "k"}, "SUPERVAIZE_API_URL must be an absolute"},
		{"url with credentials", AccountConfig{APIURL: "https://u:p@s", WorkspaceID: "w", APIKey: "k"}, "SUPERVAIZE_API_URL must be an absolute"},
		{"key with newline", AccountConfig{APIURL: "https://s", WorkspaceID: "w", APIKey: "secret\nvalue"}, "SUPERVAIZE_API_KEY contains characters"},
		{"too many retries", AccountConfig{APIURL: "https://s", WorkspaceID: "w", APIKey: "k", MaxRetries: 11}, "MaxRetries"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a, err := NewAccount(tt.cfg)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				assert.NotContains(t, err.Error(), "secret")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, "https://studio.example.com", a.APIURL())
			assert.Equal(t, "ws-1", a.WorkspaceID())
			assert.Equal(t, "https://studio.example.com/w/ws-1/api/v1", a.WorkspaceAPIBase())
			assert.Equal(t, DefaultStudioMaxRetries, a.retries)
		})
	}
}

func TestAccountConfigFromEnv(t *testing.T) {
	t.Parallel()
	env := map[string]string{
		EnvStudioAPIURL: " https://studio.example.com ", EnvStudioAPIKey: " key ", EnvStudioWorkspaceID: " ws-9 ", EnvStudioMaxRetries: "0",
	}
	cfg, err := AccountConfigFromEnv(func(k string) string { return env[k] })
	require.NoError(t, err)
	assert.Equal(t, AccountConfig{APIURL: "https://studio.example.com", APIKey: "key", WorkspaceID: "ws-9", MaxRetries: NoRetries}, cfg)
	a, err := NewAccount(cfg)
	require.NoError(t, err)
	assert.Equal(t, 0, a.retries)

	for _, bad := range []string{"-1", "x", "11"} {
		env[EnvStudioMaxRetries] = bad
		_, err := AccountConfigFromEnv(func(k string) string { return env[k] })
		require.ErrorContains(t, err, EnvStudioMaxRetries)
	}
}

// flakyTransport fails the first n round trips with an error that quotes the
// Authorization header, to prove that errors and logs mask it.
type flakyTransport struct {
	fail  int32
	calls atomic.Int32
}

func (f *flakyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if f.calls.Add(1) <= f.fail {
		return nil, errors.New("connection reset while sending " + r.Header.Get("Authorization"))
	}
	return http.DefaultTransport.RoundTrip(r)
}

func TestAccountRetriesTransportErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		fail       int32
		maxRetries int
		wantCalls  int32
		wantErr    bool
	}{
		{"recovers after two failures", 2, 0, 3, false},
		{"gives up after the default two retries", 5, 0, 3, true},
		{"configured retries", 5, 4, 5, true},
		{"no retries", 5, NoRetries, 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeStudio(t)
			tr := &flakyTransport{fail: tt.fail}
			logger, sink := newLogSink()
			a := f.account(t, func(c *AccountConfig) {
				c.HTTPClient, c.MaxRetries, c.Logger = &http.Client{Transport: tr}, tt.maxRetries, logger
			})
			_, err := a.SendEvent(context.Background(), Event{Type: EventAgentPing, Source: AgentSource("a")})
			assert.Equal(t, tt.wantCalls, tr.calls.Load())
			if tt.wantErr {
				require.Error(t, err)
				assert.Contains(t, err.Error(), "connection reset")
				assert.Contains(t, err.Error(), redacted)
				assertNoSecrets(t, err.Error())
			} else {
				require.NoError(t, err)
			}
			assertNoSecrets(t, sink.String())
		})
	}
}

func TestAccountHTTPErrorsMaskKeys(t *testing.T) {
	t.Parallel()
	f := newFakeStudio(t)
	// A Studio that echoes the request, keys included, in its error body.
	f.on("POST /ctrl-events/", func(w http.ResponseWriter, body []byte) {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write(append([]byte("rejected Api-Key "+stAccountKey+": "), body...))
	})
	logger, sink := newLogSink()
	a := f.account(t, func(c *AccountConfig) { c.Logger = logger })
	_, err := a.sendEvent(context.Background(), Event{Type: EventServerRegister, Source: ServerSource("server:00-00-00-00-00-01"),
		Details: map[string]any{"api_key": stControllerKey}}, stControllerKey)
	var se *StudioError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, http.StatusBadRequest, se.StatusCode)
	assert.Equal(t, stEventsPath, se.Path)
	assert.Contains(t, err.Error(), "HTTP 400")
	assert.LessOrEqual(t, len(se.Body), maxErrorBody+len(redacted)*4)
	assertNoSecrets(t, err.Error())
	assertNoSecrets(t, sink.String())
	assertNoSecrets(t, a.String())
	assert.Contains(t, a.String(), KeyFingerprint(stAccountKey))
}

func TestAccountBoundsResponses(t *testing.T) {
	t.Parallel()
	f := newFakeStudio(t)
	f.answer("POST /context/open/", http.StatusOK, `{"ref":"r","content":"`+strings.Repeat("x", 2048)+`"}`)
	a := f.account(t, func(c *AccountConfig) { c.MaxResponseBytes = 1024 })
	_, err := a.Context().Open(context.Background(), OpenRequest{Ref: "r"})
	require.ErrorContains(t, err, "response larger than 1024 bytes")
	assert.Equal(t, 1, f.count(http.MethodPost, "/w/ws-1/api/v1/context/open/"), "an oversize answer is not retried")
}

func TestSendEventValidation(t *testing.T) {
	t.Parallel()
	f := newFakeStudio(t)
	a := f.account(t)
	tests := []struct {
		name string
		ev   Event
		want string
	}{
		{"no type", Event{Source: AgentSource("a")}, "event type is required"},
		{"no source", Event{Type: EventAgentPing}, "exactly one of server, agent and job"},
		{"two sources", Event{Type: EventAgentPing, Source: EventSource{Agent: "a", Server: "s"}}, "exactly one"},
		{"case without job", Event{Type: EventCaseStart, Source: EventSource{Case: "c", Agent: "a"}}, "case source needs its job"},
		{"details not an object", Event{Type: EventAgentPing, Source: AgentSource("a"), Details: []int{1}}, "details must be a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := a.SendEvent(context.Background(), tt.ev)
			require.ErrorContains(t, err, tt.want)
		})
	}
	assert.Empty(t, f.recorded(), "invalid events are not sent")
}

func TestCaseEvents(t *testing.T) {
	t.Parallel()
	f := newFakeStudio(t)
	a := f.account(t)
	ctx := context.Background()
	require.NoError(t, a.StartCase(ctx, "job-1", "case-7", map[string]any{"name": "Acme"}))
	require.NoError(t, a.UpdateCase(ctx, "job-1", "case-7", map[string]any{"status": "in_progress"}))
	reqs := f.recorded()
	require.Len(t, reqs, 2)
	assert.JSONEq(t, `{"source":{"job":"job-1","case":"case-7"},"workspace":"ws-1","event_type":"agent.case.start","object_type":"case","details":{"name":"Acme"}}`, string(reqs[0].Body))
	assert.JSONEq(t, `{"source":{"job":"job-1","case":"case-7"},"workspace":"ws-1","event_type":"agent.case.update","object_type":"case","details":{"status":"in_progress"}}`, string(reqs[1].Body))
}

func TestEventObjectTypes(t *testing.T) {
	t.Parallel()
	for typ, want := range map[EventType]string{
		EventServerRegister: "server", EventServerDown: "server", EventAgentRegister: "agent", EventAgentSendAnomaly: "agent",
		EventJobStartConfirmation: "job", EventJobTimeout: "job", EventCaseStart: "case", EventCaseError: "case",
	} {
		assert.Equal(t, want, typ.ObjectType(), typ)
	}
}

func TestNilAccountIsLocal(t *testing.T) {
	t.Parallel()
	var a *Account
	body, err := a.SendEvent(context.Background(), Event{Type: EventAgentPing, Source: AgentSource("a")})
	require.NoError(t, err, "events succeed locally")
	assert.Nil(t, body)
	require.NoError(t, a.StartCase(context.Background(), "j", "c", nil))
	_, err = a.Context().Search(context.Background(), SearchRequest{Query: "q"})
	require.ErrorIs(t, err, ErrNoStudioAccount)
	_, err = a.ReportConsumption(context.Background(), stAgent(t, "Billing Agent"), Consumption{})
	require.ErrorIs(t, err, ErrNoStudioAccount)
	_, ok := a.StudioAgent("x")
	assert.False(t, ok)
	assert.Equal(t, "Account(local)", a.String())
}

func TestAgentParameterHidesValue(t *testing.T) {
	t.Parallel()
	p := AgentParameter{Name: "OPENAI_API_KEY", Value: "sk-secret"}
	logger, sink := newLogSink()
	logger.Info("param", slog.Any("p", p))
	assert.NotContains(t, sink.String()+p.String(), "sk-secret")
	assert.Contains(t, sink.String(), "OPENAI_API_KEY")
}

// stToken mints a workspace token signed by stSigningKey (golang-jwt, EdDSA).
func stToken(tb testing.TB, mod func(c map[string]any)) string {
	tb.Helper()
	now := time.Now().Unix()
	c := map[string]any{
		"iss": stIssuer, "aud": stAudience, "grant_id": "grant-01",
		"workspace_id": stWorkspace, "workspace_slug": "acme",
		"agent_id": stStudioAgent, "agent_slug": stAgentSlug, "server_id": stStudioServer,
		"scopes": []string{MethodActionInvoke, "job.start"}, "iat": now - 10, "exp": now + 600,
	}
	if mod != nil {
		mod(c)
	}
	return mintEdDSA(tb, c)
}

// stInvoke posts a job.start action.invoke with the token and returns the
// HTTP status and the decoded JSON-RPC response.
func stInvoke(tb testing.TB, srv *Server, token string) (int, map[string]any) {
	tb.Helper()
	req := contracts.ActionRequest{
		RequestID: "req-1", Actor: contracts.Actor{UserID: "u-1"}, Workspace: contracts.WorkspaceRef{ID: stWorkspace, Slug: "acme"},
		MissionID: "mis-3", AgentSlug: stAgentSlug, Surface: "job.start", Action: "job.start", Input: json.RawMessage(`{}`),
	}
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": MethodActionInvoke, "params": map[string]any{"action_request": req}})
	require.NoError(tb, err)
	r := httptest.NewRequest(http.MethodPost, "/a2a", bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set(HeaderAPIKey, stControllerKey)
	r.Header.Set(HeaderWorkspaceAuthorization, "Bearer "+token)
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, r)
	var out map[string]any
	require.NoError(tb, json.Unmarshal(w.Body.Bytes(), &out), w.Body.String())
	return w.Code, out
}

// mintEdDSA signs claims with stSigningKey.
func mintEdDSA(tb testing.TB, claims map[string]any) string {
	tb.Helper()
	s, err := jwt.NewWithClaims(jwt.SigningMethodEdDSA, jwt.MapClaims(claims)).SignedString(stSigningKey)
	require.NoError(tb, err)
	return s
}

func TestEventSourceJSON(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		src  EventSource
		want string
	}{
		{ServerSource("server:02-00-00-00-00-01"), `{"server":"server:02-00-00-00-00-01"}`},
		{AgentSource("research-agent"), `{"agent":"research-agent"}`},
		{JobSource("job-1"), `{"job":"job-1"}`},
		{CaseSource("job-1", "case-<1>"), `{"case":"case-\u003c1\u003e","job":"job-1"}`},
		{EventSource{}, `{}`},
	} {
		got, err := json.Marshal(tc.src)
		require.NoError(t, err)
		assert.Equal(t, tc.want, string(got), "exact bytes: members set only, in key order")
	}
}
