package store_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"

	"github.com/supervaize/supervaizer-go/store"
)

// childEnv, when set, turns the test binary into a helper process (see
// TestMain): "crash:<path>" writes records until killed, "hold:<path>" holds
// the database open until its standard input closes.
const childEnv = "STORE_TEST_CHILD"

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		os.Exit(runChild(mode))
	}
	os.Exit(m.Run())
}

// runChild runs the helper process and returns its exit code.
func runChild(mode string) int {
	kind, path, ok := strings.Cut(mode, ":")
	if !ok {
		fmt.Fprintln(os.Stderr, "bad", childEnv, mode)
		return 2
	}
	s, err := store.Open(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer s.Close()
	switch kind {
	case "hold":
		fmt.Println("ready")
		_, _ = io.Copy(io.Discard, os.Stdin)
		return 0
	case "crash":
		if err := writeUntilKilled(s); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return 0
	}
	fmt.Fprintln(os.Stderr, "bad", childEnv, mode)
	return 2
}

// record is the value of record i in the crash test; sizes vary from a few
// bytes to several pages.
func record(i int) []byte {
	return bytes.Repeat([]byte(fmt.Sprintf("%06d|", i)), 1+i%1500)
}

// writeUntilKilled continues the sequence found in s: for i from the counter
// on, it stores record i, advances the counter to i+1 and prints i once both
// writes returned. It stops by itself after a bounded run.
func writeUntilKilled(s store.Store) error {
	ctx := context.Background()
	existing, _, err := s.PutIfAbsent(ctx, "counter", []byte("0"))
	if err != nil {
		return err
	}
	next := 0
	if existing != nil {
		if next, err = strconv.Atoi(string(existing)); err != nil {
			return err
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for i := next; i < next+5000 && time.Now().Before(deadline); i++ {
		want := record(i)
		got, stored, err := s.PutIfAbsent(ctx, fmt.Sprintf("rec/%06d", i), want)
		if err != nil {
			return err
		}
		if !stored && !bytes.Equal(got, want) { // written before the last kill
			return fmt.Errorf("record %d is corrupt", i)
		}
		swapped, err := s.CompareAndSwap(ctx, "counter", []byte(strconv.Itoa(i)), []byte(strconv.Itoa(i+1)))
		if err != nil {
			return err
		}
		if !swapped {
			return fmt.Errorf("counter is not %d", i)
		}
		if _, err := fmt.Println(i); err != nil {
			return err // the parent is gone
		}
	}
	return nil
}

// startChild starts the test binary as a helper process.
func startChild(t *testing.T, mode string, stdin io.Reader) (*exec.Cmd, *bufio.Scanner) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+mode)
	cmd.Stdin = stdin
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() && stderr.Len() > 0 {
			t.Logf("helper process stderr:\n%s", stderr.String())
		}
	})
	return cmd, bufio.NewScanner(out)
}

// checkFile runs bbolt's consistency check over the whole file.
func checkFile(t *testing.T, path string) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second, ReadOnly: true})
	require.NoError(t, err)
	defer db.Close()
	require.NoError(t, db.View(func(tx *bolt.Tx) error {
		var errs []error
		for err := range tx.Check() {
			errs = append(errs, err)
		}
		return errors.Join(errs...)
	}))
}

// TestCrashRecovery kills a writer with SIGKILL in the middle of its writes,
// several times, and checks that every write that returned before the kill is
// in the file, which stays consistent.
func TestCrashRecovery(t *testing.T) {
	t.Parallel() // mostly waiting
	path := filepath.Join(t.TempDir(), "crash.db")
	lastAcked := -1
	for round := range 3 {
		cmd, lines := startChild(t, "crash:"+path, nil)
		killAfter := 20 + rand.IntN(40)
		for acks := 0; acks < killAfter; acks++ {
			require.True(t, lines.Scan(), "round %d: helper stopped after %d writes: %v", round, acks, lines.Err())
			i, err := strconv.Atoi(lines.Text())
			require.NoError(t, err)
			require.Equal(t, lastAcked+1, i, "round %d: writes out of sequence", round)
			lastAcked = i
		}
		require.NoError(t, cmd.Process.Kill()) // SIGKILL on Unix: no deferred Close runs
		require.Error(t, cmd.Wait(), "round %d: the helper must die from the kill", round)

		checkFile(t, path)
		s, err := store.Open(path)
		require.NoError(t, err, "round %d: reopen after the kill", round)
		counter, found, err := s.Get(t.Context(), "counter")
		require.NoError(t, err)
		require.True(t, found)
		next, err := strconv.Atoi(string(counter))
		require.NoError(t, err)
		require.GreaterOrEqual(t, next, lastAcked+1, "round %d: acknowledged counter update lost", round)
		for i := range next {
			v, found, err := s.Get(t.Context(), fmt.Sprintf("rec/%06d", i))
			require.NoError(t, err)
			require.True(t, found, "round %d: acknowledged record %d lost", round, i)
			require.Equal(t, record(i), v, "round %d: record %d", round, i)
		}
		require.NoError(t, s.Close())
		lastAcked = next - 1 // the next helper continues from the counter
	}
}

func TestReopenKeepsData(t *testing.T) {
	path := filepath.Join(t.TempDir(), "reopen.db")
	s, err := store.Open(path)
	require.NoError(t, err)
	ctx := t.Context()
	_, _, err = s.PutIfAbsent(ctx, "a", []byte("1"))
	require.NoError(t, err)
	_, _, err = s.PutIfAbsent(ctx, "b", nil)
	require.NoError(t, err)
	_, _, err = s.PutIfAbsent(ctx, "c", []byte("gone"))
	require.NoError(t, err)
	require.NoError(t, s.Delete(ctx, "c"))
	swapped, err := s.CompareAndSwap(ctx, "a", []byte("1"), []byte("2"))
	require.NoError(t, err)
	require.True(t, swapped)
	require.NoError(t, s.Close())

	s, err = store.Open(path)
	require.NoError(t, err)
	defer s.Close()
	assert.Equal(t, path, s.Path())
	var got []string
	require.NoError(t, s.Scan(ctx, "", func(k string, v []byte) error {
		got = append(got, k+"="+string(v))
		return nil
	}))
	assert.Equal(t, []string{"a=2", "b="}, got)
}

// holdInChild opens path in a helper process and returns once it holds the
// lock; release makes the helper close the database and waits for its exit.
func holdInChild(t *testing.T, path string) (release func()) {
	t.Helper()
	stdin, closeStdin := io.Pipe()
	cmd, lines := startChild(t, "hold:"+path, stdin)
	require.True(t, lines.Scan(), "helper did not start: %v", lines.Err())
	require.Equal(t, "ready", lines.Text())
	return func() {
		require.NoError(t, closeStdin.Close())
		require.NoError(t, cmd.Wait())
	}
}

func TestOpenLockedInProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "locked.db")
	first, err := store.Open(path)
	require.NoError(t, err)

	start := time.Now()
	second, err := store.Open(path, store.WithLockTimeout(100*time.Millisecond))
	elapsed := time.Since(start)
	require.ErrorIs(t, err, store.ErrLocked)
	assert.Nil(t, second)
	assert.EqualError(t, err, "store: "+path+" is locked by another process (another controller, or another run of this one, uses it); "+
		"give each controller a folder of its own with SUPERVAIZER_DATA_DIR")
	assert.GreaterOrEqual(t, elapsed, 50*time.Millisecond, "bbolt gives up one 50 ms retry early")
	// That it gives up in time is TestLimitLockTimeout's (limits_test.go).

	require.NoError(t, first.Close())
	second, err = store.Open(path, store.WithLockTimeout(100*time.Millisecond))
	require.NoError(t, err, "the lock is released by Close")
	require.NoError(t, second.Close())
}

func TestOpenLockedByAnotherProcess(t *testing.T) {
	t.Parallel() // mostly waiting
	path := filepath.Join(t.TempDir(), "held.db")
	release := holdInChild(t, path)

	start := time.Now()
	_, err := store.Open(path) // the default lock timeout
	elapsed := time.Since(start)
	require.ErrorIs(t, err, store.ErrLocked)
	assert.Contains(t, err.Error(), path)
	assert.GreaterOrEqual(t, elapsed, store.DefaultLockTimeout/2, "Open must wait for the lock")

	release()
	s, err := store.Open(path)
	require.NoError(t, err, "the lock is released when the holder exits")
	require.NoError(t, s.Close())
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	notDB := filepath.Join(dir, "not-a-db")
	require.NoError(t, os.WriteFile(notDB, bytes.Repeat([]byte("garbage!"), 1024), 0o600))
	aFile := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(aFile, nil, 0o600))

	tests := []struct {
		name, path, wantMsg string
	}{
		{"empty path", "", "store: open: empty path"},
		{"not a database", notDB, "store: open " + notDB + ":"},
		{"a directory", dir, "store: open " + dir + ":"},
		{"parent is a file", filepath.Join(aFile, "store.db"), "store: open " + filepath.Join(aFile, "store.db") + ":"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := store.Open(tt.path)
			require.Error(t, err)
			assert.Nil(t, s)
			assert.True(t, strings.HasPrefix(err.Error(), tt.wantMsg), "error %q", err)
			assert.NotErrorIs(t, err, store.ErrLocked)
		})
	}
}

func TestDefaultPath(t *testing.T) {
	tests := []struct {
		name, dir, want string
	}{
		{"set", "/var/lib/agent", filepath.Join("/var/lib/agent", "supervaizer.db")},
		{"surrounding spaces", " /data ", filepath.Join("/data", "supervaizer.db")},
		{"blank", " \t", filepath.Join(os.TempDir(), "supervaizer-"+strconv.Itoa(os.Getuid()), "supervaizer.db")},
		{"empty", "", filepath.Join(os.TempDir(), "supervaizer-"+strconv.Itoa(os.Getuid()), "supervaizer.db")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, store.DefaultPath(tt.dir))
		})
	}
}

// TestControllerPath: each controller has a folder of its own by default;
// SUPERVAIZER_DATA_DIR's value wins; a file in the shared default of earlier
// versions stays in use, reported, until it is moved.
func TestControllerPath(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	userDir := filepath.Join(tmp, "supervaizer-"+strconv.Itoa(os.Getuid()))
	for _, tc := range []struct {
		name, dataDir, controller, want string
	}{
		{"data dir", " /var/lib/agent ", "research-agent", filepath.Join("/var/lib/agent", "supervaizer.db")},
		{"an agent", "", "research-agent", filepath.Join(userDir, "research-agent", "supervaizer.db")},
		{"another agent", "", "hello-agent", filepath.Join(userDir, "hello-agent", "supervaizer.db")},
		{"a server id", "", "1f0e6c1e-1d2b-4c3d-8e4f-5a6b7c8d9e0f", filepath.Join(userDir, "1f0e6c1e-1d2b-4c3d-8e4f-5a6b7c8d9e0f", "supervaizer.db")},
		{"no path in a name", "", "../x/y", filepath.Join(userDir, "..-x-y", "supervaizer.db")},
		{"dots only", "", "..", filepath.Join(userDir, "controller", "supervaizer.db")},
		{"empty", "", "", filepath.Join(userDir, "controller", "supervaizer.db")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, shared := store.ControllerPath(tc.dataDir, tc.controller)
			assert.Equal(t, tc.want, path)
			assert.False(t, shared)
		})
	}

	// An upgrade: the shared default of earlier versions holds records.
	old, err := store.Open(filepath.Join(userDir, "supervaizer.db"))
	require.NoError(t, err)
	_, _, err = old.PutIfAbsent(t.Context(), "k", []byte("v"))
	require.NoError(t, err)
	require.NoError(t, old.Close())
	path, shared := store.ControllerPath("", "research-agent")
	assert.Equal(t, filepath.Join(userDir, "supervaizer.db"), path, "the records of the old default stay in use")
	assert.True(t, shared)
	path, shared = store.ControllerPath("/data", "research-agent")
	assert.Equal(t, filepath.Join("/data", "supervaizer.db"), path, "SUPERVAIZER_DATA_DIR still wins")
	assert.False(t, shared)
}

func TestWithLockTimeoutNonPositiveKeepsDefault(t *testing.T) {
	t.Parallel() // mostly waiting
	path := filepath.Join(t.TempDir(), "locked.db")
	first, err := store.Open(path)
	require.NoError(t, err)
	defer first.Close()
	start := time.Now()
	_, err = store.Open(path, store.WithLockTimeout(0), store.WithLockTimeout(-time.Second))
	require.ErrorIs(t, err, store.ErrLocked, "a non-positive timeout must not wait forever")
	assert.GreaterOrEqual(t, time.Since(start), store.DefaultLockTimeout/2)
}

// TestBoltGroupsConcurrentWrites checks that overlapping writes share
// commits (one fsync for many calls) and that a write alone commits at
// once, without the batch delay.
func TestBoltGroupsConcurrentWrites(t *testing.T) {
	s := openBolt(t)
	ctx := t.Context()

	before := store.CommittedTxID(s)
	_, stored, err := s.PutIfAbsent(ctx, "alone", []byte("v"))
	require.NoError(t, err)
	require.True(t, stored)
	assert.Equal(t, before+1, store.CommittedTxID(s), "a write alone is one commit")
	// A write that changes nothing commits nothing.
	_, stored, err = s.PutIfAbsent(ctx, "alone", []byte("w"))
	require.NoError(t, err)
	require.False(t, stored)
	assert.Equal(t, before+1, store.CommittedTxID(s), "an unchanged write commits nothing")

	const n = 64
	before = store.CommittedTxID(s)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			_, stored, err := s.PutIfAbsent(ctx, fmt.Sprintf("group/%02d", i), []byte("v"))
			assert.NoError(t, err)
			assert.True(t, stored)
		})
	}
	close(start)
	wg.Wait()
	commits := store.CommittedTxID(s) - before
	t.Logf("%d concurrent writes, %d commits", n, commits)
	assert.Less(t, commits, uint64(n), "concurrent writes were not grouped into shared commits")
	for i := range n {
		_, found, err := s.Get(ctx, fmt.Sprintf("group/%02d", i))
		require.NoError(t, err)
		assert.True(t, found)
	}
}
