package preview

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/contracts"
)

// Payloads an agent could put in any string it sends: each would set
// window.__pwned if the preview wrote it as HTML or as a URL.
const (
	pScript = `<script>window.__pwned=1</script>`
	pImg    = `<img src=x onerror="window.__pwned=1">`
	pAttr   = `"><svg onload="window.__pwned=1">`
	pSingle = `' onmouseover='window.__pwned=1' x='`
	pURL    = `javascript:window.__pwned=1`
)

func hostile(s string) string { return s + " " + pScript + pImg + pAttr + pSingle }

// hostileAgent declares a surface of every document type and an action whose
// every string carries the payloads.
func hostileAgent(t *testing.T) *supervaizer.Agent {
	t.Helper()
	reg := supervaizer.RegistrationSpec{
		AgentSlug: "hostile-agent", DisplayName: hostile("Hostile"), A2UICatalogVersion: "hostile.1",
		Surfaces: []supervaizer.SurfaceSpec{
			{ID: "job.start", Label: hostile("Start"), Description: hostile("start")},
			{ID: "review.hostile", Label: hostile("Review")},
			{ID: "dash.hostile", Label: hostile("Dashboard")},
			{ID: "config.hostile", Label: pURL},
		},
		Actions: []supervaizer.ActionSpec{
			{ID: "job.start", Label: hostile("Go"), Description: hostile("go")},
			supervaizer.Action("review.submit"),
		},
		CaseLanes: []contracts.CaseLane{{ID: "work", Label: hostile("Work"), Default: true}},
	}
	a, err := supervaizer.NewAgent(supervaizer.AgentSpec{Name: "Hostile Agent", Version: "1.0.0", Description: hostile("desc"), Registration: reg})
	require.NoError(t, err)

	field := func(id, typ string, extra map[string]any) map[string]any {
		f := map[string]any{"id": id, "label": hostile(id), "type": typ, "required": false,
			"description": hostile("help"), "placeholder": pAttr}
		for k, v := range extra {
			f[k] = v
		}
		return f
	}
	options := []any{map[string]any{"value": pAttr, "label": hostile("one")}, map[string]any{"value": pURL, "label": pImg}}
	form := map[string]any{
		"type": "Form", "id": "hostile.form", "title": hostile("Form"),
		"fields": []any{
			field("s", "string", map[string]any{"default": pScript + pAttr, "validation": map[string]any{"pattern": pAttr, "message": hostile("msg")}}),
			field("t", "text", map[string]any{"multiline": true, "default": "</textarea>" + pScript}),
			field("sel", "select", map[string]any{"options": options, "default": pAttr}),
			field("multi", "multi_select", map[string]any{"options": options}),
			field("f", "file", map[string]any{"accept": pAttr}),
			field("l", "list", map[string]any{"item_fields": []any{field("i", "string", nil)}}),
			field("dep", "string", map[string]any{"depends_on": map[string]any{"field": "sel", "in": []any{pAttr}}}),
		},
		"submit": map[string]any{"action": "job.start", "label": hostile("Submit")},
	}
	review := map[string]any{
		"type": "DocumentReview", "id": "hostile.review", "title": hostile("Review"),
		"document": map[string]any{"title": hostile("Doc"), "field": "text", "language": pAttr, "value": hostile("value"),
			"validation": []any{map[string]any{"id": "c1", "label": hostile("check"), "status": pAttr}}},
		"fields": []any{field("text", "text", nil)},
		"submit": map[string]any{"action": "review.submit", "label": hostile("Send")},
		"state":  map[string]any{"job_id": pAttr},
	}
	dash := map[string]any{
		"type": "Dashboard", "id": "hostile.dash", "title": hostile("Dash"),
		"datasets": []any{}, "controls": []any{},
		"widgets": []any{map[string]any{
			"id": "w", "title": hostile("Widget"), "layout": map[string]any{},
			"data": map[string]any{"mode": "inline", "values": []any{
				map[string]any{"label": hostile("row"), "value": 2, pAttr: pURL},
				map[string]any{"label": pImg, "value": 1},
			}},
			"visualization": map[string]any{"type": "vega-lite", "spec": map[string]any{
				"mark": "bar", "encoding": map[string]any{"x": map[string]any{"field": "label", "title": pImg}, "y": map[string]any{"field": "value", "title": pScript}}}},
		}},
	}
	config := map[string]any{"type": "Configurator", "id": "hostile.config", "title": hostile("Config"), "href": pURL, "html": pScript}
	docs := map[string]any{"job.start": form, "review.hostile": review, "dash.hostile": dash, "config.hostile": config}
	for id, doc := range docs {
		a.HandleSurface(id, func(ctx context.Context, req *supervaizer.SurfaceRequest) (*supervaizer.SurfaceResult, error) {
			return supervaizer.NewSurfaceResult(ctx, req.Surface, doc)
		})
	}
	a.HandleAction("job.start", func(_ context.Context, req *supervaizer.ActionRequest) (*supervaizer.ActionResult, error) {
		res := supervaizer.OK(supervaizer.Effect{Type: "job.started", JobID: req.JobID, Status: pAttr})
		res.JobState = &supervaizer.JobState{
			Job: supervaizer.Job{ID: req.JobID, AgentSlug: req.AgentSlug, MissionID: req.MissionID, Status: "awaiting",
				Source: contracts.JobSource{Type: contracts.SourceFreshStart}},
			Cases: []supervaizer.Case{{ID: req.JobID + "-c", Lane: "work", Title: hostile("case"), Metadata: map[string]any{},
				Steps: []supervaizer.Step{{ID: "s1", Activity: contracts.ActivityOperation, Status: "awaiting", Title: hostile("step"),
					Outputs: []supervaizer.ArtifactRef{}}}}},
		}
		return res, nil
	})
	a.HandleAction("review.submit", func(context.Context, *supervaizer.ActionRequest) (*supervaizer.ActionResult, error) {
		return supervaizer.Fail("rejected", "%s", hostile("refused")), nil
	})
	return a
}

// requireClean checks that no payload became markup, URL or script.
func requireClean(t *testing.T, ctx context.Context, page string) {
	t.Helper()
	var pwned bool
	var injected []string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Evaluate(`window.__pwned !== undefined`, &pwned),
		chromedp.Evaluate(`(() => {
			const bad = [];
			document.querySelectorAll('img, iframe, object, embed, script:not([src="/_preview/static/preview.js"])').forEach(e => bad.push(e.outerHTML));
			document.querySelectorAll('*').forEach(e => { for (const a of e.attributes) {
				if (/^on/i.test(a.name)) bad.push(e.tagName + ' ' + a.name);
				if ((a.name === 'href' || a.name === 'src' || a.name === 'action') && /^\s*javascript:/i.test(a.value)) bad.push(e.tagName + ' ' + a.value);
			} });
			document.querySelectorAll('svg').forEach(s => { if (!s.closest('.chart')) bad.push('svg outside a chart'); });
			return bad;
		})()`, &injected),
	))
	require.False(t, pwned, "%s: a payload ran", page)
	require.Empty(t, injected, "%s: a payload became markup", page)
}

func TestBrowserNoAgentStringRunsAsScript(t *testing.T) {
	ctx := newBrowser(t)
	srv, err := supervaizer.NewServer([]*supervaizer.Agent{hostileAgent(t)},
		supervaizer.WithLocalMode(true), supervaizer.WithEnv(func(string) string { return "" }),
		supervaizer.WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	require.NoError(t, srv.Start(context.Background()))
	ts := httptest.NewServer(srv)
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()); ts.Close() })
	base := ts.URL
	surface := func(id string) string { return base + "/_preview/surface?agent=hostile-agent&surface=" + id }

	var title string
	require.NoError(t, chromedp.Run(ctx, chromedp.Navigate(base+"/_preview/"), ready(), chromedp.Text(`.agent h2`, &title)))
	require.Contains(t, title, pScript, "the payload is shown as text")
	requireClean(t, ctx, "overview")

	// The form: fill the dependent field's parent with the payload option,
	// add a list item, submit; the result and job_state carry payloads.
	var visible bool
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(surface("job.start")), ready(),
		chromedp.Click(`.field[data-field="l"] .list-add`),
		chromedp.Evaluate(`document.querySelector('.field[data-field="dep"]').hidden === false`, &visible),
		chromedp.Click(`#submit`),
		chromedp.WaitVisible(`#result[data-outcome="ok"]`),
	))
	require.True(t, visible, "depends_on compares the payload value as text")
	requireClean(t, ctx, "form result")

	var review string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(surface("review.hostile")), ready(),
		chromedp.Text(`#review-value`, &review),
		chromedp.Click(`#submit`),
		chromedp.WaitVisible(`#result-errors li`),
	))
	require.Contains(t, review, pScript+pImg)
	requireClean(t, ctx, "review")

	require.NoError(t, chromedp.Run(ctx, chromedp.Navigate(surface("dash.hostile")), ready(), chromedp.WaitVisible(`.chart svg`)))
	requireClean(t, ctx, "dashboard")

	var raw string
	require.NoError(t, chromedp.Run(ctx, chromedp.Navigate(surface("config.hostile")), ready(), chromedp.Text(`#document-json`, &raw)))
	require.Contains(t, raw, pURL)
	requireClean(t, ctx, "configurator")

	var jobs string
	require.NoError(t, chromedp.Run(ctx, chromedp.Navigate(base+"/_preview/jobs"), ready(), chromedp.Text(`main`, &jobs)))
	require.Contains(t, jobs, "case "+pScript)
	requireClean(t, ctx, "jobs")
}
