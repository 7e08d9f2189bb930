package contracts

import (
	"fmt"
	"strconv"
	"strings"
)

// This file holds the rules JSON Schema cannot express: uniqueness of ids,
// ordered bounds, references between parts of a document and rules that depend
// on a default the schema cannot see (the type of an awaiting field). They run on
// the decoded Go value after the schema has passed.

// path is a location inside a document, as JSON Pointer segments.
type path []string

func (p path) key(k string) path { return append(p[:len(p):len(p)], k) }
func (p path) idx(i int) path    { return append(p[:len(p):len(p)], strconv.Itoa(i)) }

type checks struct{ problems []Problem }

func (c *checks) add(at path, rule, format string, args ...any) {
	c.problems = append(c.problems, newProblem(at, rule, fmt.Sprintf(format, args...)))
}

// checker is implemented by the model types whose rules go beyond the schema.
type checker interface {
	check(c *checks, at path)
}

// checkValue runs the Go rules of a decoded model value (a pointer).
func checkValue(v any) []Problem {
	ch, ok := v.(checker)
	if !ok {
		return nil
	}
	var c checks
	ch.check(&c, path{})
	return c.problems
}

func (r *Registration) check(c *checks, at path) {
	caps := at.key("capabilities")
	seen := map[string]bool{}
	for i, d := range r.Capabilities.SurfaceDefinitions {
		if !r.Capabilities.HasSurface(d.ID) {
			c.add(caps.key("surface_definitions").idx(i).key("id"), "declared_surface", "describes undeclared surface %q", d.ID)
		}
		if seen[d.ID] {
			c.add(caps.key("surface_definitions").idx(i).key("id"), "unique", "describes surface %q twice", d.ID)
		}
		seen[d.ID] = true
	}
	if setup := r.JobPolicy.Setup; setup != nil && setup.Plan != nil {
		planAt := at.key("job_policy").key("setup").key("plan")
		if setup.Plan.Plan != nil {
			setup.Plan.Plan.check(c, planAt)
		}
		for _, id := range setup.Plan.helpActions() {
			def := r.Capabilities.Action(id)
			switch {
			case def == nil:
				c.add(planAt, "help_action", "help action %q is not declared in capabilities.actions", id)
			case !def.IsHelp():
				c.add(planAt, "help_action", "help action %q must be declared with kind \"help\"", id)
			}
		}
	}
	if r.Capabilities.ScheduledStart && !r.Capabilities.HasAction(DefaultStartAction) {
		c.add(caps.key("scheduled_start"), "scheduled_start", "scheduled_start requires the action %q", DefaultStartAction)
	}
	for i := range r.Resources {
		checkFieldList(c, at.key("resources").idx(i).key("fields"), resourceFields(r.Resources[i].Fields), FieldString)
	}
	if wb := r.WorkspaceBinding; wb != nil && wb.Create != nil {
		checkFieldList(c, at.key("workspace_binding").key("create").key("fields"), resourceFields(wb.Create.Fields), FieldString)
	}
}

func resourceFields(fs []ResourceField) []Field {
	out := make([]Field, len(fs))
	for i, f := range fs {
		out[i] = Field(f)
	}
	return out
}

func (s *JobState) check(c *checks, at path) {
	for i, cs := range s.Cases {
		for j, st := range cs.Steps {
			if st.Awaiting == nil {
				continue
			}
			fs := make([]Field, len(st.Awaiting.Fields))
			for k, f := range st.Awaiting.Fields {
				fs[k] = Field(f)
			}
			checkFieldList(c, at.key("cases").idx(i).key("steps").idx(j).key("awaiting").key("fields"), fs, FieldBoolean)
		}
	}
}

func (r *ActionResult) check(c *checks, at path) {
	if r.JobState != nil {
		r.JobState.check(c, at.key("job_state"))
	}
	if r.SetupPlan != nil && r.SetupPlan.Plan != nil {
		r.SetupPlan.Plan.check(c, at.key("setup_plan"))
	}
	if r.DryRun != nil && r.DryRun.CostIncurred != nil {
		r.DryRun.CostIncurred.check(c, at.key("dry_run").key("cost_incurred"))
	}
}

func (p *SetupPlan) check(c *checks, at path) {
	seen := map[string]bool{}
	for i, s := range p.Steps {
		if seen[s.ID] {
			c.add(at.key("steps").idx(i).key("id"), "unique", "step id %q is used twice", s.ID)
		}
		seen[s.ID] = true
		checkFieldList(c, at.key("steps").idx(i).key("fields"), s.Fields, FieldString)
	}
	if p.CostEstimate != nil {
		p.CostEstimate.check(c, at.key("cost_estimate"))
	}
}

func (e *CostEstimate) check(c *checks, at path) {
	if e.Min != nil && e.Max != nil && *e.Min > *e.Max {
		c.add(at.key("max"), "min_le_max", "max must be greater than or equal to min")
	}
}

func (f *Field) check(c *checks, at path) {
	checkField(c, at, f, FieldString, nil)
}

func (r *ActionRequest) check(c *checks, at path) {
	if r.Mission != nil && r.Mission.ID != r.MissionID {
		c.add(at.key("mission").key("id"), "mission_id", "mission.id must equal mission_id")
	}
}

func (r *SurfaceRequest) check(c *checks, at path) {
	if r.Mission != nil && r.Mission.ID != r.MissionID {
		c.add(at.key("mission").key("id"), "mission_id", "mission.id must equal mission_id")
	}
}

func (b *BillingCatalog) check(c *checks, at path) {
	seen := map[string]bool{}
	for i, item := range *b {
		if seen[item.SKU] {
			c.add(at.idx(i).key("sku"), "unique", "sku %q is listed twice", item.SKU)
		}
		seen[item.SKU] = true
	}
}

func (a *ContextAssignment) check(c *checks, at path) {
	if strings.TrimSpace(a.MissionID) != "" {
		return
	}
	for i, it := range a.Items {
		if it.Scope == ContextScopeMission {
			c.add(at.key("mission_id"), "mission_id", "mission_id is required when an item is mission-scoped (items/%d)", i)
			return
		}
	}
}

// checkFieldList checks sibling fields: each field's own rules and the
// depends_on references between siblings. defaultType is the model's type default.
func checkFieldList(c *checks, at path, fields []Field, defaultType string) {
	siblings := make(map[string]bool, len(fields))
	for _, f := range fields {
		siblings[f.ID] = true
	}
	for i := range fields {
		checkField(c, at.idx(i), &fields[i], defaultType, siblings)
	}
}

// checkField checks one field. siblings holds the ids of the fields beside it
// (nil when the field is checked alone, which skips the depends_on reference check).
func checkField(c *checks, at path, f *Field, defaultType string, siblings map[string]bool) {
	typ := f.Type
	if typ == "" {
		typ = defaultType
	}
	checkValidation(c, at, typ, f.Validation)
	if d := f.DependsOn; d != nil {
		switch {
		case d.Field == f.ID:
			c.add(at.key("depends_on").key("field"), "depends_on", "a field cannot depend on itself")
		case siblings != nil && !siblings[d.Field]:
			c.add(at.key("depends_on").key("field"), "depends_on", "depends on %q, which is not a sibling field", d.Field)
		}
	}
	if len(f.ItemFields) > 0 {
		checkFieldList(c, at.key("item_fields"), f.ItemFields, FieldString)
	}
}

// The validation rules each field type accepts (fields.md §6).
func checkValidation(c *checks, at path, typ string, v *FieldValidation) {
	if v == nil {
		return
	}
	va := at.key("validation")
	var allowLength, allowRange, allowItems bool
	switch typ {
	case FieldInteger, FieldNumber:
		allowRange = true
	case FieldMultiSelect, FieldList:
		allowItems = true
	case FieldBoolean, FieldDate, FieldSelect, FieldResourceRef, FieldFile:
	default: // string, text and unknown types
		allowLength = true
	}
	reject := func(key string, set, allowed bool) {
		if set && !allowed {
			c.add(va.key(key), "validation_type", "%s does not apply to fields of type %q", key, typ)
		}
	}
	reject("min_length", v.MinLength != nil, allowLength)
	reject("max_length", v.MaxLength != nil, allowLength)
	reject("pattern", v.Pattern != nil, allowLength)
	reject("min", v.Min != nil, allowRange)
	reject("max", v.Max != nil, allowRange)
	reject("min_items", v.MinItems != nil, allowItems)
	reject("max_items", v.MaxItems != nil, allowItems)
	if v.MinLength != nil && v.MaxLength != nil && *v.MinLength > *v.MaxLength {
		c.add(va.key("max_length"), "min_le_max", "max_length must be greater than or equal to min_length")
	}
	if v.Min != nil && v.Max != nil && *v.Min > *v.Max {
		c.add(va.key("max"), "min_le_max", "max must be greater than or equal to min")
	}
	if v.MinItems != nil && v.MaxItems != nil && *v.MinItems > *v.MaxItems {
		c.add(va.key("max_items"), "min_le_max", "max_items must be greater than or equal to min_items")
	}
}
