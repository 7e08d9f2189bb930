package main

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/a2atask"
	svtest "github.com/supervaize/supervaizer-go/testing"
)

// sourcesInput is the input the research agent delegates.
type sourcesInput struct {
	TopicID string `json:"topic_id" sv:"nonblank"`
}

// topicRemoteFails makes the remote fail internally, an outcome the client
// cannot tell from one applied.
const topicRemoteFails = "remote-fails"

// remoteAgent is a second agent on loopback, in local mode, whose job.start
// gathers sources: it counts the jobs it was asked to start, by job id.
type remoteAgent struct {
	url string
	mu  sync.Mutex
	ran map[string]int // job id → handler runs
}

func startRemoteAgent(t *testing.T) *remoteAgent {
	t.Helper()
	r := &remoteAgent{ran: map[string]int{}}
	var handler http.Handler
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) { handler.ServeHTTP(w, req) }))
	t.Cleanup(ts.Close)
	r.url = ts.URL
	srv, err := supervaizer.New(supervaizer.AgentSpec{Name: "Source Finder", Version: "1.0.0"},
		supervaizer.WithLocalMode(true), supervaizer.WithPublicURL(ts.URL))
	require.NoError(t, err)
	supervaizer.HandleActionFor(srv, "job.start", func(_ context.Context, req *supervaizer.ActionRequest, in sourcesInput) (*supervaizer.ActionResult, error) {
		r.mu.Lock()
		r.ran[req.JobID]++
		r.mu.Unlock()
		if in.TopicID == topicRemoteFails {
			return nil, errors.New("the remote fails after applying") // -32603: an ambiguous outcome
		}
		res := supervaizer.OK(supervaizer.JobStarted(req.JobID, map[string]any{"topic_id": in.TopicID}))
		res.JobState = &supervaizer.JobState{Job: supervaizer.Job{ID: req.JobID, AgentSlug: "source-finder", MissionID: req.MissionID, Status: "completed",
			Source: supervaizer.JobSource{Type: "fresh_start"}}}
		return res, nil
	})
	handler = srv
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	return r
}

func (r *remoteAgent) runs() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]int, len(r.ran))
	for k, v := range r.ran {
		out[k] = v
	}
	return out
}

// TestDelegatedSources: with RESEARCH_AGENT_DELEGATE_URL set, each job hands
// its gathering of sources to the remote agent through package a2a/client:
// exactly one remote task per job, even when job.start runs again for the
// same job, and the job records the remote's answer.
func TestDelegatedSources(t *testing.T) {
	remote := startRemoteAgent(t)
	studio := svtest.NewFakeStudio(t)
	env := studioEnv(studio, t.TempDir())
	env[envDelegateURL] = remote.url
	env[envDelegateAPIKey] = supervaizer.LocalModeAPIKey
	env[envDelegateLoopback] = "true"
	h := startHarness(t, studio, env)

	scope := mustScope(t, wsA.id)
	jobs := []string{"job-delegated-1", "job-delegated-2"}
	for _, id := range jobs {
		h.client.startJob(wsA, id, "key-"+id, "ev-batteries")
		h.client.startJob(wsA, id, "key-"+id, "ev-batteries")       // a retry: replayed by the SDK
		h.client.startJob(wsA, id, "other-key-"+id, "ev-batteries") // the step runs again: reads back, sends nothing
	}

	want := map[string]int{}
	for _, id := range jobs {
		want[delegationID(scope, id)] = 1
	}
	assert.Equal(t, want, remote.runs(), "one remote task per job")

	for _, id := range jobs {
		rec, err := h.app.jobs.get(context.Background(), scope, id)
		require.NoError(t, err)
		require.NotNil(t, rec.Delegation, "job %s records its delegation", id)
		d := rec.Delegation
		assert.Equal(t, delegationID(rec.Scope, id), d.TaskID)
		assert.Equal(t, d.TaskID, d.RequestID)
		assert.Equal(t, string(a2atask.StateCompleted), d.State)
		assert.Empty(t, d.Error)
		require.Len(t, d.Artifacts, 1)
		assert.Equal(t, "job_state", d.Artifacts[0].Name)
	}

	// An ambiguous outcome (-32603) is recorded as unknown and never resent:
	// not by the step, not by job.start run again for the same job.
	const failed = "job-delegated-ambiguous"
	h.client.startJob(wsA, failed, "key-"+failed, topicRemoteFails)
	h.client.startJob(wsA, failed, "other-key-"+failed, topicRemoteFails)
	want[delegationID(scope, failed)] = 1
	assert.Equal(t, want, remote.runs(), "an ambiguous send is not resent")
	rec, err := h.app.jobs.get(context.Background(), scope, failed)
	require.NoError(t, err)
	require.NotNil(t, rec.Delegation)
	assert.Equal(t, delegationUnknown, rec.Delegation.State)
	assert.Contains(t, rec.Delegation.Error, "unknown")
	assert.NotContains(t, rec.Delegation.Error, "fails after applying", "the remote's text is never recorded")
}
