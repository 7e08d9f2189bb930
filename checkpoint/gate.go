package checkpoint

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/internal/bootid"
	"github.com/supervaize/supervaizer-go/internal/canon"
	"github.com/supervaize/supervaizer-go/internal/redact"
	"github.com/supervaize/supervaizer-go/store"
	"github.com/supervaize/supervaizer-go/studio"
)

// Rule-checkpoint decision statuses.
const (
	Allow = "allow" // proceed
	Pause = "pause" // wait for rule.checkpoint.resume
	Stop  = "stop"  // do not proceed
)

// RuleSnapshotVersion is the only rule_snapshot version this SDK accepts.
const RuleSnapshotVersion = 1

// Errors of the rule-checkpoint helpers. Test them with
// errors.Is; [BlockedError], [RecoveryRequiredError] and
// [RequestError] carry the details (errors.As).
var (
	// ErrBlocked: Studio decided something other than allow.
	ErrBlocked = errors.New("supervaizer: rule checkpoint blocked")
	// ErrRecoveryRequired: the occurrence cannot run as asked; see
	// [Recover].
	ErrRecoveryRequired = errors.New("supervaizer: rule checkpoint recovery required")
	// ErrInvalidState: invalid input or persisted state (no
	// snapshot, case owned by another agent, context changed on retry,
	// snapshot hash mismatch in a Studio response, …).
	ErrInvalidState = errors.New("supervaizer: invalid rule checkpoint state")
	// ErrRequestFailed: the checkpoint call failed (transport error,
	// non-2xx status or unreadable answer).
	ErrRequestFailed = errors.New("supervaizer: rule checkpoint request failed")
)

// invalidState returns an error wrapping ErrInvalidState.
func invalidState(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidState, fmt.Sprintf(format, args...))
}

// Response is Studio's answer to a checkpoint call
// (Response).
type Response struct {
	CheckpointID string `json:"checkpoint_id"`
	Status       string `json:"status"` // allow, pause or stop
	SnapshotHash string `json:"snapshot_hash"`
	InputHash    string `json:"input_hash"`
}

// BlockedError is returned when a checkpoint decision is not allow: the effect
// did not run (phase before) or the step did not advance (phase after).
// errors.Is(err, ErrBlocked) is true.
type BlockedError struct {
	OccurrenceID string
	Phase        string   // before or after
	Status       string   // the final decision, normally stop
	DecisionID   string   // set when the decision came through rule.checkpoint.resume
	Response     Response // Studio's answer to the checkpoint call
}

// Error names the occurrence, the phase and the decision.
func (e *BlockedError) Error() string {
	return fmt.Sprintf("supervaizer: rule checkpoint blocked: occurrence %q, phase %s, decision %s (checkpoint %s)",
		e.OccurrenceID, e.Phase, e.Status, e.Response.CheckpointID)
}

// Is reports whether target is ErrBlocked.
func (e *BlockedError) Is(target error) bool { return target == ErrBlocked }

// RecoveryRequiredError is returned when an occurrence cannot run as asked: it
// is already claimed, active in this process, has a started effect without a
// recorded outcome, is not ready to recover, or its advancement is ambiguous.
// errors.Is(err, ErrRecoveryRequired) is true.
type RecoveryRequiredError struct {
	OccurrenceID string
	Reason       string // one of the Recovery… constants, e.g. RecoveryOccurrenceActive
	// EffectStarted and EffectCompleted describe the persisted effect: a
	// started effect without completion has an unknown outcome, which the
	// agent must establish before [Recover] with ConfirmEffect.
	EffectStarted, EffectCompleted bool
	// Decision is the persisted decision that holds the occurrence, when
	// there is one: the status of its before checkpoint when the effect has
	// not started, else of its after checkpoint. It is Pause while
	// Studio's decision is awaited (it comes through rule.checkpoint.resume;
	// see [Runtime.OnDecision]) and Stop when Studio
	// refused; empty otherwise.
	Decision string
}

// Error names the occurrence, the reason and the decision, if any.
func (e *RecoveryRequiredError) Error() string {
	msg := fmt.Sprintf("supervaizer: rule checkpoint recovery required: %s (occurrence %q)", e.Reason, e.OccurrenceID)
	if e.Decision != "" {
		msg += ", decision " + e.Decision
	}
	return msg
}

// Is reports whether target is ErrRecoveryRequired.
func (e *RecoveryRequiredError) Is(target error) bool { return target == ErrRecoveryRequired }

// Reasons of a [RecoveryRequiredError].
const (
	// RecoveryOccurrenceClaimed: the occurrence already ran (or was decided
	// pause or stop); running it again is refused.
	RecoveryOccurrenceClaimed = "occurrence already claimed"
	// RecoveryOccurrenceActive: the occurrence is running or being recovered
	// in this process; retry once it is done.
	RecoveryOccurrenceActive = "occurrence active"
	// RecoveryEffectStarted: the effect started and no decision is pending on
	// it; finish it with [Recover].
	RecoveryEffectStarted = "effect started without a recorded outcome"
	// RecoveryNotReady: nothing to recover yet (no completed effect, see
	// Recovery.ConfirmEffect), or the after decision is not allow.
	RecoveryNotReady = "not ready to recover"
	// RecoveryAmbiguousAdvancement: an advance started and never completed;
	// the SDK will not advance again, the agent must check by itself.
	RecoveryAmbiguousAdvancement = "advancement is ambiguous"
)

// RequestError is a failed checkpoint call. errors.Is(err,
// ErrRequestFailed) is true. No credential appears in it.
type RequestError struct {
	StatusCode int    // HTTP status; 0 when no answer was received
	Body       string // start of the error answer, secrets masked
	Err        error  // the transport failure or decoding problem, secrets masked
}

// Error describes the failure.
func (e *RequestError) Error() string {
	msg := "supervaizer: rule checkpoint request failed"
	if e.StatusCode != 0 {
		msg += fmt.Sprintf(": HTTP %d", e.StatusCode)
	}
	if e.Body != "" {
		msg += ": " + e.Body
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns the cause.
func (e *RequestError) Unwrap() error { return e.Err }

// Is reports whether target is ErrRequestFailed.
func (e *RequestError) Is(target error) bool { return target == ErrRequestFailed }

// checkpointToken is the snapshot's checkpoint credential. It redacts itself
// in fmt output (every verb), logs and JSON; only the Studio call reads it.
type checkpointToken string

func (checkpointToken) String() string                      { return redact.Text }
func (checkpointToken) GoString() string                    { return `"` + redact.Text + `"` }
func (checkpointToken) LogValue() slog.Value                { return slog.StringValue(redact.Text) }
func (checkpointToken) MarshalJSON() ([]byte, error)        { return []byte(`"` + redact.Text + `"`), nil }
func (checkpointToken) MarshalText() ([]byte, error)        { return []byte(redact.Text), nil }
func (checkpointToken) Format(f fmt.State, verb rune)       { _, _ = io.WriteString(f, redact.Text) }
func (t checkpointToken) reveal() string                    { return string(t) }
func (t checkpointToken) appearsIn(b []byte) bool           { return appearsIn(b, string(t)) }
func (checkpointToken) AppendText(b []byte) ([]byte, error) { return append(b, redact.Text...), nil }

// appearsIn reports whether secret occurs in b, raw or JSON-escaped.
func appearsIn(b []byte, secret string) bool {
	if secret == "" {
		return false
	}
	if bytes.Contains(b, []byte(secret)) {
		return true
	}
	q, err := json.Marshal(secret)
	return err == nil && bytes.Contains(b, q[1:len(q)-1])
}

// ruleSnapshot is what the SDK keeps of input.rule_snapshot: its hash and
// token. checkpoint_url is validated and dropped. The
// token is held by a closure, which reflection-based printing (fmt of a
// struct that embeds a gate, even with a bad verb) cannot reach.
type ruleSnapshot struct {
	hash  string
	token func() checkpointToken
}

// parseRuleSnapshot reads input.rule_snapshot of a job start. Its errors never
// quote the input.
func parseRuleSnapshot(input json.RawMessage) (*ruleSnapshot, error) {
	var in map[string]json.RawMessage
	if err := json.Unmarshal(input, &in); err != nil || in == nil {
		return nil, invalidState("governed job requires rule_snapshot (the job start input is not an object)")
	}
	raw, ok := in["rule_snapshot"]
	if !ok || isJSONNull(raw) {
		return nil, invalidState("governed job requires rule_snapshot")
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return nil, invalidState("rule_snapshot must be an object")
	}
	str := func(key string) (string, error) {
		v, ok := fields[key]
		if !ok {
			return "", invalidState("rule_snapshot.%s is required", key)
		}
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return "", invalidState("rule_snapshot.%s must be a string", key)
		}
		return s, nil
	}
	hash, err := str("hash")
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(hash) == "" {
		return nil, invalidState("rule_snapshot.hash must not be blank")
	}
	if _, err := str("checkpoint_url"); err != nil { // required, never used
		return nil, err
	}
	v, ok := fields["version"]
	if !ok {
		return nil, invalidState("rule_snapshot.version is required")
	}
	if string(bytes.TrimSpace(v)) != "1" {
		return nil, invalidState("rule_snapshot.version must be %d", RuleSnapshotVersion)
	}
	token, err := str("checkpoint_token")
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(token) == "" || !redact.HeaderSafe(token) {
		return nil, invalidState("rule_snapshot.checkpoint_token must be non-blank printable ASCII")
	}
	return newRuleSnapshot(hash, token), nil
}

// newRuleSnapshot holds a validated hash and token.
func newRuleSnapshot(hash, token string) *ruleSnapshot {
	return &ruleSnapshot{hash: hash, token: func() checkpointToken { return checkpointToken(token) }}
}

func isJSONNull(b json.RawMessage) bool { return string(bytes.TrimSpace(b)) == "null" }

// Gate posts rule checkpoints for one governed job of one agent.
// Build it with [NewGate] from the job.start
// request; use it with [Run] and [Recover]. It holds the
// job's rule snapshot, which it never logs or prints (fmt, slog), and is
// immutable and safe for concurrent use. To use it after a restart, persist it
// at job start with [Gate.Save] and rebuild it with
// [RestoreGate].
type Gate struct {
	agent       *Runtime
	account     *studio.Client
	jobID       string
	workspaceID string        // the verified workspace of the job start; "" when unknown
	snapshot    *ruleSnapshot // behind a pointer: reflection-based printing shows an address
	secretRefs  []string
}

// GateOption configures [NewGate].
type GateOption func(*gateConfig)

type gateConfig struct {
	secretRefs []string
	refsSet    bool
}

// WithSecretRefs sets the business-secret paths copied into every checkpoint
// request. Each must start with job.fields., case.metadata., step.payload. or
// context.; a path the agent's capability does not declare is logged as a
// warning. Default: the capability's declared secret_refs.
func WithSecretRefs(paths ...string) GateOption {
	return func(c *gateConfig) { c.secretRefs, c.refsSet = slices.Clone(paths), true }
}

// secretRefPrefixes are the allowed beginnings of a secret path.
var secretRefPrefixes = []string{"job.fields.", "case.metadata.", "step.payload.", "context."}

// NewGate builds the gate of the governed job started by req
// (the v2 job.start request): it reads the opaque input.rule_snapshot (hash,
// version 1, checkpoint_token; checkpoint_url is ignored) and binds the gate
// to agent, which must be the agent req names (a request that names none, as
// a v1 start, is taken to be agent's). Checkpoints are posted with account
// (its API URL and headers) and nothing else from the snapshot. The gate is
// bound to the request's verified workspace (req.WorkspaceAuthorization, set
// by the server), which [Gate.Save] records. It fails with
// an error wrapping [ErrInvalidState] when the snapshot is missing
// or invalid, when req names another agent or no job, when agent does not
// declare capabilities.rule_checkpoints, or when a secret path is invalid; an
// error never quotes the token.
func NewGate(agent *Runtime, account *studio.Client, req *contracts.ActionRequest, opts ...GateOption) (*Gate, error) {
	switch {
	case agent == nil:
		return nil, invalidState("NewGate needs the agent's runtime (Agent.Checkpoints)")
	case account == nil:
		return nil, invalidState("rule checkpoints need a Studio account")
	case req == nil:
		return nil, invalidState("NewGate needs the job start request")
	case req.AgentSlug != "" && req.AgentSlug != agent.Slug():
		return nil, invalidState("the job start request is for agent %q, not %q", req.AgentSlug, agent.Slug())
	case strings.TrimSpace(req.JobID) == "":
		return nil, invalidState("the job start request has no job_id")
	}
	capability := agent.ruleCheckpointCapability()
	if capability == nil {
		return nil, invalidState("agent %q does not declare capabilities.rule_checkpoints", agent.Slug())
	}
	snap, err := parseRuleSnapshot(req.Input)
	if err != nil {
		return nil, err
	}
	var cfg gateConfig
	for _, o := range opts {
		o(&cfg)
	}
	refs := slices.Clone(capability.SecretRefs)
	if cfg.refsSet {
		refs = cfg.secretRefs
	}
	var workspaceID string
	if req.WorkspaceAuthorization != nil {
		workspaceID = req.WorkspaceAuthorization.WorkspaceID
	}
	return newGate(agent, account, req.JobID, workspaceID, snap, refs)
}

// newGate checks the secret paths and builds the gate; agent declares the
// capability.
func newGate(agent *Runtime, account *studio.Client, jobID, workspaceID string, snap *ruleSnapshot, refs []string) (*Gate, error) {
	declared := agent.ruleCheckpointCapability().SecretRefs
	if refs == nil {
		refs = []string{}
	}
	logger := agent.checkpointLogger(account)
	for _, p := range refs {
		if !slices.ContainsFunc(secretRefPrefixes, func(prefix string) bool { return strings.HasPrefix(p, prefix) }) {
			return nil, invalidState("invalid path %q in secret_refs: it must start with one of %s", p, strings.Join(secretRefPrefixes, ", "))
		}
		if !slices.Contains(declared, p) {
			logger.Warn("rule checkpoint gate uses a secret path not declared in capabilities.rule_checkpoints.secret_refs",
				slog.String("agent_slug", agent.Slug()), slog.String("path", p))
		}
	}
	return &Gate{agent: agent, account: account, jobID: jobID, workspaceID: workspaceID, snapshot: snap, secretRefs: refs}, nil
}

// AgentSlug returns the slug of the agent the gate belongs to.
func (g Gate) AgentSlug() string { return g.agent.Slug() }

// JobID returns the governed job's id.
func (g Gate) JobID() string { return g.jobID }

// SnapshotHash returns the rule snapshot's hash, echoed in every checkpoint.
func (g Gate) SnapshotHash() string { return g.snapshot.hash }

// SecretRefs returns the secret paths sent with every checkpoint.
func (g Gate) SecretRefs() []string { return slices.Clone(g.secretRefs) }

// String describes the gate without its snapshot.
func (g Gate) String() string {
	return fmt.Sprintf("checkpoint.Gate(agent %s, job %s)", g.agent.Slug(), g.jobID)
}

// GoString describes the gate without its snapshot.
func (g Gate) GoString() string { return g.String() }

// Format implements fmt.Formatter: every verb prints [Gate.String],
// so that no verb reaches the snapshot or the account.
func (g Gate) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, g.String()) }

// LogValue implements slog.LogValuer: the agent and the job, never the snapshot.
func (g Gate) LogValue() slog.Value {
	return slog.GroupValue(slog.String("agent_slug", g.agent.Slug()), slog.String("job_id", g.jobID))
}

// encodeContext marshals a checkpoint context (nil is {}) and returns it with
// its canonical hash. A context that carries the snapshot token is refused:
// the snapshot never enters business context.
func (g Gate) encodeContext(what string, c map[string]any) (json.RawMessage, string, error) {
	if c == nil {
		c = map[string]any{}
	}
	raw, err := json.Marshal(c)
	if err != nil {
		return nil, "", invalidState("%s cannot be encoded as JSON: %v", what, err)
	}
	if g.snapshot.token().appearsIn(raw) {
		return nil, "", invalidState("%s contains the rule snapshot's checkpoint token", what)
	}
	hash, err := canon.Hash(raw)
	if err != nil {
		return nil, "", invalidState("%s cannot be hashed: %v", what, err)
	}
	return raw, hash, nil
}

// ruleCheckpointRequest is the body of a checkpoint call.
type ruleCheckpointRequest struct {
	OccurrenceID string          `json:"occurrence_id"`
	Phase        string          `json:"phase"`
	SnapshotHash string          `json:"snapshot_hash"`
	JobID        string          `json:"job_id"`
	CaseID       string          `json:"case_id"`
	StepID       string          `json:"step_id"`
	Context      json.RawMessage `json:"context"`
	SecretRefs   []string        `json:"secret_refs"`
}

// check posts one checkpoint and validates the answer.
func (g Gate) check(ctx context.Context, body ruleCheckpointRequest) (Response, error) {
	body.SnapshotHash, body.SecretRefs = g.snapshot.hash, g.secretRefs
	payload, err := json.Marshal(body)
	if err != nil {
		return Response{}, invalidState("encode the checkpoint request: %v", err)
	}
	raw, err := postRuleCheckpoint(ctx, g.account, g.snapshot.token(), payload)
	if err != nil {
		return Response{}, err
	}
	return decodeCheckpointResponse(raw, g.snapshot.hash)
}

// decodeCheckpointResponse validates Studio's answer: a checkpoint id, a known
// status and the gate's snapshot hash.
func decodeCheckpointResponse(raw []byte, snapshotHash string) (Response, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return Response{}, &RequestError{StatusCode: http.StatusOK, Err: errors.New("the answer is not a JSON object")}
	}
	var resp Response
	for _, f := range []struct {
		key      string
		dst      *string
		required bool
	}{
		{"checkpoint_id", &resp.CheckpointID, true},
		{"status", &resp.Status, true},
		{"snapshot_hash", &resp.SnapshotHash, true},
		{"input_hash", &resp.InputHash, false},
	} {
		v, ok := fields[f.key]
		if !ok || isJSONNull(v) {
			if f.required {
				return Response{}, &RequestError{StatusCode: http.StatusOK, Err: fmt.Errorf("the answer has no %s", f.key)}
			}
			continue
		}
		if err := json.Unmarshal(v, f.dst); err != nil {
			return Response{}, &RequestError{StatusCode: http.StatusOK, Err: fmt.Errorf("the answer's %s is not a string", f.key)}
		}
	}
	if strings.TrimSpace(resp.CheckpointID) == "" {
		return Response{}, &RequestError{StatusCode: http.StatusOK, Err: errors.New("the answer's checkpoint_id is blank")}
	}
	switch resp.Status {
	case Allow, Pause, Stop:
	default:
		return Response{}, &RequestError{StatusCode: http.StatusOK, Err: fmt.Errorf("unknown decision status %q", redact.Truncate(resp.Status, 40))}
	}
	if resp.SnapshotHash != snapshotHash {
		return Response{}, invalidState("the checkpoint answer's snapshot_hash does not match the gate's snapshot")
	}
	return resp, nil
}

// postRuleCheckpoint posts a checkpoint through the Studio client (see
// [studio.Client.PostRuleCheckpoint]); every failure is a
// *RequestError.
func postRuleCheckpoint(ctx context.Context, c *studio.Client, token checkpointToken, payload []byte) ([]byte, error) {
	body, err := c.PostRuleCheckpoint(ctx, token.reveal(), payload)
	if se := (*studio.StatusError)(nil); errors.As(err, &se) {
		return nil, &RequestError{StatusCode: se.StatusCode, Body: se.Body}
	}
	if err != nil {
		return nil, &RequestError{Err: err}
	}
	return body, nil
}

// --- persisted state ---

// checkpointKeyspace is the first part of every rule-checkpoint store key.
const checkpointKeyspace = "rule-checkpoints"

// Statuses of a record besides the decisions.
const (
	statusChecking = "checking" // before: request sent, answer not persisted
	statusPending  = "pending"  // after: checkpoint not answered yet
)

// checkpointRecord is the persisted state of one phase of an occurrence.
// The effect and advancement flags are used by the
// after record only.
type checkpointRecord struct {
	OccurrenceID         string    `json:"occurrence_id"`
	Phase                string    `json:"phase"`
	AgentSlug            string    `json:"agent_slug"`
	JobID                string    `json:"job_id"`
	CaseID               string    `json:"case_id"`
	SnapshotHash         string    `json:"snapshot_hash"`
	StepID               string    `json:"step_id"`
	ContextHash          string    `json:"context_hash,omitempty"`
	Status               string    `json:"status"`
	CheckpointID         string    `json:"checkpoint_id,omitempty"`
	InputHash            string    `json:"input_hash,omitempty"`
	DecisionID           string    `json:"decision_id,omitempty"`
	EffectStarted        bool      `json:"effect_started,omitempty"`
	EffectCompleted      bool      `json:"effect_completed,omitempty"`
	AdvancementStarted   bool      `json:"advancement_started,omitempty"`
	AdvancementCompleted bool      `json:"advancement_completed,omitempty"`
	UpdatedAt            time.Time `json:"updated_at"`
}

// checkpointCase records that a case was announced to Studio and which agent
// owns it.
type checkpointCase struct {
	AgentSlug   string    `json:"agent_slug"`
	JobID       string    `json:"job_id"`
	CaseID      string    `json:"case_id"`
	Announced   bool      `json:"announced"`
	AnnouncedAt time.Time `json:"announced_at"`
}

// keyPart keeps store keys within store.MaxKeyLen: long parts are hashed.
func keyPart(s string) string {
	if len(s) > 128 {
		d := sha256.Sum256([]byte(s))
		return "sha256:" + hex.EncodeToString(d[:])
	}
	return s
}

// caseKey is the record of a case; it is not scoped by agent, so that a case
// bound to one agent is seen by the others.
func caseKey(jobID, caseID string) string {
	return store.Key(checkpointKeyspace, "case", keyPart(jobID), keyPart(caseID))
}

// occurrenceKey is the record of one phase of an occurrence of an agent.
func occurrenceKey(agentSlug, occurrenceID, phase string) string {
	return store.Key(checkpointKeyspace, "occurrence", agentSlug, keyPart(occurrenceID), phase)
}

// retainedKey holds a decision that arrived before its waiter.
func retainedKey(agentSlug, occurrenceID, phase string) string {
	return store.Key(checkpointKeyspace, "retained", agentSlug, keyPart(occurrenceID), phase)
}

// retainedPrefix is the prefix of an agent's retained decisions.
func retainedPrefix(agentSlug string) string {
	return store.Prefix(checkpointKeyspace, "retained", agentSlug)
}

// maxCASAttempts bounds a read-modify-write loop that keeps losing races.
const maxCASAttempts = 64

// checkpointRuntime is an agent's rule-checkpoint state: the server's store,
// the occurrences active in this process, the goroutines waiting for a
// decision and the decision hooks. NewServer creates it for each agent that
// declares the capability; before that, [Runtime.OnDecision]
// may create one without a store, which only holds the hooks.
type checkpointRuntime struct {
	slug   string
	store  store.Store // nil until the agent is served
	logger *slog.Logger
	now    func() time.Time
	retain int            // bound of retained decisions
	hooks  *decisionHooks // shared with the runtime it replaces

	// handoff orders a decision's arrival (is a step active? persist) against
	// a refusing step's hand-over (release, read the persisted decisions), so
	// that a decision is never left both to a step that is letting go and to
	// hooks told the step would take it.
	handoff sync.Mutex

	// started is closed once the server started (nil: started); stopped
	// when it shuts down. See Config.
	started, stopped <-chan struct{}
	// prev is the runtime of the server that served the agent before this
	// one was attached: the agent goes back to it once this server stops.
	prev *checkpointRuntime

	// Sharing the store with other instances (claim.go): this process's
	// instance and boot, the lease of its claims, and how often a paused step
	// re-reads its record (0: never).
	instance, boot string
	lease, poll    time.Duration

	// seam, set by tests only, is called at the seam… points where a
	// decision's arrival and a refusing step's hand-over interleave; nil in
	// production.
	seam func(point string)

	mu      sync.Mutex
	active  map[string]struct{}                   // occurrence ids running in this process
	waiters map[string]map[chan struct{}]struct{} // by occurrence record key
}

// maxRetainedDecisions bounds the decisions kept for a waiter that has not
// registered yet; the oldest is evicted first.
const maxRetainedDecisions = 1024

func newCheckpointRuntime(slug string, st store.Store, logger *slog.Logger) *checkpointRuntime {
	return &checkpointRuntime{slug: slug, store: st, logger: logger, now: time.Now, retain: maxRetainedDecisions,
		boot: bootid.New(), lease: DefaultClaimLease,
		hooks: &decisionHooks{}, active: map[string]struct{}{}, waiters: map[string]map[chan struct{}]struct{}{}}
}

// Runtime is one agent's rule-checkpoint runtime: its slug, its declared
// capability and, once a server serves the agent, the state kept over the
// server's store. Decision hooks may be registered before that.
//
// The root package builds one per agent and attaches it when a server serves
// the agent; an author gets it with the agent's Checkpoints method
// (supervaizer.Agent.Checkpoints) and passes it to [NewGate] and
// [RestoreGate]. It is safe for concurrent use.
type Runtime struct {
	slug       string
	capability *contracts.RuleCheckpoints // nil when not declared

	mu          sync.RWMutex
	checkpoints *checkpointRuntime
}

// NewRuntime returns the runtime of the agent slug, not attached to a store
// yet; capability is its capabilities.rule_checkpoints, nil when not
// declared. The root package calls it when it builds an agent.
func NewRuntime(slug string, capability *contracts.RuleCheckpoints) *Runtime {
	return &Runtime{slug: slug, capability: capability}
}

// Slug returns the agent slug.
func (a *Runtime) Slug() string { return a.slug }

// Declared reports whether the agent declares capabilities.rule_checkpoints.
func (a *Runtime) Declared() bool { return a.capability != nil }

// Config is what a server gives an agent's rule-checkpoint runtime (see
// [Runtime.Attach]).
type Config struct {
	Store  store.Store
	Logger *slog.Logger
	// Started is closed once the server's startup succeeded (when attached
	// to Studio, its registration handshake): guarded steps call Studio only
	// after it. Nil: the server is started.
	Started <-chan struct{}
	// Stopped is closed when the server shuts down; a step still waiting for
	// Started then fails.
	Stopped <-chan struct{}
	// Instance names this controller instance across restarts ("" when
	// unknown) and Boot this process (random when empty): an occurrence
	// claimed by an earlier boot of the same instance is taken over at once.
	Instance, Boot string
	// PollInterval is how often a paused step re-reads its record, to see a
	// decision another instance persisted. Zero: DefaultPollInterval when
	// the store may be shared (it is not store.Exclusive), else no polling.
	PollInterval time.Duration
	// ClaimLease is how long the claim of an instance that died keeps its
	// occurrence from the other instances. Zero: DefaultClaimLease.
	ClaimLease time.Duration
}

// Attach connects the runtime to the server's store and lifetime described
// by cfg, keeping the decision hooks registered before. The root package's
// NewServer calls it for every agent that declares rule checkpoints; a
// second call replaces the first (a step already running keeps its state)
// while its server runs: once cfg.Stopped is closed, the agent goes back to
// the runtime of the latest server still running (a test's twin server, or
// the controller of a registration handshake, built and shut down while
// another server serves the agent, takes nothing from it).
func (a *Runtime) Attach(cfg Config) {
	rt := newCheckpointRuntime(a.slug, cfg.Store, cfg.Logger)
	rt.started, rt.stopped = cfg.Started, cfg.Stopped
	rt.instance = cfg.Instance
	if cfg.Boot != "" {
		rt.boot = cfg.Boot
	}
	if cfg.ClaimLease > 0 {
		rt.lease = cfg.ClaimLease
	}
	rt.poll = cfg.PollInterval
	if rt.poll <= 0 && !store.IsExclusive(cfg.Store) {
		rt.poll = DefaultPollInterval
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.checkpoints != nil { // hooks registered before the server
		rt.hooks = a.checkpoints.hooks
	}
	rt.prev = a.current()
	a.checkpoints = rt
}

// current returns the runtime of the latest server still serving the agent:
// the last one attached, else, once its server stopped, the latest attached
// before it whose server runs; the last one attached when none runs, nil when
// none was attached. It forgets the stopped servers' runtimes behind the last
// one. The caller holds a.mu.
func (a *Runtime) current() *checkpointRuntime {
	last := a.checkpoints
	if last == nil || last.store == nil {
		return nil
	}
	for p := last; p.prev != nil; {
		if closed(p.prev.stopped) {
			p.prev = p.prev.prev
			continue
		}
		p = p.prev
	}
	if last.prev != nil && closed(last.stopped) {
		return last.prev
	}
	return last
}

// closed reports whether ch is closed (a nil channel never is).
func closed(ch <-chan struct{}) bool {
	if ch == nil {
		return false
	}
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// ruleCheckpointCapability returns capabilities.rule_checkpoints, or nil.
func (a *Runtime) ruleCheckpointCapability() *contracts.RuleCheckpoints { return a.capability }

// checkpointRuntime returns the agent's runtime, set when a Server serves it.
func (a *Runtime) checkpointRuntime() (*checkpointRuntime, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	rt := a.current()
	if rt == nil {
		return nil, invalidState("agent %q is not served: NewServer attaches the rule-checkpoint store", a.slug)
	}
	return rt, nil
}

// checkpointLogger is the server's logger once the agent is served, else the
// account's.
func (a *Runtime) checkpointLogger(account *studio.Client) *slog.Logger {
	a.mu.Lock()
	defer a.mu.Unlock()
	if rt := a.current(); rt != nil && rt.logger != nil {
		return rt.logger
	}
	return account.Logger()
}

// getJSON reads and decodes the value at key; nil when absent.
func getJSON[T any](ctx context.Context, st store.Store, key string) (*T, []byte, error) {
	raw, found, err := st.Get(ctx, key)
	if err != nil || !found {
		return nil, nil, err
	}
	v := new(T)
	if err := json.Unmarshal(raw, v); err != nil {
		return nil, nil, invalidState("corrupt rule-checkpoint record %s: %v", key, err)
	}
	return v, raw, nil
}

// loadRecord reads an occurrence record; nil when absent.
func (rt *checkpointRuntime) loadRecord(ctx context.Context, key string) (*checkpointRecord, error) {
	rec, _, err := getJSON[checkpointRecord](ctx, rt.store, key)
	return rec, err
}

// createRecord stores rec at key unless a record exists; it returns the
// existing record when there is one.
func (rt *checkpointRuntime) createRecord(ctx context.Context, key string, rec *checkpointRecord) (*checkpointRecord, error) {
	rec.UpdatedAt = rt.now().UTC()
	raw, err := json.Marshal(rec)
	if err != nil {
		return nil, err
	}
	existing, stored, err := rt.store.PutIfAbsent(ctx, key, raw)
	if err != nil || stored {
		return nil, err
	}
	prev := new(checkpointRecord)
	if err := json.Unmarshal(existing, prev); err != nil {
		return nil, invalidState("corrupt rule-checkpoint record %s: %v", key, err)
	}
	return prev, nil
}

// errUnchangedRecord tells updateRecord that fn made no change to persist.
var errUnchangedRecord = errors.New("unchanged")

// updateRecord applies fn to the record at key with compare-and-swap and
// returns the record as stored. fn may return errUnchangedRecord to write
// nothing; any other error aborts. A missing record is an error.
func (rt *checkpointRuntime) updateRecord(ctx context.Context, key string, fn func(*checkpointRecord) error) (*checkpointRecord, error) {
	for range maxCASAttempts {
		rec, old, err := getJSON[checkpointRecord](ctx, rt.store, key)
		if err != nil {
			return nil, err
		}
		if rec == nil {
			return nil, invalidState("rule-checkpoint record %s disappeared", key)
		}
		if err := fn(rec); err != nil {
			if errors.Is(err, errUnchangedRecord) {
				return rec, nil
			}
			return nil, err
		}
		rec.UpdatedAt = rt.now().UTC()
		raw, err := json.Marshal(rec)
		if err != nil {
			return nil, err
		}
		swapped, err := rt.store.CompareAndSwap(ctx, key, old, raw)
		if err != nil {
			return nil, err
		}
		if swapped {
			return rec, nil
		}
	}
	return nil, fmt.Errorf("supervaizer: rule-checkpoint record %s: too many concurrent updates", key)
}

// putJSON stores v at key, replacing any value.
func putJSON(ctx context.Context, st store.Store, key string, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	for range maxCASAttempts {
		old, found, err := st.Get(ctx, key)
		if err != nil {
			return err
		}
		var done bool
		if found {
			done, err = st.CompareAndSwap(ctx, key, old, raw)
		} else {
			_, done, err = st.PutIfAbsent(ctx, key, raw)
		}
		if err != nil || done {
			return err
		}
	}
	return fmt.Errorf("supervaizer: rule-checkpoint record %s: too many concurrent updates", key)
}

// Points where a test may stop the runtime (checkpointRuntime.seam).
const (
	seamResumeChecked    = "resume: the step's activity read, the decision not persisted yet"
	seamHandoffBegin     = "handoff: a refusing step is about to let go of its occurrence"
	seamHandoffContended = "handoff: a decision's arrival holds the hand-over lock"
	seamHandoffRead      = "handoff: occurrence released, persisted decisions read"
)

// at calls the test seam, if any, at point.
func (rt *checkpointRuntime) at(point string) {
	if rt.seam != nil {
		rt.seam(point)
	}
}

// lockHandoff takes the hand-over lock, telling the test seam when a
// decision's arrival holds it.
func (rt *checkpointRuntime) lockHandoff() {
	if rt.handoff.TryLock() {
		return
	}
	rt.at(seamHandoffContended)
	rt.handoff.Lock()
}

// awaitStarted returns once the server started (when attached to Studio,
// its registration handshake succeeded): a guarded step, and in particular the
// recovery of one a previous run left unfinished, never calls Studio before
// startup can no longer fail. A step that comes earlier waits; it fails when
// ctx ends or the server shuts down first.
func (rt *checkpointRuntime) awaitStarted(ctx context.Context, occurrenceID string) error {
	if rt.started == nil {
		return nil
	}
	select {
	case <-rt.started:
		return nil
	default:
	}
	rt.logger.LogAttrs(ctx, slog.LevelInfo, "guarded step waits for the server to start (Studio registration handshake) before calling Studio",
		slog.String("agent_slug", rt.slug), slog.String("occurrence_id", occurrenceID))
	select {
	case <-rt.started:
		return nil
	case <-rt.stopped:
		return invalidState("the server shut down before it started: occurrence %q was not run", occurrenceID)
	case <-ctx.Done():
		return fmt.Errorf("supervaizer: guarded step %q waiting for the server to start: %w", occurrenceID, ctx.Err())
	}
}

// isActive reports whether the occurrence is running in this process.
func (rt *checkpointRuntime) isActive(occurrenceID string) bool {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	_, busy := rt.active[occurrenceID]
	return busy
}

// subscribe registers a waiter for the record at key; notify wakes it.
func (rt *checkpointRuntime) subscribe(key string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	rt.mu.Lock()
	set := rt.waiters[key]
	if set == nil {
		set = map[chan struct{}]struct{}{}
		rt.waiters[key] = set
	}
	set[ch] = struct{}{}
	rt.mu.Unlock()
	return ch, func() {
		rt.mu.Lock()
		if cur := rt.waiters[key]; cur != nil {
			delete(cur, ch)
			if len(cur) == 0 {
				delete(rt.waiters, key)
			}
		}
		rt.mu.Unlock()
	}
}

// notify wakes the waiters of the record at key without blocking.
func (rt *checkpointRuntime) notify(key string) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	for ch := range rt.waiters[key] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}
