package supervaizer_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	sv "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/a2a"
	"github.com/supervaize/supervaizer-go/store"
	svtest "github.com/supervaize/supervaizer-go/testing"
)

// scanCounter is a store that counts its scans.
type scanCounter struct {
	store.Store
	scans atomic.Int64
}

func (s *scanCounter) Scan(ctx context.Context, prefix string, fn func(string, []byte) error) error {
	s.scans.Add(1)
	return s.Store.Scan(ctx, prefix, fn)
}

// healthAgent answers job.start and job.sync with a job_state whose job has
// the status of the input.
func healthAgent(t *testing.T) *sv.Agent {
	t.Helper()
	a, err := sv.NewAgent(sv.AgentSpec{Name: "Health Agent", Version: "1.0.0", Registration: sv.RegistrationSpec{
		AgentSlug: "health-agent", DisplayName: "Health Agent", A2UICatalogVersion: "1.0.0",
		Actions: sv.Actions("job.start", "job.sync"),
	}})
	require.NoError(t, err)
	type in struct {
		Status string `json:"status"`
	}
	h := func(_ context.Context, req *sv.ActionRequest, in in) (*sv.ActionResult, error) {
		res := sv.OK()
		res.JobState = &sv.JobState{Job: sv.Job{ID: req.JobID, AgentSlug: req.AgentSlug, MissionID: req.MissionID,
			Status: in.Status, Source: sv.JobSource{Type: "fresh_start"}}}
		return res, nil
	}
	sv.HandleActionFor(a, "job.start", h)
	sv.HandleActionFor(a, "job.sync", h)
	return a
}

// health returns the statistics and status of the only agent of srv.
func health(t *testing.T, srv http.Handler) (stats map[string]any, status string) {
	t.Helper()
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/.well-known/health", nil))
	require.Equal(t, http.StatusOK, w.Code)
	var doc struct {
		Agents map[string]struct {
			Status     string         `json:"status"`
			Statistics map[string]any `json:"statistics"`
		} `json:"agents"`
	}
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &doc), w.Body.String())
	require.Len(t, doc.Agents, 1)
	for _, a := range doc.Agents {
		return a.Statistics, a.Status
	}
	return nil, ""
}

func figures(total, completed, failed, inProgress int, rate float64) map[string]any {
	return map[string]any{"total_jobs": float64(total), "completed_jobs": float64(completed), "failed_jobs": float64(failed),
		"in_progress_jobs": float64(inProgress), "success_rate": rate}
}

// TestHealthCountsJobs: GET /.well-known/health derives each agent's figures
// and status from the jobs the controller tracks (controller.md §2.2), kept
// as counters as the jobs change: the public route never scans the store per
// request. A controller restarted on the same store counts the jobs it
// tracked, once. Before, every figure was zero.
func TestHealthCountsJobs(t *testing.T) {
	t.Parallel()
	mem := store.NewMemory()
	t.Cleanup(func() { _ = mem.Close() })
	st := &scanCounter{Store: mem}
	ts := svtest.NewTestServer(t, []*sv.Agent{healthAgent(t)}, sv.WithStore(st))
	call := func(ts *svtest.TestServer, action, jobID, status string) {
		t.Helper()
		req := ts.Request(action, map[string]any{"status": status})
		req.JobID = jobID
		res, err := ts.Invoke(t.Context(), req)
		require.NoError(t, err)
		require.Equal(t, "ok", res.Status, "%+v", res.Errors)
	}

	stats, status := health(t, ts.Server)
	assert.Equal(t, figures(0, 0, 0, 0, 100), stats)
	assert.Equal(t, "available", status)

	call(ts, "job.start", "job-1", "running")
	stats, status = health(t, ts.Server)
	assert.Equal(t, figures(1, 0, 0, 1, 0), stats)
	assert.Equal(t, "busy", status)

	call(ts, "job.start", "job-2", "pending")
	call(ts, "job.sync", "job-1", "completed")
	call(ts, "job.sync", "job-1", "completed") // unchanged: counted once
	call(ts, "job.sync", "job-2", "failed")
	call(ts, "job.start", "job-3", "failed")
	stats, status = health(t, ts.Server)
	assert.Equal(t, figures(3, 1, 2, 0, a2a.SuccessRate(3, 1)), stats)
	assert.Equal(t, "degraded", status, "more than half failed")

	call(ts, "job.start", "job-4", "stopped") // canceled: in the total only
	stats, status = health(t, ts.Server)
	assert.Equal(t, figures(4, 1, 2, 0, 25), stats)
	assert.Equal(t, "available", status, "half failed, none in progress")

	for range 5 {
		health(t, ts.Server)
	}
	assert.Equal(t, int64(1), st.scans.Load(), "the tracked jobs are counted once, then kept as they change")

	// A controller restarted on the same store counts the jobs it tracked.
	again := svtest.NewTestServer(t, []*sv.Agent{healthAgent(t)}, sv.WithStore(st))
	stats, _ = health(t, again.Server)
	assert.Equal(t, figures(4, 1, 2, 0, 25), stats)
	call(again, "job.sync", "job-2", "completed")
	stats, _ = health(t, again.Server)
	assert.Equal(t, figures(4, 2, 1, 0, 50), stats)
	assert.Equal(t, int64(2), st.scans.Load(), "one count per controller")
}
