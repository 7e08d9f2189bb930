package supervaizer_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	sv "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/a2a"
	"github.com/supervaize/supervaizer-go/a2ui"
	"github.com/supervaize/supervaizer-go/contracts"
	svtest "github.com/supervaize/supervaizer-go/testing"
)

func okAction(context.Context, *sv.ActionRequest) (*sv.ActionResult, error) { return sv.OK(), nil }

var startForm = a2ui.NewForm("hello.start", "Say hello", "job.start", a2ui.StringField("name", "Name", a2ui.Required()))

// TestRegistrationDefaultsFromTheAgent: NewAgent fills the registration's
// slug, display name and catalog version from the agent, and names the field
// of a slug that differs.
func TestRegistrationDefaultsFromTheAgent(t *testing.T) {
	tests := []struct {
		name    string
		reg     sv.RegistrationSpec
		display string
		catalog string
		err     string
	}{
		{name: "defaults", reg: sv.RegistrationSpec{Actions: sv.Actions("job.start")}, display: "Hello Agent", catalog: "hello-agent.1.0.0"},
		{name: "explicit", reg: sv.RegistrationSpec{AgentSlug: "hello-agent", DisplayName: "Hello", A2UICatalogVersion: "h.7", Actions: sv.Actions("job.start")},
			display: "Hello", catalog: "h.7"},
		{name: "other slug", reg: sv.RegistrationSpec{AgentSlug: "hello"},
			err: `supervaizer: AgentSpec.Registration.AgentSlug "hello" must equal the slug derived from AgentSpec.Name ("hello-agent"); leave it empty to use it`},
		{name: "invalid field", reg: sv.RegistrationSpec{Actions: []sv.ActionSpec{{ID: "goal.suggest", Kind: contracts.KindHelp}}},
			err: `/actions/0/mutating: help action "goal.suggest" must set Mutating to false (help_action)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := sv.NewAgent(sv.AgentSpec{Name: "Hello Agent", Version: "1.0.0", Registration: tt.reg})
			if tt.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.err)
				return
			}
			require.NoError(t, err)
			reg := a.Registration()
			assert.Equal(t, contracts.AgentIdentity{ID: "hello-agent", Slug: "hello-agent", DisplayName: tt.display}, reg.Agent)
			assert.Equal(t, tt.catalog, reg.Versions.A2UICatalogVersion)
		})
	}
}

// TestHandlersDeclareSurfacesAndActions: a registration that lists no
// surface and no action declares those whose handlers are registered before
// the server serves (before svtest links the agent through the registration
// handshake, which sends the final registration), in registration order,
// after the derived ones it already has; the card and the calls agree; a
// handler registered once the server serves is refused.
func TestHandlersDeclareSurfacesAndActions(t *testing.T) {
	agent, err := sv.NewAgent(sv.AgentSpec{Name: "Hello Agent", Version: "1.0.0",
		Registration: sv.RegistrationSpec{JobPolicy: &contracts.JobPolicy{Sync: &contracts.JobSyncPolicy{}}}})
	require.NoError(t, err)
	agent.HandleSurface("job.start", sv.StaticSurface(startForm))
	agent.HandleAction("job.start", okAction)
	agent.HandleAction("job.sync", okAction) // derived: declared once
	agent.HandleAction("job.stop", okAction)
	agent.HandleSurface("case.step.detail", sv.StaticSurface(startForm))
	ts := svtest.NewTestServer(t, []*sv.Agent{agent})

	res, err := ts.LoadSurface(t.Context(), ts.SurfaceRequest("job.start"))
	require.NoError(t, err)
	assert.JSONEq(t, `{"type":"Form","id":"hello.start","title":"Say hello","fields":[{"id":"name","label":"Name","type":"string","required":true}],"submit":{"action":"job.start"}}`,
		string(res.Document))
	assert.Equal(t, "v0.8", *res.A2UIVersion)
	assert.Equal(t, "hello-agent.1.0.0", *res.A2UICatalogVersion)
	_, err = ts.Invoke(t.Context(), ts.Request("job.stop", map[string]any{}))
	require.NoError(t, err)

	reg := agent.Registration()
	assert.Equal(t, []string{"job.start", "case.step.detail"}, reg.Capabilities.Surfaces)
	var ids []string
	for _, d := range reg.Capabilities.Actions {
		ids = append(ids, d.ID)
	}
	assert.Equal(t, []string{"job.start", "job.stop", "job.sync"}, ids, "declared in registration order, then derived")

	w := httptest.NewRecorder()
	ts.Server.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "http://localhost"+a2a.CardPath("hello-agent"), nil))
	require.Equal(t, http.StatusOK, w.Code)
	var card struct {
		Supervaizer struct {
			V2 json.RawMessage `json:"v2"`
		} `json:"supervaizer"`
	}
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &card))
	assert.JSONEq(t, string(agent.RegistrationJSON()), string(card.Supervaizer.V2), "the card carries the final registration")

	assert.PanicsWithValue(t, `supervaizer: HandleAction: action "job.late" of agent "hello-agent": the registration is final once the server serves; register every handler before`,
		func() { ts.Server.HandleAction("job.late", okAction) })
	assert.PanicsWithValue(t, `supervaizer: HandleSurface: surface "late" of agent "hello-agent": the registration is final once the server serves; register every handler before`,
		func() { ts.Server.HandleSurface("late", sv.StaticSurface(startForm)) })
}

// TestListedDeclarationsStayChecked: a registration that lists its surfaces
// or actions still refuses a handler for an id it does not list.
func TestListedDeclarationsStayChecked(t *testing.T) {
	srv, err := sv.New(sv.AgentSpec{Name: "Hello Agent", Version: "1.0.0", Registration: sv.RegistrationSpec{Surfaces: sv.Surfaces("job.start")}},
		sv.WithLocalMode(true), sv.WithEnv(emptyEnv))
	require.NoError(t, err)
	assert.PanicsWithValue(t, `supervaizer: HandleAction: action "job.start" is not declared in the registration of agent "hello-agent"`,
		func() { srv.HandleAction("job.start", okAction) })
	srv.HandleSurface("job.start", sv.StaticSurface(startForm))
}

// TestSealErrors: a registration the handlers cannot complete is a Start
// error, and a server used as an http.Handler still serves it (never a 500:
// TestSetupErrorsAreNeverAnswered).
func TestSealErrors(t *testing.T) {
	srv, err := sv.New(sv.AgentSpec{Name: "Hello Agent", Version: "1.0.0", Registration: sv.RegistrationSpec{ScheduledStart: true}},
		sv.WithLocalMode(true), sv.WithEnv(emptyEnv))
	require.NoError(t, err, "job.start may still get a handler")
	srv.HandleAction("job.stop", okAction)
	err = srv.Start(t.Context())
	require.Error(t, err)
	assert.Contains(t, err.Error(), `/scheduled_start: scheduled_start requires the action "job.start"`)
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "http://localhost"+a2a.CardPath("hello-agent"), nil))
	assert.Equal(t, http.StatusOK, w.Code)

	srv, err = sv.New(sv.AgentSpec{Name: "Hello Agent", Version: "1.0.0", Registration: sv.RegistrationSpec{ScheduledStart: true}},
		sv.WithLocalMode(true), sv.WithEnv(emptyEnv))
	require.NoError(t, err)
	err = srv.Start(t.Context()) // no handler at all
	require.Error(t, err)
	assert.Contains(t, err.Error(), `/scheduled_start: scheduled_start requires the action "job.start"`)

	srv, err = sv.New(sv.AgentSpec{Name: "Hello Agent", Version: "1.0.0", Registration: sv.RegistrationSpec{ScheduledStart: true}},
		sv.WithLocalMode(true), sv.WithEnv(emptyEnv))
	require.NoError(t, err)
	srv.HandleAction("job.start", okAction)
	require.NoError(t, srv.Start(t.Context()))
	a, ok := srv.Agent("hello-agent")
	require.True(t, ok)
	assert.True(t, a.Registration().Capabilities.ScheduledStart)

	// Idempotent before the handlers: the action must end up declared.
	srv, err = sv.New(sv.AgentSpec{Name: "Hello Agent", Version: "1.0.0"}, sv.WithLocalMode(true), sv.WithEnv(emptyEnv))
	require.NoError(t, err)
	a, _ = srv.Agent("hello-agent")
	a.Idempotent("contact.sync")
	a.Idempotent("contact.synk")
	srv.HandleAction("job.start", okAction)
	srv.HandleAction("contact.sync", okAction)
	err = srv.Start(t.Context())
	require.Error(t, err)
	assert.Contains(t, err.Error(), `Idempotent("contact.synk"): the action is not declared`)
	assert.NotContains(t, err.Error(), `"contact.sync"`)
}

// TestNewFailsLikeNewAgentAndNewServer: New reports the errors of both.
func TestNewFailsLikeNewAgentAndNewServer(t *testing.T) {
	_, err := sv.New(sv.AgentSpec{Name: "Hello Agent"})
	require.EqualError(t, err, `supervaizer: AgentSpec.Version is required (agent "Hello Agent")`)
	_, err = sv.New(sv.AgentSpec{Name: "Hello Agent", Version: "1"}, sv.WithMaxBodyBytes(0), sv.WithEnv(emptyEnv))
	require.EqualError(t, err, `supervaizer: WithMaxBodyBytes(0): the limit must be positive`)
}

// TestStaticSurfaceRefusesAnUnencodableDocument: a setup error panics.
func TestStaticSurfaceRefusesAnUnencodableDocument(t *testing.T) {
	assert.PanicsWithValue(t, `supervaizer: StaticSurface: encode the document: json: unsupported type: chan int`,
		func() { sv.StaticSurface(make(chan int)) })
}
