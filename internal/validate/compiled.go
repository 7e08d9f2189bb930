package validate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"reflect"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/supervaize/supervaizer-go/internal/wire"
)

// This file holds the compiled validator: the subset of JSON Schema (draft
// 2020-12) that the generated contracts schema and the derived input schemas
// use, compiled into a tree that validates a tape (internal/wire) without
// decoding it. It only answers "valid or not"; the problems of an invalid
// document always come from the reference validator
// (santhosh-tekuri/jsonschema), which stays the authority: a document the
// compiled validator rejects, or cannot judge, is validated again by the
// reference, and the differential tests (compiled_test.go) check that both
// give the same verdict over the corpus and under fuzzing.
//
// A schema using a keyword outside the subset does not compile; its model
// then always takes the reference path.

// Type bits of the "type" keyword.
const (
	typeNull uint8 = 1 << iota
	typeBoolean
	typeNumber
	typeInteger
	typeString
	typeArray
	typeObject
)

var typeBits = map[string]uint8{
	"null": typeNull, "boolean": typeBoolean, "number": typeNumber, "integer": typeInteger,
	"string": typeString, "array": typeArray, "object": typeObject,
}

// cschema is one compiled (sub)schema. Absent keywords have their zero
// value, except the length and item bounds, which are -1 when absent.
type cschema struct {
	always   *bool // a boolean schema
	onlyType bool  // asserts types and nothing else (set by finish)
	// Set by finish: the keywords present (kw*), and, for a schema that is
	// anyOf [{"type": "null"}, X] and nothing else, X: the schema accepts
	// null or what X accepts.
	kw     uint32
	nullOr *cschema

	types    uint8
	consts   []any // at most one value; nil when no const
	enum     []any
	hasEnum  bool
	format   *formatCheck
	ref      *cschema
	minimum  *big.Rat
	maximum  *big.Rat
	minInt   int64 // minimum as an int64, when minIntOK
	maxInt   int64
	minIntOK bool
	maxIntOK bool
	minLen   int
	maxLen   int
	pattern  *regexp.Regexp
	minItems int
	maxItems int
	unique   bool
	items    *cschema
	contains *cschema

	fields     map[string]fieldRule // properties and required names
	lookup     fieldTable           // fields, for lookups by a key's bytes
	order      []int32              // slots of lookup in the order a bound Go struct writes them (bindOrder)
	reqMask    uint64               // one bit per required name
	additional *cschema

	allOf, anyOf, oneOf []*cschema
	not                 *cschema
	ifS, thenS, elseS   *cschema
}

// fieldRule is what an object schema says about one key.
type fieldRule struct {
	prop *cschema // the "properties" entry, nil when none
	bit  uint64   // the key's bit in reqMask, 0 when not required
}

// fieldTable is an open-addressing hash table of an object schema's fields,
// built once at compile time: a lookup hashes a few bytes of the key and
// compares it with one or two names, where a map lookup hashes all of it.
type fieldTable struct {
	slots []fieldSlot // a power of two, at most half full
	mask  uint32
	lens  uint64 // bit n%64 set when a field's name is n bytes long
}

type fieldSlot struct {
	name string
	hash uint32 // fieldHash(name)
	pos  int32  // the slot's index in the schema's order, -1 when none
	used bool
	rule fieldRule
}

func fieldHash(key []byte) uint32 {
	n := uint32(len(key))
	h := n * 0x9E3779B1
	if n > 0 {
		h ^= uint32(key[0]) | uint32(key[n-1])<<8 | uint32(key[n/2])<<16 | uint32(key[n/3])<<24
	}
	h ^= h >> 15
	h *= 0x2C1B3C6D
	return h ^ h>>13
}

func newFieldTable(fields map[string]fieldRule) fieldTable {
	size := 4
	for size < 2*len(fields) {
		size *= 2
	}
	t := fieldTable{slots: make([]fieldSlot, size), mask: uint32(size - 1)}
	for name, rule := range fields {
		h := fieldHash([]byte(name))
		i := h & t.mask
		for t.slots[i].used {
			i = (i + 1) & t.mask
		}
		t.slots[i] = fieldSlot{name: name, hash: h, pos: -1, used: true, rule: rule}
		t.lens |= 1 << (len(name) % 64)
	}
	return t
}

// slot returns the slot of key, nil when the schema names no such field.
func (t *fieldTable) slot(key []byte) *fieldSlot {
	if i := t.index(key); i >= 0 {
		return &t.slots[i]
	}
	return nil
}

// index returns the index of key's slot, -1 when the schema names no such
// field.
func (t *fieldTable) index(key []byte) int {
	if t.lens&(1<<(len(key)%64)) == 0 {
		return -1 // no field has that length (nor any field at all)
	}
	h := fieldHash(key)
	for i := h & t.mask; t.slots[i].used; i = (i + 1) & t.mask {
		if sl := &t.slots[i]; sl.hash == h && sl.name == string(key) {
			return int(i)
		}
	}
	return -1
}

// orderWindow is how many fields past the expected one a key is looked for
// in the schema's order (fields a struct omits when empty) before hashing.
const orderWindow = 6

// next returns the rule of key, the n-th key of an object, and the index in
// order of the field expected after it. Objects written from the Go struct
// bound to the schema (bindOrder) have their keys in order, some omitted:
// key is first compared with the fields expected next, then looked up.
func (t *fieldTable) next(key []byte, order []int32, n int) (fieldRule, int) {
	for j, end := n, min(n+orderWindow, len(order)); j < end; j++ {
		if sl := &t.slots[order[j]]; sl.name == string(key) {
			return sl.rule, j + 1
		}
	}
	sl := t.slot(key)
	if sl == nil {
		return fieldRule{}, n
	}
	if sl.pos >= 0 {
		n = int(sl.pos) + 1
	}
	return sl.rule, n
}

// formatCheck asserts one format. "nonblank" (ours) is checked natively;
// the others are delegated to the reference implementation, compiled as
// the one-keyword schema {"format": name}.
type formatCheck struct {
	name string
	ref  *jsonschema.Schema // nil for nonblank
	// plain accepts, without the reference, the strings of a subset of the
	// format (plainDateTime for "date-time"); nil for other formats.
	plain func([]byte) bool
}

// annotations are keywords that never affect validity.
var annotations = map[string]bool{
	"$schema": true, "$defs": true, "$comment": true, "title": true, "description": true,
	"default": true, "examples": true, "readOnly": true, "writeOnly": true, "deprecated": true,
}

// schemaCompiler compiles the documents of one schema resource.
type schemaCompiler struct {
	root    any
	byPtr   map[string]*cschema
	formats map[string]*formatCheck
}

// compileFast compiles the schema at each JSON Pointer of ptrs ("" for the
// root) of root, a schema document decoded by jsonschema.UnmarshalJSON. A
// pointer whose schema does not compile gets nil and its error.
func compileFast(root any, ptrs ...string) ([]*cschema, []error) {
	out := make([]*cschema, len(ptrs))
	errs := make([]error, len(ptrs))
	for i, p := range ptrs {
		// A fresh compiler each time: a failed compile leaves incomplete
		// schemas in the cache.
		c := &schemaCompiler{root: root, byPtr: map[string]*cschema{}, formats: map[string]*formatCheck{}}
		out[i], errs[i] = c.at(p)
		if errs[i] == nil {
			out[i] = finish(out[i], map[*cschema]bool{})
		}
	}
	return out, errs
}

// The keywords of a compiled schema, as cschema.kw bits.
const (
	kwAlways uint32 = 1 << iota
	kwTypes
	kwConst
	kwEnum
	kwFormat
	kwRef
	kwNumber // minimum, maximum
	kwString // minLength, maxLength, pattern
	kwArray  // minItems, maxItems, uniqueItems, items, contains
	kwObject // properties, required, additionalProperties
	kwAllOf
	kwAnyOf
	kwOneOf
	kwNot
	kwIf // if, then, else

	// kwValue are the keywords checked on the value itself before its
	// kind's keywords; kwApplicators those that apply subschemas to it.
	kwValue       = kwConst | kwEnum | kwFormat | kwRef
	kwApplicators = kwAllOf | kwAnyOf | kwOneOf | kwNot | kwIf
)

// keywords returns the keywords s has.
func (s *cschema) keywords() uint32 {
	var kw uint32
	set := func(bit uint32, present bool) {
		if present {
			kw |= bit
		}
	}
	set(kwAlways, s.always != nil)
	set(kwTypes, s.types != 0)
	set(kwConst, s.consts != nil)
	set(kwEnum, s.hasEnum)
	set(kwFormat, s.format != nil)
	set(kwRef, s.ref != nil)
	set(kwNumber, s.minimum != nil || s.maximum != nil)
	set(kwString, s.minLen >= 0 || s.maxLen >= 0 || s.pattern != nil)
	set(kwArray, s.minItems >= 0 || s.maxItems >= 0 || s.unique || s.items != nil || s.contains != nil)
	set(kwObject, s.fields != nil || s.additional != nil)
	set(kwAllOf, s.allOf != nil)
	set(kwAnyOf, s.anyOf != nil)
	set(kwOneOf, s.oneOf != nil)
	set(kwNot, s.not != nil)
	set(kwIf, s.ifS != nil || s.thenS != nil || s.elseS != nil)
	return kw
}

// pureRef reports whether s is {"$ref": ...} alone: validating against s is
// validating against s.ref.
func (s *cschema) pureRef() bool { return s.keywords() == kwRef }

// finish prepares a compiled schema for checking, once every reference is
// resolved: each subschema that is a $ref alone is replaced by what it
// refers to (a chain of them by its end), and the subschemas that assert a
// type only are marked. It returns what replaces s.
func finish(s *cschema, seen map[*cschema]bool) *cschema {
	for n := 0; s != nil && s.pureRef() && n < 64; n++ { // a cycle of bare refs keeps its last ref
		s = s.ref
	}
	if s == nil || seen[s] {
		return s
	}
	seen[s] = true
	s.kw = s.keywords()
	s.onlyType = s.kw == kwTypes
	for _, p := range []**cschema{&s.ref, &s.items, &s.contains, &s.additional, &s.not, &s.ifS, &s.thenS, &s.elseS} {
		*p = finish(*p, seen)
	}
	for _, list := range [][]*cschema{s.allOf, s.anyOf, s.oneOf} {
		for i := range list {
			list[i] = finish(list[i], seen)
		}
	}
	for name, f := range s.fields {
		f.prop = finish(f.prop, seen)
		s.fields[name] = f
	}
	if s.fields != nil {
		s.lookup = newFieldTable(s.fields)
	}
	if s.kw == kwAnyOf && len(s.anyOf) == 2 {
		isNull := func(x *cschema) bool { return x != nil && x.onlyType && x.types == typeNull }
		switch {
		case isNull(s.anyOf[0]) && s.anyOf[1] != nil:
			s.nullOr = s.anyOf[1]
		case isNull(s.anyOf[1]) && s.anyOf[0] != nil:
			s.nullOr = s.anyOf[0]
		}
	}
	return s
}

// at returns the compiled schema at a JSON Pointer of the root document.
func (c *schemaCompiler) at(ptr string) (*cschema, error) {
	if s, ok := c.byPtr[ptr]; ok {
		return s, nil
	}
	var node any = c.root
	if ptr != "" {
		if !strings.HasPrefix(ptr, "/") || strings.Contains(ptr, "%") {
			return nil, fmt.Errorf("unsupported JSON Pointer %q", ptr)
		}
		for _, tok := range strings.Split(ptr[1:], "/") {
			tok = wire.UnescapePointerToken(tok)
			m, ok := node.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("JSON Pointer %q does not resolve", ptr)
			}
			if node, ok = m[tok]; !ok {
				return nil, fmt.Errorf("JSON Pointer %q does not resolve", ptr)
			}
		}
	}
	s := &cschema{}
	c.byPtr[ptr] = s // before compiling: a schema may refer to itself
	if err := c.fill(s, node, ptr == ""); err != nil {
		return nil, err
	}
	return s, nil
}

func (c *schemaCompiler) compile(v any) (*cschema, error) {
	s := &cschema{}
	return s, c.fill(s, v, false)
}

func (c *schemaCompiler) list(v any) ([]*cschema, error) {
	items, ok := v.([]any)
	if !ok || len(items) == 0 {
		return nil, errors.New("expected a non-empty array of schemas")
	}
	out := make([]*cschema, len(items))
	for i, it := range items {
		var err error
		if out[i], err = c.compile(it); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func nonNegInt(v any) (int, error) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, errors.New("expected a number")
	}
	i, err := n.Int64()
	if err != nil || i < 0 || i > 1<<31 {
		return 0, fmt.Errorf("expected a small non-negative integer, got %s", n)
	}
	return int(i), nil
}

// fill compiles the schema value v into s.
func (c *schemaCompiler) fill(s *cschema, v any, root bool) error {
	s.minLen, s.maxLen, s.minItems, s.maxItems = -1, -1, -1, -1
	if b, ok := v.(bool); ok {
		s.always = &b
		return nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("a schema must be an object or a boolean, got %T", v)
	}
	var props map[string]any
	var required []any
	for k, val := range m {
		var err error
		switch k {
		case "$id":
			if !root {
				return errors.New("$id below the root is not supported")
			}
		case "type":
			switch t := val.(type) {
			case string:
				if s.types = typeBits[t]; s.types == 0 {
					return fmt.Errorf("unknown type %q", t)
				}
			case []any:
				for _, x := range t {
					name, _ := x.(string)
					bit := typeBits[name]
					if bit == 0 {
						return fmt.Errorf("unknown type %v", x)
					}
					s.types |= bit
				}
			default:
				return errors.New("type must be a string or an array")
			}
		case "const":
			s.consts = []any{val}
		case "enum":
			vals, ok := val.([]any)
			if !ok {
				return errors.New("enum must be an array")
			}
			s.enum, s.hasEnum = vals, true
		case "format":
			name, ok := val.(string)
			if !ok {
				return errors.New("format must be a string")
			}
			if s.format, err = c.formatCheck(name); err != nil {
				return err
			}
		case "$ref":
			ref, ok := val.(string)
			if !ok || !strings.HasPrefix(ref, "#") {
				return fmt.Errorf("unsupported $ref %v", val)
			}
			if s.ref, err = c.at(ref[1:]); err != nil {
				return err
			}
		case "minimum", "maximum":
			n, ok := val.(json.Number)
			if !ok {
				return fmt.Errorf("%s must be a number", k)
			}
			r, ok := new(big.Rat).SetString(string(n))
			if !ok {
				return fmt.Errorf("%s %s is out of range", k, n)
			}
			small := r.IsInt() && r.Num().IsInt64()
			if k == "minimum" {
				s.minimum, s.minIntOK = r, small
				if small {
					s.minInt = r.Num().Int64()
				}
			} else {
				s.maximum, s.maxIntOK = r, small
				if small {
					s.maxInt = r.Num().Int64()
				}
			}
		case "minLength":
			s.minLen, err = nonNegInt(val)
		case "maxLength":
			s.maxLen, err = nonNegInt(val)
		case "minItems":
			s.minItems, err = nonNegInt(val)
		case "maxItems":
			s.maxItems, err = nonNegInt(val)
		case "pattern":
			p, ok := val.(string)
			if !ok {
				return errors.New("pattern must be a string")
			}
			// The reference's default regexp engine is regexp.Compile.
			if s.pattern, err = regexp.Compile(p); err != nil {
				return err
			}
		case "uniqueItems":
			b, ok := val.(bool)
			if !ok {
				return errors.New("uniqueItems must be a boolean")
			}
			s.unique = b
		case "items":
			s.items, err = c.compile(val)
		case "contains":
			s.contains, err = c.compile(val)
		case "properties":
			if props, ok = val.(map[string]any); !ok {
				return errors.New("properties must be an object")
			}
		case "required":
			if required, ok = val.([]any); !ok {
				return errors.New("required must be an array")
			}
		case "additionalProperties":
			s.additional, err = c.compile(val)
		case "allOf":
			s.allOf, err = c.list(val)
		case "anyOf":
			s.anyOf, err = c.list(val)
		case "oneOf":
			s.oneOf, err = c.list(val)
		case "not":
			s.not, err = c.compile(val)
		case "if":
			s.ifS, err = c.compile(val)
		case "then":
			s.thenS, err = c.compile(val)
		case "else":
			s.elseS, err = c.compile(val)
		default:
			if !annotations[k] {
				return fmt.Errorf("unsupported keyword %q", k)
			}
		}
		if err != nil {
			return fmt.Errorf("%s: %w", k, err)
		}
	}
	if len(props) > 0 || len(required) > 0 {
		if len(required) > 64 {
			return errors.New("more than 64 required properties")
		}
		s.fields = make(map[string]fieldRule, len(props)+len(required))
		for name, p := range props {
			sub, err := c.compile(p)
			if err != nil {
				return fmt.Errorf("properties/%s: %w", name, err)
			}
			s.fields[name] = fieldRule{prop: sub}
		}
		for i, r := range required {
			name, ok := r.(string)
			if !ok {
				return errors.New("required must list strings")
			}
			f := s.fields[name]
			if f.bit != 0 {
				continue // listed twice
			}
			f.bit = 1 << i
			s.reqMask |= f.bit
			s.fields[name] = f
		}
	}
	return nil
}

func (c *schemaCompiler) formatCheck(name string) (*formatCheck, error) {
	if f, ok := c.formats[name]; ok {
		return f, nil
	}
	f := &formatCheck{name: name}
	if name == "date-time" {
		f.plain = plainDateTime
	}
	if name != "nonblank" {
		doc, err := json.Marshal(map[string]any{"format": name})
		if err != nil {
			return nil, err
		}
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
		if err != nil {
			return nil, err
		}
		comp := newCompiler()
		const id = "https://supervaize.com/schemas/supervaizer/v2/format.schema.json"
		if err := comp.AddResource(id, inst); err != nil {
			return nil, err
		}
		if f.ref, err = comp.Compile(id); err != nil {
			return nil, err
		}
	}
	c.formats[name] = f
	return f, nil
}

// maxCheckDepth bounds the recursion of one validation (schemas that refer
// to themselves without consuming the instance).
const maxCheckDepth = 2048

// tapeCheck validates one tape. unsure records that some step could not be
// decided here; the verdict is then left to the reference validator.
type tapeCheck struct {
	t      *wire.Tape
	unsure bool
	depth  int
}

// check validates the document on t against s. sure is false when the
// compiled validator cannot decide.
func (s *cschema) check(t *wire.Tape) (valid, sure bool) { return s.checkAt(t, 0) }

// checkAt validates the value at node i of t against s.
func (s *cschema) checkAt(t *wire.Tape, i int32) (valid, sure bool) {
	c := tapeCheck{t: t}
	valid = c.valid(s, i)
	return valid, !c.unsure
}

func (c *tapeCheck) giveUp() bool {
	c.unsure = true
	return false
}

// maxNullOrChain bounds a chain of nullable unions followed without
// recursion: a longer one is a cycle.
const maxNullOrChain = 64

func (c *tapeCheck) valid(s *cschema, i int32) bool {
	for n := 0; s.nullOr != nil; n++ {
		if c.t.Nodes[i].Kind == wire.Null {
			return true
		}
		if n == maxNullOrChain {
			return c.giveUp() // unions of null with each other, in a cycle
		}
		s = s.nullOr
	}
	if s.onlyType {
		return c.typeOK(s.types, i)
	}
	if s.always != nil {
		return *s.always
	}
	if c.depth >= maxCheckDepth {
		return c.giveUp()
	}
	c.depth++
	ok := c.validObject(s, i)
	c.depth--
	return ok
}

// validObject applies the keywords of a schema object.
func (c *tapeCheck) validObject(s *cschema, i int32) bool {
	kw := s.kw
	if kw&kwTypes != 0 && !c.typeOK(s.types, i) {
		return false
	}
	if kw&kwValue != 0 && !c.valueKeywords(s, i) {
		return false
	}
	switch c.t.Nodes[i].Kind {
	case wire.Object:
		if kw&kwObject != 0 && !c.object(s, i) {
			return false
		}
	case wire.Array:
		if kw&kwArray != 0 && !c.array(s, i) {
			return false
		}
	case wire.String:
		if kw&kwString != 0 && !c.string(s, i) {
			return false
		}
	case wire.Number:
		if kw&kwNumber != 0 && !c.number(s, i) {
			return false
		}
	}
	return kw&kwApplicators == 0 || c.applicators(s, i)
}

// valueKeywords applies const, enum, format and $ref.
func (c *tapeCheck) valueKeywords(s *cschema, i int32) bool {
	for _, want := range s.consts {
		eq, ok := equalValue(c.t, i, want)
		if !ok {
			return c.giveUp()
		}
		if !eq {
			return false
		}
	}
	if s.hasEnum {
		matched := false
		for _, want := range s.enum {
			eq, ok := equalValue(c.t, i, want)
			if !ok {
				return c.giveUp()
			}
			if eq {
				matched = true
				break
			}
		}
		if !matched {
			return false
		}
	}
	if s.format != nil && !c.formatOK(s.format, i) {
		return false
	}
	return s.ref == nil || c.valid(s.ref, i)
}

// applicators applies allOf, anyOf, oneOf, not and if/then/else.
func (c *tapeCheck) applicators(s *cschema, i int32) bool {
	for _, sub := range s.allOf {
		if !c.valid(sub, i) {
			return false
		}
	}
	if len(s.anyOf) > 0 {
		matched := false
		for _, sub := range s.anyOf {
			if c.valid(sub, i) {
				matched = true
				break
			}
		}
		if !matched {
			return false
		}
	}
	if len(s.oneOf) > 0 {
		matched := 0
		for _, sub := range s.oneOf {
			if c.valid(sub, i) {
				if matched++; matched > 1 {
					return false
				}
			}
		}
		if matched != 1 {
			return false
		}
	}
	if s.not != nil && c.valid(s.not, i) {
		return false
	}
	if s.ifS != nil {
		if c.valid(s.ifS, i) {
			if s.thenS != nil && !c.valid(s.thenS, i) {
				return false
			}
		} else if s.elseS != nil && !c.valid(s.elseS, i) {
			return false
		}
	}
	return true
}

func (c *tapeCheck) typeOK(types uint8, i int32) bool {
	switch c.t.Nodes[i].Kind {
	case wire.Null:
		return types&typeNull != 0
	case wire.False, wire.True:
		return types&typeBoolean != 0
	case wire.String:
		return types&typeString != 0
	case wire.Array:
		return types&typeArray != 0
	case wire.Object:
		return types&typeObject != 0
	default: // number
		if types&typeNumber != 0 {
			return true
		}
		if types&typeInteger == 0 {
			return false
		}
		integer, ok := c.t.IsInteger(i)
		if !ok {
			return c.giveUp()
		}
		return integer
	}
}

func (c *tapeCheck) formatOK(f *formatCheck, i int32) bool {
	nd := c.t.Nodes[i]
	if f.ref == nil { // nonblank: strings only
		return nd.Kind != wire.String || len(bytes.TrimSpace(c.t.Str(i))) > 0
	}
	var v any
	if nd.Kind == wire.String {
		str := c.t.Str(i)
		if f.plain != nil && f.plain(str) {
			return true
		}
		v = string(str)
		// The schema {"format": name} is its format check: call it directly
		// rather than through a whole schema validation.
		if fm := f.ref.Format; fm != nil && fm.Name != "regex" {
			return fm.Validate(v) == nil
		}
	} else {
		var err error
		if v, err = jsonschema.UnmarshalJSON(bytes.NewReader(c.t.Raw(i))); err != nil {
			return c.giveUp()
		}
	}
	return f.ref.Validate(v) == nil
}

func (c *tapeCheck) object(s *cschema, i int32) bool {
	if s.fields == nil && s.additional == nil {
		return true
	}
	nodes, src := c.t.Nodes, c.t.Src // the tape does not change during a check
	end := nodes[i].Next
	var seen uint64
	next := 0
	for m := i + 1; m < end; m = nodes[m+1].Next {
		k := &nodes[m]
		var f fieldRule
		f, next = s.lookup.next(src[k.Start+1:k.End-1], s.order, next) // the key, as Tape.Key
		seen |= f.bit
		switch {
		case f.prop != nil:
			if !c.valid(f.prop, m+1) {
				return false
			}
		case s.additional != nil:
			if !c.valid(s.additional, m+1) {
				return false
			}
		}
	}
	return seen&s.reqMask == s.reqMask
}

// maxUniqueScan is the array length up to which uniqueItems is checked
// here; longer arrays go to the reference.
const maxUniqueScan = 64

func (c *tapeCheck) array(s *cschema, i int32) bool {
	t := c.t
	nd := t.Nodes[i]
	n := int(nd.N)
	if s.minItems >= 0 && n < s.minItems || s.maxItems >= 0 && n > s.maxItems {
		return false
	}
	if s.unique && n > 1 {
		if n > maxUniqueScan {
			return c.giveUp()
		}
		var idx [maxUniqueScan]int32
		k := 0
		for e := i + 1; e < nd.Next; e = t.Nodes[e].Next {
			for _, prev := range idx[:k] {
				eq, ok := t.Equal(prev, e)
				if !ok {
					return c.giveUp()
				}
				if eq {
					return false
				}
			}
			idx[k] = e
			k++
		}
	}
	if s.items != nil {
		for e := i + 1; e < nd.Next; e = t.Nodes[e].Next {
			if !c.valid(s.items, e) {
				return false
			}
		}
	}
	if s.contains != nil {
		found := false
		for e := i + 1; e < nd.Next; e = t.Nodes[e].Next {
			if c.valid(s.contains, e) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func (c *tapeCheck) string(s *cschema, i int32) bool {
	if s.minLen < 0 && s.maxLen < 0 && s.pattern == nil {
		return true
	}
	str := c.t.Str(i)
	if s.minLen >= 0 || s.maxLen >= 0 {
		n := utf8.RuneCount(str)
		if s.minLen >= 0 && n < s.minLen || s.maxLen >= 0 && n > s.maxLen {
			return false
		}
	}
	return s.pattern == nil || s.pattern.Match(str)
}

func (c *tapeCheck) number(s *cschema, i int32) bool {
	if s.minimum == nil && s.maximum == nil {
		return true
	}
	if v, ok := c.t.SmallInt(i); ok && (s.minimum == nil || s.minIntOK) && (s.maximum == nil || s.maxIntOK) {
		return (s.minimum == nil || v >= s.minInt) && (s.maximum == nil || v <= s.maxInt)
	}
	r := c.t.Rat(i)
	if r == nil {
		return c.giveUp()
	}
	if s.minimum != nil && r.Cmp(s.minimum) < 0 {
		return false
	}
	return s.maximum == nil || r.Cmp(s.maximum) <= 0
}

// equalValue compares the value at i with a value of the schema document
// (decoded by jsonschema.UnmarshalJSON: numbers are json.Number). ok is
// false when a number cannot be compared.
func equalValue(t *wire.Tape, i int32, want any) (eq, ok bool) {
	nd := t.Nodes[i]
	switch w := want.(type) {
	case nil:
		return nd.Kind == wire.Null, true
	case bool:
		return nd.Kind == wire.True && w || nd.Kind == wire.False && !w, true
	case string:
		return nd.Kind == wire.String && string(t.Str(i)) == w, true
	case json.Number:
		if nd.Kind != wire.Number {
			return false, true
		}
		if string(t.Raw(i)) == string(w) {
			return true, true
		}
		x := t.Rat(i)
		y, yok := new(big.Rat).SetString(string(w))
		if x == nil || !yok {
			return false, false
		}
		return x.Cmp(y) == 0, true
	case []any:
		if nd.Kind != wire.Array || int(nd.N) != len(w) {
			return false, true
		}
		k := 0
		for e := i + 1; e < nd.Next; e = t.Nodes[e].Next {
			if eq, ok := equalValue(t, e, w[k]); !eq || !ok {
				return eq, ok
			}
			k++
		}
		return true, true
	case map[string]any:
		if nd.Kind != wire.Object || int(nd.N) != len(w) {
			return false, true
		}
		for m := i + 1; m < nd.Next; m = t.Nodes[m+1].Next {
			v, found := w[string(t.Key(m))]
			if !found {
				return false, true
			}
			if eq, ok := equalValue(t, m+1, v); !eq || !ok {
				return eq, ok
			}
		}
		return true, true
	default:
		return false, false
	}
}

// plainDateTime reports whether s is a date-time in the plain RFC 3339 form
// YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM), with a calendar date that
// exists and seconds below 60. Every such string passes the reference
// "date-time" check, so it is accepted without the reference's conversions
// and allocations; any other string (lower-case t or z, a leap second, an
// out-of-range field) is left to the reference, which decides.
func plainDateTime(s []byte) bool {
	if len(s) < 20 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' {
		return false
	}
	year, ok1 := digits(s[0:4])
	month, ok2 := digits(s[5:7])
	day, ok3 := digits(s[8:10])
	hour, ok4 := digits(s[11:13])
	minute, ok5 := digits(s[14:16])
	sec, ok6 := digits(s[17:19])
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) || month < 1 || month > 12 || day < 1 ||
		day > daysIn(month, year) || hour > 23 || minute > 59 || sec > 59 {
		return false
	}
	rest := s[19:]
	if len(rest) > 0 && rest[0] == '.' {
		n := 1
		for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
			n++
		}
		if n == 1 {
			return false
		}
		rest = rest[n:]
	}
	if len(rest) == 1 {
		return rest[0] == 'Z'
	}
	if len(rest) != 6 || (rest[0] != '+' && rest[0] != '-') || rest[3] != ':' {
		return false
	}
	zh, okh := digits(rest[1:3])
	zm, okm := digits(rest[4:6])
	return okh && okm && zh <= 23 && zm <= 59
}

// digits returns the value of the ASCII decimal digits b, false when b holds
// anything else.
func digits(b []byte) (int, bool) {
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// daysIn returns the number of days of month in the proleptic Gregorian year.
func daysIn(month, year int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// bindOrder records, in each object schema under s that the Go type t is
// encoded against, the order in which t's fields write their keys: the
// validator then finds the rule of each key of such an object by comparing
// it with the field expected next instead of hashing it. The first type bound
// to a schema sets its order. The order only predicts; a key out of order is
// looked up as any other.
func bindOrder(t reflect.Type, s *cschema, seen map[bindKey]bool) {
	if s == nil || t == nil {
		return
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	k := bindKey{t, s}
	if seen[k] {
		return
	}
	seen[k] = true
	for _, list := range [][]*cschema{s.allOf, s.anyOf, s.oneOf} {
		for _, sub := range list {
			bindOrder(t, sub, seen)
		}
	}
	for _, sub := range []*cschema{s.ref, s.not, s.ifS, s.thenS, s.elseS} {
		bindOrder(t, sub, seen)
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		bindOrder(t.Elem(), s.items, seen)
	case reflect.Struct:
		if s.fields == nil || s.order != nil {
			return
		}
		var order []int32
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if !f.IsExported() || f.Anonymous || name == "" || name == "-" {
				continue
			}
			j := s.lookup.index([]byte(name))
			if j < 0 || s.lookup.slots[j].pos >= 0 {
				continue
			}
			s.lookup.slots[j].pos = int32(len(order))
			order = append(order, int32(j))
			bindOrder(f.Type, s.lookup.slots[j].rule.prop, seen)
		}
		s.order = order
	}
}

type bindKey struct {
	t reflect.Type
	s *cschema
}

// newCompiler returns a reference compiler that asserts formats, including
// "nonblank" (as package contracts registers it).
func newCompiler() *jsonschema.Compiler {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	c.RegisterFormat(&jsonschema.Format{Name: "nonblank", Validate: func(v any) error {
		if s, ok := v.(string); ok && strings.TrimSpace(s) == "" {
			return errors.New("blank")
		}
		return nil
	}})
	return c
}
