package preview

import (
	"context"
	"encoding/json"
	"html/template"
	"net/http"
	"net/url"
	"reflect"
	"strings"

	"github.com/supervaize/supervaizer-go/contracts"
)

var funcs = template.FuncMap{
	"pretty": func(raw json.RawMessage) string { return prettyJSON(raw) },
	"text":   scalarText,
	"surfaceURL": func(agent, surface, jobID, caseID, stepID string) string {
		q := url.Values{"agent": {agent}, "surface": {surface}}
		for k, v := range map[string]string{"job_id": jobID, "case_id": caseID, "step_id": stepID} {
			if v != "" {
				q.Set(k, v)
			}
		}
		return Prefix + "surface?" + q.Encode()
	},
	"withPath": func(f field, prefix string) field {
		if prefix == "" {
			f.Path = f.ID
		}
		return f
	},
	"join":  strings.Join,
	"deref": func(b *bool) bool { return b != nil && *b },
}

// parsePages parses each page with the shared layout and partials.
func parsePages() (map[string]*template.Template, error) {
	pages := map[string]*template.Template{}
	for _, p := range []string{"overview", "surface", "jobs"} {
		t, err := template.New(p).Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/fields.html", "templates/"+p+".html")
		if err != nil {
			return nil, err
		}
		pages[p] = t
	}
	return pages, nil
}

// page is what every page shows: the navigation and its own content.
type page struct {
	Title  string
	Agents []*agentView
	Agent  *agentView // the agent of the page, when there is one
	Body   any
}

// Registration views used by the templates.

func (a *agentView) Surfaces() []surfaceDef { return a.reg.surfaces }
func (a *agentView) Actions() []actionDef   { return a.reg.actions }
func (a *agentView) Plan() *setupPlan       { return a.reg.plan }
func (a *agentView) Reg() *registration     { return a.reg }

// StartSurface is the job.start surface the overview's call to action opens,
// when the agent declares it.
func (a *agentView) StartSurface() *surfaceDef {
	if d, ok := a.reg.surface("job.start"); ok {
		return &d
	}
	return nil
}
func (a *agentView) DisplayName() string {
	if a.reg.Agent.DisplayName != "" {
		return a.reg.Agent.DisplayName
	}
	return a.Name
}

func (h *Handler) serveOverview(w http.ResponseWriter, _ *http.Request) {
	h.render(w, "overview", page{Title: "Overview", Agents: h.agents})
}

// surfaceBody is the content of a surface page.
type surfaceBody struct {
	Surface  surfaceDef
	Declared bool
	JobID    string
	CaseID   string
	StepID   string
	Err      string
	Doc      *document
	Raw      json.RawMessage
	Tables   map[string]table // by widget id
	// Known is whether the document type is a typed document of the
	// contracts registry, which the preview renders.
	Known bool
	// Submits is whether the document's model declares a submit action:
	// the preview renders its fields as a form.
	Submits bool
	// Studio is the description of a surface Studio generates itself (not
	// loaded from the controller).
	Studio *studioSurface
}

func (h *Handler) serveSurface(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	a, ok := h.bySlug[q.Get("agent")]
	if !ok && len(h.agents) == 1 && q.Get("agent") == "" {
		a, ok = h.agents[0], true
	}
	if !ok {
		http.NotFound(w, r)
		return
	}
	id := q.Get("surface")
	def, declared := a.reg.surface(id)
	if !declared {
		def = surfaceDef{ID: id}
	}
	body := surfaceBody{Surface: def, Declared: declared, JobID: q.Get("job_id"), CaseID: q.Get("case_id"), StepID: q.Get("step_id")}
	title := def.Display
	if st, ok := a.reg.studioSurface(id); ok {
		body.Studio = st
		if title == "" {
			title = st.Label
		}
		if title == "" {
			title = id
		}
		h.render(w, "surface", page{Title: title, Agents: h.agents, Agent: a, Body: body})
		return
	}
	raw, err := h.loadSurface(r.Context(), call{Agent: a.Slug, Surface: id, JobID: body.JobID, CaseID: body.CaseID, StepID: body.StepID})
	if err != nil {
		body.Err = err.Error()
	} else {
		body.Raw = raw
		var doc document
		if err := json.Unmarshal(raw, &doc); err != nil {
			body.Err = "the document is not an object: " + err.Error()
		} else {
			body.Doc = &doc
			if m, ok := contracts.DocumentModel(doc.Type); ok {
				body.Known, body.Submits = true, declaresKey(m, "submit")
			}
			if doc.Type == contracts.DocumentDashboard {
				body.Tables = h.widgetTables(r.Context(), a, id, &doc)
			}
			if doc.Type == contracts.DocumentReview {
				fillReviewState(&body, &doc)
			}
		}
	}
	if title == "" {
		title = id
	}
	h.render(w, "surface", page{Title: title, Agents: h.agents, Agent: a, Body: body})
}

// declaresKey reports whether the Go type of the model m declares the JSON
// key.
func declaresKey(m contracts.Model, key string) bool {
	t := reflect.TypeOf(m.New()).Elem()
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name == key {
			return true
		}
	}
	return false
}

// fillReviewState takes the job, case and step a DocumentReview names in its
// state when the page was opened without them.
func fillReviewState(b *surfaceBody, doc *document) {
	var st map[string]any
	_ = json.Unmarshal(doc.State, &st)
	for key, dst := range map[string]*string{"job_id": &b.JobID, "case_id": &b.CaseID, "step_id": &b.StepID} {
		if s, ok := st[key].(string); ok && *dst == "" {
			*dst = s
		}
	}
	// The reviewed text pre-fills the field it names.
	if d := doc.Document; d != nil && d.Field != "" {
		for i := range doc.Fields {
			if doc.Fields[i].ID == d.Field && len(doc.Fields[i].Default) == 0 {
				doc.Fields[i].Default, _ = json.Marshal(d.Value)
			}
		}
	}
}

// widgetTables fetches the rows of each widget: a dataset query for a ref
// widget, the action's rows for an action widget, the inline values.
func (h *Handler) widgetTables(ctx context.Context, a *agentView, surface string, doc *document) map[string]table {
	out := map[string]table{}
	for _, wd := range doc.Widgets {
		var t table
		switch {
		case wd.Data == nil:
			t.Err = "the widget has no data"
		case wd.Data.Mode == "inline":
			var rows []map[string]any
			if err := json.Unmarshal(wd.Data.Values, &rows); err != nil {
				t.Err = "inline values are not a list of rows"
			} else {
				t = newTable(rows, nil)
			}
		case wd.Data.Mode == "action" && wd.Data.Action != nil:
			input, _ := json.Marshal(wd.Data.Input)
			t = h.queryRows(ctx, a, surface, *wd.Data.Action, input, "", nil)
		case wd.Data.DatasetID != nil:
			id := *wd.Data.DatasetID
			var cols []string
			for _, d := range a.reg.Datasets {
				if d.ID == id && d.Display != nil {
					cols = d.Display.Columns
				}
			}
			t = h.queryRows(ctx, a, surface, "dataset."+id+".query", nil, id, cols)
		default:
			t.Err = "the widget names no dataset"
		}
		out[wd.ID] = t
	}
	return out
}

// queryRows invokes a read action and takes the rows of its dataset.queried
// effect.
func (h *Handler) queryRows(ctx context.Context, a *agentView, surface, action string, input json.RawMessage, dataset string, cols []string) table {
	_, resp, err := h.do(ctx, call{Agent: a.Slug, Surface: surface, Action: action, Input: input})
	if err != nil {
		return table{Err: err.Error()}
	}
	if resp.Error != nil {
		return table{Err: resp.Error.Error()}
	}
	var res actionResult
	_ = json.Unmarshal(resp.Result, &res)
	for _, e := range res.Effects {
		var eff struct {
			Type    string           `json:"type"`
			Dataset string           `json:"dataset"`
			Rows    []map[string]any `json:"rows"`
		}
		if json.Unmarshal(e, &eff) == nil && eff.Type == "dataset.queried" && (dataset == "" || eff.Dataset == dataset) {
			return newTable(eff.Rows, cols)
		}
	}
	return table{Err: "the " + action + " result has no dataset.queried rows (status " + res.Status + ")"}
}
