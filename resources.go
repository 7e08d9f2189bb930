package supervaizer

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"reflect"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/go-chi/chi/v5"

	"github.com/supervaize/supervaizer-go/a2ui"
	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/internal/fold"
	"github.com/supervaize/supervaizer-go/internal/resource"
	"github.com/supervaize/supervaizer-go/internal/wire"
)

// This file holds the typed resource API: an author implements the
// operations of a declared resource once ([Resource]) and [RegisterResource]
// serves them both as the resource.<id>.<op> actions of POST /a2a and as the
// DataResource REST routes (internal/resource). Both transports share one
// core: the verified scope (ResourceContext), the item checks against the
// declared fields and the error mapping. The CSV checks of imports are in
// internal/resource; datasets are in datasets.go.

// The conventional effect types of resource operations.
const (
	effectResourceListed   = "resource.listed"
	effectResourceFetched  = "resource.fetched"
	effectResourceCreated  = "resource.created"
	effectResourceUpdated  = "resource.updated"
	effectResourceDeleted  = "resource.deleted"
	effectResourceImported = "resource.imported"
)

// The operations a [Resource] implements (named once, by the REST routes).
const (
	opList   = resource.OpList
	opGet    = resource.OpGet
	opCreate = resource.OpCreate
	opUpdate = resource.OpUpdate
	opDelete = resource.OpDelete
	opImport = resource.OpImport
)

// ErrNotFound is what a resource handler returns (or wraps) when no item has
// the requested id in rc.Scope. It is answered with a status "error" result
// carrying [contracts.ErrorNotFound] on POST /a2a and with HTTP 404 on the DataResource
// routes. Never distinguish "exists in another workspace" from "does not
// exist".
var ErrNotFound = errors.New("supervaizer: item not found")

// ResourceError is a business refusal a resource or dataset handler returns,
// for example a duplicate e-mail address. It is answered with a status
// "error" result carrying Code, Message and Field on POST /a2a, and with
// Status (default 422) and {"detail": Message, "errors": [...]} on the
// DataResource routes. Message is sent to Studio: never put secrets in it.
type ResourceError struct {
	Code    string // machine-readable, e.g. "duplicate_email"; required
	Message string // human-readable
	Field   string // the item field concerned, if any
	Status  int    // HTTP status on the DataResource routes; 0 means 422
}

// Error returns the code and the message.
func (e *ResourceError) Error() string { return e.Code + ": " + e.Message }

// ScopeKey is the verified partition of a resource or dataset call: the only
// key a handler may select, store and delete items by. Workspace comes from
// the verified workspace token (its agent_workspace_ref when Studio bound the
// workspace to an agent-side record, else the workspace id); Mission and Job
// come from the request and are set only for mission- and job-scoped
// resources, inside that workspace. It is comparable: use it as a map key, or
// its String form as a storage key (add a separator before using it as a
// prefix: "workspace:ws-1" is a prefix of "workspace:ws-10").
type ScopeKey struct {
	Level     string // the declared scope: contracts.ScopeWorkspace, ScopeMission or ScopeJob
	Workspace string // agent_workspace_ref, or the verified workspace id when ByRef is false
	ByRef     bool   // Workspace is an agent_workspace_ref (the two namespaces never mix)
	Mission   string // the mission id; mission scope only
	Job       string // the job id; job scope only
}

// String returns a canonical key, e.g. "ref:acme-prod" or
// "workspace:ws-1/mission:m-1". Components are path-escaped, so two
// different scope keys never share a string.
func (k ScopeKey) String() string {
	var b strings.Builder
	if k.ByRef {
		b.WriteString("ref:")
	} else {
		b.WriteString("workspace:")
	}
	b.WriteString(url.PathEscape(k.Workspace))
	if k.Mission != "" {
		b.WriteString("/mission:")
		b.WriteString(url.PathEscape(k.Mission))
	}
	if k.Job != "" {
		b.WriteString("/job:")
		b.WriteString(url.PathEscape(k.Job))
	}
	return b.String()
}

// ResourceContext is what a resource or dataset handler receives besides its
// input. Scope is the partition the handler MUST restrict every read and
// write to; it comes only from the verified workspace token and the declared
// scope, never from a slug or a filter of the request. The other request
// context (mission, job, mission metadata) may narrow results inside Scope,
// never widen them: mission metadata in particular is not signed.
type ResourceContext struct {
	Resource  string   // the resource or dataset id
	Operation string   // list, get, create, update, delete, import, or query for datasets
	Scope     ScopeKey // the verified partition

	// Workspace is the verified workspace context (the token's claims).
	Workspace *Workspace
	AgentSlug string // the agent addressed (route or request)
	RequestID string // the request id ("" when a REST call sends none)

	MissionID string                    // the request's mission ("" when absent)
	JobID     string                    // the request's job ("" when absent; REST calls carry none)
	CaseID    string                    // the request's case (POST /a2a only)
	StepID    string                    // the request's step (POST /a2a only)
	Mission   *contracts.MissionContext // mission and its metadata; nil when none was sent
}

// ListQuery is the input of a list operation. Limit and Offset page the
// items of rc.Scope; Search and Filters narrow them. The handler applies
// them: the SDK only checks their range and truncates a longer answer to Limit.
type ListQuery struct {
	Limit   int            // 1..1000; 100 when the request names none
	Offset  int            // items to skip, >= 0
	Search  string         // free text, "" for none
	Filters map[string]any // caller-supplied narrowing (POST /a2a input.filters); never authorization
}

// Resource is the implementation of a declared resource for the item type T
// (a struct, or a map with string keys, that encodes to a JSON object). Set
// the operations the resource implements; each must be declared in the
// resource's operations. Items sent by Studio are checked against the
// declared resource fields before Create and Update run.
//
// Every operation receives the verified [ResourceContext]: read and write
// only inside rc.Scope. Return [ErrNotFound] for an id absent from rc.Scope,
// a *[ResourceError] for a business refusal, any other error for a failure
// (logged, answered as an internal error).
type Resource[T any] struct {
	// List returns at most q.Limit items of rc.Scope, from q.Offset.
	List func(ctx context.Context, rc ResourceContext, q ListQuery) ([]T, error)
	// Get returns the item id of rc.Scope.
	Get func(ctx context.Context, rc ResourceContext, id string) (T, error)
	// Create stores a new item in rc.Scope and returns it as stored.
	Create func(ctx context.Context, rc ResourceContext, item T) (T, error)
	// Update replaces the item id of rc.Scope and returns it as stored.
	Update func(ctx context.Context, rc ResourceContext, id string, item T) (T, error)
	// Delete removes the item id of rc.Scope.
	Delete func(ctx context.Context, rc ResourceContext, id string) error
	// Import applies a checked batch of rows to rc.Scope. It is called only
	// when every row passed the checks of ImportDocument, unless
	// PartialImport is set.
	Import func(ctx context.Context, rc ResourceContext, batch ImportBatch[T]) (ImportReport[T], error)

	// ImportDocument is the ResourceImport document of the resource's import
	// view: its columns are the contract every uploaded row is checked
	// against, its fields the contextual values an import carries. Required
	// with Import; it must accept CSV.
	ImportDocument *a2ui.ResourceImport
	// ImportLimits bounds an uploaded file; zero fields take the defaults
	// (5 MiB, 10,000 rows).
	ImportLimits ImportLimits
	// PartialImport lets Import run with the rows that passed the checks when
	// others failed (their errors are in ImportBatch.Errors). Default false:
	// a single failing row rejects the whole file and Import is not called.
	PartialImport bool
}

// RegisterResource registers impl for the resource id declared in the
// registration of r's agent: each non-nil operation becomes the handler of
// the action resource.<id>.<op> and is served on the DataResource REST
// routes. It panics (a setup error, like [Agent.HandleAction]) when the
// resource is not declared, when impl sets an operation the resource does not
// declare, when an action already has a handler, when requires_context names
// a key the SDK cannot check, when T does not encode to a JSON object, or
// when Import is set without a valid CSV ImportDocument for this resource.
//
// The action inputs and the effect of a successful call:
//
//	list    {"limit"?, "offset"?, "search"?, "filters"?}  resource.listed   {resource, items}
//	get     {"id"}                                        resource.fetched  {resource, item}
//	create  {"item"}                                      resource.created  {resource, item}
//	update  {"id", "item"}                                resource.updated  {resource, item}
//	delete  {"id"}                                        resource.deleted  {resource, item: {id}}
//	import  {"format"?, "content", "encoding"?, "fields"?} resource.imported {resource, count, items, errors, gaps, summary, job_id, case}
//
// Malformed input is answered with -32602; missing context, a refused item, a
// refused import and the handler's [ErrNotFound] and [ResourceError] with a
// status "error" result (codes [contracts.ErrorMissingContext], [contracts.ErrorNotFound], the
// field codes of [a2ui.ValidateValues], [contracts.ErrorImportRejected], …). Imports
// are described at [ImportBatch].
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
func RegisterResource[T any](r HandlerRegistry, id string, impl Resource[T]) {
	a := r.agentFor("RegisterResource")
	fail := func(format string, args ...any) {
		panic(fmt.Sprintf("supervaizer: RegisterResource(%q) on agent %q: ", id, a.slug) + fmt.Sprintf(format, args...))
	}
	def, ok := a.resourceDefinition(id)
	if !ok {
		fail("the resource is not declared in the registration")
	}
	names, err := itemJSONNames(reflect.TypeFor[T]())
	if err != nil {
		fail("%v", err)
	}
	for _, f := range def.Fields {
		if k := fold.Key(f.ID); names[k] == "" {
			names[k] = f.ID
		}
	}
	if err := checkRequiredContext(def.RequiresContext); err != nil {
		fail("%v", err)
	}
	limits, err := impl.ImportLimits.Resolved()
	if err != nil {
		fail("%v", err)
	}
	b := &resourceBinding{def: def, fields: validationFields(def.Fields), names: names, limits: limits}
	ops := bindResource(b, impl)
	for _, op := range ops {
		if !slices.Contains(def.Operations, op) {
			fail("operation %q is set but not declared in the resource operations %v", op, def.Operations)
		}
		if action := resource.Action(id, op); !a.declaresAction(action) {
			fail("action %q is not declared in the registration", action)
		} else if a.action(action) != nil {
			fail("action %q already has a handler", action)
		}
	}
	if impl.Import != nil {
		doc, err := checkImportDocument(id, impl.ImportDocument)
		if err != nil {
			fail("%v", err)
		}
		b.importDoc, b.importFields, b.partial = doc, validationFields(doc.Fields), impl.PartialImport
	}
	reg := dataRegistryOf(a)
	reg.mu.Lock()
	defer reg.mu.Unlock()
	if _, dup := reg.resources[id]; dup {
		fail("the resource is already registered")
	}
	for _, op := range ops {
		a.HandleAction(resource.Action(id, op), b.actionHandler(op))
	}
	reg.resources[id] = b
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

// resourceBinding is a registered resource with its operations type-erased:
// items travel as JSON objects between the transports and the typed closures.
type resourceBinding struct {
	def    contracts.ResourceDefinition
	fields []contracts.Field // the declared fields, read-only ones not required
	names  map[string]string // folded key -> exact key: the field ids and the item type's JSON names
	limits ImportLimits      // resolved
	list   func(ctx context.Context, rc ResourceContext, q ListQuery) ([]map[string]any, error)
	get    func(ctx context.Context, rc ResourceContext, id string) (map[string]any, error)
	create func(ctx context.Context, rc ResourceContext, item []byte) (map[string]any, error)
	update func(ctx context.Context, rc ResourceContext, id string, item []byte) (map[string]any, error)
	delete func(ctx context.Context, rc ResourceContext, id string) error
	imp    func(ctx context.Context, rc ResourceContext, f importFile) (*importOutcome, error)

	importDoc    *contracts.ResourceImportDocument
	importFields []contracts.Field // the document's contextual fields, as checked
	partial      bool
}

// bindResource installs the type-erased operations of impl on b and returns
// the names of the operations impl sets, in the usual order.
func bindResource[T any](b *resourceBinding, impl Resource[T]) []string {
	var ops []string
	if f := impl.List; f != nil {
		ops = append(ops, opList)
		b.list = func(ctx context.Context, rc ResourceContext, q ListQuery) ([]map[string]any, error) {
			items, err := f(ctx, rc, q)
			if err != nil {
				return nil, err
			}
			if len(items) > q.Limit {
				items = items[:q.Limit]
			}
			return itemsToObjects(items)
		}
	}
	if f := impl.Get; f != nil {
		ops = append(ops, opGet)
		b.get = func(ctx context.Context, rc ResourceContext, id string) (map[string]any, error) {
			item, err := f(ctx, rc, id)
			if err != nil {
				return nil, err
			}
			return itemToObject(item)
		}
	}
	if f := impl.Create; f != nil {
		ops = append(ops, opCreate)
		b.create = func(ctx context.Context, rc ResourceContext, raw []byte) (map[string]any, error) {
			item, err := decodeItem[T](b, raw)
			if err != nil {
				return nil, err
			}
			out, err := f(ctx, rc, item)
			if err != nil {
				return nil, err
			}
			return itemToObject(out)
		}
	}
	if f := impl.Update; f != nil {
		ops = append(ops, opUpdate)
		b.update = func(ctx context.Context, rc ResourceContext, id string, raw []byte) (map[string]any, error) {
			item, err := decodeItem[T](b, raw)
			if err != nil {
				return nil, err
			}
			out, err := f(ctx, rc, id, item)
			if err != nil {
				return nil, err
			}
			return itemToObject(out)
		}
	}
	if f := impl.Delete; f != nil {
		ops = append(ops, opDelete)
		b.delete = f
	}
	if impl.Import != nil {
		ops = append(ops, opImport)
		b.imp = importFunc(b, impl.Import)
	}
	return ops
}

// serves reports whether the resource implements op.
func (b *resourceBinding) serves(op string) bool {
	switch op {
	case opList:
		return b.list != nil
	case opGet:
		return b.get != nil
	case opCreate:
		return b.create != nil
	case opUpdate:
		return b.update != nil
	case opDelete:
		return b.delete != nil
	case opImport:
		return b.imp != nil
	}
	return false
}

// actionHandler returns the handler of resource.<id>.<op> on POST /a2a. Bad
// input is answered with -32602; missing context, refused items and the
// author's business refusals with a status "error" result; any other error
// with -32603 by the dispatcher.
func (b *resourceBinding) actionHandler(op string) ActionHandler {
	return func(ctx context.Context, req *ActionRequest) (*ActionResult, error) {
		rc, oe := resolveContext(b.def.ID, op, b.def.Scope, b.def.RequiresContext, callFromRequest(req))
		if oe != nil {
			return oe.Result(), nil
		}
		res, err := b.invoke(ctx, op, rc, req.Input)
		if err != nil {
			if oe, ok := asOpError(err); ok {
				return oe.Result(), nil
			}
			return nil, err
		}
		return res, nil
	}
}

// invoke runs op with the action input and builds the result.
func (b *resourceBinding) invoke(ctx context.Context, op string, rc ResourceContext, raw json.RawMessage) (*ActionResult, error) {
	in := readInput(raw)
	id := b.def.ID
	switch op {
	case opList:
		q := in.listQuery()
		if err := in.err(); err != nil {
			return nil, err
		}
		items, err := b.list(ctx, rc, q)
		if err != nil {
			return nil, err
		}
		return OK(resourceListed(id, items)), nil
	case opGet:
		itemID := in.str("id", true)
		if err := in.err(); err != nil {
			return nil, err
		}
		item, err := b.get(ctx, rc, itemID)
		if err != nil {
			return nil, err
		}
		return OK(Effect{Type: effectResourceFetched, Resource: id, Item: item}), nil
	case opCreate:
		item := in.object("item", true)
		if err := in.err(); err != nil {
			return nil, err
		}
		out, err := b.create(ctx, rc, item)
		if err != nil {
			return nil, err
		}
		return OK(Effect{Type: effectResourceCreated, Resource: id, Item: out}), nil
	case opUpdate:
		itemID, item := in.str("id", true), in.object("item", true)
		if err := in.err(); err != nil {
			return nil, err
		}
		out, err := b.update(ctx, rc, itemID, item)
		if err != nil {
			return nil, err
		}
		return OK(Effect{Type: effectResourceUpdated, Resource: id, Item: out}), nil
	case opDelete:
		itemID := in.str("id", true)
		if err := in.err(); err != nil {
			return nil, err
		}
		if err := b.delete(ctx, rc, itemID); err != nil {
			return nil, err
		}
		return OK(Effect{Type: effectResourceDeleted, Resource: id, Item: map[string]any{"id": itemID}}), nil
	case opImport:
		f := in.importInput()
		if err := in.err(); err != nil {
			return nil, err
		}
		out, err := b.imp(ctx, rc, f)
		if err != nil {
			return nil, err
		}
		res := OK(out.effect)
		res.JobState = out.jobState
		return res, nil
	}
	return nil, fmt.Errorf("supervaizer: resource %q: unknown operation %q", id, op)
}

// decodeItem checks a submitted item (a JSON object) against the declared
// fields and decodes it into T. A refused item is an *opError (422) listing
// every problem.
func decodeItem[T any](b *resourceBinding, raw []byte) (T, error) {
	var zero T
	values, err := decodeJSONObject(raw)
	if err != nil {
		return zero, &opError{Status: http.StatusBadRequest, Detail: "The item must be a JSON object",
			Errs: []contracts.ResultError{{Code: contracts.ErrorInvalidInput, Message: "the item must be a JSON object", Field: "item"}}}
	}
	var errs []contracts.ResultError
	for _, k := range slices.Sorted(maps.Keys(values)) {
		if exact, ok := b.names[fold.Key(k)]; ok && exact != k {
			errs = append(errs, contracts.ResultError{Code: codeAmbiguousKey, Field: k,
				Message: "differs from the key " + strconv.Quote(exact) + " only in letter case"})
		}
	}
	for _, fe := range a2ui.ValidateValues(b.fields, values) {
		errs = append(errs, contracts.ResultError{Code: fe.Code, Message: fe.Message, Field: fe.Field})
	}
	if len(errs) > 0 {
		return zero, &opError{Status: http.StatusUnprocessableEntity, Detail: "Invalid item", Errs: errs}
	}
	var item T
	if err := json.Unmarshal(raw, &item); err != nil {
		return zero, &opError{Status: http.StatusUnprocessableEntity, Detail: "Invalid item",
			Errs: []contracts.ResultError{{Code: a2ui.CodeType, Message: "cannot be decoded into the item type", Field: "item"}}}
	}
	return item, nil
}

// codeAmbiguousKey reports an item key that differs from a known key only in
// letter case, which encoding/json would silently read into that field.
const codeAmbiguousKey = "ambiguous_key"

// decodeJSONObject decodes raw as a JSON object, numbers kept as json.Number.
func decodeJSONObject(raw []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); m == nil || !errors.Is(err, io.EOF) {
		return nil, errors.New("not a single JSON object")
	}
	return m, nil
}

// itemsToObjects encodes items as JSON objects (numbers kept exact). An item
// that does not encode to a JSON object is an error of the handler.
func itemsToObjects[T any](items []T) ([]map[string]any, error) {
	if len(items) == 0 {
		return []map[string]any{}, nil
	}
	raw, err := json.Marshal(items)
	if err != nil {
		return nil, fmt.Errorf("supervaizer: encode items: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var out []map[string]any
	if err := dec.Decode(&out); err != nil {
		return nil, fmt.Errorf("supervaizer: an item does not encode to a JSON object: %w", err)
	}
	for i, m := range out {
		if m == nil {
			return nil, fmt.Errorf("supervaizer: item %d encodes to null, not a JSON object", i)
		}
	}
	return out, nil
}

// itemToObject encodes one item as a JSON object.
func itemToObject[T any](item T) (map[string]any, error) {
	raw, err := json.Marshal(item)
	if err != nil {
		return nil, fmt.Errorf("supervaizer: encode the item: %w", err)
	}
	m, err := decodeJSONObject(raw)
	if err != nil {
		return nil, errors.New("supervaizer: the item does not encode to a JSON object")
	}
	return m, nil
}

// validationFields returns the declared fields as the value checker reads
// them: a read-only field is filled by the agent, so it is never required
// from the caller.
func validationFields(fields []contracts.ResourceField) []contracts.Field {
	out := make([]contracts.Field, len(fields))
	for i, f := range fields {
		out[i] = contracts.Field(f)
		if f.ReadOnly {
			out[i].Required = false
		}
	}
	return out
}

// itemJSONNames checks that t encodes to a JSON object (a struct, a pointer
// to a struct, or a map with string keys) and returns the JSON names of a
// struct's fields by folded form.
func itemJSONNames(t reflect.Type) (map[string]string, error) {
	names := map[string]string{}
	st := t
	if st.Kind() == reflect.Pointer {
		st = st.Elem()
	}
	switch {
	case st.Kind() == reflect.Struct:
		collectJSONNames(st, names, 0)
	case t.Kind() == reflect.Map && t.Key().Kind() == reflect.String:
	default:
		return nil, fmt.Errorf("the item type %s must be a struct, a pointer to a struct or a map with string keys (an item is a JSON object)", t)
	}
	return names, nil
}

func collectJSONNames(t reflect.Type, names map[string]string, depth int) {
	if depth > 8 { // embedded structs deeper than this are not worth chasing
		return
	}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if f.Anonymous && name == "" && ft.Kind() == reflect.Struct {
			collectJSONNames(ft, names, depth+1)
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if _, dup := names[fold.Key(name)]; !dup {
			names[fold.Key(name)] = name
		}
	}
}

// resourceCall is the request context of one resource or dataset call,
// whatever the transport.
type resourceCall struct {
	ws                               *contracts.VerifiedWorkspaceContext
	agentSlug, requestID             string
	missionID, jobID, caseID, stepID string
	mission                          *contracts.MissionContext
}

// callFromRequest reads the context of an action request. Its
// WorkspaceAuthorization is the verified context the dispatcher injected.
func callFromRequest(req *ActionRequest) resourceCall {
	return resourceCall{
		ws: req.WorkspaceAuthorization, agentSlug: req.AgentSlug, requestID: req.RequestID,
		missionID: req.MissionID, jobID: req.JobID, caseID: req.CaseID, stepID: req.StepID,
		mission: req.Mission,
	}
}

// contextKeys are the requires_context keys the SDK can check, with the test
// of their presence. Keys name context Studio sends; dotted and snake forms
// are synonyms.
var contextKeys = map[string]func(rc *ResourceContext) bool{
	"workspace.id":        func(rc *ResourceContext) bool { return rc.Workspace.WorkspaceID != "" },
	"workspace_id":        func(rc *ResourceContext) bool { return rc.Workspace.WorkspaceID != "" },
	"workspace.slug":      func(rc *ResourceContext) bool { return nonEmpty(rc.Workspace.WorkspaceSlug) },
	"workspace_slug":      func(rc *ResourceContext) bool { return nonEmpty(rc.Workspace.WorkspaceSlug) },
	"agent_workspace_ref": func(rc *ResourceContext) bool { return nonEmpty(rc.Workspace.AgentWorkspaceRef) },
	"mission.id":          func(rc *ResourceContext) bool { return rc.MissionID != "" },
	"mission_id":          func(rc *ResourceContext) bool { return rc.MissionID != "" },
	"mission.metadata":    func(rc *ResourceContext) bool { return rc.Mission != nil },
	"job.id":              func(rc *ResourceContext) bool { return rc.JobID != "" },
	"job_id":              func(rc *ResourceContext) bool { return rc.JobID != "" },
	"case.id":             func(rc *ResourceContext) bool { return rc.CaseID != "" },
	"case_id":             func(rc *ResourceContext) bool { return rc.CaseID != "" },
	"step.id":             func(rc *ResourceContext) bool { return rc.StepID != "" },
	"step_id":             func(rc *ResourceContext) bool { return rc.StepID != "" },
}

func nonEmpty(s *string) bool { return s != nil && *s != "" }

// checkRequiredContext refuses requires_context keys the SDK cannot check:
// a key it cannot see would either never or always be "present".
func checkRequiredContext(keys []string) error {
	for _, k := range keys {
		if _, ok := contextKeys[k]; !ok {
			known := slices.Sorted(maps.Keys(contextKeys))
			return fmt.Errorf("requires_context key %q is not one the SDK can check (known keys: %s)", k, strings.Join(known, ", "))
		}
	}
	return nil
}

// resolveContext builds the ResourceContext of a call: the scope key from
// the verified workspace context and the declared scope, then the checks of
// the scope and of requires_context. A missing piece is an *opError naming it.
func resolveContext(id, op, level string, requires []string, c resourceCall) (ResourceContext, *opError) {
	rc := ResourceContext{
		Resource: id, Operation: op, Workspace: c.ws, AgentSlug: c.agentSlug, RequestID: c.requestID,
		MissionID: c.missionID, JobID: c.jobID, CaseID: c.caseID, StepID: c.stepID, Mission: c.mission,
	}
	if c.ws == nil {
		return rc, missingContext("workspace_authorization", "no verified workspace context")
	}
	if c.ws.WorkspaceID == "" {
		return rc, missingContext("workspace.id", "the verified workspace context has no workspace id")
	}
	if level == "" {
		level = contracts.ScopeWorkspace
	}
	rc.Scope = ScopeKey{Level: level, Workspace: c.ws.WorkspaceID}
	if nonEmpty(c.ws.AgentWorkspaceRef) {
		rc.Scope.Workspace, rc.Scope.ByRef = *c.ws.AgentWorkspaceRef, true
	}
	switch level {
	case contracts.ScopeMission:
		if c.missionID == "" {
			return rc, missingContext("mission_id", fmt.Sprintf("%q is mission-scoped", id))
		}
		rc.Scope.Mission = c.missionID
	case contracts.ScopeJob:
		if c.jobID == "" {
			return rc, missingContext("job_id", fmt.Sprintf("%q is job-scoped", id))
		}
		rc.Scope.Job = c.jobID
	}
	for _, k := range requires {
		if present, ok := contextKeys[k]; !ok || !present(&rc) {
			return rc, missingContext(k, fmt.Sprintf("%q requires it (requires_context)", id))
		}
	}
	return rc, nil
}

// Imports (resource.<id>.import and POST …/data/<name>/import/): the types an
// author meets; the checks of the file are described at [ImportBatch].
type (
	// ImportLimits bounds an uploaded import file; a zero field takes its
	// default (5 MiB, 10,000 rows).
	ImportLimits = resource.ImportLimits
	// ImportRowError is one problem of an imported file: Row is the 1-based
	// data row (0 for the file), Column the column id when one is concerned.
	// Code is one of "required" (an empty cell in a required column), "type"
	// (a cell not of the column type), "field_count" (more or fewer cells
	// than the header), "malformed_csv" (unparsable from this row on), and
	// for row 0 "missing_column", "duplicate_column", "encoding" (not UTF-8),
	// "empty_file" and "too_many_errors" (more errors than are listed).
	ImportRowError = resource.ImportRowError
)

// ImportBatch is the checked content of an import, handed to Resource.Import:
// a UTF-8 CSV file with a header row, checked against the columns of the
// resource's ResourceImport document before any author code sees a row (see
// the resource guide for the cell types and row numbering). By default an
// import is all or nothing; with Resource.PartialImport, Items holds the rows
// that passed and Errors the others.
type ImportBatch[T any] = resource.ImportBatch[T]

// ImportReport is what Resource.Import returns; it becomes the
// resource.imported effect.
type ImportReport[T any] = resource.ImportReport[T]

// opError is a refusal of a resource or dataset call (see resource.OpError).
type opError = resource.OpError

func missingContext(key, why string) *opError {
	msg := "missing context: " + key + " (" + why + ")"
	return &opError{Status: http.StatusBadRequest, Detail: msg,
		Errs: []contracts.ResultError{{Code: contracts.ErrorMissingContext, Message: msg, Field: key}}}
}

// asOpError maps a handler error to a refusal: an *opError as is,
// [ErrNotFound] to not_found, a *[ResourceError] to its code. Any other error
// is a failure (false).
func asOpError(err error) (*opError, bool) {
	var oe *opError
	if errors.As(err, &oe) {
		return oe, true
	}
	if errors.Is(err, ErrNotFound) {
		return &opError{Status: http.StatusNotFound, Detail: "Item not found",
			Errs: []contracts.ResultError{{Code: contracts.ErrorNotFound, Message: "item not found"}}}, true
	}
	var re *ResourceError
	if errors.As(err, &re) {
		status := re.Status
		if status < 400 || status > 599 {
			status = http.StatusUnprocessableEntity
		}
		code := re.Code
		if strings.TrimSpace(code) == "" {
			code = contracts.ErrorInvalidInput
		}
		return &opError{Status: status, Detail: re.Message,
			Errs: []contracts.ResultError{{Code: code, Message: re.Message, Field: re.Field}}}, true
	}
	return nil, false
}

// inputReader reads the keys of an SDK-defined action input. Keys are
// matched exactly (never case-insensitively); unknown keys are ignored.
// Problems are collected and answered together with -32602.
type inputReader struct {
	m     map[string]json.RawMessage
	probs []contracts.Problem
}

func readInput(raw json.RawMessage) *inputReader {
	in := &inputReader{}
	if len(bytes.TrimSpace(raw)) == 0 {
		in.m = map[string]json.RawMessage{}
		return in
	}
	if err := json.Unmarshal(raw, &in.m); err != nil || in.m == nil {
		in.m = map[string]json.RawMessage{}
		in.fail("", "object", "must be a JSON object")
	}
	return in
}

func (in *inputReader) fail(key, rule, msg string) {
	loc, path := []any{"input"}, "/input"
	if key != "" {
		loc, path = append(loc, key), path+"/"+wire.PointerToken(key)
	}
	in.probs = append(in.probs, contracts.Problem{Loc: loc, Msg: msg, Type: rule, Path: path})
}

// err returns the -32602 error of the problems found, or nil.
func (in *inputReader) err() error {
	if len(in.probs) == 0 {
		return nil
	}
	return invalidInput(in.probs)
}

// present returns the raw value of key, absent for a missing key or null.
func (in *inputReader) present(key string) (json.RawMessage, bool) {
	raw, ok := in.m[key]
	if !ok || string(bytes.TrimSpace(raw)) == "null" {
		return nil, false
	}
	return raw, true
}

func (in *inputReader) str(key string, required bool) string {
	raw, ok := in.present(key)
	if !ok {
		if required {
			in.fail(key, "required", "missing property")
		}
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		in.fail(key, "type", "must be a string")
		return ""
	}
	if required && strings.TrimSpace(s) == "" {
		in.fail(key, "nonblank", "must not be blank")
	}
	return s
}

func (in *inputReader) object(key string, required bool) json.RawMessage {
	raw, ok := in.present(key)
	if !ok {
		if required {
			in.fail(key, "required", "missing property")
		}
		return nil
	}
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' {
		in.fail(key, "type", "must be an object")
		return nil
	}
	return raw
}

// objectValue decodes an optional object, numbers kept as json.Number.
func (in *inputReader) objectValue(key string) map[string]any {
	raw := in.object(key, false)
	if raw == nil {
		return nil
	}
	m, err := decodeJSONObject(raw)
	if err != nil {
		in.fail(key, "type", "must be an object")
		return nil
	}
	return m
}

// integer reads an optional integer in [min, max].
func (in *inputReader) integer(key string, def, minimum, maximum int) int {
	raw, ok := in.present(key)
	if !ok {
		return def
	}
	var n json.Number // encoding/json also reads a quoted number into it: refuse strings first
	if raw[0] == '"' || json.Unmarshal(raw, &n) != nil {
		in.fail(key, "type", "must be an integer")
		return def
	}
	v, err := strconv.ParseInt(n.String(), 10, 64)
	if err != nil {
		in.fail(key, "type", "must be an integer")
		return def
	}
	if v < int64(minimum) || v > int64(maximum) {
		in.fail(key, "range", fmt.Sprintf("must be between %d and %d", minimum, maximum))
		return def
	}
	return int(v)
}

// page reads limit and offset.
func (in *inputReader) page() (limit, offset int) {
	return in.integer("limit", resource.DefaultPageLimit, 1, resource.MaxPageLimit), in.integer("offset", 0, 0, resource.MaxOffset)
}

// listQuery reads the input of a list operation:
// {"limit"?: int, "offset"?: int, "search"?: string, "filters"?: object}.
func (in *inputReader) listQuery() ListQuery {
	limit, offset := in.page()
	return ListQuery{Limit: limit, Offset: offset, Search: in.str("search", false), Filters: in.objectValue("filters")}
}

// dataRegistry holds an agent's registered resources, for the REST routes.
type dataRegistry struct {
	mu        sync.RWMutex
	resources map[string]*resourceBinding
}

// dataRegistryOf returns the registry of a.
func dataRegistryOf(a *Agent) *dataRegistry {
	a.data.mu.Lock()
	defer a.data.mu.Unlock()
	if a.data.resources == nil {
		a.data.resources = map[string]*resourceBinding{}
	}
	return &a.data
}

// registeredResource returns the resource id registered on a, or nil.
func registeredResource(a *Agent, id string) *resourceBinding {
	if a == nil {
		return nil
	}
	reg := &a.data
	reg.mu.RLock()
	defer reg.mu.RUnlock()
	return reg.resources[id]
}

// recovered runs f, turning a panic into a *panicError.
func recovered(f func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &panicError{value: v, stack: debug.Stack()}
		}
	}()
	return f()
}

// importFile is an uploaded import, whatever the transport.
type importFile struct {
	format string         // "csv" or what the caller named
	data   []byte         // the file bytes
	fields map[string]any // contextual field values
}

// importOutcome is the effect and job state of an applied import.
type importOutcome struct {
	effect   Effect
	jobState *contracts.JobState
}

// importInput reads the input of an import action:
//
//	{"format"?: "csv", "content": string, "encoding"?: "text"|"base64", "fields"?: object}
//
// content is the file itself (encoding "text", the default) or its base64
// (standard alphabet, padding optional); fields holds the values of the
// ResourceImport document's contextual fields.
func (in *inputReader) importInput() importFile {
	f := importFile{format: in.str("format", false), fields: in.objectValue("fields")}
	content := in.str("content", false)
	if _, ok := in.present("content"); !ok {
		in.fail("content", "required", "missing property")
	}
	switch enc := in.str("encoding", false); enc {
	case "", "text":
		f.data = []byte(content)
	case a2ui.EncodingBase64:
		b, err := base64.StdEncoding.DecodeString(content)
		if err != nil {
			if b, err = base64.RawStdEncoding.DecodeString(content); err != nil {
				in.fail("content", "base64", "is not valid base64")
			}
		}
		f.data = b
	default:
		in.fail("encoding", "enum", `must be "text" or "base64"`)
	}
	return f
}

// checkImportDocument validates the ResourceImport document of resource id
// and returns a copy the SDK keeps.
func checkImportDocument(id string, doc *a2ui.ResourceImport) (*contracts.ResourceImportDocument, error) {
	if doc == nil {
		return nil, errors.New("Import is set without ImportDocument (the ResourceImport document whose columns rows are checked against)")
	}
	if err := doc.Validate(); err != nil {
		return nil, fmt.Errorf("ImportDocument: %w", err)
	}
	if doc.Resource != id {
		return nil, fmt.Errorf("ImportDocument is for resource %q, not %q", doc.Resource, id)
	}
	c := contracts.ResourceImportDocument(*doc)
	if !c.AcceptsCSV() {
		return nil, errors.New("ImportDocument must accept csv: the SDK reads CSV files only (no XLSX reader)")
	}
	c.Columns = slices.Clone(c.Columns)
	c.Fields = slices.Clone(c.Fields)
	c.AcceptedFormats = slices.Clone(c.AcceptedFormats)
	return &c, nil
}

// importFunc returns the type-erased import of resource b: format, size and
// contextual-field checks, the CSV checks, decoding into T, then f, all or
// nothing unless b.partial.
func importFunc[T any](b *resourceBinding, f func(context.Context, ResourceContext, ImportBatch[T]) (ImportReport[T], error)) func(context.Context, ResourceContext, importFile) (*importOutcome, error) {
	return func(ctx context.Context, rc ResourceContext, file importFile) (*importOutcome, error) {
		if oe := resource.CheckFormat(file.format); oe != nil {
			return nil, oe
		}
		if int64(len(file.data)) > b.limits.MaxBytes {
			return nil, resource.TooLarge(fmt.Sprintf("the file is larger than %d bytes", b.limits.MaxBytes))
		}
		if fes := a2ui.ValidateValues(b.importFields, file.fields); len(fes) > 0 {
			errs := make([]contracts.ResultError, len(fes))
			for i, fe := range fes {
				errs[i] = contracts.ResultError{Code: fe.Code, Message: fe.Message, Field: "fields." + fe.Field}
			}
			return nil, &opError{Status: http.StatusUnprocessableEntity, Detail: "Invalid import fields", Errs: errs}
		}
		parsed, oe := resource.ParseCSV(b.importDoc.Columns, file.data, b.limits.MaxRows)
		if oe != nil {
			return nil, oe
		}
		batch := ImportBatch[T]{Fields: file.fields, Items: make([]T, 0, len(parsed.Rows)), Rows: make([]int, 0, len(parsed.Rows))}
		rowErrs := parsed.Errs
		for i, row := range parsed.Rows {
			// A row passes the resource's declared field rules exactly as a
			// created item does: an import is no way around them.
			if fes := a2ui.ValidateValues(b.fields, row); len(fes) > 0 {
				for _, fe := range fes {
					rowErrs = append(rowErrs, ImportRowError{Row: parsed.Nums[i], Column: fe.Field, Code: fe.Code, Message: fe.Message})
				}
				continue
			}
			item, err := decodeRow[T](row)
			if err != nil {
				rowErrs = append(rowErrs, ImportRowError{Row: parsed.Nums[i], Code: resource.ImportCodeType, Message: "cannot be decoded into the item type"})
				continue
			}
			batch.Items = append(batch.Items, item)
			batch.Rows = append(batch.Rows, parsed.Nums[i])
		}
		slices.SortStableFunc(rowErrs, func(x, y ImportRowError) int { return x.Row - y.Row })
		if len(rowErrs) > 0 && !b.partial {
			return nil, resource.Rejected(rowErrs, parsed.More)
		}
		if len(rowErrs) > 0 {
			batch.Errors = rowErrs
		}
		rep, err := f(ctx, rc, batch)
		if err != nil {
			return nil, err
		}
		items, err := itemsToObjects(rep.Items)
		if err != nil {
			return nil, err
		}
		count := rep.Count
		if count == 0 {
			count = len(rep.Items)
		}
		all := append(slices.Clip(batch.Errors), rep.Errors...)
		return &importOutcome{jobState: rep.JobState, effect: Effect{
			Type: effectResourceImported, Resource: b.def.ID, JobID: rep.JobID, Count: &count,
			Items: items, Errors: resource.RowErrorObjects(all, parsed.More), Gaps: rep.Gaps, Summary: rep.Summary, Case: rep.Case,
		}}, nil
	}
}

// decodeRow decodes a checked row into T through its JSON form.
func decodeRow[T any](row map[string]any) (T, error) {
	var item T
	raw, err := json.Marshal(row)
	if err != nil {
		return item, err
	}
	err = json.Unmarshal(raw, &item)
	return item, err
}

// mountDataResources mounts the DataResource REST routes (internal/resource)
// on r, with the read and write API-key scopes.
func (s *Server) mountDataResources(r chi.Router) {
	resource.Mount(r, restServer{s}, s.requireKey(ScopeRead), s.requireKey(ScopeWrite))
}

// restServer is the server side of the DataResource REST routes: admission,
// the workspace token, the registered resources and their handlers.
type restServer struct{ s *Server }

func (rs restServer) Begin() (func(), *resource.Refusal) {
	s := rs.s
	s.inflight.Add(1)
	switch {
	case s.closing.Load():
		s.inflight.Done()
		return nil, &resource.Refusal{Status: http.StatusServiceUnavailable, Detail: "server is shutting down"}
	case s.studio != nil && !s.started.Load(): // as on /a2a: no token could verify yet
		s.inflight.Done()
		return nil, &resource.Refusal{Status: http.StatusServiceUnavailable,
			Detail: "controller not started: Server.Start has not registered it with Studio"}
	}
	return s.inflight.Done, nil
}

// Verify verifies the workspace token of a REST call with the single scope of
// the operation. It never applies the local-mode bypass.
func (rs restServer) Verify(ctx context.Context, r *http.Request, agentSlug, scope string) (*contracts.VerifiedWorkspaceContext, string, bool) {
	vc, ae := rs.s.verifyWorkspace(ctx, WorkspaceCheck{
		Header:      r.Header.Get(HeaderWorkspaceAuthorization),
		WorkspaceID: r.Header.Get(resource.HeaderWorkspaceID), WorkspaceSlug: r.Header.Get(resource.HeaderWorkspaceSlug),
		AgentSlug: agentSlug, Scopes: []string{scope},
	})
	if ae != nil {
		return nil, ae.Message, false
	}
	return vc, "", true
}

func (rs restServer) Open(ctx context.Context, c resource.Call) (context.Context, resource.Target, error) {
	a := rs.s.bySlug[c.AgentSlug]
	b := registeredResource(a, c.Resource)
	if b == nil {
		return ctx, nil, &resource.Refusal{Status: http.StatusNotFound, Detail: "Resource not found"}
	}
	if !b.serves(c.Op) {
		return ctx, nil, &resource.Refusal{Status: http.StatusMethodNotAllowed, Detail: "Operation not supported: " + resource.Action(c.Resource, c.Op)}
	}
	rc, oe := resolveContext(b.def.ID, c.Op, b.def.Scope, b.def.RequiresContext, resourceCall{
		ws: c.Workspace, agentSlug: c.AgentSlug, requestID: c.Context.RequestID, missionID: c.Context.MissionID, mission: c.Context.Mission,
	})
	if oe != nil {
		return ctx, nil, oe
	}
	return withAgent(withWorkspace(ctx, c.Workspace), a), restTarget{b: b, rc: rc}, nil
}

func (rs restServer) ReadJSON(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	if ct := r.Header.Get("Content-Type"); ct != "" && !isJSONContentType(ct) {
		oe := &opError{Status: http.StatusUnsupportedMediaType, Detail: "Content-Type must be application/json"}
		writeJSON(w, oe.Status, oe.Body())
		return nil, false
	}
	return rs.s.readBody(w, r)
}

func (restServer) Refusal(err error) (*opError, bool) { return asOpError(err) }

func (rs restServer) Failed(ctx context.Context, c resource.Call, err error) {
	rs.s.handlerFailed(ctx, "resource", c.AgentSlug, resource.Action(c.Resource, c.Op), c.Context.RequestID, err)
}

func (restServer) WriteJSON(w http.ResponseWriter, status int, v any) { writeJSON(w, status, v) }

// restTarget is a registered resource bound to the verified scope of a REST
// call.
type restTarget struct {
	b  *resourceBinding
	rc ResourceContext
}

func (t restTarget) List(ctx context.Context, p resource.Page) ([]map[string]any, error) {
	return t.b.list(ctx, t.rc, ListQuery{Limit: p.Limit, Offset: p.Offset, Search: p.Search})
}

func (t restTarget) Get(ctx context.Context, id string) (map[string]any, error) {
	return t.b.get(ctx, t.rc, id)
}

func (t restTarget) Create(ctx context.Context, item []byte) (map[string]any, error) {
	return t.b.create(ctx, t.rc, item)
}

func (t restTarget) Update(ctx context.Context, id string, item []byte) (map[string]any, error) {
	return t.b.update(ctx, t.rc, id, item)
}

func (t restTarget) Delete(ctx context.Context, id string) error { return t.b.delete(ctx, t.rc, id) }

func (t restTarget) Import(ctx context.Context, data []byte, fields map[string]any) (map[string]any, error) {
	out, err := t.b.imp(ctx, t.rc, importFile{format: contracts.ImportFormatCSV, data: data, fields: fields})
	if err != nil {
		return nil, err
	}
	return resource.ImportBody(out.effect, out.jobState), nil
}

func (t restTarget) ImportMaxBytes() int64 { return t.b.limits.MaxBytes }

func (t restTarget) ImportFields() []contracts.ResourceField {
	if t.b.importDoc == nil {
		return nil
	}
	return t.b.importDoc.Fields
}
