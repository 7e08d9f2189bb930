package proctest

import (
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
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
	if os.Getenv(childEnv) == "serve" {
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

func TestFreeAddr(t *testing.T) {
	t.Parallel()
	addr := FreeAddr(t)
	_, port, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	n, err := strconv.Atoi(port)
	require.NoError(t, err)
	assert.True(t, n >= minFixedPort && n < ephemeralLow(), "port %d is below the ephemeral range", n)
	ln, err := net.Listen("tcp", addr)
	require.NoError(t, err, "the address is free")
	require.NoError(t, ln.Close())
}
