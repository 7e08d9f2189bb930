package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	supervaizer "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/contracts"
	svtest "github.com/supervaize/supervaizer-go/testing"
)

// startedJobSync starts job-1 on a new test server and returns the server
// and the job.sync request of that job.
func startedJobSync(b *testing.B) (*svtest.TestServer, contracts.ActionRequest) {
	b.Helper()
	_, ts := newTestServer(b)
	start := ts.Request(actionStart, map[string]any{"topic_id": "t-1"})
	start.JobID = "job-1"
	res, err := ts.Invoke(b.Context(), start)
	require.NoError(b, err)
	require.Equal(b, contracts.StatusOK, res.Status)
	req := ts.Request(actionSync, nil)
	req.JobID = "job-1"
	return ts, req
}

// BenchmarkJobSync measures job.sync through the SDK's whole pipeline (API
// key, workspace token, typed request, handler, store read, result
// validation), in memory.
func BenchmarkJobSync(b *testing.B) {
	ts, req := startedJobSync(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ts.Invoke(b.Context(), req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkJobState measures the job_state projection of a delivered job.
func BenchmarkJobState(b *testing.B) {
	rec := &jobRecord{ID: "job-1", MissionID: "m", TopicID: "t", Depth: depthDeep, Status: jobCompleted, Reviews: 1, Approved: true,
		Draft: mustDraft(b, "t", "", depthDeep), Delivery: &delivery{Receipt: "r", Recipients: 3}}
	b.ReportAllocs()
	for b.Loop() {
		_ = rec.state()
	}
}

// BenchmarkServeJobSync measures job.sync as the server sees it under the
// load check (make loadcheck): the request bytes already read, one workspace
// token reused (a verifier cache hit), the answer written to a recorder; no
// client-side encoding or decoding is counted.
func BenchmarkServeJobSync(b *testing.B) {
	ts, req := startedJobSync(b)
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": supervaizer.MethodActionInvoke,
		"params": map[string]any{"action_request": req}})
	require.NoError(b, err)
	token := ts.Studio.TokenForAction(req)
	serve := func() *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/a2a", bytes.NewReader(body))
		r.RemoteAddr = "127.0.0.1:1"
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set(supervaizer.HeaderAPIKey, ts.APIKey)
		r.Header.Set(supervaizer.HeaderWorkspaceAuthorization, "Bearer "+token)
		w := httptest.NewRecorder()
		ts.Server.ServeHTTP(w, r)
		return w
	}
	w := serve()
	require.Equal(b, http.StatusOK, w.Code)
	require.Contains(b, w.Body.String(), `"job_state"`)
	b.ReportAllocs()
	for b.Loop() {
		if w := serve(); w.Code != http.StatusOK {
			b.Fatalf("HTTP %d: %s", w.Code, w.Body)
		}
	}
}
