// Command loadcheck compares the controller with a bare net/http baseline
// over loopback. It starts both servers on 127.0.0.1 ephemeral ports, drives
// them with the same concurrency and duration in interleaved rounds
// (controller, baseline, controller, baseline, …) and prints requests per
// second, p50 and p99 latency and the ratio controller/baseline, first with
// one workspace token reused by every request (a verifier cache hit), then
// with a distinct, never seen token per request (a full Ed25519
// verification each time; the tokens are minted before the round so the
// client's signing cost stays out of it).
//
// The controller is built in process from the SDK's public API (see package
// fixture): the research agent's registration with a typed job.start
// handler, workspace authorization on with an Ed25519 PEM key, and the agent
// linked to its Studio agent id.
//
// It exits with status 1 when any request fails (not HTTP 200, or a JSON-RPC
// error), 2 on a usage or setup error. Run it with `make loadcheck`.
//
// Usage:
//
//	go run ./internal/loadcheck [-concurrency 16] [-duration 3s] [-rounds 3]
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"slices"
	"text/tabwriter"
	"time"

	supervaizer "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/internal/loadcheck/fixture"
)

// Targets of issue 10, on the reference 2-core machine.
const (
	targetReused = 0.70
	targetFresh  = 0.40
)

type config struct {
	concurrency int
	duration    time.Duration
	rounds      int
	warmup      time.Duration
}

func main() {
	var cfg config
	fs := flag.NewFlagSet("loadcheck", flag.ContinueOnError)
	fs.IntVar(&cfg.concurrency, "concurrency", 16, "concurrent requests (keep-alive connections) per server")
	fs.DurationVar(&cfg.duration, "duration", 3*time.Second, "duration of one round")
	fs.IntVar(&cfg.rounds, "rounds", 3, "rounds per server and token mode")
	fs.DurationVar(&cfg.warmup, "warmup", 500*time.Millisecond, "untimed warm-up per server and token mode")
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	if cfg.concurrency < 1 || cfg.concurrency > 1024 || cfg.duration <= 0 || cfg.duration > 10*time.Minute ||
		cfg.rounds < 1 || cfg.rounds > 100 || cfg.warmup < 0 {
		fmt.Fprintln(os.Stderr, "loadcheck: need 1 <= -concurrency <= 1024, 0 < -duration <= 10m, 1 <= -rounds <= 100, -warmup >= 0")
		os.Exit(2)
	}
	failed, err := run(context.Background(), cfg, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadcheck:", err)
		os.Exit(2)
	}
	if failed {
		os.Exit(1)
	}
}

// server is one of the two servers under test.
type server struct {
	target
	http *http.Server
	done chan error
}

// listen serves h on a loopback ephemeral port.
func listen(name, apiKey string, h http.Handler) (*server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &server{
		target: target{name: name, url: "http://" + ln.Addr().String() + "/a2a", apiKey: apiKey},
		http:   &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: time.Minute},
		done:   make(chan error, 1),
	}
	go func() { s.done <- s.http.Serve(ln) }()
	return s, nil
}

func (s *server) shutdown(ctx context.Context) error {
	err := s.http.Shutdown(ctx)
	if serveErr := <-s.done; !errors.Is(serveErr, http.ErrServerClosed) && err == nil {
		err = serveErr
	}
	return err
}

// measurement is every round of one server in one token mode.
type measurement struct {
	rounds []result
}

// best returns the highest rate of a round.
func (m *measurement) best() float64 {
	best := 0.0
	for _, r := range m.rounds {
		best = max(best, r.rate())
	}
	return best
}

func (m *measurement) total() result {
	var t result
	for _, r := range m.rounds {
		t.requests += r.requests
		t.elapsed += r.elapsed
		t.latencies = append(t.latencies, r.latencies...)
		t.cutShort = t.cutShort || r.cutShort
	}
	slices.Sort(t.latencies)
	return t
}

// run starts both servers, measures both token modes and prints the table.
// failed reports a failed request.
func run(ctx context.Context, cfg config, out io.Writer) (failed bool, err error) {
	srv, err := fixture.NewController()
	if err != nil {
		return false, fmt.Errorf("build the controller: %w", err)
	}
	if err := srv.Start(ctx); err != nil {
		return false, fmt.Errorf("start the controller: %w", err)
	}
	ctrl, err := listen("controller", fixture.APIKey, srv)
	if err != nil {
		return false, err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		if serr := ctrl.shutdown(sctx); serr != nil && err == nil {
			err = serr
		}
	}()

	body := fixture.Body()
	now := time.Now()
	reused, err := fixture.Token("reused", now.Add(-time.Minute), now.Add(time.Hour))
	if err != nil {
		return false, err
	}
	// The controller's answer is the baseline's fixed response, so both
	// servers send the same bytes; its prefix (up to "result") is what every
	// successful response starts with.
	response, err := probe(ctx, ctrl.target, body, reused)
	if err != nil {
		return false, err
	}
	i := bytes.Index(response, []byte(`"result":`))
	if i < 0 {
		return false, fmt.Errorf("controller: not a JSON-RPC result: %.300s", response)
	}
	wantPrefix := response[:i+len(`"result":`)]
	base, err := listen("baseline", fixture.APIKey, baselineHandler(response))
	if err != nil {
		return false, err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if serr := base.shutdown(sctx); serr != nil && err == nil {
			err = serr
		}
	}()

	d := newDriver(cfg.concurrency, body, wantPrefix)
	defer d.close()
	fmt.Fprintf(out, "loadcheck: %d concurrent requests, %d rounds of %v per server and mode, interleaved; GOMAXPROCS %d, %s\n",
		cfg.concurrency, cfg.rounds, cfg.duration, runtime.GOMAXPROCS(0), runtime.Version())
	fmt.Fprintf(out, "controller %s, baseline %s (client, controller and baseline share this process)\n\n", ctrl.url, base.url)

	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "mode\tround\tserver\trequests\treq/s\tp50\tp99\t")
	type row struct {
		mode       string
		ctrl, base measurement
		target     float64
	}
	rows := []*row{{mode: "reused", target: targetReused}, {mode: "fresh", target: targetFresh}}
	var firstFailure error
	for _, rw := range rows {
		// Warm up both servers (connections, the verifier cache, the runtime).
		d.run(ctx, ctrl.target, cfg.warmup, reusedToken(reused))
		d.run(ctx, base.target, cfg.warmup, reusedToken(reused))
		for round := 1; round <= cfg.rounds; round++ {
			var tokens tokenSource = reusedToken(reused)
			if rw.mode == "fresh" {
				// The best reused-token round bounds the fresh-token rate.
				pool, err := fixture.Tokens(poolSize(rows[0].ctrl.best(), cfg.duration))
				if err != nil {
					return false, err
				}
				tokens = &tokenPool{tokens: pool}
			}
			r := d.run(ctx, ctrl.target, cfg.duration, tokens)
			rw.ctrl.rounds = append(rw.ctrl.rounds, r)
			printRound(tw, rw.mode, round, ctrl.name, r)
			// The baseline ignores the token; it gets one of the same size.
			b := d.run(ctx, base.target, cfg.duration, reusedToken(reused))
			rw.base.rounds = append(rw.base.rounds, b)
			printRound(tw, rw.mode, round, base.name, b)
			for _, f := range []error{r.failure, b.failure} {
				if f != nil && firstFailure == nil {
					firstFailure = f
				}
			}
			if firstFailure != nil {
				break
			}
		}
		if firstFailure != nil {
			break
		}
	}
	if err := tw.Flush(); err != nil {
		return false, err
	}

	fmt.Fprintln(out)
	tw = tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "mode\tbaseline req/s\tcontroller req/s\tbaseline p50\tcontroller p50\tbaseline p99\tcontroller p99\tratio\ttarget\t")
	var notes []string
	for _, rw := range rows {
		if len(rw.ctrl.rounds) == 0 || len(rw.base.rounds) == 0 {
			continue
		}
		c, b := rw.ctrl.total(), rw.base.total()
		ratio := 0.0
		if b.rate() > 0 {
			ratio = c.rate() / b.rate()
		}
		verdict := "met"
		if ratio < rw.target {
			verdict = "NOT met"
		}
		fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%s\t%s\t%s\t%s\t%.2f\t>= %.2f %s\t\n", rw.mode,
			b.rate(), c.rate(), ms(percentile(b.latencies, 0.50)), ms(percentile(c.latencies, 0.50)),
			ms(percentile(b.latencies, 0.99)), ms(percentile(c.latencies, 0.99)), ratio, rw.target, verdict)
		if c.cutShort {
			notes = append(notes, rw.mode+": some rounds ran out of pre-minted tokens and ended early; rates use the time actually run")
		}
	}
	if err := tw.Flush(); err != nil {
		return false, err
	}
	for _, n := range notes {
		fmt.Fprintln(out, n)
	}
	if firstFailure != nil {
		fmt.Fprintf(out, "\nFAILED: %v\n", firstFailure)
		return true, nil
	}
	return false, nil
}

// poolSize is how many fresh tokens a round at about rate requests per
// second may use, with a margin.
func poolSize(rate float64, d time.Duration) int {
	n := int(rate*d.Seconds()*1.25) + 256
	return min(n, 500_000)
}

func printRound(w io.Writer, mode string, round int, name string, r result) {
	fmt.Fprintf(w, "%s\t%d\t%s\t%d\t%.0f\t%s\t%s\t\n", mode, round, name, r.requests, r.rate(),
		ms(percentile(r.latencies, 0.50)), ms(percentile(r.latencies, 0.99)))
}

// ms formats a latency in milliseconds.
func ms(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond)) }

// probe sends one call and returns the response body, which must be a
// JSON-RPC result.
func probe(ctx context.Context, t target, body []byte, token string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(supervaizer.HeaderAPIKey, t.apiKey)
	req.Header.Set(supervaizer.HeaderWorkspaceAuthorization, "Bearer "+token)
	client := &http.Client{Transport: &http.Transport{Proxy: nil}, Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", t.name, err)
	}
	defer resp.Body.Close()
	out, err := readAll(resp.Body, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", t.name, err)
	}
	if resp.StatusCode != http.StatusOK || !bytes.Contains(out, []byte(`"result":`)) {
		return nil, fmt.Errorf("%s: HTTP %d: %.300s", t.name, resp.StatusCode, out)
	}
	return out, nil
}
