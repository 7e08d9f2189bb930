package resource

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/supervaize/supervaizer-go/contracts"
)

// Routes serves the DataResource REST routes of the resources an agent
// registered with supervaizer.RegisterResource; the server mounts them in
// local mode and when attached to Studio:
//
//	GET    /api/agents/{slug}/data/{name}/            list    read key   200 {"resource","items","count"}
//	POST   /api/agents/{slug}/data/{name}/            create  write key  201 item
//	GET    /api/agents/{slug}/data/{name}/{item_id}   get     read key   200 item
//	PUT    /api/agents/{slug}/data/{name}/{item_id}   update  write key  200 item
//	DELETE /api/agents/{slug}/data/{name}/{item_id}   delete  write key  204
//	POST   /api/agents/{slug}/data/{name}/import/     import  write key  200 {"resource","count","items","errors",…}
//
// Every call needs, after X-API-Key, a workspace token with the single scope
// resource.<name>.<operation>, verified (Verify) for the workspace of
// X-Supervaize-Workspace-Id/-Slug and the route's agent: no bootstrap
// exemption, no local-mode bypass; a failure is HTTP 403 {"detail": <verifier
// message>}. The context headers are then read by
// [ParseDataResourceContext] (400 on a bad mission-metadata header). The list
// takes ?limit=&offset=&search=; create and update take the item as a JSON
// object body; import takes the raw CSV body (Content-Type text/csv) and the
// document's contextual fields as query parameters. The routes carry no job:
// a job-scoped resource answers 400 (missing job_id) on REST and is served on
// POST /a2a only. Refusals are {"detail": …, "errors": [{code, message,
// field?, row?}]}: 400 missing context or bad parameters, 404 unknown
// resource or item, 405 operation not implemented, 413 file too large, 415
// a format the import does not accept, 422 refused item or import.
//
// Every field is required: they are what the routes take from the server
// that mounts them.
type Routes struct {
	// Find returns the resource id registered on the agent agentSlug (nil
	// when there is none) and the context its handlers run in, derived from
	// ctx for the verified workspace ws.
	Find func(ctx context.Context, agentSlug, id string, ws *contracts.VerifiedWorkspaceContext) (context.Context, *Binding)
	// Verify verifies the workspace token of r for the agent with the single
	// scope; the error's message is answered with HTTP 403.
	Verify func(ctx context.Context, r *http.Request, agentSlug, scope string) (*contracts.VerifiedWorkspaceContext, error)
	// ReadJSON reads the JSON body of an item (create, update) as the
	// server reads its JSON bodies: Content-Type and size limit. It answers
	// itself and returns false when the body is refused.
	ReadJSON func(w http.ResponseWriter, r *http.Request) ([]byte, bool)
	// Failed logs a failed (or panicking) handler of the action
	// resource.<id>.<op> of the agent.
	Failed func(ctx context.Context, agentSlug, action, requestID string, err error)
}

// base is the route prefix of one resource.
const base = "/api/agents/{agent_slug}/data/{resource}"

// Mount mounts the routes on r: read and write are the middlewares that
// admit a call with the read and the write API-key scope.
func (rt *Routes) Mount(r chi.Router, read, write func(http.Handler) http.Handler) {
	r.With(read).Get(base+"/", rt.serve(OpList))
	r.With(write).Post(base+"/", rt.serve(OpCreate))
	r.With(write).Post(base+"/import/", rt.serve(OpImport))
	r.With(read).Get(base+"/{item_id}", rt.serve(OpGet))
	r.With(write).Put(base+"/{item_id}", rt.serve(OpUpdate))
	r.With(write).Delete(base+"/{item_id}", rt.serve(OpDelete))
}

// restCall is one DataResource REST call, once its token and context headers
// are verified.
type restCall struct {
	agentSlug, resource, op string
	requestID               string
}

// page is the paging of a list call.
type page struct {
	limit, offset int
	search        string
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := contracts.Marshal(v)
	if err != nil {
		http.Error(w, `{"detail":"Internal Server Error"}`, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func writeDetail(w http.ResponseWriter, status int, detail string) {
	writeJSON(w, status, map[string]any{"detail": detail})
}

// routeParam returns a decoded route parameter: chi routes on the escaped
// path when the request has one, so its parameters are then still escaped.
func routeParam(r *http.Request, name string) (string, bool) {
	v := chi.URLParam(r, name)
	if r.URL.RawPath == "" {
		return v, true
	}
	u, err := url.PathUnescape(v)
	return u, err == nil
}

// serve serves one operation: token, context headers, resource lookup,
// scope, input, then the same core as the resource.<id>.<op> action.
func (rt *Routes) serve(op string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		agentSlug, ok1 := routeParam(r, "agent_slug")
		name, ok2 := routeParam(r, "resource")
		if !ok1 || !ok2 {
			writeDetail(w, http.StatusBadRequest, "Malformed path")
			return
		}
		ctx := r.Context()
		ws, err := rt.Verify(ctx, r, agentSlug, Action(name, op))
		if err != nil {
			writeDetail(w, http.StatusForbidden, err.Error())
			return
		}
		dc, err := ParseDataResourceContext(r, ws)
		if err != nil {
			status := http.StatusBadRequest
			var he *ContextHeaderError
			if errors.As(err, &he) && he.Status >= 400 {
				status = he.Status
			}
			writeDetail(w, status, err.Error())
			return
		}
		c := restCall{agentSlug: agentSlug, resource: name, op: op, requestID: dc.RequestID}
		ctx, b := rt.Find(ctx, agentSlug, name, ws)
		if b == nil {
			writeDetail(w, http.StatusNotFound, "Resource not found")
			return
		}
		if !b.serves(op) {
			writeDetail(w, http.StatusMethodNotAllowed, "Operation not supported: "+Action(name, op))
			return
		}
		rc, oe := resolveContext(b.def.ID, op, b.def.Scope, b.def.RequiresContext, call{
			ws: ws, agentSlug: agentSlug, requestID: dc.RequestID, missionID: dc.MissionID, mission: dc.Mission,
		})
		if oe != nil {
			writeJSON(w, oe.Status, oe.body())
			return
		}
		status, body, err := rt.run(ctx, w, r, b, rc, c)
		if err != nil {
			if oe, ok := asOpError(err); ok {
				writeJSON(w, oe.Status, oe.body())
				return
			}
			rt.Failed(ctx, agentSlug, Action(name, op), dc.RequestID, err)
			writeDetail(w, http.StatusInternalServerError, "Resource handler failed")
			return
		}
		if status == 0 { // the body reader has answered
			return
		}
		if body == nil {
			w.WriteHeader(status)
			return
		}
		writeJSON(w, status, body)
	}
}

// run reads the input of the operation, runs it and returns the status and
// body to answer (status 0: the body reader has already answered). A panic
// of the handler is returned as an error.
func (rt *Routes) run(ctx context.Context, w http.ResponseWriter, r *http.Request, b *Binding, rc Context, c restCall) (status int, body any, err error) {
	defer func() {
		if v := recover(); v != nil {
			status, body, err = 0, nil, &panicError{Value: v, Stack: debug.Stack()}
		}
	}()
	switch c.op {
	case OpList:
		p, oe := pageFromURL(r.URL.Query())
		if oe != nil {
			return 0, nil, oe
		}
		items, err := b.list(ctx, rc, ListQuery{Limit: p.limit, Offset: p.offset, Search: p.search})
		if err != nil {
			return 0, nil, err
		}
		return http.StatusOK, map[string]any{"resource": c.resource, "items": items, "count": len(items)}, nil
	case OpGet, OpDelete:
		id, ok := routeParam(r, "item_id")
		if !ok || id == "" {
			return 0, nil, badRequest("malformed item id")
		}
		if c.op == OpDelete {
			return http.StatusNoContent, nil, b.delete(ctx, rc, id)
		}
		item, err := b.get(ctx, rc, id)
		return http.StatusOK, item, err
	case OpCreate, OpUpdate:
		body, ok := rt.ReadJSON(w, r)
		if !ok {
			return 0, nil, nil
		}
		if c.op == OpCreate {
			item, err := b.create(ctx, rc, body)
			return http.StatusCreated, item, err
		}
		id, ok := routeParam(r, "item_id")
		if !ok || id == "" {
			return 0, nil, badRequest("malformed item id")
		}
		item, err := b.update(ctx, rc, id, body)
		return http.StatusOK, item, err
	case OpImport:
		format, data, fields, oe := readImport(w, r, b)
		if oe != nil {
			return 0, nil, oe
		}
		out, err := b.imp(ctx, rc, importFile{format: format, data: data, fields: fields})
		if err != nil {
			return 0, nil, err
		}
		return http.StatusOK, importBody(out.effect, out.jobState), nil
	}
	return 0, nil, fmt.Errorf("supervaizer: unknown operation %q", c.op)
}

// panicError is a recovered handler panic, for the log.
type panicError struct {
	Value any
	Stack []byte
}

func (p *panicError) Error() string { return fmt.Sprintf("panic: %v\n%s", p.Value, p.Stack) }

// importBody is the REST body of an applied import: the keys of its
// resource.imported effect, and the job state when there is one.
func importBody(e contracts.Effect, jobState *contracts.JobState) map[string]any {
	body := map[string]any{"resource": e.Resource, "count": *e.Count, "items": e.Items, "errors": e.Errors}
	if e.Gaps != nil {
		body["gaps"] = e.Gaps
	}
	if e.Summary != nil {
		body["summary"] = e.Summary
	}
	if e.JobID != "" {
		body["job_id"] = e.JobID
	}
	if e.Case != nil {
		body["case"] = e.Case
	}
	if jobState != nil {
		body["job_state"] = jobState
	}
	return body
}

func badRequest(msg string) *opError {
	return &opError{Status: http.StatusBadRequest, Detail: "Bad request: " + msg,
		Errs: []contracts.ResultError{{Code: contracts.ErrorInvalidInput, Message: msg}}}
}

// pageFromURL reads ?limit=&offset=&search=.
func pageFromURL(v url.Values) (page, *opError) {
	p := page{limit: defaultPageLimit, search: v.Get("search")}
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > maxPageLimit {
			return p, badRequest(fmt.Sprintf("limit must be an integer between 1 and %d", maxPageLimit))
		}
		p.limit = n
	}
	if s := v.Get("offset"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 || n > maxOffset {
			return p, badRequest(fmt.Sprintf("offset must be an integer between 0 and %d", maxOffset))
		}
		p.offset = n
	}
	return p, nil
}

// csvMediaTypes are the Content-Types accepted for a CSV upload
// (application/vnd.ms-excel is what several browsers send for .csv files).
var csvMediaTypes = map[string]bool{
	"text/csv": true, "application/csv": true, "text/plain": true, "application/vnd.ms-excel": true,
}

const xlsxMediaType = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"

// readImport reads a CSV or XLSX upload (by its Content-Type) within the
// resource's byte limit, and the contextual fields from the query (each
// converted to its field type, numbers as json.Number like in a JSON input).
func readImport(w http.ResponseWriter, r *http.Request, b *Binding) (string, []byte, map[string]any, *opError) {
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	format := contracts.ImportFormatCSV
	switch {
	case err == nil && mt == xlsxMediaType:
		format = contracts.ImportFormatXLSX
	case err != nil || !csvMediaTypes[mt]:
		want := "CSV (Content-Type text/csv)"
		if slices.Contains(b.importDoc.AcceptedFormats, contracts.ImportFormatXLSX) {
			want += " or XLSX (Content-Type " + xlsxMediaType + ")"
		}
		return "", nil, nil, unsupportedFormat("send the file as " + want)
	case params["charset"] != "" && !strings.EqualFold(params["charset"], "utf-8"):
		return "", nil, nil, unsupportedFormat("the CSV file must be UTF-8 (charset=utf-8)")
	}
	if _, oe := checkFormat(format, b.importDoc); oe != nil {
		return "", nil, nil, oe // before the body is read
	}
	limit := b.limits.MaxBytes
	if r.ContentLength > limit {
		return "", nil, nil, tooLarge(fmt.Sprintf("the file is larger than %d bytes", limit))
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return "", nil, nil, tooLarge(fmt.Sprintf("the file is larger than %d bytes", limit))
		}
		return "", nil, nil, badRequest("could not read the request body")
	}
	var fields map[string]any
	query := r.URL.Query()
	for _, fd := range b.importDoc.Fields {
		s := query.Get(fd.ID)
		if s == "" {
			continue
		}
		v, msg := convertCell(fd.Type, s)
		if msg != "" {
			return "", nil, nil, &opError{Status: http.StatusUnprocessableEntity, Detail: "Invalid import fields",
				Errs: []contracts.ResultError{{Code: ImportCodeType, Message: msg, Field: "fields." + fd.ID}}}
		}
		if fields == nil {
			fields = map[string]any{}
		}
		fields[fd.ID] = jsonNumber(v)
	}
	return format, data, fields, nil
}

// jsonNumber returns a converted integer or number as json.Number, the form
// the same value has when it comes from a JSON input.
func jsonNumber(v any) any {
	switch n := v.(type) {
	case int64:
		return json.Number(strconv.FormatInt(n, 10))
	case float64:
		return json.Number(strconv.FormatFloat(n, 'g', -1, 64))
	}
	return v
}
