package main

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/internal/tools/proctest"
)

// goTool runs the go command (or make) with args in dir, with CI's
// GOFLAGS=-mod=readonly added, and fails the test on an error.
func goTool(t *testing.T, dir, tool string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), tool, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS="+strings.TrimSpace(os.Getenv("GOFLAGS")+" -mod=readonly"))
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s %s in %s:\n%s", tool, strings.Join(args, " "), dir, out)
	return string(out)
}

// build builds the main package of dir into a temporary folder.
func build(t *testing.T, dir, name string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), name)
	goTool(t, dir, "go", "build", "-o", bin, ".")
	return bin
}

// fencedAfter returns the first ```lang block of the markdown file that
// comes after the text marker and contains want.
func fencedAfter(t *testing.T, file, marker, lang, want string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	s := string(b)
	i := strings.Index(s, marker)
	require.GreaterOrEqual(t, i, 0, "%s has no %q", file, marker)
	s = s[i:]
	open := "```" + lang + "\n"
	for {
		j := strings.Index(s, open)
		require.GreaterOrEqual(t, j, 0, "%s: no ```%s block containing %q after %q", file, lang, want, marker)
		s = s[j+len(open):]
		block, _, ok := strings.Cut(s, "```\n")
		require.True(t, ok, "unterminated block in %s", file)
		if strings.Contains(block, want) {
			return block
		}
	}
}

// lineWith returns the first line of block that starts with prefix.
func lineWith(t *testing.T, block, prefix string) string {
	t.Helper()
	for l := range strings.Lines(block) {
		if strings.HasPrefix(l, prefix) {
			return strings.TrimSpace(l)
		}
	}
	require.FailNow(t, "no line starting with "+prefix, block)
	return ""
}

var (
	curlHeader = regexp.MustCompile(`-H '([^:']+): ([^']*)'`)
	curlBody   = regexp.MustCompile(`-d '([^']*)'`)
	curlToken  = regexp.MustCompile(`-H "\$\(supervaizer token ([^)]*)\)"`)
)

// post sends a curl line's headers (plus extra) and body to url/a2a and
// returns the JSON-RPC result, failing on an error.
func post(t *testing.T, url, curl string, extra map[string]string) map[string]any {
	t.Helper()
	m := curlBody.FindStringSubmatch(curl)
	require.NotNil(t, m, "the curl has a -d body: %s", curl)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url+"/a2a", strings.NewReader(m[1]))
	require.NoError(t, err)
	for _, h := range curlHeader.FindAllStringSubmatch(curl, -1) {
		req.Header.Set(h[1], h[2])
	}
	for k, v := range extra {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var out struct {
		Result map[string]any  `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	require.Empty(t, out.Error)
	return out.Result
}

// TestNewAgentBuildsTestsAndAnswersItsReadme: supervaizer new writes an
// agent that builds with CI's GOFLAGS=-mod=readonly, whose make test passes,
// and which, run as make run runs it, answers its README's curl.
func TestNewAgentBuildsTestsAndAnswersItsReadme(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "my-agent")
	out, errOut, code := cli(t, "new", "-replace", repoRoot(t), dir)
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	assert.Contains(t, out, "ran go mod tidy")
	assert.FileExists(t, filepath.Join(dir, "go.sum"))

	testOut := goTool(t, dir, "make", "test")
	assert.Contains(t, testOut, "ok  \tmy-agent")
	readme, err := os.ReadFile(filepath.Join(dir, "README.md"))
	require.NoError(t, err)
	assert.Contains(t, string(readme), "```sh\nmake run\n```")
	assert.Contains(t, string(readme), "```sh\nmake test\n```")
	makefile, err := os.ReadFile(filepath.Join(dir, "Makefile"))
	require.NoError(t, err)
	assert.Contains(t, string(makefile), "SUPERVAIZER_LOCAL_MODE=$${SUPERVAIZER_LOCAL_MODE:-true}")

	bin := build(t, dir, "my-agent")
	proc := proctest.Start(t, bin, []string{"SUPERVAIZER_LOCAL_MODE=true", "SUPERVAIZER_ADDR=127.0.0.1:0", "SUPERVAIZER_DATA_DIR=" + t.TempDir()})
	url := proc.AwaitURL(t)
	curl := lineWith(t, fencedAfter(t, filepath.Join(dir, "README.md"), "## Run it", "sh", "curl"), "curl -s 127.0.0.1:8080/a2a ")
	res := post(t, url, curl, nil)
	assert.Equal(t, "ok", res["status"])
	assert.Equal(t, []any{map[string]any{"type": "job.started", "job_id": "job-1", "data": map[string]any{"greeting": "Hello, Ada"}}}, res["effects"])
	proc.Stop(t, syscall.SIGINT)
}

// TestTheExampleStandaloneAndChecked runs examples/research-agent in local
// mode and standalone with docs/deploying.md's variables (the key from
// keygen): the docs' curl with token's header is answered, and check passes
// every case against both (with -key standalone, so each bad token it mints
// is refused with the spec's code).
func TestTheExampleStandaloneAndChecked(t *testing.T) {
	t.Parallel()
	bin := build(t, filepath.Join(repoRoot(t), "examples", "research-agent"), "research-agent")
	deploying := filepath.Join(repoRoot(t), "docs", "deploying.md")

	t.Run("local", func(t *testing.T) {
		t.Parallel()
		proc := proctest.Start(t, bin, []string{"SUPERVAIZER_LOCAL_MODE=true", "SUPERVAIZER_ADDR=127.0.0.1:0", "SUPERVAIZER_DATA_DIR=" + t.TempDir()})
		url := proc.AwaitURL(t)
		code, cases, r := runCheckJSON(t, "-api-key", "local-dev", "-write", url)
		assert.Equal(t, 0, code)
		assert.Empty(t, failed(cases))
		assert.GreaterOrEqual(t, r.Passed, 20)
		proc.Stop(t, syscall.SIGTERM)
	})
	t.Run("standalone", func(t *testing.T) {
		t.Parallel()
		priv := keygen(t)
		pub, err := os.ReadFile(publicKeyFile(priv))
		require.NoError(t, err)
		env := []string{"SUPERVAIZER_DATA_DIR=" + t.TempDir()}
		for l := range strings.Lines(fencedAfter(t, deploying, "**Standalone**", "sh", "SUPERVAIZER_STUDIO_AGENT_ID=")) {
			l, _, _ = strings.Cut(l, "#")
			k, v, ok := strings.Cut(strings.TrimSpace(l), "=")
			require.True(t, ok, l)
			switch {
			case k == "SUPERVAIZER_ADDR":
				v = "127.0.0.1:0"
			case v == `"$(cat supervaizer-key.pub.pem)"`:
				v = string(pub)
			}
			env = append(env, k+"="+v)
		}
		proc := proctest.Start(t, bin, env)
		url := proc.AwaitURL(t)

		calls := fencedAfter(t, deploying, "**Standalone**", "sh", "supervaizer check")
		curl := lineWith(t, calls, "curl -s http://127.0.0.1:8080/a2a ")
		m := curlToken.FindStringSubmatch(curl)
		require.NotNil(t, m, "the docs' curl sends supervaizer token's header: %s", curl)
		out, errOut, code := cli(t, append([]string{"token", "-key", priv}, strings.Fields(m[1])...)...)
		require.Equal(t, 0, code, errOut)
		name, value, _ := strings.Cut(strings.TrimSpace(out), ": ")
		res := post(t, url, curl, map[string]string{name: value})
		assert.Equal(t, "job.start", res["surface"], "the token is accepted")

		args := strings.Fields(strings.TrimPrefix(lineWith(t, calls, "supervaizer check "), "supervaizer check "))
		for i, a := range args {
			switch a {
			case "supervaizer-key.pem":
				args[i] = priv
			case "http://127.0.0.1:8080":
				args[i] = url
			}
		}
		code, cases, _ := runCheckJSON(t, args...)
		assert.Equal(t, 0, code)
		assert.Empty(t, failed(cases))
		for _, n := range []string{"token.good", "token.missing", "token.expired", "token.wrong-audience", "token.wrong-scope", "token.other-workspace",
			"job.start:research-agent", "job.start.replay:research-agent", "job.start.conflict:research-agent", "events.heartbeat"} {
			assert.Equal(t, statusPass, cases[n].Status, "%s: %s", n, cases[n].Detail)
		}
		proc.Stop(t, syscall.SIGTERM)
	})
}
