package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/errcode"
	"github.com/supervaize/supervaizer-go/internal/tools/ssetest"
	svtest "github.com/supervaize/supervaizer-go/testing"
)

// sseEvent is one event of GET /a2a/events.
type sseEvent struct {
	id, name string
	data     json.RawMessage
}

// subscribe opens the event stream and returns its events as they come.
func subscribe(t *testing.T, base string) <-chan sseEvent { return subscribeWith(t, base, nil) }

// subscribeWith opens the event stream with extra request headers.
func subscribeWith(t *testing.T, base string, header http.Header) <-chan sseEvent {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/a2a/events", nil)
	require.NoError(t, err)
	for k, vs := range header {
		req.Header[k] = vs
	}
	req.Header.Set(supervaizer.HeaderAPIKey, testAPIKey)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, resp.Header.Get("Content-Type"), "text/event-stream")
	events := make(chan sseEvent, 64)
	go func() {
		defer close(events)
		defer resp.Body.Close()
		scanEvents(resp.Body, func(ev sseEvent) bool {
			select {
			case events <- ev:
				return true
			case <-ctx.Done():
				return false
			}
		})
	}()
	return events
}

// scanEvents reads an event stream as an EventSource does and hands each
// named event to emit until the stream ends or emit returns false.
func scanEvents(body io.Reader, emit func(sseEvent) bool) {
	r := bufio.NewReader(body)
	for {
		ev, err := ssetest.Read(r)
		if err != nil {
			return
		}
		if ev.Name != "" && !emit(sseEvent{id: ev.ID, name: ev.Name, data: json.RawMessage(ev.Data)}) {
			return
		}
	}
}

// effectEvent is the data of a supervaizer.effect event.
type effectEvent struct {
	AgentSlug string             `json:"agent_slug"`
	Action    string             `json:"action"`
	RequestID string             `json:"request_id"`
	Effects   []contracts.Effect `json:"effects"`
}

// nextEffect returns the next supervaizer.effect event of the stream.
func nextEffect(t *testing.T, events <-chan sseEvent) effectEvent {
	t.Helper()
	timeout := time.After(5 * time.Second)
	for {
		select {
		case ev, ok := <-events:
			require.True(t, ok, "the event stream ended")
			if ev.name != supervaizer.EventEffect {
				continue
			}
			var e effectEvent
			require.NoError(t, contracts.Unmarshal(ev.data, &e))
			return e
		case <-timeout:
			require.FailNow(t, "no effect event within 5s")
		}
	}
}

func effectTypes(effects []contracts.Effect) []string {
	out := make([]string, len(effects))
	for i, e := range effects {
		out[i] = e.Type
	}
	return out
}

// TestEndToEnd drives a job the way Studio does, over HTTP, with real
// workspace tokens: job.start → awaiting review → submit → job.sync until the
// brief is sent, reading the effects from the event stream.
func TestEndToEnd(t *testing.T) {
	start := time.Now()
	h := newHarness(t)
	c := h.client
	events := subscribe(t, h.srv.URL)

	// A contact to send the brief to.
	add := actionRequest(t, wsA, "resource.contacts.create", map[string]any{"item": map[string]any{"name": "Ada Lovelace", "email": "Ada@Example.com"}})
	res := c.invoke(add)
	require.Equal(t, contracts.StatusOK, res.Status, "%+v", res.Errors)
	assert.Equal(t, "resource.created", nextEffect(t, events).Effects[0].Type)

	// The job.start form, loaded before the job exists.
	sreq := surfaceRequest(wsA, surfaceJobStart)
	sreq.DraftSessionID = "draft-1"
	_, form := c.load(sreq)
	assert.Equal(t, "Form", form["type"])
	assert.Equal(t, map[string]any{"action": actionPreview}, form["preview"])
	assert.Equal(t, map[string]any{"draft_session_id": "draft-1"}, form["state"])

	// job.start: one case in the setup lane with an awaiting review step.
	res = c.startJob(wsA, "job-1", "setup-1", "eu-battery-market")
	require.NotNil(t, res.JobState)
	assert.Equal(t, jobAwaiting, res.JobState.Job.Status)
	require.Len(t, res.JobState.Cases, 1)
	setup := res.JobState.Cases[0]
	assert.Equal(t, laneSetup, setup.Lane)
	require.Len(t, setup.Steps, 1)
	review := setup.Steps[0]
	assert.Equal(t, "awaiting", review.Status)
	require.NotNil(t, review.Awaiting)
	assert.Equal(t, surfaceStepAwaiting, review.Awaiting.Surface)
	assert.Equal(t, actionSubmit, review.Awaiting.Action)
	assert.Equal(t, "human_input", review.Awaiting.Reason)
	require.Len(t, review.Awaiting.Fields, 2)
	ev := nextEffect(t, events)
	assert.Equal(t, actionStart, ev.Action)
	assert.Equal(t, []string{"job.started", "case.created"}, effectTypes(ev.Effects))

	// The awaiting surface: the draft under review.
	sreq = surfaceRequest(wsA, surfaceStepAwaiting)
	sreq.JobID, sreq.CaseID, sreq.StepID = "job-1", setup.ID, review.ID
	_, doc := c.load(sreq)
	assert.Equal(t, "DocumentReview", doc["type"])
	content := doc["document"].(map[string]any)
	assert.Equal(t, "review_text", content["field"])
	assert.Contains(t, content["value"], "# Brief: eu-battery-market")

	// Submit the review: approved with an edit.
	edited := content["value"].(string) + "\nReviewed by the operator.\n"
	sub := jobRequest(t, wsA, actionSubmit, "job-1", map[string]any{"review_text": edited, "approve_review": true})
	sub.CaseID, sub.StepID, sub.IdempotencyKey = setup.ID, review.ID, "review-1"
	res = c.invoke(sub)
	require.Equal(t, contracts.StatusOK, res.Status, "%+v", res.Errors)
	assert.Equal(t, jobActive, res.JobState.Job.Status)
	ev = nextEffect(t, events)
	assert.Equal(t, actionSubmit, ev.Action)
	assert.Equal(t, []string{"step.awaiting.submitted", "case.created", "case.created"}, effectTypes(ev.Effects))

	// job.sync converges: the brief is sent in the background.
	res = c.waitStatus(wsA, "job-1", jobCompleted)
	again := c.invoke(jobRequest(t, wsA, actionSync, "job-1", nil))
	assert.Equal(t, res.JobState, again.JobState, "repeated job.sync calls give the same projection")
	assert.True(t, again.ReplaySafety.Convergent)
	require.Len(t, res.JobState.Cases, 3)
	assert.Equal(t, []string{laneSetup, laneWork, laneDeliverable},
		[]string{res.JobState.Cases[0].Lane, res.JobState.Cases[1].Lane, res.JobState.Cases[2].Lane})
	assert.Equal(t, "completed", res.JobState.Cases[1].Steps[0].Status)
	assert.Equal(t, artifactSynthesis, res.JobState.Cases[2].Steps[0].Outputs[0].Type)
	var m message
	found, err := get(t.Context(), h.app.store, outboxKey(mustScope(t, wsA.id), "job-1"), &m)
	require.NoError(t, err)
	require.True(t, found, "the brief is in the outbox")
	assert.Equal(t, []string{"ada@example.com"}, m.To)
	assert.Equal(t, edited, m.Body)

	// The retried submission (same idempotency key) returns the original result.
	raw1, rerr := c.invokeRaw(sub)
	require.Nil(t, rerr)
	var replay contracts.ActionResult
	require.NoError(t, contracts.Unmarshal(raw1, &replay))
	assert.Equal(t, jobActive, replay.JobState.Job.Status, "the stored result of the first submission")

	// job.stop on a finished job changes nothing.
	res = c.invoke(jobRequest(t, wsA, actionStop, "job-1", nil))
	assert.Equal(t, contracts.StatusOK, res.Status)
	assert.Equal(t, jobCompleted, res.JobState.Job.Status)
	assert.Empty(t, res.Effects)
	t.Logf("end-to-end flow: %s", time.Since(start).Round(time.Millisecond))
}

// mustScope is the partition of an unbound workspace.
func mustScope(t *testing.T, workspaceID string) string {
	t.Helper()
	s, ok := workspaceScope(&contracts.VerifiedWorkspaceContext{WorkspaceID: workspaceID})
	require.True(t, ok)
	return s
}

// TestEndToEndStartIsIdempotent retries job.start over HTTP: the same key and
// input return the original result byte for byte, another input is a
// conflict, and the job is created once.
func TestEndToEndStartIsIdempotent(t *testing.T) {
	h := newHarness(t)
	c := h.client
	req := actionRequest(t, wsA, actionStart, map[string]any{"topic_id": "eu-battery-market"})
	req.JobID, req.IdempotencyKey = "job-7", "setup-7"
	first, rerr := c.invokeRaw(req)
	require.Nil(t, rerr)
	req.RequestID = "req-retry" // a retry is a new request with the same key and identities
	second, rerr := c.invokeRaw(req)
	require.Nil(t, rerr)
	assert.JSONEq(t, string(first), string(second))

	req.Input = json.RawMessage(`{"topic_id": "something-else"}`)
	res := c.invoke(req)
	assert.Equal(t, contracts.StatusError, res.Status)
	require.NotEmpty(t, res.Errors)
	assert.Equal(t, contracts.ErrorIdempotencyConflict, res.Errors[0].Code)

	// The conformance helper of the protocol, on the same agent, handlers and
	// store, through the SDK's test server.
	ts := svtest.NewTestServerWithStudio(t, h.studio, []*supervaizer.Agent{h.app.agent}, supervaizer.WithStore(h.app.store))
	conf := ts.Request(actionStart, map[string]any{"topic_id": "t-1"})
	conf.IdempotencyKey, conf.JobID = "setup-conformance", "job-conformance"
	svtest.AssertConfirmIdempotent(t, ts, conf, svtest.RecommendedChecks(map[string]any{"topic_id": "t-2"}))
}

// TestEndToEndWorkspaceIsolation checks that resources, jobs and the dataset
// are partitioned by the verified workspace: by agent_workspace_ref when
// Studio bound the workspace to an agent-side record, else by workspace id,
// never by a slug or id the request body claims.
func TestEndToEndWorkspaceIsolation(t *testing.T) { testWorkspaceIsolation(t, newHarness(t)) }

// createContact creates a contact of ws and returns the result.
func (c *client) createContact(ws workspace, name, email string) *contracts.ActionResult {
	c.t.Helper()
	return c.invoke(actionRequest(c.t, ws, "resource.contacts.create", map[string]any{"item": map[string]any{"name": name, "email": email}}))
}

// contactEmails lists the e-mail addresses of ws's contacts.
func (c *client) contactEmails(ws workspace) []string {
	c.t.Helper()
	res := c.invoke(actionRequest(c.t, ws, "resource.contacts.list", nil))
	require.Equal(c.t, contracts.StatusOK, res.Status, "%+v", res.Errors)
	var emails []string
	for _, it := range res.Effects[0].Items {
		emails = append(emails, it["email"].(string))
	}
	return emails
}

// testWorkspaceIsolation is TestEndToEndWorkspaceIsolation on the agent h,
// whatever its store.
func testWorkspaceIsolation(t *testing.T, h *harness) {
	c := h.client
	create := func(ws workspace, name, email string) {
		t.Helper()
		res := c.createContact(ws, name, email)
		require.Equal(t, contracts.StatusOK, res.Status, "%+v", res.Errors)
	}
	list := c.contactEmails
	create(wsA, "Ada", "ada@example.com")
	create(wsB, "Bob", "bob@example.com")
	assert.Equal(t, []string{"ada@example.com"}, list(wsA))
	assert.Equal(t, []string{"bob@example.com"}, list(wsB))

	// The same e-mail address may exist once per workspace.
	create(wsB, "Ada", "ada@example.com")
	dup := c.invoke(actionRequest(t, wsB, "resource.contacts.create", map[string]any{"item": map[string]any{"name": "Ada", "email": "ADA@example.com"}}))
	assert.Equal(t, contracts.StatusError, dup.Status)
	assert.Equal(t, codeDuplicateEmail, dup.Errors[0].Code)

	// A job of workspace A does not exist for workspace B.
	c.startJob(wsA, "job-a", "", "topic-a")
	res := c.invoke(jobRequest(t, wsB, actionSync, "job-a", nil))
	assert.Equal(t, contracts.StatusError, res.Status)
	assert.Equal(t, codeJobNotFound, res.Errors[0].Code)

	// A token for workspace B cannot read workspace A by naming it in the body.
	forged := actionRequest(t, wsA, "resource.contacts.list", nil)
	claims := h.studio.ActionClaims(forged)
	claims.WorkspaceID, claims.WorkspaceSlug = wsB.id, wsB.slug
	_, rerr := c.call(supervaizer.MethodActionInvoke, map[string]any{"action_request": forged}, h.studio.Mint(claims))
	require.NotNil(t, rerr)
	assert.Equal(t, errcode.Unauthorized, rerr.Code)

	// Bound workspaces share the agent-side record they are bound to.
	wsC, wsD := workspace{"ws-c", "c"}, workspace{"ws-d", "d"}
	h.studio.BindWorkspace(agentSlug, wsC.id, "acme-prod")
	h.studio.BindWorkspace(agentSlug, wsD.id, "acme-prod")
	create(wsC, "Cy", "cy@example.com")
	assert.Equal(t, []string{"cy@example.com"}, list(wsD))
	assert.Empty(t, list(workspace{"acme-prod", "acme-prod"}), "a workspace id equal to a ref is another partition")

	// The dataset counts the jobs of the caller's workspace only.
	q := actionRequest(t, wsB, "dataset.progress_metrics.query", nil)
	res = c.invoke(q)
	require.Equal(t, contracts.StatusOK, res.Status, "%+v", res.Errors)
	for _, row := range res.Effects[0].Rows {
		assert.EqualValues(t, 0, row["value"], "workspace B has no job: %v", row)
	}
	res = c.invoke(actionRequest(t, wsA, "dataset.progress_metrics.query", nil))
	assert.Contains(t, res.Effects[0].Rows, map[string]any{"stage": jobAwaiting, "label": stateLabel(jobAwaiting), "value": float64(1)})
}
