package a2ui

import (
	"encoding/json"

	"github.com/supervaize/supervaizer-go/contracts"
)

// Field is a field definition, the shared field schema of the protocol used by
// documents, setup plans and awaiting steps. Build one with a constructor such
// as [StringField] or write a struct literal.
type Field = contracts.Field

// FieldOpt sets an optional key of a field built by a constructor of this
// package. Options apply in order; they never check the result: a rule that
// does not fit the field's type is reported by Validate.
type FieldOpt func(*Field)

func newField(id, label, typ string, opts []FieldOpt) Field {
	f := Field{ID: id, Label: label, Type: typ}
	for _, o := range opts {
		o(&f)
	}
	return f
}

// StringField returns a single-line text field (type "string").
func StringField(id, label string, opts ...FieldOpt) Field {
	return newField(id, label, contracts.FieldString, opts)
}

// TextField returns a text field (type "text"); add [Multiline] for a
// multi-line input.
func TextField(id, label string, opts ...FieldOpt) Field {
	return newField(id, label, contracts.FieldText, opts)
}

// BooleanField returns a boolean field.
func BooleanField(id, label string, opts ...FieldOpt) Field {
	return newField(id, label, contracts.FieldBoolean, opts)
}

// IntegerField returns an integer field.
func IntegerField(id, label string, opts ...FieldOpt) Field {
	return newField(id, label, contracts.FieldInteger, opts)
}

// NumberField returns a number field.
func NumberField(id, label string, opts ...FieldOpt) Field {
	return newField(id, label, contracts.FieldNumber, opts)
}

// DateField returns a date field; its value is a YYYY-MM-DD string.
func DateField(id, label string, opts ...FieldOpt) Field {
	return newField(id, label, contracts.FieldDate, opts)
}

// SelectField returns a single-choice field; give its choices with [Choice].
// A required select has no empty choice: Studio shows the [Placeholder] until
// the operator picks one.
func SelectField(id, label string, opts ...FieldOpt) Field {
	return newField(id, label, contracts.FieldSelect, opts)
}

// MultiSelectField returns a multiple-choice field; give its choices with
// [Choice]. Its value is an array of choice values.
func MultiSelectField(id, label string, opts ...FieldOpt) Field {
	return newField(id, label, contracts.FieldMultiSelect, opts)
}

// ResourceRefField returns a field whose choices are the items of another
// resource of the agent (options_source, value field "id"); [LabelField]
// names the item key Studio displays.
func ResourceRefField(id, label, resource string, opts ...FieldOpt) Field {
	opts = append([]FieldOpt{func(f *Field) {
		f.OptionsSource = &contracts.OptionsSource{Type: "resource", Resource: resource, ValueField: "id"}
	}}, opts...)
	return newField(id, label, contracts.FieldResourceRef, opts)
}

// FileField returns a file field whose bytes live where storage
// says: [contracts.StorageStudio] (the agent receives a reference) or
// [contracts.StorageInline] (the content travels base64-encoded in the action
// JSON). See [Accept] and [MaxBytes].
func FileField(id, label, storage string, opts ...FieldOpt) Field {
	opts = append([]FieldOpt{func(f *Field) { f.Storage = storage }}, opts...)
	return newField(id, label, contracts.FieldFile, opts)
}

// ListField returns a list field: its value is an array of objects keyed by the
// ids of itemFields. Item fields cannot be lists themselves.
func ListField(id, label string, itemFields []Field, opts ...FieldOpt) Field {
	opts = append([]FieldOpt{func(f *Field) { f.ItemFields = itemFields }}, opts...)
	return newField(id, label, contracts.FieldList, opts)
}

// ResourceFields converts fields to resource fields, the form a
// [ResourceImport] document and a resource declaration carry.
func ResourceFields(fields ...Field) []contracts.ResourceField {
	out := make([]contracts.ResourceField, len(fields))
	for i, f := range fields {
		out[i] = contracts.ResourceField(f)
	}
	return out
}

// AwaitingFields converts fields to awaiting-step fields, the form
// contracts.Awaiting carries. Set each field's type explicitly: the awaiting
// model's historical default type is "boolean".
func AwaitingFields(fields ...Field) []contracts.AwaitingField {
	out := make([]contracts.AwaitingField, len(fields))
	for i, f := range fields {
		out[i] = contracts.AwaitingField(f)
	}
	return out
}

// Required makes a value mandatory (while the field is active, see [DependsOn]).
func Required() FieldOpt { return func(f *Field) { f.Required = true } }

// ReadOnly marks a resource field read-only.
func ReadOnly() FieldOpt { return func(f *Field) { f.ReadOnly = true } }

// Placeholder sets the text shown while the field is empty.
func Placeholder(text string) FieldOpt { return func(f *Field) { f.Placeholder = text } }

// Description sets the tooltip text (at most 300 characters).
func Description(text string) FieldOpt { return func(f *Field) { f.Description = text } }

// Multiline makes a text input multi-line, at least minRows rows high when
// minRows > 0 (min_rows is only allowed on multi-line fields).
func Multiline(minRows int) FieldOpt {
	return func(f *Field) {
		f.Multiline = true
		if minRows > 0 {
			f.MinRows = &minRows
		}
	}
}

// Default sets the initial value of the field. A NaN or infinite float is not
// a JSON number: the field then fails to marshal.
func Default[T ~string | ~bool | ~int | ~int64 | ~float64](value T) FieldOpt {
	raw, err := json.Marshal(value)
	if err != nil { // only a non-finite float gets here: keep it invalid so marshalling fails
		raw = json.RawMessage("NaN")
	}
	return func(f *Field) { f.Default = raw }
}

// Choice adds one choice to a select or multi_select field. Prefer string
// values: depends_on compares the parent value as a string.
func Choice(value, label string) FieldOpt {
	raw, _ := json.Marshal(value) // a string always marshals
	return func(f *Field) {
		f.Options = append(f.Options, contracts.FieldOption{Value: raw, Label: label})
	}
}

// LabelField names the item key a resource_ref field displays.
func LabelField(key string) FieldOpt {
	return func(f *Field) {
		if f.OptionsSource == nil {
			f.OptionsSource = &contracts.OptionsSource{Type: "resource", ValueField: "id"}
		}
		f.OptionsSource.LabelField = &key
	}
}

// DependsOn makes the field active only while the value of the sibling field
// parent, as a string, is one of values. An inactive field is
// hidden and its value is neither required nor checked.
func DependsOn(parent string, values ...string) FieldOpt {
	return func(f *Field) { f.DependsOn = &contracts.DependsOn{Field: parent, In: values} }
}

// Accept lists the extensions and media types a file field allows, for
// example ".md,text/markdown".
func Accept(list string) FieldOpt { return func(f *Field) { f.Accept = list } }

// MaxBytes sets the largest file a file field accepts.
func MaxBytes(n int64) FieldOpt { return func(f *Field) { f.MaxBytes = &n } }

func validation(f *Field) *contracts.FieldValidation {
	if f.Validation == nil {
		f.Validation = &contracts.FieldValidation{}
	}
	return f.Validation
}

// MinLength sets the shortest accepted text, in characters (string, text and
// unknown types).
func MinLength(n int) FieldOpt { return func(f *Field) { validation(f).MinLength = &n } }

// MaxLength sets the longest accepted text, in characters (string, text and
// unknown types).
func MaxLength(n int) FieldOpt { return func(f *Field) { validation(f).MaxLength = &n } }

// Pattern sets a regular expression the text must match (string, text and
// unknown types). Studio evaluates it; [ValidateValues] applies it when Go's
// RE2 syntax accepts it, as an unanchored search: anchor it with ^ and $.
func Pattern(re string) FieldOpt { return func(f *Field) { validation(f).Pattern = &re } }

// Min sets the smallest accepted number (integer and number fields).
func Min(x float64) FieldOpt { return func(f *Field) { validation(f).Min = &x } }

// Max sets the largest accepted number (integer and number fields).
func Max(x float64) FieldOpt { return func(f *Field) { validation(f).Max = &x } }

// MinItems sets the fewest accepted items (multi_select and list fields).
func MinItems(n int) FieldOpt { return func(f *Field) { validation(f).MinItems = &n } }

// MaxItems sets the most accepted items (multi_select and list fields).
func MaxItems(n int) FieldOpt { return func(f *Field) { validation(f).MaxItems = &n } }

// Message replaces the generic message shown when a validation rule of the
// field fails.
func Message(text string) FieldOpt { return func(f *Field) { validation(f).Message = &text } }
