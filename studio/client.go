// Package studio is the HTTP client to Supervaize Studio: the controller
// events (server.register and its handshake, job and case events), the agent
// lookup, the context client, billable consumption and rule-checkpoint calls.
// A [supervaizer.Server] attached to Studio uses a [Client] for its startup;
// an agent reaches the same client through the server.
//
// # Errors
//
//   - [*StatusError]: Studio answered a call with a non-2xx status; its body
//     is kept with every secret masked.
//   - [ErrNotAttached]: a call through a nil *Client, in a controller not
//     attached to Studio (local mode, standalone).
//   - [ErrHandshake], wrapped by [*KeyMismatchError] when Studio did not
//     confirm the controller API key: server.register's answer is not the
//     handshake the controller needs; [supervaizer.Server.Start] fails.
//   - [*LookupFailedError]: an agent lookup got no usable answer; the agent
//     is left as it was.
//
// Any other error is a transport failure, its message masked.
package studio

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/internal/redact"
)

// Environment variables of the Studio account.
const (
	EnvAPIURL      = "SUPERVAIZE_API_URL"
	EnvAPIKey      = "SUPERVAIZE_API_KEY"
	EnvWorkspaceID = "SUPERVAIZE_WORKSPACE_ID"
	EnvMaxRetries  = "SUPERVAIZE_HTTP_MAX_RETRIES"
)

// Defaults of [Config].
const (
	DefaultTimeout          = 30 * time.Second // per attempt, body included
	DefaultMaxRetries       = 2                // retries after a transport failure
	DefaultMaxResponseBytes = 4 << 20          // largest Studio response read
	RetryLimit              = 10               // upper bound of Config.MaxRetries
	NoRetries               = -1               // Config.MaxRetries value that disables retries
)

// defaultRetryDelay is the pause before the first retry; it grows linearly.
const defaultRetryDelay = 200 * time.Millisecond

// maxErrorBody bounds the part of a Studio error response kept in a StatusError.
const maxErrorBody = 512

// redacted replaces secrets in error strings.
const redacted = redact.Text

// ErrNotAttached is returned by the calls of a nil *Client that need
// Studio (the context client and billing): the controller is not attached to
// Studio, for example in local mode.
var ErrNotAttached = errors.New("supervaizer: no Studio account configured")

// Config configures an [Client]. APIURL, WorkspaceID and APIKey are
// required; every other field has the documented default.
type Config struct {
	// APIURL is Studio's base URL, e.g. https://app.supervaize.com (trimmed,
	// trailing slash removed). Environment: SUPERVAIZE_API_URL.
	APIURL string
	// WorkspaceID is the controller owner's workspace id (trimmed).
	// Environment: SUPERVAIZE_WORKSPACE_ID.
	WorkspaceID string
	// APIKey is the account key sent as "Authorization: Api-Key <key>"
	// (trimmed). It never appears in logs or error strings. Environment:
	// SUPERVAIZE_API_KEY.
	APIKey string
	// HTTPClient sends the requests. Default: a client with
	// http.DefaultTransport. Redirects follow the client's policy.
	HTTPClient *http.Client
	// Timeout bounds each attempt, response body included. Default:
	// [DefaultTimeout].
	Timeout time.Duration
	// MaxRetries is how many times a request is retried after a transport
	// failure (never after an HTTP answer), at most [RetryLimit]. Zero
	// means [DefaultMaxRetries]; [NoRetries] disables retries.
	// Environment: SUPERVAIZE_HTTP_MAX_RETRIES.
	MaxRetries int
	// RetryDelay is the pause before the first retry; it grows linearly with
	// each retry. Default: 200ms.
	RetryDelay time.Duration
	// MaxResponseBytes bounds every response body read. Default:
	// [DefaultMaxResponseBytes].
	MaxResponseBytes int64
	// Billing carries consumption reports. Default: the provisional HTTP wire
	// format of [Client.ReportConsumption].
	Billing BillingTransport
	// Logger receives one debug line per call and a warning per retry; keys
	// are never logged. Default: silent.
	Logger *slog.Logger
}

// ParseMaxRetries parses a value of SUPERVAIZE_HTTP_MAX_RETRIES (trimmed)
// into [Config.MaxRetries]: an integer between 0 and [RetryLimit], 0
// meaning [NoRetries]. The error names the variable.
func ParseMaxRetries(raw string) (int, error) {
	raw = strings.TrimSpace(raw)
	n, err := strconv.Atoi(raw)
	if err != nil || n < 0 || n > RetryLimit {
		return 0, fmt.Errorf("supervaizer: %s must be an integer between 0 and %d, got %q", EnvMaxRetries, RetryLimit, raw)
	}
	if n == 0 {
		return NoRetries, nil
	}
	return n, nil
}

// Client is the controller's client for Supervaize Studio: controller events
// (server.register, case events, …), the agent lookup, the context client and
// billable consumption. Every call carries "Authorization: Api-Key <key>",
// "accept: application/json" and "workspace: <id>", is bounded by a timeout
// and a response-size limit, and is retried a few times after a transport
// failure. The key never appears in logs or error strings.
//
// A nil *Client stands for "not attached to Studio" (local mode):
// [Client.SendEvent] drops the event and succeeds, the other calls return
// [ErrNotAttached]. A Client is safe for concurrent use.
type Client struct {
	apiURL      string
	workspaceID string
	key         redact.Secret
	base        string // {api_url}/w/{workspace_id}/api/v1
	client      *http.Client
	timeout     time.Duration
	retries     int
	maxBody     int64
	billing     BillingTransport
	logger      *slog.Logger
	retryDelay  time.Duration

	mu     sync.RWMutex
	agents map[string]Agent // by slug, from the agent lookup
}

// NewClient validates cfg and returns the account. The error names the
// missing or invalid setting, never the key.
func NewClient(cfg Config) (*Client, error) {
	cfg.APIURL = strings.TrimRight(strings.TrimSpace(cfg.APIURL), "/")
	cfg.WorkspaceID = strings.TrimSpace(cfg.WorkspaceID)
	cfg.APIKey = strings.TrimSpace(cfg.APIKey)
	var missing []string
	for _, f := range []struct{ v, name string }{
		{cfg.APIURL, "APIURL (" + EnvAPIURL + ")"},
		{cfg.WorkspaceID, "WorkspaceID (" + EnvWorkspaceID + ")"},
		{cfg.APIKey, "APIKey (" + EnvAPIKey + ")"},
	} {
		if f.v == "" {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("supervaizer: Studio account: missing %s", strings.Join(missing, ", "))
	}
	u, err := url.Parse(cfg.APIURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("supervaizer: Studio account: %s must be an absolute http(s) URL without credentials, query or fragment", EnvAPIURL)
	}
	if !redact.HeaderSafe(cfg.APIKey) {
		return nil, fmt.Errorf("supervaizer: Studio account: %s contains characters not allowed in an HTTP header (fingerprint %s)", EnvAPIKey, redact.Fingerprint(cfg.APIKey))
	}
	if !redact.HeaderSafe(cfg.WorkspaceID) {
		return nil, fmt.Errorf("supervaizer: Studio account: %s contains characters not allowed in an HTTP header", EnvWorkspaceID)
	}
	switch {
	case cfg.MaxRetries == 0:
		cfg.MaxRetries = DefaultMaxRetries
	case cfg.MaxRetries < 0:
		cfg.MaxRetries = 0
	case cfg.MaxRetries > RetryLimit:
		return nil, fmt.Errorf("supervaizer: Studio account: MaxRetries (%s) is at most %d, got %d", EnvMaxRetries, RetryLimit, cfg.MaxRetries)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.RetryDelay <= 0 {
		cfg.RetryDelay = defaultRetryDelay
	}
	if cfg.MaxResponseBytes <= 0 {
		cfg.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	a := &Client{
		apiURL:      cfg.APIURL,
		workspaceID: cfg.WorkspaceID,
		key:         redact.New(cfg.APIKey),
		base:        cfg.APIURL + "/w/" + url.PathEscape(cfg.WorkspaceID) + "/api/v1",
		client:      cfg.HTTPClient,
		timeout:     cfg.Timeout,
		retries:     cfg.MaxRetries,
		maxBody:     cfg.MaxResponseBytes,
		billing:     cfg.Billing,
		logger:      cfg.Logger,
		retryDelay:  cfg.RetryDelay,
		agents:      map[string]Agent{},
	}
	if a.billing == nil {
		a.billing = httpBilling{a}
	}
	return a, nil
}

// APIURL returns Studio's base URL ("" for a nil Client).
func (a *Client) APIURL() string {
	if a == nil {
		return ""
	}
	return a.apiURL
}

// WorkspaceID returns the controller owner's workspace id ("" for a nil Client).
func (a *Client) WorkspaceID() string {
	if a == nil {
		return ""
	}
	return a.workspaceID
}

// WorkspaceAPIBase returns the workspace API base,
// {api_url}/w/{workspace_id}/api/v1 ("" for a nil Client).
func (a *Client) WorkspaceAPIBase() string {
	if a == nil {
		return ""
	}
	return a.base
}

// Logger returns the logger the client was configured with.
func (a *Client) Logger() *slog.Logger { return a.logger }

// String describes the account without its key.
func (a *Client) String() string {
	if a == nil {
		return "Client(local)"
	}
	return fmt.Sprintf("Client(%s, workspace %s, key %s)", a.apiURL, a.workspaceID, redact.Fingerprint(a.key.Value()))
}

// LogValue implements slog.LogValuer: the URL, workspace and key fingerprint.
func (a *Client) LogValue() slog.Value {
	if a == nil {
		return slog.StringValue("local")
	}
	return slog.GroupValue(slog.String("api_url", a.apiURL), slog.String("workspace_id", a.workspaceID),
		slog.String("api_key_fingerprint", redact.Fingerprint(a.key.Value())))
}

// StatusError is a non-2xx answer from Studio. Body is the start of the
// response with every known key replaced by "[REDACTED]".
type StatusError struct {
	Method     string
	Path       string // URL path of the request
	StatusCode int
	Body       string
}

// Error names the request and the status.
func (e *StatusError) Error() string {
	msg := fmt.Sprintf("supervaizer: Studio %s %s: HTTP %d", e.Method, e.Path, e.StatusCode)
	if e.Body != "" {
		msg += ": " + e.Body
	}
	return msg
}

// transportError is a failed exchange (no HTTP answer, or an unreadable one).
// Its message is masked; Unwrap gives the cause for errors.Is.
type transportError struct {
	msg string
	err error
}

func (e *transportError) Error() string { return e.msg }
func (e *transportError) Unwrap() error { return e.err }

// mask replaces the account key and the extra secrets in s.
func (a *Client) mask(s string, secrets []string) string {
	return redact.Mask(s, append([]string{a.key.Value()}, secrets...)...)
}

// call sends one request to the workspace API (path relative to the base)
// and returns the 2xx response body. body, when not nil, is sent as JSON.
// secrets lists extra values (besides the account key) masked in errors.
func (a *Client) call(ctx context.Context, method, path string, body any, secrets ...string) ([]byte, error) {
	var payload []byte
	if body != nil {
		b, err := contracts.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("supervaizer: Studio %s %s: encode body: %w", method, path, err)
		}
		payload = b
	}
	target := a.base + path
	if u, err := url.Parse(target); err == nil {
		path = u.Path // errors and logs name the full URL path
	}
	status, resp, err := a.exchange(ctx, a.client, method, target, path, payload, nil, secrets)
	if te := (*transportError)(nil); errors.As(err, &te) {
		return nil, &transportError{msg: fmt.Sprintf("supervaizer: Studio %s %s: %s", method, path, te.msg), err: te.err}
	}
	if err != nil {
		return nil, err
	}
	if status < 200 || status > 299 {
		return nil, &StatusError{Method: method, Path: path, StatusCode: status, Body: a.mask(snippet(resp), secrets)}
	}
	return resp, nil
}

// exchange performs a request with client, retrying after a transport
// failure (never after an HTTP answer), and returns the status and bounded
// body of the answer, whatever its status. An answer too large to read is a
// *StatusError; a transport failure a *transportError whose message has the
// account key and secrets masked. path names the request in the logs.
func (a *Client) exchange(ctx context.Context, client *http.Client, method, target, path string, payload []byte, extra http.Header, secrets []string) (int, []byte, error) {
	for attempt := 0; ; attempt++ {
		start := time.Now()
		status, resp, err := a.attempt(ctx, client, method, target, payload, extra)
		if err == nil {
			a.logger.LogAttrs(ctx, slog.LevelDebug, "studio call", slog.String("method", method), slog.String("path", path),
				slog.Int("status", status), slog.Int("attempt", attempt+1), slog.Duration("elapsed", time.Since(start)))
			return status, resp, nil
		}
		if se := (*StatusError)(nil); errors.As(err, &se) {
			return 0, nil, se // an answer too large to read: not a transport failure
		}
		msg := a.mask(err.Error(), secrets)
		if ctx.Err() != nil || attempt >= a.retries {
			return 0, nil, &transportError{msg: msg, err: err}
		}
		a.logger.LogAttrs(ctx, slog.LevelWarn, "studio call failed; retrying", slog.String("method", method), slog.String("path", path),
			slog.Int("attempt", attempt+1), slog.String("error", msg))
		t := time.NewTimer(a.retryDelay * time.Duration(attempt+1))
		select {
		case <-ctx.Done():
			t.Stop()
			return 0, nil, &transportError{msg: msg, err: ctx.Err()}
		case <-t.C:
		}
	}
}

// attempt performs one exchange with client and reads the bounded body. extra
// headers are sent after the account's own.
func (a *Client) attempt(ctx context.Context, client *http.Client, method, target string, payload []byte, extra http.Header) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	var rd io.Reader
	if payload != nil {
		rd = bytes.NewReader(payload)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Api-Key "+a.key.Value())
	req.Header.Set("accept", "application/json")
	req.Header.Set("workspace", a.workspaceID)
	if payload != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, vs := range extra {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(io.LimitReader(resp.Body, a.maxBody+1))
	if err != nil {
		return 0, nil, fmt.Errorf("read response: %w", err)
	}
	if int64(len(b)) > a.maxBody {
		return resp.StatusCode, nil, &StatusError{Method: method, Path: req.URL.Path, StatusCode: resp.StatusCode,
			Body: fmt.Sprintf("response larger than %d bytes", a.maxBody)}
	}
	return resp.StatusCode, b, nil
}

// snippet returns the start of an error body as valid UTF-8 text.
func snippet(b []byte) string {
	if len(b) > maxErrorBody {
		b = b[:maxErrorBody]
		for len(b) > 0 && !utf8.Valid(b) {
			b = b[:len(b)-1]
		}
	}
	return strings.TrimSpace(strings.ToValidUTF8(string(b), "\uFFFD"))
}

// EventType is a controller event type.
type EventType string

// The controller event types.
const (
	EventServerRegister       EventType = "server.register"
	EventServerOnline         EventType = "server.online"
	EventServerDown           EventType = "server.down"
	EventAgentRegister        EventType = "agent.register"
	EventAgentWakeup          EventType = "agent.wakeup"
	EventAgentAnomaly         EventType = "agent.anomaly"
	EventAgentSendAnomaly     EventType = "agent.send_anomaly"
	EventAgentPing            EventType = "agent.ping"
	EventAgentIntermediary    EventType = "agent.intermediary"
	EventJobStart             EventType = "agent.job.start"
	EventJobStartConfirmation EventType = "agent.job.start.confirmation"
	EventJobEnd               EventType = "agent.job.end"
	EventJobStatus            EventType = "agent.job.status"
	EventJobResult            EventType = "agent.job.result"
	EventJobError             EventType = "agent.job.error"
	EventJobTimeout           EventType = "agent.job.timeout"
	EventCaseStart            EventType = "agent.case.start"
	EventCaseEnd              EventType = "agent.case.end"
	EventCaseStatus           EventType = "agent.case.status"
	EventCaseResult           EventType = "agent.case.result"
	EventCaseUpdate           EventType = "agent.case.update"
	EventCaseError            EventType = "agent.case.error"
)

// ObjectType returns the object_type sent with the event: "server" for
// server.*, "job" for agent.job.*, "case" for agent.case.*, else "agent".
func (t EventType) ObjectType() string {
	s := string(t)
	switch {
	case strings.HasPrefix(s, "server."):
		return "server"
	case strings.HasPrefix(s, "agent.job."):
		return "job"
	case strings.HasPrefix(s, "agent.case."):
		return "case"
	}
	return "agent"
}

// EventSource identifies the sender of an event: exactly one of Server, Agent
// and Job, with Case only beside Job. Build it with [ServerSource],
// [AgentSource], [JobSource] or [CaseSource].
type EventSource struct {
	Server string // "server:<MAC>", the controller URI
	Agent  string // agent slug
	Job    string // job id
	Case   string // case id (with Job)
}

// ServerSource is the source {"server": uri}.
func ServerSource(uri string) EventSource { return EventSource{Server: uri} }

// AgentSource is the source {"agent": slug}.
func AgentSource(slug string) EventSource { return EventSource{Agent: slug} }

// JobSource is the source {"job": jobID}.
func JobSource(jobID string) EventSource { return EventSource{Job: jobID} }

// CaseSource is the source {"job": jobID, "case": caseID}.
func CaseSource(jobID, caseID string) EventSource { return EventSource{Job: jobID, Case: caseID} }

// MarshalJSON writes only the members that are set, in key order.
func (s EventSource) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Agent  string `json:"agent,omitempty"`
		Case   string `json:"case,omitempty"`
		Job    string `json:"job,omitempty"`
		Server string `json:"server,omitempty"`
	}{s.Agent, s.Case, s.Job, s.Server})
}

func (s EventSource) validate() error {
	set := 0
	for _, v := range []string{s.Server, s.Agent, s.Job} {
		if strings.TrimSpace(v) != "" {
			set++
		}
	}
	switch {
	case set != 1:
		return errors.New("the source must name exactly one of server, agent and job")
	case s.Case != "" && strings.TrimSpace(s.Job) == "":
		return errors.New("a case source needs its job")
	case s.Case != "" && strings.TrimSpace(s.Case) == "":
		return errors.New("the case id is blank")
	}
	return nil
}

// Event is a controller event posted to {workspace API}/ctrl-events/.
type Event struct {
	Type       EventType
	Source     EventSource
	ObjectType string // default: Type.ObjectType()
	Details    any    // marshals to a JSON object; nil sends {}
}

type wireEvent struct {
	Source     EventSource     `json:"source"`
	Workspace  string          `json:"workspace"`
	EventType  EventType       `json:"event_type"`
	ObjectType string          `json:"object_type"`
	Details    json.RawMessage `json:"details"`
}

// SendEvent posts ev and returns Studio's response body. A non-2xx answer
// (*StatusError) or a transport failure is an error. On a nil *Client (not
// attached to Studio) the event is dropped and SendEvent succeeds.
func (a *Client) SendEvent(ctx context.Context, ev Event) ([]byte, error) {
	return a.sendEvent(ctx, ev)
}

func (a *Client) sendEvent(ctx context.Context, ev Event, secrets ...string) ([]byte, error) {
	if strings.TrimSpace(string(ev.Type)) == "" {
		return nil, errors.New("supervaizer: SendEvent: the event type is required")
	}
	if err := ev.Source.validate(); err != nil {
		return nil, fmt.Errorf("supervaizer: SendEvent(%s): %w", ev.Type, err)
	}
	details := json.RawMessage(`{}`)
	if ev.Details != nil {
		b, err := contracts.Marshal(ev.Details)
		if err != nil {
			return nil, fmt.Errorf("supervaizer: SendEvent(%s): encode details: %w", ev.Type, err)
		}
		if bytes.Equal(b, []byte("null")) { // a nil map
			b = []byte(`{}`)
		}
		if t := bytes.TrimSpace(b); len(t) == 0 || t[0] != '{' {
			return nil, fmt.Errorf("supervaizer: SendEvent(%s): details must be a JSON object", ev.Type)
		}
		details = b
	}
	if a == nil {
		return nil, nil
	}
	obj := ev.ObjectType
	if obj == "" {
		obj = ev.Type.ObjectType()
	}
	return a.call(ctx, http.MethodPost, "/ctrl-events/", wireEvent{
		Source: ev.Source, Workspace: a.workspaceID, EventType: ev.Type, ObjectType: obj, Details: details,
	}, secrets...)
}

// StartCase announces a case to Studio with an agent.case.start event
// (source {"job", "case"}): the "signal the case" step required before rule
// checkpoints. details is the case description, e.g. {"name": …}.
func (a *Client) StartCase(ctx context.Context, jobID, caseID string, details map[string]any) error {
	_, err := a.SendEvent(ctx, Event{Type: EventCaseStart, Source: CaseSource(jobID, caseID), Details: details})
	return err
}

// UpdateCase sends an agent.case.update event for the case (source
// {"job", "case"}); details carries the update.
func (a *Client) UpdateCase(ctx context.Context, jobID, caseID string, details map[string]any) error {
	_, err := a.SendEvent(ctx, Event{Type: EventCaseUpdate, Source: CaseSource(jobID, caseID), Details: details})
	return err
}

// Agent is what the agent lookup learned about an agent.
type Agent struct {
	ID               string           // Studio's agent id
	Status           string           // server status, "" when unknown
	OnboardingStatus string           // onboarding status, "" when unknown
	Parameters       []AgentParameter // decrypted parameter values, when configured
}

// AgentParameter is one decrypted agent parameter value. This SDK does not
// model parameter definitions (parameters_setup is sent as []), so the values
// are exposed as received, through [Client.Agent]. Values may be
// secrets: String and LogValue hide them.
type AgentParameter struct {
	Name  string
	Value string // a JSON string value as-is; other JSON values as their JSON text; null as ""
}

// String hides the value.
func (p AgentParameter) String() string { return p.Name + "=" + redacted }

// LogValue implements slog.LogValuer; the value is hidden.
func (p AgentParameter) LogValue() slog.Value {
	return slog.GroupValue(slog.String("name", p.Name), slog.String("value", redacted))
}

// Agent returns what the last agent lookup learned about the agent
// slug: its Studio id, statuses and decrypted parameters.
func (a *Client) Agent(slug string) (Agent, bool) {
	if a == nil {
		return Agent{}, false
	}
	a.mu.RLock()
	defer a.mu.RUnlock()
	sa, ok := a.agents[slug]
	sa.Parameters = append([]AgentParameter(nil), sa.Parameters...)
	return sa, ok
}

func (a *Client) setAgent(slug string, sa Agent) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.agents[slug] = sa
}

// Rule-checkpoint calls.
const (
	// RuleCheckpointsPath is the Studio endpoint of checkpoint calls,
	// relative to the API URL (not to the workspace API base).
	RuleCheckpointsPath = "/api/v1/rule-checkpoints/"
	// HeaderRuleCheckpointToken carries the snapshot's checkpoint token on
	// checkpoint calls.
	HeaderRuleCheckpointToken = "X-Rule-Checkpoint-Token"
)

// PostRuleCheckpoint posts payload to {api_url}/api/v1/rule-checkpoints/
// with the client's headers and the snapshot token, and returns the 2xx
// body. The URL is built from the client only; redirects are not followed
// (they would carry the token elsewhere). Transport failures are retried like
// the other Studio calls: checkpoint calls are idempotent per occurrence and
// phase. A non-2xx answer, or one too large to read, is an [*StatusError] with the
// token masked; a transport failure is returned with the token masked.
func (a *Client) PostRuleCheckpoint(ctx context.Context, token string, payload []byte) ([]byte, error) {
	client := *a.client
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	target := a.apiURL + RuleCheckpointsPath
	secrets := []string{token}
	status, body, err := a.exchange(ctx, &client, http.MethodPost, target, RuleCheckpointsPath, payload,
		http.Header{HeaderRuleCheckpointToken: {token}}, secrets)
	if err != nil {
		return nil, err
	}
	if status < 200 || status > 299 {
		return nil, &StatusError{Method: http.MethodPost, Path: RuleCheckpointsPath, StatusCode: status, Body: a.mask(snippet(body), secrets)}
	}
	return body, nil
}
