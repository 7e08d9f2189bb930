package supervaizer

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/go-chi/chi/v5"
	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/internal/jsonrpc"
	"github.com/supervaize/supervaizer-go/resource"
)

// This file is the glue between an agent and package resource: an author
// implements the operations of a declared resource once
// ([resource.Handlers]) and [RegisterResource] serves them both as the
// resource.<id>.<op> actions of POST /a2a and on the DataResource REST routes
// ([resource.Routes]); [RegisterDataset] serves a dataset query. Package
// resource holds the core both transports share.

// RegisterResource registers impl for the resource id declared in the
// registration of r's agent: each non-nil operation becomes the handler of
// the action resource.<id>.<op> and is served on the DataResource REST
// routes. It panics (a setup error, like [Agent.HandleAction]) when the
// resource is not declared, when impl sets an operation the resource does not
// declare, when an action already has a handler, when requires_context names
// a key the SDK cannot check, when T does not encode to a JSON object, or
// when Import is set without a valid CSV ImportDocument for this resource.
//
// The action inputs and effects are described at [resource.Binding.Invoke]:
// malformed input is answered with -32602; missing context, a refused item, a
// refused import and the handler's [resource.ErrNotFound] and
// [resource.RefusalError] with a status "error" result (codes
// [contracts.ErrorMissingContext], [contracts.ErrorNotFound], the field codes
// of [a2ui.ValidateValues], [contracts.ErrorImportRejected], …). Imports are
// described at [resource.ImportBatch].
//
// The DataResource REST routes (mounted in local mode and when attached to
// Studio) serve the same operations: GET|POST /api/agents/{slug}/data/{id}/
// (list with ?limit=&offset=&search=, create), GET|PUT|DELETE
// …/{id}/{item_id} (get, update, delete) and POST …/{id}/import/. Each call
// needs X-API-Key (write scope for mutations) and a workspace token with the
// single scope resource.<id>.<op> for the workspace of the
// X-Supervaize-Workspace-Id header, verified by the server's
// [WorkspaceVerifier] with no bootstrap exemption and no local-mode bypass
// (HTTP 403 {"detail": …} otherwise). Answers: list 200 {"resource", "items",
// "count"}, get and update 200 item, create 201 item, delete 204, import 200
// with the keys of resource.imported; refusals {"detail", "errors"} with 400
// (missing context, bad header or parameter), 404, 405 (operation not
// implemented), 413, 415 or 422 (refused item or import).
//
// A declared operation left nil is not an error: its action stays without a
// handler (the server logs it at startup and answers -32010), and its REST
// route answers 405. Free-form operations (e.g. "reconcile") are registered
// with [Agent.HandleAction].
func RegisterResource[T any](r HandlerRegistry, id string, impl resource.Handlers[T]) {
	a := r.agentFor("RegisterResource")
	fail := func(format string, args ...any) {
		panic(fmt.Sprintf("supervaizer: RegisterResource(%q) on agent %q: ", id, a.slug) + fmt.Sprintf(format, args...))
	}
	def, ok := a.resourceDefinition(id)
	if !ok {
		fail("the resource is not declared in the registration")
	}
	b, err := resource.Bind(def, impl)
	if err != nil {
		fail("%v", err)
	}
	ops := b.Operations()
	for _, op := range ops {
		if action := resource.Action(id, op); !a.declaresAction(action) {
			fail("action %q is not declared in the registration", action)
		} else if a.action(action) != nil {
			fail("action %q already has a handler", action)
		}
	}
	reg := &a.data
	reg.mu.Lock()
	defer reg.mu.Unlock()
	if _, dup := reg.resources[id]; dup {
		fail("the resource is already registered")
	}
	for _, op := range ops {
		a.HandleAction(resource.Action(id, op), func(ctx context.Context, req *ActionRequest) (*ActionResult, error) {
			return actionOutcome(b.Invoke(ctx, op, req))
		})
	}
	if reg.resources == nil {
		reg.resources = map[string]*resource.Binding{}
	}
	reg.resources[id] = b
}

// RegisterDataset registers query as the handler of dataset.<id>.query for
// the dataset id declared in the registration of r's agent; the action and
// its result are described at [resource.Dataset.Query].
//
// It panics (a setup error) when the dataset is not declared, when its action
// already has a handler, when query is nil or when Row does not encode to a
// JSON object (a struct, a pointer to a struct or a map with string keys).
func RegisterDataset[Row any](r HandlerRegistry, id string, query func(ctx context.Context, rc resource.Context, q resource.DatasetQuery) ([]Row, error)) {
	a := r.agentFor("RegisterDataset")
	fail := func(format string, args ...any) {
		panic(fmt.Sprintf("supervaizer: RegisterDataset(%q) on agent %q: ", id, a.slug) + fmt.Sprintf(format, args...))
	}
	if query == nil {
		fail("nil query")
	}
	def, ok := a.datasetDefinition(id)
	if !ok {
		fail("the dataset is not declared in the registration")
	}
	d, err := resource.BindDataset(def, query)
	if err != nil {
		fail("%v", err)
	}
	a.HandleAction(resource.DatasetAction(id), func(ctx context.Context, req *ActionRequest) (*ActionResult, error) {
		return actionOutcome(d.Query(ctx, req))
	})
}

// actionOutcome is the handler answer of a resource or dataset action:
// malformed input becomes the -32602 error of its problems.
func actionOutcome(res *ActionResult, problems []contracts.Problem, err error) (*ActionResult, error) {
	if len(problems) > 0 {
		return nil, invalidInput(problems)
	}
	return res, err
}

// resourceDefinition returns the declared resource id.
func (a *Agent) resourceDefinition(id string) (contracts.ResourceDefinition, bool) {
	if a.reg == nil {
		return contracts.ResourceDefinition{}, false
	}
	for _, d := range a.reg.Resources {
		if d.ID == id {
			return d, true
		}
	}
	return contracts.ResourceDefinition{}, false
}

// datasetDefinition returns the declared dataset id.
func (a *Agent) datasetDefinition(id string) (contracts.DatasetDefinition, bool) {
	if a.reg == nil {
		return contracts.DatasetDefinition{}, false
	}
	for _, d := range a.reg.Datasets {
		if d.ID == id {
			return d, true
		}
	}
	return contracts.DatasetDefinition{}, false
}

// dataRegistry holds an agent's registered resources, for the REST routes.
type dataRegistry struct {
	mu        sync.RWMutex
	resources map[string]*resource.Binding
}

// registeredResource returns the resource id registered on a, or nil.
func registeredResource(a *Agent, id string) *resource.Binding {
	if a == nil {
		return nil
	}
	reg := &a.data
	reg.mu.RLock()
	defer reg.mu.RUnlock()
	return reg.resources[id]
}

// mountDataResources mounts the DataResource REST routes on r: the API key
// of the operation's scope, then the server's admission, then the route.
func (s *Server) mountDataResources(r chi.Router) {
	rt := &resource.Routes{
		Find: func(ctx context.Context, agentSlug, id string, ws *contracts.VerifiedWorkspaceContext) (context.Context, *resource.Binding) {
			a := s.bySlug[agentSlug]
			return withAgent(withWorkspace(ctx, ws), a), registeredResource(a, id)
		},
		Verify:   s.verifyDataResource,
		ReadJSON: func(w http.ResponseWriter, r *http.Request) ([]byte, bool) { return readJSONBody(w, r, s.cfg.maxBody) },
		Failed: func(ctx context.Context, agentSlug, action, requestID string, err error) {
			handlerFailed(ctx, s.logger, "resource", agentSlug, action, requestID, err)
		},
	}
	keyed := func(scope KeyScope) func(http.Handler) http.Handler {
		key := requireKey(&s.keys, s.logger, scope)
		return func(next http.Handler) http.Handler { return key(s.admitDataResource(next)) }
	}
	rt.Mount(r, keyed(ScopeRead), keyed(ScopeWrite))
}

// admitDataResource admits a DataResource call as /a2a admits one: none
// while the server shuts down, none before Start when attached to Studio (no
// token could verify yet); Shutdown waits for the calls admitted.
func (s *Server) admitDataResource(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.inflight.Add(1)
		defer s.inflight.Done()
		switch {
		case s.closing.Load():
			writeDetail(w, http.StatusServiceUnavailable, "server is shutting down")
		case s.studio != nil && !s.started.Load():
			writeDetail(w, http.StatusServiceUnavailable, "controller not started: Server.Start has not registered it with Studio")
		default:
			next.ServeHTTP(w, r)
		}
	})
}

// readJSONBody reads the JSON body of a DataResource item: a Content-Type
// other than JSON is answered 415, a body over the server's limit 413.
func readJSONBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, bool) {
	if ct := r.Header.Get("Content-Type"); ct != "" && !jsonrpc.IsJSONContentType(ct) {
		writeJSON(w, http.StatusUnsupportedMediaType, map[string]any{"detail": "Content-Type must be application/json", "errors": nil})
		return nil, false
	}
	body, status, detail := readBody(w, r, limit)
	if status != 0 {
		writeDetail(w, status, detail)
		return nil, false
	}
	return body, true
}

// verifyDataResource verifies the workspace token of a REST call with the
// single scope of the operation. It never applies the local-mode bypass.
func (s *Server) verifyDataResource(ctx context.Context, r *http.Request, agentSlug, scope string) (*contracts.VerifiedWorkspaceContext, error) {
	vc, ae := verifyWorkspace(ctx, s.verifier, s.logger, WorkspaceCheck{
		Header:      r.Header.Get(HeaderWorkspaceAuthorization),
		WorkspaceID: r.Header.Get(resource.HeaderWorkspaceID), WorkspaceSlug: r.Header.Get(resource.HeaderWorkspaceSlug),
		AgentSlug: agentSlug, Scopes: []string{scope},
	})
	if ae != nil {
		return nil, errors.New(ae.Message)
	}
	return vc, nil
}

// dashboardRefProblems returns one problem per dashboard widget whose data
// reference (mode "ref") names no dataset declared in reg, located at
// /dashboards/<i>/widgets/<j>/data/datasetId (rule "dataset_ref"). A missing
// or empty datasetId is left to the contract schema, which reports it.
// BuildRegistration appends these problems to its own after the merge.
func dashboardRefProblems(reg *contracts.Registration) []contracts.Problem {
	declared := make(map[string]bool, len(reg.Datasets))
	for _, d := range reg.Datasets {
		declared[d.ID] = true
	}
	var ps []contracts.Problem
	for i, d := range reg.Dashboards {
		for j, w := range d.Widgets {
			if w.Data == nil || (w.Data.Mode != "" && w.Data.Mode != contracts.DataModeRef) {
				continue
			}
			if w.Data.DatasetID == nil || *w.Data.DatasetID == "" || declared[*w.Data.DatasetID] {
				continue
			}
			loc := []any{"dashboards", i, "widgets", j, "data", "datasetId"}
			ps = append(ps, contracts.Problem{Loc: loc, Msg: "names no declared dataset", Type: "dataset_ref", Path: pointerOf(loc)})
		}
	}
	return ps
}
