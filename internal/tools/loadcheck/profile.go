package main

import (
	"context"
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
	secs := int(dur / time.Second)
	return fetchPprof(ctx, c, "CPU profile", fmt.Sprintf("profile?seconds=%d", secs), dur+30*time.Second, file)
}

// heapFile names the heap profile of a case's controller after its last
// round.
func heapFile(dir, name string) string {
	return filepath.Join(dir, name+"-controller-heap.pb.gz")
}

// memStatsFile names the runtime memory statistics of a case's controller
// after its last round.
func memStatsFile(dir, name string) string {
	return filepath.Join(dir, name+"-controller-memstats.txt")
}

// fetchHeap writes c's heap profile (what is live since its last garbage
// collection, and what it allocated since it started) to file, and the
// runtime's memory statistics (runtime.MemStats: the heap the runtime keeps,
// the next collection's goal, …; the tail of /debug/pprof/heap?debug=1) to
// stats. It is taken when the memory after the run is read: what the
// controller holds then.
func fetchHeap(ctx context.Context, c *child, file, stats string) error {
	if err := fetchPprof(ctx, c, "heap profile", "heap", 30*time.Second, file); err != nil {
		return err
	}
	const what = "memory statistics"
	body, err := getPprof(ctx, c, what, "heap?debug=1", 30*time.Second)
	if err != nil {
		return err
	}
	_, ms, ok := strings.Cut(string(body), "\n# runtime.MemStats\n")
	if !ok {
		return fmt.Errorf("%s: %s: no runtime.MemStats in the text heap profile", c.name, what)
	}
	return os.WriteFile(stats, []byte("# runtime.MemStats\n"+ms), 0o644)
}

// fetchPprof writes the gzip-compressed profile c serves at
// /debug/pprof/<query> to file.
func fetchPprof(ctx context.Context, c *child, what, query string, timeout time.Duration, file string) error {
	body, err := getPprof(ctx, c, what, query, timeout)
	if err != nil {
		return err
	}
	if len(body) < 2 || body[0] != 0x1f || body[1] != 0x8b {
		return fmt.Errorf("%s: %s: not a gzip-compressed profile", c.name, what)
	}
	return os.WriteFile(file, body, 0o644)
}

// getPprof returns what c serves at /debug/pprof/<query> (what names it in
// errors).
func getPprof(ctx context.Context, c *child, what, query string, timeout time.Duration) ([]byte, error) {
	base, err := c.pprofBase()
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/debug/pprof/"+query, nil)
	if err != nil {
		return nil, err
	}
	resp, err := (&http.Client{Timeout: timeout}).Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", c.name, what, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", c.name, what, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s: %s: %s", c.name, what, resp.Status, strings.TrimSpace(string(body)))
	}
	return body, nil
}
