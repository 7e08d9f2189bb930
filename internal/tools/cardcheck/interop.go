package cardcheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// LegacyMembers are the members of the legacy Supervaizer card, which no A2A
// version defines: the card keeps them beside the A2A members.
var LegacyMembers = []string{
	"developer", "version_info", "logo_url", "human_url", "contact_information",
	"api_endpoints", "tools", "authentication", "supervaizer",
}

// AgentCardV10 mirrors the JSON form of the A2A 1.0 AgentCard message, the
// card A2A 1.x clients read: the interfaces are in supportedInterfaces, each
// with its own protocol version, and the card itself has no url,
// protocolVersion or preferredTransport.
type AgentCardV10 struct {
	Name                string                `json:"name"`
	Description         string                `json:"description"`
	SupportedInterfaces []AgentInterfaceV10   `json:"supportedInterfaces"`
	Provider            *AgentProvider        `json:"provider"`
	Version             string                `json:"version"`
	DocumentationURL    *string               `json:"documentationUrl"`
	Capabilities        *AgentCapabilitiesV10 `json:"capabilities"`
	// SecuritySchemes is kept raw: the 1.0 JSON form names the scheme's kind by
	// a member (apiKeySecurityScheme, …) where 0.3 has "type"; 1.x clients
	// accept both forms, and the card uses the 0.3 one. See AgentCardV03.
	SecuritySchemes      map[string]json.RawMessage `json:"securitySchemes"`
	SecurityRequirements []SecurityRequirementV10   `json:"securityRequirements"`
	DefaultInputModes    []string                   `json:"defaultInputModes"`
	DefaultOutputModes   []string                   `json:"defaultOutputModes"`
	Skills               []AgentSkillV10            `json:"skills"`
	Signatures           []AgentCardSignature       `json:"signatures"`
	IconURL              *string                    `json:"iconUrl"`
}

// AgentInterfaceV10 mirrors the A2A 1.0 AgentInterface: where, over which
// protocol binding (JSONRPC, GRPC, HTTP+JSON) and at which A2A protocol
// version a client reaches the agent.
type AgentInterfaceV10 struct {
	URL             string `json:"url"`
	ProtocolBinding string `json:"protocolBinding"`
	Tenant          string `json:"tenant"`
	ProtocolVersion string `json:"protocolVersion"`
}

// AgentCapabilitiesV10 mirrors the A2A 1.0 AgentCapabilities.
type AgentCapabilitiesV10 struct {
	Streaming         *bool            `json:"streaming"`
	PushNotifications *bool            `json:"pushNotifications"`
	Extensions        []AgentExtension `json:"extensions"`
	ExtendedAgentCard *bool            `json:"extendedAgentCard"`
}

// AgentSkillV10 mirrors the A2A 1.0 AgentSkill.
type AgentSkillV10 struct {
	ID                   string                   `json:"id"`
	Name                 string                   `json:"name"`
	Description          string                   `json:"description"`
	Tags                 []string                 `json:"tags"`
	Examples             []string                 `json:"examples"`
	InputModes           []string                 `json:"inputModes"`
	OutputModes          []string                 `json:"outputModes"`
	SecurityRequirements []SecurityRequirementV10 `json:"securityRequirements"`
}

// SecurityRequirementV10 mirrors the A2A 1.0 SecurityRequirement.
type SecurityRequirementV10 struct {
	Schemes map[string]struct {
		List []string `json:"list"`
	} `json:"schemes"`
}

// AgentCardV03 mirrors the A2A 0.3 AgentCard (a superset of 0.2.6's).
type AgentCardV03 struct {
	Name                              string                       `json:"name"`
	Description                       string                       `json:"description"`
	URL                               string                       `json:"url"`
	Version                           string                       `json:"version"`
	ProtocolVersion                   string                       `json:"protocolVersion"`
	PreferredTransport                *string                      `json:"preferredTransport"`
	AdditionalInterfaces              []AgentInterfaceV03          `json:"additionalInterfaces"`
	Capabilities                      AgentCapabilitiesV03         `json:"capabilities"`
	DefaultInputModes                 []string                     `json:"defaultInputModes"`
	DefaultOutputModes                []string                     `json:"defaultOutputModes"`
	Skills                            []AgentSkillV03              `json:"skills"`
	IconURL                           *string                      `json:"iconUrl"`
	DocumentationURL                  *string                      `json:"documentationUrl"`
	Provider                          *AgentProvider               `json:"provider"`
	SecuritySchemes                   map[string]SecuritySchemeV03 `json:"securitySchemes"`
	Security                          []map[string][]string        `json:"security"`
	SupportsAuthenticatedExtendedCard *bool                        `json:"supportsAuthenticatedExtendedCard"`
	Signatures                        []AgentCardSignature         `json:"signatures"`
}

// AgentInterfaceV03 mirrors the A2A 0.3 AgentInterface.
type AgentInterfaceV03 struct {
	URL       string `json:"url"`
	Transport string `json:"transport"`
}

// AgentCapabilitiesV03 mirrors the A2A 0.3 AgentCapabilities.
type AgentCapabilitiesV03 struct {
	Streaming              *bool            `json:"streaming"`
	PushNotifications      *bool            `json:"pushNotifications"`
	StateTransitionHistory *bool            `json:"stateTransitionHistory"`
	Extensions             []AgentExtension `json:"extensions"`
}

// AgentSkillV03 mirrors the A2A 0.3 AgentSkill.
type AgentSkillV03 struct {
	ID          string                `json:"id"`
	Name        string                `json:"name"`
	Description string                `json:"description"`
	Tags        []string              `json:"tags"`
	Examples    []string              `json:"examples"`
	InputModes  []string              `json:"inputModes"`
	OutputModes []string              `json:"outputModes"`
	Security    []map[string][]string `json:"security"`
}

// SecuritySchemeV03 mirrors the A2A 0.3 SecurityScheme union: Type names the
// kind (apiKey, http, oauth2, openIdConnect, mutualTLS), which says which of
// the other members apply.
type SecuritySchemeV03 struct {
	Type              string          `json:"type"`
	Description       string          `json:"description"`
	In                string          `json:"in"`
	Name              string          `json:"name"`
	Scheme            string          `json:"scheme"`
	BearerFormat      string          `json:"bearerFormat"`
	Flows             json.RawMessage `json:"flows"`
	OAuth2MetadataURL string          `json:"oauth2MetadataUrl"`
	OpenIDConnectURL  string          `json:"openIdConnectUrl"`
}

// AgentExtension mirrors AgentExtension, the same in A2A 0.3 and 1.0.
type AgentExtension struct {
	URI         string         `json:"uri"`
	Description string         `json:"description"`
	Required    bool           `json:"required"`
	Params      map[string]any `json:"params"`
}

// AgentProvider mirrors AgentProvider, the same in A2A 0.3 and 1.0.
type AgentProvider struct {
	Organization string `json:"organization"`
	URL          string `json:"url"`
}

// AgentCardSignature mirrors AgentCardSignature, the same in A2A 0.3 and 1.0.
type AgentCardSignature struct {
	Protected string         `json:"protected"`
	Signature string         `json:"signature"`
	Header    map[string]any `json:"header"`
}

// DecodeStrict decodes the JSON object card into out, a pointer to one of the
// mirror types of this package, rejecting unknown members at every level
// (where the mirror keeps a member raw or as a map, its content is free) and
// members of the wrong JSON type. The top-level members named in allowed are
// ignored: members the card may carry beside those of the mirrored version.
func DecodeStrict(card []byte, out any, allowed ...string) error {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(card, &members); err != nil {
		return fmt.Errorf("cardcheck: the card is not a JSON object: %w", err)
	}
	for _, name := range allowed {
		delete(members, name)
	}
	rest, err := json.Marshal(members)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(rest))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		return fmt.Errorf("cardcheck: decode into %T: %w", out, err)
	}
	return nil
}

// DecodeSupervaizerCard decodes a Supervaizer Agent Card strictly as an A2A
// 1.0 card and as an A2A 0.3 card. Besides the members of its version, the
// 1.0 view allows the members 0.3 cards carry for 0.3 clients (url,
// protocolVersion, preferredTransport, security) and the [LegacyMembers]; the
// 0.3 view allows supportedInterfaces and the [LegacyMembers].
func DecodeSupervaizerCard(card []byte) (AgentCardV10, AgentCardV03, error) {
	var v10 AgentCardV10
	var v03 AgentCardV03
	err := errors.Join(
		DecodeStrict(card, &v10, append([]string{"url", "protocolVersion", "preferredTransport", "security"}, LegacyMembers...)...),
		DecodeStrict(card, &v03, append([]string{"supportedInterfaces"}, LegacyMembers...)...),
	)
	return v10, v03, err
}
