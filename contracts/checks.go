package contracts

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"unicode"
)

// This file holds the rules JSON Schema cannot express: uniqueness of ids,
// ordered bounds, references between parts of a document and rules that depend
// on a default the schema cannot see (the type of an awaiting field). They run on
// the decoded Go value after the schema has passed.

// path is a location inside a document, as JSON Pointer segments.
// A path is never changed once made: key and idx return new paths. When it
// has an arena, the new paths are built in the arena's buffer instead of
// allocating each.
type path struct {
	segs  []string
	arena *pathArena
}

// pathArena is where the paths of one check are built.
type pathArena struct{ buf []string }

func (p path) key(k string) path { return p.with(k) }
func (p path) idx(i int) path    { return p.with(strconv.Itoa(i)) }

func (p path) with(seg string) path {
	a := p.arena
	if a == nil {
		return path{segs: append(p.segs[:len(p.segs):len(p.segs)], seg)}
	}
	start := len(a.buf) - len(p.segs)
	if len(p.segs) == 0 || start < 0 || &a.buf[start] != &p.segs[0] {
		// p does not end the buffer: copy it to the end first. (When it
		// does, nothing lives past it and seg is appended in place.)
		start = len(a.buf)
		a.buf = append(a.buf, p.segs...)
	}
	a.buf = append(a.buf, seg)
	return path{segs: a.buf[start:len(a.buf):len(a.buf)], arena: a}
}

type checks struct {
	v        *Validator // validates typed sub-documents that travel as plain objects
	problems []Problem
	arena    pathArena
	small    [48]string // the arena's first buffer
	// smallClear is set once small was cleared after the arena outgrew it:
	// small is not written again while the arena keeps its larger buffer.
	smallClear bool
}

// checksPool keeps checks between calls: a checks holds its first path
// buffer and points into it, so one made on the stack would move to the heap
// on every call.
var checksPool = sync.Pool{New: func() any { return new(checks) }}

// getChecks returns an empty checks validating typed sub-documents with v.
func getChecks(v *Validator) *checks {
	c := checksPool.Get().(*checks)
	c.v = v
	return c
}

// putChecks gives c back to the pool. Its problems (which the caller may
// still hold) are dropped from it, and the paths it built are cleared: the
// arena's buffer up to its length (the arena only appends, and past its
// length the buffer is clear, as every put leaves it), and small once the
// arena outgrew it (append copied small, which still holds the paths).
func putChecks(c *checks) {
	c.reset()
	checksPool.Put(c)
}

// reset empties c for its next check (putChecks).
func (c *checks) reset() {
	buf := c.arena.buf
	clear(buf)
	if !c.smallClear && cap(buf) > 0 && &buf[:1][0] != &c.small[0] {
		clear(c.small[:])
		c.smallClear = true
	}
	c.v, c.problems, c.arena.buf = nil, nil, nil
	if cap(buf) <= 1024 { // do not keep a huge buffer alive
		c.arena.buf = buf[:0]
	}
}

// root returns the empty path, building its extensions in c's arena.
func (c *checks) root() path {
	if c.arena.buf == nil {
		c.arena.buf = c.small[:0]
		c.smallClear = false
	}
	return path{arena: &c.arena}
}

// typedPlan validates a typed setup plan against the SetupPlan schema: inside a
// registration or a result a plan is a plain object to the schema (a map plan
// passes through unchanged), so the typed plan's own rules are checked here.
func (c *checks) typedPlan(p *SetupPlan, at path) {
	if c.v == nil {
		return
	}
	raw, err := Marshal(p)
	if err != nil {
		c.add(at, "encode", "the setup plan cannot be encoded")
		return
	}
	if err := c.v.validateSchema(ModelSetupPlan, raw); err != nil {
		var ve *ValidationError
		if !errors.As(err, &ve) {
			c.add(at, "schema", "the setup plan cannot be validated")
			return
		}
		for _, pr := range ve.Problems {
			pr.Loc = append(locSegments(at.segs), pr.Loc...)
			pr.Path = pointer(at.segs) + pr.Path
			c.problems = append(c.problems, pr)
		}
	}
}

func (c *checks) add(at path, rule, format string, args ...any) {
	c.problems = append(c.problems, newProblem(at.segs, rule, fmt.Sprintf(format, args...)))
}

// checker is implemented by the model types whose rules go beyond the schema.
type checker interface {
	check(c *checks, at path)
}

// checkValue runs the Go rules of a decoded model value (a pointer).
func checkValue(val *Validator, v any) []Problem {
	ch, ok := v.(checker)
	if !ok {
		return nil
	}
	c := getChecks(val)
	defer putChecks(c)
	ch.check(c, c.root())
	return c.problems
}

func (r *Registration) check(c *checks, at path) {
	caps := at.key("capabilities")
	first := map[string]int{}
	for i, d := range r.Capabilities.SurfaceDefinitions {
		idAt := caps.key("surface_definitions").idx(i).key("id")
		if !r.Capabilities.HasSurface(d.ID) {
			c.add(idAt, "declared_surface", "describes undeclared surface: the id is not in capabilities.surfaces")
		}
		if j, dup := first[d.ID]; dup {
			c.add(idAt, "unique", "describes surface twice: same id as surface_definitions/%d", j)
		} else {
			first[d.ID] = i
		}
	}
	if setup := r.JobPolicy.Setup; setup != nil && setup.Plan != nil {
		planAt := at.key("job_policy").key("setup").key("plan")
		if setup.Plan.Plan != nil {
			c.typedPlan(setup.Plan.Plan, planAt)
			setup.Plan.Plan.check(c, planAt)
		}
		for _, ref := range setup.Plan.helpActions() {
			refAt := planAt.key("steps").idx(ref.step).key("help_actions").idx(ref.index)
			def := r.Capabilities.Action(ref.id)
			switch {
			case def == nil:
				c.add(refAt, "help_action", "help action is not declared in capabilities.actions")
			case !def.IsHelp():
				c.add(refAt, "help_action", "help action must be declared with kind \"help\"")
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
			checkFieldList(c, at.key("cases").idx(i).key("steps").idx(j).key("awaiting").key("fields"), st.Awaiting.Fields, FieldBoolean)
		}
	}
}

func (r *ActionResult) check(c *checks, at path) {
	if r.JobState != nil {
		r.JobState.check(c, at.key("job_state"))
	}
	if r.SetupPlan != nil && r.SetupPlan.Plan != nil {
		c.typedPlan(r.SetupPlan.Plan, at.key("setup_plan"))
		r.SetupPlan.Plan.check(c, at.key("setup_plan"))
	}
	if r.DryRun != nil && r.DryRun.CostIncurred != nil {
		r.DryRun.CostIncurred.check(c, at.key("dry_run").key("cost_incurred"))
	}
}

func (p *SetupPlan) check(c *checks, at path) {
	first := map[string]int{}
	for i, s := range p.Steps {
		if j, dup := first[s.ID]; dup {
			c.add(at.key("steps").idx(i).key("id"), "unique", "step id is used twice: same id as steps/%d", j)
		} else {
			first[s.ID] = i
		}
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
	checkIdentifiers(c, at, "request_id", r.RequestID, "mission_id", r.MissionID, "job_id", r.JobID, "idempotency_key", r.IdempotencyKey)
	if r.Mission != nil && r.Mission.ID != r.MissionID {
		c.add(at.key("mission").key("id"), "mission_id", "mission.id must equal mission_id")
	}
}

func (r *SurfaceRequest) check(c *checks, at path) {
	checkIdentifiers(c, at, "request_id", r.RequestID, "mission_id", r.MissionID, "job_id", r.JobID)
	if r.Mission != nil && r.Mission.ID != r.MissionID {
		c.add(at.key("mission").key("id"), "mission_id", "mission.id must equal mission_id")
	}
}

// MaxIdentifierBytes bounds an identifier of a request (spec item 74): its
// UTF-8 bytes, not its characters.
const MaxIdentifierBytes = 256

// CheckIdentifier applies the rule of the identifiers a client chooses
// (request_id, job_id, mission_id, idempotency_key, and the A2A messageId,
// taskId and contextId; spec item 74): at most [MaxIdentifierBytes] bytes of
// UTF-8, no control character (C0, DEL, C1), no U+2028 or U+2029. The error
// says which part of the rule id breaks, never quoting it. The Validator
// applies it to the request models, whose problem (rule "identifier") names
// the field; the SDK answers it with -32602 before any handler or store call.
func CheckIdentifier(id string) error {
	if len(id) > MaxIdentifierBytes {
		return fmt.Errorf("longer than %d bytes", MaxIdentifierBytes)
	}
	for _, r := range id {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			return errors.New("holds a control character, U+2028 or U+2029")
		}
	}
	return nil
}

// checkIdentifiers applies CheckIdentifier to the identifiers of a request,
// given as key, value pairs.
func checkIdentifiers(c *checks, at path, kv ...string) {
	for i := 0; i < len(kv); i += 2 {
		if err := CheckIdentifier(kv[i+1]); err != nil {
			c.add(at.key(kv[i]), "identifier", "%s: %s", kv[i], err.Error())
		}
	}
}

func (b *BillingCatalog) check(c *checks, at path) {
	first := map[string]int{}
	for i, item := range *b {
		if j, dup := first[item.SKU]; dup {
			c.add(at.idx(i).key("sku"), "unique", "sku is listed twice: same sku as item %d", j)
		} else {
			first[item.SKU] = i
		}
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
func checkFieldList[F Field | AwaitingField](c *checks, at path, fields []F, defaultType string) {
	var siblings map[string]bool // only depends_on needs them
	for i := range fields {
		if Field(fields[i]).DependsOn != nil {
			siblings = make(map[string]bool, len(fields))
			for j := range fields {
				siblings[Field(fields[j]).ID] = true
			}
			break
		}
	}
	for i := range fields {
		f := Field(fields[i])
		checkField(c, at.idx(i), &f, defaultType, siblings)
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
			c.add(at.key("depends_on").key("field"), "depends_on", "names no sibling field")
		}
	}
	if len(f.ItemFields) > 0 {
		checkFieldList(c, at.key("item_fields"), f.ItemFields, FieldString)
	}
}

// The validation rules each field type accepts.
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
			// Name the type only when it is a known one: an unknown type is input text.
			typeName := "of an unknown type (read as string)"
			switch typ {
			case FieldString, FieldText, FieldBoolean, FieldInteger, FieldNumber, FieldDate,
				FieldSelect, FieldMultiSelect, FieldResourceRef, FieldFile, FieldList:
				typeName = "of type " + strconv.Quote(typ)
			}
			c.add(va.key(key), "validation_type", "%s does not apply to fields %s", key, typeName)
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
