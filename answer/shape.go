package answer

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/supervaize/supervaizer-go/internal/validate"
)

// shape is what the package derives once from an answer type: the compiled
// check, the ask and the strict schema.
type shape struct {
	typ       reflect.Type
	check     *validate.Input
	contract  string
	schema    []byte
	schemaErr error
}

var shapes sync.Map // reflect.Type -> *shape

// shapeOf derives the shape of T, once. It panics when T has no JSON Schema
// mapping (a channel field, an anonymous struct...), as HandleActionFor does
// for an input type: a programming error the first test finds.
func shapeOf[T Enveloped]() *shape {
	t := reflect.TypeFor[T]()
	if s, ok := shapes.Load(t); ok {
		return s.(*shape)
	}
	s, err := derive(t)
	if err != nil {
		panic(fmt.Sprintf("answer: %v", err))
	}
	actual, _ := shapes.LoadOrStore(t, s)
	return actual.(*shape)
}

// derive reads the answer schema that package contracts derives from t (the
// rules of typed inputs, optional fields also null) and writes the ask and
// the strict schema from it: required-ness, types and rules come from that
// one derivation; the Go type adds only the field order and the ask tags.
func derive(t reflect.Type) (*shape, error) {
	check, err := validate.NewAnswer(t)
	if err != nil {
		return nil, err
	}
	var doc struct {
		Ref  string          `json:"$ref"`
		Defs map[string]node `json:"$defs"`
	}
	if err := json.Unmarshal(check.Reference().Schema(), &doc); err != nil {
		return nil, fmt.Errorf("the schema of %s: %w", t, err)
	}
	d := deriver{defs: doc.Defs}
	s := &shape{typ: t, check: check}

	var b strings.Builder
	b.WriteString("End your answer with one JSON object, not wrapped in a code fence, with these fields:\n")
	def, name := d.resolve(node{"$ref": doc.Ref})
	d.render(&b, t, def, "", map[string]string{name: "the answer"})
	b.WriteString("Give every required field. Leave out, or set to null, an optional field you have nothing for. Add no other field.")
	s.contract = b.String()

	strict, err := d.strict(t, node{"$ref": doc.Ref}, t.Name(), nil)
	if err == nil {
		s.schema, err = json.MarshalIndent(strict, "", "  ")
	}
	s.schemaErr = err
	return s, nil
}

// node is a JSON Schema object.
type node = map[string]any

type deriver struct {
	defs map[string]node
}

// resolve follows a $ref; name is the definition's, "" for no $ref.
func (d deriver) resolve(n node) (out node, name string) {
	ref, ok := n["$ref"].(string)
	if !ok {
		return n, ""
	}
	name = strings.TrimPrefix(ref, "#/$defs/")
	return d.defs[name], name
}

// unnull returns the schema n accepts besides null, and whether n accepts
// null ({"type": [T, "null"]} or {"anyOf": [X, {"type": "null"}]}).
func unnull(n node) (node, bool) {
	if types, ok := n["type"].([]any); ok && slices.Contains(types, any("null")) {
		out := node{}
		for k, v := range n {
			out[k] = v
		}
		rest := slices.DeleteFunc(slices.Clone(types), func(v any) bool { return v == "null" })
		if len(rest) == 1 {
			out["type"] = rest[0]
		} else {
			out["type"] = rest
		}
		return out, true
	}
	if alts, ok := n["anyOf"].([]any); ok && len(n) == 1 && len(alts) == 2 {
		for i, alt := range alts {
			if m, ok := alt.(node); ok && len(m) == 1 && m["type"] == "null" {
				return alts[1-i].(node), true
			}
		}
	}
	return n, false
}

// deref is t without its pointers.
func deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// elem is the Go type of the items of an array or the values of a map.
func elem(t reflect.Type) reflect.Type {
	t = deref(t)
	switch t.Kind() {
	case reflect.Slice, reflect.Array, reflect.Map:
		return t.Elem()
	}
	return t
}

// field is one key of an object, with the Go field it decodes into.
type field struct {
	key, ask string
	typ      reflect.Type
}

// fields lists the keys of the object schema n in the order of struct t's
// fields, an embedded struct's in its place, with each field's ask tag. The
// schema decides which keys exist (package contracts promotes embedded
// fields as encoding/json does); a key the walk does not find comes last.
func fields(t reflect.Type, n node) []field {
	props, _ := n["properties"].(node)
	type cand struct {
		field
		depth int
	}
	var cands []cand
	var walk func(t reflect.Type, depth int, seen map[reflect.Type]bool)
	walk = func(t reflect.Type, depth int, seen map[reflect.Type]bool) {
		if seen[t] {
			return
		}
		seen[t] = true
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" {
				continue
			}
			if f.Anonymous && name == "" && deref(f.Type).Kind() == reflect.Struct {
				walk(deref(f.Type), depth+1, seen)
				continue
			}
			if name == "" {
				name = f.Name
			}
			if _, ok := props[name]; ok && f.IsExported() {
				cands = append(cands, cand{field{name, f.Tag.Get("ask"), f.Type}, depth})
			}
		}
	}
	walk(deref(t), 0, map[reflect.Type]bool{})
	var out []field
	for _, c := range cands {
		shallowest := !slices.ContainsFunc(cands, func(o cand) bool { return o.key == c.key && o.depth < c.depth })
		if shallowest && !slices.ContainsFunc(out, func(o field) bool { return o.key == c.key }) {
			out = append(out, c.field)
		}
	}
	var rest []string
	for k := range props {
		if !slices.ContainsFunc(out, func(o field) bool { return o.key == k }) {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	for _, k := range rest {
		out = append(out, field{key: k, typ: reflect.TypeFor[any]()})
	}
	return out
}

// nested is an object with fields under a field: its Go type, its schema
// and its definition's name.
type nested struct {
	t    reflect.Type
	n    node
	name string
}

// render writes one line per field of the object schema n (of Go type t),
// the fields of a nested object indented under it; shown maps the
// definitions already being shown to their field, so that a recursive type
// refers back to it.
func (d deriver) render(b *strings.Builder, t reflect.Type, n node, indent string, shown map[string]string) {
	required, _ := n["required"].([]any)
	props, _ := n["properties"].(node)
	for _, f := range fields(t, n) {
		need := "optional"
		if slices.Contains(required, any(f.key)) {
			need = "required"
		}
		text, sub := d.describe(f.typ, props[f.key].(node))
		if sub != nil {
			if at, ok := shown[sub.name]; ok {
				text = strings.Replace(text, "with these fields", "shaped like "+at, 1)
				sub = nil
			}
		}
		fmt.Fprintf(b, "%s- %s (%s, %s)", indent, strconv.Quote(f.key), need, text)
		if f.ask != "" {
			b.WriteString(": " + f.ask)
		}
		b.WriteByte('\n')
		if sub != nil {
			shown[sub.name] = strconv.Quote(f.key)
			d.render(b, sub.t, sub.n, indent+"  ", shown)
			delete(shown, sub.name)
		}
	}
}

// describe says what the schema n (of Go type t) accepts, in a few words;
// for an object with fields, or an array of them, it also returns the
// object, whose fields follow indented.
func (d deriver) describe(t reflect.Type, n node) (string, *nested) {
	n, _ = unnull(n)
	if def, name := d.resolve(n); name != "" {
		if _, ok := def["properties"]; ok {
			return "object with these fields", &nested{deref(t), def, name}
		}
		return d.describe(t, def)
	}
	var words []string
	add := func(format string, args ...any) { words = append(words, fmt.Sprintf(format, args...)) }
	switch n["type"] {
	case "string":
		words = append(words, "string")
		if enum, ok := n["enum"].([]any); ok {
			quoted := make([]string, len(enum))
			for i, v := range enum {
				quoted[i] = strconv.Quote(fmt.Sprint(v))
			}
			add("one of %s", strings.Join(quoted, ", "))
		}
		if v, ok := n["minLength"]; ok {
			add("at least %v characters", v)
		}
		if v, ok := n["maxLength"]; ok {
			add("at most %v characters", v)
		}
		if v, ok := n["pattern"]; ok {
			add("matching the pattern %v", v)
		}
		switch f := n["format"]; f {
		case nil:
		case "nonblank":
			add("not blank")
		default:
			add("format %v", f)
		}
	case "integer", "number":
		words = append(words, n["type"].(string))
		if v, ok := n["const"]; ok {
			add("exactly %v", v)
		}
		if v, ok := n["minimum"]; ok {
			add("at least %v", v)
		}
		if v, ok := n["maximum"]; ok {
			add("at most %v", v)
		}
	case "boolean":
		words = append(words, "boolean")
	case "array":
		items, _ := n["items"].(node)
		text, sub := d.describe(elem(t), items)
		kind, rules, _ := strings.Cut(text, ", ")
		switch {
		case sub != nil:
			text = "objects with these fields"
		case rules != "":
			text = plural(kind) + " (" + rules + ")"
		default:
			text = plural(kind)
		}
		words = append(words, "array of "+text)
		if v, ok := n["minItems"]; ok {
			add("at least %v %s", v, plural("item", v))
		}
		if v, ok := n["maxItems"]; ok {
			add("at most %v %s", v, plural("item", v))
		}
		return strings.Join(words, ", "), sub
	case "object":
		if values, ok := n["additionalProperties"].(node); ok {
			text, sub := d.describe(elem(t), values)
			if sub != nil {
				text = "objects"
			}
			words = append(words, "object whose values are "+text)
		} else {
			words = append(words, "any JSON object")
		}
	default:
		words = append(words, "any JSON value")
	}
	return strings.Join(words, ", "), nil
}

// plural is the plural of a one-word kind (strings, items), or kind itself
// when count is 1.
func plural(kind string, count ...any) string {
	if len(count) == 1 && fmt.Sprint(count[0]) == "1" || strings.Contains(kind, " ") {
		return kind
	}
	return kind + "s"
}

// strict writes the strict form of the schema n (of Go type t, at path):
// every object closed with all its fields required, an optional field
// nullable, the ask tags as descriptions; the value rules (bounds, lengths,
// patterns, formats) stay with Parse, as providers differ on them. A map, a
// free-form value or a recursive type has no strict form.
func (d deriver) strict(t reflect.Type, n node, path string, stack []string) (node, error) {
	n, nullable := unnull(n)
	out, err := d.strictValue(t, n, path, stack)
	if err != nil || !nullable {
		return out, err
	}
	if typ, ok := out["type"].(string); ok && len(out) == 1 || ok && len(out) == 2 && out["enum"] != nil {
		out["type"] = []any{typ, "null"}
		if enum, ok := out["enum"].([]any); ok {
			out["enum"] = append(slices.Clone(enum), nil)
		}
		return out, nil
	}
	return node{"anyOf": []any{out, node{"type": "null"}}}, nil
}

func (d deriver) strictValue(t reflect.Type, n node, path string, stack []string) (node, error) {
	if def, name := d.resolve(n); name != "" {
		if slices.Contains(stack, name) {
			return nil, fmt.Errorf("%s: the type %s is recursive: it has no strict schema", path, deref(t))
		}
		return d.strict(t, def, path, append(stack, name))
	}
	switch n["type"] {
	case "string", "integer", "number", "boolean":
		out := node{"type": n["type"]}
		for _, k := range []string{"enum", "const"} {
			if v, ok := n[k]; ok {
				out[k] = v
			}
		}
		return out, nil
	case "array":
		items, err := d.strict(elem(t), n["items"].(node), path+"[]", stack)
		if err != nil {
			return nil, err
		}
		return node{"type": "array", "items": items}, nil
	case "object":
		props, ok := n["properties"].(node)
		if !ok {
			return nil, fmt.Errorf("%s: a map or a free-form object has no strict schema", path)
		}
		out := node{"type": "object", "additionalProperties": false}
		strictProps, required := node{}, make([]string, 0, len(props))
		for _, f := range fields(t, n) {
			p, err := d.strict(f.typ, props[f.key].(node), path+"."+f.key, stack)
			if err != nil {
				return nil, err
			}
			if f.ask != "" {
				p["description"] = f.ask
			}
			strictProps[f.key] = p
			required = append(required, f.key)
		}
		sort.Strings(required)
		out["properties"], out["required"] = strictProps, required
		return out, nil
	}
	return nil, fmt.Errorf("%s: a free-form value has no strict schema", path)
}

// Contract returns the ask of T: the text that ends a prompt, one line per
// field (its JSON name, whether it is required, its type and rules, then its
// `ask` tag), the fields of a nested object indented under it. It is derived
// from the same schema as [Parse]'s check, so the two cannot drift. It
// panics when T has no JSON Schema mapping.
func Contract[T Enveloped]() string { return shapeOf[T]().contract }

// Schema returns the JSON Schema of T in the strict form providers accept for
// constrained decoding (structured outputs): every object has
// "additionalProperties": false and lists all its fields in "required", an
// optional field is nullable instead (Parse reads null as unset), and the
// `ask` tags are descriptions. Value rules (bounds, lengths, patterns,
// formats) are left to [Parse], as providers differ on them. T must have a
// strict form: a map, a free-form value (any, json.RawMessage) or a
// recursive type is an error. It panics when T has no JSON Schema mapping.
func Schema[T Enveloped]() ([]byte, error) {
	s := shapeOf[T]()
	if s.schemaErr != nil {
		return nil, fmt.Errorf("answer: %w", s.schemaErr)
	}
	return slices.Clone(s.schema), nil
}
