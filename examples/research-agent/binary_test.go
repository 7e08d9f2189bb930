package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/a2a"
)

// syncBuffer is a bytes.Buffer safe for the process's writer and the test.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// freeAddr returns a loopback address with a port that was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// TestBinary builds the real binary, starts it with an empty environment apart
// from local mode, a data directory and an address, waits until it serves its
// discovery document, then stops it with SIGTERM and expects a clean exit.
func TestBinary(t *testing.T) {
	goTool, err := exec.LookPath("go")
	require.NoError(t, err, "the go tool is needed to build the binary")
	bin := filepath.Join(t.TempDir(), "research-agent")
	buildStart := time.Now()
	out, err := exec.CommandContext(t.Context(), goTool, "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	t.Logf("go build: %s", time.Since(buildStart).Round(time.Millisecond))

	addr := freeAddr(t)
	cmd := exec.Command(bin)
	cmd.Env = []string{
		"SUPERVAIZER_LOCAL_MODE=true",
		"SUPERVAIZER_DATA_DIR=" + t.TempDir(),
		"SUPERVAIZER_ADDR=" + addr,
	}
	var stdout, stderr syncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	require.NoError(t, cmd.Start())
	exited, done := make(chan error, 1), make(chan struct{})
	go func() { exited <- cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		select {
		case <-done:
		default:
			_ = cmd.Process.Kill()
			<-done
		}
	})

	url := "http://" + addr + a2a.AgentsListPath
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		require.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		cancel()
		if err == nil {
			_ = resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode)
			break
		}
		select {
		case werr := <-exited:
			t.Fatalf("the agent exited before serving (%v)\nstderr:\n%s", werr, stderr.String())
		default:
		}
		require.True(t, time.Now().Before(deadline), "no answer at %s within 30 s\nstderr:\n%s", url, stderr.String())
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("serving after %s", time.Since(start).Round(time.Millisecond))
	assert.Contains(t, stdout.String(), "X-API-Key: local-dev", "the try-it block")
	assert.Contains(t, stderr.String(), "mode=local")
	assert.Contains(t, stderr.String(), "api_key=local-dev", "the local-mode key to send")
	assert.Contains(t, stderr.String(), "url=http://"+addr)

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-exited:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("exit status %d after SIGTERM\nstderr:\n%s", ee.ExitCode(), stderr.String())
		}
		require.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatalf("no exit within 20 s of SIGTERM\nstderr:\n%s", stderr.String())
	}
	assert.Contains(t, stderr.String(), `msg="controller stopped"`)
}
