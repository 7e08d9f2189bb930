package contracts

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// This file derives the JSON Schema of every wire model from its Go declaration.
//
// The Go struct is the single declaration of a contract: its json tags give the keys,
// its field types give the JSON types (a pointer is nullable, a slice is an array, a
// struct is a $ref to its own definition), and an `sv` tag adds the rules JSON Schema
// can express:
//
//	required        the key must be present
//	nonblank        a string that is not empty after trimming Unicode white space
//	minLen=N        minLength (code points)
//	maxLen=N        maxLength (code points)
//	minimum=N       minimum (numbers)
//	maximum=N       maximum (numbers)
//	minItems=N      minItems
//	maxItems=N      maxItems
//	enum=a|b|c      enum of strings
//	const=N         const integer
//	pattern=RE      pattern
//	format=F        format (date-time, uri, nonblank)
//	object          a free-form value that must be a JSON object
//	nonull          a pointer field that may be absent but never null
//	null            a non-pointer field that also accepts null (read as unset)
//
// A type may add rules that span several keys (if/then, oneOf) by implementing
// schemaExtender, or replace its schema entirely by implementing schemaProvider.
// Rules JSON Schema cannot express (uniqueness of ids, min <= max, cross references)
// are Go checks registered with the model (see checks.go); the Validator runs both.

// schemaProvider replaces the generated schema of a type.
type schemaProvider interface {
	jsonSchema(g *schemaGen) map[string]any
}

// schemaExtender adds rules to the generated schema of a struct type.
type schemaExtender interface {
	extendSchema(s map[string]any)
}

// closedSchema marks a struct type whose schema rejects unknown keys.
type closedSchema interface {
	closedSchema()
}

var (
	rawMessageType     = reflect.TypeFor[json.RawMessage]()
	schemaProviderType = reflect.TypeFor[schemaProvider]()
	schemaExtenderType = reflect.TypeFor[schemaExtender]()
	closedSchemaType   = reflect.TypeFor[closedSchema]()
)

type schemaGen struct {
	defs map[string]map[string]any
	// input mode derives the schema of an agent's own input type: every struct is
	// closed (additionalProperties false), a field is required unless it is a
	// pointer or tagged omitempty/omitzero, and definitions are named by
	// package path so types of different packages never collide.
	input bool
	// nullOptional (input mode, a model's answer) lets every optional field
	// also be null.
	nullOptional bool
}

// jsonField is a field of a struct as its JSON key.
type jsonField struct {
	f          reflect.StructField
	name, opts string
}

// fields lists the keys of struct t. Outside input mode, every exported field
// with a json name. In input mode, the keys encoding/json decodes: a field
// without a json name is keyed by its Go name, the fields of an embedded
// struct without a json name are promoted, and of several fields with the
// same key the shallowest wins, then the one with a json name; when that
// leaves several, none (as encoding/json).
func (g *schemaGen) fields(t reflect.Type) []jsonField {
	type cand struct {
		jsonField
		depth  int
		tagged bool
	}
	var cands []cand
	seen := map[reflect.Type]bool{}
	// Breadth first, one depth at a time; a struct embedded twice at one
	// depth has its fields counted twice, so that they hide each other.
	level, count := []reflect.Type{t}, map[reflect.Type]int{t: 1}
	for depth := 0; len(level) > 0; depth++ {
		var next []reflect.Type
		nextCount := map[reflect.Type]int{}
		for _, st := range level {
			if seen[st] {
				continue
			}
			seen[st] = true
			for i := range st.NumField() {
				f := st.Field(i)
				name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
				if name == "-" {
					continue
				}
				if f.Anonymous && g.input {
					et := f.Type
					if et.Kind() == reflect.Pointer {
						et = et.Elem()
					}
					if name == "" && et.Kind() == reflect.Struct {
						if nextCount[et]++; nextCount[et] == 1 {
							next = append(next, et)
						}
						continue
					}
				}
				if !f.IsExported() || (name == "" && !g.input) {
					continue
				}
				tagged := name != ""
				if !tagged {
					name = f.Name
				}
				c := cand{jsonField{f, name, opts}, depth, tagged}
				cands = append(cands, c)
				if count[st] > 1 {
					cands = append(cands, c)
				}
			}
		}
		level, count = next, nextCount
	}
	out := make([]jsonField, 0, len(cands))
	for i, c := range cands {
		dominant, ties := true, 0
		for j, o := range cands {
			if j == i || o.name != c.name {
				continue
			}
			switch {
			case o.depth < c.depth, o.depth == c.depth && o.tagged && !c.tagged:
				dominant = false
			case o.depth == c.depth && o.tagged == c.tagged:
				ties++
			}
		}
		if dominant && ties == 0 {
			out = append(out, c.jsonField)
		}
	}
	return out
}

func newSchemaGen() *schemaGen { return &schemaGen{defs: map[string]map[string]any{}} }

// ref returns a $ref to the definition of t, generating it on first use.
func (g *schemaGen) ref(t reflect.Type) map[string]any {
	name := t.Name()
	if g.input {
		name = strings.NewReplacer("/", ".", "~", ".").Replace(t.PkgPath() + "." + t.Name())
	}
	if _, ok := g.defs[name]; !ok {
		g.defs[name] = nil // reserve the name: recursive types terminate
		g.defs[name] = g.define(t)
	}
	return map[string]any{"$ref": "#/$defs/" + name}
}

func (g *schemaGen) define(t reflect.Type) map[string]any {
	if t.Implements(schemaProviderType) {
		return reflect.Zero(t).Interface().(schemaProvider).jsonSchema(g)
	}
	if t.Kind() != reflect.Struct {
		return g.schemaOf(t, noRules())
	}
	props := map[string]any{}
	var required []string
	for _, jf := range g.fields(t) {
		f, name, opts := jf.f, jf.name, jf.opts
		rules := parseRules(f.Tag.Get("sv"))
		if g.input && f.Type.Kind() != reflect.Pointer && !strings.Contains(opts, "omitempty") && !strings.Contains(opts, "omitzero") {
			rules.required = true
		}
		if g.nullOptional && !rules.required {
			// An answer's optional field also accepts null, read as unset:
			// constrained decoding sends every field, null for the ones left out.
			rules.null, rules.nonull = f.Type.Kind() != reflect.Pointer, false
		}
		props[name] = g.schemaOf(f.Type, rules)
		if rules.required {
			required = append(required, name)
		}
	}
	s := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		sort.Strings(required)
		s["required"] = required
	}
	if g.input || t.Implements(closedSchemaType) {
		s["additionalProperties"] = false
	}
	if t.Implements(schemaExtenderType) {
		reflect.Zero(t).Interface().(schemaExtender).extendSchema(s)
	}
	return s
}

func (g *schemaGen) schemaOf(t reflect.Type, r tagRules) map[string]any {
	if r.null && t.Kind() != reflect.Pointer {
		r.null = false
		return nullable(g.schemaOf(t, r))
	}
	if t.Kind() == reflect.Pointer {
		inner := g.schemaOf(t.Elem(), r)
		if r.nonull {
			return inner
		}
		return nullable(inner)
	}
	if t == rawMessageType || t.Kind() == reflect.Interface {
		if r.object {
			return map[string]any{"type": "object"}
		}
		return map[string]any{}
	}
	if t.Implements(schemaProviderType) || (t.Kind() == reflect.Struct && t.Name() != "") {
		return g.ref(t)
	}
	var s map[string]any
	switch t.Kind() {
	case reflect.String:
		s = map[string]any{"type": "string"}
		if r.nonblank {
			s["format"] = "nonblank"
		}
		if r.minLen >= 0 {
			s["minLength"] = r.minLen
		}
		if r.maxLen >= 0 {
			s["maxLength"] = r.maxLen
		}
		if len(r.enum) > 0 {
			s["enum"] = r.enum
		}
		if r.pattern != "" {
			s["pattern"] = r.pattern
		}
		if r.format != "" {
			s["format"] = r.format
		}
	case reflect.Bool:
		s = map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		s = map[string]any{"type": "integer"}
		if r.hasConst {
			s["const"] = r.constInt
		}
		addBounds(s, r)
	case reflect.Float32, reflect.Float64:
		s = map[string]any{"type": "number"}
		addBounds(s, r)
	case reflect.Slice, reflect.Array:
		s = map[string]any{"type": "array", "items": g.schemaOf(t.Elem(), noRules())}
		if r.minItems >= 0 {
			s["minItems"] = r.minItems
		}
		if r.maxItems >= 0 {
			s["maxItems"] = r.maxItems
		}
	case reflect.Map:
		s = map[string]any{"type": "object", "additionalProperties": g.schemaOf(t.Elem(), noRules())}
	case reflect.Struct: // anonymous: a named struct is a $ref above
		panic(fmt.Sprintf("contracts: no JSON Schema mapping for the anonymous struct type %s: "+
			"declare it as a named type (type Item struct{ … }) and use that name in the field", t))
	default:
		panic(fmt.Sprintf("contracts: no JSON Schema mapping for Go type %s", t))
	}
	return s
}

func addBounds(s map[string]any, r tagRules) {
	if r.minimum != nil {
		s["minimum"] = *r.minimum
	}
	if r.maximum != nil {
		s["maximum"] = *r.maximum
	}
}

// nullable allows null next to the schema s.
func nullable(s map[string]any) map[string]any {
	if typ, ok := s["type"].(string); ok && len(s) == 1 {
		return map[string]any{"type": []string{typ, "null"}}
	}
	return map[string]any{"anyOf": []any{s, map[string]any{"type": "null"}}}
}

type tagRules struct {
	required, nonblank, object, nonull, null bool
	minLen, maxLen, minItems, maxItems       int
	minimum, maximum                         *float64
	enum                                     []string
	pattern, format                          string
	hasConst                                 bool
	constInt                                 int
}

// noRules is the rule set of an untagged type: -1 marks an unset bound (a zero
// tagRules would read as minItems=0, maxItems=0).
func noRules() tagRules { return tagRules{minLen: -1, maxLen: -1, minItems: -1, maxItems: -1} }

func parseRules(tag string) tagRules {
	r := noRules()
	if tag == "" {
		return r
	}
	for item := range strings.SplitSeq(tag, ",") {
		key, val, _ := strings.Cut(item, "=")
		switch key {
		case "required":
			r.required = true
		case "nonblank":
			r.nonblank = true
		case "object":
			r.object = true
		case "nonull":
			r.nonull = true
		case "null":
			r.null = true
		case "minLen":
			r.minLen = mustAtoi(val)
		case "maxLen":
			r.maxLen = mustAtoi(val)
		case "minItems":
			r.minItems = mustAtoi(val)
		case "maxItems":
			r.maxItems = mustAtoi(val)
		case "minimum":
			f := mustFloat(val)
			r.minimum = &f
		case "maximum":
			f := mustFloat(val)
			r.maximum = &f
		case "enum":
			r.enum = strings.Split(val, "|")
		case "pattern":
			r.pattern = val
		case "format":
			r.format = val
		case "const":
			r.hasConst, r.constInt = true, mustAtoi(val)
		default:
			panic("contracts: unknown sv tag rule " + strconv.Quote(key))
		}
	}
	return r
}

func mustAtoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		panic("contracts: bad integer in sv tag: " + strconv.Quote(s))
	}
	return n
}

func mustFloat(s string) float64 {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		panic("contracts: bad number in sv tag: " + strconv.Quote(s))
	}
	return f
}
