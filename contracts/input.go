package contracts

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// InputValidator validates the input of an action against the JSON Schema
// derived from the agent's own Go input type, the one source of truth for that
// input. Input types are strict: unknown keys are refused (so are keys that
// differ from a declared key only in letter case), except the Studio-injected
// keys passed as tolerated. A field is required unless it is a pointer or tagged
// omitempty/omitzero; `sv` tags add rules (see the package documentation).
//
// The fields of an embedded struct without a json name are promoted, as
// encoding/json decodes them.
type InputValidator struct {
	schema *jsonschema.Schema
	doc    []byte
	under  string // the key problems are located under: "input", or none
}

// NewInputValidator derives and compiles the schema of t, which must be a struct
// type. Tolerated keys are accepted at the top level with any value.
func NewInputValidator(t reflect.Type, tolerated ...string) (*InputValidator, error) {
	return newInputValidator(t, false, tolerated)
}

// NewAnswerValidator derives and compiles the schema of t, a struct type a
// model's answer is decoded into, by the rules of [NewInputValidator] (no key
// tolerated), except that an optional field also accepts null, read as unset:
// a model under constrained decoding sends every field, null for the ones it
// leaves out. Its problems are located at the answer's own keys (loc
// ["status"], path "/status").
func NewAnswerValidator(t reflect.Type) (*InputValidator, error) {
	return newInputValidator(t, true, nil)
}

func newInputValidator(t reflect.Type, answer bool, tolerated []string) (*InputValidator, error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("contracts: input type %s must be a struct", t)
	}
	doc, err := inputSchema(t, answer, tolerated)
	if err != nil {
		return nil, err
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return nil, fmt.Errorf("contracts: input schema of %s: %w", t, err)
	}
	c := newCompiler()
	const id = "https://supervaize.com/schemas/supervaizer/v2/input.schema.json"
	if err := c.AddResource(id, inst); err != nil {
		return nil, fmt.Errorf("contracts: input schema of %s: %w", t, err)
	}
	s, err := c.Compile(id)
	if err != nil {
		return nil, fmt.Errorf("contracts: compile the input schema of %s: %w", t, err)
	}
	v := &InputValidator{schema: s, doc: doc, under: "input"}
	if answer {
		v.under = ""
	}
	return v, nil
}

func inputSchema(t reflect.Type, answer bool, tolerated []string) (doc []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("contracts: input type %s: %v", t, r)
		}
	}()
	g := newSchemaGen()
	g.input, g.nullOptional = true, answer
	root := g.ref(t)
	name := root["$ref"].(string)[len("#/$defs/"):]
	props := g.defs[name]["properties"].(map[string]any)
	for _, k := range tolerated {
		if _, declared := props[k]; !declared {
			props[k] = map[string]any{}
		}
	}
	defs := make(map[string]any, len(g.defs))
	for k, v := range g.defs {
		defs[k] = v
	}
	return json.MarshalIndent(map[string]any{
		"$schema": "https://json-schema.org/draft/2020-12/schema",
		"$ref":    root["$ref"],
		"$defs":   defs,
	}, "", "  ")
}

// Schema returns the derived JSON Schema document.
func (v *InputValidator) Schema() []byte { return slices.Clone(v.doc) }

// Validate validates raw input. The problems are located under "input"
// (loc ["input", "topic_id"], path "/input/topic_id"); an answer's
// ([NewAnswerValidator]) at its own keys.
func (v *InputValidator) Validate(raw []byte) []Problem {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return v.locate([]Problem{{Msg: "not valid JSON", Type: "json"}})
	}
	if loc, dup := duplicateKey(raw); dup {
		return v.locate([]Problem{newProblem(loc, "duplicate_key", "the key appears twice in the same object")})
	}
	err = referenceValidate(v.schema, inst)
	if err == nil {
		return nil
	}
	if errors.Is(err, errNumberRange) {
		return v.locate([]Problem{{Msg: numberRangeProblem.Msg, Type: numberRangeProblem.Type}})
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return v.locate([]Problem{{Msg: "cannot be validated", Type: "schema"}})
	}
	return v.locate(problemsOf(ve))
}

// locate places problems located in the validated document under v.under.
func (v *InputValidator) locate(ps []Problem) []Problem {
	for i := range ps {
		if v.under != "" {
			ps[i].Loc = append([]any{v.under}, ps[i].Loc...)
			ps[i].Path = "/" + v.under + ps[i].Path
		}
		if ps[i].Loc == nil {
			ps[i].Loc = []any{}
		}
	}
	return ps
}
