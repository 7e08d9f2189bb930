//go:build telemetry

package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/internal/tools/proctest"
)

// metricsURL is the address of the metrics server in the agent's log.
var metricsURL = regexp.MustCompile(`msg="metrics listening" url=(http://\S+/metrics)`)

// documentedMetrics reads the Prometheus names of docs/observability.md's
// metric table.
func documentedMetrics(t *testing.T) []string {
	t.Helper()
	doc, err := os.ReadFile("../../docs/observability.md")
	require.NoError(t, err)
	row := regexp.MustCompile("(?m)^\\| `(?:supervaizer|gen_ai)\\.[a-z_.]+` \\| `((?:supervaizer|gen_ai)_[a-z_]+)` \\|")
	var names []string
	for _, m := range row.FindAllStringSubmatch(string(doc), -1) {
		names = append(names, m[1])
	}
	require.Len(t, names, 9, "the metric table of docs/observability.md")
	return names
}

// TestTelemetryMetricsEndpoint runs the binary with SUPERVAIZER_METRICS_ADDR, makes
// a job.start, its replay and an event stream, and finds every documented
// metric in a scrape of /metrics.
func TestTelemetryMetricsEndpoint(t *testing.T) {
	proc := proctest.Start(t, proctest.Build(t, "research-agent", "-tags", "telemetry"), []string{
		"SUPERVAIZER_LOCAL_MODE=true",
		"SUPERVAIZER_DATA_DIR=" + t.TempDir(),
		"SUPERVAIZER_ADDR=127.0.0.1:0",
		"SUPERVAIZER_METRICS_ADDR=127.0.0.1:0",
	})
	base := proc.AwaitURL(t)
	var scrapeURL string
	proc.AwaitServing(t, "the metrics URL", func() bool {
		if m := metricsURL.FindStringSubmatch(proc.Output()); m != nil {
			scrapeURL = m[1]
			return true
		}
		return false
	})

	// An event stream, open while the metrics are scraped.
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	sreq, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/a2a/events", nil)
	require.NoError(t, err)
	sreq.Header.Set(supervaizer.HeaderAPIKey, supervaizer.LocalModeAPIKey)
	stream, err := http.DefaultClient.Do(sreq)
	require.NoError(t, err)
	defer stream.Body.Close()
	_, err = bufio.NewReader(stream.Body).ReadString('\n')
	require.NoError(t, err)

	body := `{"jsonrpc":"2.0","id":1,"method":"supervaizer/action.invoke","params":{"action_request":{"request_id":"m-1",
		"actor":{"user_id":"you"},"workspace":{"id":"ws-local"},"mission_id":"mission-1","agent_slug":"research-agent",
		"surface":"job.start","action":"job.start","job_id":"job-1","idempotency_key":"metrics-1","input":{"topic_id":"eu-battery-market"}}}}`
	for range 2 { // the second is a replay
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/a2a", strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(supervaizer.HeaderAPIKey, supervaizer.LocalModeAPIKey)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		raw, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		require.Contains(t, string(raw), `"result"`, string(raw))
	}

	// A question to the conversation action, whose stand-in model reports
	// its token usage.
	ask := `{"jsonrpc":"2.0","id":2,"method":"message/send","params":{"message":{"kind":"message","role":"user","messageId":"q-1",
		"parts":[{"kind":"text","text":"How many jobs are there?"}]}}}`
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/a2a", strings.NewReader(ask))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(supervaizer.HeaderAPIKey, supervaizer.LocalModeAPIKey)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Contains(t, string(raw), `"supervaizer/usage"`, string(raw))

	var scrape string
	subscribed := regexp.MustCompile(`(?m)^supervaizer_event_subscribers\{[^}]*\} 1$`)
	ok := assert.Eventually(t, func() bool {
		resp, err := http.Get(scrapeURL)
		if err != nil {
			scrape = err.Error()
			return false
		}
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		scrape = string(raw)
		return err == nil && resp.StatusCode == http.StatusOK && subscribed.MatchString(scrape)
	}, 10*time.Second, 50*time.Millisecond)
	require.True(t, ok, "the last scrape: %s", scrape)
	for _, name := range documentedMetrics(t) {
		assert.Regexp(t, "(?m)^"+name+`(_bucket|_sum|_count)?\{`, scrape, "metric %s in /metrics", name)
	}
	assert.Regexp(t, `(?m)^supervaizer_idempotency_outcomes_total\{[^}]*supervaizer_idempotency="replayed"[^}]*\} 1$`, scrape)
	assert.Regexp(t, `(?m)^supervaizer_calls_total\{[^}]*supervaizer_name="job.start"[^}]*\} 2$`, scrape)
	for _, typ := range []string{"input", "output"} {
		assert.Regexp(t, `(?m)^gen_ai_client_token_usage_count\{[^}]*gen_ai_token_type="`+typ+`"[^}]*supervaizer_name="`+actionAsk+`"[^}]*\} 1$`, scrape)
	}

	proc.Stop(t, syscall.SIGTERM)
}
