package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	supervaizer "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/contracts"
	svtest "github.com/supervaize/supervaizer-go/testing"
)

// The realistic case: examples/research-agent, built as its users build it,
// runs as its own process attached to svtest's fake Studio (server.register,
// handshake, real Ed25519 workspace tokens, a bbolt store in a temporary
// folder). One job is started; the measured call is job.sync on that job,
// which reads the job from the store and answers its job_state (the job, the
// setup case, the awaiting review step with its fields, the display texts).

// researchSlug is the research agent's slug; researchJobID the measured job.
const (
	researchSlug  = "research-agent"
	researchJobID = "job-loadcheck-1"
	researchKey   = "loadcheck-research-api-key-0123456789"
)

// harnessTB is the testing.TB the svtest fakes report to outside a test. The
// fakes call only Helper, Cleanup and Fatalf; the embedded interface is never
// called (it is nil) and only makes the type a testing.TB.
type harnessTB struct {
	testing.TB
	mu       sync.Mutex
	cleanups []func()
}

func (*harnessTB) Helper() {}

func (h *harnessTB) Cleanup(f func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cleanups = append(h.cleanups, f)
}

// harnessFailure is the panic value of Fatalf, recovered by [guard].
type harnessFailure struct{ err error }

func (*harnessTB) Fatalf(format string, args ...any) {
	panic(harnessFailure{fmt.Errorf(format, args...)})
}

// close runs the cleanups, last registered first.
func (h *harnessTB) close() {
	h.mu.Lock()
	fs := h.cleanups
	h.cleanups = nil
	h.mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}

// guard turns a Fatalf of the fakes during fn into an error.
func guard(fn func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			f, ok := v.(harnessFailure)
			if !ok {
				panic(v)
			}
			err = f.err
		}
	}()
	return fn()
}

// researchAgent is the running example and what calls to it need.
type researchAgent struct {
	tb     *harnessTB
	studio *svtest.FakeStudio
	child  *child
	dir    string
	sync   contracts.ActionRequest // job.sync of the started job
}

// moduleRoot returns the folder of this module's go.mod, from the working
// directory up.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil &&
			strings.HasPrefix(string(b), "module github.com/supervaize/supervaizer-go\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("run it inside the supervaizer-go module (no go.mod of github.com/supervaize/supervaizer-go above the working directory)")
		}
		dir = parent
	}
}

// agentBuildFlags returns the go build flags of the research agent: its
// build tags (comma-separated, may be empty), and pprof when profiled.
func agentBuildFlags(profiled bool, tags string) []string {
	var all []string
	for t := range strings.SplitSeq(tags, ",") {
		if t = strings.TrimSpace(t); t != "" && !slices.Contains(all, t) {
			all = append(all, t)
		}
	}
	if profiled && !slices.Contains(all, "pprof") {
		all = append(all, "pprof")
	}
	if len(all) == 0 {
		return nil
	}
	return []string{"-tags", strings.Join(all, ",")}
}

// startResearchAgent builds the example with the build tags tags
// (comma-separated, may be empty), starts it attached to a new fake Studio
// and starts one job. With profiled, the example is also built with the
// pprof tag and serves its profiles on a free loopback port (profile.go).
func startResearchAgent(ctx context.Context, profiled bool, tags string) (_ *researchAgent, err error) {
	ra := &researchAgent{tb: &harnessTB{}}
	defer func() {
		if err != nil {
			ra.close()
		}
	}()
	ra.dir, err = os.MkdirTemp("", "loadcheck-research-agent-")
	if err != nil {
		return nil, err
	}
	bin, err := buildResearchAgent(ctx, ra.dir, agentBuildFlags(profiled, tags)...)
	if err != nil {
		return nil, err
	}

	var vars map[string]string
	if err := guard(func() error {
		ra.studio = svtest.NewFakeStudio(ra.tb)
		api := svtest.NewFakeStudioAPI(ra.tb, ra.studio)
		vars = researchEnv(ra.tb, ra.studio, api)
		vars["SUPERVAIZER_ADDR"] = "127.0.0.1:0"
		vars["SUPERVAIZER_DATA_DIR"] = filepath.Join(ra.dir, "data")
		if profiled {
			vars["RESEARCH_AGENT_PPROF_ADDR"] = "127.0.0.1:0"
		}
		return nil
	}); err != nil {
		return nil, err
	}
	cmd := exec.Command(bin)
	cmd.Env = childEnv(cmd.Environ(), vars)
	ra.child, err = startChild(ctx, "research agent", cmd)
	if err != nil {
		return nil, err
	}

	start := researchRequest("job.start", researchJobID, "")
	start.Input = json.RawMessage(`{"depth":"deep","topic_id":"eu-battery-market"}`)
	tgt := ra.target()
	var token string
	if err := guard(func() error { token = ra.studio.TokenForAction(start); return nil }); err != nil {
		return nil, err
	}
	if _, err := probe(ctx, tgt, actionBody(start), token); err != nil {
		return nil, fmt.Errorf("research agent: job.start: %w", err)
	}
	ra.sync = researchRequest("job.sync", researchJobID, "")
	return ra, nil
}

// researchEnv is the environment of a research agent attached to studio
// through api, serving researchKey and requiring workspace tokens.
func researchEnv(tb testing.TB, studio *svtest.FakeStudio, api *svtest.FakeStudioAPI) map[string]string {
	env := map[string]string{
		"SUPERVAIZER_API_KEY":                   researchKey,
		"SUPERVAIZER_SERVER_ID":                 studio.ServerID(),
		"SUPERVAIZER_PUBLIC_URL":                "http://127.0.0.1:8080",
		"SUPERVAIZER_PRIVATE_KEY":               svtest.ControllerKeyPEM(tb),
		"SUPERVAIZER_WORKSPACE_AUTH_REQUIRED":   "true",
		"SUPERVAIZER_WORKSPACE_AUTH_ISSUER":     studio.Issuer(),
		"SUPERVAIZER_WORKSPACE_AUTH_PUBLIC_KEY": studio.PublicKeyPEM(),
	}
	for k, v := range api.Env() { // SUPERVAIZE_API_URL, SUPERVAIZE_API_KEY, SUPERVAIZE_WORKSPACE_ID
		env[k] = v
	}
	return env
}

// childEnv is the environment of the agent process: base (the command's
// default, this process's), without any Supervaizer or Studio setting, plus
// vars.
func childEnv(base []string, vars map[string]string) []string {
	var env []string
	for _, kv := range base {
		if !strings.HasPrefix(kv, "SUPERVAIZE") {
			env = append(env, kv)
		}
	}
	for k, v := range vars {
		env = append(env, k+"="+v)
	}
	return env
}

// target is the agent's /a2a endpoint.
func (ra *researchAgent) target() target {
	return target{name: "research agent", url: ra.child.url + "/a2a", apiKey: researchKey}
}

// syncBody is the JSON-RPC body of the measured job.sync call.
func (ra *researchAgent) syncBody() []byte { return actionBody(ra.sync) }

// tokens mints n distinct valid tokens for the job.sync call.
func (ra *researchAgent) tokens(n int) ([]string, error) {
	out := make([]string, n)
	err := guard(func() error {
		c := ra.studio.ActionClaims(ra.sync)
		for i := range out {
			c.JTI = "loadcheck-" + strconv.Itoa(i)
			out[i] = ra.studio.Mint(c)
		}
		return nil
	})
	return out, err
}

// close stops the agent, the fakes and removes the temporary folder.
func (ra *researchAgent) close() error {
	var errs []error
	if ra.child != nil {
		errs = append(errs, ra.child.stop())
	}
	ra.tb.close()
	if ra.dir != "" {
		errs = append(errs, os.RemoveAll(ra.dir))
	}
	return errors.Join(errs...)
}

// actionBody is the JSON-RPC body of supervaizer/action.invoke for req, in
// the wrapped form Studio sends.
func actionBody(req contracts.ActionRequest) []byte {
	b, err := contracts.Marshal(map[string]any{
		"jsonrpc": "2.0", "id": "rpc-" + req.RequestID, "method": supervaizer.MethodActionInvoke,
		"params": map[string]any{"action_request": req},
	})
	if err != nil { // unreachable: every field is a plain value
		panic(err)
	}
	return b
}
