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
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/supervaize/supervaizer-go/contracts"
)

// The DataResource REST routes serve the operations an agent registered with
// supervaizer.RegisterResource:
//
//	GET    /api/agents/{slug}/data/{name}/            list    read key   200 {"resource","items","count"}
//	POST   /api/agents/{slug}/data/{name}/            create  write key  201 item
//	GET    /api/agents/{slug}/data/{name}/{item_id}   get     read key   200 item
//	PUT    /api/agents/{slug}/data/{name}/{item_id}   update  write key  200 item
//	DELETE /api/agents/{slug}/data/{name}/{item_id}   delete  write key  204
//	POST   /api/agents/{slug}/data/{name}/import/     import  write key  200 {"resource","count","items","errors",…}
//
// Every call needs, after X-API-Key, a workspace token with the single scope
// resource.<name>.<operation>, verified with the server's WorkspaceVerifier
// for the workspace of X-Supervaize-Workspace-Id/-Slug and the route's agent:
// no bootstrap exemption, no local-mode bypass; a failure is HTTP 403
// {"detail": <verifier message>}. The context headers are then read by
// [ParseDataResourceContext] (400 on a bad mission-metadata header). The list
// takes ?limit=&offset=&search=; create and update take the item as a JSON
// object body; import takes the raw CSV body (Content-Type text/csv) and the
// document's contextual fields as query parameters. The routes carry no job:
// a job-scoped resource answers 400 (missing job_id) on REST and is served on
// POST /a2a only. Refusals are {"detail": …, "errors": [{code, message,
// field?, row?}]}: 400 missing context or bad parameters, 404 unknown
// resource or item, 405 operation not implemented, 413 file too large, 415
// not CSV, 422 refused item or import.

// The operations of a resource.
const (
	OpList   = "list"
	OpGet    = "get"
	OpCreate = "create"
	OpUpdate = "update"
	OpDelete = "delete"
	OpImport = "import"
)

// Paging of resource lists and dataset queries.
const (
	DefaultPageLimit = 100     // rows or items returned when the request names no limit
	MaxPageLimit     = 1000    // the largest limit a request may ask for
	MaxOffset        = 1 << 30 // bounds offsets so that offset+limit never overflows
)

// Action is the action id of operation op of resource id.
func Action(id, op string) string { return "resource." + id + "." + op }

// Page is the paging of a list call.
type Page struct {
	Limit, Offset int
	Search        string
}

// Call is one DataResource REST call, once its token and context headers are
// verified.
type Call struct {
	AgentSlug, Resource, Op string
	Workspace               *contracts.VerifiedWorkspaceContext
	Context                 *DataResourceContext
}

// Refusal is a refusal answered {"detail": Detail} with Status.
type Refusal struct {
	Status int
	Detail string
}

func (e *Refusal) Error() string { return e.Detail }

// Target is one registered resource, bound to the verified scope of a call.
type Target interface {
	List(ctx context.Context, p Page) ([]map[string]any, error)
	Get(ctx context.Context, id string) (map[string]any, error)
	Create(ctx context.Context, item []byte) (map[string]any, error)
	Update(ctx context.Context, id string, item []byte) (map[string]any, error)
	Delete(ctx context.Context, id string) error
	// Import applies an uploaded CSV file with its contextual field values
	// and returns the REST body of the applied import.
	Import(ctx context.Context, data []byte, fields map[string]any) (map[string]any, error)
	// ImportMaxBytes is the largest import file accepted.
	ImportMaxBytes() int64
	// ImportFields are the contextual fields of the import document.
	ImportFields() []contracts.ResourceField
}

// Server is the server side of the routes.
type Server interface {
	// Begin admits a call and returns the function that ends it, or the
	// refusal to answer (the server is shutting down or not started).
	Begin() (end func(), refused *Refusal)
	// Verify verifies the workspace token of a call for the single scope;
	// a failure returns the verifier's message, answered 403.
	Verify(ctx context.Context, r *http.Request, agentSlug, scope string) (*contracts.VerifiedWorkspaceContext, string, bool)
	// Open finds the resource of the call, checks that it serves the
	// operation and resolves its scope: it returns the context its handlers
	// run in and the bound resource, or a *Refusal or *OpError.
	Open(ctx context.Context, c Call) (context.Context, Target, error)
	// ReadJSON reads a JSON request body within the server's body limit; it
	// answers itself and returns false when the body is refused.
	ReadJSON(w http.ResponseWriter, r *http.Request) ([]byte, bool)
	// Refusal maps a handler error to its refusal (ErrNotFound, a
	// ResourceError, an *OpError); false for a failure.
	Refusal(err error) (*OpError, bool)
	// Failed logs a failed (or panicking) handler.
	Failed(ctx context.Context, c Call, err error)
	// WriteJSON answers status with v encoded as JSON.
	WriteJSON(w http.ResponseWriter, status int, v any)
}

// base is the route prefix of one resource.
const base = "/api/agents/{agent_slug}/data/{resource}"

// Mount mounts the routes on r: read and write are the API-key middlewares of
// the two key scopes.
func Mount(r chi.Router, srv Server, read, write func(http.Handler) http.Handler) {
	rt := routes{srv: srv}
	r.With(read).Get(base+"/", rt.serve(OpList))
	r.With(write).Post(base+"/", rt.serve(OpCreate))
	r.With(write).Post(base+"/import/", rt.serve(OpImport))
	r.With(read).Get(base+"/{item_id}", rt.serve(OpGet))
	r.With(write).Put(base+"/{item_id}", rt.serve(OpUpdate))
	r.With(write).Delete(base+"/{item_id}", rt.serve(OpDelete))
}

type routes struct{ srv Server }

func (rt routes) detail(w http.ResponseWriter, status int, detail string) {
	rt.srv.WriteJSON(w, status, map[string]any{"detail": detail})
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
func (rt routes) serve(op string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		end, refused := rt.srv.Begin()
		if refused != nil {
			rt.detail(w, refused.Status, refused.Detail)
			return
		}
		defer end()
		agentSlug, ok1 := routeParam(r, "agent_slug")
		name, ok2 := routeParam(r, "resource")
		if !ok1 || !ok2 {
			rt.detail(w, http.StatusBadRequest, "Malformed path")
			return
		}
		ctx := r.Context()
		ws, msg, ok := rt.srv.Verify(ctx, r, agentSlug, Action(name, op))
		if !ok {
			rt.detail(w, http.StatusForbidden, msg)
			return
		}
		dc, err := ParseDataResourceContext(r, ws)
		if err != nil {
			status := http.StatusBadRequest
			var he *ContextHeaderError
			if errors.As(err, &he) && he.Status >= 400 {
				status = he.Status
			}
			rt.detail(w, status, err.Error())
			return
		}
		call := Call{AgentSlug: agentSlug, Resource: name, Op: op, Workspace: ws, Context: dc}
		ctx, t, err := rt.srv.Open(ctx, call)
		if err != nil {
			rt.refuse(w, err)
			return
		}
		status, body, err := rt.run(ctx, w, r, t, call)
		if err != nil {
			if oe, ok := rt.srv.Refusal(err); ok {
				rt.srv.WriteJSON(w, oe.Status, oe.Body())
				return
			}
			rt.srv.Failed(ctx, call, err)
			rt.detail(w, http.StatusInternalServerError, "Resource handler failed")
			return
		}
		if status == 0 { // the body reader has answered
			return
		}
		if body == nil {
			w.WriteHeader(status)
			return
		}
		rt.srv.WriteJSON(w, status, body)
	}
}

// refuse answers a refusal of Open.
func (rt routes) refuse(w http.ResponseWriter, err error) {
	var rf *Refusal
	if errors.As(err, &rf) {
		rt.detail(w, rf.Status, rf.Detail)
		return
	}
	var oe *OpError
	if errors.As(err, &oe) {
		rt.srv.WriteJSON(w, oe.Status, oe.Body())
		return
	}
	rt.detail(w, http.StatusInternalServerError, "Resource handler failed")
}

// run reads the input of the operation, runs it and returns the status and
// body to answer (status 0: the body reader has already answered). A panic
// of the handler is returned as an error.
func (rt routes) run(ctx context.Context, w http.ResponseWriter, r *http.Request, t Target, c Call) (status int, body any, err error) {
	defer func() {
		if v := recover(); v != nil {
			status, body, err = 0, nil, &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	switch c.Op {
	case OpList:
		p, oe := pageFromURL(r.URL.Query())
		if oe != nil {
			return 0, nil, oe
		}
		items, err := t.List(ctx, p)
		if err != nil {
			return 0, nil, err
		}
		return http.StatusOK, map[string]any{"resource": c.Resource, "items": items, "count": len(items)}, nil
	case OpGet, OpDelete:
		id, ok := routeParam(r, "item_id")
		if !ok || id == "" {
			return 0, nil, badRequest("malformed item id")
		}
		if c.Op == OpDelete {
			return http.StatusNoContent, nil, t.Delete(ctx, id)
		}
		item, err := t.Get(ctx, id)
		return http.StatusOK, item, err
	case OpCreate, OpUpdate:
		body, ok := rt.srv.ReadJSON(w, r)
		if !ok {
			return 0, nil, nil
		}
		if c.Op == OpCreate {
			item, err := t.Create(ctx, body)
			return http.StatusCreated, item, err
		}
		id, ok := routeParam(r, "item_id")
		if !ok || id == "" {
			return 0, nil, badRequest("malformed item id")
		}
		item, err := t.Update(ctx, id, body)
		return http.StatusOK, item, err
	case OpImport:
		data, fields, oe := readImport(w, r, t)
		if oe != nil {
			return 0, nil, oe
		}
		out, err := t.Import(ctx, data, fields)
		if err != nil {
			return 0, nil, err
		}
		return http.StatusOK, out, nil
	}
	return 0, nil, fmt.Errorf("supervaizer: unknown operation %q", c.Op)
}

// PanicError is a recovered handler panic, for the log.
type PanicError struct {
	Value any
	Stack []byte
}

func (p *PanicError) Error() string { return fmt.Sprintf("panic: %v\n%s", p.Value, p.Stack) }

// ImportBody is the REST body of an applied import: the keys of its
// resource.imported effect, and the job state when there is one.
func ImportBody(e contracts.Effect, jobState *contracts.JobState) map[string]any {
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

func badRequest(msg string) *OpError {
	return &OpError{Status: http.StatusBadRequest, Detail: "Bad request: " + msg,
		Errs: []contracts.ResultError{{Code: contracts.ErrorInvalidInput, Message: msg}}}
}

// pageFromURL reads ?limit=&offset=&search=.
func pageFromURL(v url.Values) (Page, *OpError) {
	p := Page{Limit: DefaultPageLimit, Search: v.Get("search")}
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > MaxPageLimit {
			return p, badRequest(fmt.Sprintf("limit must be an integer between 1 and %d", MaxPageLimit))
		}
		p.Limit = n
	}
	if s := v.Get("offset"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 || n > MaxOffset {
			return p, badRequest(fmt.Sprintf("offset must be an integer between 0 and %d", MaxOffset))
		}
		p.Offset = n
	}
	return p, nil
}

// csvMediaTypes are the Content-Types accepted for a CSV upload
// (application/vnd.ms-excel is what several browsers send for .csv files).
var csvMediaTypes = map[string]bool{
	"text/csv": true, "application/csv": true, "text/plain": true, "application/vnd.ms-excel": true,
}

const xlsxMediaType = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"

// readImport reads a CSV upload within the resource's byte limit, and the
// contextual fields from the query (each converted to its field type,
// numbers as json.Number like in a JSON input).
func readImport(w http.ResponseWriter, r *http.Request, t Target) ([]byte, map[string]any, *OpError) {
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch {
	case err == nil && mt == xlsxMediaType:
		return nil, nil, UnsupportedFormat("XLSX files are not supported by this SDK: send the file as CSV (Content-Type text/csv)")
	case err != nil || !csvMediaTypes[mt]:
		return nil, nil, UnsupportedFormat("send the file as CSV (Content-Type text/csv)")
	case params["charset"] != "" && !strings.EqualFold(params["charset"], "utf-8"):
		return nil, nil, UnsupportedFormat("the CSV file must be UTF-8 (charset=utf-8)")
	}
	limit := t.ImportMaxBytes()
	if r.ContentLength > limit {
		return nil, nil, TooLarge(fmt.Sprintf("the file is larger than %d bytes", limit))
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, nil, TooLarge(fmt.Sprintf("the file is larger than %d bytes", limit))
		}
		return nil, nil, badRequest("could not read the request body")
	}
	var fields map[string]any
	query := r.URL.Query()
	for _, fd := range t.ImportFields() {
		s := query.Get(fd.ID)
		if s == "" {
			continue
		}
		v, msg := ConvertCell(fd.Type, s)
		if msg != "" {
			return nil, nil, &OpError{Status: http.StatusUnprocessableEntity, Detail: "Invalid import fields",
				Errs: []contracts.ResultError{{Code: ImportCodeType, Message: msg, Field: "fields." + fd.ID}}}
		}
		if fields == nil {
			fields = map[string]any{}
		}
		fields[fd.ID] = jsonNumber(v)
	}
	return data, fields, nil
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
