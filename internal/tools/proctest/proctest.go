// Package proctest runs the module's binaries in tests: build the main package
// of the current directory, start it with a given environment (listening on
// port 0), read the address it bound from its log, wait until it serves, stop it with a signal and require a clean exit. Buffer, the
// concurrency-safe output collector it uses, also serves tests that capture a
// logger's output.
package proctest

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Timeouts of a process under test: generous, since the machines that run the
// suite may be loaded.
const (
	ServeTimeout = 30 * time.Second // from Start until it serves
	StopTimeout  = 20 * time.Second // from the stop signal until it exits
	pollInterval = 50 * time.Millisecond
)

// Buffer is a bytes.Buffer safe for concurrent writes and reads: the output of
// a process or a logger, read by the test while it is written.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// readyURL matches the SDK's line naming the address the process bound, after
// binding: "controller ready" (Serve ran Start), or "controller listening"
// (Start ran before Serve), and the URL it names.
var readyURL = regexp.MustCompile(`controller (?:ready|listening)\b.*\burl=(http://[^\s"]+)`)

// Build builds the main package of the current directory into a temporary
// directory of t, with the go build flags given (such as "-tags", "x"), and
// returns the binary's path.
func Build(t testing.TB, name string, flags ...string) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	require.NoError(t, err, "the go tool is needed to build the binary")
	bin := filepath.Join(t.TempDir(), name)
	start := time.Now()
	args := append(append([]string{"build"}, flags...), "-o", bin, ".")
	out, err := exec.CommandContext(t.Context(), goTool, args...).CombinedOutput()
	require.NoError(t, err, "go %s: %s", strings.Join(args, " "), out)
	t.Logf("go build: %s", time.Since(start).Round(time.Millisecond))
	return bin
}

// Process is a binary started by Start: its output, and whether it exited.
type Process struct {
	cmd            *exec.Cmd
	Stdout, Stderr *Buffer
	started        time.Time
	exited         chan struct{} // closed when Wait returned
	err            error         // Wait's result, once exited is closed
}

// Start runs bin with exactly env as its environment. The process is killed
// when the test ends unless it exited before.
func Start(t testing.TB, bin string, env []string) *Process {
	t.Helper()
	p := &Process{cmd: exec.Command(bin), Stdout: &Buffer{}, Stderr: &Buffer{}, exited: make(chan struct{})}
	p.cmd.Env = env
	if p.cmd.Env == nil {
		p.cmd.Env = []string{} // nil would inherit the test's environment
	}
	p.cmd.Stdout, p.cmd.Stderr = p.Stdout, p.Stderr
	p.started = time.Now()
	require.NoError(t, p.cmd.Start())
	go func() {
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
	})
	return p
}

// Output is what the process wrote so far, standard output then standard
// error.
func (p *Process) Output() string { return p.Stdout.String() + p.Stderr.String() }

// AwaitURL waits until the process logs the SDK's "controller ready" or
// "controller listening" line with a URL and returns that URL (http://host:port). A process under test listens
// on port 0 (SUPERVAIZER_ADDR=127.0.0.1:0) and reports the address it bound
// this way, so that no test picks a port for another process. It fails the
// test when the process exits first or ServeTimeout passes.
func (p *Process) AwaitURL(t testing.TB) string {
	t.Helper()
	var url string
	p.AwaitServing(t, "the controller's URL", func() bool {
		if m := readyURL.FindStringSubmatch(p.Output()); m != nil {
			url = m[1]
			return true
		}
		return false
	})
	return url
}

// AwaitServing calls serving every 50 ms until it reports true, and fails the
// test when the process exits first or ServeTimeout passes; what names the
// awaited state in the failure.
func (p *Process) AwaitServing(t testing.TB, what string, serving func() bool) {
	t.Helper()
	deadline := time.Now().Add(ServeTimeout)
	for !serving() {
		select {
		case <-p.exited:
			require.FailNowf(t, "the process exited before serving", "waiting for %s (%v)\noutput:\n%s", what, p.err, p.Output())
		default:
		}
		require.True(t, time.Now().Before(deadline), "no %s within %s\noutput:\n%s", what, ServeTimeout, p.Output())
		time.Sleep(pollInterval)
	}
	t.Logf("%s after %s", what, time.Since(p.started).Round(time.Millisecond))
}

// Wait waits for the process to exit on its own, at most StopTimeout, and
// returns the error of its exit (nil for status 0).
func (p *Process) Wait(t testing.TB) error {
	t.Helper()
	select {
	case <-p.exited:
		return p.err
	case <-time.After(StopTimeout):
		require.FailNowf(t, "no exit", "no exit within %s\noutput:\n%s", StopTimeout, p.Output())
		return nil
	}
}

// Stop sends sig and requires exit status 0 within StopTimeout.
func (p *Process) Stop(t testing.TB, sig os.Signal) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(sig))
	select {
	case <-p.exited:
		var ee *exec.ExitError
		if errors.As(p.err, &ee) {
			require.FailNowf(t, "unclean exit", "exit status %d after %v\noutput:\n%s", ee.ExitCode(), sig, p.Output())
		}
		require.NoError(t, p.err)
	case <-time.After(StopTimeout):
		require.FailNowf(t, "no exit", "no exit within %s of %v\noutput:\n%s", StopTimeout, sig, p.Output())
	}
}
