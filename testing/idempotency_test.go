package testing_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	supervaizer "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/contracts"
	svtest "github.com/supervaize/supervaizer-go/testing"
)

func TestAssertConfirmIdempotent(t *testing.T) {
	t.Parallel()
	changed := map[string]any{"topic_id": "other-topic"}
	tests := []struct {
		name      string
		behaviour startBehaviour
		edit      func(req *contracts.ActionRequest)
		opts      []svtest.IdempotencyOption
		wantRules []string // the rules reported, in order; none means it passes
		wantShown []string // fragments every message must contain
	}{
		{name: "idempotent", behaviour: startIdempotent},
		{name: "idempotent, recommended checks", behaviour: startIdempotent, opts: []svtest.IdempotencyOption{svtest.RecommendedChecks(changed)}},
		{name: "idempotent, raw changed input", behaviour: startIdempotent,
			opts: []svtest.IdempotencyOption{svtest.ExpectConflict(json.RawMessage(`{"topic_id":"x"}`))}},
		{name: "new job on every call", behaviour: startFresh,
			wantRules: []string{`"results equal"`, `"no new effect"`, `"replay answers the recorded bytes"`},
			wantShown: []string{"result 1: {", `"job_id":"job-1"`}},
		{name: "retry appends an effect", behaviour: startAppend,
			wantRules: []string{`"results equal"`, `"no new effect"`, `"replay answers the recorded bytes"`},
			wantShown: []string{"result 1: {"}},
		{name: "retry drops an effect", behaviour: startFewer,
			wantRules: []string{`"results equal"`, `"replay answers the recorded bytes"`},
			wantShown: []string{"result 1: {", "job.noted"}},
		{name: "loose handler passes the required rules", behaviour: startLoose},
		{name: "not strictly idempotent", behaviour: startLoose,
			opts:      []svtest.IdempotencyOption{svtest.RequireStrictlyIdempotent()},
			wantRules: []string{`"strictly idempotent response"`},
			wantShown: []string{"strictly_idempotent_response false", "result 1: {"}},
		{name: "business failure is not strictly ok", behaviour: startRefuse,
			opts:      []svtest.IdempotencyOption{svtest.RequireStrictlyIdempotent()},
			wantRules: []string{`"strictly idempotent response"`},
			wantShown: []string{`result 1 has status "error", want "ok"`}},
		{name: "business failure passes the required rules", behaviour: startRefuse},
		{name: "conflict not detected", behaviour: startLoose,
			opts:      []svtest.IdempotencyOption{svtest.ExpectConflict(changed)},
			wantRules: []string{`"idempotency conflict"`},
			wantShown: []string{"result 4: {", `"status":"ok"`, "idempotency_conflict"}},
		{name: "conflict as a JSON-RPC error", behaviour: startConflictAsRPC,
			opts:      []svtest.IdempotencyOption{svtest.ExpectConflict(changed)},
			wantRules: []string{`"idempotency conflict"`},
			wantShown: []string{"got a JSON-RPC error"}},
		{name: "changed input equal to the input", behaviour: startIdempotent,
			opts:      []svtest.IdempotencyOption{svtest.ExpectConflict(map[string]any{"topic_id": "t-1"})},
			wantRules: []string{`"idempotency conflict"`},
			wantShown: []string{"JSON-equal to the request's input"}},
		{name: "changed input not JSON", behaviour: startIdempotent,
			opts:      []svtest.IdempotencyOption{svtest.ExpectConflict(json.RawMessage(`{`))},
			wantRules: []string{`"idempotency conflict"`},
			wantShown: []string{"cannot be encoded"}},
		{name: "no idempotency key", behaviour: startIdempotent,
			edit:      func(req *contracts.ActionRequest) { req.IdempotencyKey = "" },
			opts:      []svtest.IdempotencyOption{svtest.RequireIdempotencyKey()},
			wantRules: []string{`"idempotency_key present"`}},
		{name: "no idempotency key, not required", behaviour: startIdempotent,
			edit: func(req *contracts.ActionRequest) { req.IdempotencyKey = "" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ts := svtest.NewTestServer(t, []*supervaizer.Agent{newServedAgent(t, tt.behaviour)})
			req := startRequest(ts, launchAction, "t-1")
			if tt.edit != nil {
				tt.edit(&req)
			}
			rec := newRecordingTB(t)
			ok := svtest.AssertConfirmIdempotent(rec, ts, req, tt.opts...)
			msgs := rec.messages()
			assert.Equal(t, len(tt.wantRules) == 0, ok, "messages: %v", msgs)
			assert.Equal(t, len(tt.wantRules) > 0, rec.Failed())
			require.Len(t, msgs, len(tt.wantRules), "messages: %v", msgs)
			for i, rule := range tt.wantRules {
				assert.Contains(t, msgs[i], "rule "+rule)
				assert.True(t, strings.HasPrefix(msgs[i], "svtest.AssertConfirmIdempotent: "), msgs[i])
				for _, frag := range tt.wantShown {
					assert.Contains(t, msgs[i], frag)
				}
			}
		})
	}
}

func TestAssertConfirmIdempotentCallFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		edit func(req *contracts.ActionRequest)
		want []string
	}{
		{"handler fails", func(req *contracts.ActionRequest) { req.Action, req.Surface = boomAction, boomAction },
			[]string{`call 1 of action "boom" failed`, "Action handler failed", `"agent_slug":"research-agent"`}},
		{"invalid input", func(req *contracts.ActionRequest) { req.Input = json.RawMessage(`{}`) },
			[]string{"call 1", "Invalid Supervaizer v2 action request"}},
		{"refused token", func(req *contracts.ActionRequest) { req.AgentSlug = "unknown-agent" },
			[]string{"call 1", "workspace_authorization_unknown_agent"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ts := svtest.NewTestServer(t, []*supervaizer.Agent{newServedAgent(t, startIdempotent)})
			req := startRequest(ts, launchAction, "t-1")
			tt.edit(&req)
			rec := newRecordingTB(t)
			assert.False(t, svtest.AssertConfirmIdempotent(rec, ts, req, svtest.RecommendedChecks(map[string]any{"topic_id": "x"})))
			msgs := rec.messages()
			require.Len(t, msgs, 1, "the helper stops after a failed call: %v", msgs)
			for _, frag := range tt.want {
				assert.Contains(t, msgs[0], frag)
			}
		})
	}
}

func TestAssertConfirmIdempotentSecondCallFails(t *testing.T) {
	t.Parallel()
	a := newAgent(t, agentName)
	calls := 0
	a.HandleAction(launchAction, func(_ context.Context, req *supervaizer.ActionRequest) (*supervaizer.ActionResult, error) {
		calls++
		if calls > 1 {
			return &supervaizer.ActionResult{}, nil // breaks the result contract
		}
		return supervaizer.OK(), nil
	})
	ts := svtest.NewTestServer(t, []*supervaizer.Agent{a})
	rec := newRecordingTB(t)
	assert.False(t, svtest.AssertConfirmIdempotent(rec, ts, startRequest(ts, launchAction, "t-1")))
	msgs := rec.messages()
	require.Len(t, msgs, 1)
	assert.Contains(t, msgs[0], "call 2 (on a twin server with an empty store: the handler runs again)")
	assert.Contains(t, msgs[0], `result 1: {"status":"ok","effects":[]}`)
}

// TestAssertConfirmIdempotentPasses runs the helper on the real test.
func TestAssertConfirmIdempotentPasses(t *testing.T) {
	t.Parallel()
	ts := svtest.NewTestServer(t, []*supervaizer.Agent{newServedAgent(t, startIdempotent)})
	assert.True(t, svtest.AssertConfirmIdempotent(t, ts, startRequest(ts, launchAction, "t-1"),
		svtest.RecommendedChecks(map[string]any{"topic_id": "t-2"})))
}

// TestAssertConfirmIdempotentReachesTheHandler is spec item 76: the SDK's
// idempotency layer covers job.start, so a pipeline retry alone never reaches
// the handler again; the helper's call on a twin server with an empty store
// does. A job.start that creates a new job id and counts a record on every
// call fails, naming the rules, and the probe sees the record created by the
// handler run again; the retry through the pipeline still answers the
// recorded bytes. The test server keeps serving the agent afterwards.
func TestAssertConfirmIdempotentReachesTheHandler(t *testing.T) {
	t.Parallel()
	a := newAgent(t, agentName)
	var created atomic.Int64
	jobs := 0
	supervaizer.HandleActionFor(a, contracts.DefaultStartAction, func(_ context.Context, req *supervaizer.ActionRequest, in startInput) (*supervaizer.ActionResult, error) {
		created.Add(1)
		jobs++ // the handler runs on one goroutine at a time here
		return supervaizer.OK(supervaizer.JobStarted(fmt.Sprintf("job-%d", jobs), map[string]any{"topic_id": in.TopicID})), nil
	})
	ts := svtest.NewTestServer(t, []*supervaizer.Agent{a})
	rec := newRecordingTB(t)
	req := startRequest(ts, contracts.DefaultStartAction, "t-1")
	ok := svtest.AssertConfirmIdempotent(rec, ts, req,
		svtest.RecommendedChecks(map[string]any{"topic_id": "t-2"}), svtest.WithEffectProbe(created.Load))
	assert.False(t, ok)
	assert.True(t, rec.Failed())
	msgs := rec.messages()
	require.Len(t, msgs, 3, "messages: %v", msgs)
	assert.Contains(t, msgs[0], `rule "results equal"`)
	assert.Contains(t, msgs[0], `"job_id":"job-1"`)
	assert.Contains(t, msgs[0], `"job_id":"job-2"`)
	assert.Contains(t, msgs[0], "twin server with an empty store")
	assert.Contains(t, msgs[1], `rule "no new effect"`)
	assert.Contains(t, msgs[2], `rule "the retry creates nothing" (effect probe)`)
	assert.Contains(t, msgs[2], "from 1 (after call 1) to 2", "the handler ran twice, the pipeline retry answered from the record")
	assert.Equal(t, int64(2), created.Load(), "calls 1 and 2 ran the handler; 3 and the conflict call were answered by the layer")

	// The test server still serves the agent, from its own record.
	res, err := ts.Invoke(t.Context(), req)
	require.NoError(t, err)
	assert.Equal(t, "job-1", res.Effects[0].JobID)
	assert.Equal(t, int64(2), created.Load())
}

// TestAssertConfirmIdempotentConnect: a connected controller has no twin (its
// handler runs in another process); call 2 goes through the pipeline and the
// helper says so in the log.
func TestAssertConfirmIdempotentConnect(t *testing.T) {
	t.Parallel()
	local := svtest.NewTestServer(t, []*supervaizer.Agent{newServedAgent(t, startFresh)})
	remote := svtest.Connect(t, local.URL(), local.APIKey, local.Studio)
	rec := newRecordingTB(t)
	assert.True(t, svtest.AssertConfirmIdempotent(rec, remote, startRequest(remote, contracts.DefaultStartAction, "t-1")))
	logs := rec.logs()
	require.Len(t, logs, 1)
	assert.Contains(t, logs[0], "(Connect)")
	assert.Contains(t, logs[0], "call 2 goes through its pipeline")
}
