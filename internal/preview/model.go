package preview

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// The preview reads the registration and the surface documents as the
// protocol sends them (JSON), into the loose shapes below: it shows what an
// agent declares, including keys a typed model would reject, and never fails
// on an unknown key.

// registration is the part of a registration the overview shows.
type registration struct {
	Agent struct {
		Slug        string `json:"slug"`
		DisplayName string `json:"display_name"`
		Name        string `json:"name"`
	} `json:"agent"`
	Capabilities struct {
		Surfaces           json.RawMessage `json:"surfaces"`
		SurfaceDefinitions []surfaceDef    `json:"surface_definitions"`
		Actions            json.RawMessage `json:"actions"`
		CaseLanes          []struct {
			ID      string `json:"id"`
			Label   string `json:"label"`
			Default bool   `json:"default"`
		} `json:"case_lanes"`
		ArtifactTypes []struct {
			Type  string `json:"type"`
			Label string `json:"label"`
		} `json:"artifact_types"`
	} `json:"capabilities"`
	JobPolicy struct {
		Setup *struct {
			StartAction   string          `json:"start_action"`
			PreviewAction string          `json:"preview_action"`
			SubmitAction  string          `json:"submit_action"`
			Plan          json.RawMessage `json:"plan"`
		} `json:"setup"`
		Sync *struct {
			Action string `json:"action"`
		} `json:"sync"`
	} `json:"job_policy"`
	Resources []struct {
		ID           string   `json:"id"`
		Label        string   `json:"label"`
		Scope        string   `json:"scope"`
		Operations   []string `json:"operations"`
		Fields       []field  `json:"fields"`
		AutoSurface  bool     `json:"auto_surface"`
		MountedViews []struct {
			View    string `json:"view"`
			Surface string `json:"surface"`
		} `json:"mounted_views"`
	} `json:"resources"`
	Datasets []struct {
		ID          string `json:"id"`
		Label       string `json:"label"`
		Scope       string `json:"scope"`
		AutoSurface bool   `json:"auto_surface"`
		Display     *struct {
			Columns []string `json:"columns"`
		} `json:"display"`
	} `json:"datasets"`
	Dashboards []struct {
		ID      string `json:"id"`
		Label   string `json:"label"`
		Surface string `json:"surface"`
	} `json:"dashboards"`

	surfaces []surfaceDef
	actions  []actionDef
	plan     *setupPlan
}

type surfaceDef struct {
	ID          string `json:"id"`
	Label       string `json:"label"`
	Description string `json:"description"`
	// Display is the name a person reads: the label, else that of the
	// resource, dataset or dashboard it shows, else the id in words.
	Display string `json:"-"`
}

// surfaceName is the name a person reads for d (see surfaceDef.Display).
func (r *registration) surfaceName(d surfaceDef) string {
	if d.Label != "" {
		return d.Label
	}
	for _, res := range r.Resources {
		if res.Label != "" && d.ID == "mission.agent.resource."+res.ID {
			return res.Label
		}
	}
	for _, ds := range r.Datasets {
		if ds.Label != "" && d.ID == "mission.agent.dataset."+ds.ID {
			return ds.Label
		}
	}
	for _, db := range r.Dashboards {
		if db.Label != "" && d.ID == db.Surface {
			return db.Label
		}
	}
	id := strings.TrimPrefix(strings.TrimPrefix(d.ID, "mission.agent."), "mission.")
	words := strings.Fields(strings.NewReplacer(".", " ", "_", " ", "-", " ").Replace(id))
	if len(words) == 0 {
		return d.ID
	}
	words[0] = strings.ToUpper(words[0][:1]) + words[0][1:]
	return strings.Join(words, " ")
}

// NeedsJob reports a surface opened from a job's case or step (case.*),
// listed in the overview but not in the navigation.
func (d surfaceDef) NeedsJob() bool { return strings.HasPrefix(d.ID, "case.") }

type actionDef struct {
	ID          string `json:"id"`
	Label       string `json:"label"`
	Description string `json:"description"`
	Scope       string `json:"scope"`
	Kind        string `json:"kind"`
	TargetField string `json:"target_field"`
	Mutating    bool   `json:"mutating"`
	DryRun      bool   `json:"dry_run"`
}

type setupPlan struct {
	ConfirmationRequired *bool `json:"confirmation_required"`
	Steps                []struct {
		ID          string   `json:"id"`
		Title       string   `json:"title"`
		Description string   `json:"description"`
		Status      string   `json:"status"`
		Fields      []field  `json:"fields"`
		HelpActions []string `json:"help_actions"`
	} `json:"steps"`
	CostEstimate json.RawMessage `json:"cost_estimate"`
}

// parseRegistration decodes a registration; surfaces and actions may be bare
// ids or objects.
func parseRegistration(raw json.RawMessage) (*registration, error) {
	var r registration
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("preview: registration: %w", err)
	}
	for _, item := range rawItems(r.Capabilities.Surfaces) {
		var d surfaceDef
		if json.Unmarshal(item, &d.ID) != nil {
			_ = json.Unmarshal(item, &d)
		}
		r.surfaces = append(r.surfaces, d)
	}
	// Display text of the surfaces comes from surface_definitions.
	for _, def := range r.Capabilities.SurfaceDefinitions {
		found := false
		for i := range r.surfaces {
			if r.surfaces[i].ID == def.ID {
				r.surfaces[i], found = def, true
			}
		}
		if !found {
			r.surfaces = append(r.surfaces, def)
		}
	}
	for i := range r.surfaces {
		r.surfaces[i].Display = r.surfaceName(r.surfaces[i])
	}
	for _, item := range rawItems(r.Capabilities.Actions) {
		var d actionDef
		if json.Unmarshal(item, &d.ID) != nil {
			_ = json.Unmarshal(item, &d)
		}
		r.actions = append(r.actions, d)
	}
	if r.JobPolicy.Setup != nil && len(r.JobPolicy.Setup.Plan) > 0 && string(r.JobPolicy.Setup.Plan) != "null" {
		var p setupPlan
		if json.Unmarshal(r.JobPolicy.Setup.Plan, &p) == nil {
			r.plan = &p
		}
	}
	return &r, nil
}

func rawItems(raw json.RawMessage) []json.RawMessage {
	var items []json.RawMessage
	_ = json.Unmarshal(raw, &items)
	return items
}

// studioSurface is a surface Studio generates itself from an auto_surface
// resource or dataset: the controller has no handler for it (surface.load
// answers -32011), so the preview describes it instead of loading it.
type studioSurface struct {
	Kind       string // "resource" or "dataset"
	ID         string // the resource's or dataset's id
	Label      string
	Scope      string
	Operations []string
	Fields     []field
}

// studioSurface returns the Studio-generated surface id, if it is one.
func (r *registration) studioSurface(id string) (*studioSurface, bool) {
	for _, res := range r.Resources {
		if res.AutoSurface && id == "mission.agent.resource."+res.ID {
			return &studioSurface{Kind: "resource", ID: res.ID, Label: res.Label, Scope: res.Scope, Operations: res.Operations, Fields: res.Fields}, true
		}
	}
	for _, d := range r.Datasets {
		if d.AutoSurface && id == "mission.agent.dataset."+d.ID {
			return &studioSurface{Kind: "dataset", ID: d.ID, Label: d.Label, Scope: d.Scope}, true
		}
	}
	return nil, false
}

func (r *registration) surface(id string) (surfaceDef, bool) {
	for _, s := range r.surfaces {
		if s.ID == id {
			return s, true
		}
	}
	return surfaceDef{}, false
}

// field is the shared field schema of forms, setup steps, awaiting steps and
// resources.
type field struct {
	ID          string          `json:"id"`
	Label       string          `json:"label"`
	Type        string          `json:"type"`
	Required    bool            `json:"required"`
	Default     json.RawMessage `json:"default"`
	Placeholder string          `json:"placeholder"`
	Description string          `json:"description"`
	Multiline   bool            `json:"multiline"`
	MinRows     *int            `json:"min_rows"`
	Options     []struct {
		Value json.RawMessage `json:"value"`
		Label string          `json:"label"`
	} `json:"options"`
	OptionsSource *struct {
		Resource   string  `json:"resource"`
		ValueField string  `json:"value_field"`
		LabelField *string `json:"label_field"`
	} `json:"options_source"`
	DependsOn *struct {
		Field string   `json:"field"`
		In    []string `json:"in"`
	} `json:"depends_on"`
	Validation *struct {
		MinLength *int     `json:"min_length"`
		MaxLength *int     `json:"max_length"`
		Pattern   *string  `json:"pattern"`
		Min       *float64 `json:"min"`
		Max       *float64 `json:"max"`
		MinItems  *int     `json:"min_items"`
		MaxItems  *int     `json:"max_items"`
		Message   *string  `json:"message"`
	} `json:"validation"`
	ItemFields []field `json:"item_fields"`
	Accept     string  `json:"accept"`
	MaxBytes   *int64  `json:"max_bytes"`
	Storage    string  `json:"storage"`
	ReadOnly   bool    `json:"read_only"`

	// Path is the field's input name inside the form (list items are
	// "list[].item"); set while rendering.
	Path string `json:"-"`
}

// Kind is the field type the preview renders: an unknown or empty type is a
// string field, as Studio renders it.
func (f field) Kind() string {
	switch f.Type {
	case "text", "boolean", "integer", "number", "date", "select", "multi_select", "resource_ref", "file", "list":
		return f.Type
	case "string":
		if f.Multiline {
			return "text"
		}
	}
	return "string"
}

// Hints are the validation rules shown under the field.
func (f field) Hints() []string {
	var h []string
	if f.Required {
		h = append(h, "required")
	}
	if v := f.Validation; v != nil {
		if v.MinLength != nil {
			h = append(h, fmt.Sprintf("at least %d characters", *v.MinLength))
		}
		if v.MaxLength != nil {
			h = append(h, fmt.Sprintf("at most %d characters", *v.MaxLength))
		}
		if v.Pattern != nil {
			h = append(h, "must match "+*v.Pattern)
		}
		if v.Min != nil {
			h = append(h, fmt.Sprintf("minimum %g", *v.Min))
		}
		if v.Max != nil {
			h = append(h, fmt.Sprintf("maximum %g", *v.Max))
		}
		if v.MinItems != nil {
			h = append(h, fmt.Sprintf("at least %d items", *v.MinItems))
		}
		if v.MaxItems != nil {
			h = append(h, fmt.Sprintf("at most %d items", *v.MaxItems))
		}
		if v.Message != nil {
			h = append(h, *v.Message)
		}
	}
	if f.Accept != "" {
		h = append(h, "accepts "+f.Accept)
	}
	if f.MaxBytes != nil {
		h = append(h, fmt.Sprintf("at most %d bytes", *f.MaxBytes))
	}
	if f.OptionsSource != nil {
		h = append(h, "an id of the resource "+f.OptionsSource.Resource)
	}
	return h
}

// DependsJSON is the depends_on.in list as JSON, for the script that shows
// and hides the field.
func (f field) DependsJSON() string {
	if f.DependsOn == nil {
		return ""
	}
	b, _ := json.Marshal(f.DependsOn.In)
	return string(b)
}

// DefaultText is the default value as the text an input shows.
func (f field) DefaultText() string { return scalarText(f.Default) }

// DefaultBool reports a default of true.
func (f field) DefaultBool() bool { return strings.TrimSpace(string(f.Default)) == "true" }

// Selected reports whether the option value is the default (or one of the
// defaults of a multi_select).
func (f field) Selected(value json.RawMessage) bool {
	if len(f.Default) == 0 {
		return false
	}
	v := scalarText(value)
	var list []json.RawMessage
	if json.Unmarshal(f.Default, &list) == nil {
		for _, d := range list {
			if scalarText(d) == v {
				return true
			}
		}
		return false
	}
	return scalarText(f.Default) == v
}

// scalarText renders a JSON scalar as text: a string without quotes, other
// values as their JSON; null and absent values are empty.
func scalarText(raw json.RawMessage) string {
	s := strings.TrimSpace(string(raw))
	if s == "" || s == "null" {
		return ""
	}
	var str string
	if json.Unmarshal(raw, &str) == nil {
		return str
	}
	return s
}

// document is a surface document: its type selects which keys matter.
type document struct {
	Type     string          `json:"type"`
	ID       string          `json:"id"`
	Title    string          `json:"title"`
	Fields   []field         `json:"fields"`
	Submit   *submit         `json:"submit"`
	Preview  *submit         `json:"preview"`
	State    json.RawMessage `json:"state"`
	Document *struct {
		Title      string `json:"title"`
		Field      string `json:"field"`
		Language   string `json:"language"`
		Value      string `json:"value"`
		Validation []struct {
			ID     string `json:"id"`
			Label  string `json:"label"`
			Status string `json:"status"`
		} `json:"validation"`
	} `json:"document"`
	Resource        string   `json:"resource"`
	AcceptedFormats []string `json:"accepted_formats"`
	Columns         []struct {
		ID       string `json:"id"`
		Label    string `json:"label"`
		Type     string `json:"type"`
		Required bool   `json:"required"`
	} `json:"columns"`
	Datasets []struct {
		ID      string           `json:"id"`
		Metrics []map[string]any `json:"metrics"`
	} `json:"datasets"`
	Widgets []widget `json:"widgets"`
}

type submit struct {
	Action string `json:"action"`
	Label  string `json:"label"`
}

type widget struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	Data  *struct {
		Mode      string          `json:"mode"`
		DatasetID *string         `json:"datasetId"`
		Action    *string         `json:"action"`
		Input     map[string]any  `json:"input"`
		Values    json.RawMessage `json:"values"`
	} `json:"data"`
	Visualization struct {
		Type string          `json:"type"`
		Spec json.RawMessage `json:"spec"`
	} `json:"visualization"`
}

// table is rows of a dataset with their columns, in display order.
type table struct {
	Columns []string
	Rows    [][]string
	JSON    string // the rows as JSON, for the chart script
	Err     string
}

// newTable builds a table from rows; columns come first from preferred, then
// every other key in name order.
func newTable(rows []map[string]any, preferred []string) table {
	seen := map[string]bool{}
	var cols []string
	for _, c := range preferred {
		if !seen[c] {
			seen[c] = true
			cols = append(cols, c)
		}
	}
	var rest []string
	for _, r := range rows {
		for k := range r {
			if !seen[k] {
				seen[k] = true
				rest = append(rest, k)
			}
		}
	}
	sort.Strings(rest)
	cols = append(cols, rest...)
	t := table{Columns: cols}
	for _, r := range rows {
		line := make([]string, len(cols))
		for i, c := range cols {
			line[i] = cellText(r[c])
		}
		t.Rows = append(t.Rows, line)
	}
	b, _ := json.Marshal(rows)
	t.JSON = string(b)
	return t
}

func cellText(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	default:
		b, _ := json.Marshal(v)
		return string(b)
	}
}

// prettyJSON indents raw JSON, keeping its key order; it returns raw
// unchanged when it is not JSON.
func prettyJSON(raw []byte) string {
	var buf bytes.Buffer
	if json.Indent(&buf, raw, "", "  ") != nil {
		return string(raw)
	}
	return buf.String()
}
