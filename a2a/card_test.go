package a2a_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/a2a"
	"github.com/supervaize/supervaizer-go/internal/tools/cardcheck"
	"github.com/supervaize/supervaizer-go/testing/golden"
)

func TestAgentCardGolden(t *testing.T) {
	_, got := mustCard(t, researchInput(t))
	golden.JSON(t, filepath.Join("testdata", "agent_card.golden.json"), got)
}

func TestAgentCardValidatesAgainstA2A(t *testing.T) {
	validators := cardValidators(t)
	many := make([]a2a.ActionInfo, 250)
	for i := range many {
		many[i] = a2a.ActionInfo{ID: fmt.Sprintf("resource.r%d.list", i), Scope: "workspace", Mutating: i%2 == 0}
	}
	noReg := researchInput(t)
	noReg.Registration = nil
	noActions := researchInput(t)
	noActions.Actions, noActions.CustomMethods = nil, nil
	manyActions := researchInput(t)
	manyActions.Actions = many
	odd := a2a.CardInput{
		Name: "Équipe <&> \"Agent\"", Version: "2.0.0-rc.1+build_7~x", Slug: "equipe-agent",
		BaseURL: "http://[::1]:8080/controller//", A2AVersion: "0.3.0",
		Registration: json.RawMessage(` {"agent": null, "n": 1e400} `),
		Actions:      []a2a.ActionInfo{{ID: "  spaced id  ", Label: " ", Description: "\t", Scope: " "}},
	}
	minimal := a2a.CardInput{Name: "A", Version: "1", Slug: "a", BaseURL: "http://a"}

	tests := []struct {
		name       string
		in         a2a.CardInput
		wantSkills int
		wantV2     bool
	}{
		{"registration and three actions", researchInput(t), 3, true},
		{"no registration", noReg, 3, false},
		{"no actions", noActions, 0, true},
		{"many actions", manyActions, 250, true},
		{"odd strings", odd, 1, true},
		{"minimal", minimal, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			card, b := mustCard(t, tt.in)
			for _, v := range validators {
				assert.NoError(t, v.Validate(b), v.Name)
			}
			var doc map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(b, &doc))
			var skills []json.RawMessage
			require.NoError(t, json.Unmarshal(doc["skills"], &skills))
			require.NotNil(t, skills, "skills is an array, never null")
			assert.Len(t, skills, tt.wantSkills)
			assert.Len(t, card.Skills, tt.wantSkills)
			_, hasV2 := doc["supervaizer"]
			assert.Equal(t, tt.wantV2, hasV2, "supervaizer key")
			if tt.wantV2 {
				assert.Equal(t, []a2a.AgentExtension{{URI: a2a.ExtensionURI, Description: card.Capabilities.Extensions[0].Description}}, card.Capabilities.Extensions)
				assert.NotEmpty(t, card.Capabilities.Extensions[0].Description)
			} else {
				assert.Empty(t, card.Capabilities.Extensions)
			}
		})
	}
}

func TestCardValidatorsRejectLegacyOnlyCard(t *testing.T) {
	t.Parallel()
	_, b := mustCard(t, researchInput(t))
	var doc map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(b, &doc))
	for _, member := range []string{"url", "protocolVersion", "capabilities", "skills", "defaultInputModes", "defaultOutputModes"} {
		delete(doc, member)
	}
	legacy, err := json.Marshal(doc)
	require.NoError(t, err)
	validators := cardValidators(t)
	for _, v := range validators {
		assert.Error(t, v.Validate(legacy), v.Name)
	}
	doc["skills"] = json.RawMessage(`null`)
	withNull, err := json.Marshal(doc)
	require.NoError(t, err)
	for _, v := range validators {
		assert.Error(t, v.Validate(withNull), v.Name)
	}
}

func TestZeroAgentCardValidates(t *testing.T) {
	t.Parallel()
	b, err := json.Marshal(a2a.AgentCard{Skills: []a2a.AgentSkill{{ID: "x"}}, APIEndpoints: []a2a.APIEndpoint{{}}, Tools: []a2a.Tool{{Name: "t"}}})
	require.NoError(t, err)
	for _, v := range cardValidators(t) {
		assert.NoError(t, v.Validate(b), v.Name)
	}
	assert.NotContains(t, string(b), "null", "unset card members must not be null")
	assert.Contains(t, string(b), `"supportedInterfaces":[]`)
	assert.NotContains(t, string(b), `"security`, "no security members unless set")
	assert.Contains(t, string(b), `"input_schema":{}`)
	assert.NotContains(t, string(b), `"supervaizer"`)

	b, err = json.Marshal(a2a.AgentCard{Security: []a2a.SecurityRequirement{{"apiKey": nil}}})
	require.NoError(t, err)
	assert.Contains(t, string(b), `"security":[{"apiKey":[]}]`, "no scopes is [], never null")
}

func TestNewAgentCardDerivedMembers(t *testing.T) {
	t.Parallel()
	in := researchInput(t)
	in.Developer = "  "
	card, err := a2a.NewAgentCard(in)
	require.NoError(t, err)

	assert.Equal(t, "https://research.example.com/a2a", card.URL)
	assert.Equal(t, "0.3.0", card.ProtocolVersion)
	assert.Equal(t, "JSONRPC", card.PreferredTransport)
	assert.Equal(t, []a2a.AgentInterface{
		{URL: "https://research.example.com/a2a", ProtocolBinding: "JSONRPC", ProtocolVersion: "1.0"},
		{URL: "https://research.example.com/a2a", ProtocolBinding: "JSONRPC", ProtocolVersion: "0.3.0"},
	}, card.SupportedInterfaces, "the 1.0 binding first (preferred), then the 0.3 one, at the same endpoint")
	assert.Equal(t, map[string]a2a.APIKeySecurityScheme{"apiKey": {Type: "apiKey", In: "header", Name: "X-API-Key",
		Description: card.SecuritySchemes["apiKey"].Description}}, card.SecuritySchemes)
	assert.Contains(t, card.SecuritySchemes["apiKey"].Description, "X-API-Key")
	assert.Equal(t, []a2a.SecurityRequirement{{"apiKey": {}}}, card.Security)
	assert.Equal(t, []string{"application/json"}, card.DefaultInputModes)
	assert.Equal(t, []string{"application/json"}, card.DefaultOutputModes)
	assert.True(t, card.Capabilities.Streaming, "message/stream is served")
	assert.False(t, card.Capabilities.PushNotifications)
	assert.Equal(t, "Supervaize", card.Developer.Name)
	json := []string{"application/json"}
	assert.Equal(t, []a2a.AgentSkill{
		{ID: "job.start", Name: "Start research", Description: "Starts a research job from a question.", Tags: []string{"supervaizer", "job"}, InputModes: json},
		{ID: "resource.contacts.list", Name: "List contacts",
			Description: `Supervaizer action "resource.contacts.list" (workspace scope, read-only), invoked with the JSON-RPC method supervaizer/action.invoke.`,
			Tags:        []string{"supervaizer", "workspace"}, InputModes: json},
		{ID: "setup.goal.suggest", Name: "setup.goal.suggest",
			Description: `Supervaizer help action "setup.goal.suggest" (mission scope, read-only), invoked with the JSON-RPC method supervaizer/action.invoke.`,
			Tags:        []string{"supervaizer", "mission"}, InputModes: json},
	}, card.Skills, "each skill takes the JSON data part of an A2A message")
	names := make([]string, 0, len(card.Tools))
	for _, tool := range card.Tools {
		names = append(names, tool.Name)
	}
	assert.Equal(t, []string{"job_start", "job_status", "summarize"}, names)
}

func TestNewAgentCardDefaults(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(*a2a.CardInput)
		check func(*testing.T, *a2a.AgentCard)
	}{
		{"developer kept", func(in *a2a.CardInput) { in.Developer = "Acme Labs" },
			func(t *testing.T, c *a2a.AgentCard) { assert.Equal(t, "Acme Labs", c.Developer.Name) }},
		{"developer fallback", func(in *a2a.CardInput) { in.Developer = "" },
			func(t *testing.T, c *a2a.AgentCard) { assert.Equal(t, "Supervaize", c.Developer.Name) }},
		{"A2A version given", func(in *a2a.CardInput) { in.A2AVersion = "0.3.1" },
			func(t *testing.T, c *a2a.AgentCard) {
				assert.Equal(t, "0.3.1", c.ProtocolVersion)
				assert.Equal(t, "1.0", c.SupportedInterfaces[0].ProtocolVersion, "the 1.0 binding comes first")
				assert.Equal(t, "0.3.1", c.SupportedInterfaces[1].ProtocolVersion, "the 0.3 interface speaks the card's version")
			}},
		{"A2A version not given", func(in *a2a.CardInput) { in.A2AVersion = "" },
			func(t *testing.T, c *a2a.AgentCard) {
				assert.Equal(t, a2a.DefaultA2AVersion, c.ProtocolVersion)
				assert.Equal(t, a2a.DefaultA2AVersion, c.SupportedInterfaces[1].ProtocolVersion)
			}},
		{"A2A version 1.0 given", func(in *a2a.CardInput) { in.A2AVersion = "1.0" },
			func(t *testing.T, c *a2a.AgentCard) {
				assert.Equal(t, "1.0", c.ProtocolVersion)
				assert.Equal(t, []a2a.AgentInterface{{URL: c.URL, ProtocolBinding: "JSONRPC", ProtocolVersion: "1.0"}}, c.SupportedInterfaces,
					"the 1.0 binding, once")
			}},
		{"blank scope is job", func(in *a2a.CardInput) { in.Actions = []a2a.ActionInfo{{ID: "x", Mutating: true}} },
			func(t *testing.T, c *a2a.AgentCard) {
				assert.Equal(t, []string{"supervaizer", "job"}, c.Skills[0].Tags)
				assert.Equal(t, "x", c.Skills[0].Name)
				assert.Contains(t, c.Skills[0].Description, `action "x" (job scope, mutating)`)
			}},
		{"base URL with path and trailing slashes", func(in *a2a.CardInput) { in.BaseURL = "HTTPS://Example.COM:8443/ctl//" },
			func(t *testing.T, c *a2a.AgentCard) {
				assert.Equal(t, "https://Example.COM:8443/ctl/a2a", c.URL)
				assert.Equal(t, c.URL, c.SupportedInterfaces[0].URL)
				assert.Equal(t, c.URL, c.SupportedInterfaces[1].URL)
				assert.Equal(t, "https://Example.COM:8443/ctl/agents/research-agent", c.HumanURL)
				assert.Equal(t, "https://Example.COM:8443/ctl/changelog/research-agent", c.VersionInfo.ChangelogURL)
				assert.Equal(t, "https://Example.COM:8443/ctl/static/agents/research-agent_logo.png", c.LogoURL)
				assert.Equal(t, "https://Example.COM:8443/ctl/openapi.json", c.APIEndpoints[0].OpenAPIURL)
			}},
		{"null registration means none", func(in *a2a.CardInput) { in.Registration = json.RawMessage(" null ") },
			func(t *testing.T, c *a2a.AgentCard) {
				assert.Nil(t, c.Supervaizer)
				assert.Empty(t, c.Capabilities.Extensions)
			}},
		{"empty registration means none", func(in *a2a.CardInput) { in.Registration = json.RawMessage{} },
			func(t *testing.T, c *a2a.AgentCard) { assert.Nil(t, c.Supervaizer) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := researchInput(t)
			tt.edit(&in)
			card, err := a2a.NewAgentCard(in)
			require.NoError(t, err)
			tt.check(t, card)
		})
	}
}

func TestNewAgentCardKeepsRegistrationVerbatim(t *testing.T) {
	t.Parallel()
	reg := []byte(`{"b": null, "a": {"z": [1, 2.50, null], "y": "<&>"}, "workspace_binding": null}`)
	in := researchInput(t)
	in.Registration = reg
	card, b := mustCard(t, in)
	reg[1] = 'X' // the card owns a copy

	var doc struct {
		Supervaizer struct {
			V2 json.RawMessage `json:"v2"`
		} `json:"supervaizer"`
	}
	require.NoError(t, json.Unmarshal(b, &doc))
	var compact bytes.Buffer
	require.NoError(t, json.Compact(&compact, []byte(`{"b": null, "a": {"z": [1, 2.50, null], "y": "<&>"}, "workspace_binding": null}`)))
	want := strings.NewReplacer("<", `\u003c`, ">", `\u003e`, "&", `\u0026`).Replace(compact.String())
	assert.Equal(t, want, string(doc.Supervaizer.V2), "key order, nulls and number spelling are kept")
	assert.JSONEq(t, `{"b": null, "a": {"z": [1, 2.50, null], "y": "<&>"}, "workspace_binding": null}`, string(card.Supervaizer.V2))
}

func TestNewAgentCardRejectsInvalidInput(t *testing.T) {
	tests := []struct {
		name string
		edit func(*a2a.CardInput)
	}{
		{"blank name", func(in *a2a.CardInput) { in.Name = " \t" }},
		{"name not UTF-8", func(in *a2a.CardInput) { in.Name = "A\xffB" }},
		{"description not UTF-8", func(in *a2a.CardInput) { in.Description = "\xc3" }},
		{"developer not UTF-8", func(in *a2a.CardInput) { in.Developer = "\xc3" }},
		{"empty version", func(in *a2a.CardInput) { in.Version = "" }},
		{"version with slash", func(in *a2a.CardInput) { in.Version = "1.0/2" }},
		{"version with space", func(in *a2a.CardInput) { in.Version = "1.0 beta" }},
		{"empty slug", func(in *a2a.CardInput) { in.Slug = "" }},
		{"slug with upper case", func(in *a2a.CardInput) { in.Slug = "Research" }},
		{"slug with leading hyphen", func(in *a2a.CardInput) { in.Slug = "-research" }},
		{"slug with trailing hyphen", func(in *a2a.CardInput) { in.Slug = "research-" }},
		{"slug with double hyphen", func(in *a2a.CardInput) { in.Slug = "re--search" }},
		{"slug with slash", func(in *a2a.CardInput) { in.Slug = "re/search" }},
		{"empty base URL", func(in *a2a.CardInput) { in.BaseURL = "" }},
		{"relative base URL", func(in *a2a.CardInput) { in.BaseURL = "/controller" }},
		{"host without scheme", func(in *a2a.CardInput) { in.BaseURL = "research.example.com" }},
		{"ftp base URL", func(in *a2a.CardInput) { in.BaseURL = "ftp://research.example.com" }},
		{"no host", func(in *a2a.CardInput) { in.BaseURL = "https://" }},
		{"port only", func(in *a2a.CardInput) { in.BaseURL = "https://:8080" }},
		{"opaque", func(in *a2a.CardInput) { in.BaseURL = "https:research.example.com" }},
		{"query", func(in *a2a.CardInput) { in.BaseURL = "https://research.example.com/?a=1" }},
		{"empty query", func(in *a2a.CardInput) { in.BaseURL = "https://research.example.com?" }},
		{"fragment", func(in *a2a.CardInput) { in.BaseURL = "https://research.example.com/#top" }},
		{"space", func(in *a2a.CardInput) { in.BaseURL = "https://research.example.com/a b" }},
		{"bad port", func(in *a2a.CardInput) { in.BaseURL = "https://research.example.com:http" }},
		{"blank A2A version", func(in *a2a.CardInput) { in.A2AVersion = "  " }},
		{"registration array", func(in *a2a.CardInput) { in.Registration = json.RawMessage(`[]`) }},
		{"registration string", func(in *a2a.CardInput) { in.Registration = json.RawMessage(`"x"`) }},
		{"registration truncated", func(in *a2a.CardInput) { in.Registration = json.RawMessage(`{"a":`) }},
		{"registration trailing data", func(in *a2a.CardInput) { in.Registration = json.RawMessage(`{} {}`) }},
		{"blank action id", func(in *a2a.CardInput) { in.Actions = []a2a.ActionInfo{{ID: " "}} }},
		{"duplicate action id", func(in *a2a.CardInput) { in.Actions = []a2a.ActionInfo{{ID: "a"}, {ID: "b"}, {ID: "a"}} }},
		{"action label not UTF-8", func(in *a2a.CardInput) { in.Actions = []a2a.ActionInfo{{ID: "a", Label: "\xff"}} }},
		{"action scope not UTF-8", func(in *a2a.CardInput) { in.Actions = []a2a.ActionInfo{{ID: "a", Scope: "\xff"}} }},
		{"blank custom method", func(in *a2a.CardInput) { in.CustomMethods = []string{""} }},
		{"custom method named job_start", func(in *a2a.CardInput) { in.CustomMethods = []string{"job_start"} }},
		{"duplicate custom method", func(in *a2a.CardInput) { in.CustomMethods = []string{"m", "m"} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := researchInput(t)
			tt.edit(&in)
			card, err := a2a.NewAgentCard(in)
			require.ErrorIs(t, err, a2a.ErrInvalidCardInput)
			assert.Nil(t, card)
		})
	}
}

func TestNewAgentCardErrorHidesBaseURLCredentials(t *testing.T) {
	t.Parallel()
	in := researchInput(t)
	in.BaseURL = "https://user:s3cr3t-token@research.example.com"
	_, err := a2a.NewAgentCard(in)
	require.ErrorIs(t, err, a2a.ErrInvalidCardInput)
	assert.NotContains(t, err.Error(), "s3cr3t-token")
}

// paddedInput returns the research input with a registration padded so that
// the card's compact encoding is exactly size bytes.
func paddedInput(t *testing.T, size int) a2a.CardInput {
	t.Helper()
	in := researchInput(t)
	in.Registration = json.RawMessage(`{"pad":""}`)
	_, b := mustCard(t, in)
	in.Registration = json.RawMessage(`{"pad":"` + strings.Repeat("x", size-len(b)) + `"}`)
	return in
}

func TestAgentCardSizeLimit(t *testing.T) {
	t.Parallel()
	_, b := mustCard(t, paddedInput(t, a2a.MaxCardBytes))
	assert.Len(t, b, a2a.MaxCardBytes, "a card of exactly MaxCardBytes is accepted")

	card, err := a2a.NewAgentCard(paddedInput(t, a2a.MaxCardBytes+1))
	require.ErrorIs(t, err, a2a.ErrCardTooLarge)
	assert.NotErrorIs(t, err, a2a.ErrInvalidCardInput)
	assert.Nil(t, card)

	// A card grown after NewAgentCard cannot be marshalled either.
	grown, _ := mustCard(t, researchInput(t))
	grown.Description = strings.Repeat("d", a2a.MaxCardBytes)
	_, err = json.Marshal(grown)
	require.ErrorIs(t, err, a2a.ErrCardTooLarge)
	_, err = json.Marshal(*grown)
	require.ErrorIs(t, err, a2a.ErrCardTooLarge)
}

func TestAgentCardRoundTrip(t *testing.T) {
	t.Parallel()
	card, b := mustCard(t, researchInput(t))
	var back a2a.AgentCard
	require.NoError(t, json.Unmarshal(b, &back))
	again, err := json.Marshal(back)
	require.NoError(t, err)
	assert.JSONEq(t, string(b), string(again))
	assert.Equal(t, card.Skills, back.Skills)
}

func BenchmarkNewAgentCard(b *testing.B) {
	in := researchInput(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a2a.NewAgentCard(in); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAgentCardMarshal(b *testing.B) {
	card, _ := mustCard(b, researchInput(b))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := json.Marshal(card); err != nil {
			b.Fatal(err)
		}
	}
}

// TestAgentCardDecodesAsA2A10AndA2A03 reads the card with the member names and
// types of the A2A 1.0 AgentCard and AgentInterface and of the A2A 0.3
// AgentCard, strictly: no member of a wrong type, no unknown member inside the
// A2A objects, and beside the A2A members only those of the other version and
// of the legacy Supervaizer card.
func TestAgentCardDecodesAsA2A10AndA2A03(t *testing.T) {
	minimal := a2a.CardInput{Name: "A", Version: "1", Slug: "a", BaseURL: "http://a"}
	for name, in := range map[string]a2a.CardInput{"research agent": researchInput(t), "minimal": minimal} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			card, b := mustCard(t, in)
			v10, v03, err := cardcheck.DecodeSupervaizerCard(b)
			require.NoError(t, err)

			// A 1.x client picks an interface by protocolBinding, the 1.0 one
			// first; with its 0.3 compatibility enabled, a card listing only
			// a version from 0.3 up to (not including) 1.0 gets the 0.3
			// transport.
			assert.Equal(t, []cardcheck.AgentInterfaceV10{
				{URL: card.URL, ProtocolBinding: "JSONRPC", ProtocolVersion: "1.0"},
				{URL: card.URL, ProtocolBinding: "JSONRPC", ProtocolVersion: "0.3.0"},
			}, v10.SupportedInterfaces)
			assert.Equal(t, card.Name, v10.Name)
			assert.Equal(t, card.Version, v10.Version)
			assert.Len(t, v10.Skills, len(card.Skills))
			assert.Equal(t, []string{"application/json"}, v10.DefaultInputModes)
			assert.Contains(t, v10.SecuritySchemes, "apiKey")

			assert.Equal(t, card.URL, v03.URL)
			assert.Equal(t, "0.3.0", v03.ProtocolVersion)
			require.NotNil(t, v03.PreferredTransport)
			assert.Equal(t, "JSONRPC", *v03.PreferredTransport)
			assert.Equal(t, map[string]cardcheck.SecuritySchemeV03{"apiKey": {Type: "apiKey", In: "header", Name: "X-API-Key",
				Description: card.SecuritySchemes["apiKey"].Description}}, v03.SecuritySchemes)
			assert.Equal(t, []map[string][]string{{"apiKey": {}}}, v03.Security)
		})
	}
}
