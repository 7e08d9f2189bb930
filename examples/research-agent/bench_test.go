package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/contracts"
)

// BenchmarkJobSync measures job.sync through the SDK's whole pipeline (API
// key, workspace token, typed request, handler, store read, result
// validation), in memory.
func BenchmarkJobSync(b *testing.B) {
	_, ts := newTestServer(b)
	start := ts.Request(actionStart, map[string]any{"topic_id": "t-1"})
	start.JobID = "job-1"
	res, err := ts.Invoke(b.Context(), start)
	require.NoError(b, err)
	require.Equal(b, contracts.StatusOK, res.Status)
	req := ts.Request(actionSync, nil)
	req.JobID = "job-1"
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
