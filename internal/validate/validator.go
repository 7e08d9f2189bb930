// Package validate is the SDK's hot-path validator of the contracts models:
// a compiled form of the contracts JSON Schema that judges a document on its
// tape (package internal/wire) without decoding it, a decoder that fills the
// request models straight from that tape, and the append-style path that
// encodes a handler's result once (package internal/encode) and validates
// the tape the encoder built.
//
// It answers only "valid"; whenever it rejects a document or cannot decide,
// the reference validator of package contracts ([contracts.Validator], with
// santhosh-tekuri/jsonschema) judges it again and reports the problems, and
// the rules JSON Schema cannot express always come from
// [contracts.Validator.Check]. The differential tests check that both give
// the same verdict over the contracts corpus and under fuzzing.
package validate

import (
	"bytes"
	"fmt"
	"reflect"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/internal/encode"
	"github.com/supervaize/supervaizer-go/internal/wire"
)

// Validator validates the contracts models as [contracts.Validator] does,
// faster. It is safe for concurrent use.
type Validator struct {
	ref   *contracts.Validator
	rules *contracts.Validator         // ref with the compiled schemas: for the Go rules (Check)
	fast  map[contracts.Model]*cschema // a model without one uses ref only
	types map[contracts.Model]reflect.Type
	known knownValid // documents the compiled schema judged valid (known.go)
}

var (
	defaultOnce      sync.Once
	defaultValidator *Validator
	defaultErr       error
)

// Default returns the shared Validator, built on
// [contracts.DefaultValidator] once.
func Default() *Validator {
	defaultOnce.Do(func() { defaultValidator, defaultErr = New(contracts.DefaultValidator()) })
	if defaultErr != nil {
		// The schema is generated from the contracts declarations; a failure
		// is a bug in the SDK, not an input error.
		panic(defaultErr)
	}
	return defaultValidator
}

// New compiles the contracts schema; ref is the reference validator that
// judges what the compiled one cannot, and reports every problem.
func New(ref *contracts.Validator) (*Validator, error) {
	doc, err := schemaDoc(contracts.Schema())
	if err != nil {
		return nil, err
	}
	v := &Validator{ref: ref, fast: map[contracts.Model]*cschema{}, types: map[contracts.Model]reflect.Type{}}
	for _, m := range contracts.Models() {
		t := reflect.TypeOf(m.New()).Elem()
		v.types[m] = t
		if fs, errs := compileFast(doc, "/$defs/"+string(m)); errs[0] == nil {
			v.fast[m] = fs[0]
			bindOrder(t, fs[0], map[bindKey]bool{})
		}
	}
	// The Go rules validate typed sub-documents (setup plans) against the
	// schema: with the compiled schemas first, as the documents themselves.
	v.rules = ref.WithSchemaCheck(v.fastValid)
	return v, nil
}

// Validate is [contracts.Validator.Validate].
func (v *Validator) Validate(m contracts.Model, raw []byte) error {
	dst := m.New()
	if dst == nil {
		return v.ref.Validate(m, raw)
	}
	return v.Decode(m, raw, dst)
}

// Decode is [contracts.Validator.Decode].
func (v *Validator) Decode(m contracts.Model, raw []byte, dst any) error {
	if v.fast[m] != nil && v.isDst(m, dst) {
		t := wire.Get()
		defer wire.Put(t)
		if t.Parse(raw) && t.Plain() {
			if handled, err := v.decodeTape(m, t, 0, false, dst); handled {
				return err
			}
		}
	}
	return v.ref.Decode(m, raw, dst)
}

// DecodeAt is [Validator.Decode] of the value at node of t, a document the
// SDK's dispatcher parsed once: the value is validated and decoded from the
// tape, without parsing its bytes again. The decoded value's strings and raw
// fields (such as ActionRequest.Input) alias t.Src, which the caller must own
// and never change.
func (v *Validator) DecodeAt(m contracts.Model, t *wire.Tape, node int32, dst any) error {
	if v.fast[m] != nil && t.Plain() && v.isDst(m, dst) {
		if handled, err := v.decodeTape(m, t, node, true, dst); handled {
			return err
		}
	}
	return v.ref.Decode(m, t.Raw(node), dst)
}

// isDst reports whether dst is a pointer to the Go type of m.
func (v *Validator) isDst(m contracts.Model, dst any) bool {
	t, ok := v.types[m]
	return ok && reflect.TypeOf(dst) == reflect.PointerTo(t)
}

// ValidateValue is [contracts.Validator.ValidateValue].
func (v *Validator) ValidateValue(m contracts.Model, value any) ([]byte, error) {
	raw, err := v.AppendValue(make([]byte, 0, 1024), m, value)
	if err != nil {
		return nil, err
	}
	return raw, nil
}

// AppendValue is [Validator.ValidateValue] appending the JSON to dst: it
// returns dst extended with the encoded value, or dst unchanged and the
// error. The value is encoded once; the appended bytes are what was
// validated.
func (v *Validator) AppendValue(dst []byte, m contracts.Model, value any) ([]byte, error) {
	out, _, _, err := v.appendValue(dst, m, value, nil, nil)
	return out, err
}

// AppendResult is [Validator.AppendValue] of an action result that also
// returns its "effects" value, a subslice of the appended bytes, as the
// validation read it (nil when it could not tell; the caller then finds it
// in out itself).
func (v *Validator) AppendResult(dst []byte, res *contracts.ActionResult) (out, effects []byte, err error) {
	out, effects, _, err = v.AppendResultTape(dst, res, nil)
	return out, effects, err
}

// AppendResultTape is [Validator.AppendResult] that also hands over the
// tape of the appended result, so that a caller reading the result again
// does not parse it again: t (from [wire.Get], the caller's to give back)
// receives the tape the validation worked on, the encoder's or a parse of
// the bytes, and parsed reports that it holds one; t.Src is then the
// appended bytes, out[len(dst):], and t is the tape Parse builds from them.
// When parsed is false, t holds nothing usable. A nil t is AppendResult.
func (v *Validator) AppendResultTape(dst []byte, res *contracts.ActionResult, t *wire.Tape) (out, effects []byte, parsed bool, err error) {
	start := len(dst)
	out, at, parsed, err := v.appendValue(dst, contracts.ModelActionResult, res, []byte("effects"), t)
	if err != nil {
		return out, nil, false, err
	}
	if at[0] < 0 {
		return out, nil, parsed, nil
	}
	return out, out[start+at[0] : start+at[1] : start+at[1]], parsed, nil
}

// appendValue is AppendValue; at is where the value of the top-level key
// member is in the appended bytes, when the compiled validator judged the
// tape the encoder built, else {-1, -1}. The validation works on t when it
// is not nil (else on a tape of its own); parsed reports that t ends
// holding the tape of the appended bytes.
func (v *Validator) appendValue(dst []byte, m contracts.Model, value any, member []byte, t *wire.Tape) (_ []byte, at [2]int, parsed bool, _ error) {
	at = [2]int{-1, -1}
	start := len(dst)
	var (
		raw   []byte
		built *wire.Tape // the tape the encoder built of raw, if it could
	)
	if t == nil {
		t = wire.Get()
		defer wire.Put(t)
	}
	out, ok, tapeOK := encode.AppendTape(dst, value, t)
	if ok {
		dst, raw = out, out[start:]
		if tapeOK {
			built = t
		}
	} else {
		b, err := contracts.Marshal(value)
		if err != nil {
			return out[:start], at, false, fmt.Errorf("contracts: marshal %s: %w", m, err)
		}
		dst = append(out[:start], b...)
		raw = dst[start:]
	}
	var sure bool
	parsed = built != nil
	switch {
	case built == nil:
		// The compiled validator judges a parse of raw, kept in t.
		parsed = v.fast[m] != nil && t.Parse(raw)
		sure = parsed && v.fastValidTape(m, t)
	case v.fastValidBuilt(m, raw, built):
		sure = true
		if member != nil {
			if i, found := built.Member(0, member); found {
				at = [2]int{int(built.Nodes[i].Start), int(built.Nodes[i].End)}
			}
		}
	}
	if !sure {
		// The reference judges the JSON (and reports its problems); the Go
		// rules then run on the typed value below, as on the fast path.
		if err := v.ref.Validate(m, raw); err != nil {
			return dst[:start], at, false, err
		}
	}
	// Run the Go rules on the typed value when we have it (a typed setup plan is
	// only visible there), else on the decoded JSON.
	if r, ok := value.(*contracts.ActionResult); ok && r != nil && m == contracts.ModelActionResult {
		if err := v.rules.Check(m, r); err != nil {
			return dst[:start], at, false, err
		}
		return dst, at, parsed, nil
	}
	typed := reflect.ValueOf(value)
	if typed.Kind() == reflect.Pointer && !typed.IsNil() {
		typed = typed.Elem()
	}
	if typed.IsValid() && typed.Type() == v.types[m] {
		if !typed.CanAddr() { // a value, not a pointer: checks take a pointer
			p := reflect.New(typed.Type())
			p.Elem().Set(typed)
			typed = p.Elem()
		}
		if err := v.rules.Check(m, typed.Addr().Interface()); err != nil {
			return dst[:start], at, false, err
		}
		return dst, at, parsed, nil
	}
	if sure {
		if _, err := v.decodeChecked(m, raw); err != nil {
			return dst[:start], at, false, err
		}
	}
	return dst, at, parsed, nil
}

// fastValidBuilt is fastValidTape of the tape t of raw, remembering the
// documents it judged valid (knownValid): the same bytes again are not
// walked again.
func (v *Validator) fastValidBuilt(m contracts.Model, raw []byte, t *wire.Tape) bool {
	d := knownDigest(m, raw)
	if v.known.has(d) {
		return true
	}
	if !v.fastValidTape(m, t) {
		return false
	}
	v.known.add(d)
	return true
}

// decodeChecked decodes raw, which passed the schema of m, and runs the Go
// rules.
func (v *Validator) decodeChecked(m contracts.Model, raw []byte) (any, error) {
	val := m.New()
	if err := contracts.Unmarshal(raw, val); err != nil {
		// The reference reports the decoding problem as Validate does.
		if rerr := v.ref.Decode(m, raw, val); rerr != nil {
			return nil, rerr
		}
		return nil, fmt.Errorf("contracts: decode %s: %w", m, err)
	}
	if err := v.rules.Check(m, val); err != nil {
		return nil, err
	}
	return val, nil
}

// fastValid reports whether the compiled validator is sure that raw is a
// valid document of m. false means "ask the reference validator".
func (v *Validator) fastValid(m contracts.Model, raw []byte) bool {
	if v.fast[m] == nil {
		return false
	}
	t := wire.Get()
	defer wire.Put(t)
	return t.Parse(raw) && v.fastValidTape(m, t)
}

// fastValidTape is fastValid on t, the tape of the document.
func (v *Validator) fastValidTape(m contracts.Model, t *wire.Tape) bool {
	fs := v.fast[m]
	if fs == nil || !t.Plain() {
		return false
	}
	valid, sure := fs.check(t)
	return valid && sure
}

// decodeTape validates the value at node of the plain tape t with the
// compiled validator and decodes it into dst, a pointer to the Go type of m,
// from the tape when m is a request model. dst is only written when err is
// nil. handled is false when the compiled validator cannot decide; the caller
// then takes the reference path (which also produces the problems of an
// invalid document).
func (v *Validator) decodeTape(m contracts.Model, t *wire.Tape, node int32, aliasSrc bool, dst any) (handled bool, err error) {
	if valid, sure := v.fast[m].checkAt(t, node); !valid || !sure {
		return false, nil
	}
	// The schema passed: only decoding and the Go rules remain.
	switch dst := dst.(type) {
	case *contracts.ActionRequest:
		var r contracts.ActionRequest
		if t.Nodes[node].Kind == wire.Object && newRequestDecoder(t, aliasSrc).request(node, actionRequestFields(&r)) {
			// The rules run on dst (passing &r would move r to the heap);
			// dst gets its value back when they fail.
			old := *dst
			*dst = r
			if err := v.rules.Check(m, dst); err != nil {
				*dst = old
				return true, err
			}
			return true, nil
		}
	case *contracts.SurfaceRequest:
		var r contracts.SurfaceRequest
		if t.Nodes[node].Kind == wire.Object && newRequestDecoder(t, aliasSrc).request(node, surfaceRequestFields(&r)) {
			old := *dst
			*dst = r
			if err := v.rules.Check(m, dst); err != nil {
				*dst = old
				return true, err
			}
			return true, nil
		}
	}
	val, err := v.decodeChecked(m, t.Raw(node))
	if err != nil {
		return true, err
	}
	reflect.ValueOf(dst).Elem().Set(reflect.ValueOf(val).Elem())
	return true, nil
}

// schemaDoc decodes a schema document as the reference validator reads it.
func schemaDoc(doc []byte) (any, error) {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return nil, fmt.Errorf("validate: decode schema: %w", err)
	}
	return inst, nil
}
