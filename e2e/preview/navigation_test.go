package preview

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// navigationTimeout bounds one navigation: a page kept in the back/forward
// cache with its event stream open used to use up the browser's six
// connections per host, and the seventh navigation hung ~55 s.
const navigationTimeout = 15 * time.Second

// consoleErrors collects the errors the pages of ctx log to the console
// (failed loads, such as a missing favicon, included) and their exceptions.
func consoleErrors(t *testing.T, ctx context.Context) func() []string {
	t.Helper()
	var (
		mu   sync.Mutex
		errs []string
	)
	add := func(s string) {
		mu.Lock()
		defer mu.Unlock()
		errs = append(errs, s)
	}
	chromedp.ListenTarget(ctx, func(ev any) {
		switch e := ev.(type) {
		case *runtime.EventExceptionThrown:
			add("exception: " + e.ExceptionDetails.Error())
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.APITypeError {
				var args []string
				for _, a := range e.Args {
					args = append(args, string(a.Value)+a.Description)
				}
				add("console.error: " + strings.Join(args, " "))
			}
		case *cdplog.EventEntryAdded:
			if e.Entry.Level == cdplog.LevelError {
				add(fmt.Sprintf("log: %s (%s)", e.Entry.Text, e.Entry.URL))
			}
		}
	})
	require.NoError(t, chromedp.Run(ctx, cdplog.Enable()))
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), errs...)
	}
}

// pageLinks returns every preview page the overview links to, itself first.
func pageLinks(t *testing.T, ctx context.Context, base string) []string {
	t.Helper()
	var links []string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(base+"/_preview/"), ready(),
		chromedp.Evaluate(`Array.from(new Set([location.href].concat(Array.from(document.querySelectorAll('a[href^="/_preview"]'))
			.map(a => a.href).filter(h => !h.includes('/_preview/static/')))))`, &links),
	))
	require.GreaterOrEqual(t, len(links), 4, "the overview links to its pages: %v", links)
	return links
}

// TestBrowserNavigationNoStallNoConsoleError goes through every page link ten
// times in a row, each navigation within navigationTimeout and its event
// stream connected (the stream of a page left is closed on pagehide), and
// requires that no page logs an error to the console (a missing favicon did
// on every page).
func TestBrowserNavigationNoStallNoConsoleError(t *testing.T) {
	ctx := newBrowser(t)
	base := startAgent(t)
	errs := consoleErrors(t, ctx)
	links := pageLinks(t, ctx, base)
	var slowest time.Duration
	for round := range 10 {
		for _, link := range links {
			start := time.Now()
			nctx, cancel := context.WithTimeout(ctx, navigationTimeout)
			err := chromedp.Run(nctx, chromedp.Navigate(link), ready(), eventsConnected())
			cancel()
			require.NoError(t, err, "round %d: %s did not load with its event stream within %s", round+1, link, navigationTimeout)
			slowest = max(slowest, time.Since(start))
		}
		// Back and forward too: the page comes out of the back/forward
		// cache (no load event) and reopens its stream (pageshow).
		prev, last := links[len(links)-2], links[len(links)-1]
		require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(`history.back()`, nil)))
		err := connectedAt(ctx, prev)
		if err == nil {
			require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(`history.forward()`, nil)))
			err = connectedAt(ctx, last)
		}
		require.NoError(t, err, "round %d: back and forward", round+1)
	}
	t.Logf("%d navigations through %d pages; the slowest took %s", 10*len(links), len(links), slowest.Round(time.Millisecond))
	assert.Empty(t, errs(), "console errors")
}

// TestBrowserNoHorizontalOverflowAt390 loads every page at a 390 px wide
// viewport, a job's included, and requires that none is wider than the
// viewport (the overview's and the jobs view's tables were 807 and 858 px).
func TestBrowserNoHorizontalOverflowAt390(t *testing.T) {
	ctx := newBrowser(t)
	base := startAgent(t)
	require.NoError(t, chromedp.Run(ctx, chromedp.EmulateViewport(390, 844)))
	// A job, so that the jobs view has a row.
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(surfaceURL(base, "job.start")), ready(),
		chromedp.SendKeys(`#f-topic_id`, "eu-battery-market-and-its-very-long-identifier"),
		chromedp.SetValue(`#f-depth`, "deep"),
		chromedp.SendKeys(`#f-goal`, "What moves EU battery prices in 2027?"),
		chromedp.Click(`#submit`),
		chromedp.WaitVisible(`#result[data-outcome="ok"]`),
	))
	for _, link := range pageLinks(t, ctx, base) {
		var widths struct{ Scroll, Client int }
		require.NoError(t, chromedp.Run(ctx, chromedp.Navigate(link), ready(),
			chromedp.Evaluate(`({Scroll: document.documentElement.scrollWidth, Client: document.documentElement.clientWidth})`, &widths)))
		assert.LessOrEqual(t, widths.Scroll, 390, "%s is %d px wide at 390 px", link, widths.Scroll)
	}
}

// connectedAt waits, at most navigationTimeout, until the tab shows url with
// its event stream connected. It polls from Go: a page restored from the
// back/forward cache fires no load event and gets a new execution context.
func connectedAt(ctx context.Context, url string) error {
	deadline := time.Now().Add(navigationTimeout)
	expr := fmt.Sprintf(`location.href === %q && document.body.dataset.events === "connected"`, url)
	for {
		var ok bool
		err := chromedp.Run(ctx, chromedp.Evaluate(expr, &ok))
		if err == nil && ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not shown with its event stream connected within %s (last error: %v)", url, navigationTimeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestBrowserRefusedSubmitIsAccessible: a required field is marked required
// (required, aria-required), its error is a sentence a person reads ("Topic
// is required", not "missing property"), tied to the control (aria-invalid,
// aria-describedby), and a refused submit, which recorded nothing, offers no
// resubmission with the same idempotency key.
func TestBrowserRefusedSubmitIsAccessible(t *testing.T) {
	ctx := newBrowser(t)
	base := startAgent(t)
	var st struct {
		Required, AriaRequired, AriaInvalid, DescribedText, Label string
		ResubmitHidden                                            bool
	}
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(surfaceURL(base, "job.start")), ready(), eventsConnected(),
		chromedp.Evaluate(`(() => { const c = document.querySelector('#f-topic_id');
			return {Required: String(c.required), AriaRequired: c.getAttribute('aria-required') || ''}; })()`, &st),
	))
	assert.Equal(t, "true", st.Required, "the required topic_id has required")
	assert.Equal(t, "true", st.AriaRequired, "and aria-required")
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Click(`#submit`),
		chromedp.WaitVisible(`#result[data-outcome="refused"]`),
		chromedp.Evaluate(`(() => { const c = document.querySelector('#f-topic_id');
			const d = document.getElementById(c.getAttribute('aria-describedby') || '');
			const l = document.querySelector('label[for="f-topic_id"]').cloneNode(true);
			l.querySelectorAll('.req, .type').forEach(x => x.remove());
			return {Required: String(c.required), AriaRequired: c.getAttribute('aria-required') || '',
				AriaInvalid: c.getAttribute('aria-invalid') || '', DescribedText: d ? d.textContent : '',
				Label: l.textContent.trim(), ResubmitHidden: document.querySelector('#resubmit').hidden}; })()`, &st),
	))
	assert.Equal(t, "true", st.AriaInvalid)
	require.NotEmpty(t, st.Label)
	assert.Equal(t, st.Label+" is required", st.DescribedText, "the error the control names")
	assert.NotContains(t, st.DescribedText, "missing propert")
	assert.True(t, st.ResubmitHidden, "a refused submit offers no resubmission")
}

// TestBrowserJobsViewIsLive: after a job.start, the jobs view shows each later
// status of the job without a click or a reload (awaiting, then, once the
// review is approved elsewhere, completed), and the event panel gives each
// effect its time and expandable details (issue 29: the view said "Sending"
// while job.sync said completed, until a manual Sync).
func TestBrowserJobsViewIsLive(t *testing.T) {
	ctx := newBrowser(t)
	base := startAgent(t)
	var key string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(surfaceURL(base, "job.start")), ready(), eventsConnected(),
		chromedp.SendKeys(`#f-topic_id`, "eu-battery-market"),
		chromedp.SetValue(`#f-depth`, "deep"),
		chromedp.SendKeys(`#f-goal`, "What moves EU battery prices in 2027?"),
		chromedp.Click(`#submit`),
		chromedp.WaitVisible(`#result[data-outcome="ok"]`),
		chromedp.Text(`#result-key`, &key),
	))
	m := regexp.MustCompile(`job (job-[0-9a-f]+)`).FindStringSubmatch(key)
	require.NotNil(t, m, key)
	jobID := m[1]
	sel := `article.job[data-job-id="` + jobID + `"]`
	var awaiting string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(base+"/_preview/jobs"), ready(), eventsConnected(),
		chromedp.WaitVisible(sel+` a.open-awaiting`),
		chromedp.AttributeValue(sel+` a.open-awaiting`, "href", &awaiting, nil),
		chromedp.Evaluate(`window.notReloaded = true`, nil),
	))
	u, err := url.Parse(awaiting)
	require.NoError(t, err)
	q := u.Query()

	// The review is approved from elsewhere (another client of the preview).
	body, err := json.Marshal(map[string]any{"agent": "research-agent", "surface": q.Get("surface"), "action": "step.awaiting.submit",
		"job_id": jobID, "case_id": q.Get("case_id"), "step_id": q.Get("step_id"),
		"input": map[string]any{"review_text": "# Brief", "approve_review": true}})
	require.NoError(t, err)
	resp, err := http.Post(base+"/_preview/api/invoke", "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	// The view follows without a click.
	var seen []string
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		var st string
		require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(`(document.querySelector('`+sel+` h2 .status') || {}).textContent || ''`, &st)))
		if len(seen) == 0 || seen[len(seen)-1] != st {
			seen = append(seen, st)
		}
		if st == "completed" {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("statuses shown: %v", seen)
	require.Equal(t, "completed", seen[len(seen)-1], "the jobs view reached completed without a click: %v", seen)
	assert.Equal(t, "awaiting", seen[0])
	var notReloaded bool
	var times, details int
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Evaluate(`window.notReloaded === true`, &notReloaded),
		chromedp.Evaluate(`document.querySelectorAll('#event-list li time[datetime]').length`, &times),
		chromedp.Evaluate(`document.querySelectorAll('#event-list li details.event-details').length`, &details),
	))
	assert.True(t, notReloaded, "updated in place, not reloaded")
	assert.Positive(t, times, "events carry their time")
	assert.Positive(t, details, "and their details")
}
