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
type InputValidator struct {
	schema *jsonschema.Schema
	doc    []byte
}

// NewInputValidator derives and compiles the schema of t, which must be a struct
// type. Tolerated keys are accepted at the top level with any value.
func NewInputValidator(t reflect.Type, tolerated ...string) (*InputValidator, error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("contracts: input type %s must be a struct", t)
	}
	doc, err := inputSchema(t, tolerated)
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
	return &InputValidator{schema: s, doc: doc}, nil
}

func inputSchema(t reflect.Type, tolerated []string) (doc []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("contracts: input type %s: %v", t, r)
		}
	}()
	g := newSchemaGen()
	g.input = true
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
// (loc ["input", "topic_id"], path "/input/topic_id").
func (v *InputValidator) Validate(raw []byte) []Problem {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return []Problem{{Loc: []any{"input"}, Msg: "not valid JSON", Type: "json", Path: "/input"}}
	}
	if loc, dup := duplicateKey(raw); dup {
		p := newProblem(loc, "duplicate_key", "the key appears twice in the same object")
		return []Problem{{Loc: append([]any{"input"}, p.Loc...), Msg: p.Msg, Type: p.Type, Path: "/input" + p.Path}}
	}
	err = referenceValidate(v.schema, inst)
	if err == nil {
		return nil
	}
	if errors.Is(err, errNumberRange) {
		return []Problem{{Loc: []any{"input"}, Msg: numberRangeProblem.Msg, Type: numberRangeProblem.Type, Path: "/input"}}
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []Problem{{Loc: []any{"input"}, Msg: "cannot be validated", Type: "schema", Path: "/input"}}
	}
	ps := problemsOf(ve)
	for i := range ps {
		ps[i].Loc = append([]any{"input"}, ps[i].Loc...)
		ps[i].Path = "/input" + ps[i].Path
	}
	return ps
}
