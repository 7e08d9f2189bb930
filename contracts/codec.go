package contracts

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
)

// Marshal returns the wire JSON of v: a model of this package, or any value
// holding some (a pointer, slice, map or struct of them). It is what the SDK
// writes. It differs from json.Marshal on the models, which carry no JSON
// methods of their own:
//
//   - the keys of a model's Extra are written after its declared keys, in key
//     order (a key Extra shares with a declared field is not written);
//     in the models that only travel inside action results (ActionResult,
//     JobState and the models under them), extra keys holding null are not
//     written, as those payloads drop every null;
//   - a nil slice that the protocol always writes (a field without omitempty)
//     is written as [], and a nil map that it always writes as {};
//   - a field whose protocol default is not Go's zero value is written with
//     its default when empty (for example FullDescription.Format, "markdown",
//     or a document's type).
//
// encoding/json sees the models as plain structs: it drops Extra, writes nil
// slices as null and leaves defaults out. Encode models with Marshal, as
// protojson encodes protocol buffers.
func Marshal(v any) ([]byte, error) {
	rv := reflect.ValueOf(v)
	if !rv.IsValid() {
		return []byte("null"), nil
	}
	var e encodeState
	if err := e.value(rv); err != nil {
		return nil, err
	}
	// Extra keys are written as given: compact them and escape HTML as
	// encoding/json does with the output of a json.Marshaler.
	var compact bytes.Buffer
	compact.Grow(len(e.b))
	if err := json.Compact(&compact, e.b); err != nil {
		return nil, fmt.Errorf("contracts: %w", err)
	}
	var out bytes.Buffer
	out.Grow(compact.Len())
	json.HTMLEscape(&out, compact.Bytes())
	return out.Bytes(), nil
}

// Unmarshal decodes the wire JSON data into v, a non-nil pointer to a model
// of this package or to any value holding some. It differs from
// json.Unmarshal on the models:
//
//   - keys a model does not declare are kept in its Extra (models without an
//     Extra field drop them);
//   - a key that differs from a declared key only in letter case is refused
//     (encoding/json would match it case-insensitively and let it override the
//     real key);
//   - absent keys take their protocol defaults, and a model replaces the
//     whole value it decodes into;
//   - null is refused where a model is expected (a pointer to a model is set
//     to nil).
//
// Decode models with Unmarshal; json.Unmarshal loses their extra keys.
func Unmarshal(data []byte, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return &json.InvalidUnmarshalError{Type: reflect.TypeOf(v)}
	}
	if !json.Valid(data) {
		// encoding/json's syntax error, with its offset.
		var x any
		return json.Unmarshal(data, &x)
	}
	return decodeValue(data, rv.Elem())
}

// The hooks a model may implement (pointer receivers, on the model's own
// type: AwaitingField and ResourceField differ from Field only by them).
type (
	// encodeDefaulter sets, on a copy about to be written, the protocol
	// defaults of the empty fields.
	encodeDefaulter interface{ encodeDefaults() }
	// decodeDefaulter sets the defaults of the keys a decoded object may
	// leave out, on the zero value, before decoding.
	decodeDefaulter interface{ decodeDefaults() }
	// decodeFinisher normalises a decoded value.
	decodeFinisher interface{ afterDecode() }
	// resultModel marks the models that only travel inside action results:
	// their extra keys holding null are not written.
	resultModel interface{ dropsNullExtras() }
	// wireShaper gives the value written instead of the model's own fields
	// (a pointer to a struct; the model's extra keys follow its keys).
	wireShaper interface{ wireShape() any }
	// strictModel marks a model without Extra whose decoding refuses keys
	// that differ from a declared key only in letter case.
	strictModel interface{ strictKeys() }
	// stringDecoder reads the short form of a model given as a JSON string.
	stringDecoder interface{ decodeString(data []byte) error }
)

var (
	extraType     = reflect.TypeFor[Extra]()
	rawType       = reflect.TypeFor[json.RawMessage]()
	marshalerType = reflect.TypeFor[json.Marshaler]()
	pkgPath       = extraType.PkgPath()
)

// field is one encoded field of a struct.
type field struct {
	index    int
	name     string // the JSON key
	key      []byte // the JSON key, quoted, with its colon
	omitE    bool   // omitempty
	omitZ    bool   // omitzero
	nilSlice bool   // a nil slice is written as [] (always-written model slices)
	nilMap   bool   // a nil map is written as {} (always-written model maps with an sv tag)
}

// codecInfo is what the codec knows about a type.
type codecInfo struct {
	walk   bool // the type holds a model somewhere: walk it, else hand it to encoding/json
	model  bool // a struct of this package with an Extra field, or a strict one
	extra  int  // index of the Extra field; -1 without one
	strict bool // refuses folded keys (every model does)
	result bool

	building bool // being built (buildInfo)

	fields   []field
	declared map[string]int    // JSON key -> index in fields
	folded   map[string]string // case-folded key -> declared key
}

var (
	codecMu    sync.Mutex
	codecInfos sync.Map // reflect.Type -> *codecInfo
)

// infoOf returns the codec's view of t, built once.
func infoOf(t reflect.Type) *codecInfo {
	if ci, ok := codecInfos.Load(t); ok {
		return ci.(*codecInfo)
	}
	codecMu.Lock()
	defer codecMu.Unlock()
	built := map[reflect.Type]*codecInfo{}
	ci := buildInfo(t, built)
	for bt, bci := range built {
		codecInfos.LoadOrStore(bt, bci)
	}
	return ci
}

// buildInfo builds the info of t and of the types it holds into built. A
// type met again while it is being built (a recursive type, such as Field's
// item fields) is walked.
func buildInfo(t reflect.Type, built map[reflect.Type]*codecInfo) *codecInfo {
	if ci, ok := codecInfos.Load(t); ok {
		return ci.(*codecInfo)
	}
	if ci, ok := built[t]; ok {
		if ci.building {
			ci.walk = true
		}
		return ci
	}
	ci := &codecInfo{extra: -1, building: true}
	built[t] = ci
	defer func() { ci.building = false }()
	ptr := reflect.PointerTo(t)
	switch t.Kind() {
	case reflect.Interface:
		ci.walk = true // the dynamic value may be a model
	case reflect.Pointer, reflect.Slice, reflect.Array:
		if t != rawType && !t.Implements(marshalerType) {
			ci.walk = buildInfo(t.Elem(), built).walk
		}
	case reflect.Map:
		if t.Key().Kind() == reflect.String && !t.Implements(marshalerType) {
			ci.walk = buildInfo(t.Elem(), built).walk
		}
	case reflect.Struct:
		if t.Implements(marshalerType) || ptr.Implements(marshalerType) {
			break // its own encoding (PlanValue)
		}
		if t.PkgPath() == pkgPath {
			if f, ok := t.FieldByName("Extra"); ok && f.Type == extraType && f.Tag.Get("json") == "-" {
				ci.model, ci.extra = true, f.Index[0]
			}
			if ptr.Implements(reflect.TypeFor[strictModel]()) {
				ci.model = true
			}
		}
		ci.strict = ci.model
		ci.result = ptr.Implements(reflect.TypeFor[resultModel]())
		ci.declared, ci.folded = map[string]int{}, map[string]string{}
		walk, plain := ci.model, true
		for i := range t.NumField() {
			sf := t.Field(i)
			name, opts, _ := strings.Cut(sf.Tag.Get("json"), ",")
			if !sf.IsExported() || name == "-" {
				continue
			}
			if sf.Anonymous || hasOpt(opts, "string") {
				if ci.model {
					panic("contracts: field " + sf.Name + " of " + t.String() + ": the codec neither promotes embedded fields nor quotes values")
				}
				plain = false // left to encoding/json as a whole
			}
			if name == "" {
				name = sf.Name
			}
			omitE, omitZ := hasOpt(opts, "omitempty"), hasOpt(opts, "omitzero")
			fd := field{index: i, name: name, omitE: omitE, omitZ: omitZ}
			kb, _ := json.Marshal(name)
			fd.key = append(kb, ':')
			if ci.extra >= 0 && !omitE && !omitZ {
				fd.nilSlice = sf.Type.Kind() == reflect.Slice && sf.Type != rawType
				fd.nilMap = sf.Type.Kind() == reflect.Map && sf.Tag.Get("sv") != ""
			}
			ci.declared[name] = len(ci.fields)
			ci.folded[FoldKey(name)] = name
			ci.fields = append(ci.fields, fd)
			if buildInfo(sf.Type, built).walk {
				walk = true
			}
		}
		if ptr.Implements(reflect.TypeFor[wireShaper]()) {
			walk = true
		}
		ci.walk = ci.walk || (walk && plain)
	}
	return ci
}

func hasOpt(opts, opt string) bool {
	for opts != "" {
		var o string
		o, opts, _ = strings.Cut(opts, ",")
		if o == opt {
			return true
		}
	}
	return false
}

// encodeState accumulates the encoding.
type encodeState struct {
	b     []byte
	depth int
}

const maxDepth = 1000

func (e *encodeState) value(v reflect.Value) error {
	if !v.IsValid() {
		e.b = append(e.b, "null"...)
		return nil
	}
	ci := infoOf(v.Type())
	if !ci.walk {
		return e.json(v)
	}
	if e.depth++; e.depth > maxDepth {
		return fmt.Errorf("contracts: value nested deeper than %d levels", maxDepth)
	}
	defer func() { e.depth-- }()
	switch v.Kind() {
	case reflect.Interface, reflect.Pointer:
		if v.IsNil() {
			e.b = append(e.b, "null"...)
			return nil
		}
		return e.value(v.Elem())
	case reflect.Slice:
		if v.IsNil() {
			e.b = append(e.b, "null"...)
			return nil
		}
		fallthrough
	case reflect.Array:
		e.b = append(e.b, '[')
		for i := range v.Len() {
			if i > 0 {
				e.b = append(e.b, ',')
			}
			if err := e.value(v.Index(i)); err != nil {
				return err
			}
		}
		e.b = append(e.b, ']')
		return nil
	case reflect.Map:
		if v.IsNil() {
			e.b = append(e.b, "null"...)
			return nil
		}
		keys := v.MapKeys()
		slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(a.String(), b.String()) })
		e.b = append(e.b, '{')
		for i, k := range keys {
			if i > 0 {
				e.b = append(e.b, ',')
			}
			kb, _ := json.Marshal(k.String())
			e.b = append(append(e.b, kb...), ':')
			if err := e.value(v.MapIndex(k)); err != nil {
				return err
			}
		}
		e.b = append(e.b, '}')
		return nil
	case reflect.Struct:
		return e.structValue(v, ci)
	}
	return e.json(v)
}

// json appends what encoding/json writes for v.
func (e *encodeState) json(v reflect.Value) error {
	b, err := json.Marshal(v.Interface())
	if err != nil {
		return err
	}
	e.b = append(e.b, b...)
	return nil
}

func (e *encodeState) structValue(v reflect.Value, ci *codecInfo) error {
	var extra Extra
	if ci.extra >= 0 {
		extra = v.Field(ci.extra).Interface().(Extra)
	}
	if ci.model {
		// Defaults and the wire shape apply to a copy.
		c := reflect.New(v.Type())
		c.Elem().Set(v)
		if d, ok := c.Interface().(encodeDefaulter); ok {
			d.encodeDefaults()
		}
		if s, ok := c.Interface().(wireShaper); ok {
			shape := reflect.ValueOf(s.wireShape()).Elem()
			return e.fields(shape, infoOf(shape.Type()), extra, ci.result)
		}
		v = c.Elem()
	}
	return e.fields(v, ci, extra, ci.result)
}

// fields writes the object of v's fields, then extra's undeclared keys.
func (e *encodeState) fields(v reflect.Value, ci *codecInfo, extra Extra, result bool) error {
	e.b = append(e.b, '{')
	n := 0
	for _, f := range ci.fields {
		fv := v.Field(f.index)
		if (f.omitE && isEmpty(fv)) || (f.omitZ && isZero(fv)) {
			continue
		}
		if n > 0 {
			e.b = append(e.b, ',')
		}
		n++
		e.b = append(e.b, f.key...)
		switch {
		case f.nilSlice && fv.IsNil():
			e.b = append(e.b, "[]"...)
		case f.nilMap && fv.IsNil():
			e.b = append(e.b, "{}"...)
		default:
			if err := e.value(fv); err != nil {
				return err
			}
		}
	}
	keys := make([]string, 0, len(extra))
	for k, val := range extra {
		if _, declared := ci.declared[k]; declared {
			continue
		}
		if result && isNull(val) {
			continue
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		val := extra[k]
		if len(val) == 0 || !json.Valid(val) {
			return fmt.Errorf("contracts: extra key %q does not hold valid JSON", k)
		}
		if n > 0 {
			e.b = append(e.b, ',')
		}
		n++
		kb, _ := json.Marshal(k)
		e.b = append(append(append(e.b, kb...), ':'), val...)
	}
	e.b = append(e.b, '}')
	return nil
}

func isNull(val json.RawMessage) bool { return string(bytes.TrimSpace(val)) == "null" }

// isEmpty is encoding/json's omitempty test.
func isEmpty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Interface, reflect.Pointer:
		return v.IsZero()
	}
	return false
}

// isZero is encoding/json's omitzero test.
func isZero(v reflect.Value) bool {
	if z, ok := v.Interface().(interface{ IsZero() bool }); ok {
		if v.Kind() == reflect.Pointer && v.IsNil() {
			return true
		}
		return z.IsZero()
	}
	return v.IsZero()
}

// decodeValue decodes data, valid JSON, into v (settable).
func decodeValue(data []byte, v reflect.Value) error {
	ci := infoOf(v.Type())
	if !ci.walk {
		return json.Unmarshal(data, v.Addr().Interface())
	}
	null := isNull(data)
	switch v.Kind() {
	case reflect.Interface:
		return json.Unmarshal(data, v.Addr().Interface())
	case reflect.Pointer:
		if null {
			v.SetZero()
			return nil
		}
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		return decodeValue(data, v.Elem())
	case reflect.Slice:
		if null {
			v.SetZero()
			return nil
		}
		var items []json.RawMessage
		if err := json.Unmarshal(data, &items); err != nil {
			return typeError(data, v.Type(), err)
		}
		s := reflect.MakeSlice(v.Type(), len(items), len(items))
		for i, item := range items {
			if err := decodeValue(item, s.Index(i)); err != nil {
				return err
			}
		}
		v.Set(s)
		return nil
	case reflect.Array:
		if null {
			return nil
		}
		var items []json.RawMessage
		if err := json.Unmarshal(data, &items); err != nil {
			return typeError(data, v.Type(), err)
		}
		for i := range v.Len() {
			if i >= len(items) {
				v.Index(i).SetZero()
				continue
			}
			if err := decodeValue(items[i], v.Index(i)); err != nil {
				return err
			}
		}
		return nil
	case reflect.Map:
		if null {
			v.SetZero()
			return nil
		}
		var items map[string]json.RawMessage
		if err := json.Unmarshal(data, &items); err != nil {
			return typeError(data, v.Type(), err)
		}
		if v.IsNil() {
			v.Set(reflect.MakeMapWithSize(v.Type(), len(items)))
		}
		for k, item := range items {
			elem := reflect.New(v.Type().Elem()).Elem()
			if err := decodeValue(item, elem); err != nil {
				return err
			}
			v.SetMapIndex(reflect.ValueOf(k).Convert(v.Type().Key()), elem)
		}
		return nil
	case reflect.Struct:
		if ci.model {
			return decodeModel(data, v, ci)
		}
		if null {
			return nil
		}
		return decodeFields(data, v, ci, nil)
	}
	return json.Unmarshal(data, v.Addr().Interface())
}

// decodeModel decodes a model: a fresh value with its defaults, the declared
// keys, the extra ones, then the model's normalisation.
func decodeModel(data []byte, v reflect.Value, ci *codecInfo) error {
	if isNull(data) {
		return errors.New("contracts: expected a JSON object, got null")
	}
	fresh := reflect.New(v.Type())
	if d, ok := fresh.Interface().(stringDecoder); ok && bytes.HasPrefix(bytes.TrimSpace(data), []byte{'"'}) {
		if err := d.decodeString(data); err != nil {
			return err
		}
		v.Set(fresh.Elem())
		return nil
	}
	if d, ok := fresh.Interface().(decodeDefaulter); ok {
		d.decodeDefaults()
	}
	var extra Extra
	if err := decodeFields(data, fresh.Elem(), ci, &extra); err != nil {
		return err
	}
	if ci.extra >= 0 && extra != nil {
		fresh.Elem().Field(ci.extra).Set(reflect.ValueOf(extra))
	}
	if f, ok := fresh.Interface().(decodeFinisher); ok {
		f.afterDecode()
	}
	v.Set(fresh.Elem())
	return nil
}

// decodeFields decodes the object data into the fields of v. For a model
// (extra set) a key that folds to a declared one is refused and the
// undeclared keys go to *extra; for a plain struct, keys match as
// encoding/json matches them (exactly, else case-insensitively) and the
// undeclared ones are dropped.
func decodeFields(data []byte, v reflect.Value, ci *codecInfo, extra *Extra) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return typeError(data, v.Type(), err)
	}
	if raw == nil {
		return errors.New("contracts: expected a JSON object, got null")
	}
	if ci.strict {
		var folded *foldedKeyError
		for k := range raw {
			if _, ok := ci.declared[k]; ok {
				continue
			}
			if real, ok := ci.folded[FoldKey(k)]; ok {
				if folded == nil || k < folded.key { // report the same key on every run
					folded = &foldedKeyError{key: k, declared: real}
				}
				continue
			}
			if extra != nil && ci.extra >= 0 {
				if *extra == nil {
					*extra = Extra{}
				}
				(*extra)[k] = raw[k]
			}
		}
		if folded != nil {
			return folded
		}
	}
	// Declared keys, in field order, so that the first error is the same on
	// every run.
	for _, f := range ci.fields {
		val, ok := raw[f.name]
		if !ok && !ci.strict {
			for k, kv := range raw {
				if FoldKey(k) == FoldKey(f.name) {
					val, ok = kv, true
					break
				}
			}
		}
		if !ok {
			continue
		}
		if err := decodeValue(val, v.Field(f.index)); err != nil {
			return err
		}
	}
	return nil
}

// typeError reports data that is not the JSON kind t needs, as encoding/json
// does.
func typeError(data []byte, t reflect.Type, err error) error {
	var ute *json.UnmarshalTypeError
	if errors.As(err, &ute) {
		return &json.UnmarshalTypeError{Value: jsonKind(data), Type: t, Offset: ute.Offset}
	}
	return err
}

func jsonKind(data []byte) string {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return "value"
	}
	switch data[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "bool"
	case 'n':
		return "null"
	}
	return "number"
}
