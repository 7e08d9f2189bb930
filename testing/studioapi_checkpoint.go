package testing

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/supervaize/supervaizer-go/checkpoint"
	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/studio"
)

// ruleSnapshotVersion is the version of the rule snapshots Studio sends
// (checkpoints.md §2: it must be 1).
const ruleSnapshotVersion = 1

// Wildcards of [FakeStudioAPI.SetDecision].
const (
	AnyOccurrence = "" // the decision applies to every occurrence
	AnyPhase      = "" // the decision applies to both phases
)

type decisionKey struct{ occurrenceID, phase string }

// CheckpointCall is one rule checkpoint the fake answered:
// the request and the answer.
type CheckpointCall struct {
	Seq          int // position among all the requests (see [RecordedRequest])
	OccurrenceID string
	Phase        string // contracts.PhaseBefore or contracts.PhaseAfter
	SnapshotHash string
	JobID        string
	CaseID       string
	StepID       string
	Context      map[string]any // decoded with encoding/json (numbers are float64)
	SecretRefs   []string

	CheckpointID string // answered; the same for every call of an (occurrence, phase)
	Status       string // answered decision: allow, pause or stop
	InputHash    string // answered; "ih_" + the start of SHA-256 of the canonical context
}

// ResumeInput returns the input of the rule.checkpoint.resume action that
// delivers the decision status (allow or stop) for this checkpoint.
// The request also needs the call's job_id, case_id and
// agent_slug; see [TestServer.ResumeRequest].
func (c CheckpointCall) ResumeInput(status, decisionID string) map[string]any {
	return map[string]any{
		"checkpoint_id": c.CheckpointID, "occurrence_id": c.OccurrenceID, "phase": c.Phase, "status": status,
		"snapshot_hash": c.SnapshotHash, "input_hash": c.InputHash, "decision_id": decisionID,
	}
}

// checkpointRec is a recorded checkpoint; the context is kept as JSON so that
// every accessor returns a fresh copy.
type checkpointRec struct {
	call    CheckpointCall
	context json.RawMessage
}

// RuleSnapshot returns a valid rule_snapshot for a governed job.start input:
// {"hash": hash, "version": 1, "checkpoint_token": a new
// random token, "checkpoint_url": a decoy}. The fake accepts the token on
// checkpoints of this snapshot hash only. The checkpoint_url points at a
// decoy server that must never be called ([FakeStudioAPI.SnapshotURLCalls]).
// The token is a credential: tests may check that it never reaches logs or
// results, as the SDK promises.
func (f *FakeStudioAPI) RuleSnapshot(hash string) map[string]any {
	f.t.Helper()
	if strings.TrimSpace(hash) == "" {
		f.t.Fatalf("svtest: RuleSnapshot: the hash must not be blank")
		return nil
	}
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		f.t.Fatalf("svtest: RuleSnapshot: random token: %v", err)
		return nil
	}
	token := "svtest-rct-" + hex.EncodeToString(b[:])
	f.mu.Lock()
	f.tokens[token] = hash
	f.mu.Unlock()
	return map[string]any{
		"hash":             hash,
		"version":          ruleSnapshotVersion,
		"checkpoint_token": token,
		"checkpoint_url":   f.decoy.URL + studio.RuleCheckpointsPath,
	}
}

// SetDecision sets the decision (allow, pause or stop; other values test the
// SDK's refusal) answered to the checkpoints of occurrenceID in phase.
// [AnyOccurrence] and [AnyPhase] are wildcards; the most specific rule wins
// (occurrence and phase, then occurrence, then phase, then both wildcards).
// An empty status removes the rule. Without any rule the decision is allow.
func (f *FakeStudioAPI) SetDecision(occurrenceID, phase, status string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := decisionKey{occurrenceID, phase}
	if status == "" {
		delete(f.decisions, k)
		return
	}
	f.decisions[k] = status
}

// decisionLocked returns the decision for (occurrence, phase). Callers hold mu.
func (f *FakeStudioAPI) decisionLocked(occurrenceID, phase string) string {
	for _, k := range []decisionKey{{occurrenceID, phase}, {occurrenceID, AnyPhase}, {AnyOccurrence, phase}, {AnyOccurrence, AnyPhase}} {
		if s, ok := f.decisions[k]; ok {
			return s
		}
	}
	return checkpoint.Allow
}

// Checkpoints returns the checkpoint calls answered so far, in order.
func (f *FakeStudioAPI) Checkpoints() []CheckpointCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.checkpointsLocked()
}

func (f *FakeStudioAPI) checkpointsLocked() []CheckpointCall {
	out := make([]CheckpointCall, len(f.checkpoints))
	for i, rec := range f.checkpoints {
		c := rec.call
		c.SecretRefs = slices.Clone(c.SecretRefs)
		_ = json.Unmarshal(rec.context, &c.Context) // it decoded when it was recorded
		out[i] = c
	}
	return out
}

// WaitCheckpoints waits until at least n checkpoint calls were answered and
// returns them all; after [WaitTimeout] it ends the test. Call it from the
// test's goroutine.
func (f *FakeStudioAPI) WaitCheckpoints(t testing.TB, n int) []CheckpointCall {
	t.Helper()
	f.wait(t, fmt.Sprintf("%d rule checkpoint call(s)", n), func() bool { return len(f.checkpoints) >= n })
	return f.Checkpoints()
}

type wireCheckpoint struct {
	OccurrenceID *string         `json:"occurrence_id"`
	Phase        *string         `json:"phase"`
	SnapshotHash *string         `json:"snapshot_hash"`
	JobID        *string         `json:"job_id"`
	CaseID       *string         `json:"case_id"`
	StepID       *string         `json:"step_id"`
	Context      json.RawMessage `json:"context"`
	SecretRefs   *[]string       `json:"secret_refs"`
}

// handleCheckpoint answers a rule checkpoint.
func (f *FakeStudioAPI) handleCheckpoint(r *http.Request, body []byte, seq int) (int, any, error) {
	tokenHash, ok := f.tokenHash(r.Header.Get(studio.HeaderRuleCheckpointToken))
	if !ok {
		return 0, nil, &apiError{status: http.StatusForbidden, detail: "missing or unknown " + studio.HeaderRuleCheckpointToken}
	}
	var w wireCheckpoint
	if err := decodeBody(body, &w); err != nil {
		return 0, nil, err
	}
	for _, fld := range []struct {
		name string
		v    *string
	}{
		{"occurrence_id", w.OccurrenceID}, {"phase", w.Phase}, {"snapshot_hash", w.SnapshotHash},
		{"job_id", w.JobID}, {"case_id", w.CaseID}, {"step_id", w.StepID},
	} {
		if fld.v == nil || strings.TrimSpace(*fld.v) == "" {
			return 0, nil, badRequest("%s is required", fld.name)
		}
	}
	if *w.Phase != contracts.PhaseBefore && *w.Phase != contracts.PhaseAfter {
		return 0, nil, badRequest("phase must be %q or %q", contracts.PhaseBefore, contracts.PhaseAfter)
	}
	var decoded map[string]any
	if err := json.Unmarshal(w.Context, &decoded); err != nil || decoded == nil {
		return 0, nil, badRequest("context must be a JSON object of ordinary values")
	}
	if w.SecretRefs == nil {
		return 0, nil, badRequest("secret_refs must be an array of strings")
	}
	if *w.SnapshotHash != tokenHash {
		return 0, nil, &apiError{status: http.StatusForbidden, detail: "the checkpoint token was not issued for this snapshot_hash"}
	}
	inputHash, err := canonicalHash(w.Context)
	if err != nil {
		return 0, nil, badRequest("context: %v", err)
	}
	call := CheckpointCall{
		Seq: seq, OccurrenceID: *w.OccurrenceID, Phase: *w.Phase, SnapshotHash: *w.SnapshotHash,
		JobID: *w.JobID, CaseID: *w.CaseID, StepID: *w.StepID, SecretRefs: slices.Clone(*w.SecretRefs),
		CheckpointID: "cp_" + shortHash(*w.OccurrenceID+"\x00"+*w.Phase), InputHash: "ih_" + inputHash,
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.announced[caseKey{call.JobID, call.CaseID}] {
		return 0, nil, &apiError{status: http.StatusConflict,
			detail: "case not announced: post agent.case.start (or agent.case.update) for the job and case before its checkpoints"}
	}
	call.Status = f.decisionLocked(call.OccurrenceID, call.Phase)
	f.checkpoints = append(f.checkpoints, checkpointRec{call: call, context: slices.Clone(w.Context)})
	f.notifyLocked()
	return http.StatusOK, map[string]any{
		"checkpoint_id": call.CheckpointID, "status": call.Status,
		"snapshot_hash": call.SnapshotHash, "input_hash": call.InputHash,
	}, nil
}

// tokenHash returns the snapshot hash a checkpoint token was issued for. The
// token is compared in constant time with every issued token.
func (f *FakeStudioAPI) tokenHash(token string) (string, bool) {
	if token == "" {
		return "", false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	hash, found := "", false
	for t, h := range f.tokens {
		if subtle.ConstantTimeCompare([]byte(t), []byte(token)) == 1 {
			hash, found = h, true
		}
	}
	return hash, found
}

// canonicalHash returns the start of the SHA-256 of the canonical form of a
// JSON value (sorted keys, no white space, numbers as written).
func canonicalHash(raw json.RawMessage) (string, error) {
	v, err := decodeValue(raw)
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	return shortHash(string(b)), nil
}

// shortHash is the first 12 hex digits of the SHA-256 of s.
func shortHash(s string) string {
	d := sha256.Sum256([]byte(s))
	return hex.EncodeToString(d[:6])
}
