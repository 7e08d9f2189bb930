//go:build unix

package supervaizer_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	sv "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/store"
)

// spoolChildEnv runs TestKeptResultSpoolChild as a child process:
// "<database file>|<data folder>|fail" or "…|replay".
const spoolChildEnv = "SUPERVAIZER_SPOOL_CHILD"

// TestKeptResultSpoolChild is the child process of TestKeptResultSpool. In
// phase "fail" the result writes fail: it sends one job.start, prints the
// answer, and on SIGTERM shuts down with a 1 s deadline. In phase "replay" it
// starts on the same files and sends the same job.start again. The handler
// records a durable effect per job and prints each run.
func TestKeptResultSpoolChild(t *testing.T) {
	v := os.Getenv(spoolChildEnv)
	if v == "" {
		return // only meaningful as the spool test's child process
	}
	args := strings.Split(v, "|")
	bolt, err := store.Open(args[0])
	require.NoError(t, err)
	defer bolt.Close()
	st := &doneWriteStore{Store: bolt}
	st.broken.Store(args[2] == "fail")
	ts := newKeptServer(t, st, func(ctx context.Context, req *sv.ActionRequest) (*sv.ActionResult, error) {
		_, created, err := bolt.PutIfAbsent(ctx, store.Key("effects", req.JobID), []byte(`{}`))
		if err != nil {
			return nil, err
		}
		fmt.Printf("ran created=%v\n", created)
		return sv.OK(sv.JobStarted(req.JobID, map[string]any{"phase": args[2]})), nil
	}, sv.WithEnv(func(k string) string {
		if k == store.EnvDataDir {
			return args[1]
		}
		return ""
	}))
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM)
	require.NoError(t, ts.Server.Start(context.Background())) // replays the spool file before serving
	res, err := keptStart(ts, "k-spool")
	require.NoError(t, err)
	fmt.Printf("answer %s\n", res)
	if args[2] != "fail" {
		return
	}
	<-stop
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = ts.Server.Shutdown(ctx)
	fmt.Println("stopped")
}

// TestKeptResultSpool (issue 35 row 3, spec item 73): a process whose result
// write fails gets SIGTERM: the kept result, not recorded before the shutdown
// deadline, goes to the spool file in the data folder, and the next start of
// the instance records it before serving: the retry replays the first answer
// and the handler ran once in all. On the code before the fix the result was
// tried once at SIGTERM ("not recorded before the lease ended") and lost,
// and the restarted process ran the handler again.
func TestKeptResultSpool(t *testing.T) {
	dir := t.TempDir()
	arg := filepath.Join(dir, "idem.db") + "|" + filepath.Join(dir, "data")
	run := func(phase string, term bool) []string {
		cmd := exec.Command(os.Args[0], "-test.run=^TestKeptResultSpoolChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), spoolChildEnv+"="+arg+"|"+phase)
		var stderr bytes.Buffer // read once the child has exited
		cmd.Stderr = &stderr
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		var lines []string
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			lines = append(lines, line)
			if term && strings.HasPrefix(line, "answer ") {
				require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
			}
		}
		require.NoError(t, cmd.Wait(), "%s:\n%s\n%s", phase, strings.Join(lines, "\n"), stderr.String())
		return lines
	}
	pick := func(lines []string, prefix string) []string {
		var out []string
		for _, l := range lines {
			if v, ok := strings.CutPrefix(l, prefix); ok {
				out = append(out, v)
			}
		}
		return out
	}

	first := run("fail", true)
	require.Equal(t, []string{"created=true"}, pick(first, "ran "), strings.Join(first, "\n"))
	answers := pick(first, "answer ")
	require.Len(t, answers, 1)
	assert.Contains(t, answers[0], `"phase":"fail"`, "the caller got the handler's result")
	require.Contains(t, first, "stopped")
	_, err := os.Stat(filepath.Join(dir, "data"))
	require.NoError(t, err, "the spool file's folder exists")

	second := run("replay", false)
	assert.Empty(t, pick(second, "ran "), "the handler does not run again after the restart:\n%s", strings.Join(second, "\n"))
	assert.Equal(t, answers, pick(second, "answer "), "the retry replays the first answer byte for byte")
}
