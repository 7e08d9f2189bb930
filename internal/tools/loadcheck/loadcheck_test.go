package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/internal/tools/loadcheck/fixture"
)

func TestPercentile(t *testing.T) {
	ms := func(n ...int) []time.Duration {
		out := make([]time.Duration, len(n))
		for i, v := range n {
			out[i] = time.Duration(v) * time.Millisecond
		}
		return out
	}
	sorted := ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10)
	for _, tc := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 5 * time.Millisecond}, {0.99, 10 * time.Millisecond}, {0.1, time.Millisecond}, {1, 10 * time.Millisecond}} {
		assert.Equal(t, tc.want, percentile(sorted, tc.q), "q=%v", tc.q)
	}
	assert.Equal(t, time.Duration(0), percentile(nil, 0.5))
	assert.Equal(t, 7*time.Millisecond, percentile(ms(7), 0.99))
}

func TestTokenPoolHandsOutEachTokenOnce(t *testing.T) {
	p := &tokenPool{tokens: []string{"a", "b"}}
	for _, want := range []string{"a", "b"} {
		got, ok := p.next()
		require.True(t, ok)
		assert.Equal(t, want, got)
	}
	assert.False(t, p.exhausted())
	_, ok := p.next()
	assert.False(t, ok)
	assert.True(t, p.exhausted())
}

func TestPoolSize(t *testing.T) {
	assert.Equal(t, 256+3750, poolSize(1000, 3*time.Second))
	assert.Equal(t, 500_000, poolSize(1e9, time.Minute))
}

// startController serves the fixture controller on loopback.
func startController(t *testing.T) *httptest.Server {
	t.Helper()
	srv, err := fixture.NewController()
	require.NoError(t, err)
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return ts
}

func mustToken(t testing.TB) string {
	t.Helper()
	tokens, err := fixture.Tokens(1)
	require.NoError(t, err)
	return tokens[0]
}

func TestControllerAndBaselineAnswerAlike(t *testing.T) {
	ctx := context.Background()
	ctrl := startController(t)
	tok := mustToken(t)
	response, err := probe(ctx, target{name: "controller", url: ctrl.URL + "/a2a", apiKey: fixture.APIKey}, fixture.Body(), tok)
	require.NoError(t, err)
	assert.Contains(t, string(response), `"result":{"status":"ok","effects":[{"type":"job.started","job_id":"job-77","data":{"topic_id":"t-1"}}]}`)

	base := httptest.NewServer(baselineHandler(response))
	t.Cleanup(base.Close)
	got, err := probe(ctx, target{name: "baseline", url: base.URL + "/a2a", apiKey: fixture.APIKey}, fixture.Body(), tok)
	require.NoError(t, err)
	assert.Equal(t, string(response), string(got))

	resp, err := http.Post(base.URL+"/a2a", "application/json", strings.NewReader(`{"method":"other"}`))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
}

func TestDriverMeasuresBothTokenModes(t *testing.T) {
	ctrl := startController(t)
	tok := mustToken(t)
	response, err := probe(context.Background(), target{name: "controller", url: ctrl.URL + "/a2a", apiKey: fixture.APIKey}, fixture.Body(), tok)
	require.NoError(t, err)
	prefix := response[:bytes.Index(response, []byte(`"result":`))+len(`"result":`)]
	d := newDriver(2, fixture.Body(), prefix)
	tgt := target{name: "controller", url: ctrl.URL + "/a2a", apiKey: fixture.APIKey}

	r := d.run(context.Background(), tgt, 200*time.Millisecond, reusedToken(tok))
	require.NoError(t, r.failure)
	assert.Positive(t, r.requests)
	assert.Len(t, r.latencies, r.requests)
	assert.Positive(t, r.rate())

	fresh, err := fixture.Tokens(5)
	require.NoError(t, err)
	r = d.run(context.Background(), tgt, 5*time.Second, &tokenPool{tokens: fresh})
	require.NoError(t, r.failure)
	assert.Equal(t, 5, r.requests, "each fresh token is used once, then the round ends")
	assert.True(t, r.cutShort)
}

func TestDriverReportsFailures(t *testing.T) {
	ctrl := startController(t)
	d := newDriver(2, fixture.Body(), []byte(`{"jsonrpc":"2.0","id":"rpc-0b6f3c1e-42","result":`))
	for _, tc := range []struct {
		name, url, key, token string
		want                  string
	}{
		{"JSON-RPC error (forged token)", ctrl.URL + "/a2a", fixture.APIKey, "not-a-token", "not a JSON-RPC result"},
		{"HTTP 401 (wrong key)", ctrl.URL + "/a2a", "wrong", mustToken(t), "HTTP 401"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := d.run(context.Background(), target{name: "controller", url: tc.url, apiKey: tc.key}, 2*time.Second, reusedToken(tc.token))
			require.Error(t, r.failure)
			assert.Contains(t, r.failure.Error(), tc.want)
		})
	}
}

// TestMain lets run start this test binary as its -serve children.
func TestMain(m *testing.M) {
	// A fuzz worker is this binary started again by the fuzzer, with this
	// process's environment: it runs the tests, not the command.
	if os.Getenv(childEnvVar) == "1" && !slices.ContainsFunc(os.Args, func(a string) bool { return strings.HasPrefix(a, "-test.fuzzworker") }) {
		main()
		os.Exit(0)
	}
	os.Setenv(childEnvVar, "1") // inherited by the children only: this process is past the check
	os.Exit(m.Run())
}

func TestAgentBuildFlags(t *testing.T) {
	tests := []struct {
		profiled bool
		tags     string
		want     []string
	}{
		{false, "", nil},
		{true, "", []string{"-tags", "pprof"}},
		{false, "telemetry", []string{"-tags", "telemetry"}},
		{true, "telemetry", []string{"-tags", "telemetry,pprof"}},
		{true, " telemetry , pprof,telemetry,", []string{"-tags", "telemetry,pprof"}},
		{false, ",", nil},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, agentBuildFlags(tt.profiled, tt.tags), "profiled %v, tags %q", tt.profiled, tt.tags)
	}
}

// TestRunPrintsTheTable runs both cases, the research agent built with its
// OpenTelemetry exporters (-agent-tags telemetry; TestRunWritesProfiles runs
// the default build).
func TestRunPrintsTheTable(t *testing.T) {
	var out bytes.Buffer
	cfg := config{concurrency: 2, duration: 100 * time.Millisecond, rounds: 2, warmup: 10 * time.Millisecond,
		cases: []string{caseSync, caseFixture}, agentTags: "telemetry"}
	failed, err := run(context.Background(), cfg, &out)
	require.NoError(t, err)
	assert.False(t, failed, out.String())
	for _, want := range []string{"job.sync", "fixture", "reused", "fresh", "controller", "baseline", "req/s", "CPU µs/req", "client CPU µs/req", "p50", "p99", "ratio", ">= 0.85", ">= 0.45", "server CPU targets", "ed25519.Verify alone", "above the baseline of the same round (target <= 15", "above the reused request + ed25519.Verify of the same round", "(target <= 10", "baseline+Verify", "above the reused request + ed25519.Verify under the same load", "of the baseline's req/s (the ceiling of the fresh ratio)", "resident memory after the run: controller", "before the load: controller",
		"job.sync  resident memory after the run (controller built with -tags telemetry): controller",
		"fixture   resident memory after the run: controller"} {
		assert.Contains(t, out.String(), want)
	}
	_, line, ok := strings.Cut(out.String(), "loadcheck-json: ")
	require.True(t, ok, out.String())
	var got struct {
		Rows   []summaryRow `json:"rows"`
		Memory []caseMemory `json:"memory"`
	}
	require.NoError(t, json.Unmarshal([]byte(line), &got))
	require.Len(t, got.Rows, 4)
	require.Len(t, got.Memory, 2)
	assert.Equal(t, "-tags telemetry", got.Memory[0].Build)
	assert.Empty(t, got.Memory[1].Build, "the fixture controller is built with the load check")
	for _, m := range got.Memory {
		// Each server's resident memory, read from /proc before and after its rounds.
		for _, v := range []float64{m.Controller, m.Baseline, m.ControllerIdle, m.BaselineIdle,
			m.ControllerAnon, m.BaselineAnon, m.ControllerIdleAnon, m.BaselineIdleAnon} {
			assert.Positive(t, v, "%s: %+v", m.Case, m)
		}
		assert.Less(t, m.ControllerAnon, m.Controller, "the anonymous part is part of the whole: %+v", m)
	}
	for _, r := range got.Rows {
		assert.Equal(t, 2, r.Rounds)
		require.NotNil(t, r.Ratio, "%s %s", r.Case, r.Mode)
		assert.Positive(t, r.Ratio.Median)
		require.NotNil(t, r.CtrlCPU, "%s %s", r.Case, r.Mode)
		require.NotNil(t, r.CPUOver, "%s %s: the CPU above the baseline, round by round", r.Case, r.Mode)
		require.NotNil(t, r.BaseClient, "%s %s: the client's CPU per request is reported", r.Case, r.Mode)
		assert.Positive(t, r.CtrlRate.Median)
		if r.Mode == modeFresh {
			// Each fresh round is compared with the floor measured right before it.
			require.NotNil(t, r.VerifyFloor, r.Case)
			assert.Positive(t, r.VerifyFloor.Min, r.Case)
			require.NotNil(t, r.FreshOver, r.Case)
			// And with the verifying baseline of the same round.
			require.NotNil(t, r.VerifyingRate, r.Case)
			assert.Positive(t, r.VerifyingRate.Min, r.Case)
			require.NotNil(t, r.VerifyingCPU, r.Case)
			require.NotNil(t, r.RatioVerifying, r.Case)
			require.NotNil(t, r.VerifyingRatio, r.Case)
			require.NotNil(t, r.VerifyLoaded, r.Case)
			require.NotNil(t, r.FreshOverLoaded, r.Case)
		} else {
			assert.Nil(t, r.VerifyFloor, r.Case)
			assert.Nil(t, r.FreshOver, r.Case)
			assert.Nil(t, r.VerifyingRate, r.Case)
			assert.Nil(t, r.FreshOverLoaded, r.Case)
		}
	}
	// The realistic case answers a job_state read from the agent's store.
	assert.Equal(t, caseSync, got.Rows[0].Case)
}

func TestParseStatusKB(t *testing.T) {
	status := "Name:\tagent\nVmPeak:\t 99 kB\nVmRSS:\t   20480 kB\nRssAnon:\t    5120 kB\nRssFile:\t   15360 kB\nThreads:\t8\n"
	tests := []struct {
		name, status, field string
		want                float64
	}{
		{"VmRSS", status, "VmRSS", 20},
		{"RssAnon", status, "RssAnon", 5},
		{"not a prefix of another field", status, "Rss", 0},
		{"absent", "Name:\tagent\n", "VmRSS", 0},
		{"another unit", "VmRSS:\t 20 MB\n", "VmRSS", 0},
		{"not a number", "VmRSS:\t x kB\n", "VmRSS", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.InDelta(t, tt.want, parseStatusKB(tt.status, tt.field), 1e-9)
		})
	}
}

func TestParseStatCPU(t *testing.T) {
	d, ok := parseStatCPU("4242 (my (odd) cmd) S 1 2 3 4 5 6 7 8 9 10 250 50 0 0 20 0")
	require.True(t, ok)
	assert.Equal(t, 3*time.Second, d)
	_, ok = parseStatCPU("garbage")
	assert.False(t, ok)
	_, ok = parseStatCPU("1 (x) S 1 2")
	assert.False(t, ok)
}

func TestSpread(t *testing.T) {
	assert.Nil(t, spreadOf(nil))
	assert.Equal(t, &spread{Median: 2, Min: 1, Max: 9}, spreadOf([]float64{9, 1, 2}))
	assert.Equal(t, &spread{Median: 2.5, Min: 1, Max: 9}, spreadOf([]float64{9, 1, 2, 3}))
	assert.Equal(t, "2.00 [1.00–9.00]", spreadOf([]float64{9, 1, 2}).format("%.2f"))
	assert.Equal(t, "n/a", (*spread)(nil).format("%.2f"))
}

func TestBaselineReadsTheWrappedForm(t *testing.T) {
	base := httptest.NewServer(baselineHandler([]byte(`{"ok":1}`)))
	t.Cleanup(base.Close)
	for body, want := range map[string]int{
		`{"jsonrpc":"2.0","id":1,"method":"supervaizer/action.invoke","params":{"action_request":{"agent_slug":"a","action":"job.sync"}}}`: http.StatusOK,
		`{"jsonrpc":"2.0","id":1,"method":"supervaizer/action.invoke","params":{"agent_slug":"a","action":"job.sync"}}`:                    http.StatusOK,
		`{"jsonrpc":"2.0","id":1,"method":"supervaizer/action.invoke","params":{}}`:                                                        http.StatusBadRequest,
	} {
		resp, err := http.Post(base.URL, "application/json", strings.NewReader(body))
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, want, resp.StatusCode, body)
	}
}

// TestFreshOverUsesEachRoundsFloor: a fresh round's CPU above the reused
// request is taken against the ed25519.Verify floor measured before that
// round, not one measured at the start of the run.
func TestFreshOverUsesEachRoundsFloor(t *testing.T) {
	round := func(cpuPerReq float64) result {
		return result{requests: 1000, cpu: time.Duration(cpuPerReq * 1000 * float64(time.Microsecond)), cpuKnown: true}
	}
	rw := &row{name: caseSync, mode: modeFresh,
		ctrl:   []result{round(110), round(130), round(120)},
		floors: []float64{55, 75, 0}} // the third round's floor could not be measured
	assert.InDeltaSlice(t, []float64{15, 15}, rw.freshOver(40), 1e-9)
}

// TestCPUOverPairsRounds: the controller's CPU above the baseline is taken
// round by round (each controller round against the baseline round run
// right after it), not as the difference of the two medians.
func TestCPUOverPairsRounds(t *testing.T) {
	round := func(cpuPerReq float64) result {
		return result{requests: 1000, cpu: time.Duration(cpuPerReq * 1000 * float64(time.Microsecond)), cpuKnown: true}
	}
	// The machine's speed drifts between rounds; each pair runs at one speed.
	rw := &row{name: caseSync, mode: modeReused,
		ctrl: []result{round(40), round(50), round(60)},
		base: []result{round(38), round(30), round(44)}}
	s := rw.summary()
	require.NotNil(t, s.CPUOver)
	assert.InDelta(t, 16, s.CPUOver.Median, 1e-9, "the median of 2, 20 and 16")
	assert.InDelta(t, 2, s.CPUOver.Min, 1e-9)
	assert.InDelta(t, 20, s.CPUOver.Max, 1e-9)
	assert.InDelta(t, 12, s.CtrlCPU.Median-s.BaseCPU.Median, 1e-9, "the difference of the medians, which the line no longer prints")
}

// TestFreshOverLoadedUsesEachRoundsVerifyingBaseline: under load, a fresh
// round's CPU above the reused request is taken against that round's
// signature check, the verifying baseline's CPU above the baseline's.
func TestFreshOverLoadedUsesEachRoundsVerifyingBaseline(t *testing.T) {
	round := func(requests int, cpuPerReq float64) result {
		return result{requests: requests, elapsed: time.Second, cpuKnown: true,
			cpu: time.Duration(cpuPerReq * float64(requests) * float64(time.Microsecond))}
	}
	rw := &row{name: caseSync, mode: modeFresh,
		ctrl:      []result{round(1000, 120), round(1000, 130), round(1000, 125)},
		base:      []result{round(3000, 30), round(3000, 32), round(3000, 31)},
		verifying: []result{round(1250, 80), round(2000, 84), {}}} // the third round's verifying baseline did not run
	assert.InDeltaSlice(t, []float64{20, 28}, rw.freshOverLoaded(50), 1e-9, "120-50-(80-30), 130-50-(84-32)")
	s := rw.summary()
	require.NotNil(t, s.VerifyLoaded)
	assert.InDelta(t, 51, s.VerifyLoaded.Median, 1e-9, "the median of 50 and 52")
	assert.InDelta(t, 82, s.VerifyingCPU.Median, 1e-9)
	assert.InDelta(t, 1625, s.VerifyingRate.Median, 1e-9)
	assert.InDelta(t, 0.65, s.RatioVerifying.Median, 1e-9, "the median of 1000/1250 and 1000/2000")
	assert.InDelta(t, 0.5417, s.VerifyingRatio.Median, 1e-3, "the median of 1250/3000 and 2000/3000")
}

// TestVerifyingBaselineChecksTheSignature: the verifying baseline answers
// only a request whose workspace token's signature verifies with its key.
func TestVerifyingBaselineChecksTheSignature(t *testing.T) {
	key, err := parseVerifyKey([]byte(fixture.PublicKeyPEM()))
	require.NoError(t, err)
	srv := httptest.NewServer(verifyingBaselineHandler([]byte(`{"ok":1}`), key))
	t.Cleanup(srv.Close)
	good := mustToken(t)
	head, sig, _ := strings.Cut(good[strings.IndexByte(good, '.')+1:], ".")
	tampered := good[:strings.IndexByte(good, '.')+1] + head + "x." + sig
	for name, tc := range map[string]struct {
		header string
		want   int
	}{
		"valid":                {"Bearer " + good, http.StatusOK},
		"no header":            {"", http.StatusUnauthorized},
		"no Bearer":            {good, http.StatusUnauthorized},
		"payload changed":      {"Bearer " + tampered, http.StatusUnauthorized},
		"signature cut":        {"Bearer " + good[:len(good)-4], http.StatusUnauthorized},
		"two segments":         {"Bearer " + good[strings.IndexByte(good, '.')+1:], http.StatusUnauthorized},
		"signature not base64": {"Bearer " + good[:strings.LastIndexByte(good, '.')+1] + "!!", http.StatusUnauthorized},
	} {
		t.Run(name, func(t *testing.T) {
			body := `{"jsonrpc":"2.0","id":1,"method":"supervaizer/action.invoke","params":{"agent_slug":"a","action":"job.sync"}}`
			req, err := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
			require.NoError(t, err)
			if tc.header != "" {
				req.Header.Set(workspaceHeader, tc.header)
			}
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, tc.want, resp.StatusCode)
		})
	}
	_, err = parseVerifyKey([]byte("not PEM"))
	assert.Error(t, err)
}

// TestRunWritesProfiles: with -profile, each measured round writes the CPU
// profile of its server (the research agent, built with -tags pprof, and
// the -serve children, with -pprof, which the fixture controller takes
// too), each case the heap profile of its controller after the run and its
// runtime memory statistics, and the report says where they are.
func TestRunWritesProfiles(t *testing.T) {
	var out bytes.Buffer
	dir := filepath.Join(t.TempDir(), "profiles") // created by the run
	cfg := config{concurrency: 2, duration: time.Second, rounds: 1, warmup: 10 * time.Millisecond,
		cases: []string{caseSync}, profileDir: dir}
	failed, err := run(context.Background(), cfg, &out)
	require.NoError(t, err, out.String())
	assert.False(t, failed, out.String())
	want := []string{"job.sync-reused-controller-round1.pb.gz", "job.sync-reused-baseline-round1.pb.gz",
		"job.sync-fresh-controller-round1.pb.gz", "job.sync-fresh-baseline-round1.pb.gz", "job.sync-fresh-verifying-baseline-round1.pb.gz",
		"job.sync-controller-heap.pb.gz", "job.sync-controller-memstats.txt"}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		require.Greater(t, len(b), 2, e.Name())
		if strings.HasSuffix(e.Name(), ".txt") {
			for _, stat := range []string{"# runtime.MemStats\n", "\n# HeapInuse = ", "\n# HeapReleased = ", "\n# NextGC = "} {
				assert.Contains(t, string(b), stat, e.Name())
			}
			continue
		}
		assert.Equal(t, []byte{0x1f, 0x8b}, b[:2], "%s: a CPU profile is gzip-compressed protobuf", e.Name())
	}
	assert.ElementsMatch(t, want, got)
	assert.Contains(t, out.String(), "profiles: 5 CPU profiles (one per server and measured round) in "+dir)
	assert.Contains(t, out.String(), "heap profiles: 1 (one per case: its controller's, when its memory after the run is read) in "+dir)
	assert.Contains(t, out.String(), "and the runtime's memory statistics at the same moment (HeapInuse, HeapIdle, HeapReleased, NextGC, …), e.g. "+memStatsFile(dir, caseSync))
	_, last, ok := strings.Cut(out.String(), "loadcheck-json: ")
	require.True(t, ok)
	assert.Equal(t, 1, strings.Count(strings.TrimSpace(last), "\n")+1, "the JSON line stays the last one")
}
