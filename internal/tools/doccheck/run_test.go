package doccheck

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/doc/comment"
	"go/parser"
	"go/scanner"
	"go/token"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	sv "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/internal/tools/proctest"
)

// Every complete Go file of README.md, docs/*.md and the package comments is
// run, as what it is:
//
//   - a file of tests (a package other than main declaring a Test function)
//     runs with go test;
//   - a program that serves (it calls Serve or ListenAndServe) is built and
//     started in local mode on a free port (SUPERVAIZER_ADDR=127.0.0.1:0,
//     SUPERVAIZER_LOCAL_MODE=true, a data folder of the test), and must answer
//     the call its text gives: the curl it prints, else the first curl after
//     the block in its document, sent to the address it bound; then it is
//     stopped with SIGTERM and must exit with status 0;
//   - a program that does not serve is a client: it runs against an agent of
//     the test (the docs' research agent: job.start with a topic_id) at the
//     address it names or in REMOTE_AGENT_URL (see runClient), and must exit
//     with status 0;
//   - a program that neither serves nor calls an agent (it names no agent
//     address and imports no HTTP package: docs/envelopes.md's scripted
//     models) runs on its own, and must print and exit with status 0;
//   - any other package is a library: the blocks of one document declaring
//     the same package are compiled together with the companion test
//     testdata/<document>-<package>_test.go, which calls them.
//
// Package-comment blocks that are fragments (not complete files) run inside
// a test of their package: see TestPackageDocFragmentsRun.

// runBlocks runs every block, grouped as described above.
func runBlocks(t *testing.T, root string, blocks []block) {
	t.Helper()
	libraries := map[string][]block{} // document and package -> its blocks
	var order []string
	for _, b := range blocks {
		name := blockName(root, b)
		pkg := packageName(t, b.code)
		switch {
		case pkg != "main" && strings.Contains(b.code, "\nfunc Test"):
			t.Run(name, func(t *testing.T) { goTest(t, root, b.code) })
		case pkg == "main" && serves(b.code):
			t.Run(name, func(t *testing.T) { runServer(t, root, b) })
		case pkg == "main" && standalone(b.code):
			t.Run(name, func(t *testing.T) { runStandalone(t, root, b) })
		case pkg == "main":
			t.Run(name, func(t *testing.T) { runClient(t, root, b) })
		default:
			k := strings.TrimSuffix(filepath.Base(b.file), ".md") + "-" + pkg
			if libraries[k] == nil {
				order = append(order, k)
			}
			libraries[k] = append(libraries[k], b)
		}
	}
	for _, k := range order {
		t.Run(k, func(t *testing.T) {
			companion, err := os.ReadFile(filepath.Join(root, "internal", "tools", "doccheck", "testdata", k+"_test.go"))
			require.NoError(t, err, "the library blocks %s run only through a companion test: write testdata/%s_test.go", k, k)
			var src []string
			for _, b := range libraries[k] {
				src = append(src, b.code)
			}
			goTest(t, root, string(companion), src...)
		})
	}
}

func blockName(root string, b block) string {
	return fmt.Sprintf("%s:%d", strings.TrimPrefix(b.file, root+string(filepath.Separator)), b.line)
}

var packageClause = regexp.MustCompile(`(?m)^package (\w+)`)

func packageName(t *testing.T, code string) string {
	m := packageClause.FindStringSubmatch(code)
	require.NotNil(t, m, "a complete file has a package clause:\n%s", code)
	return m[1]
}

// serves reports whether a program serves (else it is a client).
func serves(code string) bool {
	return strings.Contains(code, ".ListenAndServe(") || strings.Contains(code, ".Serve(")
}

// blockDir writes files into a fresh package folder under
// internal/tools/doccheck (ignored by git, removed when the test ends) and
// returns its import path relative to root ("./internal/...").
func blockDir(t *testing.T, root string, files map[string]string) string {
	t.Helper()
	dir, err := os.MkdirTemp(filepath.Join(root, "internal", "tools", "doccheck"), "blocks-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	for name, code := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(code), 0o600))
	}
	return "./internal/tools/doccheck/" + filepath.Base(dir)
}

// goTool runs the go command in root and returns its combined output.
func goTool(t *testing.T, root string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "go", args...)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go %s:\n%s", strings.Join(args, " "), out)
	return string(out)
}

// goTest runs the test file test, with the library files src in its package.
func goTest(t *testing.T, root, test string, src ...string) {
	t.Helper()
	files := map[string]string{"doc_test.go": test}
	for i, s := range src {
		files[fmt.Sprintf("doc%d.go", i)] = s
	}
	out := goTool(t, root, "test", "-count=1", "-v", blockDir(t, root, files))
	require.Regexp(t, `(?m)^--- PASS: Test`, out, "at least one test ran")
	require.NotRegexp(t, `(?m)^\s*--- SKIP`, out, "every test of the block runs")
}

// build builds the program code and returns the binary's path.
func build(t *testing.T, root, code string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "doc-program")
	goTool(t, root, "build", "-o", bin, blockDir(t, root, map[string]string{"main.go": code}))
	return bin
}

// programEnv is the whole environment of a program run by the doc check:
// local mode, a free port, a data folder of the test.
func programEnv(t *testing.T) []string {
	return []string{"SUPERVAIZER_ADDR=127.0.0.1:0", "SUPERVAIZER_LOCAL_MODE=true",
		"SUPERVAIZER_DATA_DIR=" + t.TempDir(), "HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH")}
}

// curlLine matches a curl command: the URL (host:port/path, with or without
// http://), then its options.
var curlLine = regexp.MustCompile(`curl (?:-\w+ )*(?:http://)?([\w.]+:\d+)(/\S*) (.*)`)

// docCurl returns the first curl of the document after the block, up to the
// next Go block, or "" when there is none.
func docCurl(t *testing.T, b block) string {
	t.Helper()
	if !strings.HasSuffix(b.file, ".md") {
		return pkgDocCurl(t, b)
	}
	text, err := os.ReadFile(b.file)
	require.NoError(t, err)
	lines := strings.Split(string(text), "\n")
	inGo := true // the block itself
	for _, l := range lines[b.line:] {
		switch {
		case inGo && strings.TrimSpace(l) == "```":
			inGo = false
		case !inGo && strings.HasPrefix(strings.TrimSpace(l), "```go"):
			return ""
		case !inGo && curlLine.MatchString(l):
			return strings.TrimSpace(l)
		}
	}
	return ""
}

// pkgDocCurl returns the first curl of the package comment's code blocks
// after the block, up to the next Go file.
func pkgDocCurl(t *testing.T, b block) string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), b.file, nil, parser.ParseComments|parser.PackageClauseOnly)
	require.NoError(t, err)
	var p comment.Parser
	after := false
	for _, c := range p.Parse(f.Doc.Text()).Content {
		code, ok := c.(*comment.Code)
		switch {
		case !ok:
		case code.Text == b.code:
			after = true
		case after && isGoFile(code.Text):
			return ""
		case after:
			if l := curlLine.FindString(code.Text); l != "" {
				return l
			}
		}
	}
	return ""
}

// sendCurl sends the curl command line to base (http://host:port) instead of
// the address it names: its -H headers and its -d body, as POST when it has a
// body.
func sendCurl(t *testing.T, base, line string) (*http.Response, error) {
	t.Helper()
	m := curlLine.FindStringSubmatch(line)
	require.NotNil(t, m, "not a curl: %s", line)
	method, body := http.MethodGet, ""
	if d := regexp.MustCompile(`-d '([^']*)'`).FindStringSubmatch(m[3]); d != nil {
		method, body = http.MethodPost, d[1]
	}
	req, err := http.NewRequestWithContext(t.Context(), method, base+m[2], strings.NewReader(body))
	require.NoError(t, err)
	for _, h := range regexp.MustCompile(`-H '([^:']+): ([^']*)'`).FindAllStringSubmatch(m[3], -1) {
		req.Header.Set(h[1], h[2])
	}
	return http.DefaultClient.Do(req)
}

// printedCurl matches a curl a program prints.
var printedCurl = regexp.MustCompile(`curl \S+ \S+/a2a .*`)

// runServer starts the serving program of b and sends it its call.
func runServer(t *testing.T, root string, b block) {
	proc := proctest.Start(t, build(t, root, b.code), programEnv(t))
	url := proc.AwaitURL(t)
	call := printedCurl.FindString(proc.Output())
	if call == "" {
		call = docCurl(t, b)
	}
	require.NotEmpty(t, call, "%s: the program prints no curl and none follows it in its document: say how to call it", blockName(root, b))
	var answer struct {
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	proc.AwaitServing(t, "an answer to "+call, func() bool {
		resp, err := sendCurl(t, url, call)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&answer))
		return true
	})
	require.Empty(t, answer.Error, "the call is answered with an error\noutput:\n%s", proc.Output())
	var result struct {
		Status string `json:"status"`
		Kind   string `json:"kind"` // an A2A 0.3 answer (message/send): a message or a task
	}
	require.NoError(t, json.Unmarshal(answer.Result, &result))
	if result.Kind != "" {
		assert.Contains(t, []string{"message", "task"}, result.Kind, "result: %s", answer.Result)
	} else {
		assert.Equal(t, "ok", result.Status, "result: %s", answer.Result)
	}
	proc.Stop(t, syscall.SIGTERM)
}

// standalone reports whether a program that does not serve calls no agent
// either: it names no agent address and imports no HTTP package.
func standalone(code string) bool {
	return !strings.Contains(code, docsAgentURL) && !strings.Contains(code, envRemoteURL) && !strings.Contains(code, `"net/http"`)
}

// runStandalone runs the program of b, which calls nothing: it must print
// and exit with status 0.
func runStandalone(t *testing.T, root string, b block) {
	bin := build(t, root, b.code)
	ctx, cancel := context.WithTimeout(t.Context(), proctest.ServeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin)
	cmd.Env = programEnv(t)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "stderr:\n%s", stderr.String())
	assert.NotEmpty(t, stdout.String(), "the program prints what it did")
}

// docsAgentURL is the address the docs' client programs call.
const docsAgentURL = "http://localhost:8080"

// Variables of a delegating client (docs/delegating.md): the remote agent's
// https URL and its API key.
const (
	envRemoteURL = "REMOTE_AGENT_URL"
	envRemoteKey = "REMOTE_AGENT_KEY"
)

// runClient runs the client program of b against the docs' research agent,
// served by the test: at the address the program names (docsAgentURL), or
// given in REMOTE_AGENT_URL to a program that reads it. The SDK's A2A client
// connects only to https agents that are not on loopback, so such a program
// must then report that it refused the test agent's loopback address (it ran
// through discovery's dial guard); with REMOTE_AGENT_URL set in the test's
// environment (an https agent, its key in REMOTE_AGENT_KEY) it runs against
// that agent and must not report a refusal.
func runClient(t *testing.T, root string, b block) {
	remote := strings.Contains(b.code, `os.Getenv("`+envRemoteURL+`")`)
	require.True(t, remote || strings.Contains(b.code, docsAgentURL),
		"a client block calls the docs' agent at %s or at $%s", docsAgentURL, envRemoteURL)
	hs := httptest.NewServer(docsAgent(t))
	t.Cleanup(hs.Close)
	env := programEnv(t)
	external := os.Getenv(envRemoteURL)
	switch {
	case remote && external != "":
		env = append(env, envRemoteURL+"="+external, envRemoteKey+"="+os.Getenv(envRemoteKey))
	case remote:
		env = append(env, envRemoteURL+"="+hs.URL, envRemoteKey+"="+sv.LocalModeAPIKey)
	}
	bin := build(t, root, strings.ReplaceAll(b.code, docsAgentURL, hs.URL))
	ctx, cancel := context.WithTimeout(t.Context(), proctest.ServeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin)
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "stderr:\n%s", stderr.String())
	out := stdout.String()
	switch {
	case remote && external == "":
		assert.Regexp(t, `(?i)loopback`, out, "the client refuses the test agent's loopback address")
	case remote:
		assert.NotRegexp(t, `(?i)cannot|refused`, out, "the client delegates to %s", external)
	default:
		// The docs' clients print what they got, words such as a task's id and
		// state: a field left empty by an answer of another shape leaves a gap.
		assert.Regexp(t, `^\S+( \S+)*\n$`, out, "the client prints what it got")
	}
	t.Logf("%s printed:\n%s", blockName(root, b), out)
}

// researchInput is job.start's input in the docs' examples.
type researchInput struct {
	TopicID string `json:"topic_id" sv:"nonblank"`
}

// docsAgent is the research agent the docs' clients call, in local mode:
// job.start starts a job and returns its job_state (A2A clients get a Task).
func docsAgent(t *testing.T) http.Handler {
	t.Helper()
	srv, err := sv.New(sv.AgentSpec{Name: "Research Agent", Version: "1.0.0"}, sv.WithLocalMode(true),
		sv.WithEnv(func(string) string { return "" }))
	require.NoError(t, err)
	sv.HandleActionFor(srv, "job.start", func(ctx context.Context, req *sv.ActionRequest, in researchInput) (*sv.ActionResult, error) {
		res := sv.OK(sv.JobStarted(req.JobID, map[string]any{"topic_id": in.TopicID}))
		res.JobState = &sv.JobState{Job: sv.Job{ID: req.JobID, AgentSlug: req.AgentSlug, MissionID: req.MissionID,
			Status: "running", Source: sv.JobSource{Type: "fresh_start"}}}
		return res, nil
	})
	require.NoError(t, srv.Start(t.Context()))
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	return srv
}

// TestDocsRun runs every complete Go file of README.md and docs/*.md.
func TestDocsRun(t *testing.T) {
	root := repoRoot(t)
	runBlocks(t, root, markdownGoBlocks(t, root))
}

// TestPackageDocsRun runs every package-comment block that is a complete Go
// file (doc.go's quick start).
func TestPackageDocsRun(t *testing.T) {
	root := repoRoot(t)
	var files []block
	for _, b := range pkgDocBlocks(t, root) {
		if isGoFile(b.code) {
			files = append(files, b)
		}
	}
	require.NotEmpty(t, files)
	runBlocks(t, root, files)
}

// TestPackageDocFragmentsRun: every package-comment block that is Go but not
// a complete file (a fragment, such as a2ui's form) runs inside a test of its
// package: its lines appear, in order, in one Test, Example, Benchmark or
// Fuzz function of a _test.go file of the same folder (compared as Go
// tokens, comments and spacing aside; other lines may come between them, such
// as the checks of the errors a fragment leaves to its reader). An import
// fragment appears in the imports of such a file. Nested modules are checked
// too: their tests run in their own module (store/postgres's with
// SUPERVAIZER_TEST_DATABASE_URL, as its other tests).
func TestPackageDocFragmentsRun(t *testing.T) {
	root := repoRoot(t)
	n := 0
	for _, b := range allPkgDocBlocks(t, root) {
		code := strings.TrimSpace(b.code)
		if isGoFile(code) || !looksLikeGo(code) {
			continue
		}
		n++
		t.Run(blockName(root, b), func(t *testing.T) {
			where, ok := fragmentRuns(t, filepath.Dir(b.file), b.code)
			require.True(t, ok, "no test of %s runs this fragment of its package comment: "+
				"write a Test or Example function holding its lines in order\n%s", filepath.Dir(b.file), b.code)
			t.Logf("runs in %s", where)
		})
	}
	require.NotZero(t, n)
}

// lineTokens returns the Go tokens of each line of code (comments and
// semicolons left out), without the lines that hold none.
func lineTokens(code string) [][]string {
	var out [][]string
	for _, l := range strings.Split(code, "\n") {
		if toks := goTokens(l); len(toks) > 0 {
			out = append(out, toks)
		}
	}
	return out
}

// goTokens scans src as Go: each token as "kind literal", without comments
// and semicolons.
func goTokens(src string) []string {
	var s scanner.Scanner
	fset := token.NewFileSet()
	f := fset.AddFile("", fset.Base(), len(src))
	s.Init(f, []byte(src), func(token.Position, string) {}, 0)
	var out []string
	for {
		_, tok, lit := s.Scan()
		switch tok {
		case token.EOF:
			return out
		case token.SEMICOLON, token.COMMENT:
			continue
		}
		if lit == "" {
			lit = tok.String()
		}
		out = append(out, tok.String()+" "+lit)
	}
}

// fragmentRuns reports whether a test function (or the imports) of a
// _test.go file of dir holds the lines of code in order, and where.
func fragmentRuns(t *testing.T, dir, code string) (string, bool) {
	t.Helper()
	want := lineTokens(code)
	imports := importsOf(code)
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	require.NoError(t, err)
	for _, path := range files {
		src, err := os.ReadFile(path)
		require.NoError(t, err)
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
		require.NoError(t, err)
		if imports != nil {
			if !slices.ContainsFunc(imports, func(want string) bool {
				return !slices.ContainsFunc(f.Imports, func(s *ast.ImportSpec) bool { return importString(s) == want })
			}) {
				return filepath.Base(path) + ": imports", true
			}
			continue
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv != nil || !testFunc.MatchString(fd.Name.Name) {
				continue
			}
			body := goTokens(string(src[fset.Position(fd.Pos()).Offset:fset.Position(fd.End()).Offset]))
			if holdsInOrder(body, want) {
				return filepath.Base(path) + ": " + fd.Name.Name, true
			}
		}
	}
	return "", false
}

// importsOf returns the imports of a fragment made of import declarations
// only (as importString writes them), else nil.
func importsOf(code string) []string {
	f, err := parser.ParseFile(token.NewFileSet(), "", "package p\n"+code, parser.SkipObjectResolution)
	if err != nil || len(f.Imports) == 0 || len(f.Decls) != len(declsOf(f, token.IMPORT)) {
		return nil
	}
	var out []string
	for _, s := range f.Imports {
		out = append(out, importString(s))
	}
	return out
}

func declsOf(f *ast.File, tok token.Token) []ast.Decl {
	var out []ast.Decl
	for _, d := range f.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == tok {
			out = append(out, d)
		}
	}
	return out
}

// importString is an import spec as "name path" (name empty when none).
func importString(s *ast.ImportSpec) string {
	name := ""
	if s.Name != nil {
		name = s.Name.Name
	}
	return name + " " + s.Path.Value
}

var testFunc = regexp.MustCompile(`^(Test|Example|Benchmark|Fuzz)`)

// holdsInOrder reports whether each token run of lines appears in body,
// contiguous, after the previous one.
func holdsInOrder(body []string, lines [][]string) bool {
	at := 0
next:
	for _, l := range lines {
		for i := at; i+len(l) <= len(body); i++ {
			if slices.Equal(body[i:i+len(l)], l) {
				at = i + len(l)
				continue next
			}
		}
		return false
	}
	return true
}

// allPkgDocBlocks is pkgDocBlocks of the module and of every nested module.
func allPkgDocBlocks(t *testing.T, root string) []block {
	t.Helper()
	blocks := pkgDocBlocks(t, root)
	mods, err := nestedModules(root)
	require.NoError(t, err)
	for _, m := range mods {
		blocks = append(blocks, pkgDocBlocks(t, m)...)
	}
	return blocks
}

// nestedModules returns the folders under root holding a go.mod of their own.
func nestedModules(root string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if n := d.Name(); path != root && (n == "testdata" || n == "node_modules" || strings.HasPrefix(n, ".")) {
			return filepath.SkipDir
		}
		if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil && path != root {
			out = append(out, path)
		}
		return nil
	})
	return out, err
}
