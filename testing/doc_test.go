package testing_test

// The package comment's fragments, each run as written by a test of this file
// (the doc check, internal/tools/doccheck, finds their lines here).

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/checkpoint"
	"github.com/supervaize/supervaizer-go/contracts"
	svtest "github.com/supervaize/supervaizer-go/testing"
)

// researchAgent is the package comment's agent: job.start with a topic_id,
// declaring the rule-checkpoint capability, with its handler.
func researchAgent(t *testing.T) *supervaizer.Agent {
	t.Helper()
	agent, err := supervaizer.NewAgent(supervaizer.AgentSpec{Name: "Research Agent", Version: "1.0.0",
		Registration: supervaizer.RegistrationSpec{
			Actions:         supervaizer.Actions("job.start"),
			RuleCheckpoints: &contracts.RuleCheckpoints{Phases: []string{contracts.PhaseBefore, contracts.PhaseAfter}},
		}})
	require.NoError(t, err)
	supervaizer.HandleActionFor(agent, "job.start", func(ctx context.Context, req *supervaizer.ActionRequest, in StartInput) (*supervaizer.ActionResult, error) {
		return supervaizer.OK(supervaizer.JobStarted(req.JobID, map[string]any{"topic_id": in.TopicID})), nil
	})
	return agent
}

func TestStart(t *testing.T) {
	ts := svtest.NewTestServer(t, []*supervaizer.Agent{researchAgent(t)})
	req := ts.Request("job.start", map[string]any{"topic_id": "t-1"})
	req.IdempotencyKey, req.JobID = "setup-1", "job-1"
	res, err := ts.Invoke(t.Context(), req)
	require.NoError(t, err)
	assert.Equal(t, "ok", res.Status)
}

func TestStartIsIdempotent(t *testing.T) {
	ts := svtest.NewTestServer(t, []*supervaizer.Agent{researchAgent(t)})
	req := ts.Request("job.start", map[string]any{"topic_id": "t-1"})
	req.IdempotencyKey, req.JobID = "setup-1", "job-1"
	svtest.AssertConfirmIdempotent(t, ts, req,
		svtest.RecommendedChecks(map[string]any{"topic_id": "t-2"}))
}

// TestPackageDocExpiredToken: a token minted from a valid call's claims with
// exp an hour ago is refused as expired.
func TestPackageDocExpiredToken(t *testing.T) {
	ts := svtest.NewTestServer(t, []*supervaizer.Agent{researchAgent(t)})
	ctx, in := t.Context(), map[string]any{"topic_id": "t-1"}
	req := ts.Request("job.start", in)
	c := ts.Studio.ActionClaims(req) // the claims of a valid token for req
	c.ExpiresAt = time.Now().Add(-time.Hour)
	_, err := ts.InvokeWithToken(ctx, req, ts.Studio.Mint(c))
	assert.Equal(t, "workspace_authorization_expired", svtest.AuthCode(err))
}

// TestPackageDocAttached: the attached server looked the agent up and
// decrypted its parameters.
func TestPackageDocAttached(t *testing.T) {
	api := svtest.NewFakeStudioAPI(t, svtest.NewFakeStudio(t))
	api.SetAgent("research-agent", svtest.AgentDetail{Parameters: map[string]any{"SEARCH_API_KEY": "sk-test"}})
	ts := svtest.NewAttachedTestServerWithAPI(t, api, []*supervaizer.Agent{researchAgent(t)})
	sa, _ := ts.Server.Studio().Agent("research-agent") // decrypted parameters
	require.Len(t, sa.Parameters, 1)
	assert.Equal(t, "SEARCH_API_KEY", sa.Parameters[0].Name)
}

// TestPackageDocPausedCheckpoint: a paused before checkpoint holds the step
// until the resume request allows it; the effect then runs once.
func TestPackageDocPausedCheckpoint(t *testing.T) {
	agent := researchAgent(t)
	ts := svtest.NewAttachedTestServer(t, []*supervaizer.Agent{agent})
	ctx, done, effects := t.Context(), make(chan error, 1), 0
	run := func(gate *checkpoint.Gate) error {
		_, err := checkpoint.Run(ctx, gate, checkpoint.Step[string]{
			CaseID: "job-1-delivery", OccurrenceID: "send-brief-job-1", StepID: "job-1-send",
			Effect: func(context.Context) (string, error) {
				effects++
				return "msg-1", nil
			},
			AfterContext: func(r string) map[string]any { return map[string]any{"outcome": r} },
		})
		return err
	}

	ts.API.SetDecision(svtest.AnyOccurrence, contracts.PhaseBefore, checkpoint.Pause)
	start := ts.Request("job.start", map[string]any{"topic_id": "t-1", "rule_snapshot": ts.API.RuleSnapshot("rs_1")})
	start.JobID = "job-1"
	gate, err := checkpoint.NewGate(agent.Checkpoints(), ts.Server.Studio(), &start)
	require.NoError(t, err)
	go func() { done <- run(gate) }() // checkpoint.Run waits for the decision
	before := ts.API.WaitCheckpoints(t, 1)[0]
	res, err := ts.Invoke(ctx, ts.ResumeRequest(before, checkpoint.Allow, "dec-1"))
	require.NoError(t, err)
	assert.Equal(t, "ok", res.Status)
	require.NoError(t, <-done)
	assert.Equal(t, 1, effects)
}

// TestPackageDocConnect drives a controller served over HTTP.
func TestPackageDocConnect(t *testing.T) {
	running := svtest.NewTestServer(t, []*supervaizer.Agent{researchAgent(t)})
	url, apiKey, studio := running.URL(), running.APIKey, running.Studio

	remote := svtest.Connect(t, url, apiKey, studio) // url: the controller's, such as http://127.0.0.1:8080
	req := remote.Request("job.start", map[string]any{"topic_id": "t-1"})
	req.IdempotencyKey, req.JobID = "setup-1", "job-1"
	assert.True(t, svtest.AssertConfirmIdempotent(t, remote, req))
}
