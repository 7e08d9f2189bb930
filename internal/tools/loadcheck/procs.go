package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/supervaize/supervaizer-go/internal/tools/pprofserve"
)

// Every server under test runs in a process of its own, so that the CPU time
// it spends per request can be read from the operating system without the
// client's share (the client, the fake Studio and the report stay in this
// process). The baseline and the small fixture controller are this program
// started again with -serve; the research agent is its own binary, built
// from examples/research-agent.

// child is one server process.
type child struct {
	name string
	url  string // base URL, http://127.0.0.1:<port>
	cmd  *exec.Cmd
	in   io.WriteCloser // closing it asks the child to stop
	done chan error
	logs *tail
	// pprof receives the base URL of the child's profiles when it
	// announces them (-profile); pprofURL keeps it once read.
	pprof    chan string
	pprofURL string
}

// startupTimeout bounds how long a child may take to start listening.
const startupTimeout = 60 * time.Second

// listening matches the address a child announces: "listening http://…" on
// stdout from -serve, url=http://… in the research agent's log.
var listening = regexp.MustCompile(`(?:^listening |url=)(http://127\.0\.0\.1:[0-9]+)`)

// startChild runs cmd and waits until it announces its loopback URL on
// stdout or stderr.
func startChild(ctx context.Context, name string, cmd *exec.Cmd) (*child, error) {
	c := &child{name: name, cmd: cmd, done: make(chan error, 1), logs: &tail{}, pprof: make(chan string, 1)}
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	c.in = in
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	urls := make(chan string, 2)
	var readers sync.WaitGroup
	for _, r := range []io.Reader{stdout, stderr} {
		readers.Go(func() {
			sc := bufio.NewScanner(r)
			sc.Buffer(make([]byte, 0, 4096), 1<<20)
			for sc.Scan() {
				line := sc.Text()
				c.logs.add(line)
				if m := listening.FindStringSubmatch(line); m != nil {
					select {
					case urls <- m[1]:
					default:
					}
				}
				if m := pprofserve.Announced.FindStringSubmatch(line); m != nil {
					select {
					case c.pprof <- m[1]:
					default:
					}
				}
			}
		})
	}
	go func() {
		readers.Wait()
		c.done <- cmd.Wait()
	}()
	timer := time.NewTimer(startupTimeout)
	defer timer.Stop()
	select {
	case c.url = <-urls:
		return c, nil
	case err := <-c.done:
		c.done <- err
		return nil, fmt.Errorf("%s exited before listening (%v); its last output:\n%s", name, err, c.logs)
	case <-timer.C:
		c.kill()
		return nil, fmt.Errorf("%s did not start listening within %v; its last output:\n%s", name, startupTimeout, c.logs)
	case <-ctx.Done():
		c.kill()
		return nil, ctx.Err()
	}
}

// stop asks the child to stop (stdin closed, then SIGINT) and waits for it;
// it is killed after a grace period.
func (c *child) stop() error {
	_ = c.in.Close()
	if c.cmd.Process != nil {
		_ = c.cmd.Process.Signal(os.Interrupt)
	}
	select {
	case err := <-c.done:
		var exit *exec.ExitError
		if errors.As(err, &exit) && !exit.Exited() { // ended by our signal
			return nil
		}
		return err
	case <-time.After(20 * time.Second):
		c.kill()
		return fmt.Errorf("%s did not stop within 20s; killed", c.name)
	}
}

func (c *child) kill() {
	if c.cmd.Process != nil {
		_ = c.cmd.Process.Kill()
	}
}

// cpuTime returns the CPU time (user and system) the child has used so far,
// from /proc/<pid>/stat; ok is false where that file does not exist.
func (c *child) cpuTime() (time.Duration, bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(c.cmd.Process.Pid), "stat"))
	if err != nil {
		return 0, false
	}
	return parseStatCPU(string(b))
}

// memReading is a process's resident memory, in MiB: all of it (VmRSS)
// and its anonymous part (RssAnon: the heap, stacks and runtime data, not
// the pages of its binary and libraries mapped from files).
type memReading struct {
	RSS, Anon float64
}

// memory reads the child's resident memory from /proc/<pid>/status; zero
// where that file does not exist.
func (c *child) memory() memReading {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(c.cmd.Process.Pid), "status"))
	if err != nil {
		return memReading{}
	}
	return memReading{RSS: parseStatusKB(string(b), "VmRSS"), Anon: parseStatusKB(string(b), "RssAnon")}
}

// parseStatusKB reads the line of field ("VmRSS:   12345 kB") of a
// /proc/<pid>/status file, in MiB; 0 when it has none.
func parseStatusKB(status, field string) float64 {
	for line := range strings.Lines(status) {
		rest, ok := strings.CutPrefix(line, field+":")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0
		}
		kb, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			return 0
		}
		return kb / 1024
	}
	return 0
}

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat: 100
// on every Linux architecture Go supports.
const clockTicks = 100

// parseStatCPU reads utime and stime (fields 14 and 15) of a /proc/<pid>/stat
// line. The command name (field 2) may hold spaces and parentheses, so the
// fields are counted from the last ')'.
func parseStatCPU(stat string) (time.Duration, bool) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(stat[i+1:]) // f[0] is field 3 (state)
	if len(f) < 13 {
		return 0, false
	}
	utime, err1 := strconv.ParseUint(f[11], 10, 64)
	stime, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(utime+stime) * time.Second / clockTicks, true
}

// tail keeps the last lines a child wrote, for error messages.
type tail struct {
	mu    sync.Mutex
	lines []string
}

func (t *tail) add(line string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.lines) == 20 {
		t.lines = append(t.lines[:0], t.lines[1:]...)
	}
	t.lines = append(t.lines, line)
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.Join(t.lines, "\n")
}

// serveChild is the -serve mode: serve h on a loopback ephemeral port,
// announce the URL on stdout, and stop when stdin is closed (the parent
// stopped or died) or on SIGINT.
func serveChild(h http.Handler, stdin io.Reader, stdout io.Writer, interrupt <-chan os.Signal) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: time.Minute}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	fmt.Fprintf(stdout, "listening http://%s\n", ln.Addr())
	closed := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, stdin)
		close(closed)
	}()
	select {
	case err := <-served:
		return err
	case <-closed:
	case <-interrupt:
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return hs.Shutdown(ctx)
}
