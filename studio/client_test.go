package studio

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/internal/tools/studiotest"
)

func TestAccountHeadersAndBase(t *testing.T) {
	t.Parallel()
	f := studiotest.New(t)
	a := testClient(t, f)
	assert.Equal(t, f.URL()+"/w/ws-1/api/v1", a.WorkspaceAPIBase())
	_, err := a.SendEvent(context.Background(), Event{Type: EventAgentPing, Source: AgentSource(studiotest.AgentSlug)})
	require.NoError(t, err)
	reqs := f.Recorded()
	require.Len(t, reqs, 1)
	r := reqs[0]
	assert.Equal(t, http.MethodPost, r.Method)
	assert.Equal(t, studiotest.EventsPath, r.Path)
	assert.Equal(t, "Api-Key "+studiotest.AccountKey, r.Header.Get("Authorization"))
	assert.Equal(t, "application/json", r.Header.Get("accept"))
	assert.Equal(t, studiotest.Workspace, r.Header.Get("workspace"))
	assert.JSONEq(t, `{"source":{"agent":"research-agent"},"workspace":"ws-1","event_type":"agent.ping","object_type":"agent","details":{}}`, string(r.Body))
}

func TestNewAccountConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{"ok trimmed", Config{APIURL: " https://studio.example.com/ ", WorkspaceID: " ws-1 ", APIKey: " k "}, ""},
		{"missing all", Config{}, "missing APIURL (SUPERVAIZE_API_URL), WorkspaceID (SUPERVAIZE_WORKSPACE_ID), APIKey (SUPERVAIZE_API_KEY)"},
		{"missing key", Config{APIURL: "https://s", WorkspaceID: "w"}, "missing APIKey (SUPERVAIZE_API_KEY)"},
		{"relative url", Config{APIURL: "studio.example.com", WorkspaceID: "w", APIKey: "k"}, "SUPERVAIZE_API_URL must be an absolute"},
		{"url with credentials", Config{APIURL: "https://u:p@s", WorkspaceID: "w", APIKey: "k"}, "SUPERVAIZE_API_URL must be an absolute"},
		{"key with newline", Config{APIURL: "https://s", WorkspaceID: "w", APIKey: "secret\nvalue"}, "SUPERVAIZE_API_KEY contains characters"},
		{"too many retries", Config{APIURL: "https://s", WorkspaceID: "w", APIKey: "k", MaxRetries: 11}, "MaxRetries"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a, err := NewClient(tt.cfg)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				assert.NotContains(t, err.Error(), "secret")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, "https://studio.example.com", a.APIURL())
			assert.Equal(t, "ws-1", a.WorkspaceID())
			assert.Equal(t, "https://studio.example.com/w/ws-1/api/v1", a.WorkspaceAPIBase())
			assert.Equal(t, DefaultMaxRetries, a.retries)
		})
	}
}

func TestParseMaxRetries(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]int{"0": NoRetries, " 3 ": 3, "10": RetryLimit} {
		n, err := ParseMaxRetries(raw)
		require.NoError(t, err, raw)
		assert.Equal(t, want, n, raw)
	}
	a, err := NewClient(Config{APIURL: "https://studio.example.com", APIKey: "key", WorkspaceID: "ws-9", MaxRetries: NoRetries})
	require.NoError(t, err)
	assert.Equal(t, 0, a.retries)
	for _, bad := range []string{"-1", "x", "11", ""} {
		_, err := ParseMaxRetries(bad)
		require.ErrorContains(t, err, EnvMaxRetries, bad)
	}
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
			f := studiotest.New(t)
			tr := &studiotest.FlakyTransport{Fail: tt.fail}
			logger, sink := studiotest.NewLogSink()
			a := testClient(t, f, func(c *Config) {
				c.HTTPClient, c.MaxRetries, c.Logger = &http.Client{Transport: tr}, tt.maxRetries, logger
			})
			_, err := a.SendEvent(context.Background(), Event{Type: EventAgentPing, Source: AgentSource("a")})
			assert.Equal(t, tt.wantCalls, tr.Calls.Load())
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
	f := studiotest.New(t)
	// A Studio that echoes the request, keys included, in its error body.
	f.On("POST /ctrl-events/", func(w http.ResponseWriter, body []byte) {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write(append([]byte("rejected Api-Key "+studiotest.AccountKey+": "), body...))
	})
	logger, sink := studiotest.NewLogSink()
	a := testClient(t, f, func(c *Config) { c.Logger = logger })
	_, err := a.sendEvent(context.Background(), Event{Type: EventServerRegister, Source: ServerSource("server:00-00-00-00-00-01"),
		Details: map[string]any{"api_key": studiotest.ControllerKey}}, studiotest.ControllerKey)
	var se *StatusError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, http.StatusBadRequest, se.StatusCode)
	assert.Equal(t, studiotest.EventsPath, se.Path)
	assert.Contains(t, err.Error(), "HTTP 400")
	assert.LessOrEqual(t, len(se.Body), maxErrorBody+len(redacted)*4)
	assertNoSecrets(t, err.Error())
	assertNoSecrets(t, sink.String())
	assertNoSecrets(t, a.String())
	assert.Contains(t, a.String(), KeyFingerprint(studiotest.AccountKey))
}

func TestAccountBoundsResponses(t *testing.T) {
	t.Parallel()
	f := studiotest.New(t)
	f.Answer("POST /context/open/", http.StatusOK, `{"ref":"r","content":"`+strings.Repeat("x", 2048)+`"}`)
	a := testClient(t, f, func(c *Config) { c.MaxResponseBytes = 1024 })
	_, err := a.Context().Open(context.Background(), OpenRequest{Ref: "r"})
	require.ErrorContains(t, err, "response larger than 1024 bytes")
	assert.Equal(t, 1, f.Count(http.MethodPost, "/w/ws-1/api/v1/context/open/"), "an oversize answer is not retried")
}

func TestSendEventValidation(t *testing.T) {
	t.Parallel()
	f := studiotest.New(t)
	a := testClient(t, f)
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
	assert.Empty(t, f.Recorded(), "invalid events are not sent")
}

func TestCaseEvents(t *testing.T) {
	t.Parallel()
	f := studiotest.New(t)
	a := testClient(t, f)
	ctx := context.Background()
	require.NoError(t, a.StartCase(ctx, "job-1", "case-7", map[string]any{"name": "Acme"}))
	require.NoError(t, a.UpdateCase(ctx, "job-1", "case-7", map[string]any{"status": "in_progress"}))
	reqs := f.Recorded()
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
	var a *Client
	body, err := a.SendEvent(context.Background(), Event{Type: EventAgentPing, Source: AgentSource("a")})
	require.NoError(t, err, "events succeed locally")
	assert.Nil(t, body)
	require.NoError(t, a.StartCase(context.Background(), "j", "c", nil))
	_, err = a.Context().Search(context.Background(), SearchRequest{Query: "q"})
	require.ErrorIs(t, err, ErrNotAttached)
	_, err = a.ReportConsumption(context.Background(), "billing-agent", nil, Consumption{})
	require.ErrorIs(t, err, ErrNotAttached)
	_, ok := a.Agent("x")
	assert.False(t, ok)
	assert.Equal(t, "Client(local)", a.String())
}

func TestAgentParameterHidesValue(t *testing.T) {
	t.Parallel()
	p := AgentParameter{Name: "OPENAI_API_KEY", Value: "sk-secret"}
	logger, sink := studiotest.NewLogSink()
	logger.Info("param", slog.Any("p", p))
	assert.NotContains(t, sink.String()+p.String(), "sk-secret")
	assert.Contains(t, sink.String(), "OPENAI_API_KEY")
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

// testClient is a Client on f with the test account key; retries are fast.
func testClient(tb testing.TB, f *studiotest.Fake, mod ...func(*Config)) *Client {
	cfg := Config{APIURL: f.URL(), WorkspaceID: studiotest.Workspace, APIKey: studiotest.AccountKey, RetryDelay: time.Millisecond}
	for _, m := range mod {
		m(&cfg)
	}
	a, err := NewClient(cfg)
	require.NoError(tb, err)
	return a
}

// assertNoSecrets checks that no account or controller key leaks into s.
func assertNoSecrets(t *testing.T, s string) {
	t.Helper()
	assert.NotContains(t, s, studiotest.AccountKey)
	assert.NotContains(t, s, studiotest.ControllerKey)
}
