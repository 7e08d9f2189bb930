package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/a2a"
	"github.com/supervaize/supervaizer-go/internal/tools/proctest"
)

// TestBinary builds the real binary, starts it with an empty environment apart
// from local mode, a data directory and port 0, reads the address it bound
// from its log, waits until it serves its
// discovery document, then stops it with SIGTERM and expects a clean exit.
// Both builds: the default one (make run's unless telemetry is asked for),
// and the one with the OpenTelemetry exporters (-tags telemetry).
func TestBinary(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flags []string
	}{{"default", nil}, {"telemetry", []string{"-tags", "telemetry"}}} {
		t.Run(tc.name, func(t *testing.T) { testBinary(t, proctest.Build(t, "research-agent", tc.flags...)) })
	}
}

func testBinary(t *testing.T, bin string) {
	proc := proctest.Start(t, bin, []string{
		"SUPERVAIZER_LOCAL_MODE=true",
		"SUPERVAIZER_DATA_DIR=" + t.TempDir(),
		"SUPERVAIZER_ADDR=127.0.0.1:0", // a free port; the log names it
	})
	base := proc.AwaitURL(t)

	url := base + a2a.AgentsListPath
	proc.AwaitServing(t, "an answer at "+url, func() bool {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		require.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		return true
	})
	stdout, stderr := proc.Stdout.String(), proc.Stderr.String()
	assert.Contains(t, stdout, "X-API-Key: local-dev", "the try-it block")
	assert.Contains(t, stderr, "mode=local")
	assert.Contains(t, stderr, "api_key=local-dev", "the local-mode key to send")
	assert.Contains(t, stdout, base+"/a2a", "the try-it block names the address bound")

	// The try-it block's calls, sent as printed: the job it starts is the
	// one the text message then counts (one local workspace for both).
	bodies := regexp.MustCompile(`(?m)^  -d '(.*)'$`).FindAllStringSubmatch(stdout, -1)
	require.Len(t, bodies, 3, stdout)
	var answers []string
	for _, b := range bodies {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/a2a", strings.NewReader(b[1]))
		require.NoError(t, err)
		req.Header.Set("X-API-Key", "local-dev")
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		raw, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
		require.NotContains(t, string(raw), `"error"`, "%s", raw)
		answers = append(answers, string(raw))
	}
	assert.Contains(t, answers[1], `"status":"ok"`, "job.start")
	assert.Contains(t, answers[2], "This workspace has 1 research jobs", "the text message sees the job the curl started")

	proc.Stop(t, syscall.SIGTERM)
	assert.Contains(t, proc.Stderr.String(), `msg="controller stopped"`)
}

// TestDefaultBuild: the build without the telemetry tag (go build, make run
// when no telemetry is configured) compiles no package of OpenTelemetry,
// gRPC, protobuf or Prometheus (their package initialisation alone costs
// about 5 MiB of resident memory, and they made the first make run slow),
// and has the PostgreSQL store; a run that asks for telemetry stops, naming
// the build that has it.
func TestDefaultBuild(t *testing.T) {
	heavy := regexp.MustCompile(`(?m)^(go\.opentelemetry\.io/|google\.golang\.org/(grpc|protobuf)\b|github\.com/prometheus/|github\.com/supervaize/supervaizer-go/otel\b)`)
	postgres := regexp.MustCompile(`(?m)^github\.com/supervaize/supervaizer-go/store/postgres$`)
	out, err := exec.CommandContext(t.Context(), "go", "list", "-deps", ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Empty(t, heavy.FindAllString(string(out), -1), "packages the default build must leave out")
	assert.Regexp(t, postgres, string(out), "the default build has the PostgreSQL store")
	full, err := exec.CommandContext(t.Context(), "go", "list", "-deps", "-tags", "telemetry", ".").CombinedOutput()
	require.NoError(t, err, "%s", full)
	assert.NotEmpty(t, heavy.FindAllString(string(full), -1), "the telemetry build has them: the pattern matches")

	bin := proctest.Build(t, "research-agent")
	for _, env := range []string{"SUPERVAIZER_METRICS_ADDR=127.0.0.1:0", "OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:1"} {
		proc := proctest.Start(t, bin, []string{"SUPERVAIZER_LOCAL_MODE=true", "SUPERVAIZER_DATA_DIR=" + t.TempDir(),
			"SUPERVAIZER_ADDR=127.0.0.1:0", env})
		require.Error(t, proc.Wait(t), env)
		assert.Contains(t, proc.Output(), "build with -tags telemetry", env)
	}
}

// TestTaggedTestsRunInMakeTest: make test runs the tests built with the
// telemetry tag only as go test -tags telemetry -run '^TestTelemetry'. Every
// test of a file with that build constraint must then have that prefix, or
// it would never run.
func TestTaggedTestsRunInMakeTest(t *testing.T) {
	files, err := filepath.Glob("*_test.go")
	require.NoError(t, err)
	testFunc := regexp.MustCompile(`(?m)^func (Test\w*)\(`)
	var tagged []string
	for _, f := range files {
		src, err := os.ReadFile(f)
		require.NoError(t, err)
		if !strings.HasPrefix(string(src), "//go:build telemetry\n") {
			continue
		}
		for _, m := range testFunc.FindAllStringSubmatch(string(src), -1) {
			tagged = append(tagged, m[1])
			assert.True(t, strings.HasPrefix(m[1], "TestTelemetry"), "%s in %s: make test runs only ^TestTelemetry with -tags telemetry", m[1], f)
		}
	}
	assert.NotEmpty(t, tagged, "the telemetry tests")
	makefile, err := os.ReadFile("../../Makefile")
	require.NoError(t, err)
	assert.Contains(t, string(makefile), "-tags telemetry -run '^TestTelemetry'", "make test's run of the telemetry tests")
}
