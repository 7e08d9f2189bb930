// Package encode is the append-style encoder of the contracts models: it
// writes exactly the bytes json.Marshal writes for them (their MarshalJSON
// methods, then encoding/json's compaction and HTML escaping), without calling
// json.Marshal and without re-scanning what it wrote, and can build the tape
// (package internal/wire) of what it writes, so that the compiled validator
// (package internal/validate) checks the result without parsing it. It is the
// SDK's hot-path serializer; package contracts stays the wire truth.
//
// Each Go type gets an encoding plan once (a function built from reflection);
// encoding a value runs the plan. The models whose MarshalJSON is "the
// declared fields, nil always-written slices as [], defaults for some empty
// fields, then the undeclared keys" are described by a [modelSpec] in
// [modelSpecs] and encoded from their fields; the specs are derived from
// contracts (its registry of documents and what Marshal writes), not
// stated here. Plain structs of package
// contracts (no MarshalJSON) are encoded as encoding/json encodes structs. A
// type with a MarshalJSON of another shape (and any type of another package
// that has one) is encoded by calling it, as encoding/json does. A free-form
// value of a type the plans do not cover (a struct of another package, an
// array, a map with non-string keys) is handed to json.Marshal, which writes
// the same bytes it would have in place; a value json.Marshal refuses (a
// channel, NaN, invalid raw JSON, a cycle) makes the encoder give up, and the
// caller then reports json.Marshal's error. The tests compare this encoder
// with json.Marshal over the contracts corpus, targeted cases and fuzzing.
package encode

import (
	"bytes"
	"encoding"
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/internal/wire"
)

// maxEncodeDepth bounds the nesting of values encoded here; deeper values (or
// cycles) are left to json.Marshal, which reports cycles.
const maxEncodeDepth = 256

// encoder appends JSON to b; ok turns false at the first value it cannot
// encode exactly.
type encoder struct {
	b     []byte
	ok    bool
	depth int
	// t, when set, receives the tape of what is written (see
	// wire.Tape.Begin): the document starts at b[base:]. A value whose
	// plan does not build the tape (an "opaque" one: numbers, booleans,
	// raw JSON, free-form values, custom MarshalJSON) is parsed in place once
	// written. t is set to nil when that parse fails (invalid UTF-8 in raw
	// JSON): the bytes stay right, the caller parses them instead.
	t    *wire.Tape
	base int
}

// null appends null.
func (e *encoder) null() {
	if e.t != nil {
		at := len(e.b) - e.base
		e.t.Leaf(wire.Null, at, at+4, false)
	}
	e.b = append(e.b, "null"...)
}

// fail records that a value cannot be encoded exactly: the caller falls back
// to json.Marshal, and the tape, which may now hold a key without its value,
// is dropped.
func (e *encoder) fail() {
	e.ok = false
	e.t = nil
}

// parsed adds the value written since b[start] to the tape.
func (e *encoder) parsed(start int) {
	if e.t != nil && !e.t.ParseValue(e.b[e.base:], start-e.base) {
		e.t = nil
	}
}

// opaque wraps the plan of a value that does not build the tape itself: the
// tape is set aside while f writes and the bytes f wrote are parsed onto it.
func opaque(f encFunc) encFunc {
	return func(e *encoder, v reflect.Value) {
		t := e.t
		if t == nil {
			f(e, v)
			return
		}
		start := len(e.b)
		e.t = nil
		f(e, v)
		if e.ok {
			e.t = t
			e.parsed(start)
		}
	}
}

// Append appends v as json.Marshal(v) writes it; ok is false when the
// caller must use json.Marshal instead (which then reports an error or, for
// a value outside the plans, writes it).
func Append(dst []byte, v any) (out []byte, ok bool) {
	out, ok, _ = AppendTape(dst, v, nil)
	return out, ok
}

// AppendTape is [Append] building, when t is not nil, the tape of the
// appended document on t (Parse's tape of out[len(dst):]); tapeOK is false
// when it could not (the caller then parses the document).
func AppendTape(dst []byte, v any, t *wire.Tape) (out []byte, ok, tapeOK bool) {
	// The encoder goes through the plans' function values, so it would
	// escape: it is pooled (a value's own panic, recovered by the caller,
	// leaves it to the collector).
	e := encoders.Get().(*encoder)
	*e = encoder{b: dst, ok: true, t: t, base: len(dst)}
	if t != nil {
		t.Begin()
	}
	if v == nil {
		e.null()
	} else {
		rv := reflect.ValueOf(v)
		encoderOf(rv.Type())(e, rv)
	}
	if e.t != nil {
		e.t.Finish(e.b[e.base:])
	}
	out, ok, tapeOK = e.b, e.ok, e.ok && e.t != nil
	*e = encoder{} // holds nothing of the caller's while pooled
	encoders.Put(e)
	return out, ok, tapeOK
}

var encoders = sync.Pool{New: func() any { return new(encoder) }}

// modelSpec describes a model that contracts.Marshal writes as its fields
// after setting defaults (marshalOpen or marshalResult). Nothing in it is
// stated here: deriveSpec reads it from what contracts.Marshal writes, so
// the models' hooks (encodeDefaults, dropsNullExtras) stay the one statement
// of the defaults.
type modelSpec struct {
	// result: the model travels inside action results only, which drop every
	// null (marshalResult): extra keys holding null are not written.
	result bool
	// defaults maps a JSON key to the JSON written when its field is empty
	// (the empty string, a nil pointer, slice or map; see defaultApplies).
	defaults map[string]string
	// custom encodes the whole value instead of the fields.
	custom func(e *encoder, v reflect.Value)
}

var (
	modelSpecs     map[reflect.Type]*modelSpec
	modelSpecsOnce sync.Once
)

// specRoots are the models the SDK writes on its hot path besides the typed
// documents, which the contracts registry lists ([contracts.DocumentModel]):
// action results (with the job_state snapshot), setup plans and their
// fields, surface results. Every model they hold gets a spec too.
var specRoots = []reflect.Type{
	reflect.TypeFor[contracts.ActionResult](),
	reflect.TypeFor[contracts.JobState](),
	reflect.TypeFor[contracts.SetupPlan](),
	reflect.TypeFor[contracts.CostEstimate](),
	reflect.TypeFor[contracts.Field](),
	reflect.TypeFor[contracts.SurfaceResult](),
}

// notFieldLists are the models under the roots that the encoder leaves to
// contracts.Marshal: their encoding is not "the fields with constant
// defaults" (a wire shape of another type, a default that depends on the
// value, null values normalised away), or they are rare answers off the hot
// path (drafts and dry runs of preview actions). The models they hold are
// not walked.
var notFieldLists = []reflect.Type{
	reflect.TypeFor[contracts.FieldDraft](),
	reflect.TypeFor[contracts.DryRunOutcome](),
	reflect.TypeFor[contracts.Widget](),
	reflect.TypeFor[contracts.ResourceField](),
}

// specs returns the spec of every model under the roots and the typed
// documents of the contracts registry.
func specs() map[reflect.Type]*modelSpec {
	modelSpecsOnce.Do(func() {
		modelSpecs = map[reflect.Type]*modelSpec{
			reflect.TypeFor[contracts.PlanValue](): {custom: encodePlanValue},
		}
		skip := map[reflect.Type]bool{}
		for _, t := range notFieldLists {
			skip[t] = true
		}
		roots := slices.Clone(specRoots)
		for _, m := range contracts.Models() {
			if m.DocumentType() != "" {
				roots = append(roots, reflect.TypeOf(m.New()).Elem())
			}
		}
		var walk func(t reflect.Type)
		walk = func(t reflect.Type) {
			for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map || t.Kind() == reflect.Array {
				t = t.Elem()
			}
			if t.Kind() != reflect.Struct || t.PkgPath() != contractsPkg || skip[t] {
				return
			}
			skip[t] = true
			if _, open := t.FieldByName("Extra"); open && modelSpecs[t] == nil {
				if spec := deriveSpec(t); spec != nil {
					modelSpecs[t] = spec
				}
			}
			for i := range t.NumField() {
				walk(t.Field(i).Type)
			}
		}
		for _, t := range roots {
			walk(t)
		}
	})
	return modelSpecs
}

// probeKey is an undeclared key deriveSpec writes to see whether a model
// drops the extra keys holding null.
const probeKey = "~probe"

// deriveSpec reads the spec of the model t from contracts.Marshal: the keys
// of its zero value written with another value than the empty field's own
// (the defaults its encodeDefaults hook sets), and whether a null extra key
// is dropped. It returns nil when the zero value is not written as t's
// fields (a key added or left out): t is then written by contracts.Marshal.
func deriveSpec(t reflect.Type) *modelSpec {
	zero := reflect.New(t)
	written, err := contracts.Marshal(zero.Interface())
	if err != nil {
		return nil
	}
	var keys map[string]json.RawMessage
	if json.Unmarshal(written, &keys) != nil {
		return nil
	}
	spec := &modelSpec{defaults: map[string]string{}}
	ti := infoOf(t)
	n := 0
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "-" || name == "" {
			continue
		}
		got, ok := keys[name]
		own, omitted := emptyField(f.Type, slices.Contains(ti.nilSlice, i), slices.Contains(ti.nilMap, i), strings.Contains(opts, "omitempty"))
		switch {
		case ok:
			n++
			if f.Type.Kind() != reflect.Struct && (omitted || string(got) != own) {
				spec.defaults[name] = string(got)
			}
		case !omitted:
			return nil
		}
	}
	if n != len(keys) {
		return nil
	}
	probe := reflect.New(t)
	probe.Elem().FieldByName("Extra").Set(reflect.ValueOf(contracts.Extra{probeKey: json.RawMessage("null")}))
	withNull, err := contracts.Marshal(probe.Interface())
	if err != nil {
		return nil
	}
	spec.result = !bytes.Contains(withNull, []byte(strconv.Quote(probeKey)))
	return spec
}

// emptyField returns how the empty value of a field of type t is written
// without a default (own), or that it is left out (omitted, omitempty).
// nilSlice and nilMap say that a nil slice or map is written as [] or {}.
func emptyField(t reflect.Type, nilSlice, nilMap, omitEmpty bool) (own string, omitted bool) {
	switch t.Kind() {
	case reflect.String:
		own = `""`
	case reflect.Bool:
		own = "false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64:
		own = "0"
	case reflect.Slice:
		own = "null"
		if nilSlice {
			own = "[]"
		}
	case reflect.Map:
		own = "null"
		if nilMap {
			own = "{}"
		}
	case reflect.Pointer, reflect.Interface:
		own = "null"
	default: // a struct or an array is never empty
		return "", false
	}
	return own, omitEmpty
}

// encodePlanValue writes a PlanValue as its MarshalJSON does: the typed plan,
// else the raw plan, else {}.
func encodePlanValue(e *encoder, v reflect.Value) {
	p := v.Addr().Interface().(*contracts.PlanValue)
	switch {
	case p.Plan != nil:
		encoderOf(reflect.TypeFor[contracts.SetupPlan]())(e, reflect.ValueOf(p.Plan).Elem())
	case p.Raw != nil:
		e.raw(p.Raw)
	default:
		e.b = append(e.b, "{}"...)
	}
}

// encFunc appends the JSON of v.
type encFunc func(e *encoder, v reflect.Value)

var encFuncs sync.Map // reflect.Type -> encFunc

// encoderOf returns the plan of t, building it on first use. A recursive type
// gets an indirect function while its plan is being built.
func encoderOf(t reflect.Type) encFunc {
	if f, ok := encFuncs.Load(t); ok {
		return f.(encFunc)
	}
	var (
		wg sync.WaitGroup
		f  encFunc
	)
	wg.Add(1)
	fi, loaded := encFuncs.LoadOrStore(t, encFunc(func(e *encoder, v reflect.Value) {
		wg.Wait()
		f(e, v)
	}))
	if loaded {
		return fi.(encFunc)
	}
	f = newEncFunc(t)
	wg.Done()
	encFuncs.Store(t, f)
	return f
}

// lazyEnc is the plan of an element type, looked up in encFuncs once, on
// first use, rather than on every value.
type lazyEnc struct {
	t reflect.Type
	f atomic.Pointer[encFunc]
}

func (l *lazyEnc) get() encFunc {
	if f := l.f.Load(); f != nil {
		return *f
	}
	f := encoderOf(l.t) // the final plan, or one that waits for it: both stay right
	l.f.Store(&f)
	return f
}

var (
	marshalerType     = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
	numberType        = reflect.TypeFor[json.Number]()
	anyMapType        = reflect.TypeFor[map[string]any]()
	contractsPkg      = reflect.TypeFor[contracts.Extra]().PkgPath()
	// verifiedContextType is the one model without Extra whose encoding
	// differs from encoding/json's (nil scopes are written as []).
	verifiedContextType = reflect.TypeFor[contracts.VerifiedWorkspaceContext]()
)

func newEncFunc(t reflect.Type) encFunc {
	if spec, ok := specs()[t]; ok {
		if spec.custom != nil {
			return opaque(addressable(spec.custom))
		}
		if f := structEncFunc(t, spec); f != nil {
			return f
		}
		return opaque(marshalEnc)
	}
	if t.Kind() == reflect.Pointer {
		// encoding/json writes a nil pointer as null, even one whose type
		// has a MarshalJSON method, and otherwise what it points at.
		elem := &lazyEnc{t: t.Elem()}
		return func(e *encoder, v reflect.Value) {
			if !e.enterNonNil(v) {
				return
			}
			elem.get()(e, v.Elem())
			e.depth--
		}
	}
	switch {
	case t == rawMessageType:
		return func(e *encoder, v reflect.Value) { e.raw(v.Bytes()) }
	case t == numberType:
		return opaque(func(e *encoder, v reflect.Value) { e.number(v.String()) })
	case t == anyMapType:
		return func(e *encoder, v reflect.Value) { e.object(v.Interface().(map[string]any)) }
	case t.Implements(marshalerType), reflect.PointerTo(t).Implements(marshalerType),
		t.Implements(textMarshalerType), reflect.PointerTo(t).Implements(textMarshalerType):
		return opaque(marshalEnc)
	}
	if t.Kind() == reflect.String {
		return encodeString
	}
	if t.Kind() == reflect.Slice && t.Elem().Kind() != reflect.Uint8 {
		elem := &lazyEnc{t: t.Elem()}
		return func(e *encoder, v reflect.Value) {
			if !e.enterNonNil(v) {
				return
			}
			f := elem.get()
			a := e.open(wire.Array, '[')
			n := v.Len()
			for i := range n {
				if i > 0 {
					e.b = append(e.b, ',')
				}
				f(e, v.Index(i))
			}
			e.closeArray(a, int32(n))
		}
	}
	if t.Kind() == reflect.Struct && t.PkgPath() == contractsPkg {
		if _, open := t.FieldByName("Extra"); open || t == verifiedContextType {
			// A model without a spec (registration models and the
			// like, off the hot path): written by the reference codec.
			return opaque(marshalEnc)
		}
		if f := structEncFunc(t, nil); f != nil {
			return f
		}
	}
	return newLeafEncFunc(t)
}

// newLeafEncFunc returns the plan of a number, a boolean, a free-form value,
// a map, a byte slice or a struct of another package. Numbers, booleans,
// free-form values and maps with string keys build the tape as they write;
// the others are written by json.Marshal and parsed (opaque).
func newLeafEncFunc(t reflect.Type) encFunc {
	switch t.Kind() {
	case reflect.Bool:
		return func(e *encoder, v reflect.Value) { e.boolean(v.Bool()) }
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return func(e *encoder, v reflect.Value) { e.integer(v.Int()) }
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return func(e *encoder, v reflect.Value) {
			start := len(e.b)
			e.b = strconv.AppendUint(e.b, v.Uint(), 10)
			e.scalar(wire.Number, start, true)
		}
	case reflect.Float64:
		return func(e *encoder, v reflect.Value) { e.float(v.Float(), 64) }
	case reflect.Float32:
		return func(e *encoder, v reflect.Value) { e.float(v.Float(), 32) }
	case reflect.Interface:
		return func(e *encoder, v reflect.Value) {
			if v.IsNil() {
				e.null()
				return
			}
			e.value(v.Interface())
		}
	case reflect.Map:
		if t.Key().Kind() != reflect.String || t.Key().Implements(textMarshalerType) {
			return opaque(marshalEnc)
		}
		elem := t.Elem()
		return func(e *encoder, v reflect.Value) {
			if !e.enterNonNil(v) {
				return
			}
			keys := v.MapKeys()
			slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(a.String(), b.String()) })
			f := encoderOf(elem)
			obj := e.open(wire.Object, '{')
			for i, k := range keys {
				if i > 0 {
					e.b = append(e.b, ',')
				}
				obj.compare = e.key(k.String()) || obj.compare
				e.b = append(e.b, ':')
				f(e, v.MapIndex(k))
			}
			e.closeObject(obj, int32(len(keys)))
		}
	}
	return opaque(marshalEnc)
}

// container is an array or object being written: its node on the tape and
// whether its keys must be compared for repeats when it closes.
type container struct {
	idx     int32
	compare bool
}

// open writes the opening byte of an array or object and adds it to the tape.
func (e *encoder) open(kind wire.Kind, c byte) container {
	var idx int32
	if e.t != nil {
		idx = e.t.Open(kind, len(e.b)-e.base)
	}
	e.b = append(e.b, c)
	return container{idx: idx}
}

// closeArray writes the closing bracket of an array of n elements.
func (e *encoder) closeArray(a container, n int32) {
	e.b = append(e.b, ']')
	if e.t != nil {
		e.t.Close(a.idx, e.b[e.base:], n)
	}
	e.depth--
}

// closeObject writes the closing brace of an object of n members, and
// compares its keys for repeats when o says so. The keys of a map are
// distinct Go strings, distinct keys unless an escape sequence was written
// (invalid UTF-8 becomes \ufffd); those of a struct are distinct when its
// fields' names are.
func (e *encoder) closeObject(o container, n int32) {
	e.b = append(e.b, '}')
	if e.t != nil {
		if o.compare {
			e.t.Close(o.idx, e.b[e.base:], n)
		} else {
			e.t.CloseDistinct(o.idx, e.b[e.base:], n)
		}
	}
	e.depth--
}

// scalar adds the number, true or false written since b[start] to the tape.
func (e *encoder) scalar(kind wire.Kind, start int, plainInt bool) {
	if e.t != nil {
		e.t.Scalar(kind, start-e.base, len(e.b)-e.base, plainInt)
	}
}

// boolean appends v.
func (e *encoder) boolean(v bool) {
	start := len(e.b)
	kind := wire.False
	if v {
		kind = wire.True
	}
	e.b = strconv.AppendBool(e.b, v)
	e.scalar(kind, start, false)
}

// integer appends v.
func (e *encoder) integer(v int64) {
	start := len(e.b)
	e.b = strconv.AppendInt(e.b, v, 10)
	e.scalar(wire.Number, start, true)
}

// encodeString is the plan of a string type without a MarshalJSON or
// MarshalText method; structEncFunc reads such fields directly.
func encodeString(e *encoder, v reflect.Value) { e.str(v.String()) }

// addressable runs f on an addressable copy of v when v is not addressable.
func addressable(f encFunc) encFunc {
	return func(e *encoder, v reflect.Value) {
		if !v.CanAddr() {
			c := reflect.New(v.Type()).Elem()
			c.Set(v)
			v = c
		}
		f(e, v)
	}
}

// marshalEnc writes v with contracts.Marshal, as encoding/json writes a value
// in place (a MarshalJSON method's output compacted and HTML-escaped).
func marshalEnc(e *encoder, v reflect.Value) {
	if v.Kind() != reflect.Pointer && v.CanAddr() && reflect.PointerTo(v.Type()).Implements(marshalerType) {
		v = v.Addr()
	}
	e.marshal(v.Interface())
}

// fieldPlan is how one struct field is written.
type fieldPlan struct {
	index     int
	str       bool   // a string planned as encodeString
	key       string // `,"name":` (the separator, then the key)
	keyLen    int    // the length of the key's string literal in key
	keyEsc    bool   // the literal has an escape sequence
	omitEmpty bool
	emptyAs   string // written for a nil slice or map ("[]", "{}"), if set
	def       string // written for an empty value (a default), if set
	enc       encFunc
}

// structEncFunc returns the plan of a struct of this package: a model of
// [modelSpecs] when spec is set (its declared fields, nil always-written
// slices as [], the defaults, the extra keys) or a plain struct. It returns
// nil for a struct whose fields it cannot plan (an embedded or untagged
// field); such a struct is left to encoding/json.
func structEncFunc(t reflect.Type, spec *modelSpec) encFunc {
	var (
		fields   []fieldPlan
		extraIdx = -1
	)
	var ti *typeInfo
	if spec != nil {
		ti = infoOf(t)
	}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if spec != nil && f.Name == "Extra" && f.Type == reflect.TypeFor[contracts.Extra]() && tag == "-" {
			extraIdx = i
			continue
		}
		if f.Anonymous {
			return nil
		}
		if !f.IsExported() || tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" || strings.Contains(opts, "string") || strings.Contains(opts, "omitzero") {
			return nil
		}
		var key encoder
		key.str(name)
		fp := fieldPlan{index: i, key: "," + string(key.b) + ":", keyLen: len(key.b), keyEsc: bytes.IndexByte(key.b[1:len(key.b)-1], '\\') >= 0, omitEmpty: strings.Contains(opts, "omitempty"), enc: encoderOf(f.Type)}
		if spec != nil {
			if slices.Contains(ti.nilSlice, i) {
				fp.emptyAs = "[]"
			}
			if slices.Contains(ti.nilMap, i) {
				fp.emptyAs = "{}"
			}
			fp.def = spec.defaults[name]
		}
		fp.str = f.Type.Kind() == reflect.String && reflect.ValueOf(fp.enc).Pointer() == reflect.ValueOf(encodeString).Pointer()
		fields = append(fields, fp)
	}
	result := spec != nil && spec.result
	// The keys written are distinct when the fields' names are: the extra
	// keys are those no field declares (typeInfo.declared).
	distinct := true
	names := map[string]bool{}
	for _, fp := range fields {
		distinct = distinct && !names[fp.key]
		names[fp.key] = true
	}
	return func(e *encoder, v reflect.Value) {
		if !e.enter() {
			return
		}
		obj := e.open(wire.Object, '{')
		obj.compare = !distinct
		var n int32
		for i := range fields {
			fp := &fields[i]
			fv := v.Field(fp.index)
			if fp.str && fp.def == "" {
				s := fv.String()
				if fp.omitEmpty && s == "" {
					continue
				}
				e.member(fp, n)
				n++
				e.str(s)
				continue
			}
			lit := ""
			switch {
			case fp.def != "" && defaultApplies(fv):
				lit = fp.def
			case fp.omitEmpty && isEmptyValue(fv):
				continue
			case fp.emptyAs != "" && fv.IsNil():
				lit = fp.emptyAs
			}
			e.member(fp, n)
			n++
			if lit != "" {
				start := len(e.b)
				e.b = append(e.b, lit...)
				e.parsed(start)
			} else {
				fp.enc(e, fv)
			}
		}
		if extraIdx >= 0 {
			n += e.extra(ti, v.Field(extraIdx).Interface().(contracts.Extra), result, n == 0)
		}
		e.closeObject(obj, n)
	}
}

// member appends the key of a field preceded, unless it is the object's
// first (n members written before it), by the separator, and adds the key
// to the tape.
func (e *encoder) member(fp *fieldPlan, n int32) {
	e.b = append(e.b, fp.key[1-min(n, 1):]...)
	if e.t != nil {
		end := len(e.b) - 1 - e.base // before the colon
		e.t.AddKey(end-fp.keyLen, end, fp.keyEsc)
	}
}

// defaultApplies reports whether the default of a field holding v is
// written, as the hooks test it: a nil slice, map, pointer or interface, an
// empty string or another empty value (an empty but non-nil slice is
// written as it is).
func defaultApplies(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Slice, reflect.Map, reflect.Pointer, reflect.Interface:
		return v.IsNil()
	}
	return isEmptyValue(v)
}

// isEmptyValue is encoding/json's omitempty test.
func isEmptyValue(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool:
		return !v.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int() == 0
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return v.Uint() == 0
	case reflect.Float32, reflect.Float64:
		return v.Float() == 0
	case reflect.Interface, reflect.Pointer:
		return v.IsNil()
	}
	return false
}

// enterNonNil writes null for a nil pointer, slice or map v and reports
// false; otherwise it enters v (see enter).
func (e *encoder) enterNonNil(v reflect.Value) bool {
	if v.IsNil() {
		e.null()
		return false
	}
	return e.enter()
}

// enter counts one level of nesting; false (and ok false) past maxEncodeDepth.
func (e *encoder) enter() bool {
	if e.depth >= maxEncodeDepth || !e.ok {
		e.fail()
		return false
	}
	e.depth++
	return true
}

// extra appends the undeclared keys of an open model as marshalOpen and the
// encoder's compaction write them: keys sorted, values compacted and
// HTML-escaped; nulls dropped in a result model. first says no key was
// written before.
func (e *encoder) extra(ti *typeInfo, extra contracts.Extra, result, first bool) (n int32) {
	if len(extra) == 0 {
		return 0
	}
	var small [8]string
	keys := small[:0]
	for k, v := range extra {
		if _, declared := ti.declared[k]; !declared && !(result && isNull(v)) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !first {
			e.b = append(e.b, ',')
		}
		first = false
		e.key(k)
		e.b = append(e.b, ':')
		if len(extra[k]) == 0 {
			e.fail()
			return n
		}
		e.raw(extra[k])
		n++
	}
	return n
}

// raw appends raw JSON as encoding/json writes a json.RawMessage: nil as null,
// otherwise compacted and HTML-escaped; invalid JSON makes the encoder give up.
func (e *encoder) raw(r []byte) {
	if r == nil {
		e.null()
		return
	}
	if !json.Valid(r) {
		e.fail()
		return
	}
	start := len(e.b)
	e.b = appendCompactHTML(e.b, r)
	e.parsed(start)
}

// appendCompactHTML appends src, valid JSON, without the insignificant white
// space and with <, >, &, U+2028 and U+2029 escaped inside strings, as
// encoding/json's compaction with HTML escaping does.
func appendCompactHTML(dst, src []byte) []byte {
	start := 0
	inString := false
	for i := 0; i < len(src); i++ {
		c := src[i]
		if inString {
			switch {
			case c == '\\':
				i++ // the escaped byte never ends the string
			case c == '"':
				inString = false
			case c == '<' || c == '>' || c == '&':
				dst = append(dst, src[start:i]...)
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
				start = i + 1
			case c == 0xE2 && i+2 < len(src) && src[i+1] == 0x80 && src[i+2]&^1 == 0xA8:
				dst = append(dst, src[start:i]...)
				dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[src[i+2]&0xF])
				i += 2
				start = i + 1
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case ' ', '\t', '\n', '\r':
			dst = append(dst, src[start:i]...)
			start = i + 1
		}
	}
	return append(dst, src[start:]...)
}

// number appends a json.Number as encoding/json does: "" as 0, an invalid
// number makes the encoder give up.
func (e *encoder) number(s string) {
	if s == "" {
		s = "0"
	}
	if !isJSONNumber(s) {
		e.fail()
		return
	}
	e.b = append(e.b, s...)
}

// isJSONNumber reports whether s is a JSON number literal.
func isJSONNumber(s string) bool {
	return wire.IsNumber([]byte(s))
}

// marshal appends contracts.Marshal(v): json.Marshal's bytes for a value
// without models.
func (e *encoder) marshal(v any) {
	b, err := contracts.Marshal(v)
	if err != nil {
		e.fail()
		return
	}
	e.b = append(e.b, b...)
}

// value appends a free-form value as encoding/json writes it.
func (e *encoder) value(v any) {
	switch v := v.(type) {
	case nil:
		e.null()
	case string:
		e.str(v)
	case bool:
		e.boolean(v)
	case float64:
		e.float(v, 64)
	case int:
		e.integer(int64(v))
	case int64:
		e.integer(v)
	case map[string]any:
		e.object(v)
	case []any:
		if v == nil {
			e.null()
			return
		}
		if !e.enter() {
			return
		}
		a := e.open(wire.Array, '[')
		for i, x := range v {
			if i > 0 {
				e.b = append(e.b, ',')
			}
			e.value(x)
		}
		e.closeArray(a, int32(len(v)))
	default:
		rv := reflect.ValueOf(v)
		encoderOf(rv.Type())(e, rv)
	}
}

// object appends a map with its keys sorted, as encoding/json does.
func (e *encoder) object(m map[string]any) {
	if m == nil {
		e.null()
		return
	}
	if !e.enter() {
		return
	}
	var small [16]string
	keys := small[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	obj := e.open(wire.Object, '{')
	for i, k := range keys {
		if i > 0 {
			e.b = append(e.b, ',')
		}
		obj.compare = e.key(k) || obj.compare
		e.b = append(e.b, ':')
		e.value(m[k])
		if !e.ok {
			return
		}
	}
	e.closeObject(obj, int32(len(keys)))
}

// float appends f as encoding/json's floatEncoder does.
func (e *encoder) float(f float64, bits int) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		e.fail()
		return
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 {
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	start := len(e.b)
	b := strconv.AppendFloat(e.b, f, format, -1, bits)
	if format == 'e' { // clean up e-09 to e-9
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	e.b = b
	e.scalar(wire.Number, start, format == 'f' && bytes.IndexByte(b[start:], '.') < 0)
}

// str appends s as a JSON string the way encoding/json does with HTML
// escaping.
func (e *encoder) str(s string) {
	start := len(e.b)
	var esc bool
	e.b, esc = appendJSONString(e.b, s, true)
	if e.t != nil {
		e.t.Leaf(wire.String, start-e.base, len(e.b)-e.base, esc)
	}
}

// key appends an object key (a string) and adds it to the tape; esc reports
// an escape sequence written.
func (e *encoder) key(s string) (esc bool) {
	start := len(e.b)
	e.b, esc = appendJSONString(e.b, s, true)
	if e.t != nil {
		e.t.AddKey(start-e.base, len(e.b)-e.base, esc)
	}
	return esc
}

const hexDigits = "0123456789abcdef"

// safeASCII marks the ASCII bytes a JSON string holds as themselves;
// htmlSafeASCII those that also need no escape under escapeHTML.
var safeASCII, htmlSafeASCII = func() (safe, html [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		safe[c] = c != '"' && c != '\\'
		html[c] = safe[c] && c != '<' && c != '>' && c != '&'
	}
	return safe, html
}()

// Bytes of a 64-bit word, for safeWord.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// safeWord reports whether the 8 bytes of w (little-endian, see word) are
// ASCII that a JSON string holds as themselves (with escapeHTML, none of <,
// > and &), testing them at once: the per-byte loop of appendJSONString then
// skips them. (w-ones*n)&^w has the high bit of some byte set exactly when a
// byte of w is below n (n <= 0x80, w ASCII); a byte equal to c is a zero byte
// of w^(ones*c).
func safeWord(w uint64, escapeHTML bool) bool {
	bad := w | (w-ones*0x20)&^w | zeroByte(w^(ones*'"')) | zeroByte(w^(ones*'\\'))
	if escapeHTML {
		bad |= zeroByte(w^(ones*'<')) | zeroByte(w^(ones*'>')) | zeroByte(w^(ones*'&'))
	}
	return bad&highs == 0
}

// zeroByte has the high bit of some byte set exactly when x has a zero byte.
func zeroByte(x uint64) uint64 { return (x - ones) &^ x }

// word reads the first 8 bytes of s as a little-endian word.
func word(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// AppendString appends s as a JSON string literal escaped as
// encoding/json escapes it: quotes, backslashes and control characters,
// U+2028 and U+2029, invalid UTF-8 as \ufffd, and with escapeHTML (the
// default of json.Marshal) <, > and & as \u003c, \u003e and \u0026. It is
// the one string escaper of the SDK's encoders.
func AppendString(b []byte, s string, escapeHTML bool) []byte {
	b, _ = appendJSONString(b, s, escapeHTML)
	return b
}

// appendJSONString is AppendString; esc reports an escape sequence written.
func appendJSONString(b []byte, s string, escapeHTML bool) (_ []byte, esc bool) {
	b = append(b, '"')
	safe := &safeASCII
	if escapeHTML {
		safe = &htmlSafeASCII
	}
	start := 0
	for i := 0; i < len(s); {
		if i+8 <= len(s) && safeWord(word(s[i:]), escapeHTML) {
			i += 8
			continue
		}
		if c := s[i]; c < utf8.RuneSelf {
			if safe[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			esc = true
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
		esc = true
	}
	b = append(b, s[start:]...)
	return append(b, '"'), esc
}

// typeInfo is what the plan of an open model needs to know about its struct
// type, as contracts' MarshalJSON methods read it from the json tags.
type typeInfo struct {
	declared map[string]struct{} // json keys of the declared fields
	nilSlice []int               // fields whose nil slice is written as []
	nilMap   []int               // fields whose nil map is written as {}
}

var rawMessageType = reflect.TypeFor[json.RawMessage]()

// infoOf reads the typeInfo of the struct type t.
func infoOf(t reflect.Type) *typeInfo {
	ti := &typeInfo{declared: map[string]struct{}{}}
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "-" || name == "" {
			continue
		}
		ti.declared[name] = struct{}{}
		omit := strings.Contains(opts, "omitempty") || strings.Contains(opts, "omitzero")
		if !omit && f.Type.Kind() == reflect.Slice && f.Type != rawMessageType {
			ti.nilSlice = append(ti.nilSlice, i)
		}
		if !omit && f.Type.Kind() == reflect.Map && f.Tag.Get("sv") != "" {
			ti.nilMap = append(ti.nilMap, i)
		}
	}
	return ti
}

// isNull reports whether the raw value val is null.
func isNull(val json.RawMessage) bool { return string(bytes.TrimSpace(val)) == "null" }
