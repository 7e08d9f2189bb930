package contracts

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// Model names a wire model the Validator validates.
type Model string

// The models with a root schema.
const (
	ModelRegistration      Model = "Registration"
	ModelActionRequest     Model = "ActionRequest"
	ModelSurfaceRequest    Model = "SurfaceRequest"
	ModelActionResult      Model = "ActionResult"
	ModelSurfaceResult     Model = "SurfaceResult"
	ModelJobState          Model = "JobState"
	ModelSetupPlan         Model = "SetupPlan"
	ModelField             Model = "Field"
	ModelCostEstimate      Model = "CostEstimate"
	ModelIntroduction      Model = "Introduction"
	ModelFullDescription   Model = "FullDescription"
	ModelBillingCatalog    Model = "BillingCatalog"
	ModelContextAssignment Model = "ContextAssignment"
	ModelVerifiedContext   Model = "VerifiedWorkspaceContext"
)

// modelTypes maps each model to its Go declaration: the models below and
// the typed documents of the registry (documents.go).
var modelTypes = func() map[Model]reflect.Type {
	ts := map[Model]reflect.Type{
		ModelRegistration:      reflect.TypeFor[Registration](),
		ModelActionRequest:     reflect.TypeFor[ActionRequest](),
		ModelSurfaceRequest:    reflect.TypeFor[SurfaceRequest](),
		ModelActionResult:      reflect.TypeFor[ActionResult](),
		ModelSurfaceResult:     reflect.TypeFor[SurfaceResult](),
		ModelJobState:          reflect.TypeFor[JobState](),
		ModelSetupPlan:         reflect.TypeFor[SetupPlan](),
		ModelField:             reflect.TypeFor[Field](),
		ModelCostEstimate:      reflect.TypeFor[CostEstimate](),
		ModelIntroduction:      reflect.TypeFor[Introduction](),
		ModelFullDescription:   reflect.TypeFor[FullDescription](),
		ModelBillingCatalog:    reflect.TypeFor[BillingCatalog](),
		ModelContextAssignment: reflect.TypeFor[ContextAssignment](),
		ModelVerifiedContext:   reflect.TypeFor[VerifiedWorkspaceContext](),
	}
	for _, d := range documents {
		ts[d.model] = d.goType
	}
	return ts
}()

// New returns a pointer to a new zero value of the Go type of m (the value
// [Validator.Decode] fills), or nil when m is not a model.
func (m Model) New() any {
	t, ok := modelTypes[m]
	if !ok {
		return nil
	}
	return reflect.New(t).Interface()
}

// Models lists every model with a root schema, sorted by name.
func Models() []Model {
	ms := make([]Model, 0, len(modelTypes))
	for m := range modelTypes {
		ms = append(ms, m)
	}
	slices.Sort(ms)
	return ms
}

// SchemaID is the $id of the published schema document.
const SchemaID = "https://supervaize.com/schemas/supervaizer/v2/contracts.schema.json"

var (
	schemaOnce sync.Once
	schemaDoc  map[string]any
	schemaJSON []byte
)

func buildSchema() {
	g := newSchemaGen()
	for _, m := range Models() {
		g.ref(modelTypes[m])
	}
	defs := make(map[string]any, len(g.defs))
	for name, d := range g.defs {
		defs[name] = d
	}
	schemaDoc = map[string]any{
		"$schema":     "https://json-schema.org/draft/2020-12/schema",
		"$id":         SchemaID,
		"title":       "Supervaizer v2 wire contracts",
		"description": "Generated from the Go declarations of github.com/supervaize/supervaizer-go/contracts. Do not edit.",
		"$defs":       defs,
	}
	b, err := json.MarshalIndent(schemaDoc, "", "  ")
	if err != nil {
		panic("contracts: marshal schema: " + err.Error())
	}
	schemaJSON = append(b, '\n')
}

// Schema returns the JSON Schema (draft 2020-12) of every wire model, generated
// from the Go declarations: one document whose $defs hold each model. It is the
// schema the Validator compiles, and the file published as
// contracts/schema/supervaizer-v2.schema.json.
func Schema() []byte {
	schemaOnce.Do(buildSchema)
	return bytes.Clone(schemaJSON)
}

// Problem is one validation failure: where (Loc, and Path as a JSON Pointer),
// which rule (Type, the JSON Schema keyword or the name of a Go rule) and a
// one-line message. It never contains the rejected value. Its JSON form is the
// entry of data.errors in JSON-RPC errors.
type Problem struct {
	Loc  []any  `json:"loc"`
	Msg  string `json:"msg"`
	Type string `json:"type"`
	Path string `json:"path"`
}

func (p Problem) String() string {
	path := p.Path
	if path == "" {
		path = "/"
	}
	return path + ": " + p.Msg + " (" + p.Type + ")"
}

// ValidationError lists every problem found in a document of one model.
type ValidationError struct {
	Model    Model
	Problems []Problem
}

// Error returns one line per problem.
func (e *ValidationError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "invalid %s:", e.Model)
	for _, p := range e.Problems {
		b.WriteString("\n  ")
		b.WriteString(p.String())
	}
	return b.String()
}

// Validator validates raw JSON documents against the contracts: the generated
// JSON Schema of the model, then the rules JSON Schema cannot express (unique
// ids, min <= max, cross references), checked in Go on the decoded value. It is
// safe for concurrent use.
type Validator struct {
	schemas map[Model]*jsonschema.Schema
	sure    func(m Model, raw []byte) bool // see WithSchemaCheck; nil: the reference alone
}

// WithSchemaCheck returns a Validator that asks check, before the reference
// validator, whether raw is a valid document of m against [Schema]. check
// returns true only when it is sure of it; otherwise the reference decides,
// and it alone reports problems. The SDK plugs its compiled validator in
// here, for the sub-documents the Go rules validate (typed setup plans). v
// itself is unchanged.
func (v *Validator) WithSchemaCheck(check func(m Model, raw []byte) bool) *Validator {
	return &Validator{schemas: v.schemas, sure: check}
}

var (
	defaultOnce      sync.Once
	defaultValidator *Validator
	defaultErr       error
)

// DefaultValidator returns the shared Validator, compiled once.
func DefaultValidator() *Validator {
	defaultOnce.Do(func() { defaultValidator, defaultErr = NewValidator() })
	if defaultErr != nil {
		// The schema is generated from this package's own declarations; a failure
		// is a bug in this package, not an input error.
		panic(defaultErr)
	}
	return defaultValidator
}

// NewValidator compiles the schema of every model.
func NewValidator() (*Validator, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(Schema()))
	if err != nil {
		return nil, fmt.Errorf("contracts: decode schema: %w", err)
	}
	c := newCompiler()
	if err := c.AddResource(SchemaID, doc); err != nil {
		return nil, fmt.Errorf("contracts: add schema: %w", err)
	}
	v := &Validator{schemas: map[Model]*jsonschema.Schema{}}
	for m := range modelTypes {
		s, err := c.Compile(SchemaID + "#/$defs/" + string(m))
		if err != nil {
			return nil, fmt.Errorf("contracts: compile %s: %w", m, err)
		}
		v.schemas[m] = s
	}
	return v, nil
}

// newCompiler returns a compiler that asserts formats, including "nonblank".
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

// Validate validates raw, a JSON document of model m. It returns a
// *ValidationError listing every problem, or an error when raw is not JSON.
func (v *Validator) Validate(m Model, raw []byte) error {
	_, err := v.decode(m, raw)
	return err
}

// Decode validates raw like Validate and decodes it into dst, a pointer to the
// model's Go type.
func (v *Validator) Decode(m Model, raw []byte, dst any) error {
	if err := v.checkDst(m, dst); err != nil {
		return err
	}
	val, err := v.decode(m, raw)
	if err != nil {
		return err
	}
	reflect.ValueOf(dst).Elem().Set(reflect.ValueOf(val).Elem())
	return nil
}

// checkDst checks that dst is a pointer to the Go type of m.
func (v *Validator) checkDst(m Model, dst any) error {
	t, ok := modelTypes[m]
	if !ok {
		return fmt.Errorf("contracts: unknown model %q", m)
	}
	if reflect.TypeOf(dst) != reflect.PointerTo(t) {
		return fmt.Errorf("contracts: Decode %s needs a *%s, got %T", m, t.Name(), dst)
	}
	return nil
}

// ValidateValue marshals value (the model's Go type, a pointer to it, or any
// value that marshals to the model, such as a map) with Marshal and
// validates the JSON. It returns the JSON that was validated.
func (v *Validator) ValidateValue(m Model, value any) ([]byte, error) {
	raw, err := Marshal(value)
	if err != nil {
		return nil, fmt.Errorf("contracts: marshal %s: %w", m, err)
	}
	if err := v.validateSchema(m, raw); err != nil {
		return nil, err
	}
	if err := v.checkEncoded(m, value, raw); err != nil {
		return nil, err
	}
	return raw, nil
}

// Check runs the rules of model m that JSON Schema cannot express (unique
// ids, min <= max, cross references) on value, a pointer to the model's Go
// type, and returns a *ValidationError listing the problems. It is the second
// half of [Validator.Validate], for a caller that validated the JSON of value
// against [Schema] with another implementation.
func (v *Validator) Check(m Model, value any) error {
	if err := v.checkDst(m, value); err != nil {
		return err
	}
	if r, ok := value.(*ActionResult); ok {
		c := getChecks(v)
		r.check(c, c.root())
		problems := c.problems
		putChecks(c)
		if len(problems) > 0 {
			return &ValidationError{Model: m, Problems: problems}
		}
		return nil
	}
	if ps := checkValue(v, value); len(ps) > 0 {
		return &ValidationError{Model: m, Problems: ps}
	}
	return nil
}

// checkEncoded runs the Go rules of m on value, whose JSON raw passed the
// schema: on the typed value when it is the model's Go type (a typed setup
// plan is only visible there), else on raw decoded.
func (v *Validator) checkEncoded(m Model, value any, raw []byte) error {
	typed := reflect.ValueOf(value)
	if typed.Kind() == reflect.Pointer && !typed.IsNil() {
		typed = typed.Elem()
	}
	if typed.IsValid() && typed.Type() == modelTypes[m] {
		if !typed.CanAddr() { // a value, not a pointer: checks take a pointer
			p := reflect.New(typed.Type())
			p.Elem().Set(typed)
			typed = p.Elem()
		}
		return v.Check(m, typed.Addr().Interface())
	}
	_, err := v.decodeChecked(m, raw)
	return err
}

// decode validates raw with the reference validator and decodes it.
func (v *Validator) decode(m Model, raw []byte) (any, error) {
	if err := v.validateSchema(m, raw); err != nil {
		return nil, err
	}
	return v.decodeChecked(m, raw)
}

// decodeChecked decodes raw, which passed the schema of m, and runs the Go rules.
func (v *Validator) decodeChecked(m Model, raw []byte) (any, error) {
	val := reflect.New(modelTypes[m]).Interface()
	if err := Unmarshal(raw, val); err != nil {
		return nil, &ValidationError{Model: m, Problems: []Problem{decodeProblem(raw, err)}}
	}
	if ps := checkValue(v, val); len(ps) > 0 {
		return nil, &ValidationError{Model: m, Problems: ps}
	}
	return val, nil
}

// validateSchema validates raw against the schema of m (the schema check of
// WithSchemaCheck first, when it is sure) and reports every problem the
// reference validator finds.
func (v *Validator) validateSchema(m Model, raw []byte) error {
	if v.sure != nil && v.sure(m, raw) {
		return nil
	}
	s, ok := v.schemas[m]
	if !ok {
		return fmt.Errorf("contracts: unknown model %q", m)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return &ValidationError{Model: m, Problems: []Problem{{Loc: []any{}, Msg: "not valid JSON", Type: "json"}}}
	}
	if loc, dup := duplicateKey(raw); dup {
		return &ValidationError{Model: m, Problems: []Problem{newProblem(loc, "duplicate_key", "the key appears twice in the same object")}}
	}
	err = referenceValidate(s, inst)
	if err == nil {
		return nil
	}
	if errors.Is(err, errNumberRange) {
		return &ValidationError{Model: m, Problems: []Problem{numberRangeProblem}}
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return fmt.Errorf("contracts: validate %s: %w", m, err)
	}
	return &ValidationError{Model: m, Problems: problemsOf(ve)}
}

// errNumberRange reports a number the reference validator cannot compare.
var errNumberRange = errors.New("contracts: a number is out of the range the validator can compare")

// referenceValidate runs the reference validator. It panics on a number
// math/big cannot represent (an exponent of ten million or more) under
// minimum or maximum; that is reported as errNumberRange instead.
func referenceValidate(s *jsonschema.Schema, inst any) (err error) {
	defer func() {
		if recover() != nil {
			err = errNumberRange
		}
	}()
	return s.Validate(inst)
}

// numberRangeProblem is the problem reported for errNumberRange.
var numberRangeProblem = Problem{Loc: []any{}, Msg: "a number is too large to be compared", Type: "number"}

// decodeProblem is the problem of a document the Go decoder refuses. A key that
// differs from a declared key only in letter case is located by its path when
// it occurs once in the document; other failures are reported at the root.
func decodeProblem(raw []byte, err error) Problem {
	var fe *foldedKeyError
	if errors.As(err, &fe) {
		if loc, ok := findKey(raw, fe.key); ok {
			return newProblem(loc, "decode", fe.message())
		}
	}
	return Problem{Loc: []any{}, Msg: decodeMessage(err), Type: "decode"}
}

// findKey returns the location of the only occurrence of key in the JSON
// document raw; ok is false when it occurs zero or several times.
func findKey(raw []byte, key string) (loc []string, ok bool) {
	var doc any
	if json.Unmarshal(raw, &doc) != nil {
		return nil, false
	}
	var found [][]string
	var walk func(v any, at []string)
	walk = func(v any, at []string) {
		switch v := v.(type) {
		case map[string]any:
			for k, child := range v {
				next := append(at[:len(at):len(at)], k)
				if k == key {
					found = append(found, next)
				}
				walk(child, next)
			}
		case []any:
			for i, child := range v {
				walk(child, append(at[:len(at):len(at)], strconv.Itoa(i)))
			}
		}
	}
	walk(doc, nil)
	if len(found) != 1 {
		return nil, false
	}
	return found[0], true
}

// decodeMessage keeps the Go decoder's explanation without the input value.
func decodeMessage(err error) string {
	var fe *foldedKeyError
	if errors.As(err, &fe) {
		return fe.message()
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return "wrong JSON type for " + te.Field
	}
	return "cannot decode the document"
}

// problemsOf flattens a schema validation error into one problem per leaf.
func problemsOf(ve *jsonschema.ValidationError) []Problem {
	var out []Problem
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		causes := e.Causes
		switch e.ErrorKind.(type) {
		case *kind.OneOf, *kind.AnyOf:
			// Report the alternatives whose type matched, when some did; when
			// none did, one problem lists every accepted type.
			var matched []*jsonschema.ValidationError
			var got string
			var want []string
			for _, c := range causes {
				if t := typeMismatchAt(c, e.InstanceLocation); t != nil {
					got, want = t.Got, append(want, t.Want...)
				} else {
					matched = append(matched, c)
				}
			}
			if len(matched) == 0 && len(want) > 0 {
				out = append(out, newProblem(e.InstanceLocation, "type",
					fmt.Sprintf("wrong type: got %s, want %s", got, strings.Join(slices.Compact(want), " or "))))
				return
			}
			if len(matched) > 0 {
				causes = matched
			}
		}
		if len(causes) == 0 {
			out = append(out, leafProblems(e)...)
			return
		}
		for _, c := range causes {
			walk(c)
		}
	}
	walk(ve)
	slices.SortStableFunc(out, func(a, b Problem) int { return strings.Compare(a.Path, b.Path) })
	return slices.CompactFunc(out, func(a, b Problem) bool { return a.Path == b.Path && a.Msg == b.Msg && a.Type == b.Type })
}

// typeMismatchAt returns the type error of e when e is only that: the value at
// loc has the wrong JSON type.
func typeMismatchAt(e *jsonschema.ValidationError, loc []string) *kind.Type {
	if len(e.Causes) > 0 {
		// A $ref wraps the real error one level down.
		if _, ok := e.ErrorKind.(*kind.Reference); ok && len(e.Causes) == 1 {
			return typeMismatchAt(e.Causes[0], loc)
		}
		if _, ok := e.ErrorKind.(*kind.Schema); ok && len(e.Causes) == 1 {
			return typeMismatchAt(e.Causes[0], loc)
		}
		return nil
	}
	if t, ok := e.ErrorKind.(*kind.Type); ok && slices.Equal(e.InstanceLocation, loc) {
		return t
	}
	return nil
}

func leafProblems(e *jsonschema.ValidationError) []Problem {
	loc := e.InstanceLocation
	if req, ok := e.ErrorKind.(*kind.Required); ok {
		msg := prefixWhy(e.SchemaURL, "missing property")
		ps := make([]Problem, 0, len(req.Missing))
		for _, name := range req.Missing {
			ps = append(ps, newProblem(append(slices.Clone(loc), name), "required", msg))
		}
		return ps
	}
	rule, msg := describeKind(e.ErrorKind)
	return []Problem{newProblem(loc, rule, prefixWhy(e.SchemaURL, msg))}
}

func prefixWhy(schemaURL, msg string) string {
	if why := schemaDescription(schemaURL); why != "" {
		return why + ": " + msg
	}
	return msg
}

func newProblem(loc []string, rule, msg string) Problem {
	return Problem{Loc: locSegments(loc), Msg: msg, Type: rule, Path: pointer(loc)}
}

// locSegments turns path segments into loc entries: an array index (a
// canonical non-negative integer) becomes a number, anything else stays a
// string, so the loc always formats back to the same path ("007" stays "007").
func locSegments(loc []string) []any {
	segs := make([]any, len(loc))
	for i, s := range loc {
		if n, err := strconv.Atoi(s); err == nil && n >= 0 && strconv.Itoa(n) == s {
			segs[i] = n
		} else {
			segs[i] = s
		}
	}
	return segs
}

// pointer formats path segments as a JSON Pointer (RFC 6901).
func pointer(loc []string) string {
	if len(loc) == 0 {
		return ""
	}
	var b strings.Builder
	for _, s := range loc {
		b.WriteByte('/')
		b.WriteString(pointerToken(s))
	}
	return b.String()
}

// describeKind names the broken rule and says what it wants, never quoting the input.
func describeKind(k jsonschema.ErrorKind) (rule, msg string) {
	switch k := k.(type) {
	case *kind.Type:
		return "type", fmt.Sprintf("wrong type: got %s, want %s", k.Got, strings.Join(k.Want, " or "))
	case *kind.Enum:
		want := make([]string, len(k.Want))
		for i, w := range k.Want {
			want[i] = fmt.Sprint(w)
		}
		return "enum", "must be one of " + strings.Join(want, ", ")
	case *kind.Const:
		return "const", fmt.Sprintf("must be %v", jsonText(k.Want))
	case *kind.MinLength:
		return "minLength", fmt.Sprintf("shorter than %d characters", k.Want)
	case *kind.MaxLength:
		return "maxLength", fmt.Sprintf("longer than %d characters", k.Want)
	case *kind.Pattern:
		return "pattern", "does not match the pattern " + k.Want
	case *kind.Format:
		if k.Want == "nonblank" {
			return "nonblank", "must not be blank"
		}
		return "format", "not a valid " + k.Want
	case *kind.MinItems:
		return "minItems", fmt.Sprintf("fewer than %d items", k.Want)
	case *kind.MaxItems:
		return "maxItems", fmt.Sprintf("more than %d items", k.Want)
	case *kind.UniqueItems:
		return "uniqueItems", fmt.Sprintf("items %d and %d are equal", k.Duplicates[0], k.Duplicates[1])
	case *kind.Minimum:
		return "minimum", "less than " + k.Want.RatString()
	case *kind.Maximum:
		return "maximum", "greater than " + k.Want.RatString()
	case *kind.AdditionalProperties:
		// Sorted: the reference lists them in map order, which varies between runs.
		return "additionalProperties", "unknown properties: " + strings.Join(slices.Sorted(slices.Values(k.Properties)), ", ")
	case *kind.Not:
		return "not", "not allowed here"
	case *kind.FalseSchema:
		return "false", "not allowed"
	case *kind.OneOf:
		return "oneOf", "matches none of the allowed shapes"
	case *kind.AnyOf:
		return "anyOf", "matches none of the allowed shapes"
	default:
		kp := k.KeywordPath()
		name := "invalid"
		if len(kp) > 0 {
			name = kp[len(kp)-1]
		}
		return name, "breaks the rule " + name
	}
}

func jsonText(v any) string {
	b, err := Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// schemaDescription returns the description of the deepest subschema on the path
// to schemaURL that has one: the conditional rules carry the sentence a reader needs.
func schemaDescription(schemaURL string) string {
	base, frag, ok := strings.Cut(schemaURL, "#")
	if !ok || base != SchemaID {
		return ""
	}
	schemaOnce.Do(buildSchema)
	var node any = schemaDoc
	desc := ""
	for seg := range strings.SplitSeq(strings.TrimPrefix(frag, "/"), "/") {
		seg = unescapePointerToken(seg)
		switch n := node.(type) {
		case map[string]any:
			node = n[seg]
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(n) {
				return desc
			}
			node = n[i]
		default:
			return desc
		}
		if m, ok := node.(map[string]any); ok {
			if d, ok := m["description"].(string); ok {
				desc = d
			}
		}
	}
	return desc
}

// pointerToken escapes s as one JSON Pointer reference token (RFC 6901).
func pointerToken(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// unescapePointerToken is the inverse of pointerToken.
func unescapePointerToken(tok string) string {
	if !strings.Contains(tok, "~") {
		return tok
	}
	return strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
}
