package checkpoint

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/supervaize/supervaizer-go/internal/redact"
	"github.com/supervaize/supervaizer-go/internal/wsctx"
	"github.com/supervaize/supervaizer-go/store"
	"github.com/supervaize/supervaizer-go/studio"
)

// ErrGateNotFound is returned by [RestoreGate] when no gate is
// saved for the job: it was never saved, was forgotten, or belongs to another
// workspace than the caller's (the two are not told apart).
var ErrGateNotFound = errors.New("supervaizer: no saved rule checkpoint gate")

// savedGateVersion is the version of the saved gate record.
const savedGateVersion = 1

// savedGate is a gate as saved in the store. It holds the checkpoint token in
// clear: it is decoded and encoded by this file only, and never logged.
type savedGate struct {
	Version      int       `json:"version"`
	AgentSlug    string    `json:"agent_slug"`
	JobID        string    `json:"job_id"`
	WorkspaceID  string    `json:"workspace_id,omitempty"`
	SnapshotHash string    `json:"snapshot_hash"`
	Token        string    `json:"checkpoint_token"`
	SecretRefs   []string  `json:"secret_refs"`
	SavedAt      time.Time `json:"saved_at"`
}

// sameToken reports in constant time whether s holds the token of g.
func (s *savedGate) sameToken(g Gate) bool {
	return subtle.ConstantTimeCompare([]byte(s.Token), []byte(g.snapshot.token().reveal())) == 1
}

// gateKey is the saved gate of a job of an agent.
func gateKey(agentSlug, jobID string) string {
	return store.Key(checkpointKeyspace, "gate", agentSlug, keyPart(jobID))
}

// loadSavedGate reads the saved gate at key; nil when absent. Its errors
// never quote the record, which holds the token.
func loadSavedGate(ctx context.Context, st store.Store, key, jobID string) (*savedGate, error) {
	raw, found, err := st.Get(ctx, key)
	if err != nil || !found {
		return nil, err
	}
	s := new(savedGate)
	if json.Unmarshal(raw, s) != nil {
		return nil, invalidState("the saved gate of job %q is corrupt", redact.Truncate(jobID, 128))
	}
	return s, nil
}

// Save persists the gate in the server's store (supervaizer.WithStore) under its
// agent and job, so that [RestoreGate] can rebuild it later,
// after a restart too. Call it in the job.start handler, where the gate was
// built from the verified request. The record holds the snapshot's hash and
// checkpoint token, the secret paths and the verified workspace of the job
// start; the token is stored in the SDK's records only (protect the store
// file), never in business context, and never logged.
//
// Saving the same gate again does nothing. A gate already saved for the job
// with another snapshot or secret paths, or for another workspace, is kept
// and Save returns an error wrapping [ErrInvalidState]: a job.start
// cannot take over another job's gate. Save fails the same way when the agent
// is not served by a server (its runtime is not attached).
func (g Gate) Save(ctx context.Context) error {
	rt, err := g.agent.checkpointRuntime()
	if err != nil {
		return err
	}
	rec := savedGate{Version: savedGateVersion, AgentSlug: rt.slug, JobID: g.jobID, WorkspaceID: g.workspaceID,
		SnapshotHash: g.snapshot.hash, Token: g.snapshot.token().reveal(), SecretRefs: g.secretRefs, SavedAt: rt.now().UTC()}
	raw, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	existing, stored, err := rt.store.PutIfAbsent(ctx, gateKey(rt.slug, g.jobID), raw)
	if err != nil || stored {
		return err
	}
	var prev savedGate
	if json.Unmarshal(existing, &prev) != nil {
		return invalidState("the saved gate of job %q is corrupt; forget it first", redact.Truncate(g.jobID, 128))
	}
	if !prev.sameToken(g) || prev.SnapshotHash != g.snapshot.hash || prev.WorkspaceID != g.workspaceID || !slices.Equal(prev.SecretRefs, g.secretRefs) {
		return invalidState("job %q already has a saved gate with another rule snapshot, secret paths or workspace", redact.Truncate(g.jobID, 128))
	}
	return nil
}

// Forget removes the gate's saved record, and with it the checkpoint token,
// from the store. Call it once the job needs no more checkpoints: its last
// guarded step finished (allowed or blocked), or the job ended. It keeps the
// occurrence records, which still refuse to run an effect twice. It removes
// the job's record only if it holds the gate's token (or cannot be read at
// all): a record saved with another snapshot token is left untouched.
// Forgetting a gate that is not saved does nothing. The gate itself stays
// usable in memory.
func (g Gate) Forget(ctx context.Context) error {
	rt, err := g.agent.checkpointRuntime()
	if err != nil {
		return err
	}
	key := gateKey(rt.slug, g.jobID)
	saved, err := loadSavedGate(ctx, rt.store, key, g.jobID)
	switch {
	case errors.Is(err, ErrInvalidState): // corrupt: nobody can use it
	case err != nil:
		return err
	case saved == nil || !saved.sameToken(g):
		return nil
	}
	return rt.store.Delete(ctx, key)
}

// RestoreGate rebuilds the gate of job jobID of agent from the
// record [Gate.Save] left in the server's store, with account
// to post checkpoints (as for [NewGate]) and the saved secret
// paths. jobID is the job of a verified request, or one the agent recorded
// itself: when ctx carries a verified workspace (supervaizer.WorkspaceFrom, as in a
// handler), the gate must have been saved from the same workspace. The
// background work of an agent (a context without workspace) may restore any
// gate of its own agent.
//
// It returns an error wrapping [ErrGateNotFound] when no gate is saved for the
// job (never saved, forgotten, or saved from another workspace), and one
// wrapping [ErrInvalidState] when the agent is not served, does not
// declare capabilities.rule_checkpoints, account is nil or the record is
// unusable. No error quotes the token.
func RestoreGate(ctx context.Context, agent *Runtime, account *studio.Client, jobID string) (*Gate, error) {
	switch {
	case agent == nil:
		return nil, invalidState("RestoreGate needs the agent's runtime (Agent.Checkpoints)")
	case account == nil:
		return nil, invalidState("rule checkpoints need a Studio account")
	case strings.TrimSpace(jobID) == "":
		return nil, invalidState("RestoreGate needs the job id")
	case agent.ruleCheckpointCapability() == nil:
		return nil, invalidState("agent %q does not declare capabilities.rule_checkpoints", agent.Slug())
	}
	rt, err := agent.checkpointRuntime()
	if err != nil {
		return nil, err
	}
	saved, err := loadSavedGate(ctx, rt.store, gateKey(rt.slug, jobID), jobID)
	if err != nil {
		return nil, err
	}
	if saved == nil || !workspaceMatches(ctx, saved.WorkspaceID) {
		return nil, fmt.Errorf("%w: agent %q, job %q", ErrGateNotFound, agent.Slug(), redact.Truncate(jobID, 128))
	}
	switch {
	case saved.Version != savedGateVersion:
		return nil, invalidState("the saved gate of job %q has version %d, this SDK reads %d", redact.Truncate(jobID, 128), saved.Version, savedGateVersion)
	case saved.AgentSlug != rt.slug || saved.JobID != jobID,
		strings.TrimSpace(saved.SnapshotHash) == "",
		strings.TrimSpace(saved.Token) == "" || !redact.HeaderSafe(saved.Token):
		return nil, invalidState("the saved gate of job %q is corrupt", redact.Truncate(jobID, 128))
	}
	return newGate(agent, account, jobID, saved.WorkspaceID, newRuleSnapshot(saved.SnapshotHash, saved.Token), saved.SecretRefs)
}

// workspaceMatches reports whether a gate saved from workspaceID may be used
// in ctx: a gate saved without workspace, or a context without one (the
// agent's background work), always; else the verified workspaces must agree.
func workspaceMatches(ctx context.Context, workspaceID string) bool {
	if workspaceID == "" {
		return true
	}
	ws, ok := wsctx.From(ctx)
	return !ok || ws.WorkspaceID == workspaceID
}

// checkDecisionWorkspace refuses a decision whose job has a gate saved from
// another workspace than the call's verified one. A job without a saved gate
// is checked by the records of its occurrences only.
func (rt *checkpointRuntime) checkDecisionWorkspace(ctx context.Context, d *resumeDecision) error {
	saved, err := loadSavedGate(ctx, rt.store, gateKey(rt.slug, d.JobID), d.JobID)
	if err != nil || saved == nil || saved.WorkspaceID == "" {
		return err
	}
	if ws, ok := wsctx.From(ctx); !ok || ws.WorkspaceID != saved.WorkspaceID {
		return rejectResume("the decision does not come from the workspace that started job %q", redact.Truncate(d.JobID, 128))
	}
	return nil
}
