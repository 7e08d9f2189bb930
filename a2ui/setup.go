package a2ui

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/supervaize/supervaizer-go/contracts"
)

// SetupStep is one step of a guided setup plan: its fields and help actions.
// An empty Status is written as "pending".
type SetupStep = contracts.SetupStep

// Suggestion is one remark of a help action, returned with a [Draft]. An
// empty Severity is written as "info".
type Suggestion = contracts.Suggestion

// NewSetupPlan returns a guided-setup plan, for job_policy.setup.plan in the
// registration or the plan job.start.preview returns: its steps, its cost
// estimate (nil for none, see [EstimatedCost]) and whether Studio asks the
// user to confirm before job.start.
func NewSetupPlan(confirm bool, cost *contracts.CostEstimate, steps ...SetupStep) *contracts.PlanValue {
	return contracts.TypedPlan(contracts.SetupPlan{ConfirmationRequired: &confirm, Steps: steps, CostEstimate: cost})
}

// EstimatedCost returns a cost range in unit (shown as-is, for
// example "USD", "tokens" or "credits"); basis explains it in plain text, for
// example "for 50 runs". Studio shows a range, never a single number.
func EstimatedCost(unit string, minimum, maximum float64, basis string) *contracts.CostEstimate {
	return &contracts.CostEstimate{Status: contracts.CostEstimated, Unit: unit, Min: &minimum, Max: &maximum, Basis: basis}
}

// UnknownCost returns a cost estimate whose amount is unknown; set Basis to
// explain why.
func UnknownCost() *contracts.CostEstimate {
	return &contracts.CostEstimate{Status: contracts.CostUnknown}
}

// HelpInput is the input of a help action: the id of the target
// field and the current draft values of the setup, keyed by field id.
type HelpInput struct {
	Field  string         `json:"field" sv:"nonblank"`
	Values map[string]any `json:"values,omitempty"`
}

// Draft returns the result of a help action for field: value is the proposed
// value (nil for a pure check) and suggestions the remarks shown next to it.
// For a list field, value is an array of objects keyed by item-field id. It
// fails when field is blank or value does not marshal to JSON.
func Draft(field string, value any, suggestions ...Suggestion) (*contracts.FieldDraft, error) {
	if strings.TrimSpace(field) == "" {
		return nil, errors.New("a2ui: a draft needs the id of its target field")
	}
	d := &contracts.FieldDraft{Field: field, Suggestions: suggestions}
	if value != nil {
		raw, err := json.Marshal(value)
		if err != nil {
			return nil, fmt.Errorf("a2ui: draft value of %q: %w", field, err)
		}
		if string(raw) != "null" {
			d.Value = raw
		}
	}
	return d, nil
}

// DryRun returns the outcome of a dry-run action: when its
// temporary data is cleaned up (written in RFC 3339, UTC; omitted when
// expiresAt is zero), whether the operator may delete it, and the cost the
// run incurred (nil when unknown).
func DryRun(expiresAt time.Time, deletable bool, cost *contracts.CostEstimate) *contracts.DryRunOutcome {
	d := &contracts.DryRunOutcome{Deletable: deletable, CostIncurred: cost}
	if !expiresAt.IsZero() {
		d.ExpiresAt = expiresAt.UTC().Format(time.RFC3339)
	}
	return d
}
