package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/supervaize/supervaizer-go/contracts"
	svtest "github.com/supervaize/supervaizer-go/testing"
)

// The backends mode (-backends, make loadcheck-backends) measures the
// research agent where its state can live, side by side: in memory
// (SUPERVAIZER_STORE=memory), in the bbolt file (fsync on every write), in
// PostgreSQL with one instance, and in PostgreSQL with three instances
// sharing one schema (SUPERVAIZER_DATABASE_URL; the client spreads the calls
// over them in turn, as a round-robin load balancer would, without a proxy's
// own cost). Two calls:
//
//   - job.start with a new idempotency key and job id on every call: the
//     idempotency record (put-if-absent, then compare-and-swap to done), the
//     job record, the effect event appended to the shared event log;
//   - job.sync of one started job: a read of the job record, and its event.
//
// Every agent runs in a process of its own, attached to the fake Studio
// (real Ed25519 workspace tokens; one token per call kind, reused: a
// verifier cache hit). Rounds are interleaved over the setups. For each row
// it prints the requests per second, the CPU time per request of the agent
// processes and of the PostgreSQL server processes serving their
// connections (found by application_name in pg_stat_activity; the WAL
// writer and checkpointer are not counted), p50 and p99, each as the median
// and the range over the rounds, then a "loadcheck-backends-json: " line.
//
// The PostgreSQL rows need a server (-database-url; make loadcheck-backends
// passes SUPERVAIZER_TEST_DATABASE_URL) and psql on PATH, which lists the server
// processes and drops the schemas the run created.

// backendSetup is one place the state lives, with how many instances.
type backendSetup struct {
	name      string // memory, bbolt, postgres
	instances int
	env       map[string]string
	schema    string // PostgreSQL schema, "" for the others
	appPrefix string // application_name prefix of its database connections

	children []*child
	urls     []string // each instance's /a2a
}

// backendCall is one measured call.
type backendCall struct {
	name  string // job.start, job.sync
	token string
	body  func() []byte // the body of the next call
}

// backendResult is one round of one setup and call.
type backendResult struct {
	result
	dbCPU      time.Duration
	dbCPUKnown bool
}

// backendsPrefix names the job ids and idempotency keys of job.start calls.
const backendsPrefix = "lc-"

// runBackends runs the backends mode.
func runBackends(ctx context.Context, cfg config, dbURL string, out io.Writer) (failed bool, err error) {
	tmp, err := os.MkdirTemp("", "loadcheck-backends-")
	if err != nil {
		return false, err
	}
	tb := &harnessTB{}
	var setups []*backendSetup
	defer func() {
		for _, s := range setups {
			for _, c := range s.children {
				if cerr := c.stop(); cerr != nil && err == nil {
					err = cerr
				}
			}
			if s.schema != "" {
				if _, derr := psql(context.WithoutCancel(ctx), dbURL, "DROP SCHEMA IF EXISTS "+quoteIdent(s.schema)+" CASCADE"); derr != nil && err == nil {
					err = derr
				}
			}
		}
		tb.close()
		if rerr := os.RemoveAll(tmp); rerr != nil && err == nil {
			err = rerr
		}
	}()

	// With -profile, the agents are built with -tags pprof and serve their
	// profiles on a free loopback port each (profile.go).
	var tags []string
	if cfg.profileDir != "" {
		if err := os.MkdirAll(cfg.profileDir, 0o755); err != nil {
			return false, err
		}
		tags = []string{"-tags", "pprof"}
	}
	bin, err := buildResearchAgent(ctx, tmp, tags...)
	if err != nil {
		return false, err
	}
	var (
		studio *svtest.FakeStudio
		base   map[string]string
	)
	if err := guard(func() error {
		studio = svtest.NewFakeStudio(tb)
		api := svtest.NewFakeStudioAPI(tb, studio)
		base = researchEnv(tb, studio, api)
		if cfg.profileDir != "" {
			base["RESEARCH_AGENT_PPROF_ADDR"] = "127.0.0.1:0"
		}
		return nil
	}); err != nil {
		return false, err
	}

	setups = []*backendSetup{
		{name: "memory", instances: 1, env: map[string]string{"SUPERVAIZER_STORE": "memory"}},
		{name: "bbolt", instances: 1, env: map[string]string{"SUPERVAIZER_DATA_DIR": filepath.Join(tmp, "bbolt")}},
	}
	pgNote := ""
	switch {
	case dbURL == "":
		pgNote = "the PostgreSQL rows did not run: pass -database-url (make loadcheck-backends passes SUPERVAIZER_TEST_DATABASE_URL)"
	default:
		if _, err := exec.LookPath("psql"); err != nil {
			return false, errors.New("the PostgreSQL rows need psql on PATH (it lists the server processes and drops the schemas)")
		}
		run := randomHex()
		for _, n := range []int{1, 3} {
			schema := fmt.Sprintf("loadcheck_%s_%d", run, n)
			setups = append(setups, &backendSetup{name: "postgres", instances: n, schema: schema, appPrefix: schema + "-",
				env: map[string]string{"SUPERVAIZER_DATABASE_SCHEMA": schema}})
		}
	}
	for _, s := range setups {
		if err := s.start(ctx, bin, base, dbURL); err != nil {
			return false, err
		}
	}

	// One job for job.sync, started on each setup's first instance; the
	// tokens of both calls (the workspace, the agent and the action are
	// what a token binds: one per call kind serves every call).
	syncReq := researchRequest("job.sync", "lc-sync", "")
	startReq := researchRequest("job.start", "{ID}", "{ID}")
	startReq.Input = json.RawMessage(`{"topic_id":"eu-battery-market","depth":"deep"}`)
	var syncToken, startToken string
	if err := guard(func() error {
		syncToken, startToken = studio.TokenForAction(syncReq), studio.TokenForAction(startReq)
		return nil
	}); err != nil {
		return false, err
	}
	first := researchRequest("job.start", "lc-sync", "lc-sync")
	first.Input = startReq.Input
	for _, s := range setups {
		if _, err := probe(ctx, target{name: s.label(), url: s.urls[0], apiKey: researchKey}, actionBody(first), startToken); err != nil {
			return false, err
		}
	}
	startBody, err := newStartBodies(startReq)
	if err != nil {
		return false, err
	}
	syncBody := actionBody(syncReq)
	calls := []backendCall{
		{name: "job.start", token: startToken, body: startBody},
		{name: "job.sync", token: syncToken, body: func() []byte { return syncBody }},
	}

	fmt.Fprintf(out, "loadcheck -backends: %d concurrent requests, %d rounds of %v per setup and call, interleaved\n",
		cfg.concurrency, cfg.rounds, cfg.duration)
	fmt.Fprintf(out, "%s, %d CPUs; %s\n", runtime.Version(), runtime.NumCPU(), loadAverage())
	fmt.Fprintln(out, "every agent in a process of its own; the client and PostgreSQL share the machine")
	if pgNote != "" {
		fmt.Fprintln(out, pgNote)
	}
	fmt.Fprintln(out)

	rounds := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(rounds, "call\tstore\tinstances\tround\trequests\treq/s\tagent CPU µs/req\tPostgreSQL CPU µs/req\tp50\tp99\t")
	results := map[string][]backendResult{}
	// agentProfile names the CPU profile of s's first agent over a round.
	agentProfile := func(call string, s *backendSetup, round int) string {
		return profileFile(cfg.profileDir, call, strings.ReplaceAll(s.label(), " ", "-"), "agent", round)
	}
	for _, call := range calls {
		for _, s := range setups { // warm-up: connections, caches, the runtime
			s.round(ctx, cfg.concurrency, cfg.warmup, call)
		}
		for round := 1; round <= cfg.rounds; round++ {
			for _, s := range setups {
				profile := ""
				if cfg.profileDir != "" {
					profile = agentProfile(call.name, s, round)
				}
				r := s.measure(ctx, cfg.concurrency, cfg.duration, call, dbURL, profile)
				key := call.name + "\x00" + s.label()
				results[key] = append(results[key], r)
				fmt.Fprintf(rounds, "%s\t%s\t%d\t%d\t%d\t%.0f\t%s\t%s\t%s\t%s\t\n", call.name, s.name, s.instances, round,
					r.requests, r.rate(), perReq(r.cpu, r.cpuKnown, r.requests), perReq(r.dbCPU, r.dbCPUKnown, r.requests),
					ms(percentile(r.latencies, 0.50)), ms(percentile(r.latencies, 0.99)))
				if r.failure != nil {
					rounds.Flush()
					fmt.Fprintf(out, "\nFAILED: %s %s: %v\n", call.name, s.label(), r.failure)
					return true, nil
				}
			}
		}
	}
	rounds.Flush()
	if cfg.profileDir != "" { // every round ran: a failed one returned above
		fmt.Fprintf(out, "\nprofiles: %d CPU profiles (each setup's first instance, per call and measured round) in %s; e.g. go tool pprof -top %s\n"+
			"the profiler costs the agents some CPU: read a profiled run for where the time goes, not for its figures\n",
			len(calls)*cfg.rounds*len(setups), cfg.profileDir, agentProfile(calls[0].name, setups[0], 1))
	}

	fmt.Fprintln(out)
	sum := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(sum, "call\tstore\tinstances\treq/s\treq/s × memory\tagent CPU µs/req\tagent CPU × memory\tPostgreSQL CPU µs/req\tp50 ms\tp99 ms\t")
	var rows []backendSummary
	for _, call := range calls {
		memory := results[call.name+"\x00"+setups[0].label()] // setups[0] is the memory store
		for _, s := range setups {
			row := summarizeBackend(call.name, s, results[call.name+"\x00"+s.label()], memory)
			rows = append(rows, row)
			fmt.Fprintf(sum, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", row.Call, row.Store, row.Instances, row.Rate.format("%.0f"),
				row.RateToMemory.format("%.2f"), row.AgentCPU.format("%.0f"), row.AgentCPUToMemory.format("%.2f"),
				row.DBCPU.format("%.0f"), row.P50.format("%.2f"), row.P99.format("%.2f"))
		}
	}
	sum.Flush()
	printRelativeLines(out, rows)
	b, err := json.Marshal(rows)
	if err != nil {
		return false, err
	}
	fmt.Fprintf(out, "\nloadcheck-backends-json: %s\n", b)
	return false, ctx.Err()
}

// newStartBodies returns a source of job.start bodies for req, whose job id
// and idempotency key are both "{ID}": each body has a new job id and key,
// lc-1, lc-2, … (safe for concurrent use).
func newStartBodies(req contracts.ActionRequest) (func() []byte, error) {
	parts := bytes.Split(actionBody(req), []byte("{ID}"))
	if len(parts) != 3 {
		return nil, fmt.Errorf("job.start body template: want 2 placeholders, got %d", len(parts)-1)
	}
	var seq atomic.Int64
	return func() []byte {
		id := backendsPrefix + strconv.FormatInt(seq.Add(1), 10)
		return slices.Concat(parts[0], []byte(id), parts[1], []byte(id), parts[2])
	}, nil
}

// label names the setup in messages.
func (s *backendSetup) label() string { return fmt.Sprintf("%s x%d", s.name, s.instances) }

// start starts the setup's instances.
func (s *backendSetup) start(ctx context.Context, bin string, base map[string]string, dbURL string) error {
	for i := range s.instances {
		vars := map[string]string{"SUPERVAIZER_ADDR": "127.0.0.1:0"}
		for k, v := range base {
			vars[k] = v
		}
		for k, v := range s.env {
			vars[k] = v
		}
		if s.schema != "" {
			id := fmt.Sprintf("instance-%d", i+1)
			vars["SUPERVAIZER_INSTANCE_ID"] = id
			u, err := withPoolSettings(dbURL, s.appPrefix+id)
			if err != nil {
				return err
			}
			vars["SUPERVAIZER_DATABASE_URL"] = u
		}
		cmd := exec.Command(bin)
		cmd.Env = childEnv(cmd.Environ(), vars)
		c, err := startChild(ctx, "research agent ("+s.label()+")", cmd)
		if err != nil {
			return err
		}
		s.children = append(s.children, c)
		s.urls = append(s.urls, c.url+"/a2a")
	}
	return nil
}

// measure runs one round and adds the CPU time of the agent processes and
// of the PostgreSQL processes serving them. With profile, the CPU profile of
// the first instance over the round is written there; a failure to write it
// fails the round.
func (s *backendSetup) measure(ctx context.Context, concurrency int, dur time.Duration, call backendCall, dbURL, profile string) backendResult {
	var dbBefore map[int]time.Duration
	if s.schema != "" {
		dbBefore = s.serverCPU(ctx, dbURL)
	}
	wait := func() error { return nil }
	if profile != "" {
		wait = startProfile(ctx, s.children[0], dur, profile)
	}
	before, ok1 := s.agentCPU()
	r := backendResult{result: s.round(ctx, concurrency, dur, call)}
	after, ok2 := s.agentCPU()
	if err := wait(); err != nil && r.failure == nil {
		r.failure = err
	}
	if ok1 && ok2 {
		r.cpu, r.cpuKnown = after-before, true
	}
	if dbBefore != nil {
		for pid, cpu := range s.serverCPU(ctx, dbURL) {
			r.dbCPU += cpu - dbBefore[pid] // a connection opened during the round counts whole
		}
		r.dbCPUKnown = true
	}
	return r
}

// agentCPU is the CPU time the setup's processes have used so far.
func (s *backendSetup) agentCPU() (time.Duration, bool) {
	var sum time.Duration
	for _, c := range s.children {
		d, ok := c.cpuTime()
		if !ok {
			return 0, false
		}
		sum += d
	}
	return sum, true
}

// serverCPU returns the CPU time used so far by each PostgreSQL server
// process serving one of the setup's connections, by pid; nil when unknown.
func (s *backendSetup) serverCPU(ctx context.Context, dbURL string) map[int]time.Duration {
	// The pooled connections carry the setup's application_name; the event
	// log followers' own connections have the store's, and their last
	// statement names the schema.
	out, err := psql(ctx, dbURL, "SELECT pid FROM pg_stat_activity WHERE starts_with(application_name, '"+s.appPrefix+
		"') OR (application_name = 'supervaizer event log follower' AND position('"+s.schema+"' in query) > 0)")
	if err != nil {
		return nil
	}
	cpu := map[int]time.Duration{}
	for _, f := range strings.Fields(out) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", f, "stat"))
		if err != nil {
			continue // gone, or another machine's
		}
		if d, ok := parseStatCPU(string(b)); ok {
			cpu[pid] = d
		}
	}
	return cpu
}

// round drives the setup for dur with concurrency workers, sending the
// calls to its instances in turn, each worker on keep-alive connections of
// the raw HTTP/1.1 client (one per instance), closed when the round ends.
func (s *backendSetup) round(ctx context.Context, concurrency int, dur time.Duration, call backendCall) result {
	var next atomic.Int64
	var mu sync.Mutex
	var conns []*rawConn
	defer func() {
		for _, c := range conns {
			c.close()
		}
	}()
	return drive(ctx, concurrency, dur, func() workerCall {
		buf := make([]byte, 0, 4096)
		mine := make(map[string]*rawConn, len(s.urls))
		return func(ctx context.Context) (time.Duration, bool, error) {
			u := s.urls[int(next.Add(1))%len(s.urls)]
			conn := mine[u]
			if conn == nil {
				req, err := newRawRequest(target{name: "research agent", url: u, apiKey: researchKey}, nil)
				if err != nil {
					return 0, false, err
				}
				conn = newRawConn(req)
				mine[u] = conn
				mu.Lock()
				conns = append(conns, conn)
				mu.Unlock()
			}
			t0 := time.Now()
			status, out, err := conn.doBody(call.token, call.body(), buf[:0])
			buf = out
			switch {
			case err != nil:
				return 0, false, fmt.Errorf("%s: %w", call.name, err)
			case status != http.StatusOK || !bytes.Contains(buf, okResult):
				return 0, false, fmt.Errorf("%s: HTTP %d: %.300s", call.name, status, buf)
			}
			return time.Since(t0), true, nil
		}
	})
}

// backendSummary is one row of the summary, also written as JSON.
type backendSummary struct {
	Call      string  `json:"call"`
	Store     string  `json:"store"`
	Instances int     `json:"instances"`
	Rounds    int     `json:"rounds"`
	Rate      *spread `json:"rps,omitempty"`
	// RateToMemory and AgentCPUToMemory divide each round's figure by the
	// memory store's in the same round (rounds interleave the setups, so a
	// machine that slows for a while slows both): nil for the memory row.
	RateToMemory     *spread `json:"rps_to_memory,omitempty"`
	AgentCPU         *spread `json:"agent_cpu_us_per_req,omitempty"`
	AgentCPUToMemory *spread `json:"agent_cpu_to_memory,omitempty"`
	DBCPU            *spread `json:"postgres_cpu_us_per_req,omitempty"`
	P50              *spread `json:"p50_ms,omitempty"`
	P99              *spread `json:"p99_ms,omitempty"`
}

// summarizeBackend sums up the rounds of one call on one setup; memory
// holds the memory store's rounds of the same call.
func summarizeBackend(call string, s *backendSetup, rs, memory []backendResult) backendSummary {
	var rate, agent, db, p50, p99, rateRel, cpuRel []float64
	for i, r := range rs {
		rate = append(rate, r.rate())
		v, ok := r.cpuPerRequest()
		if ok {
			agent = append(agent, v)
		}
		if s.name != "memory" && i < len(memory) {
			if m := memory[i].rate(); m > 0 {
				rateRel = append(rateRel, r.rate()/m)
			}
			if m, mok := memory[i].cpuPerRequest(); ok && mok && m > 0 {
				cpuRel = append(cpuRel, v/m)
			}
		}
		if r.dbCPUKnown && r.requests > 0 {
			db = append(db, float64(r.dbCPU.Microseconds())/float64(r.requests))
		}
		p50 = append(p50, msf(percentile(r.latencies, 0.50)))
		p99 = append(p99, msf(percentile(r.latencies, 0.99)))
	}
	return backendSummary{Call: call, Store: s.name, Instances: s.instances, Rounds: len(rs),
		Rate: spreadOf(rate), RateToMemory: spreadOf(rateRel), AgentCPU: spreadOf(agent), AgentCPUToMemory: spreadOf(cpuRel),
		DBCPU: spreadOf(db), P50: spreadOf(p50), P99: spreadOf(p99)}
}

// relativeLine is one of issue 40's -backends lines read against the
// memory-store row of the issue's own table (memory: job.start 9,505 req/s;
// job.sync 18,727 req/s and 57 µs of agent CPU per call): a figure of that
// machine divided by its memory row, which a run on another machine can be
// held to through its own memory row.
type relativeLine struct {
	call, store string
	instances   int
	cpu         bool    // the agent CPU per call, else the rate
	want        float64 // at least (rate) or at most (CPU), × the memory row
	text        string  // the line and its arithmetic
}

var relativeLines = []relativeLine{
	{"job.start", "bbolt", 1, false, 3000.0 / 9505, "≥ 3,000 req/s of 9,505"},
	{"job.start", "postgres", 1, false, 1750.0 / 9505, "≥ 1,750 req/s of 9,505"},
	{"job.sync", "postgres", 1, false, 5000.0 / 18727, "≥ 5,000 req/s of 18,727"},
	{"job.sync", "postgres", 1, true, 120.0 / 57, "≤ 120 µs of 57"},
}

// printRelativeLines prints, for the rows the lines name, this
// run's figure relative to its memory row next to the line read the
// same way. It decides nothing: the lines are absolute.
func printRelativeLines(out io.Writer, rows []backendSummary) {
	fmt.Fprintln(out, "\nissue 40's -backends lines read against the memory store's row (the issue's table: job.start 9,505 req/s, job.sync 18,727 req/s and 57 µs),"+
		"\nnext to this run's rows against its own memory row, round by round (median [min–max]):")
	for _, l := range relativeLines {
		for _, r := range rows {
			if r.Call != l.call || r.Store != l.store || r.Instances != l.instances {
				continue
			}
			what, got, cmp := "req/s", r.RateToMemory, "≥"
			if l.cpu {
				what, got, cmp = "agent CPU", r.AgentCPUToMemory, "≤"
			}
			fmt.Fprintf(out, "  %s %s x%d %s: %s × memory (issue: %s, %s %.2f ×)\n",
				l.call, l.store, l.instances, what, got.format("%.2f"), l.text, cmp, l.want)
		}
	}
}

// perReq formats a CPU time per request in microseconds.
func perReq(cpu time.Duration, known bool, requests int) string {
	if !known || requests == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.1f", float64(cpu.Microseconds())/float64(requests))
}

// researchRequest is an action request of the research agent for the job.
func researchRequest(action, jobID, key string) contracts.ActionRequest {
	return contracts.ActionRequest{
		RequestID: "req-loadcheck-" + action, Actor: contracts.Actor{UserID: svtest.DefaultUserID},
		Workspace: contracts.WorkspaceRef{ID: svtest.DefaultWorkspaceID, Slug: svtest.DefaultWorkspaceSlug},
		MissionID: svtest.DefaultMissionID, AgentSlug: researchSlug, Surface: action, Action: action,
		JobID: jobID, IdempotencyKey: key,
	}
}

// goTool is the go command that builds the example (the -go flag).
var goTool = "go"

// buildResearchAgent builds examples/research-agent into dir, with the build
// flags given (-tags pprof for -profile), and returns the binary's path.
func buildResearchAgent(ctx context.Context, dir string, flags ...string) (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "research-agent")
	// The example is a module of its own: build it from its directory.
	build := exec.CommandContext(ctx, goTool, append(append([]string{"build"}, flags...), "-o", bin, ".")...)
	build.Dir = filepath.Join(root, "examples", "research-agent")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build examples/research-agent: %w\n%s", err, out)
	}
	return bin, nil
}

// backendPoolConns is the pool size of each PostgreSQL instance (the
// store's default is 16): the four PostgreSQL instances of a run, alive
// together, then hold at most 4 x 8 pooled connections and their followers,
// well within the max_connections (100 by default) of a server that other
// clients may share.
const backendPoolConns = 8

// withPoolSettings adds application_name and, unless the URL sets it,
// pool_max_conns (backendPoolConns) to a PostgreSQL URL.
func withPoolSettings(dbURL, name string) (string, error) {
	u, err := url.Parse(dbURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", errors.New("the database URL must be a postgres:// URL")
	}
	// Appended as is: re-encoding the query would turn its %20 into +,
	// which the driver does not read as a space.
	if u.RawQuery != "" {
		u.RawQuery += "&"
	}
	u.RawQuery += "application_name=" + url.PathEscape(name)
	if !u.Query().Has("pool_max_conns") {
		u.RawQuery += "&pool_max_conns=" + strconv.Itoa(backendPoolConns)
	}
	return u.String(), nil
}

// psql runs one SQL command with psql and returns its unaligned output.
func psql(ctx context.Context, dbURL, sql string) (string, error) {
	out, err := exec.CommandContext(ctx, "psql", "-X", "-A", "-t", "-q", "-v", "ON_ERROR_STOP=1", "-d", dbURL, "-c", sql).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("psql: %w: %s", err, bytes.TrimSpace(out))
	}
	return string(out), nil
}

// quoteIdent quotes a PostgreSQL identifier.
func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// randomHex returns 8 random hex digits.
func randomHex() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
