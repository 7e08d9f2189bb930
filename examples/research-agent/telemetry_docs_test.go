//go:build telemetry

package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/errcode"
	"github.com/supervaize/supervaizer-go/internal/tools/proctest"
	svtest "github.com/supervaize/supervaizer-go/testing"
)

// The sample of /metrics in docs/observability.md sits between these two
// lines, in a ```text block.
const (
	observabilityDoc   = "../../docs/observability.md"
	metricsSampleBegin = "<!-- begin metrics sample: TestTelemetryMetricsSampleInDocs (examples/research-agent) compares it with a scrape; SUPERVAIZER_UPDATE_DOCS=1 rewrites it -->"
	metricsSampleEnd   = "<!-- end metrics sample -->"
	// updateDocsEnv makes TestTelemetryMetricsSampleInDocs rewrite the sample instead
	// of comparing (any value strconv.ParseBool reads as true); the test
	// kit registers no test flag.
	updateDocsEnv = "SUPERVAIZER_UPDATE_DOCS"
)

// What varies from one scrape to the next for the same calls, and what
// normaliseMetrics writes instead.
var (
	// The count of a histogram bucket other than +Inf: which bucket a
	// duration falls in depends on the machine. The +Inf bucket, equal to
	// _count, is kept.
	bucketCount = regexp.MustCompile(`(?m)^([a-z_]+_bucket\{.*,le="[^"+]+"\}) [0-9]+$`)
	// A histogram's sum of durations.
	histogramSum = regexp.MustCompile(`(?m)^([a-z_]+_sum\{.*\}) \S+$`)
	// The OpenTelemetry SDK's version in target_info, and the scope's
	// version when it has one (it has none today).
	sdkVersion   = regexp.MustCompile(`\btelemetry_sdk_version="[^"]*"`)
	scopeVersion = regexp.MustCompile(`\botel_scope_version="[^"]+"`)
)

// normaliseMetrics replaces, in a Prometheus text exposition, the values
// that depend on timing or on the OpenTelemetry SDK's version: the count of
// each histogram bucket but +Inf becomes <n>, each histogram sum <sum>, and
// the versions <version>. Everything else (metric names, HELP and TYPE
// lines, label sets, bucket bounds, counters, gauges, histogram counts) is
// kept as served.
func normaliseMetrics(s string) string {
	s = bucketCount.ReplaceAllString(s, "$1 <n>")
	s = histogramSum.ReplaceAllString(s, "$1 <sum>")
	s = sdkVersion.ReplaceAllString(s, `telemetry_sdk_version="<version>"`)
	return scopeVersion.ReplaceAllString(s, `otel_scope_version="<version>"`)
}

func TestTelemetryNormaliseMetrics(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{
			name: "a bucket count",
			in:   `x_seconds_bucket{a="1",le="0.005"} 3` + "\n",
			want: `x_seconds_bucket{a="1",le="0.005"} <n>` + "\n",
		},
		{
			name: "the +Inf bucket is kept",
			in:   `x_seconds_bucket{a="1",le="+Inf"} 3` + "\n",
			want: `x_seconds_bucket{a="1",le="+Inf"} 3` + "\n",
		},
		{
			name: "a sum",
			in:   `x_seconds_sum{a="1"} 4.6228999999999994e-05` + "\n",
			want: `x_seconds_sum{a="1"} <sum>` + "\n",
		},
		{
			name: "a histogram count is kept",
			in:   `x_seconds_count{a="1"} 2` + "\n",
			want: `x_seconds_count{a="1"} 2` + "\n",
		},
		{
			name: "counters and gauges are kept",
			in:   "x_total{a=\"1\"} 7\nx_subscribers{} 1\n",
			want: "x_total{a=\"1\"} 7\nx_subscribers{} 1\n",
		},
		{
			name: "versions",
			in:   `target_info{service_name="s",telemetry_sdk_version="1.47.0"} 1` + "\n" + `x_total{otel_scope_name="n",otel_scope_version="v0.1.0"} 1` + "\n",
			want: `target_info{service_name="s",telemetry_sdk_version="<version>"} 1` + "\n" + `x_total{otel_scope_name="n",otel_scope_version="<version>"} 1` + "\n",
		},
		{
			name: "an empty scope version is kept",
			in:   `x_total{otel_scope_name="n",otel_scope_version=""} 1` + "\n",
			want: `x_total{otel_scope_name="n",otel_scope_version=""} 1` + "\n",
		},
		{
			name: "HELP and TYPE lines are kept",
			in:   "# HELP x_seconds_sum a sum 0.5\n# TYPE x_seconds histogram\n",
			want: "# HELP x_seconds_sum a sum 0.5\n# TYPE x_seconds histogram\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, normaliseMetrics(tt.in))
		})
	}
}

// docMetricsSample returns docs/observability.md and the offsets of the
// sample's text (the lines inside its ```text block).
func docMetricsSample(t *testing.T) (doc string, start, end int) {
	t.Helper()
	raw, err := os.ReadFile(observabilityDoc)
	require.NoError(t, err)
	doc = string(raw)
	b := strings.Index(doc, metricsSampleBegin+"\n\n```text\n")
	require.GreaterOrEqual(t, b, 0, "%s: no line %q followed by an empty line and ```text", observabilityDoc, metricsSampleBegin)
	start = b + len(metricsSampleBegin+"\n\n```text\n")
	n := strings.Index(doc[start:], "```\n\n"+metricsSampleEnd+"\n")
	require.GreaterOrEqual(t, n, 0, "%s: the sample's block does not end with ``` then %q", observabilityDoc, metricsSampleEnd)
	return doc, start, start + n
}

// metricFamilies lists the metric names of an exposition's TYPE lines.
func metricFamilies(exposition string) []string {
	var names []string
	for _, m := range regexp.MustCompile(`(?m)^# TYPE (\S+) `).FindAllStringSubmatch(exposition, -1) {
		names = append(names, m[1])
	}
	return names
}

// seriesSum adds the values of the series of name in an exposition.
func seriesSum(exposition, name string) int {
	total := 0
	for _, m := range regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(name)+`\{.*\} ([0-9]+)$`).FindAllStringSubmatch(exposition, -1) {
		n, _ := strconv.Atoi(m[1])
		total += n
	}
	return total
}

// TestTelemetryMetricsSampleInDocs runs the binary as a standalone deployment
// (workspace authorization required, tokens from the test kit's fake
// Studio) with SUPERVAIZER_METRICS_ADDR, makes the calls
// docs/observability.md lists before its sample of /metrics, scrapes
// /metrics and requires the scrape, normalised by normaliseMetrics, to be
// the sample byte for byte. With SUPERVAIZER_UPDATE_DOCS=1 it rewrites the
// sample instead.
func TestTelemetryMetricsSampleInDocs(t *testing.T) {
	studio := svtest.NewFakeStudio(t)
	env := studioEnv(studio, t.TempDir())
	env["SUPERVAIZER_STUDIO_AGENT_ID"] = studio.StudioAgentID(agentSlug)
	env["SUPERVAIZER_ADDR"] = "127.0.0.1:0"
	env["SUPERVAIZER_METRICS_ADDR"] = "127.0.0.1:0"
	var list []string
	for k, v := range env {
		list = append(list, k+"="+v)
	}
	slices.Sort(list)
	proc := proctest.Start(t, proctest.Build(t, "research-agent", "-tags", "telemetry"), list)
	base := proc.AwaitURL(t)
	var scrapeURL string
	proc.AwaitServing(t, "the metrics URL", func() bool {
		if m := metricsURL.FindStringSubmatch(proc.Output()); m != nil {
			scrapeURL = m[1]
			return true
		}
		return false
	})

	// The calls of the sample, in the order docs/observability.md lists.
	// 1. An event stream, open until the scrape.
	events := subscribe(t, base)
	c := &client{t: t, base: base, studio: studio}
	// 2. job.start of job-1 with an idempotency key: the handler runs.
	start := jobRequest(t, wsA, actionStart, "job-1", map[string]any{"topic_id": "eu-battery-market"})
	start.IdempotencyKey = "start-job-1"
	first, rerr := c.invokeRaw(start)
	require.Nil(t, rerr, "job.start: %+v", rerr)
	// 3. The same job.start again (a new request id): replayed.
	start.RequestID += "-retry"
	second, rerr := c.invokeRaw(start)
	require.Nil(t, rerr, "the replay: %+v", rerr)
	require.JSONEq(t, string(first), string(second), "the replay answers the recorded result")
	// 4. job.sync of job-1.
	c.invoke(jobRequest(t, wsA, actionSync, "job-1", nil))
	// 5. job.start of job-2 with a token signed by another key.
	forged := jobRequest(t, wsA, actionStart, "job-2", map[string]any{"topic_id": "eu-battery-market"})
	_, rerr = c.call(supervaizer.MethodActionInvoke, map[string]any{"action_request": forged},
		svtest.NewFakeStudio(t).Mint(studio.ActionClaims(forged)))
	require.NotNil(t, rerr, "a token signed by another key")
	require.Equal(t, errcode.Unauthorized, rerr.Code, "%+v", rerr)
	// 6. A text message to the conversation action: its usage is recorded.
	ask := actionRequest(t, wsA, actionAsk, nil)
	_, rerr = c.call("message/send", map[string]any{"message": map[string]any{"kind": "message", "role": "user", "messageId": "q-1",
		"parts": []any{map[string]any{"kind": "text", "text": "How many jobs are there?"}}}}, studio.TokenForAction(ask))
	require.Nil(t, rerr, "the conversation: %+v", rerr)
	// The job.start's effects reached the stream: it is subscribed.
	assert.Equal(t, "job.started", nextEffect(t, events).Effects[0].Type)

	// The observer records a call once its answer is written, and the
	// idempotency records' retention sweep runs in the background after the
	// first call: scrape until the five calls and the subscriber are counted
	// and two scrapes 300 ms apart agree.
	scrape := func() string {
		resp, err := http.Get(scrapeURL)
		require.NoError(t, err)
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
		return normaliseMetrics(string(raw))
	}
	var got string
	for deadline := time.Now().Add(15 * time.Second); ; {
		prev := scrape()
		if seriesSum(prev, "supervaizer_calls_total") == 5 && seriesSum(prev, "supervaizer_event_subscribers") == 1 {
			time.Sleep(300 * time.Millisecond)
			if got = scrape(); got == prev {
				break
			}
		} else {
			got = prev
			time.Sleep(50 * time.Millisecond)
		}
		require.True(t, time.Now().Before(deadline), "the scrape never settled with 5 calls and 1 subscriber; the last one:\n%s", got)
	}
	proc.Stop(t, syscall.SIGTERM)

	// The sample documents every metric of the table, and nothing else but
	// the exporter's target_info.
	want := append(documentedMetrics(t), "target_info")
	slices.Sort(want)
	families := metricFamilies(got)
	slices.Sort(families)
	assert.Equal(t, want, families, "the metric families of the scrape: the table of %s and target_info", observabilityDoc)

	doc, from, to := docMetricsSample(t)
	if on, _ := strconv.ParseBool(os.Getenv(updateDocsEnv)); on {
		require.NoError(t, os.WriteFile(observabilityDoc, []byte(doc[:from]+got+doc[to:]), 0o644))
		t.Logf("%s: the metrics sample rewritten (%d lines); review the diff", observabilityDoc, strings.Count(got, "\n"))
		return
	}
	if sample := doc[from:to]; sample != got {
		t.Errorf("the sample of /metrics in %s is not what the example serves after the documented calls.\n"+
			"If the change is intended, run: %s=1 go test -run TestTelemetryMetricsSampleInDocs . (in examples/research-agent), and review the diff.\n%s",
			observabilityDoc, updateDocsEnv, lineDiff(sample, got))
	}
}

// lineDiff lists the lines of want missing from got (-) and the lines of got
// missing from want (+), in order.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for _, l := range w {
		if !slices.Contains(g, l) {
			fmt.Fprintf(&b, "- %s\n", l)
		}
	}
	for _, l := range g {
		if !slices.Contains(w, l) {
			fmt.Fprintf(&b, "+ %s\n", l)
		}
	}
	if b.Len() == 0 {
		return "(the same lines, in another order or number)"
	}
	return b.String()
}
