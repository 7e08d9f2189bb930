package testing_test

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	supervaizer "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/checkpoint"
	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/errcode"
	"github.com/supervaize/supervaizer-go/studio"
	svtest "github.com/supervaize/supervaizer-go/testing"
)

// The governed test agent: "Research Agent" declaring rule checkpoints and a
// billing catalog.
const (
	skuBrief     = "brief_generated"
	skuSources   = "source_read"
	secretRef    = "case.metadata.customer_reference"
	snapshotHash = "rs_9a41c0"
)

// newGovernedAgent is newServedAgent with the rule-checkpoint capability and
// a billing catalog.
func newGovernedAgent(t testing.TB) *supervaizer.Agent {
	t.Helper()
	reg := supervaizer.RegistrationSpec{
		AgentSlug: agentSlug, DisplayName: agentName, A2UICatalogVersion: "1.0.0",
		Actions:  supervaizer.Actions(contracts.DefaultStartAction, echoAction),
		Surfaces: supervaizer.Surfaces(surfaceID),
		RuleCheckpoints: &contracts.RuleCheckpoints{Phases: []string{contracts.PhaseBefore, contracts.PhaseAfter},
			SecretRefs: []string{secretRef}},
	}
	a, err := supervaizer.NewAgent(supervaizer.AgentSpec{Name: agentName, Version: "1.0.0", Registration: reg,
		BillingCatalog: contracts.BillingCatalog{{SKU: skuBrief, Unit: "brief"}, {SKU: skuSources, Unit: "source"}}})
	require.NoError(t, err)
	s := &starter{behaviour: startIdempotent, results: map[string]stored{}}
	supervaizer.HandleActionFor(a, contracts.DefaultStartAction, s.start)
	a.HandleAction(echoAction, echo)
	a.HandleSurface(surfaceID, dashboard)
	return a
}

// newAttached starts a governed agent attached to a new fake Studio API.
func newAttached(t testing.TB) (*svtest.TestServer, *supervaizer.Agent) {
	t.Helper()
	a := newGovernedAgent(t)
	return svtest.NewAttachedTestServer(t, []*supervaizer.Agent{a}), a
}

func TestAttachedHandshake(t *testing.T) {
	t.Parallel()
	ts, agent := newAttached(t)
	api := ts.API
	require.NotNil(t, api)

	reg, ok := api.Registration()
	require.True(t, ok, "server.register was posted")
	assert.Equal(t, svtest.DefaultControllerID, reg.ServerID)
	assert.Equal(t, ts.URL(), reg.URL, "the public URL is where the test server listens")
	assert.Equal(t, svtest.DefaultAPIKey, reg.APIKey)
	assert.Equal(t, supervaizer.Version, reg.ControllerVersion)
	der, err := x509.MarshalPKIXPublicKey(&svtest.ControllerKey(t).PublicKey)
	require.NoError(t, err)
	assert.Equal(t, string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})), reg.PublicKeyPEM)
	require.Len(t, reg.Agents, 1)
	assert.Equal(t, agentSlug, reg.Agents[0].Slug)
	assert.Equal(t, []string{skuBrief, skuSources}, reg.Agents[0].BillingSKUs)

	// The handshake linked the agent; the lookup used its Studio id.
	id, linked := agent.StudioAgentID()
	require.True(t, linked)
	assert.Equal(t, ts.Studio.StudioAgentID(agentSlug), id)
	sa, ok := ts.Server.Studio().Agent(agentSlug)
	require.True(t, ok)
	assert.Equal(t, studio.Agent{ID: id, Status: svtest.DefaultAgentStatus, OnboardingStatus: svtest.OnboardingPending}, sa)

	assert.Equal(t, []string{string(studio.EventServerRegister)}, api.EventTypes())
	assert.Equal(t, []svtest.RecordedRequest{
		{Seq: 1, Method: http.MethodPost, Path: api.WorkspacePath(svtest.EventsPath), Status: http.StatusOK},
		{Seq: 2, Method: http.MethodGet, Path: api.WorkspacePath("/agents/" + id), Status: http.StatusOK},
	}, api.Requests())
	ev := api.Events()[0]
	assert.Equal(t, "server", ev.ObjectType)
	assert.Equal(t, api.WorkspaceID(), ev.Workspace)
	assert.Equal(t, map[string]string{"server": reg.URI}, ev.Source)
}

func TestAttachedTokens(t *testing.T) {
	t.Parallel()
	ts, _ := newAttached(t)
	req := ts.Request(echoAction, nil)
	res, err := ts.Invoke(t.Context(), req)
	require.NoError(t, err, "a token minted for Studio's audience passes once the handshake applied it")
	assert.Equal(t, ts.Studio.StudioAgentID(agentSlug), res.Effects[0].Data["agent_id"])

	// A token for the controller's own id is refused: the audience came from
	// the handshake.
	c := ts.Studio.ActionClaims(req)
	c.Audience, c.ServerID = []string{"supervaizer-server:" + svtest.DefaultControllerID}, svtest.DefaultControllerID
	_, err = ts.InvokeWithToken(t.Context(), req, ts.Studio.Mint(c))
	assert.Equal(t, "workspace_authorization_wrong_audience", svtest.AuthCode(err))

	start := startRequest(ts, contracts.DefaultStartAction, "t-1")
	svtest.AssertConfirmIdempotent(t, ts, start, svtest.RecommendedChecks(map[string]any{"topic_id": "t-2"}))
}

func TestAttachedParameters(t *testing.T) {
	t.Parallel()
	api := svtest.NewFakeStudioAPI(t, svtest.NewFakeStudio(t))
	api.SetAgent(agentSlug, svtest.AgentDetail{Status: "active",
		Parameters: map[string]any{"OPENAI_API_KEY": "sk-test-1", "MAX_SOURCES": 12, "REGION": nil}})
	ts := svtest.NewAttachedTestServerWithAPI(t, api, []*supervaizer.Agent{newGovernedAgent(t)})

	sa, ok := ts.Server.Studio().Agent(agentSlug)
	require.True(t, ok)
	assert.Equal(t, "active", sa.Status)
	assert.Equal(t, svtest.OnboardingConfigured, sa.OnboardingStatus)
	assert.Equal(t, []studio.AgentParameter{
		{Name: "MAX_SOURCES", Value: "12"}, {Name: "OPENAI_API_KEY", Value: "sk-test-1"}, {Name: "REGION", Value: ""},
	}, sa.Parameters)
}

func TestEncryptParametersNeedsKey(t *testing.T) {
	t.Parallel()
	_, err := svtest.EncryptParameters(nil, map[string]any{"a": 1})
	assert.Error(t, err)
}

func TestAttachedLookupBySlug(t *testing.T) {
	t.Parallel()
	api := svtest.NewFakeStudioAPI(t, svtest.NewFakeStudio(t))
	api.SetAgent(agentSlug, svtest.AgentDetail{Parameters: map[string]any{"K": "v"}})
	bySlug := api.WorkspacePath("/agents/by-slug/" + agentSlug)
	hr := apiRequest(t, api, http.MethodGet, bySlug, "")
	assert.Equal(t, http.StatusConflict, hr.Code, "no controller key to encrypt for before server.register: %s", hr.Body.String())

	svtest.NewAttachedTestServerWithAPI(t, api, []*supervaizer.Agent{newGovernedAgent(t)})
	hr = apiRequest(t, api, http.MethodGet, bySlug, "")
	assert.Equal(t, http.StatusOK, hr.Code, hr.Body.String())
	assert.Contains(t, hr.Body.String(), `"parameters_encrypted":"`)
	assert.Contains(t, hr.Body.String(), `"id":"`+svtest.DefaultStudioAgentID(agentSlug)+`"`)
	assert.Contains(t, hr.Body.String(), `"name":"`+agentName+`"`)
	for _, path := range []string{api.WorkspacePath("/agents/by-slug/unknown-agent"), api.WorkspacePath("/agents/studio-agent-unknown")} {
		hr = apiRequest(t, api, http.MethodGet, path, "")
		assert.Equal(t, http.StatusNotFound, hr.Code, path)
	}
}

func TestAttachedStartFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		setup   func(api *svtest.FakeStudioAPI)
		wantErr string // "" means Start succeeds
		is      error
	}{
		{"register fails", func(api *svtest.FakeStudioAPI) {
			api.FailNext(api.WorkspacePath(svtest.EventsPath), http.StatusServiceUnavailable)
		}, "HTTP 503", nil},
		{"transport failure is retried", func(api *svtest.FakeStudioAPI) {
			api.FailNext(api.WorkspacePath(svtest.EventsPath), svtest.DropConnection)
		}, "", nil},
		{"stored key matches", func(api *svtest.FakeStudioAPI) {
			api.ExpectControllerAPIKey(svtest.DefaultAPIKey)
		}, "", nil},
		{"stored key differs", func(api *svtest.FakeStudioAPI) {
			api.ExpectControllerAPIKey("another-key")
		}, svtest.KeyMismatchReason, studio.ErrHandshake},
		{"binding missing", func(api *svtest.FakeStudioAPI) {
			api.EditHandshake(func(resp map[string]any) {
				hs := resp["supervaizer_handshake"].(map[string]any)
				hs["workspace_authorization"].(map[string]any)["agents"] = []any{}
			})
		}, "no workspace-authorization binding", studio.ErrHandshake},
		{"lookup failure leaves the agent unchanged", func(api *svtest.FakeStudioAPI) {
			api.FailNext(api.WorkspacePath("/agents/"+svtest.DefaultStudioAgentID(agentSlug)), http.StatusInternalServerError)
		}, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			api := svtest.NewFakeStudioAPI(t, svtest.NewFakeStudio(t))
			tt.setup(api)
			srv, err := supervaizer.NewServer([]*supervaizer.Agent{newGovernedAgent(t)}, api.ServerOptions()...)
			require.NoError(t, err)
			err = srv.Start(t.Context())
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
			assert.NotContains(t, err.Error(), svtest.DefaultAPIKey)
			if tt.is != nil {
				assert.ErrorIs(t, err, tt.is)
			}
		})
	}
}

func TestAttachedStartRetryRecorded(t *testing.T) {
	t.Parallel()
	api := svtest.NewFakeStudioAPI(t, svtest.NewFakeStudio(t))
	events := api.WorkspacePath(svtest.EventsPath)
	api.FailNext(events, svtest.DropConnection)
	svtest.NewAttachedTestServerWithAPI(t, api, []*supervaizer.Agent{newGovernedAgent(t)})
	rr := api.Requests()
	require.GreaterOrEqual(t, len(rr), 2)
	assert.Equal(t, svtest.RecordedRequest{Seq: 1, Method: http.MethodPost, Path: events, Status: svtest.DropConnection}, rr[0])
	assert.Equal(t, svtest.RecordedRequest{Seq: 2, Method: http.MethodPost, Path: events, Status: http.StatusOK}, rr[1])
	assert.Len(t, api.Registrations(), 1, "the dropped request was not processed")
}

// governedStart is a job.start request of a governed job.
func governedStart(t testing.TB, ts *svtest.TestServer, jobID string) *supervaizer.ActionRequest {
	t.Helper()
	req := ts.Request(contracts.DefaultStartAction, map[string]any{"topic_id": "t-1", "rule_snapshot": ts.API.RuleSnapshot(snapshotHash)})
	req.JobID, req.IdempotencyKey = jobID, "setup-"+jobID
	return &req
}

// guardedStep is a guarded step whose effect counts its runs.
func guardedStep(occurrence string, effects *int) checkpoint.Step[string] {
	return checkpoint.Step[string]{
		CaseID: "case-1", CaseDetails: map[string]any{"name": "Case 1"}, OccurrenceID: occurrence, StepID: "step-send",
		BeforeContext: map[string]any{"operation": "send_brief", "recipients": 2},
		Effect: func(context.Context) (string, error) {
			*effects++
			return "msg-42", nil
		},
		AfterContext: func(r string) map[string]any { return map[string]any{"operation": "send_brief", "outcome": r} },
	}
}

func TestAttachedCheckpointsAllow(t *testing.T) {
	t.Parallel()
	ts, agent := newAttached(t)
	start := governedStart(t, ts, "job-77")
	gate, err := checkpoint.NewGate(agent.Checkpoints(), ts.Server.Studio(), start)
	require.NoError(t, err)
	effects := 0
	res, err := checkpoint.Run(t.Context(), gate, guardedStep("send-brief-job-77-case-1", &effects))
	require.NoError(t, err)
	assert.Equal(t, "msg-42", res)
	assert.Equal(t, 1, effects)

	calls := ts.API.Checkpoints()
	require.Len(t, calls, 2)
	for i, phase := range []string{contracts.PhaseBefore, contracts.PhaseAfter} {
		c := calls[i]
		assert.Equal(t, phase, c.Phase)
		assert.Equal(t, "send-brief-job-77-case-1", c.OccurrenceID)
		assert.Equal(t, snapshotHash, c.SnapshotHash)
		assert.Equal(t, "job-77", c.JobID)
		assert.Equal(t, "case-1", c.CaseID)
		assert.Equal(t, "step-send", c.StepID)
		assert.Equal(t, []string{secretRef}, c.SecretRefs)
		assert.Equal(t, checkpoint.Allow, c.Status)
		assert.True(t, strings.HasPrefix(c.CheckpointID, "cp_") && strings.HasPrefix(c.InputHash, "ih_"), "%+v", c)
	}
	assert.Equal(t, map[string]any{"operation": "send_brief", "recipients": float64(2)}, calls[0].Context)
	assert.NotEqual(t, calls[0].CheckpointID, calls[1].CheckpointID)

	cases := ts.API.WaitEvents(t, string(studio.EventCaseStart), 1)
	assert.Equal(t, map[string]string{"job": "job-77", "case": "case-1"}, cases[0].Source)
	assert.Less(t, cases[0].Seq, calls[0].Seq, "the case is announced before its first checkpoint")
	assert.Zero(t, ts.API.SnapshotURLCalls(), "the snapshot's checkpoint_url is never called")
}

func TestAttachedCheckpointsPauseResume(t *testing.T) {
	t.Parallel()
	ts, agent := newAttached(t)
	ts.API.SetDecision(svtest.AnyOccurrence, contracts.PhaseBefore, checkpoint.Pause)
	gate, err := checkpoint.NewGate(agent.Checkpoints(), ts.Server.Studio(), governedStart(t, ts, "job-77"))
	require.NoError(t, err)
	effects := 0
	type outcome struct {
		res string
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := checkpoint.Run(t.Context(), gate, guardedStep("send-brief-job-77-case-1", &effects))
		done <- outcome{res, err}
	}()
	before := ts.API.WaitCheckpoints(t, 1)[0]
	assert.Equal(t, checkpoint.Pause, before.Status)
	select {
	case o := <-done:
		t.Fatalf("the step finished before the decision: %+v", o)
	case <-time.After(20 * time.Millisecond):
	}

	res, err := ts.Invoke(t.Context(), ts.ResumeRequest(before, checkpoint.Allow, "dec-1"))
	require.NoError(t, err)
	require.Equal(t, contracts.StatusOK, res.Status, "%+v", res.Errors)
	assert.Equal(t, "rule.checkpoint.resumed", res.Effects[0].Type)

	select {
	case o := <-done:
		require.NoError(t, o.err)
		assert.Equal(t, "msg-42", o.res)
	case <-time.After(svtest.WaitTimeout):
		t.Fatal("the step did not resume")
	}
	assert.Equal(t, 1, effects)
	calls := ts.API.Checkpoints()
	require.Len(t, calls, 2)
	assert.Equal(t, checkpoint.Allow, calls[1].Status, "the after phase keeps the default")
}

func TestAttachedCheckpointsStop(t *testing.T) {
	t.Parallel()
	ts, agent := newAttached(t)
	occurrence := "send-brief-job-78-case-1"
	ts.API.SetDecision(svtest.AnyOccurrence, svtest.AnyPhase, checkpoint.Pause)
	ts.API.SetDecision(occurrence, contracts.PhaseBefore, checkpoint.Stop) // more specific
	gate, err := checkpoint.NewGate(agent.Checkpoints(), ts.Server.Studio(), governedStart(t, ts, "job-78"))
	require.NoError(t, err)
	effects := 0
	_, err = checkpoint.Run(t.Context(), gate, guardedStep(occurrence, &effects))
	var blocked *checkpoint.BlockedError
	require.ErrorAs(t, err, &blocked)
	assert.Equal(t, checkpoint.Stop, blocked.Status)
	assert.Zero(t, effects)
}

func TestAttachedBilling(t *testing.T) {
	t.Parallel()
	ts, agent := newAttached(t)
	acct := ts.Server.Studio()
	at := time.Date(2026, 10, 11, 9, 30, 0, 0, time.UTC)
	brief := studio.Consumption{SKU: skuBrief, Quantity: 1, JobID: "job-1", OccurredAt: at, IdempotencyKey: "job-1:brief"}
	sources := studio.Consumption{SKU: skuSources, Quantity: 12.5, JobID: "job-1", CaseID: "case-7", OccurredAt: at,
		IdempotencyKey: "job-1:sources", Metadata: map[string]any{"provider": "web"}}

	r1, err := acct.ReportConsumption(t.Context(), agent.Slug(), agent.Spec().BillingCatalog, brief, sources)
	require.NoError(t, err)
	assert.Equal(t, []studio.Receipt{
		{IdempotencyKey: "job-1:brief", Status: studio.ReceiptAccepted, ReceiptID: "rcpt-1"},
		{IdempotencyKey: "job-1:sources", Status: studio.ReceiptAccepted, ReceiptID: "rcpt-2"},
	}, r1)
	r2, err := acct.ReportConsumption(t.Context(), agent.Slug(), agent.Spec().BillingCatalog, brief)
	require.NoError(t, err)
	assert.Equal(t, []studio.Receipt{{IdempotencyKey: "job-1:brief", Status: studio.ReceiptDuplicate, ReceiptID: "rcpt-1"}}, r2)

	recs := ts.API.WaitBilling(t, 3)
	require.Len(t, recs, 3)
	assert.Equal(t, svtest.BillingRecord{Seq: recs[1].Seq, AgentSlug: agentSlug, SKU: skuSources, Quantity: 12.5, JobID: "job-1",
		CaseID: "case-7", OccurredAt: "2026-10-11T09:30:00Z", IdempotencyKey: "job-1:sources",
		Metadata: map[string]any{"provider": "web"}, Status: studio.ReceiptAccepted, ReceiptID: "rcpt-2"}, recs[1])
	assert.Equal(t, studio.ReceiptDuplicate, recs[2].Status)

	// Accessors return copies.
	recs[1].Metadata["provider"] = "changed"
	assert.Equal(t, "web", ts.API.BillingRecords()[1].Metadata["provider"])

	ts.API.FailNext(ts.API.WorkspacePath(studio.BillingConsumptionPath), http.StatusServiceUnavailable)
	_, err = acct.ReportConsumption(t.Context(), agent.Slug(), agent.Spec().BillingCatalog, brief)
	var se *studio.StatusError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, http.StatusServiceUnavailable, se.StatusCode)
	_, err = acct.ReportConsumption(t.Context(), agent.Slug(), agent.Spec().BillingCatalog, brief)
	assert.NoError(t, err, "a failure is injected once")
}

func TestFakeStudioAPIContext(t *testing.T) {
	t.Parallel()
	api := svtest.NewFakeStudioAPI(t, svtest.NewFakeStudio(t), svtest.WithAccountKey("acct-key"), svtest.WithWorkspaceID("ws-owner"))
	api.AddContext(
		svtest.ContextItem{Ref: "supervaize.context.workspace.billing", Title: "Billing", Tags: []string{"ops"},
			Excerpt: "Billing policy", Content: "Invoices are sent monthly."},
		svtest.ContextItem{Ref: "supervaize.context.mission.january-brief", Title: "January brief", Scope: contracts.ContextScopeMission,
			MissionID: "mis-3", Version: 3, Content: "Pricing: 10 € per brief. Details follow."},
	)
	acct := api.Client()
	assert.Equal(t, "ws-owner", acct.WorkspaceID())
	cc := acct.Context()
	ctx := t.Context()

	found, err := cc.Search(ctx, studio.SearchRequest{Query: "billing"})
	require.NoError(t, err)
	require.Len(t, found.Results, 1)
	r := found.Results[0]
	assert.Equal(t, "supervaize.context.workspace.billing", r.Ref)
	assert.Equal(t, "Billing policy", r.Excerpt)
	assert.Equal(t, contracts.ContextScopeWorkspace, r.Scope)
	assert.Equal(t, &studio.ContextCitation{Ref: r.Ref, Title: "Billing", SourceType: svtest.DefaultContextSourceType, Version: 1}, r.Citation)

	found, err = cc.Search(ctx, studio.SearchRequest{Query: "pricing"})
	require.NoError(t, err)
	assert.Empty(t, found.Results, "mission items need their mission")
	found, err = cc.Search(ctx, studio.SearchRequest{Query: "Pricing brief", MissionID: "mis-3", Scope: contracts.ContextScopeMission})
	require.NoError(t, err)
	require.Len(t, found.Results, 1)
	assert.Equal(t, "Pricing: 10 € per brief. Details follow.", found.Results[0].Excerpt)
	found, err = cc.Search(ctx, studio.SearchRequest{Query: "", Tags: []string{"ops"}, Limit: 1})
	require.NoError(t, err)
	assert.Len(t, found.Results, 1)

	doc, err := cc.Open(ctx, studio.OpenRequest{Ref: "supervaize.context.mission.january-brief", MissionID: "mis-3", MaxChars: 12, Query: "pricing"})
	require.NoError(t, err)
	assert.Equal(t, &studio.ContextDocument{Ref: "supervaize.context.mission.january-brief", Title: "January brief",
		Scope: contracts.ContextScopeMission, SourceType: "text", Version: 3, Tags: []string{}, Content: "Pricing: 10 ",
		Citations: []studio.ContextCitation{{Ref: "supervaize.context.mission.january-brief", Title: "January brief", SourceType: "text", Version: 3}},
	}, doc, "the content is cut to max_chars code points")
	_, err = cc.Open(ctx, studio.OpenRequest{Ref: "supervaize.context.mission.january-brief"})
	assert.ErrorContains(t, err, "HTTP 400")
	_, err = cc.Open(ctx, studio.OpenRequest{Ref: "supervaize.context.mission.january-brief", MissionID: "mis-4"})
	assert.ErrorContains(t, err, "HTTP 404")

	calls := api.ContextCalls()
	require.Len(t, calls, 7)
	assert.Equal(t, svtest.ContextCall{Seq: calls[0].Seq, Op: "search", Query: "billing", Limit: studio.DefaultContextSearchLimit}, calls[0])
	assert.Equal(t, svtest.ContextCall{Seq: calls[4].Seq, Op: "open", Ref: "supervaize.context.mission.january-brief",
		MaxChars: 12, MissionID: "mis-3", Query: "pricing"}, calls[4])
}

func TestFakeStudioAPIContextReplace(t *testing.T) {
	t.Parallel()
	api := svtest.NewFakeStudioAPI(t, svtest.NewFakeStudio(t))
	api.AddContext(svtest.ContextItem{Ref: "r", Content: "one"})
	api.AddContext(svtest.ContextItem{Ref: "r", Content: "two", Version: 2})
	doc, err := api.Client().Context().Open(t.Context(), studio.OpenRequest{Ref: "r"})
	require.NoError(t, err)
	assert.Equal(t, "two", doc.Content)
	assert.Equal(t, 2, doc.Version)
}

func TestFakeStudioAPISetupMistakes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		call func(t testing.TB, api *svtest.FakeStudioAPI)
		want string
	}{
		{"no ref", func(_ testing.TB, api *svtest.FakeStudioAPI) { api.AddContext(svtest.ContextItem{}) }, "no ref"},
		{"bad scope", func(_ testing.TB, api *svtest.FakeStudioAPI) {
			api.AddContext(svtest.ContextItem{Ref: "r", Scope: "team"})
		}, "unknown scope"},
		{"mission without id", func(_ testing.TB, api *svtest.FakeStudioAPI) {
			api.AddContext(svtest.ContextItem{Ref: "r", Scope: contracts.ContextScopeMission})
		}, "MissionID"},
		{"blank snapshot hash", func(_ testing.TB, api *svtest.FakeStudioAPI) { api.RuleSnapshot(" ") }, "hash"},
		{"bad status", func(_ testing.TB, api *svtest.FakeStudioAPI) { api.FailNext("/x", 302) }, "400–599"},
		{"blank key", func(t testing.TB, _ *svtest.FakeStudioAPI) {
			svtest.NewFakeStudioAPI(t, svtest.NewFakeStudio(t), svtest.WithAccountKey(""))
		}, "must not be blank"},
		{"nil studio", func(t testing.TB, _ *svtest.FakeStudioAPI) { svtest.NewFakeStudioAPI(t, nil) }, "nil FakeStudio"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := newRecordingTB(t)
			tt.call(rec, svtest.NewFakeStudioAPI(rec, svtest.NewFakeStudio(t)))
			msgs := rec.messages()
			require.Len(t, msgs, 1)
			assert.Contains(t, msgs[0], tt.want)
		})
	}
}

func TestConnect(t *testing.T) {
	t.Parallel()
	local := svtest.NewTestServer(t, []*supervaizer.Agent{newServedAgent(t, startIdempotent)})
	remote := svtest.Connect(t, local.URL()+"/", local.APIKey, local.Studio)
	assert.Nil(t, remote.Server)
	assert.Equal(t, local.URL(), remote.URL())

	req := remote.Request(echoAction, nil)
	assert.Equal(t, agentSlug, req.AgentSlug, "the primary agent, read from its card")
	res, err := remote.Invoke(t.Context(), req)
	require.NoError(t, err)
	assert.Equal(t, "echoed", res.Effects[0].Type)
	sres, err := remote.LoadSurface(t.Context(), remote.SurfaceRequest(surfaceID))
	require.NoError(t, err)
	assert.Equal(t, surfaceID, sres.Surface)
	_, err = remote.Invoke(t.Context(), remote.Request("job.nope", nil))
	assert.Equal(t, errcode.ActionNotRegistered, supervaizer.CodeOf(err))
	svtest.AssertConfirmIdempotent(t, remote, startRequest(remote, launchAction, "t-1"),
		svtest.RecommendedChecks(map[string]any{"topic_id": "t-2"}))

	bad := svtest.Connect(t, local.URL(), "wrong-key", local.Studio)
	_, err = bad.Invoke(t.Context(), req)
	var he *svtest.HTTPError
	require.ErrorAs(t, err, &he)
	assert.Equal(t, http.StatusUnauthorized, he.StatusCode)
}

func TestConnectAttached(t *testing.T) {
	t.Parallel()
	ts, _ := newAttached(t)
	remote := svtest.Connect(t, ts.URL(), ts.APIKey, ts.Studio)
	res, err := remote.Invoke(t.Context(), remote.Request(echoAction, nil))
	require.NoError(t, err)
	assert.Equal(t, contracts.StatusOK, res.Status)
}

func TestConnectRefusals(t *testing.T) {
	t.Parallel()
	notController := svtest.NewFakeStudioAPI(t, svtest.NewFakeStudio(t)) // any HTTP server without the card
	tests := []struct{ name, url, want string }{
		{"no card", notController.URL(), "HTTP 401"},
		{"unreachable", "http://127.0.0.1:1", "connect"},
		{"bad URL", "http://[::1", "svtest: Connect"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := newRecordingTB(t)
			assert.Nil(t, svtest.Connect(rec, tt.url, "k", svtest.NewFakeStudio(t)))
			msgs := rec.messages()
			require.Len(t, msgs, 1)
			assert.Contains(t, msgs[0], tt.want)
		})
	}
}

func TestAttachedConcurrentUse(t *testing.T) {
	t.Parallel()
	ts, agent := newAttached(t)
	acct := ts.Server.Studio()
	const n = 8
	errs := make(chan error, n)
	for i := range n {
		go func() {
			_, err := acct.ReportConsumption(context.Background(), agent.Slug(), agent.Spec().BillingCatalog, studio.Consumption{SKU: skuBrief, Quantity: 1,
				JobID: "job-1", OccurredAt: time.Now(), IdempotencyKey: fmt.Sprintf("k-%d", i%4)})
			if err == nil {
				_, err = ts.Invoke(context.Background(), ts.Request(echoAction, nil))
			}
			_ = ts.API.Requests()
			_ = ts.API.Events()
			errs <- err
		}()
	}
	for range n {
		require.NoError(t, <-errs)
	}
	recs := ts.API.WaitBilling(t, n)
	accepted := 0
	for _, r := range recs {
		if r.Status == studio.ReceiptAccepted {
			accepted++
		}
	}
	assert.Equal(t, 4, accepted, "one accepted receipt per idempotency key")
}

func TestNewAttachedTestServerFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		setup func(api *svtest.FakeStudioAPI)
		opts  []supervaizer.Option
		want  string
	}{
		{"invalid option", nil, []supervaizer.Option{supervaizer.WithMaxBodyBytes(0)}, "svtest: NewServer"},
		{"start fails", func(api *svtest.FakeStudioAPI) { api.ExpectControllerAPIKey("stored-elsewhere") }, nil, "svtest: Server.Start"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := newRecordingTB(t)
			api := svtest.NewFakeStudioAPI(t, svtest.NewFakeStudio(t))
			if tt.setup != nil {
				tt.setup(api)
			}
			assert.Nil(t, svtest.NewAttachedTestServerWithAPI(rec, api, []*supervaizer.Agent{newGovernedAgent(t)}, tt.opts...))
			msgs := rec.messages()
			require.NotEmpty(t, msgs)
			assert.Contains(t, msgs[0], tt.want)
			assert.NotContains(t, msgs[0], "stored-elsewhere")
		})
	}
}

func TestControllerKeyPEM(t *testing.T) {
	t.Parallel()
	block, _ := pem.Decode([]byte(svtest.ControllerKeyPEM(t)))
	require.NotNil(t, block)
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	require.NoError(t, err)
	assert.True(t, svtest.ControllerKey(t).Equal(k), "the same shared key")
	assert.Equal(t, studio.ControllerKeyBits, svtest.ControllerKey(t).N.BitLen())
}
