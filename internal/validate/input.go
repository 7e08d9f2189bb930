package validate

import (
	"reflect"

	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/internal/wire"
)

// Input validates the input of an action as [contracts.InputValidator]
// does, with the compiled form of its schema first.
type Input struct {
	ref  *contracts.InputValidator
	fast *cschema // nil when the schema leaves the compiled subset
}

// NewInput is [contracts.NewInputValidator] with the compiled schema.
func NewInput(t reflect.Type, tolerated ...string) (*Input, error) {
	return compileInput(contracts.NewInputValidator(t, tolerated...))
}

// NewAnswer is [contracts.NewAnswerValidator] with the compiled schema: the
// check of a model's answer (package answer).
func NewAnswer(t reflect.Type) (*Input, error) {
	return compileInput(contracts.NewAnswerValidator(t))
}

func compileInput(ref *contracts.InputValidator, err error) (*Input, error) {
	if err != nil {
		return nil, err
	}
	iv := &Input{ref: ref}
	doc, err := schemaDoc(ref.Schema())
	if err != nil {
		return nil, err
	}
	if fs, errs := compileFast(doc, ""); errs[0] == nil {
		iv.fast = fs[0]
	}
	return iv, nil
}

// Reference returns the reference validator iv falls back to.
func (v *Input) Reference() *contracts.InputValidator { return v.ref }

// Validate is [contracts.InputValidator.Validate].
func (v *Input) Validate(raw []byte) []contracts.Problem {
	if v.fast != nil {
		t := wire.Get()
		sure := t.Parse(raw) && v.validTape(t, 0)
		wire.Put(t)
		if sure {
			return nil
		}
	}
	return v.ref.Validate(raw)
}

// ValidateAt is [Input.Validate] of the value at node of t, a document the
// SDK's dispatcher parsed once.
func (v *Input) ValidateAt(t *wire.Tape, node int32) []contracts.Problem {
	if v.validTape(t, node) {
		return nil
	}
	return v.ref.Validate(t.Raw(node))
}

// validTape reports whether the compiled schema is sure that the value at
// node of the parsed t is valid.
func (v *Input) validTape(t *wire.Tape, node int32) bool {
	if v.fast == nil || !t.Plain() {
		return false
	}
	valid, sure := v.fast.checkAt(t, node)
	return valid && sure
}
