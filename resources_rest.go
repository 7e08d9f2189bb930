package supervaizer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/internal/resource"
)

// The DataResource REST routes
// serve the operations registered with RegisterResource:
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
// {"detail": <verifier message>}. The context headers are then
// read by ParseDataResourceContext (400 on a bad mission-metadata header).
// The list takes ?limit=&offset=&search=; create and update take the item as
// a JSON object body; import takes the raw CSV body (Content-Type text/csv)
// and the document's contextual fields as query parameters. The routes carry
// no job: a job-scoped resource answers 400 (missing job_id) on REST and is
// served on POST /a2a only. Refusals are
// {"detail": …, "errors": [{code, message, field?, row?}]}: 400 missing
// context or bad parameters, 404 unknown resource or item, 405 operation not
// implemented, 413 file too large, 415 not CSV, 422 refused item or import.

// dataResourceBase is the route prefix of one resource.
const dataResourceBase = "/api/agents/{agent_slug}/data/{resource}"

// mountDataResources mounts the DataResource routes on r.
func (s *Server) mountDataResources(r chi.Router) {
	read, write := s.requireKey(ScopeRead), s.requireKey(ScopeWrite)
	r.With(read).Get(dataResourceBase+"/", s.serveDataResource(opList))
	r.With(write).Post(dataResourceBase+"/", s.serveDataResource(opCreate))
	r.With(write).Post(dataResourceBase+"/import/", s.serveDataResource(opImport))
	r.With(read).Get(dataResourceBase+"/{item_id}", s.serveDataResource(opGet))
	r.With(write).Put(dataResourceBase+"/{item_id}", s.serveDataResource(opUpdate))
	r.With(write).Delete(dataResourceBase+"/{item_id}", s.serveDataResource(opDelete))
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

// serveDataResource serves one operation: token, context headers, resource
// lookup, scope, input, then the same core as the resource.<id>.<op> action.
func (s *Server) serveDataResource(op string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.inflight.Add(1)
		defer s.inflight.Done()
		if s.closing.Load() {
			writeDetail(w, http.StatusServiceUnavailable, "server is shutting down")
			return
		}
		if s.studio != nil && !s.started.Load() { // as on /a2a: no token could verify yet
			writeDetail(w, http.StatusServiceUnavailable, "controller not started: Server.Start has not registered it with Studio")
			return
		}
		agentSlug, ok1 := routeParam(r, "agent_slug")
		name, ok2 := routeParam(r, "resource")
		if !ok1 || !ok2 {
			writeDetail(w, http.StatusBadRequest, "Malformed path")
			return
		}
		ctx := r.Context()
		ws, ok := s.verifyDataResource(ctx, w, r, agentSlug, resourceAction(name, op))
		if !ok {
			return
		}
		dc, err := resource.ParseDataResourceContext(r, ws)
		if err != nil {
			status := http.StatusBadRequest
			var he *resource.ContextHeaderError
			if errors.As(err, &he) && he.Status >= 400 {
				status = he.Status
			}
			writeDetail(w, status, err.Error())
			return
		}
		a := s.bySlug[agentSlug]
		b := registeredResource(a, name)
		if b == nil {
			writeDetail(w, http.StatusNotFound, "Resource not found")
			return
		}
		if !b.serves(op) {
			writeDetail(w, http.StatusMethodNotAllowed, "Operation not supported: "+resourceAction(name, op))
			return
		}
		rc, oe := resolveContext(b.def.ID, op, b.def.Scope, b.def.RequiresContext, resourceCall{
			ws: ws, agentSlug: agentSlug, requestID: dc.RequestID, missionID: dc.MissionID, mission: dc.Mission,
		})
		if oe != nil {
			writeJSON(w, oe.Status, oe.Body())
			return
		}
		ctx = withAgent(withWorkspace(ctx, ws), a)
		var (
			status int
			body   any
		)
		err = recovered(func() error {
			var err error
			status, body, err = s.runDataResource(ctx, w, r, b, op, rc)
			return err
		})
		if err != nil {
			if oe, ok := asOpError(err); ok {
				writeJSON(w, oe.Status, oe.Body())
				return
			}
			s.handlerFailed(ctx, "resource", agentSlug, resourceAction(name, op), dc.RequestID, err)
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

// verifyDataResource verifies the workspace token for one REST call, with
// the single scope of the operation. It never applies the local-mode bypass.
func (s *Server) verifyDataResource(ctx context.Context, w http.ResponseWriter, r *http.Request, agentSlug, scope string) (*contracts.VerifiedWorkspaceContext, bool) {
	vc, ae := s.verifyWorkspace(ctx, WorkspaceCheck{
		Header:      r.Header.Get(HeaderWorkspaceAuthorization),
		WorkspaceID: r.Header.Get(resource.HeaderWorkspaceID), WorkspaceSlug: r.Header.Get(resource.HeaderWorkspaceSlug),
		AgentSlug: agentSlug, Scopes: []string{scope},
	})
	if ae != nil {
		writeDetail(w, http.StatusForbidden, ae.Message)
		return nil, false
	}
	return vc, true
}

// runDataResource reads the input of op, runs it and returns the status and
// body to answer (status 0: the body reader has already answered).
func (s *Server) runDataResource(ctx context.Context, w http.ResponseWriter, r *http.Request, b *resourceBinding, op string, rc ResourceContext) (int, any, error) {
	switch op {
	case opList:
		q, oe := listQueryFromURL(r.URL.Query())
		if oe != nil {
			return 0, nil, oe
		}
		items, err := b.list(ctx, rc, q)
		if err != nil {
			return 0, nil, err
		}
		return http.StatusOK, map[string]any{"resource": b.def.ID, "items": items, "count": len(items)}, nil
	case opGet, opDelete:
		id, ok := routeParam(r, "item_id")
		if !ok || id == "" {
			return 0, nil, badRequest("malformed item id")
		}
		if op == opDelete {
			return http.StatusNoContent, nil, b.delete(ctx, rc, id)
		}
		item, err := b.get(ctx, rc, id)
		return http.StatusOK, item, err
	case opCreate, opUpdate:
		if ct := r.Header.Get("Content-Type"); ct != "" && !isJSONContentType(ct) {
			return 0, nil, &opError{Status: http.StatusUnsupportedMediaType, Detail: "Content-Type must be application/json"}
		}
		body, ok := s.readBody(w, r)
		if !ok {
			return 0, nil, nil
		}
		if op == opCreate {
			item, err := b.create(ctx, rc, body)
			return http.StatusCreated, item, err
		}
		id, ok := routeParam(r, "item_id")
		if !ok || id == "" {
			return 0, nil, badRequest("malformed item id")
		}
		item, err := b.update(ctx, rc, id, body)
		return http.StatusOK, item, err
	case opImport:
		f, oe := readImportBody(w, r, b)
		if oe != nil {
			return 0, nil, oe
		}
		out, err := b.imp(ctx, rc, f)
		if err != nil {
			return 0, nil, err
		}
		return http.StatusOK, importBody(out), nil
	}
	return 0, nil, fmt.Errorf("supervaizer: unknown operation %q", op)
}

func badRequest(msg string) *opError {
	return &opError{Status: http.StatusBadRequest, Detail: "Bad request: " + msg,
		Errs: []contracts.ResultError{{Code: contracts.ErrorInvalidInput, Message: msg}}}
}

// listQueryFromURL reads ?limit=&offset=&search=.
func listQueryFromURL(v url.Values) (ListQuery, *opError) {
	q := ListQuery{Limit: defaultPageLimit, Search: v.Get("search")}
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > maxPageLimit {
			return q, badRequest(fmt.Sprintf("limit must be an integer between 1 and %d", maxPageLimit))
		}
		q.Limit = n
	}
	if s := v.Get("offset"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 || n > maxOffset {
			return q, badRequest(fmt.Sprintf("offset must be an integer between 0 and %d", maxOffset))
		}
		q.Offset = n
	}
	return q, nil
}

// csvMediaTypes are the Content-Types accepted for a CSV upload
// (application/vnd.ms-excel is what several browsers send for .csv files).
var csvMediaTypes = map[string]bool{
	"text/csv": true, "application/csv": true, "text/plain": true, "application/vnd.ms-excel": true,
}

const xlsxMediaType = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"

// readImportBody reads a CSV upload within the resource's byte limit, and
// the contextual fields from the query (each converted to its field type,
// numbers as json.Number like in a JSON input).
func readImportBody(w http.ResponseWriter, r *http.Request, b *resourceBinding) (importFile, *opError) {
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch {
	case err == nil && mt == xlsxMediaType:
		return importFile{}, resource.UnsupportedFormat("XLSX files are not supported by this SDK: send the file as CSV (Content-Type text/csv)")
	case err != nil || !csvMediaTypes[mt]:
		return importFile{}, resource.UnsupportedFormat("send the file as CSV (Content-Type text/csv)")
	case params["charset"] != "" && !strings.EqualFold(params["charset"], "utf-8"):
		return importFile{}, resource.UnsupportedFormat("the CSV file must be UTF-8 (charset=utf-8)")
	}
	limit := b.limits.MaxBytes
	if r.ContentLength > limit {
		return importFile{}, resource.TooLarge(fmt.Sprintf("the file is larger than %d bytes", limit))
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return importFile{}, resource.TooLarge(fmt.Sprintf("the file is larger than %d bytes", limit))
		}
		return importFile{}, badRequest("could not read the request body")
	}
	f := importFile{format: contracts.ImportFormatCSV, data: data}
	query := r.URL.Query()
	for _, fd := range b.importDoc.Fields {
		s := query.Get(fd.ID)
		if s == "" {
			continue
		}
		v, msg := resource.ConvertCell(fd.Type, s)
		if msg != "" {
			return importFile{}, &opError{Status: http.StatusUnprocessableEntity, Detail: "Invalid import fields",
				Errs: []contracts.ResultError{{Code: resource.ImportCodeType, Message: msg, Field: "fields." + fd.ID}}}
		}
		if f.fields == nil {
			f.fields = map[string]any{}
		}
		f.fields[fd.ID] = jsonNumber(v)
	}
	return f, nil
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

// importBody is the REST body of an applied import: the effect's keys.
func importBody(out *importOutcome) map[string]any {
	e := out.effect
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
	if out.jobState != nil {
		body["job_state"] = out.jobState
	}
	return body
}
