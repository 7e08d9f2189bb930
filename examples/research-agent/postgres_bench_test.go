package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/contracts"
	svtest "github.com/supervaize/supervaizer-go/testing"
)

// The PostgreSQL benchmarks run one instance of the agent in process on a
// new schema (they skip without SUPERVAIZER_TEST_DATABASE_URL), over HTTP,
// one call at a time: a profile of them shows where a call's time goes
// (go test -run '^$' -bench Postgres -cpuprofile cpu.out -blockprofile
// block.out; docs/performance.md, "State stores and several instances").
// Throughput under concurrency, with every store and several instances, is
// make loadcheck-backends's.

// BenchmarkPostgresJobStart measures job.start with a new job and
// idempotency key on every call: the idempotency record written then
// completed, the job record created, the effect event appended to the
// shared log.
func BenchmarkPostgresJobStart(b *testing.B) {
	h, post := benchPostgres(b)
	req := actionRequest(b, wsA, actionStart, map[string]any{"topic_id": "eu-battery-market"})
	token := h.studio.TokenForAction(req) // binds the workspace, the agent and the action only
	n := 0
	for b.Loop() {
		n++
		req.JobID = "bench-" + strconv.Itoa(n)
		req.IdempotencyKey = req.JobID
		post(req, token)
	}
}

// BenchmarkPostgresJobSync measures job.sync of one job: a read of the job
// record and the effect event appended to the shared log.
func BenchmarkPostgresJobSync(b *testing.B) {
	h, post := benchPostgres(b)
	start := actionRequest(b, wsA, actionStart, map[string]any{"topic_id": "eu-battery-market"})
	start.JobID, start.IdempotencyKey = "bench-sync", "bench-sync"
	post(start, h.studio.TokenForAction(start))
	req := jobRequest(b, wsA, actionSync, "bench-sync", nil)
	token := h.studio.TokenForAction(req)
	for b.Loop() {
		post(req, token)
	}
}

// BenchmarkBoltJobStart is BenchmarkPostgresJobStart on the agent's
// default store, bbolt: one connection, one call at a time, so every write
// is alone and commits at once (no batch delay; issue 40 item 6).
func BenchmarkBoltJobStart(b *testing.B) {
	studio := svtest.NewFakeStudio(b)
	h, post := benchAgent(b, studio, studioEnv(studio, b.TempDir()))
	req := actionRequest(b, wsA, actionStart, map[string]any{"topic_id": "eu-battery-market"})
	token := h.studio.TokenForAction(req)
	n := 0
	for b.Loop() {
		n++
		req.JobID = "bench-" + strconv.Itoa(n)
		req.IdempotencyKey = req.JobID
		post(req, token)
	}
}

// benchPostgres starts the agent on PostgreSQL and returns a function that
// sends one action call, which must succeed.
func benchPostgres(b *testing.B) (*harness, func(contracts.ActionRequest, string)) {
	studio := svtest.NewFakeStudio(b)
	return benchAgent(b, studio, pgEnv(b, studio))
}

// benchAgent starts the agent with env and returns a function that sends
// one action call, which must succeed.
func benchAgent(b *testing.B, studio *svtest.FakeStudio, env map[string]string) (*harness, func(contracts.ActionRequest, string)) {
	h := startHarness(b, studio, env)
	client := &http.Client{Transport: &http.Transport{Proxy: nil}}
	b.Cleanup(client.CloseIdleConnections)
	ok := []byte(`"result":{"status":"ok"`)
	b.ReportAllocs()
	return h, func(req contracts.ActionRequest, token string) {
		body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": supervaizer.MethodActionInvoke,
			"params": map[string]any{"action_request": req}})
		require.NoError(b, err)
		hr, err := http.NewRequest(http.MethodPost, h.srv.URL+"/a2a", bytes.NewReader(body))
		require.NoError(b, err)
		hr.Header.Set("Content-Type", "application/json")
		hr.Header.Set(supervaizer.HeaderAPIKey, testAPIKey)
		hr.Header.Set(supervaizer.HeaderWorkspaceAuthorization, "Bearer "+token)
		resp, err := client.Do(hr)
		require.NoError(b, err)
		raw, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(b, err)
		if resp.StatusCode != http.StatusOK || !bytes.Contains(raw, ok) {
			b.Fatalf("%s: HTTP %d: %s", req.Action, resp.StatusCode, raw)
		}
	}
}
