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

func (d *FullDescription) encodeDefaults() {
	if d.Format == "" {
		d.Format = FormatMarkdown
	}
}

func (d *FullDescription) decodeDefaults() { *d = FullDescription{Format: FormatMarkdown} }

// BillingItem is one SKU of an agent's billing catalog (BillingCatalogItem,
// the protocol). Prices live in Studio.
type BillingItem struct {
	SKU         string `json:"sku" sv:"required,minLen=1,maxLen=64,pattern=^[a-z0-9_]+$"`
	Unit        string `json:"unit" sv:"required,minLen=1,maxLen=32"`
	Description string `json:"description" sv:"maxLen=255"`
	Extra       Extra  `json:"-"`
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

// ContextItem is one assigned Studio context item, by reference and version.
type ContextItem struct {
	Ref     string `json:"ref" sv:"required,nonblank"`
	Version int    `json:"version" sv:"required"`
	Scope   string `json:"scope" sv:"required,enum=workspace|mission"`
	Title   string `json:"title" sv:"required"`
	Extra   Extra  `json:"-"`
}
