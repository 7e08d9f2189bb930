package contracts

import (
	"bytes"
	"encoding/json"
	"errors"
)

// Setup-step statuses.
const (
	StepPending  = "pending"
	StepAwaiting = "awaiting"
	StepDone     = "done"
	StepSkipped  = "skipped"
)

// SetupPlan is the typed description of a guided job setup (V2SetupPlan,
// the protocol). ConfirmationRequired nil means true.
type SetupPlan struct {
	ConfirmationRequired *bool         `json:"confirmation_required" sv:"nonull"`
	Steps                []SetupStep   `json:"steps"`
	CostEstimate         *CostEstimate `json:"cost_estimate,omitempty" sv:"nonull"`
	Extra                Extra         `json:"-"`
}

func (p *SetupPlan) encodeDefaults() {
	if p.ConfirmationRequired == nil {
		t := true
		p.ConfirmationRequired = &t
	}
}

func (p *SetupPlan) afterDecode() {
	if p.ConfirmationRequired == nil {
		t := true
		p.ConfirmationRequired = &t
	}
}

// SetupStep is one step of a setup plan (V2SetupStep).
type SetupStep struct {
	ID          string   `json:"id" sv:"required,nonblank"`
	Title       string   `json:"title" sv:"required,nonblank,maxLen=120"`
	Description string   `json:"description,omitempty" sv:"maxLen=300"`
	Status      string   `json:"status" sv:"enum=pending|awaiting|done|skipped"`
	Fields      []Field  `json:"fields"`
	HelpActions []string `json:"help_actions"`
	Extra       Extra    `json:"-"`
}

func (s *SetupStep) encodeDefaults() {
	if s.Status == "" {
		s.Status = StepPending
	}
}

func (s *SetupStep) decodeDefaults() { *s = SetupStep{Status: StepPending} }

// PlanValue is a setup plan given either typed (validated by every rule of
// the protocol) or as a plain JSON object that passes through unchanged (only its
// steps[].help_actions are checked against the registration, a project decision).
// A decoded PlanValue always holds the raw form.
type PlanValue struct {
	Plan *SetupPlan
	Raw  json.RawMessage
}

// TypedPlan wraps a typed plan.
func TypedPlan(p SetupPlan) *PlanValue { return &PlanValue{Plan: &p} }

// RawPlan wraps a plain JSON object. It fails when raw is not a JSON object.
func RawPlan(raw json.RawMessage) (*PlanValue, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' || !json.Valid(raw) {
		return nil, errors.New("contracts: a raw setup plan must be a JSON object")
	}
	return &PlanValue{Raw: bytes.Clone(raw)}, nil
}

func (PlanValue) jsonSchema(*schemaGen) map[string]any { return map[string]any{"type": "object"} }

// MarshalJSON implements json.Marshaler.
func (p PlanValue) MarshalJSON() ([]byte, error) {
	if p.Plan != nil {
		return Marshal(p.Plan)
	}
	if p.Raw != nil {
		return p.Raw, nil
	}
	return []byte("{}"), nil
}

// UnmarshalJSON keeps the plan as raw JSON.
func (p *PlanValue) UnmarshalJSON(b []byte) error {
	v, err := RawPlan(b)
	if err != nil {
		return err
	}
	*p = *v
	return nil
}

// helpActionRef is one entry of a plan step's help_actions: the action id and
// where it sits (steps/<step>/help_actions/<index>).
type helpActionRef struct {
	id          string
	step, index int
}

// helpActions returns the help-action ids the plan references, in order.
func (p *PlanValue) helpActions() []helpActionRef {
	if p == nil {
		return nil
	}
	var refs []helpActionRef
	if p.Plan != nil {
		for i, s := range p.Plan.Steps {
			for j, id := range s.HelpActions {
				refs = append(refs, helpActionRef{id: id, step: i, index: j})
			}
		}
		return refs
	}
	// A plain map is read leniently, one level at a time, so that a malformed
	// entry does not hide the help actions of the others, and by exact key, as
	// Studio reads it (encoding/json would also match "Steps" or "HELP_ACTIONS").
	var steps []json.RawMessage
	if json.Unmarshal(objectKey(p.Raw, "steps"), &steps) != nil {
		return nil
	}
	for i, step := range steps {
		var ids []json.RawMessage
		if json.Unmarshal(objectKey(step, "help_actions"), &ids) != nil {
			continue
		}
		for j, raw := range ids {
			var id string
			if json.Unmarshal(raw, &id) == nil {
				refs = append(refs, helpActionRef{id: id, step: i, index: j})
			}
		}
	}
	return refs
}

// objectKey returns the value of key in the JSON object obj, or nil when obj is
// not an object or has no such key.
func objectKey(obj json.RawMessage, key string) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(obj, &m) != nil {
		return nil
	}
	return m[key]
}

// Cost-estimate statuses.
const (
	CostEstimated = "estimated"
	CostUnknown   = "unknown"
)

// CostEstimate is a cost range (V2CostEstimate). Unset keys are omitted.
type CostEstimate struct {
	Status string   `json:"status" sv:"required,enum=estimated|unknown"`
	Unit   string   `json:"unit,omitempty"`
	Min    *float64 `json:"min,omitempty" sv:"minimum=0,nonull"`
	Max    *float64 `json:"max,omitempty" sv:"minimum=0,nonull"`
	Basis  string   `json:"basis,omitempty" sv:"maxLen=300"`
	Extra  Extra    `json:"-"`
}

func (CostEstimate) extendSchema(s map[string]any) {
	// The condition requires status: an absent status is reported once, as
	// missing, not also as breaking both conditional rules.
	status := func(v string) map[string]any {
		return map[string]any{"required": []string{"status"}, "properties": map[string]any{"status": map[string]any{"const": v}}}
	}
	s["allOf"] = []any{
		rule("an unknown cost estimate has no unit, min or max", status(CostUnknown), map[string]any{"not": map[string]any{"anyOf": []any{
			map[string]any{"required": []string{"unit"}},
			map[string]any{"required": []string{"min"}},
			map[string]any{"required": []string{"max"}},
		}}}),
		rule("an estimated cost needs min and max", status(CostEstimated), map[string]any{"required": []string{"min", "max"}}),
	}
}

// FieldDraft is the result of a help action (V2FieldDraft). A nil
// Value means null (a pure check).
type FieldDraft struct {
	Field       string          `json:"field" sv:"required,nonblank"`
	Value       json.RawMessage `json:"value,omitempty"`
	Suggestions []Suggestion    `json:"suggestions"`
	Extra       Extra           `json:"-"`
}

func (d *FieldDraft) encodeDefaults() {
	if string(d.Value) == "null" {
		d.Value = nil
	}
}

func (*FieldDraft) dropsNullExtras() {}

func (d *FieldDraft) afterDecode() {
	if string(d.Value) == "null" {
		d.Value = nil
	}
}

// Suggestion severities.
const (
	SeverityInfo    = "info"
	SeverityWarning = "warning"
	SeverityError   = "error"
)

// Suggestion is one remark of a help action (V2Suggestion). An empty severity is
// written as "info".
type Suggestion struct {
	Message       string          `json:"message" sv:"required,nonblank"`
	Severity      string          `json:"severity" sv:"enum=info|warning|error"`
	Field         string          `json:"field,omitempty" sv:"null"`
	ProposedValue json.RawMessage `json:"proposed_value,omitempty"`
	Extra         Extra           `json:"-"`
}

func (s *Suggestion) encodeDefaults() {
	if s.Severity == "" {
		s.Severity = SeverityInfo
	}
	if string(s.ProposedValue) == "null" {
		s.ProposedValue = nil
	}
}

func (*Suggestion) dropsNullExtras() {}

func (s *Suggestion) decodeDefaults() { *s = Suggestion{Severity: SeverityInfo} }

// DryRunOutcome describes what a dry-run action left behind (V2DryRunOutcome,
// the protocol). Every key is optional.
type DryRunOutcome struct {
	ExpiresAt    string        `json:"expires_at,omitempty" sv:"format=date-time,null"`
	Deletable    bool          `json:"deletable,omitempty"`
	CostIncurred *CostEstimate `json:"cost_incurred,omitempty"`
	Extra        Extra         `json:"-"`
}

func (*DryRunOutcome) dropsNullExtras() {}
