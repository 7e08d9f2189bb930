package main

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/a2ui"
	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/errcode"
	"github.com/supervaize/supervaizer-go/studio"
	svtest "github.com/supervaize/supervaizer-go/testing"
)

// newTestServer builds the agent with newApp and serves its handlers through
// the SDK's TestServer (the real pipeline, in memory), with the agent's store.
func newTestServer(t testing.TB) (*app, *svtest.TestServer) {
	t.Helper()
	cfg, err := loadConfig(func(string) string { return "" })
	require.NoError(t, err)
	cfg.DBPath = dbPath(t)
	a, err := newApp(cfg)
	require.NoError(t, err)
	require.NoError(t, a.resumeDeliveries(a.bg))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		assert.NoError(t, a.Shutdown(ctx))
		assert.NoError(t, a.Close())
	})
	return a, svtest.NewTestServer(t, []*supervaizer.Agent{a.agent}, supervaizer.WithStore(a.store))
}

// invoke sends req and requires a JSON-RPC success.
func invoke(t *testing.T, ts *svtest.TestServer, req contracts.ActionRequest) *contracts.ActionResult {
	t.Helper()
	res, err := ts.Invoke(t.Context(), req)
	require.NoError(t, err)
	return res
}

func start(t *testing.T, ts *svtest.TestServer, jobID string, input any) *contracts.ActionResult {
	t.Helper()
	req := ts.Request(actionStart, input)
	req.JobID = jobID
	res := invoke(t, ts, req)
	require.Equal(t, contracts.StatusOK, res.Status, "%+v", res.Errors)
	return res
}

func onJob(ts *svtest.TestServer, action, jobID string, input any) contracts.ActionRequest {
	req := ts.Request(action, input)
	req.JobID = jobID
	return req
}

func errorCode(res *contracts.ActionResult) string {
	if res.Status != contracts.StatusError || len(res.Errors) == 0 {
		return ""
	}
	return res.Errors[0].Code
}

func TestRegistrationGolden(t *testing.T) {
	a, _ := newTestServer(t)
	svtest.Golden(t, filepath.Join("testdata", "registration.golden.json"), a.agent.RegistrationJSON())
}

// TestRegistrationDesignDocument checks the parts of the protocol the
// example keeps from the design document.
func TestRegistrationDesignDocument(t *testing.T) {
	a, _ := newTestServer(t)
	reg := a.agent.Registration()
	assert.Equal(t, agentSlug, reg.Agent.Slug)
	assert.Equal(t, catalogVersion, reg.Versions.A2UICatalogVersion)
	for _, s := range []string{surfaceJobStart, surfaceStepAwaiting, surfaceStepDetail, surfaceAnalytics, "mission.agent.resource.contacts"} {
		assert.True(t, reg.Capabilities.HasSurface(s), s)
	}
	for _, id := range []string{actionStart, actionStop, actionSubmit, actionSync} {
		def := reg.Capabilities.Action(id)
		require.NotNil(t, def, id)
		assert.True(t, def.Mutating, id)
		assert.Equal(t, contracts.ScopeJob, def.Scope, id)
	}
	for _, op := range []string{"list", "create", "update", "import"} {
		def := reg.Capabilities.Action("resource.contacts." + op)
		require.NotNil(t, def, op)
		assert.Equal(t, contracts.ScopeWorkspace, def.Scope, op)
	}
	assert.Equal(t, []contracts.CaseLane{{ID: laneSetup, Label: "Setup"}, {ID: laneWork, Label: "Work", Default: true}, {ID: laneDeliverable, Label: "Deliverables"}}, reg.Capabilities.CaseLanes)
	assert.Len(t, reg.Capabilities.ArtifactTypes, 2)
	assert.Equal(t, actionSync, reg.JobPolicy.Sync.Action)
	help := reg.Capabilities.Action(actionGoalSuggest)
	require.NotNil(t, help)
	assert.Equal(t, contracts.KindHelp, help.Kind)
	assert.False(t, help.Mutating)
	assert.True(t, reg.Capabilities.Action(actionTest).DryRun)
	assert.Equal(t, []string{contracts.BindExisting, contracts.CreateAndBind}, reg.WorkspaceBinding.Modes)
	assert.True(t, reg.Capabilities.HasAction(studio.ContextAssignAction))
	assert.True(t, reg.Capabilities.HasAction("dataset.progress_metrics.query"))
}

// TestStartInput checks the typed input of job.start: invalid input is
// answered with -32602 naming the key, and the handler does not run.
func TestStartInput(t *testing.T) {
	tests := []struct {
		name     string
		input    string
		wantCode errcode.Code // 0: a result
		wantText string       // how the -32602 error data names the key
	}{
		{"ok", `{"topic_id": "t-1"}`, 0, ""},
		{"ok with goal and depth", `{"topic_id": "t-1", "goal": "Size the market in 2027", "depth": "deep"}`, 0, ""},
		{"null goal and depth", `{"topic_id": "t-1", "goal": null, "depth": null}`, 0, ""},
		{"rule snapshot tolerated", `{"topic_id": "t-1", "rule_snapshot": null}`, 0, ""},
		{"missing topic_id", `{}`, errcode.InvalidParams, `"loc":["input","topic_id"]`},
		{"empty topic_id", `{"topic_id": ""}`, errcode.InvalidParams, `"loc":["input","topic_id"]`},
		{"blank topic_id", `{"topic_id": " \t "}`, errcode.InvalidParams, `"loc":["input","topic_id"]`},
		{"topic_id not a string", `{"topic_id": 7}`, errcode.InvalidParams, `"loc":["input","topic_id"]`},
		{"unknown key", `{"topic_id": "t-1", "topic": "x"}`, errcode.InvalidParams, "unknown properties: topic"},
		{"case-folded duplicate", `{"topic_id": "t-1", "Topic_ID": "t-2"}`, errcode.InvalidParams, "unknown properties: Topic_ID"},
		{"unknown depth", `{"topic_id": "t-1", "depth": "huge"}`, errcode.InvalidParams, `"loc":["input","depth"]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a, ts := newTestServer(t)
			req := ts.Request(actionStart, json.RawMessage(tt.input))
			req.JobID = "job-1"
			res, err := ts.Invoke(t.Context(), req)
			require.Equal(t, tt.wantCode, supervaizer.CodeOf(err), "%v", err)
			_, getErr := a.jobs.get(t.Context(), mustScope(t, svtest.DefaultWorkspaceID), "job-1")
			if tt.wantCode != 0 {
				var e *supervaizer.Error
				require.ErrorAs(t, err, &e)
				b, _ := json.Marshal(e.Data())
				assert.Contains(t, string(b), tt.wantText, "the error names the key")
				assert.ErrorIs(t, getErr, errJobNotFound, "the handler did not run")
				return
			}
			assert.Equal(t, contracts.StatusOK, res.Status, "%+v", res.Errors)
			assert.NoError(t, getErr)
		})
	}
}

func TestStartNeedsJobID(t *testing.T) {
	_, ts := newTestServer(t)
	res := invoke(t, ts, ts.Request(actionStart, map[string]any{"topic_id": "t-1"}))
	assert.Equal(t, codeMissingJobID, errorCode(res))
}

// TestStartWithoutKeyConverges: without idempotency_key the SDK does not
// deduplicate; the handler converges on the existing job itself, creating
// nothing and answering as the first start did, job.started included (spec
// item 69: a start taken over after its process died once the job existed is
// such a run, and its job.started must still reach Studio and the event
// stream; before the fix it answered ok with no effect).
func TestStartWithoutKeyConverges(t *testing.T) {
	_, ts := newTestServer(t)
	first := start(t, ts, "job-1", map[string]any{"topic_id": "t-1"})
	again := start(t, ts, "job-1", map[string]any{"topic_id": "t-1"})
	require.NotEmpty(t, again.Effects)
	assert.Equal(t, "job.started", again.Effects[0].Type)
	assert.Equal(t, first.Effects, again.Effects, "the same answer as the first start")
	assert.Equal(t, first.JobState, again.JobState, "nothing new was created")
	other := invoke(t, ts, onJob(ts, actionStart, "job-1", map[string]any{"topic_id": "t-2"}))
	assert.Equal(t, codeJobExists, errorCode(other))
}

func TestStartIsIdempotent(t *testing.T) {
	_, ts := newTestServer(t)
	req := ts.Request(actionStart, map[string]any{"topic_id": "t-1"})
	req.IdempotencyKey, req.JobID = "setup-1", "job-1"
	svtest.AssertConfirmIdempotent(t, ts, req, svtest.RecommendedChecks(map[string]any{"topic_id": "t-2"}))
}

func TestPreview(t *testing.T) {
	a, ts := newTestServer(t)
	tests := []struct {
		name       string
		input      map[string]any
		wantStatus string
		wantMax    float64
	}{
		{"empty draft", map[string]any{"name": "My job"}, contracts.StepPending, 2},
		{"quick", map[string]any{"topic_id": "t-1"}, contracts.StepDone, 2},
		{"deep", map[string]any{"topic_id": "t-1", "depth": depthDeep, "name": "Deep job"}, contracts.StepDone, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := invoke(t, ts, onJob(ts, actionPreview, "job-1", tt.input))
			require.Equal(t, contracts.StatusOK, res.Status, "%+v", res.Errors)
			var plan contracts.SetupPlan
			require.NoError(t, contracts.Unmarshal(mustMarshal(t, res.SetupPlan), &plan))
			assert.Equal(t, tt.wantStatus, plan.Steps[0].Status)
			assert.Equal(t, tt.wantMax, *plan.CostEstimate.Max)
			assert.Equal(t, []string{actionGoalSuggest}, plan.Steps[0].HelpActions)
		})
	}
	_, err := a.jobs.get(t.Context(), mustScope(t, svtest.DefaultWorkspaceID), "job-1")
	assert.ErrorIs(t, err, errJobNotFound, "a preview creates nothing")
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

func TestGoalSuggest(t *testing.T) {
	_, ts := newTestServer(t)
	tests := []struct {
		name            string
		input           map[string]any
		wantCode        string
		wantValue       string // "" means no value (a pure check)
		wantSuggestions int
	}{
		{"drafts from the topic", map[string]any{"field": "goal", "values": map[string]any{"topic_id": "eu-batteries"}}, "", defaultGoal("eu-batteries"), 0},
		{"checks a goal without a horizon", map[string]any{"field": "goal", "values": map[string]any{"goal": "Size the market"}}, "", "Size the market", 1},
		{"accepts a bounded goal", map[string]any{"field": "goal", "values": map[string]any{"goal": "Size the market in 2027"}}, "", "Size the market in 2027", 0},
		{"needs a topic", map[string]any{"field": "goal", "values": map[string]any{}}, "", "", 1},
		{"other field", map[string]any{"field": "depth"}, codeUnsupportedField, "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := invoke(t, ts, ts.Request(actionGoalSuggest, tt.input))
			if tt.wantCode != "" {
				assert.Equal(t, tt.wantCode, errorCode(res))
				return
			}
			require.Equal(t, contracts.StatusOK, res.Status, "%+v", res.Errors)
			require.NotNil(t, res.Draft)
			assert.Equal(t, "goal", res.Draft.Field)
			if tt.wantValue == "" {
				assert.Nil(t, res.Draft.Value)
			} else {
				assert.JSONEq(t, string(mustMarshal(t, tt.wantValue)), string(res.Draft.Value))
			}
			assert.Len(t, res.Draft.Suggestions, tt.wantSuggestions)
		})
	}
}

func TestDryRunSavesAndSendsNothing(t *testing.T) {
	a, ts := newTestServer(t)
	res := invoke(t, ts, ts.Request(actionTest, map[string]any{"topic_id": "t-1", "depth": depthDeep}))
	require.Equal(t, contracts.StatusOK, res.Status, "%+v", res.Errors)
	require.NotNil(t, res.DryRun)
	assert.Equal(t, "job.tested", res.Effects[0].Type)
	assert.Contains(t, res.Effects[0].Data["draft"], "# Brief: t-1")
	n := 0
	require.NoError(t, a.store.Scan(t.Context(), "", func(k string, _ []byte) error {
		n++
		return nil
	}))
	assert.Zero(t, n, "a dry run writes nothing")
}

// TestReview covers step.awaiting.submit.
func TestReview(t *testing.T) {
	a, ts := newTestServer(t)
	st := start(t, ts, "job-1", map[string]any{"topic_id": "t-1"}).JobState
	setupID, reviewID := st.Cases[0].ID, st.Cases[0].Steps[0].ID
	submit := func(jobID, caseID, stepID string, in map[string]any) *contracts.ActionResult {
		req := onJob(ts, actionSubmit, jobID, in)
		req.CaseID, req.StepID = caseID, stepID
		return invoke(t, ts, req)
	}
	edit := map[string]any{"review_text": "# Edited", "approve_review": false}
	approve := map[string]any{"review_text": "# Final", "approve_review": true}

	assert.Equal(t, codeJobNotFound, errorCode(submit("job-x", setupID, reviewID, approve)))
	assert.Equal(t, codeStepNotFound, errorCode(submit("job-1", setupID, "other-step", approve)))

	res := submit("job-1", setupID, reviewID, edit)
	require.Equal(t, contracts.StatusOK, res.Status, "%+v", res.Errors)
	assert.Equal(t, jobAwaiting, res.JobState.Job.Status, "an edit without approval keeps the step awaiting")
	assert.Equal(t, "awaiting", res.Effects[0].Status)
	rec, err := a.jobs.get(t.Context(), mustScope(t, svtest.DefaultWorkspaceID), "job-1")
	require.NoError(t, err)
	assert.Equal(t, "# Edited", rec.Draft)

	res = submit("job-1", setupID, reviewID, approve)
	require.Equal(t, contracts.StatusOK, res.Status, "%+v", res.Errors)
	assert.Equal(t, jobActive, res.JobState.Job.Status)
	assert.Len(t, res.JobState.Cases, 3)

	replay := submit("job-1", setupID, reviewID, approve)
	assert.Equal(t, contracts.StatusOK, replay.Status, "the same approval again converges")
	assert.Empty(t, replay.Effects)
	assert.Equal(t, codeStepNotAwaiting, errorCode(submit("job-1", setupID, reviewID, edit)))

	_, err = ts.Invoke(t.Context(), onJob(ts, actionSubmit, "job-1", map[string]any{"approve_review": true}))
	assert.Equal(t, errcode.InvalidParams, supervaizer.CodeOf(err), "review_text is required")
}

// TestReviewOfTheTask: a submission naming neither the case nor the step (an
// A2A client answering the input-required task) addresses the job's review;
// naming only one of them is still checked.
func TestReviewOfTheTask(t *testing.T) {
	_, ts := newTestServer(t)
	st := start(t, ts, "job-1", map[string]any{"topic_id": "t-1"}).JobState
	submit := func(caseID, stepID string, in map[string]any) *contracts.ActionResult {
		req := onJob(ts, actionSubmit, "job-1", in)
		req.CaseID, req.StepID = caseID, stepID
		return invoke(t, ts, req)
	}
	approve := map[string]any{"review_text": "# Final", "approve_review": true}
	assert.Equal(t, codeStepNotFound, errorCode(submit(st.Cases[0].ID, "", approve)), "a case without its step")
	assert.Equal(t, codeStepNotFound, errorCode(submit("", st.Cases[0].Steps[0].ID, approve)), "a step without its case")

	res := submit("", "", map[string]any{"review_text": "# Edited", "approve_review": false})
	require.Equal(t, contracts.StatusOK, res.Status, "%+v", res.Errors)
	assert.Equal(t, jobAwaiting, res.JobState.Job.Status)
	require.NotEmpty(t, res.Effects)
	assert.Equal(t, st.Cases[0].Steps[0].ID, res.Effects[0].StepID, "the effect names the review step")

	res = submit("", "", approve)
	require.Equal(t, contracts.StatusOK, res.Status, "%+v", res.Errors)
	assert.Equal(t, jobActive, res.JobState.Job.Status)
	assert.Equal(t, codeStepNotAwaiting, errorCode(submit("", "", map[string]any{"review_text": "# Other", "approve_review": true})))
}

func TestStop(t *testing.T) {
	_, ts := newTestServer(t)
	st := start(t, ts, "job-1", map[string]any{"topic_id": "t-1"}).JobState
	res := invoke(t, ts, onJob(ts, actionStop, "job-1", nil))
	require.Equal(t, contracts.StatusOK, res.Status)
	assert.Equal(t, "job.stopped", res.Effects[0].Type)
	assert.Equal(t, jobStopped, res.JobState.Job.Status)
	assert.Equal(t, "cancelled", res.JobState.Cases[0].Steps[0].Status)
	assert.Nil(t, res.JobState.Cases[0].Steps[0].Awaiting)

	again := invoke(t, ts, onJob(ts, actionStop, "job-1", nil))
	assert.Empty(t, again.Effects, "stopping twice changes nothing")

	req := onJob(ts, actionSubmit, "job-1", map[string]any{"review_text": "x", "approve_review": true})
	req.CaseID, req.StepID = st.Cases[0].ID, st.Cases[0].Steps[0].ID
	assert.Equal(t, codeJobStopped, errorCode(invoke(t, ts, req)))
	assert.Equal(t, codeJobNotFound, errorCode(invoke(t, ts, onJob(ts, actionStop, "job-x", nil))))

	// Stopped after an edit that was not approved: nothing was ever sent.
	st = start(t, ts, "job-2", map[string]any{"topic_id": "t-2"}).JobState
	edit := onJob(ts, actionSubmit, "job-2", map[string]any{"review_text": "# Edited", "approve_review": false})
	edit.CaseID, edit.StepID = st.Cases[0].ID, st.Cases[0].Steps[0].ID
	require.Equal(t, contracts.StatusOK, invoke(t, ts, edit).Status)
	res = invoke(t, ts, onJob(ts, actionStop, "job-2", nil))
	require.Len(t, res.JobState.Cases, 1, "no delivery case for a brief never approved")
	assert.Equal(t, "cancelled", res.JobState.Cases[0].Steps[0].Status)
}

func TestSyncConverges(t *testing.T) {
	_, ts := newTestServer(t)
	start(t, ts, "job-1", map[string]any{"topic_id": "t-1"})
	first := invoke(t, ts, onJob(ts, actionSync, "job-1", nil))
	second := invoke(t, ts, onJob(ts, actionSync, "job-1", nil))
	require.Equal(t, contracts.StatusOK, first.Status)
	assert.Equal(t, first.JobState, second.JobState)
	assert.Equal(t, first.SyncCursor, second.SyncCursor)
	assert.Equal(t, "topic:t-1", first.ExternalRef)
	assert.True(t, first.ReplaySafety.Convergent)
	assert.False(t, first.ReplaySafety.StrictlyIdempotentResponse)
	assert.Equal(t, codeJobNotFound, errorCode(invoke(t, ts, onJob(ts, actionSync, "job-x", nil))))
}

func TestContextAssign(t *testing.T) {
	a, ts := newTestServer(t)
	start(t, ts, "job-1", map[string]any{"topic_id": "t-1"})
	assign := func(jobID string, items []map[string]any) *contracts.ActionResult {
		return invoke(t, ts, onJob(ts, studio.ContextAssignAction, jobID, map[string]any{
			"items": items, "job_id": jobID, "assigned_at": "2026-11-01T10:00:00Z"}))
	}
	res := assign("job-1", []map[string]any{})
	require.Equal(t, contracts.StatusOK, res.Status, "%+v", res.Errors)
	assert.Equal(t, studio.EffectContextAssigned, res.Effects[0].Type)
	snaps, err := a.jobContext(t.Context(), mustScope(t, svtest.DefaultWorkspaceID), "job-1")
	require.NoError(t, err)
	assert.NotNil(t, snaps)
	assert.Empty(t, snaps, "an empty assignment means no context")

	assert.Equal(t, codeJobNotFound, errorCode(assign("job-x", []map[string]any{})))
	item := map[string]any{"ref": "supervaize.context.workspace.brief", "version": 1, "scope": "workspace", "title": "Brief"}
	assert.Equal(t, codeNotAttached, errorCode(assign("job-1", []map[string]any{item})), "opening items needs Studio")
}

func TestWorkspaceBinding(t *testing.T) {
	_, ts := newTestServer(t)
	ctx := t.Context()
	// Bootstrap calls run without a workspace token.
	res, err := ts.InvokeWithToken(ctx, ts.Request(contracts.BootstrapCreateAction, map[string]any{"display_name": "Acme Production"}), "")
	require.NoError(t, err)
	require.Equal(t, contracts.StatusOK, res.Status, "%+v", res.Errors)
	ref := res.Effects[0].Item["agent_workspace_ref"].(string)
	assert.Regexp(t, `^acme-production-[0-9a-f]{8}$`, ref)

	// The options call proves nothing but the API key: it lists no stored
	// workspace, neither to the workspace that created it nor to any other.
	for _, ws := range []string{svtest.DefaultWorkspaceID, "ws-other-tenant"} {
		req := ts.Request(contracts.BootstrapOptionsAction, nil)
		req.Workspace = contracts.WorkspaceRef{ID: ws}
		res, err = ts.InvokeWithToken(ctx, req, "")
		require.NoError(t, err)
		require.Equal(t, contracts.StatusOK, res.Status)
		assert.Empty(t, res.Effects[0].Items, ws)
		raw, err := contracts.Marshal(res)
		require.NoError(t, err)
		assert.NotContains(t, string(raw), ref, ws)
		assert.NotContains(t, string(raw), "Acme Production", ws)
	}

	sr, err := ts.LoadSurfaceWithToken(ctx, ts.SurfaceRequest(contracts.BootstrapCreateSurface), "")
	require.NoError(t, err)
	var form a2ui.Form
	require.NoError(t, json.Unmarshal(sr.Document, &form))
	assert.Equal(t, contracts.BootstrapCreateAction, form.Submit.Action)

	_, err = ts.InvokeWithToken(ctx, ts.Request(contracts.BootstrapCreateAction, map[string]any{"display_name": " "}), "")
	assert.Equal(t, errcode.InvalidParams, supervaizer.CodeOf(err))
}

// TestSurfaces loads every surface and validates its document.
func TestSurfaces(t *testing.T) {
	_, ts := newTestServer(t)
	st := start(t, ts, "job-1", map[string]any{"topic_id": "t-1"}).JobState
	step := func(surface, stepID string) contracts.SurfaceRequest {
		r := ts.SurfaceRequest(surface)
		r.JobID, r.CaseID, r.StepID = "job-1", st.Cases[0].ID, stepID
		return r
	}
	tests := []struct {
		name     string
		req      contracts.SurfaceRequest
		wantType string
		validate func([]byte) error
	}{
		{"job.start", ts.SurfaceRequest(surfaceJobStart), "Form", func(b []byte) error { var d a2ui.Form; return errors.Join(json.Unmarshal(b, &d), d.Validate()) }},
		{"review", step(surfaceStepAwaiting, st.Cases[0].Steps[0].ID), "DocumentReview", func(b []byte) error {
			var d a2ui.DocumentReview
			return errors.Join(json.Unmarshal(b, &d), d.Validate())
		}},
		{"step detail", step(surfaceStepDetail, st.Cases[0].Steps[0].ID), "StepDetail", func(b []byte) error { return nil }},
		{"analytics", ts.SurfaceRequest(surfaceAnalytics), "Dashboard", func(b []byte) error { var d a2ui.Dashboard; return errors.Join(json.Unmarshal(b, &d), d.Validate()) }},
		{"contact import", ts.SurfaceRequest(surfaceContactImport), "ResourceImport", func(b []byte) error {
			var d a2ui.ResourceImport
			return errors.Join(json.Unmarshal(b, &d), d.Validate())
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := ts.LoadSurface(t.Context(), tt.req)
			require.NoError(t, err)
			assert.Equal(t, catalogVersion, *res.A2UICatalogVersion)
			assert.Equal(t, tt.wantType, contracts.DocumentType(res.Document))
			assert.NoError(t, tt.validate(res.Document))
		})
	}
	_, err := ts.LoadSurface(t.Context(), step(surfaceStepAwaiting, "other"))
	assert.Equal(t, errcode.InternalError, supervaizer.CodeOf(err), "an unknown step")
	unknown := ts.SurfaceRequest(surfaceStepAwaiting)
	unknown.JobID = "job-x"
	_, err = ts.LoadSurface(t.Context(), unknown)
	assert.Equal(t, errcode.InternalError, supervaizer.CodeOf(err), "an unknown job")
}

func TestContactsImport(t *testing.T) {
	a, ts := newTestServer(t)
	imp := func(csv string) *contracts.ActionResult {
		return invoke(t, ts, ts.Request("resource.contacts.import", map[string]any{"format": "csv", "content": csv}))
	}
	res := imp("name,email,organization\nAda,ada@example.com,Analytical\nBob,BOB@example.com,\n")
	require.Equal(t, contracts.StatusOK, res.Status, "%+v", res.Errors)
	assert.Equal(t, "resource.imported", res.Effects[0].Type)
	assert.Equal(t, 2, *res.Effects[0].Count)
	assert.Equal(t, map[string]any{"created": float64(2), "updated": float64(0)}, res.Effects[0].Summary)

	res = imp("Email,Name\nada@example.com,Ada L.\ncy@example.com,Cy\n")
	require.Equal(t, contracts.StatusOK, res.Status, "%+v", res.Errors)
	assert.Equal(t, map[string]any{"created": float64(1), "updated": float64(1)}, res.Effects[0].Summary)

	res = imp("name,email\nDee,\n")
	assert.Equal(t, contracts.ErrorImportRejected, errorCode(res), "a row without e-mail rejects the file")

	emails, err := a.contactEmails(t.Context(), mustScope(t, svtest.DefaultWorkspaceID))
	require.NoError(t, err)
	assert.Equal(t, []string{"ada@example.com", "bob@example.com", "cy@example.com"}, emails)

	list := invoke(t, ts, ts.Request("resource.contacts.list", map[string]any{"search": "ada l", "limit": 10}))
	require.Len(t, list.Effects[0].Items, 1)
	assert.Equal(t, "Ada L.", list.Effects[0].Items[0]["name"])
	id := list.Effects[0].Items[0]["id"].(string)

	upd := invoke(t, ts, ts.Request("resource.contacts.update", map[string]any{"id": id, "item": map[string]any{"name": "Ada", "email": "bob@example.com"}}))
	assert.Equal(t, codeDuplicateEmail, errorCode(upd))
	upd = invoke(t, ts, ts.Request("resource.contacts.update", map[string]any{"id": id, "item": map[string]any{"name": "Ada", "email": "ada@new.example"}}))
	require.Equal(t, contracts.StatusOK, upd.Status, "%+v", upd.Errors)
	created := invoke(t, ts, ts.Request("resource.contacts.create", map[string]any{"item": map[string]any{"name": "Other Ada", "email": "ada@example.com"}}))
	assert.Equal(t, contracts.StatusOK, created.Status, "the old address is free again: %+v", created.Errors)
	missing := invoke(t, ts, ts.Request("resource.contacts.update", map[string]any{"id": "nope", "item": map[string]any{"name": "X", "email": "x@example.com"}}))
	assert.Equal(t, contracts.ErrorNotFound, errorCode(missing))
	bad := invoke(t, ts, ts.Request("resource.contacts.create", map[string]any{"item": map[string]any{"name": "X", "email": "not-an-address"}}))
	assert.Equal(t, a2ui.CodePattern, errorCode(bad))
}

// blockingSender blocks until its context ends, like a delivery cut short by
// a shutdown.
type blockingSender struct{ started chan struct{} }

func (s *blockingSender) Send(ctx context.Context, _ message) (string, error) {
	close(s.started)
	<-ctx.Done()
	return "", ctx.Err()
}

type failingSender struct{}

func (failingSender) Send(context.Context, message) (string, error) {
	return "", errors.New("smtp: connection refused")
}

// approve starts job-1 and approves its review on ts.
func approve(t *testing.T, ts *svtest.TestServer) {
	t.Helper()
	st := start(t, ts, "job-1", map[string]any{"topic_id": "t-1"}).JobState
	req := onJob(ts, actionSubmit, "job-1", map[string]any{"review_text": "# Final", "approve_review": true})
	req.CaseID, req.StepID = st.Cases[0].ID, st.Cases[0].Steps[0].ID
	res := invoke(t, ts, req)
	require.Equal(t, contracts.StatusOK, res.Status, "%+v", res.Errors)
}

func waitJob(t *testing.T, ts *svtest.TestServer, status string) *contracts.ActionResult {
	t.Helper()
	var res *contracts.ActionResult
	poll(t, func() bool {
		res = invoke(t, ts, onJob(ts, actionSync, "job-1", nil))
		return res.JobState != nil && res.JobState.Job.Status == status
	}, "job-1 never reached %q", status)
	return res
}

func TestDeliveryFailure(t *testing.T) {
	a, ts := newTestServer(t)
	a.sender = failingSender{}
	approve(t, ts)
	res := waitJob(t, ts, jobFailed)
	assert.Equal(t, "failed", res.JobState.Cases[1].Steps[0].Status)
	assert.Equal(t, "the brief could not be sent", res.JobState.Cases[1].Metadata["failure"], "the cause is logged, not shown")
}

// TestRestartKeepsState restarts the agent on the same store: the job, the
// idempotency record of its start and an interrupted delivery survive.
func TestRestartKeepsState(t *testing.T) {
	studio := svtest.NewFakeStudio(t)
	env := studioEnv(studio, t.TempDir())
	h := startHarness(t, studio, env)
	blocked := &blockingSender{started: make(chan struct{})}
	h.app.sender = blocked
	req := actionRequest(t, wsA, actionStart, map[string]any{"topic_id": "t-1"})
	req.JobID, req.IdempotencyKey = "job-1", "setup-1"
	first, rerr := h.client.invokeRaw(req)
	require.Nil(t, rerr)
	var started contracts.ActionResult
	require.NoError(t, contracts.Unmarshal(first, &started))
	sub := jobRequest(t, wsA, actionSubmit, "job-1", map[string]any{"review_text": "# Final", "approve_review": true})
	sub.CaseID, sub.StepID = started.JobState.Cases[0].ID, started.JobState.Cases[0].Steps[0].ID
	require.Equal(t, contracts.StatusOK, h.client.invoke(sub).Status)
	waitClosed(t, blocked.started, "the delivery started")
	h.stop() // the delivery is interrupted

	h2 := startHarness(t, studio, env)
	again, rerr := h2.client.invokeRaw(req)
	require.Nil(t, rerr)
	assert.JSONEq(t, string(first), string(again), "the idempotency record survived the restart")
	res := h2.client.waitStatus(wsA, "job-1", jobCompleted)
	assert.Equal(t, "completed", res.JobState.Cases[1].Steps[0].Status, "the interrupted delivery resumed")
}

// TestStepsHaveStableIDs: every snapshot of a job uses the same ids.
func TestStepsHaveStableIDs(t *testing.T) {
	rec := &jobRecord{ID: "job-1", MissionID: "m", TopicID: "t", Depth: depthQuick, Status: jobAwaiting, Draft: "d"}
	ids := func(st *contracts.JobState) []string {
		var out []string
		for _, c := range st.Cases {
			out = append(out, c.ID)
			for _, s := range c.Steps {
				out = append(out, s.ID)
			}
		}
		return out
	}
	awaiting := ids(rec.state())
	rec.Status, rec.Reviews, rec.Approved = jobActive, 1, true
	active := ids(rec.state())
	rec.Status, rec.Delivery = jobCompleted, &delivery{Receipt: "r", Recipients: 1}
	done := ids(rec.state())
	assert.Equal(t, awaiting, active[:len(awaiting)])
	assert.Equal(t, active, done)
	assert.False(t, slices.ContainsFunc(done, func(s string) bool { return s == "" }))
}
