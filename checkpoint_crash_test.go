package supervaizer_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	sv "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/checkpoint"
	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/store"
	"github.com/supervaize/supervaizer-go/studio"
)

// The crash tests run a guarded step in a child process (this test binary,
// re-executed) on the durable file store, kill it with SIGKILL at a point
// between two steps, then restart in the parent on the same file: the effect
// has run at most once, and recovery completes with exactly one advance.

// cpCrashEnv turns TestGuardedStepCrashChild into the child: its value is
// "<point>|<directory>|<Studio URL>|<checkpoint token>".
const cpCrashEnv = "SUPERVAIZER_CHECKPOINT_CRASH_CHILD"

// Crash points, in the order of the rule-checkpoint protocol.
const (
	crashBeforeEffect = "before-effect" // "effect started" persisted, effect not called yet
	crashDuringEffect = "during-effect" // the effect happened, its outcome is not recorded
	crashBeforeAfter  = "before-after"  // outcome recorded, after checkpoint in flight
	crashAdvancing    = "advancing"     // "advancement started" persisted, advance not done
)

// crashMarker is printed by the child when it reaches a crash point.
const crashMarker = "CHECKPOINT-CRASH-POINT "

// crashEnv is one side (child or parent) of a crash test, on the files of dir.
type crashEnv struct {
	dir   string
	store store.Store
	gate  *checkpoint.Gate
}

// openCrashEnv opens the durable store in dir and builds the agent, server
// and gate exactly as the other side does.
func openCrashEnv(t testing.TB, dir, studioURL, token string) *crashEnv {
	t.Helper()
	st, err := store.Open(filepath.Join(dir, "state.db"), store.WithLockTimeout(5*time.Second))
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	a := cpRegistration(t, cpAgentSlug, cpAgentName)
	srv, err := sv.NewServer([]*sv.Agent{a}, sv.WithEnv(func(string) string { return "" }), sv.WithLocalMode(true), sv.WithStore(st))
	require.NoError(t, err)
	require.NoError(t, srv.Start(context.Background())) // guarded steps call Studio only once the server started
	account, err := studio.NewClient(studio.Config{APIURL: studioURL, WorkspaceID: cpWorkspace, APIKey: cpAPIKey, MaxRetries: studio.NoRetries})
	require.NoError(t, err)
	snapshot := cpSnapshotInput(cpSnapshot, "https://x.invalid/")
	snapshot["checkpoint_token"] = token
	gate, err := checkpoint.NewGate(a.Checkpoints(), account, cpJobStart(t, cpAgentSlug, cpJob, snapshot))
	require.NoError(t, err)
	return &crashEnv{dir: dir, store: st, gate: gate}
}

// appendLine records one effect or advance in a file, the external system.
func (e *crashEnv) appendLine(name string) error {
	f, err := os.OpenFile(filepath.Join(e.dir, name), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.WriteString("x\n"); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

func (e *crashEnv) count(t testing.TB, name string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(e.dir, name))
	if os.IsNotExist(err) {
		return 0
	}
	require.NoError(t, err)
	return strings.Count(string(b), "\n")
}

// step is the guarded step of both sides; crashAt makes it stop forever at
// that point (the parent kills it there).
func (e *crashEnv) step(crashAt string) checkpoint.Step[string] {
	hang := func(point string) {
		if point == crashAt {
			fmt.Println(crashMarker + point)
			time.Sleep(time.Minute)
		}
	}
	return checkpoint.Step[string]{
		CaseID: cpCase, OccurrenceID: cpOccurrence, StepID: cpStep,
		BeforeContext: map[string]any{"operation": "send_brief"},
		Effect: func(context.Context) (string, error) {
			hang(crashBeforeEffect)
			if err := e.appendLine("effects"); err != nil {
				return "", err
			}
			hang(crashDuringEffect)
			return "msg-42", nil
		},
		AfterContext: cpAfterContext,
		Advance: func(context.Context, string) error {
			hang(crashAdvancing)
			return e.appendLine("advances")
		},
	}
}

// TestGuardedStepCrashChild is the child process of TestGuardedStepCrashRecovery.
// Run directly, it runs the same step without a crash: one effect, one advance.
func TestGuardedStepCrashChild(t *testing.T) {
	spec := os.Getenv(cpCrashEnv)
	if spec == "" {
		fake := newCPAPI(t, "")
		e := openCrashEnv(t, t.TempDir(), fake.URL(), cpAPIToken(fake))
		res, err := checkpoint.Run(t.Context(), e.gate, e.step(""))
		require.NoError(t, err)
		assert.Equal(t, "msg-42", res)
		assert.Equal(t, 1, e.count(t, "effects"))
		assert.Equal(t, 1, e.count(t, "advances"))
		return
	}
	parts := strings.SplitN(spec, "|", 4)
	require.Len(t, parts, 4)
	e := openCrashEnv(t, parts[1], parts[2], parts[3])
	_, err := checkpoint.Run(context.Background(), e.gate, e.step(parts[0]))
	fmt.Println("child finished without being killed:", err)
}

func TestGuardedStepCrashRecovery(t *testing.T) {
	for _, point := range []string{crashBeforeEffect, crashDuringEffect, crashBeforeAfter, crashAdvancing} {
		t.Run(point, func(t *testing.T) {
			t.Parallel()
			dir, fake := t.TempDir(), newCPAPI(t, "")
			token, childURL := cpAPIToken(fake), fake.URL()
			afterSent := make(chan struct{}, 1)
			if point == crashBeforeAfter {
				// The after call reaches Studio, which never answers: the child
				// is killed while it waits. Every other call reaches the fake.
				front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					raw, _ := io.ReadAll(r.Body)
					var body map[string]any
					_ = json.Unmarshal(raw, &body)
					if r.URL.Path == studio.RuleCheckpointsPath && body["phase"] == contracts.PhaseAfter {
						afterSent <- struct{}{}
						<-r.Context().Done()
						return
					}
					r.Body = io.NopCloser(bytes.NewReader(raw))
					fake.ServeHTTP(w, r)
				}))
				t.Cleanup(front.Close)
				childURL = front.URL
			}
			runChildUntilKilled(t, point, dir, childURL, token, afterSent)

			// Restart on the same file.
			e := openCrashEnv(t, dir, fake.URL(), token)
			effects := e.count(t, "effects")
			require.LessOrEqual(t, effects, 1)
			_, err := checkpoint.Run(t.Context(), e.gate, e.step(""))
			var rr *checkpoint.RecoveryRequiredError
			require.ErrorAs(t, err, &rr, "a started effect is never run again automatically")
			assert.Equal(t, effects, e.count(t, "effects"))
			assert.Zero(t, e.count(t, "advances"))

			recovery := checkpoint.Recovery[string]{CaseID: cpCase, OccurrenceID: cpOccurrence, Result: "msg-42",
				AfterContext: cpAfterContext, Advance: e.step("").Advance}
			switch point {
			case crashBeforeEffect, crashDuringEffect:
				require.True(t, rr.EffectStarted)
				require.False(t, rr.EffectCompleted)
				// The agent establishes the outcome in the external system; an
				// effect that did not happen is performed by the agent itself.
				if effects == 0 {
					require.NoError(t, e.appendLine("effects"))
				}
				recovery.ConfirmEffect = true
			case crashBeforeAfter:
				require.True(t, rr.EffectCompleted)
			case crashAdvancing:
				_, err := checkpoint.Recover(t.Context(), e.gate, recovery)
				require.ErrorAs(t, err, &rr)
				assert.Equal(t, "advancement is ambiguous", rr.Reason)
				assert.Equal(t, 1, e.count(t, "effects"))
				assert.Zero(t, e.count(t, "advances"), "recovery refuses to advance twice")
				return
			}
			res, err := checkpoint.Recover(t.Context(), e.gate, recovery)
			require.NoError(t, err)
			assert.Equal(t, "msg-42", res)
			// Recovering again changes nothing.
			_, err = checkpoint.Recover(t.Context(), e.gate, recovery)
			require.NoError(t, err)
			assert.Equal(t, 1, e.count(t, "effects"))
			assert.Equal(t, 1, e.count(t, "advances"))
			assert.Len(t, cpAPICalls(fake, contracts.PhaseBefore), 1, "the before checkpoint is never asked again")
		})
	}
}

// runChildUntilKilled starts the child, waits until it reaches point (its
// marker on stdout, or a signal on reached) and kills it with SIGKILL.
func runChildUntilKilled(t *testing.T, point, dir, studioURL, token string, reached <-chan struct{}) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestGuardedStepCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), cpCrashEnv+"="+point+"|"+dir+"|"+studioURL+"|"+token)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	lines := make(chan string, 16)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	var seen []string
	deadline := time.After(30 * time.Second)
wait:
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				_ = cmd.Wait()
				t.Fatalf("the child exited before %s:\n%s\n%s", point, strings.Join(seen, "\n"), stderr.String())
			}
			seen = append(seen, line)
			if line == crashMarker+point {
				break wait
			}
		case <-reached:
			break wait
		case <-deadline:
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("the child never reached %s:\n%s\n%s", point, strings.Join(seen, "\n"), stderr.String())
		}
	}
	require.NoError(t, cmd.Process.Kill()) // SIGKILL on Unix
	_ = cmd.Wait()
	for range lines { // drain
	}
}
