package preview

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go"
)

// fieldsForm has one field of every type of the field schema, with
// depends_on both ways and a read-only default.
const fieldsForm = `{"type": "Form", "id": "every", "title": "Every field", "submit": {"action": "fields.echo", "label": "Send"}, "fields": [
  {"id": "s", "label": "String", "type": "string", "required": true},
  {"id": "t", "label": "Text", "type": "text", "multiline": true, "min_rows": 2},
  {"id": "b", "label": "Bool", "type": "boolean"},
  {"id": "i", "label": "Integer", "type": "integer"},
  {"id": "n", "label": "Number", "type": "number"},
  {"id": "d", "label": "Date", "type": "date"},
  {"id": "sel", "label": "Select", "type": "select", "options": [{"value": "x", "label": "Ex"}, {"value": 2, "label": "Two"}]},
  {"id": "ms", "label": "Multi", "type": "multi_select", "options": [{"value": "p", "label": "Pe"}, {"value": "q", "label": "Qu"}, {"value": "r", "label": "Ar"}]},
  {"id": "r", "label": "Contact", "type": "resource_ref", "options_source": {"type": "resource", "resource": "contacts", "value_field": "id", "label_field": null}},
  {"id": "f", "label": "File", "type": "file", "storage": "inline", "max_bytes": 1000},
  {"id": "l", "label": "List", "type": "list", "item_fields": [{"id": "li", "label": "Name", "type": "string"}, {"id": "ln", "label": "Count", "type": "integer"}]},
  {"id": "hidden_dep", "label": "Only for x", "type": "string", "default": "never sent", "depends_on": {"field": "sel", "in": ["x"]}},
  {"id": "shown_dep", "label": "Only when Bool", "type": "string", "depends_on": {"field": "b", "in": ["true"]}},
  {"id": "ro", "label": "Read only", "type": "string", "read_only": true, "default": "fixed"}
]}`

// TestBrowserFormSendsEveryFieldType fills every field type in the browser
// and checks the input the handler receives through /a2a.
func TestBrowserFormSendsEveryFieldType(t *testing.T) {
	ctx := newBrowser(t)
	reg := supervaizer.RegistrationSpec{
		AgentSlug: "fields-agent", DisplayName: "Fields", A2UICatalogVersion: "fields.1",
		Surfaces: supervaizer.Surfaces("fields.form"), Actions: supervaizer.Actions("fields.echo"),
	}
	a, err := supervaizer.NewAgent(supervaizer.AgentSpec{Name: "Fields Agent", Version: "1", Registration: reg})
	require.NoError(t, err)
	a.HandleSurface("fields.form", func(ctx context.Context, req *supervaizer.SurfaceRequest) (*supervaizer.SurfaceResult, error) {
		return supervaizer.NewSurfaceResult(ctx, req.Surface, json.RawMessage(fieldsForm))
	})
	received := make(chan json.RawMessage, 1)
	a.HandleAction("fields.echo", func(_ context.Context, req *supervaizer.ActionRequest) (*supervaizer.ActionResult, error) {
		received <- req.Input
		return supervaizer.OK(), nil
	})
	srv, err := supervaizer.NewServer([]*supervaizer.Agent{a}, supervaizer.WithLocalMode(true), supervaizer.WithEnv(func(string) string { return "" }),
		supervaizer.WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	require.NoError(t, srv.Start(context.Background()))
	ts := httptest.NewServer(srv)
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()); ts.Close() })
	file := filepath.Join(t.TempDir(), "hello.txt")
	require.NoError(t, os.WriteFile(file, []byte("hello"), 0o644))

	var hiddenBefore, shownBefore, shownAfter bool
	item := func(n int, id string) string {
		return `.field[data-field="l"] .list-items > .list-item:nth-child(` + string(rune('0'+n)) + `) .field[data-field="` + id + `"] .control`
	}
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(ts.URL+"/_preview/surface?agent=fields-agent&surface=fields.form"), ready(),
		chromedp.Evaluate(`document.querySelector('.field[data-field="hidden_dep"]').hidden`, &hiddenBefore),
		chromedp.Evaluate(`document.querySelector('.field[data-field="shown_dep"]').hidden`, &shownBefore),
		chromedp.SendKeys(`#f-s`, "abc"),
		chromedp.SendKeys(`#f-t`, "two words"),
		chromedp.Click(`#f-b`),
		chromedp.Evaluate(`!document.querySelector('.field[data-field="shown_dep"]').hidden`, &shownAfter),
		chromedp.SendKeys(`#f-shown_dep`, "shown"),
		chromedp.SendKeys(`#f-i`, "42"),
		chromedp.SendKeys(`#f-n`, "2.5"),
		chromedp.SetValue(`#f-d`, "2026-12-01"),
		chromedp.SetValue(`#f-sel`, "2"),
		chromedp.Click(`.field[data-field="ms"] input[value="p"]`),
		chromedp.Click(`.field[data-field="ms"] input[value="r"]`),
		chromedp.SendKeys(`#f-r`, "contact-1"),
		chromedp.SetUploadFiles(`#f-f`, []string{file}),
		chromedp.Click(`.field[data-field="l"] .list-add`),
		chromedp.Click(`.field[data-field="l"] .list-add`),
		chromedp.Click(`.field[data-field="l"] .list-add`),
		chromedp.SendKeys(item(1, "li"), "a"),
		chromedp.SendKeys(item(1, "ln"), "1"),
		chromedp.SendKeys(item(2, "li"), "b"),
		chromedp.Click(`.field[data-field="l"] .list-items > .list-item:nth-child(3) .list-remove`),
		chromedp.Click(`#submit`),
		chromedp.WaitVisible(`#result[data-outcome="ok"]`),
	))
	require.True(t, hiddenBefore, "depends_on hides a field whose parent has another value")
	require.True(t, shownBefore, "shown_dep waits for Bool")
	require.True(t, shownAfter, "checking Bool shows shown_dep")
	select {
	case in := <-received:
		require.JSONEq(t, `{
		  "s": "abc", "t": "two words", "b": true, "i": 42, "n": 2.5, "d": "2026-12-01", "sel": 2, "ms": ["p", "r"],
		  "r": "contact-1",
		  "f": {"storage": "inline", "filename": "hello.txt", "media_type": "text/plain", "size": 5, "encoding": "base64", "content": "aGVsbG8="},
		  "l": [{"li": "a", "ln": 1}, {"li": "b"}],
		  "shown_dep": "shown", "ro": "fixed"}`, string(in))
	case <-time.After(10 * time.Second):
		t.Fatal("the handler received nothing")
	}
}
