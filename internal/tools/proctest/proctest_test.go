package proctest

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// childEnv makes this test binary act as the process under test.
const childEnv = "PROCTEST_CHILD"

// TestMain runs the child when childEnv is set: it says ready and exits 0 on
// SIGTERM.
func TestMain(m *testing.M) {
	switch os.Getenv(childEnv) {
	case "listen":
		listenChild()
	case "fail":
		os.Exit(3)
	case "serve":
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGTERM)
		fmt.Println("ready")
		fmt.Fprintln(os.Stderr, "waiting for SIGTERM")
		<-sig
		fmt.Fprintln(os.Stderr, "stopped")
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// childFormat picks the log lines of the "listen" child: the SDK's text
// handler (msg="controller ready"), the default logger's, or the text
// handler's when Start ran before Serve (msg="controller listening").
const childFormat = "PROCTEST_FORMAT"

// listenChild listens on port 0, logs the address it bound as the SDK does and
// answers "ok" until SIGTERM.
func listenChild() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	url := "http://" + ln.Addr().String()
	switch os.Getenv(childFormat) {
	case "text":
		fmt.Fprintf(os.Stderr, "time=2026-01-01T00:00:00Z level=INFO msg=\"controller ready\" mode=local url=%s server_id=x\n", url)
	case "listening": // Start ran before Serve: the ready line has no URL
		fmt.Fprintln(os.Stderr, `time=2026-01-01T00:00:00Z level=INFO msg="controller ready" mode=local server_id=x`)
		fmt.Fprintf(os.Stderr, "time=2026-01-01T00:00:00Z level=INFO msg=\"controller listening\" url=%s\n", url)
	default:
		fmt.Fprintf(os.Stderr, "2026/01/01 00:00:00 INFO controller ready mode=local url=%s server_id=x\n", url)
	}
	go func() {
		_ = http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }))
	}()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM)
	<-sig
	os.Exit(0)
}

func TestStartAwaitStop(t *testing.T) {
	t.Parallel()
	self, err := os.Executable()
	require.NoError(t, err)
	p := Start(t, self, []string{childEnv + "=serve"})
	p.AwaitServing(t, "ready", func() bool { return strings.Contains(p.Stdout.String(), "ready") })
	p.Stop(t, syscall.SIGTERM)
	assert.Equal(t, "ready\n", p.Stdout.String())
	assert.Equal(t, "waiting for SIGTERM\nstopped\n", p.Stderr.String())
	assert.Equal(t, "ready\nwaiting for SIGTERM\nstopped\n", p.Output())
}

// TestWait: Wait returns how a process that exits on its own ended.
func TestWait(t *testing.T) {
	t.Parallel()
	self, err := os.Executable()
	require.NoError(t, err)
	p := Start(t, self, []string{childEnv + "=fail"})
	var ee *exec.ExitError
	require.ErrorAs(t, p.Wait(t), &ee)
	assert.Equal(t, 3, ee.ExitCode())
}

func TestBufferConcurrentUse(t *testing.T) {
	t.Parallel()
	var b Buffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				_, _ = b.Write([]byte("x"))
				_ = b.String()
			}
		})
	}
	wg.Wait()
	assert.Equal(t, strings.Repeat("x", 800), b.String())
}

// TestAwaitURL: the address a process bound on port 0 is read from its
// "controller ready" line, in the SDK's text and default log formats, or from
// "controller listening" when the ready line has none, and serves there.
func TestAwaitURL(t *testing.T) {
	t.Parallel()
	self, err := os.Executable()
	require.NoError(t, err)
	for _, format := range []string{"text", "default", "listening"} {
		t.Run(format, func(t *testing.T) {
			t.Parallel()
			p := Start(t, self, []string{childEnv + "=listen", childFormat + "=" + format})
			url := p.AwaitURL(t)
			assert.Regexp(t, `^http://127\.0\.0\.1:[1-9][0-9]*$`, url)
			resp, err := http.Get(url)
			require.NoError(t, err, "the process serves at the URL it logged")
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.NoError(t, resp.Body.Close())
			assert.Equal(t, "ok", string(body))
			p.Stop(t, syscall.SIGTERM)
		})
	}
}
