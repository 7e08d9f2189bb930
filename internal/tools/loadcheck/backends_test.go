package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/contracts"
)

func TestStartBodiesHaveANewJobAndKeyEach(t *testing.T) {
	req := researchRequest("job.start", "{ID}", "{ID}")
	req.Input = json.RawMessage(`{"topic_id":"t"}`)
	next, err := newStartBodies(req)
	require.NoError(t, err)
	seen := map[string]bool{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 50 {
				b := next()
				var body struct {
					Params struct {
						Req contracts.ActionRequest `json:"action_request"`
					} `json:"params"`
				}
				if !assert.NoError(t, contracts.Unmarshal(b, &body)) {
					return
				}
				r := body.Params.Req
				assert.Equal(t, r.JobID, r.IdempotencyKey)
				assert.True(t, strings.HasPrefix(r.JobID, backendsPrefix), r.JobID)
				assert.Equal(t, "job.start", r.Action)
				mu.Lock()
				assert.False(t, seen[r.JobID], "job %s twice", r.JobID)
				seen[r.JobID] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	assert.Len(t, seen, 200)

	_, err = newStartBodies(researchRequest("job.start", "job-1", "{ID}"))
	assert.Error(t, err, "one placeholder only")
}

func TestWithPoolSettings(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{"postgres://u@h:5432/db", "postgres://u@h:5432/db?application_name=lc-1&pool_max_conns=8", ""},
		{"postgres://u@h/db?sslmode=disable&options=-c%20synchronous_commit%3Doff",
			"postgres://u@h/db?sslmode=disable&options=-c%20synchronous_commit%3Doff&application_name=lc-1&pool_max_conns=8", ""},
		{"postgresql://h/db?pool_max_conns=32", "postgresql://h/db?pool_max_conns=32&application_name=lc-1", ""},
		{"mysql://h/db", "", "postgres://"},
		{"host=h dbname=db", "", "postgres://"},
	} {
		got, err := withPoolSettings(tc.in, "lc-1")
		if tc.err != "" {
			require.Error(t, err, tc.in)
			assert.Contains(t, err.Error(), tc.err)
			continue
		}
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, got)
	}
}

// TestRunBackendsPrintsTheRows runs the backends mode briefly: the memory
// and bbolt rows, and the PostgreSQL ones when SUPERVAIZER_TEST_DATABASE_URL
// is set (else its subtest is listed as not run).
func TestRunBackendsPrintsTheRows(t *testing.T) {
	dbURL := os.Getenv("SUPERVAIZER_TEST_DATABASE_URL")
	var out bytes.Buffer
	cfg := config{concurrency: 2, duration: 150 * time.Millisecond, rounds: 2, warmup: 10 * time.Millisecond}
	failed, err := runBackends(context.Background(), cfg, dbURL, &out)
	require.NoError(t, err)
	require.False(t, failed, out.String())
	_, line, ok := strings.Cut(out.String(), "loadcheck-backends-json: ")
	require.True(t, ok, out.String())
	var rows []backendSummary
	require.NoError(t, json.Unmarshal([]byte(line), &rows))
	byName := map[string]backendSummary{}
	var got []string
	for _, r := range rows {
		name := r.Call + " " + r.Store + " x" + strconv.Itoa(r.Instances)
		got = append(got, name)
		byName[name] = r
		assert.Equal(t, 2, r.Rounds, name)
		require.NotNil(t, r.Rate, name)
		assert.Positive(t, r.Rate.Median, name)
		require.NotNil(t, r.AgentCPU, name)
		assert.Equal(t, r.Store == "postgres", r.DBCPU != nil, "%s: the PostgreSQL processes' CPU", name)
	}
	for _, want := range []string{"job.start memory x1", "job.start bbolt x1", "job.sync memory x1", "job.sync bbolt x1"} {
		assert.Contains(t, got, want)
	}
	for name, r := range byName {
		if r.Store == "memory" {
			assert.Nil(t, r.RateToMemory, name)
		} else {
			assert.NotNil(t, r.RateToMemory, "%s: its rate against the memory row", name)
		}
	}
	assert.Contains(t, out.String(), "issue 40's -backends lines read against the memory store's row")
	assert.Contains(t, out.String(), "  job.start bbolt x1 req/s: ")
	assert.Contains(t, out.String(), "(issue: ≥ 3,000 req/s of 9,505, ≥ 0.32 ×)")
	t.Run("postgres", func(t *testing.T) {
		if dbURL == "" {
			assert.Contains(t, out.String(), "the PostgreSQL rows did not run")
			t.Skip("SUPERVAIZER_TEST_DATABASE_URL is not set: the PostgreSQL rows did not run (.ci/run sets it, and fails when the server cannot be reached)")
		}
		assert.Equal(t, []string{"job.start memory x1", "job.start bbolt x1", "job.start postgres x1", "job.start postgres x3",
			"job.sync memory x1", "job.sync bbolt x1", "job.sync postgres x1", "job.sync postgres x3"}, got)
		// The CPU time of processes is counted in 10 ms ticks: in rounds this
		// short it may read 0; that it is measured at all is what counts.
		for _, name := range []string{"job.start postgres x1", "job.start postgres x3", "job.sync postgres x1", "job.sync postgres x3"} {
			assert.NotNil(t, byName[name].DBCPU, name)
		}
		for _, line := range []string{"  job.start postgres x1 req/s: ", "  job.sync postgres x1 req/s: ", "  job.sync postgres x1 agent CPU: "} {
			assert.Contains(t, out.String(), line)
		}
	})
}

// TestRunBackendsWritesProfiles: with -profile, each measured round writes
// the CPU profile of its setup's first agent, and the report names them.
// The memory and bbolt rows only: the PostgreSQL ones profile alike.
func TestRunBackendsWritesProfiles(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	cfg := config{concurrency: 2, duration: time.Second, rounds: 1, warmup: 10 * time.Millisecond, profileDir: dir}
	failed, err := runBackends(context.Background(), cfg, "", &out)
	require.NoError(t, err)
	require.False(t, failed, out.String())
	for _, name := range []string{"job.start-memory-x1", "job.start-bbolt-x1", "job.sync-memory-x1", "job.sync-bbolt-x1"} {
		b, err := os.ReadFile(filepath.Join(dir, name+"-agent-round1.pb.gz"))
		require.NoError(t, err, name)
		require.Greater(t, len(b), 2, name)
		assert.Equal(t, []byte{0x1f, 0x8b}, b[:2], "%s: a gzip-compressed profile", name)
	}
	assert.Contains(t, out.String(), "profiles: 4 CPU profiles (each setup's first instance, per call and measured round) in "+dir)
	_, line, ok := strings.Cut(out.String(), "loadcheck-backends-json: ")
	require.True(t, ok, "the JSON line stays last")
	assert.NotContains(t, line, "profiles:")
}

// TestSummarizeBackendAgainstMemory: a row's figures against the memory
// store's are taken round by round, so that a round in which the machine
// slowed both compares like with like; the memory row has none.
func TestSummarizeBackendAgainstMemory(t *testing.T) {
	round := func(requests int, cpuMicros int64) backendResult {
		return backendResult{result: result{requests: requests, elapsed: time.Second,
			cpu: time.Duration(cpuMicros*int64(requests)) * time.Microsecond, cpuKnown: true}}
	}
	memory := []backendResult{round(1000, 50), round(500, 100), round(1000, 50)}
	pg := []backendResult{round(250, 125), round(200, 200), round(300, 150)}
	row := summarizeBackend("job.sync", &backendSetup{name: "postgres", instances: 1}, pg, memory)
	require.NotNil(t, row.RateToMemory)
	assert.Equal(t, spread{Median: 0.3, Min: 0.25, Max: 0.4}, *row.RateToMemory, "250/1000, 200/500, 300/1000")
	require.NotNil(t, row.AgentCPUToMemory)
	assert.Equal(t, spread{Median: 2.5, Min: 2, Max: 3}, *row.AgentCPUToMemory, "125/50, 200/100, 150/50")
	assert.Equal(t, 250.0, row.Rate.Median)

	mem := summarizeBackend("job.sync", &backendSetup{name: "memory", instances: 1}, memory, memory)
	assert.Nil(t, mem.RateToMemory)
	assert.Nil(t, mem.AgentCPUToMemory)

	// A memory round without CPU leaves that round out of the CPU figure.
	memory[1].cpuKnown = false
	row = summarizeBackend("job.sync", &backendSetup{name: "postgres", instances: 1}, pg, memory)
	assert.Equal(t, spread{Median: 2.75, Min: 2.5, Max: 3}, *row.AgentCPUToMemory)
}
