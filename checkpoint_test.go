package supervaizer_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	sv "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/checkpoint"
	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/errcode"
	"github.com/supervaize/supervaizer-go/store"
	"github.com/supervaize/supervaizer-go/studio"
	svtest "github.com/supervaize/supervaizer-go/testing"
)

func TestGuardedStepDecisions(t *testing.T) {
	tests := []struct {
		name                      string
		before, after             string
		wantEffects, wantAdvances int64
		wantPhase                 string // "" means success
		wantAfterCalls            int
	}{
		{"allow allow", checkpoint.Allow, checkpoint.Allow, 1, 1, "", 1},
		{"before stop", checkpoint.Stop, checkpoint.Allow, 0, 0, contracts.PhaseBefore, 0},
		{"after stop", checkpoint.Allow, checkpoint.Stop, 1, 0, contracts.PhaseAfter, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			api := newCPAPI(t, tt.before)
			api.SetDecision(svtest.AnyOccurrence, contracts.PhaseAfter, tt.after)
			f := newCPFixture(t, cpOptions{api: api})
			res, err := checkpoint.Run(t.Context(), f.gate, f.step(cpOccurrence))
			assert.Equal(t, tt.wantEffects, f.effects.Load(), "effects")
			assert.Equal(t, tt.wantAdvances, f.advances.Load(), "advances")
			assert.Len(t, cpAPICalls(api, contracts.PhaseBefore), 1)
			assert.Len(t, cpAPICalls(api, contracts.PhaseAfter), tt.wantAfterCalls)
			if tt.wantPhase == "" {
				require.NoError(t, err)
				assert.Equal(t, "msg-42", res)
				return
			}
			require.ErrorIs(t, err, checkpoint.ErrBlocked)
			var blocked *checkpoint.BlockedError
			require.ErrorAs(t, err, &blocked)
			assert.Equal(t, tt.wantPhase, blocked.Phase)
			assert.Equal(t, checkpoint.Stop, blocked.Status)
			assert.Equal(t, checkpoint.Stop, blocked.Response.Status)
			assert.Equal(t, f.apiCall(t, tt.wantPhase).CheckpointID, blocked.Response.CheckpointID)
			assert.Equal(t, cpOccurrence, blocked.OccurrenceID)
			assert.Contains(t, err.Error(), "phase "+tt.wantPhase+", decision stop")
			if tt.wantPhase == contracts.PhaseAfter {
				assert.Equal(t, "msg-42", res, "the result of an effect that ran is returned")
			}
		})
	}
}

func TestGuardedStepPauseResume(t *testing.T) {
	tests := []struct {
		name, phase, decision     string
		wantEffects, wantAdvances int64
	}{
		{"before pause then allow", contracts.PhaseBefore, checkpoint.Allow, 1, 1},
		{"before pause then stop", contracts.PhaseBefore, checkpoint.Stop, 0, 0},
		{"after pause then allow", contracts.PhaseAfter, checkpoint.Allow, 1, 1},
		{"after pause then stop", contracts.PhaseAfter, checkpoint.Stop, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			api := newCPAPI(t, "")
			api.SetDecision(svtest.AnyOccurrence, tt.phase, checkpoint.Pause)
			f := newCPFixture(t, cpOptions{api: api})
			done := f.runAsync(t.Context(), f.step(cpOccurrence))
			f.logs.awaitWaiting(t)

			rpc := f.resume(t, f.apiDecision(t, tt.phase, tt.decision))
			require.Nil(t, rpc.Error)
			var res sv.ActionResult
			require.NoError(t, contracts.Unmarshal(rpc.Result, &res))
			require.Len(t, res.Effects, 1)
			assert.Equal(t, "rule.checkpoint.resumed", res.Effects[0].Type)
			assert.Equal(t, tt.decision, res.Effects[0].Status)
			assert.Nil(t, res.Effects[0].Data, "delivered to a live waiter, not retained")

			out := awaitOutcome(t, done)
			assert.Equal(t, tt.wantEffects, f.effects.Load(), "effects")
			assert.Equal(t, tt.wantAdvances, f.advances.Load(), "advances")
			if tt.decision == checkpoint.Allow {
				require.NoError(t, out.err)
				return
			}
			var blocked *checkpoint.BlockedError
			require.ErrorAs(t, out.err, &blocked)
			assert.Equal(t, tt.phase, blocked.Phase)
			assert.Equal(t, checkpoint.Stop, blocked.Status)
			assert.Equal(t, "dec_03", blocked.DecisionID)
			assert.Equal(t, checkpoint.Pause, blocked.Response.Status)
		})
	}
}

func TestGuardedStepWire(t *testing.T) {
	f := newCPFixture(t, cpOptions{})
	_, err := checkpoint.Run(t.Context(), f.gate, f.step(cpOccurrence))
	require.NoError(t, err)

	calls := f.studio.calls("")
	require.Len(t, calls, 2)
	for _, c := range calls {
		assert.Equal(t, "Api-Key "+cpAPIKey, c.Header.Get("Authorization"))
		assert.Equal(t, cpWorkspace, c.Header.Get("workspace"))
		assert.Equal(t, "application/json", c.Header.Get("accept"))
		assert.Equal(t, "application/json", c.Header.Get("Content-Type"))
		assert.Equal(t, cpToken, c.Header.Get(studio.HeaderRuleCheckpointToken))
	}
	svtest.Golden(t, filepath.Join("testdata", "checkpoints", "before_request.golden.json"), calls[0].Raw)
	svtest.Golden(t, filepath.Join("testdata", "checkpoints", "after_request.golden.json"), calls[1].Raw)

	events := f.studio.caseEvents()
	require.Len(t, events, 1, "the case is announced before its first checkpoint")
	svtest.Golden(t, filepath.Join("testdata", "checkpoints", "case_start_event.golden.json"), events[0].Raw)
	assert.Empty(t, f.studio.unexpected)
}

func TestResumeRejected(t *testing.T) {
	f := newCPFixture(t, cpOptions{api: newCPAPI(t, "")})
	// The other agent owns a case of the same job: a decision aimed at it is
	// rejected by this agent's handler.
	otherGate := f.newGate(t, f.other, cpJobStart(t, cpOtherSlug, cpJob, f.api.RuleSnapshot(cpSnapshot)))
	_, err := checkpoint.Run(t.Context(), otherGate, checkpoint.Step[string]{CaseID: "case-other", OccurrenceID: "audit-1",
		StepID: "s", Effect: func(context.Context) (string, error) { return "", nil }, AfterContext: cpAfterContext})
	require.NoError(t, err)
	f.api.SetDecision(svtest.AnyOccurrence, contracts.PhaseBefore, checkpoint.Pause)
	done := f.runAsync(t.Context(), f.step(cpOccurrence))
	f.logs.awaitWaiting(t)

	valid := func(mod func(map[string]any)) map[string]any {
		d := f.apiDecision(t, contracts.PhaseBefore, checkpoint.Allow)
		if mod != nil {
			mod(d)
		}
		return d
	}
	tests := []struct {
		name, slug, job, caseID string
		input                   map[string]any
		wantReason              string
	}{
		{"another case", cpAgentSlug, cpJob, "case-2", valid(nil), "belongs to another case"},
		{"another job", cpAgentSlug, "job-78", cpCase, valid(nil), "belongs to another job"},
		{"another agent's case", cpAgentSlug, cpJob, "case-other", valid(nil), "belongs to another agent"},
		{"another occurrence", cpAgentSlug, cpJob, cpCase, valid(func(d map[string]any) { d["occurrence_id"] = "other-occurrence" }), "is pending in case"},
		{"another phase", cpAgentSlug, cpJob, cpCase, valid(func(d map[string]any) { d["phase"] = contracts.PhaseAfter }), "is pending in case"},
		{"another checkpoint", cpAgentSlug, cpJob, cpCase, valid(func(d map[string]any) { d["checkpoint_id"] = "cp-x" }), "checkpoint_id does not match"},
		{"another input hash", cpAgentSlug, cpJob, cpCase, valid(func(d map[string]any) { d["input_hash"] = "ih-x" }), "input_hash does not match"},
		{"another snapshot", cpAgentSlug, cpJob, cpCase, valid(func(d map[string]any) { d["snapshot_hash"] = "rs_other" }), "snapshot_hash does not match"},
		{"pause decision", cpAgentSlug, cpJob, cpCase, valid(func(d map[string]any) { d["status"] = checkpoint.Pause }), "pause is not accepted"},
		{"unknown status", cpAgentSlug, cpJob, cpCase, valid(func(d map[string]any) { d["status"] = "maybe" }), "must be allow or stop"},
		{"unknown phase", cpAgentSlug, cpJob, cpCase, valid(func(d map[string]any) { d["phase"] = "during" }), "must be before or after"},
		{"missing checkpoint id", cpAgentSlug, cpJob, cpCase, valid(func(d map[string]any) { delete(d, "checkpoint_id") }), "checkpoint_id is required"},
		{"non-string field", cpAgentSlug, cpJob, cpCase, valid(func(d map[string]any) { d["occurrence_id"] = 7 }), "must be a string"},
		{"no case", cpAgentSlug, cpJob, "", valid(nil), "no case_id"},
		{"decision sent to the other agent", cpOtherSlug, cpJob, cpCase, valid(nil), "belongs to another agent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			params := resumeParams(tt.slug, tt.job, tt.caseID, tt.input)
			if tt.caseID == "" {
				delete(params, "case_id")
			}
			rpc := f.invoke(t, params)
			require.NotNil(t, rpc.Error, "the decision must be rejected")
			assert.Equal(t, int(errcode.InternalError), rpc.Error.Code)
			assert.Equal(t, "Action handler failed", rpc.Error.Message)
			assert.Contains(t, f.logs.String(), tt.wantReason, "the precise reason is logged")
			select {
			case <-done:
				t.Fatal("a rejected decision released the waiting checkpoint")
			default:
			}
		})
	}
	assert.Zero(t, f.effects.Load())
	rpc := f.resume(t, f.apiDecision(t, contracts.PhaseBefore, checkpoint.Allow))
	require.Nil(t, rpc.Error)
	require.NoError(t, awaitOutcome(t, done).err)
	assert.EqualValues(t, 1, f.effects.Load())
	assert.EqualValues(t, 1, f.advances.Load())

	// The same decision delivered again is acknowledged; a different one is not.
	require.Nil(t, f.resume(t, f.apiDecision(t, contracts.PhaseBefore, checkpoint.Allow)).Error)
	other := f.apiDecision(t, contracts.PhaseBefore, checkpoint.Stop)
	other["decision_id"] = "dec_04"
	require.NotNil(t, f.resume(t, other).Error)
	assert.Contains(t, f.logs.String(), "is not waiting for a decision")
}

func TestResumeEarlyDecision(t *testing.T) {
	f := newCPFixture(t, cpOptions{})
	var early atomic.Value
	// Studio pushes the decision before it answers the checkpoint call: the
	// record has no checkpoint id yet, so the decision is retained.
	f.studio.set(func(s *cpStudio) {
		s.status[contracts.PhaseBefore] = checkpoint.Pause
		s.hook = func(c cpCall) {
			if c.str("phase") == contracts.PhaseBefore {
				rpc, err := f.tryInvoke(resumeParams(cpAgentSlug, cpJob, cpCase, cpDecision(contracts.PhaseBefore, checkpoint.Allow)))
				if err != nil {
					rpc.Result = json.RawMessage(fmt.Sprintf("%q", err.Error()))
				}
				early.Store(rpc)
			}
		}
	})
	_, err := checkpoint.Run(t.Context(), f.gate, f.step(cpOccurrence))
	require.NoError(t, err)
	assert.EqualValues(t, 1, f.effects.Load())
	assert.EqualValues(t, 1, f.advances.Load())

	rpc := early.Load().(cpRPC)
	require.Nil(t, rpc.Error)
	svtest.Golden(t, filepath.Join("testdata", "checkpoints", "resume_retained.golden.json"), rpc.Result)
	assert.NotContains(t, f.logs.String(), cpMsgWaiting, "the retained decision was taken without waiting")
}

func TestResumeLiveResultGolden(t *testing.T) {
	f := newCPFixture(t, cpOptions{})
	f.studio.set(func(s *cpStudio) { s.status[contracts.PhaseAfter] = checkpoint.Pause })
	done := f.runAsync(t.Context(), f.step(cpOccurrence))
	f.logs.awaitWaiting(t)
	rpc := f.resume(t, cpDecision(contracts.PhaseAfter, checkpoint.Allow))
	require.Nil(t, rpc.Error)
	svtest.Golden(t, filepath.Join("testdata", "checkpoints", "resume_result.golden.json"), rpc.Result)
	require.NoError(t, awaitOutcome(t, done).err)
}

func TestResumeRetainedMismatchDiscarded(t *testing.T) {
	f := newCPFixture(t, cpOptions{})
	// The case is not known yet: the decision is retained.
	stale := cpDecision(contracts.PhaseBefore, checkpoint.Allow)
	stale["input_hash"] = "ih-stale"
	rpc := f.resume(t, stale)
	require.Nil(t, rpc.Error)
	assert.Contains(t, string(rpc.Result), `"retained":true`)

	f.studio.set(func(s *cpStudio) { s.status[contracts.PhaseBefore] = checkpoint.Pause })
	done := f.runAsync(t.Context(), f.step(cpOccurrence))
	f.logs.awaitWaiting(t)
	assert.Contains(t, f.logs.String(), "does not match its waiter; discarded")
	assert.Zero(t, f.effects.Load())

	require.Nil(t, f.resume(t, cpDecision(contracts.PhaseBefore, checkpoint.Allow)).Error)
	require.NoError(t, awaitOutcome(t, done).err)
	assert.EqualValues(t, 1, f.effects.Load())
}

func TestCheckpointURLIgnored(t *testing.T) {
	f := newCPFixture(t, cpOptions{api: newCPAPI(t, "")}) // the snapshot's checkpoint_url is svtest's decoy
	_, err := checkpoint.Run(t.Context(), f.gate, f.step(cpOccurrence))
	require.NoError(t, err)
	assert.Zero(t, f.api.SnapshotURLCalls(), "nothing may be sent to the snapshot's checkpoint_url")
	assert.Len(t, f.api.Checkpoints(), 2)
}

func TestCheckpointRedirectNotFollowed(t *testing.T) {
	var hits atomic.Int64
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		writeCPJSON(w, http.StatusOK, map[string]any{})
	}))
	t.Cleanup(evil.Close)
	f := newCPFixture(t, cpOptions{})
	f.studio.set(func(s *cpStudio) {
		s.override = func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == studio.RuleCheckpointsPath {
				http.Redirect(w, r, evil.URL+studio.RuleCheckpointsPath, http.StatusTemporaryRedirect)
				return
			}
			writeCPJSON(w, http.StatusOK, map[string]any{})
		}
	})
	_, err := checkpoint.Run(t.Context(), f.gate, f.step(cpOccurrence))
	var reqErr *checkpoint.RequestError
	require.ErrorAs(t, err, &reqErr)
	assert.Equal(t, http.StatusTemporaryRedirect, reqErr.StatusCode)
	assert.Zero(t, hits.Load(), "a redirect must not carry the token to another host")
	assert.Zero(t, f.effects.Load())
}

func TestCheckpointTokenNeverLogged(t *testing.T) {
	f := newCPFixture(t, cpOptions{})
	// A Studio error that echoes the token, a transport failure, a success.
	f.studio.set(func(s *cpStudio) {
		s.answer = func(c cpCall) (int, any) {
			return http.StatusBadGateway, map[string]any{"detail": "bad token " + c.Header.Get(studio.HeaderRuleCheckpointToken)}
		}
	})
	_, err := checkpoint.Run(t.Context(), f.gate, f.step(cpOccurrence))
	require.ErrorIs(t, err, checkpoint.ErrRequestFailed)
	assert.NotContains(t, err.Error(), cpToken)
	assert.Contains(t, err.Error(), "[REDACTED]")
	f.studio.set(func(s *cpStudio) { s.answer = nil })
	_, err = checkpoint.Run(t.Context(), f.gate, f.step(cpOccurrence))
	require.NoError(t, err)

	logger := f.logs.logger()
	logger.Info("gate", slog.Any("gate", f.gate))
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%d"} {
		out := fmt.Sprintf(verb, f.gate)
		assert.NotContains(t, out, cpToken, verb)
		out = fmt.Sprintf(verb, *f.gate)
		assert.NotContains(t, out, cpToken, "dereferenced, "+verb)
	}
	var jsonLog strings.Builder // a JSON log encodes the gate with encoding/json
	slog.New(slog.NewJSONHandler(&jsonLog, nil)).Info("gate", slog.Any("gate", f.gate))
	assert.Contains(t, jsonLog.String(), `"gate":{`)
	assert.NotContains(t, jsonLog.String(), cpToken)

	logs := f.logs.String()
	assert.Contains(t, logs, "rule checkpoint answered", "debug logging was on")
	assert.NotContains(t, logs, cpToken)
	assert.NotContains(t, logs, cpAPIKey)
}

func TestNewRuleCheckpointGateErrors(t *testing.T) {
	f := newCPFixture(t, cpOptions{})
	plain, err := sv.NewAgent(sv.AgentSpec{Name: "Plain Agent", Version: "1", Registration: sv.RegistrationSpec{AgentSlug: "plain-agent", DisplayName: "Plain", A2UICatalogVersion: "p.1",
		Surfaces: sv.Surfaces("job.start"), Actions: sv.Actions("job.start")}})
	require.NoError(t, err)
	snap := func(mod func(map[string]any)) map[string]any {
		s := cpSnapshotInput(cpSnapshot, "https://x.invalid/")
		mod(s)
		return s
	}
	tests := []struct {
		name    string
		agent   *sv.Agent
		account *studio.Client
		req     *sv.ActionRequest
		opts    []checkpoint.GateOption
		want    string
	}{
		{"no snapshot", f.agent, f.account, cpJobStart(t, cpAgentSlug, cpJob, nil), nil, "governed job requires rule_snapshot"},
		{"null snapshot", f.agent, f.account, cpJobStart(t, cpAgentSlug, cpJob, json.RawMessage("null")), nil, "governed job requires rule_snapshot"},
		{"snapshot not an object", f.agent, f.account, cpJobStart(t, cpAgentSlug, cpJob, "rs"), nil, "must be an object"},
		{"version 2", f.agent, f.account, cpJobStart(t, cpAgentSlug, cpJob, snap(func(s map[string]any) { s["version"] = 2 })), nil, "version must be 1"},
		{"version string", f.agent, f.account, cpJobStart(t, cpAgentSlug, cpJob, snap(func(s map[string]any) { s["version"] = "1" })), nil, "version must be 1"},
		{"no hash", f.agent, f.account, cpJobStart(t, cpAgentSlug, cpJob, snap(func(s map[string]any) { delete(s, "hash") })), nil, "hash is required"},
		{"blank hash", f.agent, f.account, cpJobStart(t, cpAgentSlug, cpJob, snap(func(s map[string]any) { s["hash"] = " " })), nil, "hash must not be blank"},
		{"no checkpoint_url", f.agent, f.account, cpJobStart(t, cpAgentSlug, cpJob, snap(func(s map[string]any) { delete(s, "checkpoint_url") })), nil, "checkpoint_url is required"},
		{"no token", f.agent, f.account, cpJobStart(t, cpAgentSlug, cpJob, snap(func(s map[string]any) { delete(s, "checkpoint_token") })), nil, "checkpoint_token is required"},
		{"token with a newline", f.agent, f.account, cpJobStart(t, cpAgentSlug, cpJob, snap(func(s map[string]any) { s["checkpoint_token"] = cpToken + "\n" })), nil, "printable ASCII"},
		{"token not a string", f.agent, f.account, cpJobStart(t, cpAgentSlug, cpJob, snap(func(s map[string]any) { s["checkpoint_token"] = 42 })), nil, "must be a string"},
		{"another agent", f.agent, f.account, cpJobStart(t, cpOtherSlug, cpJob, snap(func(map[string]any) {})), nil, "is for agent"},
		{"no job", f.agent, f.account, cpJobStart(t, cpAgentSlug, "", snap(func(map[string]any) {})), nil, "no job_id"},
		{"no account", f.agent, nil, cpJobStart(t, cpAgentSlug, cpJob, snap(func(map[string]any) {})), nil, "need a Studio account"},
		{"no agent", nil, f.account, cpJobStart(t, cpAgentSlug, cpJob, snap(func(map[string]any) {})), nil, "needs the agent"},
		{"no request", f.agent, f.account, nil, nil, "needs the job start request"},
		{"capability not declared", plain, f.account, cpJobStart(t, "plain-agent", cpJob, snap(func(map[string]any) {})), nil, "does not declare capabilities.rule_checkpoints"},
		{"invalid secret path", f.agent, f.account, cpJobStart(t, cpAgentSlug, cpJob, snap(func(map[string]any) {})),
			[]checkpoint.GateOption{checkpoint.WithSecretRefs("secrets.api_key")}, "invalid path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g, err := checkpoint.NewGate(tt.agent.Checkpoints(), tt.account, tt.req, tt.opts...)
			require.ErrorIs(t, err, checkpoint.ErrInvalidState)
			assert.Nil(t, g)
			assert.Contains(t, err.Error(), tt.want)
			assert.NotContains(t, err.Error(), cpToken)
		})
	}
	assert.False(t, plain.Registration().Capabilities.HasAction(sv.RuleCheckpointResumeAction),
		"an agent without the capability advertises no resume action")
}

func TestGateSecretRefs(t *testing.T) {
	f := newCPFixture(t, cpOptions{api: newCPAPI(t, "")})
	assert.Equal(t, []string{cpSecretRef}, f.gate.SecretRefs(), "default: the capability's paths")
	assert.Equal(t, cpAgentSlug, f.gate.AgentSlug())
	assert.Equal(t, cpJob, f.gate.JobID())
	assert.Equal(t, cpSnapshot, f.gate.SnapshotHash())

	// A start request that names no agent (as a v1 start) is the given agent's.
	anonymous := cpJobStart(t, "", cpJob, f.api.RuleSnapshot(cpSnapshot))
	assert.Equal(t, cpAgentSlug, f.newGate(t, f.agent, anonymous).AgentSlug())

	g := f.newGate(t, f.agent, cpJobStart(t, cpAgentSlug, cpJob, f.api.RuleSnapshot(cpSnapshot)),
		checkpoint.WithSecretRefs(cpSecretRef, "job.fields.iban"))
	assert.Contains(t, f.logs.String(), "not declared in capabilities.rule_checkpoints.secret_refs")
	assert.Contains(t, f.logs.String(), `"path":"job.fields.iban"`)
	f.gate = g
	_, err := checkpoint.Run(t.Context(), g, f.step(cpOccurrence))
	require.NoError(t, err)
	calls := f.api.Checkpoints()
	require.Len(t, calls, 2)
	for _, c := range calls {
		assert.Equal(t, []string{cpSecretRef, "job.fields.iban"}, c.SecretRefs)
	}
}

func TestCheckpointRequestFailed(t *testing.T) {
	t.Run("non-2xx, then a retry asks the before checkpoint again", func(t *testing.T) {
		t.Parallel()
		f := newCPFixture(t, cpOptions{api: newCPAPI(t, "")})
		f.api.FailNext(studio.RuleCheckpointsPath, http.StatusServiceUnavailable)
		_, err := checkpoint.Run(t.Context(), f.gate, f.step(cpOccurrence))
		require.ErrorIs(t, err, checkpoint.ErrRequestFailed)
		var reqErr *checkpoint.RequestError
		require.ErrorAs(t, err, &reqErr)
		assert.Equal(t, http.StatusServiceUnavailable, reqErr.StatusCode)
		assert.Contains(t, reqErr.Body, "svtest: injected failure")
		assert.Zero(t, f.effects.Load())
		require.Empty(t, f.api.Checkpoints(), "the failed call answered no checkpoint")

		_, err = checkpoint.Run(t.Context(), f.gate, f.step(cpOccurrence))
		require.NoError(t, err)
		var statuses []int
		for _, r := range f.api.Requests() {
			if r.Path == studio.RuleCheckpointsPath {
				statuses = append(statuses, r.Status)
			}
		}
		assert.Equal(t, []int{http.StatusServiceUnavailable, http.StatusOK, http.StatusOK}, statuses,
			"the before checkpoint asked again, then the after one")
		assert.Len(t, cpAPICalls(f.api, contracts.PhaseBefore), 1)
		assert.EqualValues(t, 1, f.effects.Load())
	})
	t.Run("transport failure", func(t *testing.T) {
		t.Parallel()
		f := newCPFixture(t, cpOptions{})
		f.studio.set(func(s *cpStudio) {
			s.hook = func(cpCall) { f.studio.srv.CloseClientConnections() }
		})
		_, err := checkpoint.Run(t.Context(), f.gate, f.step(cpOccurrence))
		var reqErr *checkpoint.RequestError
		require.ErrorAs(t, err, &reqErr)
		assert.Zero(t, reqErr.StatusCode)
		assert.Error(t, errors.Unwrap(reqErr), "the transport cause")
		assert.Zero(t, f.effects.Load())
	})
	t.Run("invalid answers", func(t *testing.T) {
		t.Parallel()
		for _, body := range []any{"allow", map[string]any{"status": "allow", "snapshot_hash": cpSnapshot},
			map[string]any{"checkpoint_id": "cp", "status": "later", "snapshot_hash": cpSnapshot}} {
			f := newCPFixture(t, cpOptions{})
			f.studio.set(func(s *cpStudio) { s.answer = func(cpCall) (int, any) { return http.StatusOK, body } })
			_, err := checkpoint.Run(t.Context(), f.gate, f.step(cpOccurrence))
			require.ErrorIs(t, err, checkpoint.ErrRequestFailed, "%v", body)
			assert.Zero(t, f.effects.Load())
		}
	})
	t.Run("snapshot hash mismatch", func(t *testing.T) {
		t.Parallel()
		f := newCPFixture(t, cpOptions{})
		f.studio.set(func(s *cpStudio) {
			s.answer = func(c cpCall) (int, any) {
				a := cpAnswer(c, checkpoint.Allow)
				a["snapshot_hash"] = "rs_forged"
				return http.StatusOK, a
			}
		})
		_, err := checkpoint.Run(t.Context(), f.gate, f.step(cpOccurrence))
		require.ErrorIs(t, err, checkpoint.ErrInvalidState)
		assert.Contains(t, err.Error(), "snapshot_hash")
		assert.Zero(t, f.effects.Load())
	})
}

func TestGuardedStepReentryGuards(t *testing.T) {
	f := newCPFixture(t, cpOptions{api: newCPAPI(t, "")})
	_, err := checkpoint.Run(t.Context(), f.gate, f.step(cpOccurrence))
	require.NoError(t, err)

	otherSnapshot := f.newGate(t, f.agent, cpJobStart(t, cpAgentSlug, cpJob, f.api.RuleSnapshot("rs_other")))
	otherJob := f.newGate(t, f.agent, cpJobStart(t, cpAgentSlug, "job-78", f.api.RuleSnapshot(cpSnapshot)))
	tests := []struct {
		name      string
		gate      *checkpoint.Gate
		mod       func(*checkpoint.Step[string])
		wantIs    error
		wantInMsg string
	}{
		{"same step again", f.gate, nil, checkpoint.ErrRecoveryRequired, "occurrence already claimed"},
		{"context changed", f.gate, func(s *checkpoint.Step[string]) { s.BeforeContext["channel"] = "sms" }, checkpoint.ErrInvalidState, "retry context changed"},
		{"step changed", f.gate, func(s *checkpoint.Step[string]) { s.StepID = "step-other" }, checkpoint.ErrInvalidState, "step changed"},
		{"snapshot changed", otherSnapshot, nil, checkpoint.ErrInvalidState, "snapshot changed"},
		{"another case", f.gate, func(s *checkpoint.Step[string]) { s.CaseID = "case-2" }, checkpoint.ErrInvalidState, "belongs to job"},
		{"another job", otherJob, nil, checkpoint.ErrInvalidState, "belongs to job"},
		{"no step id", f.gate, func(s *checkpoint.Step[string]) { s.StepID = "" }, checkpoint.ErrInvalidState, "StepID is required"},
		{"no effect", f.gate, func(s *checkpoint.Step[string]) { s.Effect = nil }, checkpoint.ErrInvalidState, "Effect is required"},
		{"no after context", f.gate, func(s *checkpoint.Step[string]) { s.AfterContext = nil }, checkpoint.ErrInvalidState, "AfterContext is required"},
		{"no occurrence", f.gate, func(s *checkpoint.Step[string]) { s.OccurrenceID = " " }, checkpoint.ErrInvalidState, "occurrence id is required"},
		{"token in context", f.gate, func(s *checkpoint.Step[string]) { s.BeforeContext["x"] = "t=" + f.token }, checkpoint.ErrInvalidState, "contains the rule snapshot's checkpoint token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			step := f.step(cpOccurrence)
			if tt.mod != nil {
				tt.mod(&step)
			}
			_, err := checkpoint.Run(t.Context(), tt.gate, step)
			require.ErrorIs(t, err, tt.wantIs)
			assert.Contains(t, err.Error(), tt.wantInMsg)
		})
	}
	assert.EqualValues(t, 1, f.effects.Load())
	assert.EqualValues(t, 1, f.advances.Load())
	assert.NotContains(t, f.logs.String(), f.token)

	t.Run("a stopped occurrence stays claimed", func(t *testing.T) {
		f.api.SetDecision(svtest.AnyOccurrence, contracts.PhaseBefore, checkpoint.Stop)
		_, err := checkpoint.Run(t.Context(), f.gate, f.step("occ-stopped"))
		require.ErrorIs(t, err, checkpoint.ErrBlocked)
		_, err = checkpoint.Run(t.Context(), f.gate, f.step("occ-stopped"))
		var rr *checkpoint.RecoveryRequiredError
		require.ErrorAs(t, err, &rr)
		assert.Equal(t, "occurrence already claimed", rr.Reason)
		assert.False(t, rr.EffectStarted)
		assert.Equal(t, checkpoint.Stop, rr.Decision, "the persisted decision that holds it")
		assert.Contains(t, rr.Error(), "decision stop")
	})
}

func TestGuardedStepOccurrenceActive(t *testing.T) {
	f := newCPFixture(t, cpOptions{api: newCPAPI(t, "")})
	entered, release := make(chan struct{}), make(chan struct{})
	step := f.step(cpOccurrence)
	step.Effect = func(context.Context) (string, error) {
		close(entered)
		<-release
		return "msg-42", nil
	}
	done := f.runAsync(t.Context(), step)
	<-entered
	_, err := checkpoint.Run(t.Context(), f.gate, f.step(cpOccurrence))
	var rr *checkpoint.RecoveryRequiredError
	require.ErrorAs(t, err, &rr)
	assert.Equal(t, "occurrence active", rr.Reason)
	_, err = checkpoint.Recover(t.Context(), f.gate, checkpoint.Recovery[string]{CaseID: cpCase, OccurrenceID: cpOccurrence,
		Result: "msg-42", AfterContext: cpAfterContext})
	require.ErrorAs(t, err, &rr)
	assert.Equal(t, "occurrence active", rr.Reason)
	close(release)
	require.NoError(t, awaitOutcome(t, done).err)
	assert.Zero(t, f.effects.Load(), "the concurrent runs did not run their effects")
}

func TestGuardedStepCaseAnnouncement(t *testing.T) {
	f := newCPFixture(t, cpOptions{api: newCPAPI(t, "")})
	for _, occ := range []string{"occ-1", "occ-2"} {
		_, err := checkpoint.Run(t.Context(), f.gate, f.step(occ))
		require.NoError(t, err)
	}
	var events []svtest.StudioEvent
	for _, e := range f.api.Events() {
		if e.Type == string(studio.EventCaseStart) {
			events = append(events, e)
		}
	}
	require.Len(t, events, 1, "a case is announced once")
	assert.Equal(t, map[string]string{"job": cpJob, "case": cpCase}, events[0].Source)

	// The case now belongs to research-agent: the other agent cannot use it.
	otherGate := f.newGate(t, f.other, cpJobStart(t, cpOtherSlug, cpJob, f.api.RuleSnapshot(cpSnapshot)))
	step := f.step("audit-occ")
	_, err := checkpoint.Run(t.Context(), otherGate, step)
	require.ErrorIs(t, err, checkpoint.ErrInvalidState)
	assert.Contains(t, err.Error(), `owned by agent "research-agent"`)
	posted := 0
	for _, r := range f.api.Requests() {
		if r.Path == studio.RuleCheckpointsPath {
			posted++
		}
	}
	assert.Equal(t, 4, posted, "no checkpoint for a case owned by another agent")
	assert.Len(t, f.api.Checkpoints(), 4)

	t.Run("announcement failure", func(t *testing.T) {
		f := newCPFixture(t, cpOptions{api: newCPAPI(t, "")})
		f.api.FailNext(f.api.WorkspacePath(svtest.EventsPath), http.StatusInternalServerError)
		_, err := checkpoint.Run(t.Context(), f.gate, f.step(cpOccurrence))
		require.Error(t, err)
		assert.Contains(t, err.Error(), "announce case")
		assert.Zero(t, f.effects.Load())
	})
}

// failingStore fails PutIfAbsent on keys containing a marker while armed.
type failingStore struct {
	store.Store
	marker string
	armed  atomic.Bool
}

func (s *failingStore) PutIfAbsent(ctx context.Context, key string, value []byte) ([]byte, bool, error) {
	if s.armed.Load() && strings.Contains(key, s.marker) {
		return nil, false, errors.New("disk full")
	}
	return s.Store.PutIfAbsent(ctx, key, value)
}

func TestGuardedStepPersistedAllow(t *testing.T) {
	st := &failingStore{Store: store.NewMemory(), marker: "/after"}
	st.armed.Store(true)
	f := newCPFixture(t, cpOptions{store: st, api: newCPAPI(t, "")})
	// The before allow is persisted, then "effect started" cannot be.
	_, err := checkpoint.Run(t.Context(), f.gate, f.step(cpOccurrence))
	require.ErrorContains(t, err, "disk full")
	assert.Zero(t, f.effects.Load())

	st.armed.Store(false)
	_, err = checkpoint.Run(t.Context(), f.gate, f.step(cpOccurrence))
	require.NoError(t, err)
	assert.Len(t, cpAPICalls(f.api, contracts.PhaseBefore), 1, "a persisted allow is not asked again")
	assert.EqualValues(t, 1, f.effects.Load())
	assert.EqualValues(t, 1, f.advances.Load())
}

func TestGuardedStepEffectFailure(t *testing.T) {
	f := newCPFixture(t, cpOptions{api: newCPAPI(t, "")})
	boom := errors.New("smtp: connection reset")
	step := f.step(cpOccurrence)
	step.Effect = func(context.Context) (string, error) { return "", boom }
	_, err := checkpoint.Run(t.Context(), f.gate, step)
	require.ErrorIs(t, err, boom)

	_, err = checkpoint.Run(t.Context(), f.gate, f.step(cpOccurrence))
	var rr *checkpoint.RecoveryRequiredError
	require.ErrorAs(t, err, &rr)
	assert.True(t, rr.EffectStarted)
	assert.False(t, rr.EffectCompleted)
	assert.Zero(t, f.effects.Load(), "an uncertain effect is never run again automatically")

	recovery := checkpoint.Recovery[string]{CaseID: cpCase, OccurrenceID: cpOccurrence, Result: "msg-42",
		AfterContext: cpAfterContext, Advance: f.step(cpOccurrence).Advance}
	_, err = checkpoint.Recover(t.Context(), f.gate, recovery)
	require.ErrorAs(t, err, &rr)
	assert.Equal(t, "not ready to recover", rr.Reason)

	recovery.ConfirmEffect = true
	res, err := checkpoint.Recover(t.Context(), f.gate, recovery)
	require.NoError(t, err)
	assert.Equal(t, "msg-42", res)
	assert.EqualValues(t, 1, f.advances.Load())
	assert.Len(t, cpAPICalls(f.api, contracts.PhaseAfter), 1)
}

func TestRecoverGuardedStep(t *testing.T) {
	f := newCPFixture(t, cpOptions{})
	f.studio.set(func(s *cpStudio) { s.fail[contracts.PhaseAfter] = http.StatusBadGateway })
	res, err := checkpoint.Run(t.Context(), f.gate, f.step(cpOccurrence))
	require.ErrorIs(t, err, checkpoint.ErrRequestFailed)
	assert.Equal(t, "msg-42", res, "the result is returned for recovery")

	_, err = checkpoint.Run(t.Context(), f.gate, f.step(cpOccurrence))
	var rr *checkpoint.RecoveryRequiredError
	require.ErrorAs(t, err, &rr)
	assert.True(t, rr.EffectCompleted)
	f.studio.set(func(s *cpStudio) { delete(s.fail, contracts.PhaseAfter) })

	otherSnapshot := f.newGate(t, f.agent, cpJobStart(t, cpAgentSlug, cpJob, cpSnapshotInput("rs_other", "https://x.invalid/")))
	base := checkpoint.Recovery[string]{CaseID: cpCase, OccurrenceID: cpOccurrence, Result: "msg-42", AfterContext: cpAfterContext,
		Advance: f.step(cpOccurrence).Advance}
	tests := []struct {
		name   string
		gate   *checkpoint.Gate
		mod    func(*checkpoint.Recovery[string])
		wantIs error
		want   string
	}{
		{"context changed", f.gate, func(r *checkpoint.Recovery[string]) { r.Result = "msg-43" }, checkpoint.ErrInvalidState, "context changed"},
		{"no after context", f.gate, func(r *checkpoint.Recovery[string]) { r.AfterContext = nil }, checkpoint.ErrInvalidState, "AfterContext is required"},
		{"snapshot changed", otherSnapshot, nil, checkpoint.ErrInvalidState, "snapshot changed"},
		{"another case", f.gate, func(r *checkpoint.Recovery[string]) { r.CaseID = "case-2" }, checkpoint.ErrInvalidState, "belongs to job"},
		{"unknown occurrence", f.gate, func(r *checkpoint.Recovery[string]) { r.OccurrenceID = "never-ran" }, checkpoint.ErrRecoveryRequired, "not ready to recover"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := base
			if tt.mod != nil {
				tt.mod(&r)
			}
			_, err := checkpoint.Recover(t.Context(), tt.gate, r)
			require.ErrorIs(t, err, tt.wantIs)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
	assert.Len(t, f.studio.calls(contracts.PhaseAfter), 1, "no checkpoint for a refused recovery")

	res, err = checkpoint.Recover(t.Context(), f.gate, base)
	require.NoError(t, err)
	assert.Equal(t, "msg-42", res)
	assert.EqualValues(t, 1, f.advances.Load())
	afterCalls := f.studio.calls(contracts.PhaseAfter)
	require.Len(t, afterCalls, 2)
	assert.Equal(t, afterCalls[0].Raw, afterCalls[1].Raw, "only the original after checkpoint is asked again")

	// Recovering again is harmless: no checkpoint, no second advance.
	_, err = checkpoint.Recover(t.Context(), f.gate, base)
	require.NoError(t, err)
	assert.EqualValues(t, 1, f.advances.Load())
	assert.EqualValues(t, 1, f.effects.Load())
	assert.Len(t, f.studio.calls(contracts.PhaseAfter), 2)
}

func TestRecoverGuardedStepAfterStopAndPause(t *testing.T) {
	f := newCPFixture(t, cpOptions{api: newCPAPI(t, "")})
	step := f.step(cpOccurrence)
	effect := step.Effect
	step.Effect = func(ctx context.Context) (string, error) {
		f.api.FailNext(studio.RuleCheckpointsPath, http.StatusBadGateway) // the after checkpoint fails
		return effect(ctx)
	}
	_, err := checkpoint.Run(t.Context(), f.gate, step)
	require.ErrorIs(t, err, checkpoint.ErrRequestFailed)
	f.api.SetDecision(svtest.AnyOccurrence, contracts.PhaseAfter, checkpoint.Pause)
	recovery := checkpoint.Recovery[string]{CaseID: cpCase, OccurrenceID: cpOccurrence, Result: "msg-42", AfterContext: cpAfterContext,
		Advance: f.step(cpOccurrence).Advance}
	done := make(chan error, 1)
	go func() {
		_, err := checkpoint.Recover(t.Context(), f.gate, recovery)
		done <- err
	}()
	f.logs.awaitWaiting(t)
	require.Nil(t, f.resume(t, f.apiDecision(t, contracts.PhaseAfter, checkpoint.Stop)).Error)
	select {
	case err := <-done:
		require.ErrorIs(t, err, checkpoint.ErrBlocked)
	case <-time.After(cpWaitTimeout):
		t.Fatal("the recovery did not finish")
	}
	_, err = checkpoint.Recover(t.Context(), f.gate, recovery)
	var rr *checkpoint.RecoveryRequiredError
	require.ErrorAs(t, err, &rr)
	assert.Equal(t, "not ready to recover", rr.Reason)
	assert.Equal(t, checkpoint.Stop, rr.Decision)
	assert.Zero(t, f.advances.Load())
}

func TestRecoverAmbiguousAdvancement(t *testing.T) {
	f := newCPFixture(t, cpOptions{api: newCPAPI(t, "")})
	step := f.step(cpOccurrence)
	step.Advance = func(context.Context, string) error { return errors.New("crm: timeout") }
	_, err := checkpoint.Run(t.Context(), f.gate, step)
	require.ErrorContains(t, err, "advancement is now ambiguous")

	_, err = checkpoint.Recover(t.Context(), f.gate, checkpoint.Recovery[string]{CaseID: cpCase, OccurrenceID: cpOccurrence,
		Result: "msg-42", AfterContext: cpAfterContext, Advance: f.step(cpOccurrence).Advance})
	var rr *checkpoint.RecoveryRequiredError
	require.ErrorAs(t, err, &rr)
	assert.Equal(t, "advancement is ambiguous", rr.Reason)
	assert.Zero(t, f.advances.Load(), "recovery refuses to advance twice")
}

func TestGuardedStepWaitCancelled(t *testing.T) {
	f := newCPFixture(t, cpOptions{api: newCPAPI(t, checkpoint.Pause)})
	ctx, cancel := context.WithCancel(t.Context())
	done := f.runAsync(ctx, f.step(cpOccurrence))
	f.logs.awaitWaiting(t)
	cancel()
	out := awaitOutcome(t, done)
	require.ErrorIs(t, out.err, context.Canceled)

	// The paused record stays: a new run is refused until a decision arrives.
	_, err := checkpoint.Run(t.Context(), f.gate, f.step(cpOccurrence))
	require.ErrorIs(t, err, checkpoint.ErrRecoveryRequired)

	// A decision without a waiter is persisted; the next run proceeds on it.
	rpc := f.resume(t, f.apiDecision(t, contracts.PhaseBefore, checkpoint.Allow))
	require.Nil(t, rpc.Error)
	assert.NotContains(t, string(rpc.Result), "retained")
	_, err = checkpoint.Run(t.Context(), f.gate, f.step(cpOccurrence))
	require.NoError(t, err)
	assert.Len(t, cpAPICalls(f.api, contracts.PhaseBefore), 1)
	assert.EqualValues(t, 1, f.effects.Load())
}

func TestResumeHandlerReplaceable(t *testing.T) {
	custom := func(calls *atomic.Int64) sv.ActionHandler {
		return func(context.Context, *sv.ActionRequest) (*sv.ActionResult, error) {
			calls.Add(1)
			return sv.OK(), nil
		}
	}
	pause := cpDecision(contracts.PhaseBefore, checkpoint.Pause) // the SDK handler would reject it
	t.Run("before NewServer", func(t *testing.T) {
		a := cpRegistration(t, cpAgentSlug, cpAgentName)
		var calls atomic.Int64
		a.HandleRuleCheckpointResume(custom(&calls))
		logs := newCPLogs()
		srv, err := sv.NewServer([]*sv.Agent{a}, sv.WithEnv(func(string) string { return "" }), sv.WithLocalMode(true), sv.WithLogger(logs.logger()))
		require.NoError(t, err)
		assert.Contains(t, logs.String(), "rule checkpoints are declared but no store is configured")
		f := &cpFixture{srv: srv}
		require.Nil(t, f.invoke(t, resumeParams(cpAgentSlug, cpJob, cpCase, pause)).Error)
		assert.EqualValues(t, 1, calls.Load())
		assert.Panics(t, func() { a.HandleRuleCheckpointResume(custom(&calls)) }, "the author's own handler is not replaced silently")
	})
	t.Run("after NewServer", func(t *testing.T) {
		f := newCPFixture(t, cpOptions{})
		require.NotNil(t, f.resume(t, pause).Error, "the SDK handler rejects pause")
		var calls atomic.Int64
		f.agent.HandleRuleCheckpointResume(custom(&calls))
		require.Nil(t, f.resume(t, pause).Error)
		assert.EqualValues(t, 1, calls.Load())
	})
}

func TestGuardedStepAgentNotServed(t *testing.T) {
	a := cpRegistration(t, cpAgentSlug, cpAgentName)
	account, err := studio.NewClient(studio.Config{APIURL: "http://127.0.0.1:1", WorkspaceID: cpWorkspace, APIKey: cpAPIKey})
	require.NoError(t, err)
	gate, err := checkpoint.NewGate(a.Checkpoints(), account, cpJobStart(t, cpAgentSlug, cpJob, cpSnapshotInput(cpSnapshot, "https://x.invalid/")))
	require.NoError(t, err)
	f := &cpFixture{}
	_, err = checkpoint.Run(t.Context(), gate, f.step(cpOccurrence))
	require.ErrorIs(t, err, checkpoint.ErrInvalidState)
	assert.Contains(t, err.Error(), "is not served")
	_, err = checkpoint.Run[string](t.Context(), nil, f.step(cpOccurrence))
	require.ErrorIs(t, err, checkpoint.ErrInvalidState)
}
