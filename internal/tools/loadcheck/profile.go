package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// With -profile DIR every server serves net/http/pprof on a loopback port of
// its own (package pprofserve: the -serve children with -pprof, the research
// agent built with -tags pprof and RESEARCH_AGENT_PPROF_ADDR), and each
// measured round writes
// the CPU profile of its server over that round to DIR. The profiler costs
// the servers some CPU: a profiled run shows where the time goes, its
// figures are not the reference.

// pprofTimeout bounds how long after it started listening a child may take
// to announce its profiles.
const pprofTimeout = 10 * time.Second

// pprofBase returns the base URL of the child's profiles, waiting for its
// announcement the first time.
func (c *child) pprofBase() (string, error) {
	if c.pprofURL != "" {
		return c.pprofURL, nil
	}
	select {
	case c.pprofURL = <-c.pprof:
		return c.pprofURL, nil
	case <-time.After(pprofTimeout):
		return "", fmt.Errorf("%s did not announce its profiles (a line %q) within %v; its last output:\n%s",
			c.name, "pprof: serving profiles on http://…", pprofTimeout, c.logs)
	}
}

// profileFile names the profile of one round: case, mode, server, round.
func profileFile(dir, name, mode, server string, round int) string {
	return filepath.Join(dir, fmt.Sprintf("%s-%s-%s-round%d.pb.gz", name, mode, strings.ReplaceAll(server, " ", "-"), round))
}

// startProfile starts fetching the CPU profile of c over the next dur (whole
// seconds) into file; wait returns once it is written.
func startProfile(ctx context.Context, c *child, dur time.Duration, file string) (wait func() error) {
	done := make(chan error, 1)
	go func() { done <- fetchProfile(ctx, c, dur, file) }()
	return func() error { return <-done }
}

func fetchProfile(ctx context.Context, c *child, dur time.Duration, file string) error {
	base, err := c.pprofBase()
	if err != nil {
		return err
	}
	secs := int(dur / time.Second)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", base, secs), nil)
	if err != nil {
		return err
	}
	resp, err := (&http.Client{Timeout: dur + 30*time.Second}).Do(req)
	if err != nil {
		return fmt.Errorf("%s: CPU profile: %w", c.name, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("%s: CPU profile: %w", c.name, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: CPU profile: %s: %s", c.name, resp.Status, strings.TrimSpace(string(body)))
	}
	if len(body) < 2 || body[0] != 0x1f || body[1] != 0x8b {
		return errors.New(c.name + ": CPU profile: not a gzip-compressed profile")
	}
	return os.WriteFile(file, body, 0o644)
}
