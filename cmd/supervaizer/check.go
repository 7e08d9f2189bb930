package main

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// errChecksFailed: at least one case of check failed (exit status 1; the
// report is already printed).
var errChecksFailed = errors.New("checks failed")

// Outcomes of a case.
const (
	statusPass = "pass"
	statusFail = "fail"
	statusSkip = "skipped"
)

// caseResult is one line of check's report.
type caseResult struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	Detail string `json:"detail,omitempty"`
}

// report is check's -json output.
type report struct {
	URL     string       `json:"url"`
	Passed  int          `json:"passed"`
	Failed  int          `json:"failed"`
	Skipped int          `json:"skipped"`
	Cases   []caseResult `json:"cases"`
}

// checker runs the cases against one controller. It speaks the protocol
// (docs and /work/shared/spec), never this SDK's internals: requests are
// written as JSON by hand, answers read with encoding/json and validated
// against the contracts' JSON Schemas.
type checker struct {
	base          string // the controller's URL, no trailing slash
	apiKey        string
	tf            tokenFlags
	agentIDSet    bool               // -agent-id was given
	key           ed25519.PrivateKey // nil without -key
	write         bool
	heartbeatWait time.Duration
	hc            *http.Client
	ctx           context.Context

	results []caseResult
	agents  []*agentInfo
	seq     int // request ids
}

// agentInfo is what discovery says about one agent.
type agentInfo struct {
	slug          string
	version       string
	cardURL       string
	studioAgentID string   // health's agent_server_id
	surfaces      []string // capabilities.surfaces
	actions       []string // capabilities.actions ids
	startForm     json.RawMessage
}

func (c *checker) add(name, status, format string, args ...any) {
	c.results = append(c.results, caseResult{Name: name, Status: status, Detail: fmt.Sprintf(format, args...)})
}

func (c *checker) pass(name, format string, args ...any) { c.add(name, statusPass, format, args...) }
func (c *checker) fail(name, format string, args ...any) { c.add(name, statusFail, format, args...) }
func (c *checker) skip(name, format string, args ...any) { c.add(name, statusSkip, format, args...) }

// runCheck runs every case against the controller at URL and prints the
// report; it returns errChecksFailed when a case failed.
func runCheck(args []string, stdout, stderr io.Writer) error {
	fset := newFlagSet("check", "URL", stderr)
	c := &checker{}
	fset.StringVar(&c.apiKey, "api-key", "", "the transport key (X-API-Key) with the write scope; without it the JSON-RPC cases are skipped")
	c.tf.register(fset, "")
	fset.BoolVar(&c.write, "write", false, "also run job.start (it creates a job) with a key replayed and conflicted, and await its event")
	asJSON := fset.Bool("json", false, "print the report as one JSON document")
	fset.DurationVar(&c.heartbeatWait, "heartbeat-wait", 20*time.Second, "how long the event stream may stay silent before the missing heartbeat fails (the spec's interval is 15 s)")
	timeout := fset.Duration("timeout", 10*time.Second, "the timeout of each HTTP request")
	if err := parse(fset, args, 1); err != nil {
		return err
	}
	fset.Visit(func(f *flag.Flag) { c.agentIDSet = c.agentIDSet || f.Name == "agent-id" })
	u, err := url.Parse(fset.Arg(0))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%w: %q is not an http(s) URL", errUsage, fset.Arg(0))
	}
	c.base = strings.TrimRight(u.String(), "/")
	if c.tf.keyFile != "" {
		if c.key, err = c.tf.loadKey(); err != nil {
			return err
		}
	}
	c.hc = &http.Client{Timeout: *timeout}
	var cancel context.CancelFunc
	c.ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	c.run()
	return c.print(stdout, *asJSON)
}

// print writes the report and returns errChecksFailed when a case failed.
func (c *checker) print(w io.Writer, asJSON bool) error {
	r := report{URL: c.base, Cases: c.results}
	var failed []string
	for _, res := range c.results {
		switch res.Status {
		case statusPass:
			r.Passed++
		case statusFail:
			r.Failed++
			failed = append(failed, res.Name)
		default:
			r.Skipped++
		}
	}
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			return err
		}
	} else {
		for _, res := range c.results {
			line := fmt.Sprintf("%-7s %s", strings.ToUpper(res.Status), res.Name)
			if res.Detail != "" {
				line += ": " + res.Detail
			}
			fmt.Fprintln(w, line)
		}
		fmt.Fprintf(w, "check %s: %d passed, %d failed, %d skipped\n", c.base, r.Passed, r.Failed, r.Skipped)
		if len(failed) > 0 {
			fmt.Fprintf(w, "failed: %s\n", strings.Join(failed, ", "))
		}
	}
	if r.Failed > 0 {
		return errChecksFailed
	}
	return nil
}

// run runs the cases in order: discovery first (it names the agents and
// their surfaces), then health, the transport and JSON-RPC refusals, the
// tokens, the surfaces, job.start and the event stream.
func (c *checker) run() {
	events := c.openEvents()
	c.checkDiscovery()
	c.checkHealth()
	c.checkTransport()
	c.checkEnvelope()
	c.checkTokens()
	c.checkSurfaces()
	started := c.checkJobStart()
	c.checkEvents(events, started)
}
