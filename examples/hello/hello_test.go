package main

import (
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sv "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/internal/tools/proctest"
	svtest "github.com/supervaize/supervaizer-go/testing"
)

// readmeSection returns the README's text from heading to the next "## ".
func readmeSection(t *testing.T, heading string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	require.NoError(t, err)
	s := string(b)
	i := strings.Index(s, "\n"+heading+"\n")
	require.GreaterOrEqual(t, i, 0, "README has no %q section", heading)
	s = s[i+len(heading)+2:]
	if j := strings.Index(s, "\n## "); j >= 0 {
		s = s[:j]
	}
	return s
}

// fenced returns the first fenced block of lang in s.
func fenced(t *testing.T, s, lang string) string {
	t.Helper()
	open := "```" + lang + "\n"
	i := strings.Index(s, open)
	require.GreaterOrEqual(t, i, 0, "no ```%s block", lang)
	s = s[i+len(open):]
	j := strings.Index(s, "```\n")
	require.GreaterOrEqual(t, j, 0, "unterminated ```%s block", lang)
	return s[:j]
}

const readmeHeading = "## The smallest complete agent"

// TestReadmeShowsHello: the README's agent is this file, byte for byte.
func TestReadmeShowsHello(t *testing.T) {
	main, err := os.ReadFile("main.go")
	require.NoError(t, err)
	block := fenced(t, readmeSection(t, readmeHeading), "go")
	assert.Equal(t, string(main), block, "README.md's hello block and examples/hello/main.go differ")
	assert.LessOrEqual(t, strings.Count(string(main), "\n"), 60, "hello stays at most 60 lines")
}

// readmeCurl parses the README's curl for job.start: its headers and body.
func readmeCurl(t *testing.T) (headers map[string]string, body string) {
	t.Helper()
	sh := readmeSection(t, readmeHeading)
	var line string
	for l := range strings.Lines(readmeSection(t, readmeHeading)) {
		if strings.HasPrefix(l, "curl ") && strings.Contains(l, `"job.start"`) {
			line = strings.TrimSpace(l)
		}
	}
	require.NotEmpty(t, line, "README has a curl for job.start\n%s", sh)
	require.Contains(t, line, "curl -s 127.0.0.1:8080/a2a ")
	headers = map[string]string{}
	for _, m := range regexp.MustCompile(`-H '([^:']+): ([^']*)'`).FindAllStringSubmatch(line, -1) {
		headers[m[1]] = m[2]
	}
	m := regexp.MustCompile(`-d '([^']*)'`).FindStringSubmatch(line)
	require.NotNil(t, m, "the curl has a -d body")
	return headers, m[1]
}

// printedCurl matches the curl hello prints: the address it bound, then /a2a.
var printedCurl = regexp.MustCompile(`try: curl -s (\S+)/a2a `)

// TestHelloAnswersTheReadmeCurl builds hello, runs it with no configuration
// but SUPERVAIZER_ADDR=127.0.0.1:0 (it binds a free port, so no test picks a
// port for it), checks that the curl it prints names the address it bound,
// sends the README's curl for job.start there and expects status "ok", then
// stops it with SIGINT and expects exit status 0. It fails on the hello that
// printed 127.0.0.1:8080 whatever it bound (issue 29).
func TestHelloAnswersTheReadmeCurl(t *testing.T) {
	proc := proctest.Start(t, proctest.Build(t, "hello"), []string{"SUPERVAIZER_ADDR=127.0.0.1:0"})
	url := proc.AwaitURL(t)
	m := printedCurl.FindStringSubmatch(proc.Output())
	require.NotNil(t, m, "hello prints its curl before it serves\n%s", proc.Output())
	assert.Equal(t, url, "http://"+m[1], "the printed curl names the address hello bound")

	headers, body := readmeCurl(t)
	var status string
	proc.AwaitServing(t, "an answer to the README's curl", func() bool {
		req, err := http.NewRequest(http.MethodPost, "http://"+m[1]+"/a2a", strings.NewReader(body))
		require.NoError(t, err)
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		var out struct {
			Result struct {
				Status string `json:"status"`
			} `json:"result"`
			Error json.RawMessage `json:"error"`
		}
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
		_ = resp.Body.Close()
		require.Empty(t, out.Error, "output:\n%s", proc.Output())
		status = out.Result.Status
		return true
	})
	assert.Equal(t, "ok", status)
	text := proc.Output()
	assert.Contains(t, text, "try: curl", "hello announces how to call it")
	assert.Contains(t, text, "api_key=local-dev")
	assert.Contains(t, text, "mode=local")

	proc.Stop(t, syscall.SIGINT)
}

// TestHelloPrintsNoCurlWhenTheAddressIsTaken: with its address taken, hello
// exits with an error naming it and prints no curl, which would reach the
// server that holds the port. It fails on the hello that printed its curl
// before listening (issue 29).
func TestHelloPrintsNoCurlWhenTheAddressIsTaken(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = taken.Close() })
	proc := proctest.Start(t, proctest.Build(t, "hello"), []string{"SUPERVAIZER_ADDR=" + taken.Addr().String()})
	assert.Error(t, proc.Wait(t), "hello exits with an error")
	assert.Contains(t, proc.Output(), taken.Addr().String())
	assert.NotContains(t, proc.Output(), "try: curl")
}

// TestHelloNamesFewSDKNames: the smallest agent needs at most 13 distinct
// names of the SDK's packages (sv.X, a2ui.Y); methods are not counted. The
// 13th is sv.Server: the agent is built by a function its test calls too.
func TestHelloNamesFewSDKNames(t *testing.T) {
	main, err := os.ReadFile("main.go")
	require.NoError(t, err)
	names := map[string]bool{}
	for _, m := range regexp.MustCompile(`\b(?:sv|a2ui)\.[A-Z]\w*`).FindAllString(string(main), -1) {
		names[m] = true
	}
	assert.LessOrEqual(t, len(names), 13, "distinct SDK names in hello: %v", names)
}

// TestHelloStartIsIdempotent: the README's agent passes the conformance
// helper every agent runs on job.start, its handler reached twice.
func TestHelloStartIsIdempotent(t *testing.T) {
	srv, err := newServer()
	require.NoError(t, err)
	agent, ok := srv.Agent("hello-agent")
	require.True(t, ok)
	ts := svtest.NewTestServer(t, []*sv.Agent{agent})
	req := ts.Request("job.start", StartInput{Name: "Ada"})
	req.JobID, req.IdempotencyKey = "job-1", "k1"
	assert.True(t, svtest.AssertConfirmIdempotent(t, ts, req, svtest.RecommendedChecks(StartInput{Name: "Bob"})))
}
