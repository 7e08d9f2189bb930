package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

// syncBuffer collects a process's output.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestHelloAnswersTheReadmeCurl builds hello, runs it with no configuration
// (only SUPERVAIZER_ADDR, so the test does not depend on port 8080 being
// free), sends the README's own curl for job.start and expects status "ok",
// then stops it with SIGINT and expects exit status 0.
func TestHelloAnswersTheReadmeCurl(t *testing.T) {
	goTool, err := exec.LookPath("go")
	require.NoError(t, err, "the go tool is needed to build the binary")
	bin := filepath.Join(t.TempDir(), "hello")
	out, err := exec.CommandContext(t.Context(), goTool, "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "go build: %s", out)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())

	cmd := exec.Command(bin)
	cmd.Env = []string{"SUPERVAIZER_ADDR=" + addr}
	var logs syncBuffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	headers, body := readmeCurl(t)
	deadline := time.Now().Add(30 * time.Second)
	var status string
	for {
		req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/a2a", strings.NewReader(body))
		require.NoError(t, err)
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			var out struct {
				Result struct {
					Status string `json:"status"`
				} `json:"result"`
				Error json.RawMessage `json:"error"`
			}
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
			_ = resp.Body.Close()
			require.Empty(t, out.Error, "logs:\n%s", logs.String())
			status = out.Result.Status
			break
		}
		require.True(t, time.Now().Before(deadline), "hello does not answer within 30 s:\n%s", logs.String())
		time.Sleep(50 * time.Millisecond)
	}
	assert.Equal(t, "ok", status)
	text := logs.String()
	assert.Contains(t, text, "try: curl", "hello announces how to call it")
	assert.Contains(t, text, "api_key=local-dev")
	assert.Contains(t, text, "mode=local")

	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	select {
	case err := <-exited:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("exit status %d after SIGINT\n%s", ee.ExitCode(), logs.String())
		}
		require.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatalf("no exit within 20 s of SIGINT\n%s", logs.String())
	}
}
