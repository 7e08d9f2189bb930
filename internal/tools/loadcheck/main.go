// Command loadcheck compares the controller with a bare net/http baseline
// over loopback, on two cases:
//
//   - job.sync: examples/research-agent, built and run as its own process,
//     attached to svtest's fake Studio (registration handshake, real Ed25519
//     workspace tokens, its bbolt store), answering job.sync on a started job
//     with the job's job_state read from its store: the realistic case;
//   - fixture: the small in-process fixture controller of package fixture
//     (a typed job.start answering one effect), served by a child process.
//
// Each case runs in two token modes: one workspace token reused by every
// request (a verifier cache hit), then a distinct, never seen token per
// request (a full Ed25519 verification each time; the tokens are minted
// before the round so the signing cost stays out of it). The baseline is a
// bare net/http + encoding/json JSON-RPC endpoint in a process of its own
// that decodes the same body and writes the controller's own answer. Fresh
// rounds also drive a verifying baseline, the same endpoint checking each
// token's signature with ed25519.Verify and the fake Studio's public key
// (nothing else: no claims, no cache), with the same never-seen tokens: its
// CPU above the baseline's is one signature check under that load, and its
// rate over the baseline's the ceiling of the fresh-token ratio.
//
// Rounds are interleaved (controller, baseline, controller, …) with the same
// concurrency and duration. For every case and mode it prints requests per
// second, the server's CPU time per request (read from /proc/<pid>/stat of
// the server process, so the client's share is not in it), p50 and p99, the
// throughput ratio controller/baseline and the p99 ratio, each as the median
// and the spread (min–max) over the rounds, then one line starting with
// "loadcheck-json: " holding the same figures as JSON.
//
// It exits with status 1 when any request fails (not HTTP 200, or a JSON-RPC
// error), 2 on a usage or setup error. Run it with `make loadcheck`.
//
// Usage:
//
//	go run ./internal/tools/loadcheck [-concurrency 32] [-duration 3s] [-rounds 3] [-cases job.sync,fixture] [-profile DIR]
//
// With -profile DIR, every server serves net/http/pprof on a loopback port
// and each measured round writes its server's CPU profile to DIR (see
// profile.go).
//
// With -backends it measures the research agent on each store instead (see
// backends.go; make loadcheck-backends):
//
//	go run ./internal/tools/loadcheck -backends [-database-url postgres://…] [-concurrency 32] [-duration 3s] [-rounds 3]
package main

import (
	"context"
	"crypto/ed25519"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/supervaize/supervaizer-go/internal/tools/loadcheck/fixture"
	"github.com/supervaize/supervaizer-go/internal/tools/pprofserve"
)

// Targets on the reference 2-core machine (issue 40): throughput ratios, the
// p99 of the controller at most 1.5 times the baseline's, the server CPU of
// a reused-token request at most 15 µs above the baseline's of the same round, and that of a
// fresh-token request at most 10 µs above the reused one's plus
// ed25519.Verify alone (measured before each fresh round: verifyFloor); the controller's
// resident memory after its rounds at most 32 MiB (printed beside what each
// process held before the load).
const (
	targetReused    = 0.85
	targetFresh     = 0.45
	targetP99       = 1.5
	targetCPUOver   = 15.0
	targetFreshOver = 10.0
	targetRSSMiB    = 32.0
)

type config struct {
	concurrency int
	duration    time.Duration
	rounds      int
	warmup      time.Duration
	cases       []string
	// profileDir, when set, receives the CPU profile of every server over
	// each measured round (-profile; profile.go).
	profileDir string
	// agentTags are the build tags of the research agent of the job.sync
	// case (-agent-tags), comma-separated; none by default.
	agentTags string
}

// Child modes (-serve): the baseline with a fixed response, the fixture
// controller.
const (
	serveBaseline = "baseline"
	serveFixture  = "fixture"
)

func main() {
	var (
		cfg       config
		serve     string
		response  string
		verifyKey string
		pprofAddr string
		cases     string
	)
	fs := flag.NewFlagSet("loadcheck", flag.ContinueOnError)
	fs.IntVar(&cfg.concurrency, "concurrency", 32, "concurrent requests (keep-alive connections) per server")
	fs.DurationVar(&cfg.duration, "duration", 3*time.Second, "duration of one round")
	fs.IntVar(&cfg.rounds, "rounds", 3, "rounds per server, case and token mode")
	fs.DurationVar(&cfg.warmup, "warmup", 500*time.Millisecond, "untimed warm-up per server, case and token mode")
	fs.StringVar(&cases, "cases", "job.sync,fixture", "comma-separated cases to run: job.sync, fixture")
	backends := fs.Bool("backends", false, "measure job.start and job.sync of the research agent on each store (memory, bbolt, PostgreSQL with 1 and 3 instances) instead")
	databaseURL := fs.String("database-url", "", "PostgreSQL URL of the -backends PostgreSQL rows (make loadcheck-backends passes SUPERVAIZER_TEST_DATABASE_URL); without it they do not run")
	fs.StringVar(&goTool, "go", "go", "the go command that builds examples/research-agent (the Makefile passes its $(GO))")
	fs.StringVar(&serve, "serve", "", "internal: serve the baseline or the fixture controller in this process")
	fs.StringVar(&response, "response", "", "internal: the file holding the baseline's response")
	fs.StringVar(&cfg.profileDir, "profile", "", "write the CPU profile of every server (with -backends: of each setup's first agent) over each measured round to this folder (created if needed); -duration must be whole seconds")
	fs.StringVar(&cfg.agentTags, "agent-tags", "", "build tags of examples/research-agent in the job.sync case, comma-separated: telemetry builds it with its OpenTelemetry exporters (gRPC, protobuf and Prometheus linked in, unused here), as make run does when telemetry is configured; default none, the build go build and make run make")
	fs.StringVar(&pprofAddr, "pprof", "", "internal: serve net/http/pprof on this loopback host:port")
	fs.StringVar(&verifyKey, "verify-key", "", "internal: the file holding the PEM public key the verifying baseline checks each token's signature with")
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	if serve != "" {
		if err := runChild(serve, response, verifyKey, pprofAddr); err != nil {
			fmt.Fprintln(os.Stderr, "loadcheck -serve:", err)
			os.Exit(2)
		}
		return
	}
	for _, c := range strings.Split(cases, ",") {
		if c = strings.TrimSpace(c); c != caseSync && c != caseFixture {
			fmt.Fprintf(os.Stderr, "loadcheck: unknown case %q (known: %s, %s)\n", c, caseSync, caseFixture)
			os.Exit(2)
		} else if !slices.Contains(cfg.cases, c) {
			cfg.cases = append(cfg.cases, c)
		}
	}
	if cfg.concurrency < 1 || cfg.concurrency > 1024 || cfg.duration <= 0 || cfg.duration > 10*time.Minute ||
		cfg.rounds < 1 || cfg.rounds > 100 || cfg.warmup < 0 {
		fmt.Fprintln(os.Stderr, "loadcheck: need 1 <= -concurrency <= 1024, 0 < -duration <= 10m, 1 <= -rounds <= 100, -warmup >= 0")
		os.Exit(2)
	}
	if cfg.profileDir != "" && (cfg.duration < time.Second || cfg.duration%time.Second != 0) {
		fmt.Fprintln(os.Stderr, "loadcheck: -profile needs a -duration of whole seconds (a CPU profile lasts whole seconds)")
		os.Exit(2)
	}
	if *backends && cfg.agentTags != "" {
		fmt.Fprintln(os.Stderr, "loadcheck: -agent-tags applies to the job.sync case, not to -backends (its PostgreSQL rows need the default build)")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	run := run
	if *backends {
		run = func(ctx context.Context, cfg config, out io.Writer) (bool, error) {
			return runBackends(ctx, cfg, *databaseURL, out)
		}
	}
	failed, err := run(ctx, cfg, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadcheck:", err)
		os.Exit(2)
	}
	if failed {
		os.Exit(1)
	}
}

// runChild is the -serve mode.
func runChild(mode, responseFile, verifyKeyFile, pprofAddr string) error {
	if pprofAddr != "" {
		if err := pprofserve.Serve(pprofAddr, os.Stderr); err != nil {
			return fmt.Errorf("-pprof %q: %w", pprofAddr, err)
		}
	}
	interrupt := make(chan os.Signal, 1)
	signal.Notify(interrupt, os.Interrupt)
	switch mode {
	case serveBaseline:
		response, err := os.ReadFile(responseFile)
		if err != nil {
			return err
		}
		var key ed25519.PublicKey
		if verifyKeyFile != "" {
			pemText, err := os.ReadFile(verifyKeyFile)
			if err != nil {
				return err
			}
			if key, err = parseVerifyKey(pemText); err != nil {
				return err
			}
		}
		return serveChild(verifyingBaselineHandler(response, key), os.Stdin, os.Stdout, interrupt)
	case serveFixture:
		srv, err := fixture.NewController()
		if err != nil {
			return err
		}
		ctx := context.Background()
		if err := srv.Start(ctx); err != nil {
			return err
		}
		err = serveChild(srv, os.Stdin, os.Stdout, interrupt)
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		return errors.Join(err, srv.Shutdown(sctx))
	}
	return fmt.Errorf("unknown -serve mode %q", mode)
}

// Cases.
const (
	caseSync    = "job.sync"
	caseFixture = "fixture"
)

// scenario is one case: the controller, its baseline, the call and its tokens.
type scenario struct {
	name       string
	ctrl, base *child
	// verifying is the baseline that also checks each token's signature
	// (verifyingBaselineHandler), measured in the fresh-token rounds.
	verifying  *child
	keyPEM     string
	ctrlTarget target
	body       []byte
	wantPrefix []byte
	reused     string
	mint       func(n int) ([]string, error)
	// build names the controller's build tags when it has any (-agent-tags).
	build string
	// idle is each server's resident memory before the load (after the
	// probe's one call): the controller's and the baseline's.
	idle [2]memReading
}

// run starts every server, measures every case and mode and prints the report.
// failed reports a failed request.
func run(ctx context.Context, cfg config, out io.Writer) (failed bool, err error) {
	began := time.Now()
	self, err := os.Executable()
	if err != nil {
		return false, err
	}
	tmp, err := os.MkdirTemp("", "loadcheck-")
	if err != nil {
		return false, err
	}
	var cleanups []func() error
	defer func() {
		for i := len(cleanups) - 1; i >= 0; i-- {
			if cerr := cleanups[i](); cerr != nil && err == nil {
				err = cerr
			}
		}
		if rerr := os.RemoveAll(tmp); rerr != nil && err == nil {
			err = rerr
		}
	}()
	// With -profile, every -serve child serves its profiles on a free
	// loopback port.
	var pprofArgs []string
	if cfg.profileDir != "" {
		if err := os.MkdirAll(cfg.profileDir, 0o755); err != nil {
			return false, err
		}
		pprofArgs = []string{"-pprof", "127.0.0.1:0"}
	}
	// startBaseline serves response from a baseline process; with keyPEM,
	// one that verifies each token's signature with that key.
	startBaseline := func(name string, response []byte, keyPEM string) (*child, error) {
		file := filepath.Join(tmp, "response-"+name+".json")
		if err := os.WriteFile(file, response, 0o600); err != nil {
			return nil, err
		}
		args, label := append([]string{"-serve", serveBaseline, "-response", file}, pprofArgs...), "baseline "+name
		if keyPEM != "" {
			keyFile := filepath.Join(tmp, "verify-key-"+name+".pem")
			if err := os.WriteFile(keyFile, []byte(keyPEM), 0o600); err != nil {
				return nil, err
			}
			args, label = append(args, "-verify-key", keyFile), "verifying baseline "+name
		}
		c, err := startChild(ctx, label, exec.Command(self, args...))
		if err != nil {
			return nil, err
		}
		cleanups = append(cleanups, c.stop)
		return c, nil
	}

	var scenarios []*scenario
	for _, name := range cfg.cases {
		sc := &scenario{name: name}
		switch name {
		case caseSync:
			ra, err := startResearchAgent(ctx, cfg.profileDir != "", cfg.agentTags)
			if err != nil {
				return false, err
			}
			cleanups = append(cleanups, ra.close)
			sc.ctrl, sc.ctrlTarget, sc.body, sc.mint = ra.child, ra.target(), ra.syncBody(), ra.tokens
			if cfg.agentTags != "" {
				sc.build = "-tags " + cfg.agentTags
			}
			sc.keyPEM = ra.studio.PublicKeyPEM()
			toks, err := ra.tokens(1)
			if err != nil {
				return false, err
			}
			sc.reused = toks[0]
		case caseFixture:
			c, err := startChild(ctx, "fixture controller", exec.Command(self, append([]string{"-serve", serveFixture}, pprofArgs...)...))
			if err != nil {
				return false, err
			}
			cleanups = append(cleanups, c.stop)
			now := time.Now()
			sc.reused, err = fixture.Token("reused", now.Add(-time.Minute), now.Add(time.Hour))
			if err != nil {
				return false, err
			}
			sc.ctrl, sc.ctrlTarget, sc.body, sc.mint = c, target{name: "controller", url: c.url + "/a2a", apiKey: fixture.APIKey}, fixture.Body(), fixture.Tokens
			sc.keyPEM = fixture.PublicKeyPEM()
		}
		// The controller's answer is the baseline's fixed response, so both
		// servers send the same bytes; its prefix (up to "result") is what
		// every successful response starts with.
		response, err := probe(ctx, sc.ctrlTarget, sc.body, sc.reused)
		if err != nil {
			return false, err
		}
		sc.wantPrefix, err = resultPrefix(response)
		if err != nil {
			return false, fmt.Errorf("%s: %w", name, err)
		}
		if sc.base, err = startBaseline(name, response, ""); err != nil {
			return false, err
		}
		if sc.verifying, err = startBaseline(name, response, sc.keyPEM); err != nil {
			return false, err
		}
		sc.idle = [2]memReading{sc.ctrl.memory(), sc.base.memory()}
		scenarios = append(scenarios, sc)
	}

	fmt.Fprintf(out, "loadcheck: %d concurrent requests, %d rounds of %v per server, case and token mode, interleaved\n",
		cfg.concurrency, cfg.rounds, cfg.duration)
	fmt.Fprintf(out, "%s, %d CPUs; %s\n", runtime.Version(), runtime.NumCPU(), loadAverage())
	fmt.Fprintln(out, "every server in a process of its own; the client shares the machine")
	fmt.Fprint(out, legend)
	fmt.Fprintln(out)

	rep := newReport(out)
	var firstFailure error
	profiles, heaps := 0, 0
	// measureRound measures one round of s; with -profile, it also writes
	// the CPU profile of s's process over the round.
	measureRound := func(d *driver, s server, label, name, mode string, round int, tokens tokenSource) (result, error) {
		var wait func() error
		if cfg.profileDir != "" {
			wait = startProfile(ctx, s.proc, cfg.duration, profileFile(cfg.profileDir, name, mode, label, round))
		}
		r := measure(ctx, d, s, cfg.duration, tokens)
		if wait == nil {
			return r, nil
		}
		profiles++
		return r, wait()
	}
	for _, sc := range scenarios {
		d := newDriver(cfg.concurrency, sc.body, sc.wantPrefix)
		for _, mode := range []string{modeReused, modeFresh} {
			row := rep.row(sc.name, mode)
			ctrl := server{target: sc.ctrlTarget, proc: sc.ctrl}
			base := server{target: target{name: "baseline", url: sc.base.url + "/a2a", apiKey: sc.ctrlTarget.apiKey}, proc: sc.base}
			verifying := server{target: target{name: "verifying baseline", url: sc.verifying.url + "/a2a", apiKey: sc.ctrlTarget.apiKey}, proc: sc.verifying}
			// Warm up the servers (connections, the verifier cache, the runtime).
			d.run(ctx, ctrl.target, cfg.warmup, reusedToken(sc.reused))
			d.run(ctx, base.target, cfg.warmup, reusedToken(sc.reused))
			if mode == modeFresh {
				d.run(ctx, verifying.target, cfg.warmup, reusedToken(sc.reused))
			}
			for round := 1; round <= cfg.rounds && firstFailure == nil; round++ {
				var tokens tokenSource = reusedToken(sc.reused)
				var pool []string
				if mode == modeFresh {
					// The best reused-token round bounds the fresh-token rate.
					if pool, err = sc.mint(poolSize(rep.bestRate(sc.name, modeReused), cfg.duration)); err != nil {
						return false, err
					}
					tokens = &tokenPool{tokens: pool}
					// The floor of this round, measured right before it.
					row.floors = append(row.floors, verifyFloor())
				}
				c, err := measureRound(d, ctrl, "controller", sc.name, mode, round, tokens)
				if err != nil {
					return false, err
				}
				// The baseline ignores the token; it gets one of the same size.
				b, err := measureRound(d, base, "baseline", sc.name, mode, round, reusedToken(sc.reused))
				if err != nil {
					return false, err
				}
				var v result
				if mode == modeFresh {
					// The same never-seen tokens: one signature check each.
					if v, err = measureRound(d, verifying, "verifying baseline", sc.name, mode, round, &tokenPool{tokens: pool}); err != nil {
						return false, err
					}
				}
				row.add(round, c, b, v)
				for _, f := range []error{c.failure, b.failure, v.failure} {
					if f != nil && firstFailure == nil {
						firstFailure = f
					}
				}
			}
			if firstFailure != nil {
				break
			}
		}
		rep.memory(sc.name, sc.build, sc.idle, [2]memReading{sc.ctrl.memory(), sc.base.memory()})
		if cfg.profileDir != "" {
			if err := fetchHeap(ctx, sc.ctrl, heapFile(cfg.profileDir, sc.name), memStatsFile(cfg.profileDir, sc.name)); err != nil {
				return false, err
			}
			heaps++
		}
		if firstFailure != nil {
			break
		}
	}
	if profiles > 0 {
		fmt.Fprintf(out, "profiles: %d CPU profiles (one per server and measured round) in %s; e.g. go tool pprof -top %s\n"+
			"the profiler costs the servers some CPU: read a profiled run for where the time goes, not for its figures\n\n",
			profiles, cfg.profileDir, profileFile(cfg.profileDir, scenarios[0].name, modeReused, "controller", 1))
	}
	if heaps > 0 {
		fmt.Fprintf(out, "heap profiles: %d (one per case: its controller's, when its memory after the run is read) in %s; e.g. go tool pprof -sample_index=inuse_space -top %s\n"+
			"and the runtime's memory statistics at the same moment (HeapInuse, HeapIdle, HeapReleased, NextGC, …), e.g. %s\n\n",
			heaps, cfg.profileDir, heapFile(cfg.profileDir, scenarios[0].name), memStatsFile(cfg.profileDir, scenarios[0].name))
	}
	heavy, err := rep.summary(began)
	if err != nil {
		return false, err
	}
	if firstFailure == nil && len(heavy) > 0 {
		firstFailure = fmt.Errorf("the client costs more CPU per request than the baseline server (%s): "+
			"on a machine with few cores it slows both servers alike and the ratios flatter the controller", strings.Join(heavy, "; "))
	}
	if firstFailure != nil {
		fmt.Fprintf(out, "\nFAILED: %v\n", firstFailure)
		return true, nil
	}
	return false, ctx.Err()
}

// legend explains the rows and columns of the report.
const legend = `cases: job.sync = examples/research-agent answering job.sync on a started job (its real handler,
         bbolt store and job_state, about 1.5 KB; built as go build builds it, or with the -agent-tags tags);
         fixture = the small fixture controller (typed job.start, one effect)
modes: reused = one workspace token for every request (a verifier cache hit);
       fresh = a never-seen token per request (a full Ed25519 verification each time)
baseline: bare net/http + encoding/json, decoding the same body and sending the controller's own answer
baseline+Verify (fresh rounds): the same baseline, also checking each token's signature with ed25519.Verify
         (no claims, no cache), driven with the same never-seen tokens
columns: req/s over the round; CPU µs/req = the server process's CPU time (/proc/<pid>/stat) per request;
         client CPU µs/req = this process's (the raw HTTP/1.1 client's) CPU time per request of the same round,
         which must stay below the baseline server's or the run fails;
         p50/p99 = client-side latency; ratio = controller req/s / baseline req/s of the same round
`

// Token modes.
const (
	modeReused = "reused"
	modeFresh  = "fresh"
)

// server is a server under test: where to call it and its process.
type server struct {
	target
	proc *child
}

// measure runs one round against s and adds the server's CPU time.
func measure(ctx context.Context, d *driver, s server, dur time.Duration, tokens tokenSource) result {
	before, ok1 := s.proc.cpuTime()
	r := d.run(ctx, s.target, dur, tokens)
	after, ok2 := s.proc.cpuTime()
	if ok1 && ok2 {
		r.cpu, r.cpuKnown = after-before, true
	}
	return r
}

// resultPrefix returns the bytes of response up to and including "result":.
func resultPrefix(response []byte) ([]byte, error) {
	i := strings.Index(string(response), `"result":`)
	if i < 0 {
		return nil, fmt.Errorf("not a JSON-RPC result: %.300s", response)
	}
	return response[:i+len(`"result":`)], nil
}

// loadAverage returns the 1, 5 and 15-minute load averages, when known.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "load average unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "load average unknown"
	}
	return "load average " + strings.Join(f[:3], " ")
}

// poolSize is how many fresh tokens a round at about rate requests per
// second may use, with a margin.
func poolSize(rate float64, d time.Duration) int {
	n := int(rate*d.Seconds()*1.25) + 256
	return min(n, 500_000)
}

// childEnvVar, set to 1, makes the test binary of this package act as this
// command (its children are started from os.Executable).
const childEnvVar = "LOADCHECK_TEST_CHILD"
