package preview

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// The browser tests run when SUPERVAIZER_TEST_BROWSER is set (1 finds
// chromium on PATH; any other value is the browser's path). Without it they
// skip, saying so: `make test` runs without a browser, `make browser-test`
// and CI run them. SUPERVAIZER_SCREENSHOTS names a folder where each view is
// saved as a PNG (`make screenshots` writes docs/images/).
const (
	envBrowser     = "SUPERVAIZER_TEST_BROWSER"
	envScreenshots = "SUPERVAIZER_SCREENSHOTS"
)

// browserPath returns the Chromium to drive, skipping the test when browser
// tests are not requested and failing it when they are but none is found.
func browserPath(t *testing.T) string {
	t.Helper()
	v := os.Getenv(envBrowser)
	if v == "" {
		t.Skipf("browser tests did not run: set %s=1 (or the Chromium path), or run make browser-test", envBrowser)
	}
	if v != "1" && v != "true" {
		return v
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatalf("%s is set but no Chromium was found on PATH (apt-get install chromium)", envBrowser)
	return ""
}

// newBrowser starts headless Chromium with a fresh profile and returns a tab.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	path := browserPath(t)
	// A fresh profile, removed after the browser is gone (not t.TempDir:
	// Chromium's helpers may still be writing to it when the test ends).
	profile, err := os.MkdirTemp("", "preview-chromium-")
	require.NoError(t, err)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(1280, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(func() {
		cancelTimeout()
		cancelTab()
		cancelAlloc()
		for i := 0; i < 10 && os.RemoveAll(profile) != nil; i++ {
			time.Sleep(200 * time.Millisecond)
		}
	})
	require.NoError(t, chromedp.Run(ctx), "start Chromium")
	return ctx
}

var (
	buildOnce sync.Once
	agentBin  string
	buildErr  error
)

// buildAgent builds examples/research-agent once per test binary.
func buildAgent(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "preview-e2e-")
		if err != nil {
			buildErr = err
			return
		}
		agentBin = filepath.Join(dir, "research-agent")
		// The example is a module of its own: build it from its directory.
		cmd := exec.Command("go", "build", "-o", agentBin, ".")
		cmd.Dir = filepath.Join("..", "..", "examples", "research-agent")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build examples/research-agent: %v\n%s", err, out)
		}
	})
	require.NoError(t, buildErr)
	return agentBin
}

// listening finds the preview's URL in the startup log, which prints it once
// the controller listens.
var listening = regexp.MustCompile(`msg="local preview: [^"]*" url=(http://\S+)/_preview/`)

// startAgent runs the research agent in local mode on a free loopback port
// with a fresh data folder and returns its base URL.
func startAgent(t *testing.T) string {
	t.Helper()
	bin := buildAgent(t)
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(),
		"SUPERVAIZER_LOCAL_MODE=true",
		"SUPERVAIZER_ADDR=127.0.0.1:0",
		"SUPERVAIZER_DATA_DIR="+t.TempDir(),
		"SUPERVAIZER_API_KEY=", "SUPERVAIZE_API_URL=", "SUPERVAIZE_API_KEY=", "SUPERVAIZE_WORKSPACE_ID=",
	)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	cmd.Stdout = io.Discard
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sent := false
		for sc.Scan() {
			if m := listening.FindStringSubmatch(sc.Text()); m != nil && !sent {
				found <- m[1]
				sent = true
			}
		}
	}()
	select {
	case base := <-found:
		return base
	case <-time.After(60 * time.Second):
		t.Fatal("the research agent did not log its preview URL within 60 s")
		return ""
	}
}

// shot saves a full-page screenshot of the current view when
// SUPERVAIZER_SCREENSHOTS names a folder.
func shot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv(envScreenshots)
	if dir == "" {
		return
	}
	var buf []byte
	require.NoError(t, chromedp.Run(ctx, chromedp.FullScreenshot(&buf, 100)))
	require.NoError(t, os.WriteFile(filepath.Join(dir, name), buf, 0o644))
}

// ready waits until the page script has run.
func ready() chromedp.Action {
	return chromedp.WaitVisible(`body[data-ready="true"]`)
}

// eventsConnected waits until the live event panel is connected.
func eventsConnected() chromedp.Action {
	return chromedp.WaitVisible(`body[data-events="connected"]`)
}

func surfaceURL(base, surface string) string {
	return base + "/_preview/surface?agent=research-agent&surface=" + surface
}

// setupPlanFields reads the setup plan's field ids from the Agent Card's
// registration, the source the form must cover.
func setupPlanFields(t *testing.T, base string) []string {
	t.Helper()
	resp, err := http.Get(base + "/.well-known/agent-card.json")
	require.NoError(t, err)
	defer resp.Body.Close()
	var card struct {
		Supervaizer struct {
			V2 struct {
				JobPolicy struct {
					Setup struct {
						Plan struct {
							Steps []struct {
								Fields []struct {
									ID string `json:"id"`
								} `json:"fields"`
							} `json:"steps"`
						} `json:"plan"`
					} `json:"setup"`
				} `json:"job_policy"`
			} `json:"v2"`
		} `json:"supervaizer"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&card))
	var ids []string
	for _, s := range card.Supervaizer.V2.JobPolicy.Setup.Plan.Steps {
		for _, f := range s.Fields {
			ids = append(ids, f.ID)
		}
	}
	require.NotEmpty(t, ids, "the research agent declares a setup plan with fields")
	return ids
}

func TestBrowserJobStartFlow(t *testing.T) {
	ctx := newBrowser(t)
	base := startAgent(t)
	planFields := setupPlanFields(t, base)

	var overview string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(base+"/_preview/"), ready(), eventsConnected(),
		chromedp.Text(`#setup-plan`, &overview),
	))
	for _, id := range planFields {
		require.Contains(t, overview, id, "the overview lists the setup plan field %s", id)
	}
	shot(t, ctx, "preview-overview.png")

	// Every field of the setup plan is rendered by the job.start form.
	var rendered []string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(surfaceURL(base, "job.start")), ready(), eventsConnected(),
		chromedp.Evaluate(`Array.from(document.querySelectorAll('#surface-form > .field')).map(f => f.dataset.field)`, &rendered),
	))
	for _, id := range planFields {
		require.Contains(t, rendered, id, "the job.start form renders the setup field %s", id)
	}

	// The document's preview action shows the setup plan for the input.
	var plan string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.SendKeys(`#f-topic_id`, "eu-battery-market"),
		chromedp.SetValue(`#f-depth`, "deep"),
		chromedp.Click(`#preview-action`),
		chromedp.WaitVisible(`#result-plan`),
		chromedp.Text(`#result-plan-json`, &plan),
	))
	require.Contains(t, plan, "deep dive")
	var resubmitHidden bool
	require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(`document.querySelector('#resubmit').hidden`, &resubmitHidden)))
	require.True(t, resubmitHidden, "a preview is not a submit to repeat")

	// Fill it and submit: a job starts, its effects and job_state show, and
	// the live event panel shows job.started.
	var key, effects string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.SendKeys(`#f-goal`, "What moves EU battery prices in 2027?"),
		chromedp.Click(`#submit`),
		chromedp.WaitVisible(`#result[data-outcome="ok"]`),
		chromedp.WaitVisible(`#result-job`),
		chromedp.Text(`#result-key`, &key),
		chromedp.Text(`#result-effects`, &effects),
		chromedp.WaitVisible(`#event-list li[data-effect="job.started"]`),
	))
	require.Contains(t, effects, "job.started")
	m := regexp.MustCompile(`job (job-[0-9a-f]+)`).FindStringSubmatch(key)
	require.NotNil(t, m, "the result names the job: %q", key)
	jobID := m[1]
	require.Contains(t, effects, jobID)

	// The same form submitted again with the same key is the idempotent replay.
	var replay, key2 string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Click(`#resubmit`),
		chromedp.WaitVisible(`#result-replay`),
		chromedp.Text(`#result-replay`, &replay),
		chromedp.Text(`#result-key`, &key2),
	))
	require.Contains(t, replay, "Idempotent replay")
	require.Equal(t, key, key2, "the replay reuses the idempotency key and job id")
	shot(t, ctx, "preview-form.png")

	// A new submit gets a new key and starts another job (no replay).
	var key3 string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Click(`#submit`),
		chromedp.WaitNotVisible(`#result-replay`),
		chromedp.WaitVisible(`#result[data-outcome="ok"]`),
		chromedp.Text(`#result-key`, &key3),
	))
	require.NotEqual(t, key, key3)

	// The job is in the jobs view with its setup case and its awaiting step.
	var lanes []string
	sel := `article.job[data-job-id="` + jobID + `"]`
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(base+"/_preview/jobs"), ready(),
		chromedp.WaitVisible(sel+` .lane[data-lane="setup"] .case`),
		chromedp.Evaluate(`Array.from(document.querySelectorAll('`+sel+` .lane')).map(l => l.dataset.lane)`, &lanes),
	))
	require.Equal(t, []string{"setup"}, lanes)
	shot(t, ctx, "preview-jobs.png")

	// job.sync on demand reloads the page with the synced state: wait for
	// the new document (the mark set on this one is gone). The jobs view
	// also redraws itself on each effect of the event stream, so its
	// controls are clicked in the page, not through a node id a redraw may
	// have replaced meanwhile ("Could not find node with given id").
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Evaluate(`document.body.dataset.beforeSync = 'true'`, nil),
		chromedp.Evaluate(`document.querySelector('`+sel+` button.sync').click()`, nil),
		chromedp.WaitVisible(`body[data-ready="true"]:not([data-before-sync])`),
		chromedp.WaitVisible(sel+` .lane[data-lane="setup"] .case`),
	))

	// The awaiting step opens its surface: the DocumentReview of the draft.
	var review string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Evaluate(`document.querySelector('`+sel+` a.open-awaiting').click()`, nil),
		chromedp.WaitVisible(`#review-value`),
		ready(),
		chromedp.Text(`#review-value`, &review),
	))
	require.Contains(t, review, "eu-battery-market")
	var formIDs []string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Evaluate(`[document.querySelector('#surface-form').dataset.jobId, document.querySelector('#surface-form').dataset.stepId]`, &formIDs)))
	require.Equal(t, jobID, formIDs[0], "the review form targets the job")
	require.NotEmpty(t, formIDs[1])
	shot(t, ctx, "preview-review.png")
}

func TestBrowserInvalidInputShowsFieldErrors(t *testing.T) {
	ctx := newBrowser(t)
	base := startAgent(t)

	var topicErr, goalErr, status string
	var depthHidden bool
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(surfaceURL(base, "job.start")), ready(), eventsConnected(),
		// topic_id left empty (required), goal over its 600-character limit.
		chromedp.SetValue(`#f-goal`, strings.Repeat("g", 601)),
		chromedp.Click(`#submit`),
		chromedp.WaitVisible(`#result[data-outcome="refused"]`),
		chromedp.Text(`#result-status`, &status),
		chromedp.Text(`.field[data-field="topic_id"] > .field-error`, &topicErr),
		chromedp.Text(`.field[data-field="goal"] > .field-error`, &goalErr),
		chromedp.Evaluate(`document.querySelector('.field[data-field="depth"] > .field-error').hidden`, &depthHidden),
	))
	require.Contains(t, status, "-32602", "the SDK refused the request before any handler ran")
	require.NotEmpty(t, topicErr)
	require.Contains(t, goalErr, "600")
	require.True(t, depthHidden, "no error is shown next to a valid field")
	shot(t, ctx, "preview-errors.png")

	// No job started: the refused request never reached the handler.
	var noJobs bool
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(base+"/_preview/jobs"), ready(),
		chromedp.Evaluate(`document.querySelector('#no-jobs') !== null && document.querySelectorAll('article.job').length === 0`, &noJobs),
	))
	require.True(t, noJobs)
}

func TestBrowserDashboard(t *testing.T) {
	ctx := newBrowser(t)
	base := startAgent(t)

	// One job, so the chart has a bar of height.
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(surfaceURL(base, "job.start")), ready(),
		chromedp.SendKeys(`#f-topic_id`, "grid-storage"),
		chromedp.Click(`#submit`),
		chromedp.WaitVisible(`#result[data-outcome="ok"]`),
	))
	var rows, bars int
	var first []string
	widget := `.widget[data-widget="progress_by_stage"]`
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(surfaceURL(base, "mission.analytics")), ready(),
		chromedp.WaitVisible(widget+` table.data-table`),
		chromedp.WaitVisible(widget+` .chart svg`),
		chromedp.Evaluate(`document.querySelectorAll('`+widget+` table.data-table tbody tr').length`, &rows),
		chromedp.Evaluate(`document.querySelectorAll('`+widget+` .chart svg rect.bar').length`, &bars),
		chromedp.Evaluate(`Array.from(document.querySelectorAll('`+widget+` table.data-table tbody tr:first-child td')).map(td => td.textContent)`, &first),
	))
	require.Equal(t, 5, rows, "progress_metrics has one row per stage")
	require.Equal(t, rows, bars, "one bar per row")
	require.Equal(t, []string{"Waiting for review", "1", "awaiting"}, first)
	shot(t, ctx, "preview-dashboard.png")
}

func TestBrowserContactImportRowError(t *testing.T) {
	ctx := newBrowser(t)
	base := startAgent(t)
	csv := filepath.Join(t.TempDir(), "contacts.csv")
	require.NoError(t, os.WriteFile(csv, []byte("name,email,organization\nAda Lovelace,ada@example.com,Analytical\nBob,,Acme\n"), 0o644))

	var columns []string
	var errs string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(surfaceURL(base, "mission.agent.surface.contact_import")), ready(),
		chromedp.Evaluate(`Array.from(document.querySelectorAll('#import-columns tbody tr td:first-child')).map(td => td.textContent)`, &columns),
		chromedp.SetUploadFiles(`#import-file`, []string{csv}),
		chromedp.Click(`#submit`),
		chromedp.WaitVisible(`#result[data-outcome="error"]`),
		chromedp.Text(`#result-errors`, &errs),
	))
	require.Equal(t, []string{"name", "email", "organization"}, columns)
	require.Contains(t, errs, "row 2, column email")
	require.Contains(t, errs, "nothing was applied")
	shot(t, ctx, "preview-import.png")
}
