package resource

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/supervaize/supervaizer-go/a2ui"
	"github.com/supervaize/supervaizer-go/contracts"
)

// Binding is a resource bound to its [Handlers]: the declared definition, the
// checks of its items and imports, and its operations with the item type
// erased (items travel as JSON objects between the transports and the typed
// handlers). The server builds one per registered resource ([Bind]); it
// serves the resource.<id>.<op> actions ([Binding.Invoke]) and the
// DataResource REST routes ([Routes]).
type Binding struct {
	def    contracts.ResourceDefinition
	fields []contracts.Field // the declared fields, read-only ones not required
	names  map[string]string // folded key -> exact key: the field ids and the item type's JSON names
	limits ImportLimits      // resolved
	ops    []string          // the operations the handlers set, in the usual order
	list   func(ctx context.Context, rc Context, q ListQuery) ([]map[string]any, error)
	get    func(ctx context.Context, rc Context, id string) (map[string]any, error)
	create func(ctx context.Context, rc Context, item []byte) (map[string]any, error)
	update func(ctx context.Context, rc Context, id string, item []byte) (map[string]any, error)
	delete func(ctx context.Context, rc Context, id string) error
	imp    func(ctx context.Context, rc Context, f importFile) (*importOutcome, error)

	importDoc    *contracts.ResourceImportDocument
	importFields []contracts.Field // the document's contextual fields, as checked
	partial      bool
}

// Bind checks impl against the declared resource def and returns its
// binding. The error is a setup error: T does not encode to a JSON object,
// requires_context names a key the SDK cannot check, the import limits are
// negative, impl sets an operation def does not declare, or Import is set
// without a valid CSV ImportDocument for def.
func Bind[T any](def contracts.ResourceDefinition, impl Handlers[T]) (*Binding, error) {
	names, err := itemJSONNames(reflect.TypeFor[T]())
	if err != nil {
		return nil, err
	}
	for _, f := range def.Fields {
		if k := contracts.FoldKey(f.ID); names[k] == "" {
			names[k] = f.ID
		}
	}
	if err := checkRequiredContext(def.RequiresContext); err != nil {
		return nil, err
	}
	limits, err := impl.ImportLimits.resolved()
	if err != nil {
		return nil, err
	}
	b := &Binding{def: def, fields: validationFields(def.Fields), names: names, limits: limits}
	bindHandlers(b, impl)
	for _, op := range b.ops {
		if !slices.Contains(def.Operations, op) {
			return nil, fmt.Errorf("operation %q is set but not declared in the resource operations %v", op, def.Operations)
		}
	}
	if impl.Import != nil {
		doc, err := checkImportDocument(def.ID, impl.ImportDocument)
		if err != nil {
			return nil, err
		}
		b.importDoc, b.importFields, b.partial = doc, validationFields(doc.Fields), impl.PartialImport
	}
	return b, nil
}

// ID returns the id of the resource.
func (b *Binding) ID() string { return b.def.ID }

// Operations returns the operations the handlers implement, in the order
// list, get, create, update, delete, import.
func (b *Binding) Operations() []string { return slices.Clone(b.ops) }

// bindHandlers installs the type-erased operations of impl on b.
func bindHandlers[T any](b *Binding, impl Handlers[T]) {
	if f := impl.List; f != nil {
		b.ops = append(b.ops, OpList)
		b.list = func(ctx context.Context, rc Context, q ListQuery) ([]map[string]any, error) {
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
		b.ops = append(b.ops, OpGet)
		b.get = func(ctx context.Context, rc Context, id string) (map[string]any, error) {
			item, err := f(ctx, rc, id)
			if err != nil {
				return nil, err
			}
			return itemToObject(item)
		}
	}
	if f := impl.Create; f != nil {
		b.ops = append(b.ops, OpCreate)
		b.create = func(ctx context.Context, rc Context, raw []byte) (map[string]any, error) {
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
		b.ops = append(b.ops, OpUpdate)
		b.update = func(ctx context.Context, rc Context, id string, raw []byte) (map[string]any, error) {
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
		b.ops = append(b.ops, OpDelete)
		b.delete = f
	}
	if impl.Import != nil {
		b.ops = append(b.ops, OpImport)
		b.imp = importFunc(b, impl.Import)
	}
}

// serves reports whether the resource implements op.
func (b *Binding) serves(op string) bool {
	switch op {
	case OpList:
		return b.list != nil
	case OpGet:
		return b.get != nil
	case OpCreate:
		return b.create != nil
	case OpUpdate:
		return b.update != nil
	case OpDelete:
		return b.delete != nil
	case OpImport:
		return b.imp != nil
	}
	return false
}

// Invoke serves operation op as the action resource.<id>.<op> of POST /a2a,
// req being the request the server verified (its WorkspaceAuthorization is
// the verified workspace context). The action inputs and the effect of a
// successful call:
//
//	list    {"limit"?, "offset"?, "search"?, "filters"?}  resource.listed   {resource, items}
//	get     {"id"}                                        resource.fetched  {resource, item}
//	create  {"item"}                                      resource.created  {resource, item}
//	update  {"id", "item"}                                resource.updated  {resource, item}
//	delete  {"id"}                                        resource.deleted  {resource, item: {id}}
//	import  {"format"?, "content", "encoding"?, "fields"?} resource.imported {resource, count, items, errors, gaps, summary, job_id, case}
//
// Missing context, a refused item or import and the handler's [ErrNotFound]
// and [RefusalError] are a status "error" result. Malformed input returns the
// problems found (answered with JSON-RPC -32602) and runs no handler. Any
// other error is the handler's failure.
func (b *Binding) Invoke(ctx context.Context, op string, req *contracts.ActionRequest) (res *contracts.ActionResult, problems []contracts.Problem, err error) {
	rc, oe := resolveContext(b.def.ID, op, b.def.Scope, b.def.RequiresContext, callFromRequest(req))
	if oe != nil {
		return oe.result(), nil, nil
	}
	in := readInput(req.Input)
	res, err = b.invoke(ctx, op, rc, in)
	if len(in.probs) > 0 {
		return nil, in.probs, nil
	}
	if err != nil {
		if oe, ok := asOpError(err); ok {
			return oe.result(), nil, nil
		}
		return nil, nil, err
	}
	return res, nil, nil
}

// invoke runs op with the action input and builds the result. It returns
// without running the handler when the input has problems (in.probs).
func (b *Binding) invoke(ctx context.Context, op string, rc Context, in *inputReader) (*contracts.ActionResult, error) {
	id := b.def.ID
	switch op {
	case OpList:
		q := in.listQuery()
		if in.failed() {
			return nil, nil
		}
		items, err := b.list(ctx, rc, q)
		if err != nil {
			return nil, err
		}
		return ok(resourceListed(id, items)), nil
	case OpGet:
		itemID := in.str("id", true)
		if in.failed() {
			return nil, nil
		}
		item, err := b.get(ctx, rc, itemID)
		if err != nil {
			return nil, err
		}
		return ok(contracts.Effect{Type: effectResourceFetched, Resource: id, Item: item}), nil
	case OpCreate:
		item := in.object("item", true)
		if in.failed() {
			return nil, nil
		}
		out, err := b.create(ctx, rc, item)
		if err != nil {
			return nil, err
		}
		return ok(contracts.Effect{Type: effectResourceCreated, Resource: id, Item: out}), nil
	case OpUpdate:
		itemID, item := in.str("id", true), in.object("item", true)
		if in.failed() {
			return nil, nil
		}
		out, err := b.update(ctx, rc, itemID, item)
		if err != nil {
			return nil, err
		}
		return ok(contracts.Effect{Type: effectResourceUpdated, Resource: id, Item: out}), nil
	case OpDelete:
		itemID := in.str("id", true)
		if in.failed() {
			return nil, nil
		}
		if err := b.delete(ctx, rc, itemID); err != nil {
			return nil, err
		}
		return ok(contracts.Effect{Type: effectResourceDeleted, Resource: id, Item: map[string]any{"id": itemID}}), nil
	case OpImport:
		f := in.importInput()
		if in.failed() {
			return nil, nil
		}
		out, err := b.imp(ctx, rc, f)
		if err != nil {
			return nil, err
		}
		res := ok(out.effect)
		res.JobState = out.jobState
		return res, nil
	}
	return nil, fmt.Errorf("supervaizer: resource %q: unknown operation %q", id, op)
}

// decodeItem checks a submitted item (a JSON object) against the declared
// fields and decodes it into T. A refused item is an *opError (422) listing
// every problem.
func decodeItem[T any](b *Binding, raw []byte) (T, error) {
	var zero T
	values, err := decodeJSONObject(raw)
	if err != nil {
		return zero, &opError{Status: http.StatusBadRequest, Detail: "The item must be a JSON object",
			Errs: []contracts.ResultError{{Code: contracts.ErrorInvalidInput, Message: "the item must be a JSON object", Field: "item"}}}
	}
	var errs []contracts.ResultError
	for _, k := range slices.Sorted(maps.Keys(values)) {
		if exact, ok := b.names[contracts.FoldKey(k)]; ok && exact != k {
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
	raw, err := contracts.Marshal(items)
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
	raw, err := contracts.Marshal(item)
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
		if _, dup := names[contracts.FoldKey(name)]; !dup {
			names[contracts.FoldKey(name)] = name
		}
	}
}
