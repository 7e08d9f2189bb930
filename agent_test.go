package supervaizer_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	sv "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/contracts"
)

// mustRegistration returns spec once BuildRegistration accepts it.
func mustRegistration(t testing.TB, spec sv.RegistrationSpec) sv.RegistrationSpec {
	t.Helper()
	_, err := sv.BuildRegistration(spec)
	require.NoError(t, err)
	return spec
}

func TestNewAgentIdentity(t *testing.T) {
	a, err := sv.NewAgent(sv.AgentSpec{Name: "Research Agent", Version: "1.0.0", Registration: mustRegistration(t, researchAgentSpec())})
	require.NoError(t, err)
	assert.Equal(t, "research-agent", a.Slug())

	b, err := sv.NewAgent(sv.AgentSpec{Name: "agentName", Version: "1"})
	require.NoError(t, err)
	assert.Equal(t, "agentname", b.Slug())
}

// TestNewAgentScripts checks that names in any script derive python-slugify's slug.
func TestNewAgentScripts(t *testing.T) {
	for name, want := range map[string]string{
		"北京": "bei-jing", "東京 タワー": "dong-jing-tawa", "서울": "seoul",
		"Привет мир": "privet-mir", "Crème brûlée": "creme-brulee", "مرحبا": "mrhb",
	} {
		a, err := sv.NewAgent(sv.AgentSpec{Name: name, Version: "1"})
		require.NoError(t, err, name)
		assert.Equal(t, want, a.Slug(), name)
	}
}

func TestNewAgentErrors(t *testing.T) {
	reg := mustRegistration(t, researchAgentSpec())
	tests := []struct {
		name string
		spec sv.AgentSpec
		want string
	}{
		{"blank name", sv.AgentSpec{Name: " ", Version: "1"}, "AgentSpec.Name is required"},
		{"no version", sv.AgentSpec{Name: "X"}, "AgentSpec.Version is required"},
		{"symbols only", sv.AgentSpec{Name: "!!!", Version: "1"}, "derives an empty slug"},
		{"no transliteration", sv.AgentSpec{Name: "😀 \uE000 \u3400", Version: "1"},
			`derives an empty slug: the slug is made of the name's letters and digits transliterated to ASCII, ` +
				`and a character without a transliteration (emoji, private use, some rare scripts) is dropped`},
		{"slug mismatch", sv.AgentSpec{Name: "Research Bot", Version: "1", Registration: reg},
			`AgentSpec.Registration.AgentSlug "research-agent" must equal the slug derived from AgentSpec.Name ("research-bot")`},
		{"method without handler", sv.AgentSpec{Name: "X", Version: "1", Methods: &sv.AgentMethods{Refresh: &sv.AgentMethod{}}},
			`method "agent.refresh" has no Handler`},
		{"custom method key", sv.AgentSpec{Name: "X", Version: "1", Methods: &sv.AgentMethods{Custom: []sv.CustomMethod{{Key: "bad key",
			AgentMethod: sv.AgentMethod{Handler: func(context.Context, *sv.ActionRequest, map[string]any) (*sv.ActionResult, error) {
				return sv.OK(), nil
			}}}}}},
			`custom method key "bad key" must match ^[A-Za-z0-9_-]+$`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := sv.NewAgent(tt.spec)
			assert.Nil(t, a)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

// TestAgentBlockLimits checks the introduction, full description and billing
// catalog limits of the protocol exactly, lengths in code points.
func TestAgentBlockLimits(t *testing.T) {
	intro := func(mut func(*contracts.Introduction)) *contracts.Introduction {
		i := &contracts.Introduction{Tagline: "Briefs", Summary: "Gathers sources.", ExampleGoals: []string{"Brief me"}}
		mut(i)
		return i
	}
	runes := func(n int) string { return strings.Repeat("é", n) }
	goals := func(n int) []string {
		g := make([]string, n)
		for i := range g {
			g[i] = "goal"
		}
		return g
	}
	tests := []struct {
		name string
		spec sv.AgentSpec
		path string // "" means valid
		rule string
	}{
		{"intro ok at limits", sv.AgentSpec{Introduction: intro(func(i *contracts.Introduction) {
			i.Tagline, i.Summary, i.ExampleGoals, i.AvatarURL = runes(120), runes(300), []string{runes(120), "b", "c", "d", "e"}, "https://cdn.example.com/a.png"
		})}, "", ""},
		{"tagline 121", sv.AgentSpec{Introduction: intro(func(i *contracts.Introduction) { i.Tagline = runes(121) })}, "/tagline", "maxLength"},
		{"tagline blank", sv.AgentSpec{Introduction: intro(func(i *contracts.Introduction) { i.Tagline = " \u00a0" })}, "/tagline", "nonblank"},
		{"summary 301", sv.AgentSpec{Introduction: intro(func(i *contracts.Introduction) { i.Summary = runes(301) })}, "/summary", "maxLength"},
		{"summary blank", sv.AgentSpec{Introduction: intro(func(i *contracts.Introduction) { i.Summary = "" })}, "/summary", "nonblank"},
		{"no goals", sv.AgentSpec{Introduction: intro(func(i *contracts.Introduction) { i.ExampleGoals = nil })}, "/example_goals", "minItems"},
		{"six goals", sv.AgentSpec{Introduction: intro(func(i *contracts.Introduction) { i.ExampleGoals = goals(6) })}, "/example_goals", "maxItems"},
		{"goal 121", sv.AgentSpec{Introduction: intro(func(i *contracts.Introduction) { i.ExampleGoals = []string{runes(121)} })}, "/example_goals/0", "maxLength"},
		{"avatar http", sv.AgentSpec{Introduction: intro(func(i *contracts.Introduction) { i.AvatarURL = "http://cdn.example.com/a.png" })}, "/avatar_url", "pattern"},
		{"avatar relative", sv.AgentSpec{Introduction: intro(func(i *contracts.Introduction) { i.AvatarURL = "/a.png" })}, "/avatar_url", "format"},
		{"full description ok", sv.AgentSpec{FullDescription: &contracts.FullDescription{Content: runes(100000)}}, "", ""},
		{"full description too long", sv.AgentSpec{FullDescription: &contracts.FullDescription{Content: runes(100001)}}, "/content", "maxLength"},
		{"full description blank", sv.AgentSpec{FullDescription: &contracts.FullDescription{Content: "\n\t "}}, "/content", "nonblank"},
		{"full description format", sv.AgentSpec{FullDescription: &contracts.FullDescription{Format: "rst", Content: "x"}}, "/format", "enum"},
		{"billing ok", sv.AgentSpec{BillingCatalog: contracts.BillingCatalog{{SKU: strings.Repeat("a", 64), Unit: strings.Repeat("u", 32), Description: runes(255)}}}, "", ""},
		{"sku too long", sv.AgentSpec{BillingCatalog: contracts.BillingCatalog{{SKU: strings.Repeat("a", 65), Unit: "brief"}}}, "/0/sku", "maxLength"},
		{"sku pattern", sv.AgentSpec{BillingCatalog: contracts.BillingCatalog{{SKU: "Brief-1", Unit: "brief"}}}, "/0/sku", "pattern"},
		{"sku empty", sv.AgentSpec{BillingCatalog: contracts.BillingCatalog{{SKU: "", Unit: "brief"}}}, "/0/sku", "minLength"},
		{"sku duplicate", sv.AgentSpec{BillingCatalog: contracts.BillingCatalog{{SKU: "brief", Unit: "brief"}, {SKU: "brief", Unit: "page"}}}, "/1/sku", "unique"},
		{"unit too long", sv.AgentSpec{BillingCatalog: contracts.BillingCatalog{{SKU: "brief", Unit: strings.Repeat("u", 33)}}}, "/0/unit", "maxLength"},
		{"unit empty", sv.AgentSpec{BillingCatalog: contracts.BillingCatalog{{SKU: "brief"}}}, "/0/unit", "minLength"},
		{"description too long", sv.AgentSpec{BillingCatalog: contracts.BillingCatalog{{SKU: "brief", Unit: "brief", Description: runes(256)}}}, "/0/description", "maxLength"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := tt.spec
			spec.Name, spec.Version = "Research Agent", "1.0.0"
			a, err := sv.NewAgent(spec)
			if tt.path == "" {
				require.NoError(t, err)
				require.NotNil(t, a)
				return
			}
			assert.Nil(t, a)
			requireProblem(t, err, tt.path, tt.rule)
		})
	}
}

func TestAgentMethodsAppendedAndHandled(t *testing.T) {
	reg := mustRegistration(t, sv.RegistrationSpec{AgentSlug: "hello", DisplayName: "Hello", A2UICatalogVersion: "h.1", Actions: sv.Actions("agent.refresh")})
	var gotParams map[string]any
	a, err := sv.NewAgent(sv.AgentSpec{Name: "Hello", Version: "1", Registration: reg, Methods: &sv.AgentMethods{
		Refresh: &sv.AgentMethod{Handler: func(context.Context, *sv.ActionRequest, map[string]any) (*sv.ActionResult, error) {
			return sv.OK(sv.Effect{Type: "agent.refreshed"}), nil
		}},
		Custom: []sv.CustomMethod{{Key: "export", AgentMethod: sv.AgentMethod{Params: map[string]any{"format": "csv"},
			Handler: func(_ context.Context, _ *sv.ActionRequest, p map[string]any) (*sv.ActionResult, error) {
				gotParams = p
				return sv.OK(), nil
			}}}},
	}})
	require.NoError(t, err)
	var ids []string
	for _, d := range a.Registration().Capabilities.Actions {
		ids = append(ids, d.ID)
	}
	assert.Equal(t, []string{"agent.refresh", "agent.custom.export"}, ids, "missing method ids are appended, existing ones kept")
	assert.Equal(t, contracts.ActionDefinition{ID: "agent.custom.export", Mutating: true, Scope: "job", Kind: "command"}, a.Registration().Capabilities.Actions[1])

	ts := newLocalServer(t, a)
	res := invokeLocal(t, ts, "hello", "agent.custom.export", `{}`)
	assert.Contains(t, res, `"status":"ok"`)
	assert.Equal(t, map[string]any{"format": "csv"}, gotParams)
	assert.Panics(t, func() { a.HandleAction("agent.custom.export", nil) })
}

func TestHandlerRegistrationPanics(t *testing.T) {
	a, err := sv.NewAgent(sv.AgentSpec{Name: "Research Agent", Version: "1", Registration: mustRegistration(t, researchAgentSpec())})
	require.NoError(t, err)
	ok := func(context.Context, *sv.ActionRequest) (*sv.ActionResult, error) { return sv.OK(), nil }
	assert.PanicsWithValue(t, `supervaizer: HandleAction: action "job.nope" is not declared in the registration of agent "research-agent"`,
		func() { a.HandleAction("job.nope", ok) })
	a.HandleAction("job.stop", ok)
	assert.PanicsWithValue(t, `supervaizer: HandleAction: action "job.stop" of agent "research-agent" already has a handler`,
		func() { a.HandleAction("job.stop", ok) })
	assert.Panics(t, func() {
		a.HandleSurface("nope", func(context.Context, *sv.SurfaceRequest) (*sv.SurfaceResult, error) { return nil, nil })
	})
	type bad struct {
		C chan int `json:"c"`
	}
	assert.Panics(t, func() {
		sv.HandleActionFor(a, "job.start", func(context.Context, *sv.ActionRequest, bad) (*sv.ActionResult, error) { return sv.OK(), nil })
	}, "an input type without a JSON Schema mapping is a setup error")
}

// newLocalServer serves agents in local mode, isolated from the environment.
func newLocalServer(t *testing.T, agents ...*sv.Agent) *sv.Server {
	t.Helper()
	srv, err := sv.NewServer(agents, sv.WithEnv(func(string) string { return "" }), sv.WithLocalMode(true))
	require.NoError(t, err)
	return srv
}

// invokeLocal calls an action through ServeHTTP with the local-mode key.
func invokeLocal(t *testing.T, srv *sv.Server, slug, action, input string) string {
	t.Helper()
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": sv.MethodActionInvoke, "params": map[string]any{
		"request_id": "r-1", "actor": map[string]any{"user_id": "u-1"}, "workspace": map[string]any{"id": "w-1"},
		"mission_id": "m-1", "agent_slug": slug, "surface": "job.start", "action": action, "input": json.RawMessage(input),
	}})
	require.NoError(t, err)
	r := httptest.NewRequest("POST", "/a2a", strings.NewReader(string(body)))
	r.Host = "localhost" // local mode answers only loopback hosts
	r.Header.Set(sv.HeaderAPIKey, sv.LocalModeAPIKey)
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, r)
	require.Equal(t, 200, w.Code)
	return w.Body.String()
}
