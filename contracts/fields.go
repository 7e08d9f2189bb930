package contracts

import (
	"encoding/json"
	"reflect"
)

// Field types known to Studio. Unknown types are accepted and
// rendered as FieldString.
const (
	FieldString      = "string"
	FieldText        = "text"
	FieldBoolean     = "boolean"
	FieldInteger     = "integer"
	FieldNumber      = "number"
	FieldDate        = "date"
	FieldSelect      = "select"
	FieldMultiSelect = "multi_select"
	FieldResourceRef = "resource_ref"
	FieldFile        = "file"
	FieldList        = "list"
)

// File storage modes of a file field.
const (
	StorageStudio = "studio"
	StorageInline = "inline"
)

// Field is the shared field schema used by setup steps, awaiting
// steps and resources. As a setup field (V2SetupFieldDefinition) it always emits
// id, label, type and required; every other key is omitted when unset. Its type
// defaults to "string". [AwaitingField] and [ResourceField] are the same schema
// with their own defaults and always-emitted keys.
type Field struct {
	ID            string           `json:"id" sv:"required,nonblank"`
	Label         string           `json:"label" sv:"required"`
	Type          string           `json:"type"`
	Required      bool             `json:"required"`
	Default       json.RawMessage  `json:"default,omitempty"`
	Placeholder   string           `json:"placeholder,omitempty"`
	Description   string           `json:"description,omitempty" sv:"maxLen=300"`
	Multiline     bool             `json:"multiline,omitempty"`
	MinRows       *int             `json:"min_rows,omitempty" sv:"minimum=1,nonull"`
	Options       []FieldOption    `json:"options,omitempty"`
	OptionsSource *OptionsSource   `json:"options_source,omitempty"`
	DependsOn     *DependsOn       `json:"depends_on,omitempty" sv:"nonull"`
	Validation    *FieldValidation `json:"validation,omitempty" sv:"nonull"`
	ItemFields    []Field          `json:"item_fields,omitempty"`
	Accept        string           `json:"accept,omitempty"`
	MaxBytes      *int64           `json:"max_bytes,omitempty" sv:"minimum=0,nonull"`
	Storage       string           `json:"storage,omitempty" sv:"enum=studio|inline"`
	ReadOnly      bool             `json:"read_only,omitempty"`
	Extra         Extra            `json:"-"`
}

func (f Field) extendSchema(s map[string]any) {
	props := s["properties"].(map[string]any)
	// One level of nesting: an item field is never a list.
	props["item_fields"] = map[string]any{
		"type": "array",
		"items": map[string]any{"allOf": []any{
			map[string]any{"$ref": "#/$defs/Field"},
			map[string]any{"description": "an item field cannot be a list", "not": map[string]any{
				"required":   []string{"type"},
				"properties": map[string]any{"type": map[string]any{"const": FieldList}},
			}},
		}},
	}
	s["allOf"] = []any{
		// min_rows only on multiline fields.
		rule("min_rows is allowed only when multiline is true", map[string]any{"required": []string{"min_rows"}},
			map[string]any{"required": []string{"multiline"}, "properties": map[string]any{"multiline": map[string]any{"const": true}}}),
		// A list field needs item fields; no other type may have them.
		map[string]any{
			"description": "a list field needs item_fields and no other type may have them",
			"if":          map[string]any{"required": []string{"type"}, "properties": map[string]any{"type": map[string]any{"const": FieldList}}},
			"then":        map[string]any{"required": []string{"item_fields"}, "properties": map[string]any{"item_fields": map[string]any{"minItems": 1}}},
			"else":        map[string]any{"not": map[string]any{"required": []string{"item_fields"}}},
		},
	}
}

// rule is a conditional schema whose description names the rule in error messages.
func rule(description string, cond, then map[string]any) map[string]any {
	return map[string]any{"description": description, "if": cond, "then": then}
}

// decodeDefaults: a field's type defaults to "string".
func (f *Field) decodeDefaults() { *f = Field{Type: FieldString} }

// AwaitingField is a field of an awaiting step (V2AwaitingFieldDefinition). Its
// type defaults to "boolean", the historical default:
// always set Type explicitly.
type AwaitingField Field

func (AwaitingField) jsonSchema(g *schemaGen) map[string]any {
	return g.ref(reflect.TypeFor[Field]())
}

// decodeDefaults: an awaiting field's type defaults to "boolean".
func (f *AwaitingField) decodeDefaults() { *f = AwaitingField{Type: FieldBoolean} }

// ResourceField is a field of a resource, of a workspace-binding create form or of a
// ResourceImport document (V2ResourceFieldDefinition). Its type defaults to
// "string"; read_only, multiline and options_source (null when unset) are always
// emitted, as they were before the shared field schema existed.
type ResourceField Field

func (ResourceField) jsonSchema(g *schemaGen) map[string]any {
	return g.ref(reflect.TypeFor[Field]())
}

// resourceFieldWire is the wire order of a resource field: its historical keys
// first, always emitted, then the shared optional keys.
type resourceFieldWire struct {
	ID            string           `json:"id"`
	Label         string           `json:"label"`
	Type          string           `json:"type"`
	Required      bool             `json:"required"`
	ReadOnly      bool             `json:"read_only"`
	Multiline     bool             `json:"multiline"`
	OptionsSource *OptionsSource   `json:"options_source"`
	Default       json.RawMessage  `json:"default,omitempty"`
	Placeholder   string           `json:"placeholder,omitempty"`
	Description   string           `json:"description,omitempty"`
	MinRows       *int             `json:"min_rows,omitempty"`
	Options       []FieldOption    `json:"options,omitempty"`
	DependsOn     *DependsOn       `json:"depends_on,omitempty"`
	Validation    *FieldValidation `json:"validation,omitempty"`
	ItemFields    []Field          `json:"item_fields,omitempty"`
	Accept        string           `json:"accept,omitempty"`
	MaxBytes      *int64           `json:"max_bytes,omitempty"`
	Storage       string           `json:"storage,omitempty"`
}

// wireShape is the resource-field form.
func (f *ResourceField) wireShape() any {
	w := resourceFieldWire{
		ID: f.ID, Label: f.Label, Type: f.Type, Required: f.Required, ReadOnly: f.ReadOnly,
		Multiline: f.Multiline, OptionsSource: f.OptionsSource, Default: f.Default,
		Placeholder: f.Placeholder, Description: f.Description, MinRows: f.MinRows,
		Options: f.Options, DependsOn: f.DependsOn, Validation: f.Validation,
		ItemFields: f.ItemFields, Accept: f.Accept, MaxBytes: f.MaxBytes, Storage: f.Storage,
	}
	return &w
}

// decodeDefaults: a resource field's type defaults to "string".
func (f *ResourceField) decodeDefaults() { *f = ResourceField{Type: FieldString} }

// FieldOption is one choice of a select or multi_select field.
type FieldOption struct {
	Value json.RawMessage `json:"value" sv:"required"`
	Label string          `json:"label" sv:"required"`
	Extra Extra           `json:"-"`
}

// OptionsSource points a relationship field at another resource
// (V2ResourceFieldOptionsSource). Every key is always emitted.
type OptionsSource struct {
	Type       string  `json:"type" sv:"enum=resource"`
	Resource   string  `json:"resource" sv:"required,nonblank"`
	ValueField string  `json:"value_field"`
	LabelField *string `json:"label_field"`
	Extra      Extra   `json:"-"`
}

func (o *OptionsSource) encodeDefaults() {
	if o.Type == "" {
		o.Type = "resource"
	}
	if o.ValueField == "" {
		o.ValueField = "id"
	}
}

func (o *OptionsSource) decodeDefaults() { *o = OptionsSource{Type: "resource", ValueField: "id"} }

// DependsOn makes a field active only while its parent's value, stringified as a
// JSON scalar, is one of In.
type DependsOn struct {
	Field string   `json:"field" sv:"required,nonblank"`
	In    []string `json:"in" sv:"required,minItems=1"`
}

// FieldValidation holds the value rules of a field (V2FieldValidation).
// Only the rules that apply to the field's type are allowed.
type FieldValidation struct {
	MinLength *int     `json:"min_length,omitempty" sv:"minimum=0,nonull"`
	MaxLength *int     `json:"max_length,omitempty" sv:"minimum=0,nonull"`
	Pattern   *string  `json:"pattern,omitempty" sv:"nonull"`
	Min       *float64 `json:"min,omitempty" sv:"nonull"`
	Max       *float64 `json:"max,omitempty" sv:"nonull"`
	MinItems  *int     `json:"min_items,omitempty" sv:"minimum=0,nonull"`
	MaxItems  *int     `json:"max_items,omitempty" sv:"minimum=0,nonull"`
	Message   *string  `json:"message,omitempty" sv:"nonull"`
}

func (*DependsOn) strictKeys() {}

func (*FieldValidation) strictKeys() {}
