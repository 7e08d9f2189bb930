package contracts

// Introduction is the agent-list entry and conversation opening Studio builds
// (V2AgentIntroduction). AvatarURL, when set, is an
// absolute https URL.
type Introduction struct {
	Tagline      string   `json:"tagline" sv:"required,nonblank,maxLen=120"`
	Summary      string   `json:"summary" sv:"required,nonblank,maxLen=300"`
	ExampleGoals []string `json:"example_goals" sv:"required,minItems=1,maxItems=5"`
	AvatarURL    string   `json:"avatar_url,omitempty" sv:"format=uri"`
	Extra        Extra    `json:"-"`
}

func (Introduction) extendSchema(s map[string]any) {
	props := s["properties"].(map[string]any)
	props["example_goals"].(map[string]any)["items"] = map[string]any{"type": "string", "maxLength": 120}
	props["avatar_url"].(map[string]any)["pattern"] = `^https://[^/?#\s]+`
}

// MarshalJSON implements json.Marshaler.
func (i Introduction) MarshalJSON() ([]byte, error) {
	type alias Introduction
	return marshalOpen((*alias)(&i), i.Extra)
}

// UnmarshalJSON implements json.Unmarshaler.
func (i *Introduction) UnmarshalJSON(b []byte) error {
	type alias Introduction
	var v alias
	extra, err := unmarshalOpen(b, &v)
	*i = Introduction(v)
	i.Extra = extra
	return err
}

// Full-description formats.
const (
	FormatMarkdown = "markdown"
	FormatHTML     = "html"
)

// FullDescription is the agent detail page text (V2AgentFullDescription,
// the protocol). An empty Format is written as "markdown".
type FullDescription struct {
	Format  string `json:"format" sv:"enum=markdown|html"`
	Content string `json:"content" sv:"required,nonblank,minLen=1,maxLen=100000"`
	Extra   Extra  `json:"-"`
}

// MarshalJSON implements json.Marshaler.
func (d FullDescription) MarshalJSON() ([]byte, error) {
	type alias FullDescription
	if d.Format == "" {
		d.Format = FormatMarkdown
	}
	return marshalOpen((*alias)(&d), d.Extra)
}

// UnmarshalJSON implements json.Unmarshaler.
func (d *FullDescription) UnmarshalJSON(b []byte) error {
	type alias FullDescription
	v := alias{Format: FormatMarkdown}
	extra, err := unmarshalOpen(b, &v)
	*d = FullDescription(v)
	d.Extra = extra
	return err
}

// BillingItem is one SKU of an agent's billing catalog (BillingCatalogItem,
// the protocol). Prices live in Studio.
type BillingItem struct {
	SKU         string `json:"sku" sv:"required,minLen=1,maxLen=64,pattern=^[a-z0-9_]+$"`
	Unit        string `json:"unit" sv:"required,minLen=1,maxLen=32"`
	Description string `json:"description" sv:"maxLen=255"`
	Extra       Extra  `json:"-"`
}

// MarshalJSON implements json.Marshaler.
func (b BillingItem) MarshalJSON() ([]byte, error) {
	type alias BillingItem
	return marshalOpen((*alias)(&b), b.Extra)
}

// UnmarshalJSON implements json.Unmarshaler.
func (b *BillingItem) UnmarshalJSON(data []byte) error {
	type alias BillingItem
	var v alias
	extra, err := unmarshalOpen(data, &v)
	*b = BillingItem(v)
	b.Extra = extra
	return err
}

// BillingCatalog is the list of an agent's billable SKUs; SKUs are unique.
type BillingCatalog []BillingItem

// Context-item scopes.
const (
	ContextScopeWorkspace = "workspace"
	ContextScopeMission   = "mission"
)

// ContextAssignment is the input of the context.assign action
// (V2ContextAssignment). An empty Items list is an explicit
// "no context" assignment. MissionID is required when any item is mission-scoped.
type ContextAssignment struct {
	Items      []ContextItem `json:"items" sv:"required"`
	JobID      string        `json:"job_id" sv:"required,nonblank"`
	MissionID  string        `json:"mission_id,omitempty" sv:"null"`
	AssignedAt string        `json:"assigned_at" sv:"required,format=date-time"`
	Extra      Extra         `json:"-"`
}

// MarshalJSON implements json.Marshaler.
func (a ContextAssignment) MarshalJSON() ([]byte, error) {
	type alias ContextAssignment
	return marshalOpen((*alias)(&a), a.Extra)
}

// UnmarshalJSON implements json.Unmarshaler.
func (a *ContextAssignment) UnmarshalJSON(b []byte) error {
	type alias ContextAssignment
	var v alias
	extra, err := unmarshalOpen(b, &v)
	*a = ContextAssignment(v)
	a.Extra = extra
	return err
}

// ContextItem is one assigned Studio context item, by reference and version.
type ContextItem struct {
	Ref     string `json:"ref" sv:"required,nonblank"`
	Version int    `json:"version" sv:"required"`
	Scope   string `json:"scope" sv:"required,enum=workspace|mission"`
	Title   string `json:"title" sv:"required"`
	Extra   Extra  `json:"-"`
}

// MarshalJSON implements json.Marshaler.
func (i ContextItem) MarshalJSON() ([]byte, error) {
	type alias ContextItem
	return marshalOpen((*alias)(&i), i.Extra)
}

// UnmarshalJSON implements json.Unmarshaler.
func (i *ContextItem) UnmarshalJSON(b []byte) error {
	type alias ContextItem
	var v alias
	extra, err := unmarshalOpen(b, &v)
	*i = ContextItem(v)
	i.Extra = extra
	return err
}
