package a2a

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/supervaize/supervaizer-go/a2atask"
	"github.com/supervaize/supervaizer-go/contracts"
)

// Defaults and fixed values of the Agent Card.
const (
	// DefaultA2AVersion is the A2A protocol version a card states, in
	// protocolVersion and in its 0.3 JSON-RPC interface, when
	// [CardInput.A2AVersion] is empty. The same endpoint also speaks the A2A
	// 1.0 JSON-RPC binding, which supportedInterfaces lists first.
	DefaultA2AVersion = "0.3.0"
	// DefaultDeveloper is the developer name used when none is given.
	DefaultDeveloper = "Supervaize"
	// TransportJSONRPC is the card's preferredTransport and the protocolBinding
	// of its interface: POST /a2a speaks JSON-RPC 2.0.
	TransportJSONRPC = "JSONRPC"
	// SecuritySchemeAPIKey names the card's security scheme: the controller
	// key sent in the [APIKeyHeader] header.
	SecuritySchemeAPIKey = "apiKey"
	// APIKeyHeader is the header that carries the controller key on /a2a and /api.
	APIKeyHeader = "X-API-Key"
	// MediaTypeJSON is the only input and output mode of a Supervaizer agent.
	MediaTypeJSON = "application/json"
	// MediaTypeText is the input mode of an agent's conversation action: a
	// plain text A2A message calls it.
	MediaTypeText = "text/plain"
	// DefaultConversationExample is the example of a conversation skill
	// whose agent gives none.
	DefaultConversationExample = "What can you do?"
	// ExtensionURI identifies the Supervaizer v2 extension in the card's
	// capabilities.extensions.
	ExtensionURI = "https://supervaize.com/extensions/supervaizer/v2"
	// SkillTag is the first tag of every skill; the second is the action's scope.
	SkillTag = "supervaizer"
	// DefaultScope is the scope of an action that states none.
	DefaultScope = contracts.ScopeJob
	// KindHelp is the kind of a help action; any other kind is a command.
	KindHelp = contracts.KindHelp
	// MaxCardBytes is the largest compact JSON encoding of a card (1 MiB).
	// Marshalling a larger card fails with [ErrCardTooLarge].
	MaxCardBytes = 1 << 20
)

// Informative values of the legacy card members (docs/protocol.md, Agent Card).
const (
	developerURL    = "https://supervaize.com/"
	developerEmail  = "info@supervaize.com"
	supportEmail    = "support@supervaize.com"
	methodInvoke    = "supervaizer/action.invoke"
	methodSurface   = "supervaizer/surface.load"
	extensionDesc   = "Supervaizer v2 agent controller. The v2 registration is the card member supervaizer.v2; actions and surfaces are called with the JSON-RPC methods " + methodInvoke + " and " + methodSurface + " at url; effects stream from url/events."
	authDescription = "Authentication is handled at the server level: the /a2a and /api routes require an X-API-Key header, and actions also require a workspace token."
	// apiKeyDescription describes the apiKey security scheme.
	apiKeyDescription = "The controller key, sent in the X-API-Key header on every call to url, its event stream and the /api routes. Actions also need a workspace token in the X-Supervaize-Workspace-Authorization header."
	toolJobStart      = "job_start"
	toolJobStatus     = "job_status"
)

var (
	jobStartSchema  = json.RawMessage(`{"type":"object","properties":{"job_context":{"type":"object"},"job_fields":{"type":"object"}},"required":["job_fields"]}`)
	jobStatusSchema = json.RawMessage(`{"type":"object","properties":{"job_id":{"type":"string"}},"required":["job_id"]}`)
	customSchema    = json.RawMessage(`{"type":"object"}`)
)

var (
	// ErrInvalidCardInput is wrapped by every error [NewAgentCard] and
	// [NewAgentSummary] return for input they reject.
	ErrInvalidCardInput = errors.New("a2a: invalid card input")
	// ErrCardTooLarge is wrapped by the error returned when a card's compact
	// JSON encoding exceeds [MaxCardBytes].
	ErrCardTooLarge = errors.New("a2a: agent card too large")
)

// AgentCard is the Agent Card of one agent, served at [CardPath] and
// [VersionedCardPath] (and, for the primary agent, at [WellKnownCardPath] and
// [WellKnownCardPathV02]).
//
// It is at once the legacy Supervaizer card (developer, version_info,
// api_endpoints, tools, authentication, supervaizer.v2, …), a valid standard
// A2A AgentCard for protocol versions 0.2.6 and 0.3.0 (url, protocolVersion,
// preferredTransport, capabilities, skills, default modes, securitySchemes,
// security), and a card A2A 1.x clients accept: supportedInterfaces names
// the JSON-RPC interface at url with its protocol version. Build it with
// [NewAgentCard].
type AgentCard struct {
	// Name is the agent's name.
	Name string `json:"name"`
	// Description is the agent's description; it may be empty but is always present.
	Description string `json:"description"`
	// Version is the agent's own version.
	Version string `json:"version"`
	// URL is the absolute URL of the JSON-RPC controller endpoint, <base>/a2a.
	URL string `json:"url"`
	// ProtocolVersion is the pinned A2A protocol version.
	ProtocolVersion string `json:"protocolVersion"`
	// PreferredTransport is the transport available at URL ([TransportJSONRPC]).
	PreferredTransport string `json:"preferredTransport,omitempty"`
	// SupportedInterfaces lists the interfaces in the A2A 1.0 form, the
	// preferred first: the A2A 1.0 JSON-RPC binding at URL (protocol version
	// [a2atask.ProtocolVersion10]), then the 0.3 binding at the same URL
	// with ProtocolVersion. POST /a2a serves both; a client chooses by the
	// version it speaks.
	SupportedInterfaces []AgentInterface `json:"supportedInterfaces"`
	// Capabilities lists the optional A2A capabilities and the extensions.
	Capabilities AgentCapabilities `json:"capabilities"`
	// DefaultInputModes lists the accepted media types.
	DefaultInputModes []string `json:"defaultInputModes"`
	// DefaultOutputModes lists the produced media types.
	DefaultOutputModes []string `json:"defaultOutputModes"`
	// Skills has one entry per declared action, in registration order.
	Skills []AgentSkill `json:"skills"`
	// SecuritySchemes declares how calls authenticate, by scheme name:
	// [SecuritySchemeAPIKey], the [APIKeyHeader] header.
	SecuritySchemes map[string]APIKeySecurityScheme `json:"securitySchemes,omitempty"`
	// Security lists the alternative requirements a call must meet; the card
	// requires the [SecuritySchemeAPIKey] scheme, with no scopes.
	Security []SecurityRequirement `json:"security,omitempty"`

	// Developer is the legacy developer block.
	Developer Developer `json:"developer"`
	// VersionInfo is the legacy version block.
	VersionInfo VersionInfo `json:"version_info"`
	// LogoURL is <base>/static/agents/<slug>_logo.png.
	LogoURL string `json:"logo_url"`
	// HumanURL is <base>/agents/<slug>.
	HumanURL string `json:"human_url"`
	// ContactInformation is the legacy contact block.
	ContactInformation ContactInformation `json:"contact_information"`
	// APIEndpoints is the informative legacy endpoint list (one entry).
	APIEndpoints []APIEndpoint `json:"api_endpoints"`
	// Tools is the informative v1 tool list.
	Tools []Tool `json:"tools"`
	// Authentication is the legacy authentication block.
	Authentication Authentication `json:"authentication"`
	// Supervaizer carries the v2 registration; nil when the agent declares none,
	// in which case the key is omitted.
	Supervaizer *SupervaizerExtension `json:"supervaizer,omitempty"`
}

// AgentInterface is one interface of a card in the A2A 1.0 form: the URL, the
// protocol binding spoken there and the A2A protocol version of that binding.
type AgentInterface struct {
	// URL is the absolute URL of the interface.
	URL string `json:"url"`
	// ProtocolBinding is the transport ([TransportJSONRPC]).
	ProtocolBinding string `json:"protocolBinding"`
	// ProtocolVersion is the A2A protocol version of the interface.
	ProtocolVersion string `json:"protocolVersion"`
}

// APIKeySecurityScheme is an A2A security scheme of type "apiKey": a key sent
// in a header, a query parameter or a cookie.
type APIKeySecurityScheme struct {
	// Type is "apiKey".
	Type string `json:"type"`
	// In is where the key is sent: "header", "query" or "cookie".
	In string `json:"in"`
	// Name is the header, parameter or cookie name.
	Name string `json:"name"`
	// Description describes the scheme.
	Description string `json:"description,omitempty"`
}

// SecurityRequirement maps security scheme names to the scopes a call needs
// (none for an API key). A call meets the requirement when it meets every
// scheme it names.
type SecurityRequirement map[string][]string

// MarshalJSON encodes the requirement; a nil scope list is encoded as [].
func (r SecurityRequirement) MarshalJSON() ([]byte, error) {
	out := make(map[string][]string, len(r))
	for name, scopes := range r {
		out[name] = orEmpty(scopes)
	}
	return json.Marshal(out)
}

// AgentCapabilities is the A2A capabilities object of a card.
type AgentCapabilities struct {
	// Streaming is true: message/stream and tasks/resubscribe are served on
	// /a2a as text/event-stream (package a2atask; the Supervaizer event stream
	// is the separate GET /a2a/events).
	Streaming bool `json:"streaming"`
	// PushNotifications is false: push notifications are not implemented.
	PushNotifications bool `json:"pushNotifications"`
	// Extensions lists the protocol extensions the agent supports.
	Extensions []AgentExtension `json:"extensions,omitempty"`
}

// AgentExtension declares one A2A protocol extension.
type AgentExtension struct {
	// URI identifies the extension.
	URI string `json:"uri"`
	// Description says how the agent uses the extension.
	Description string `json:"description,omitempty"`
	// Required tells clients whether they must understand the extension.
	Required bool `json:"required"`
	// Params are the extension's parameters (a JSON object), when it has
	// any: the campaign-control extension's operations map, say.
	Params json.RawMessage `json:"params,omitempty"`
}

// AgentSkill is one A2A skill; a Supervaizer card has one per declared action.
type AgentSkill struct {
	// ID is the action id.
	ID string `json:"id"`
	// Name is the action's label, else its id.
	Name string `json:"name"`
	// Description is the action's description, else a generated sentence.
	Description string `json:"description"`
	// Tags is ["supervaizer", <scope>].
	Tags []string `json:"tags"`
	// InputModes is ["application/json"]: an A2A message calls the skill
	// with one data part {"action": <id>, "input": {...}} (package a2atask).
	InputModes []string `json:"inputModes,omitempty"`
	// Examples are example messages of the conversation action's skill
	// (the agent's conversation examples); none for another skill.
	Examples []string `json:"examples,omitempty"`
}

// Developer is the legacy developer block of a card.
type Developer struct {
	// Name is the developer, else the author, else [DefaultDeveloper].
	Name string `json:"name"`
	// URL is https://supervaize.com/.
	URL string `json:"url"`
	// Email is info@supervaize.com.
	Email string `json:"email"`
}

// VersionInfo is the legacy version block of a card.
type VersionInfo struct {
	// Current is the agent's version.
	Current string `json:"current"`
	// Latest is the agent's version.
	Latest string `json:"latest"`
	// ChangelogURL is <base>/changelog/<slug>.
	ChangelogURL string `json:"changelog_url"`
}

// ContactInformation is the legacy contact block of a card.
type ContactInformation struct {
	// General is the general contact.
	General Contact `json:"general"`
}

// Contact is one contact entry.
type Contact struct {
	// Email is the contact address.
	Email string `json:"email"`
}

// APIEndpoint is one informative entry of the legacy api_endpoints list.
type APIEndpoint struct {
	// Type is "json".
	Type string `json:"type"`
	// URL is <base>/agents/<slug>.
	URL string `json:"url"`
	// Name names the endpoint.
	Name string `json:"name"`
	// Description describes the endpoint.
	Description string `json:"description"`
	// OpenAPIURL is <base>/openapi.json.
	OpenAPIURL string `json:"openapi_url"`
	// DocsURL is <base>/docs.
	DocsURL string `json:"docs_url"`
	// Examples are informative example requests.
	Examples []EndpointExample `json:"examples"`
}

// EndpointExample is an informative example request of an [APIEndpoint].
type EndpointExample struct {
	// Name names the example.
	Name string `json:"name"`
	// Description explains the example.
	Description string `json:"description"`
	// Request is the HTTP request.
	Request ExampleRequest `json:"request"`
}

// ExampleRequest is the HTTP method and absolute URL of an [EndpointExample].
type ExampleRequest struct {
	// Method is the HTTP method.
	Method string `json:"method"`
	// URL is the absolute URL.
	URL string `json:"url"`
}

// Tool is one entry of the informative v1 tool list.
type Tool struct {
	// Name is the tool name (job_start, job_status or a custom method).
	Name string `json:"name"`
	// Description describes the tool.
	Description string `json:"description"`
	// InputSchema is a JSON Schema of the tool's input.
	InputSchema json.RawMessage `json:"input_schema"`
}

// Authentication is the legacy authentication block of a card.
type Authentication struct {
	// Type is "none": authentication is handled at the server level.
	Type string `json:"type"`
	// Description explains how the server authenticates calls.
	Description string `json:"description"`
}

// SupervaizerExtension is the card member "supervaizer".
type SupervaizerExtension struct {
	// V2 is the agent's v2 registration JSON object, embedded verbatim
	// (nulls included).
	V2 json.RawMessage `json:"v2"`
}

// CardInput is what [NewAgentCard] builds a card from.
type CardInput struct {
	// Name is the agent's name; it must not be blank.
	Name string
	// Description is the agent's description; it may be empty.
	Description string
	// Version is the agent's version. It must be non-empty and made of ASCII
	// letters, digits and . + _ ~ - only, since it is a URL path segment of
	// [VersionedCardPath].
	Version string
	// Slug is the agent slug; it must match ^[a-z0-9]+(-[a-z0-9]+)*$, the shape
	// of every derived slug.
	Slug string
	// Developer is the agent's developer, else its author, or "" (a blank value
	// becomes [DefaultDeveloper]).
	Developer string
	// BaseURL is the controller's absolute public http(s) URL, resolved once
	// after applying the <scheme>://<host>:<port> fallback. A trailing slash is
	// removed; userinfo, a query or a fragment is rejected.
	BaseURL string
	// A2AVersion is the A2A protocol version of the card (protocolVersion) and
	// of its JSON-RPC interface; empty means [DefaultA2AVersion]. A2A 1.x
	// clients accept an interface only from version 0.3 on. It is independent
	// of the registration's versions.a2a_version.
	A2AVersion string
	// Registration is the v2 registration JSON object, embedded verbatim under
	// supervaizer.v2. Empty (or the JSON literal null) means the agent declares
	// no v2 registration: the card has no "supervaizer" key and no extension.
	Registration json.RawMessage
	// Extensions are further capabilities.extensions the agent serves (the
	// campaign-control extension, say), listed after the Supervaizer one.
	Extensions []AgentExtension
	// Actions are the declared actions in registration order; each becomes a skill.
	Actions []ActionInfo
	// CustomMethods are the names of the agent's v1 custom methods, listed as
	// informative tools after job_start and job_status.
	CustomMethods []string
}

// ActionInfo is the part of a declared action a card needs.
type ActionInfo struct {
	// ID is the action id; it must not be blank and must be unique.
	ID string
	// Label is the display label; blank means the skill is named by ID.
	Label string
	// Description is the display description; blank means a generated sentence.
	Description string
	// Scope is workspace, mission or job; blank means [DefaultScope].
	Scope string
	// Mutating tells whether invoking the action changes agent-side state.
	Mutating bool
	// Kind is command or help; blank means command.
	Kind string
	// Conversation marks the agent's conversation action: its skill
	// accepts text/plain (a plain text message) besides application/json,
	// and carries Examples.
	Conversation bool
	// Examples are example messages of the conversation action's skill.
	Examples []string
}

// identity holds the validated members shared by the card and the discovery entry.
type identity struct {
	version, slug, developer, base string
}

// NewAgentCard builds the Agent Card described by in. It returns an error
// wrapping [ErrInvalidCardInput] when in is invalid (see the field docs of
// [CardInput] and [ActionInfo]; every string must be valid UTF-8, action ids and
// custom method names must be non-blank and unique), and one wrapping
// [ErrCardTooLarge] when the card's compact JSON exceeds [MaxCardBytes].
//
// The card owns copies of the slices and registration bytes of in.
func NewAgentCard(in CardInput) (*AgentCard, error) {
	id, err := checkIdentity(in)
	if err != nil {
		return nil, err
	}
	if err := checkText("description", in.Description); err != nil {
		return nil, err
	}
	protocol := in.A2AVersion
	if protocol == "" {
		protocol = DefaultA2AVersion
	}
	if err := checkNonBlank("A2A version", protocol); err != nil {
		return nil, err
	}
	registration, err := checkRegistration(in.Registration)
	if err != nil {
		return nil, err
	}
	skills, err := buildSkills(in.Actions)
	if err != nil {
		return nil, err
	}
	tools, err := buildTools(in.Name, in.CustomMethods)
	if err != nil {
		return nil, err
	}

	base, agentURL := id.base, id.base+"/agents/"+id.slug
	controller := base + ControllerPath
	card := &AgentCard{
		Name:                in.Name,
		Description:         in.Description,
		Version:             in.Version,
		URL:                 controller,
		ProtocolVersion:     protocol,
		PreferredTransport:  TransportJSONRPC,
		SupportedInterfaces: interfaces(controller, protocol),
		DefaultInputModes:   []string{MediaTypeJSON},
		DefaultOutputModes:  []string{MediaTypeJSON},
		Skills:              skills,
		SecuritySchemes: map[string]APIKeySecurityScheme{SecuritySchemeAPIKey: {
			Type: "apiKey", In: "header", Name: APIKeyHeader, Description: apiKeyDescription,
		}},
		Security:  []SecurityRequirement{{SecuritySchemeAPIKey: {}}},
		Developer: Developer{Name: id.developer, URL: developerURL, Email: developerEmail},
		VersionInfo: VersionInfo{
			Current:      in.Version,
			Latest:       in.Version,
			ChangelogURL: base + "/changelog/" + id.slug,
		},
		LogoURL:            base + "/static/agents/" + id.slug + "_logo.png",
		HumanURL:           agentURL,
		ContactInformation: ContactInformation{General: Contact{Email: supportEmail}},
		APIEndpoints: []APIEndpoint{{
			Type:        "json",
			URL:         agentURL,
			Name:        "Supervaize Agent API",
			Description: "Supervaizer controller API of " + in.Name + ".",
			OpenAPIURL:  base + "/openapi.json",
			DocsURL:     base + "/docs",
			Examples: []EndpointExample{
				{
					Name:        "Invoke an action",
					Description: "JSON-RPC 2.0 request with method " + methodInvoke + "; requires an X-API-Key with write scope.",
					Request:     ExampleRequest{Method: "POST", URL: controller},
				},
				{
					Name:        "Load a surface",
					Description: "JSON-RPC 2.0 request with method " + methodSurface + "; requires an X-API-Key with write scope.",
					Request:     ExampleRequest{Method: "POST", URL: controller},
				},
				{
					Name:        "Follow action effects",
					Description: "Server-Sent Events stream of action effects; requires an X-API-Key with read scope.",
					Request:     ExampleRequest{Method: "GET", URL: controller + "/events"},
				},
			},
		}},
		Tools:          tools,
		Authentication: Authentication{Type: "none", Description: authDescription},
	}
	card.Capabilities.Streaming = true // message/stream on /a2a (package a2atask)
	if registration != nil {
		card.Supervaizer = &SupervaizerExtension{V2: registration}
		card.Capabilities.Extensions = []AgentExtension{{URI: ExtensionURI, Description: extensionDesc}}
	}
	card.Capabilities.Extensions = append(card.Capabilities.Extensions, in.Extensions...)
	if _, err := card.MarshalJSON(); err != nil {
		return nil, err
	}
	return card, nil
}

// interfaces is the card's supportedInterfaces: the A2A 1.0 JSON-RPC
// binding first (A2A 1.0: the first entry is the preferred one), then the
// binding of protocol, both at controller; one entry when protocol is "1.0"
// itself.
func interfaces(controller, protocol string) []AgentInterface {
	out := []AgentInterface{{URL: controller, ProtocolBinding: TransportJSONRPC, ProtocolVersion: a2atask.ProtocolVersion10}}
	if protocol != a2atask.ProtocolVersion10 {
		out = append(out, AgentInterface{URL: controller, ProtocolBinding: TransportJSONRPC, ProtocolVersion: protocol})
	}
	return out
}

// MarshalJSON encodes the card compactly. Nil lists are encoded as [] (the
// A2A schemas require arrays, not null). It fails with an error wrapping
// [ErrCardTooLarge] when the encoding exceeds [MaxCardBytes], so a card that
// is too large is never served.
func (c AgentCard) MarshalJSON() ([]byte, error) {
	type wire AgentCard // same fields, no methods: no recursion
	w := wire(c)
	w.SupportedInterfaces = orEmpty(w.SupportedInterfaces)
	w.DefaultInputModes = orEmpty(w.DefaultInputModes)
	w.DefaultOutputModes = orEmpty(w.DefaultOutputModes)
	w.Skills = orEmpty(w.Skills)
	w.APIEndpoints = orEmpty(w.APIEndpoints)
	w.Tools = orEmpty(w.Tools)
	if hasNil(w.Skills, func(s AgentSkill) bool { return s.Tags == nil }) {
		w.Skills = append([]AgentSkill(nil), w.Skills...)
		for i := range w.Skills {
			w.Skills[i].Tags = orEmpty(w.Skills[i].Tags)
		}
	}
	if hasNil(w.APIEndpoints, func(e APIEndpoint) bool { return e.Examples == nil }) {
		w.APIEndpoints = append([]APIEndpoint(nil), w.APIEndpoints...)
		for i := range w.APIEndpoints {
			w.APIEndpoints[i].Examples = orEmpty(w.APIEndpoints[i].Examples)
		}
	}
	b, err := json.Marshal(w)
	if err != nil {
		return nil, err
	}
	if len(b) > MaxCardBytes {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrCardTooLarge, len(b), MaxCardBytes)
	}
	return b, nil
}

// MarshalJSON encodes the tool; a nil InputSchema is encoded as {} (an empty
// schema) rather than null.
func (t Tool) MarshalJSON() ([]byte, error) {
	type wire Tool
	w := wire(t)
	if len(w.InputSchema) == 0 {
		w.InputSchema = json.RawMessage(`{}`)
	}
	return json.Marshal(w)
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func hasNil[T any](s []T, isNil func(T) bool) bool {
	for _, v := range s {
		if isNil(v) {
			return true
		}
	}
	return false
}

// checkIdentity validates and normalizes the members shared by [NewAgentCard]
// and [NewAgentSummary].
func checkIdentity(in CardInput) (identity, error) {
	if err := checkNonBlank("name", in.Name); err != nil {
		return identity{}, err
	}
	if !validVersion(in.Version) {
		return identity{}, fmt.Errorf("%w: version %q must be non-empty ASCII letters, digits and . + _ ~ -", ErrInvalidCardInput, in.Version)
	}
	if !validSlug(in.Slug) {
		return identity{}, fmt.Errorf("%w: slug %q must match ^[a-z0-9]+(-[a-z0-9]+)*$", ErrInvalidCardInput, in.Slug)
	}
	if err := checkText("developer", in.Developer); err != nil {
		return identity{}, err
	}
	developer := in.Developer
	if strings.TrimSpace(developer) == "" {
		developer = DefaultDeveloper
	}
	base, err := normalizeBaseURL(in.BaseURL)
	if err != nil {
		return identity{}, err
	}
	return identity{version: in.Version, slug: in.Slug, developer: developer, base: base}, nil
}

// normalizeBaseURL checks that raw is an absolute http(s) URL with a host and
// no userinfo, query or fragment, and returns it without trailing slashes.
// Errors never quote raw: it could carry credentials.
func normalizeBaseURL(raw string) (string, error) {
	bad := fmt.Errorf("%w: base URL must be an absolute http or https URL with a host and no userinfo, query or fragment", ErrInvalidCardInput)
	if !utf8.ValidString(raw) || strings.ContainsAny(raw, "?#") || strings.IndexFunc(raw, unicode.IsSpace) >= 0 {
		return "", bad
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "" ||
		u.Opaque != "" || u.User != nil {
		return "", bad
	}
	return u.Scheme + "://" + u.Host + strings.TrimRight(u.EscapedPath(), "/"), nil
}

// checkRegistration returns a copy of raw when it holds a JSON object, nil when
// it is empty or the literal null, and an error otherwise.
func checkRegistration(raw json.RawMessage) (json.RawMessage, error) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return nil, nil
	}
	if trimmed[0] != '{' || !json.Valid(trimmed) {
		return nil, fmt.Errorf("%w: registration must be a JSON object", ErrInvalidCardInput)
	}
	return bytes.Clone(trimmed), nil
}

func buildSkills(actions []ActionInfo) ([]AgentSkill, error) {
	skills := make([]AgentSkill, 0, len(actions))
	seen := make(map[string]struct{}, len(actions))
	for i, a := range actions {
		for _, f := range []struct{ name, value string }{
			{"id", a.ID}, {"label", a.Label}, {"description", a.Description}, {"scope", a.Scope}, {"kind", a.Kind},
		} {
			if err := checkText(fmt.Sprintf("action %d %s", i, f.name), f.value); err != nil {
				return nil, err
			}
		}
		if strings.TrimSpace(a.ID) == "" {
			return nil, fmt.Errorf("%w: action %d has a blank id", ErrInvalidCardInput, i)
		}
		if _, dup := seen[a.ID]; dup {
			return nil, fmt.Errorf("%w: action %q is declared twice", ErrInvalidCardInput, a.ID)
		}
		seen[a.ID] = struct{}{}
		scope := a.Scope
		if strings.TrimSpace(scope) == "" {
			scope = DefaultScope
		}
		name := a.Label
		if strings.TrimSpace(name) == "" {
			name = a.ID
		}
		desc := a.Description
		if strings.TrimSpace(desc) == "" {
			desc = describeAction(a.ID, scope, a.Kind, a.Mutating)
		}
		skill := AgentSkill{ID: a.ID, Name: name, Description: desc, Tags: []string{SkillTag, scope}, InputModes: []string{MediaTypeJSON}}
		if a.Conversation {
			skill.InputModes = []string{MediaTypeText, MediaTypeJSON}
			skill.Examples = slices.Clone(a.Examples)
			if len(skill.Examples) == 0 {
				skill.Examples = []string{DefaultConversationExample}
			}
		}
		skills = append(skills, skill)
	}
	return skills, nil
}

// describeAction generates the description of an action that has none, e.g.
// `Supervaizer action "job.start" (job scope, mutating), invoked with the
// JSON-RPC method supervaizer/action.invoke.`
func describeAction(id, scope, kind string, mutating bool) string {
	what := "action"
	if kind == KindHelp {
		what = "help action"
	}
	effect := "read-only"
	if mutating {
		effect = "mutating"
	}
	return fmt.Sprintf("Supervaizer %s %q (%s scope, %s), invoked with the JSON-RPC method %s.", what, id, scope, effect, methodInvoke)
}

func buildTools(agent string, custom []string) ([]Tool, error) {
	tools := make([]Tool, 0, 2+len(custom))
	tools = append(tools,
		Tool{Name: toolJobStart, Description: "Start a job with " + agent + ".", InputSchema: jobStartSchema},
		Tool{Name: toolJobStatus, Description: "Get the status of a job of " + agent + ".", InputSchema: jobStatusSchema},
	)
	seen := map[string]struct{}{toolJobStart: {}, toolJobStatus: {}}
	for i, m := range custom {
		if err := checkNonBlank(fmt.Sprintf("custom method %d", i), m); err != nil {
			return nil, err
		}
		if _, dup := seen[m]; dup {
			return nil, fmt.Errorf("%w: custom method %q duplicates another tool", ErrInvalidCardInput, m)
		}
		seen[m] = struct{}{}
		tools = append(tools, Tool{Name: m, Description: "Custom method " + m + " of " + agent + ".", InputSchema: customSchema})
	}
	return tools, nil
}

func checkText(what, s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("%w: %s is not valid UTF-8", ErrInvalidCardInput, what)
	}
	return nil
}

func checkNonBlank(what, s string) error {
	if err := checkText(what, s); err != nil {
		return err
	}
	if strings.TrimSpace(s) == "" {
		return fmt.Errorf("%w: %s is blank", ErrInvalidCardInput, what)
	}
	return nil
}

func validSlug(s string) bool {
	if s == "" || s[0] == '-' || s[len(s)-1] == '-' || strings.Contains(s, "--") {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			return false
		}
	}
	return true
}

func validVersion(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '.', c == '+', c == '_', c == '~', c == '-':
		default:
			return false
		}
	}
	return true
}
