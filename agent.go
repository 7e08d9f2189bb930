package supervaizer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/supervaize/supervaizer-go/campaign"
	"github.com/supervaize/supervaizer-go/checkpoint"
	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/internal/slug"
	"github.com/supervaize/supervaizer-go/internal/validate"
)

// AgentSpec describes an agent served by the controller.
type AgentSpec struct {
	// Name is the agent's name; its slug, the agent's identity everywhere
	// (agent_slug), is derived from it. Required.
	Name string
	// Version is the agent's version, e.g. "1.0.0" (it appears in the versioned
	// Agent Card route). Required.
	Version     string
	Description string // one-line summary

	Author, Developer, Maintainer, Editor string
	Tags                                  []string
	ReleaseNotesURL                       string

	// Registration declares the agent's v2 registration; [NewAgent] builds and
	// validates it with the rules of [BuildRegistration] (an error names the
	// field). AgentSlug defaults to the slug derived from Name (another one is
	// an error), DisplayName to Name, A2UICatalogVersion to "<slug>.<Version>".
	// When it lists neither Surfaces nor Actions, the agent declares the
	// surfaces and actions whose handlers are registered (besides those the
	// registration derives), each registration call updating the
	// registration, and the registration is final when the server starts
	// serving: register every handler before. ScheduledStart then declares
	// job.start (unless derived), whose handler [Server.Start] requires. When it lists them, a
	// handler must be declared and a declared id without a handler is logged
	// at startup. An agent whose Registration is left empty and which gets
	// no handler has no v2 registration (its card and its Studio registration
	// carry none).
	Registration RegistrationSpec

	Introduction    *contracts.Introduction    // agent-list entry; omitted when nil
	FullDescription *contracts.FullDescription // detail page; omitted when nil
	BillingCatalog  contracts.BillingCatalog   // billable SKUs; omitted when empty

	// Methods are the agent methods (agent.refresh, agent.custom.<key>). Their
	// action ids are appended to the registration when missing, and their
	// handlers are registered by the SDK.
	Methods *AgentMethods

	// StudioAgentID is the id Studio gave the agent, which workspace tokens
	// carry. A controller attached to Studio learns it from the registration
	// handshake (a different id there is an error); a standalone controller
	// verifying workspace tokens must be given it, here or, for a controller
	// serving a single agent, by SUPERVAIZER_STUDIO_AGENT_ID, else
	// [Server.Start] refuses to start.
	StudioAgentID string

	// Conversation names the agent's conversation action (spec item 81): a
	// declared action, registered with the input type conversation.Input,
	// to which a plain text A2A message goes (docs/conversations.md). Its
	// result carries a conversation.Output (conversation.Reply). "" for
	// none: a text message is then answered -32602 naming the data part an
	// action call needs. [Server.Start] fails when the action has no
	// handler.
	Conversation string
	// ConversationExamples are example messages for the conversation
	// action, on its Agent Card skill ("examples"; none given: one generic
	// example).
	ConversationExamples []string
}

// Agent is one business agent served by a controller. Build it with [NewAgent],
// then register its handlers with [Agent.HandleAction] and [Agent.HandleSurface]
// (or the typed [HandleActionFor]) before serving.
type Agent struct {
	spec     AgentSpec
	slug     string
	legacyID string
	reg      *contracts.Registration
	regJSON  json.RawMessage
	regSpec  RegistrationSpec // with the defaults applied, for the declarations of handlers
	// auto: the registration lists no surface or action, so the handlers
	// registered before the server serves declare them (declare). sealed:
	// the registration is final.
	auto, sealed bool
	order        []string                // handler ids in registration order, for auto declarations
	derived      *contracts.Registration // of an auto agent: its registration before any handler (nil when none)

	mu         sync.RWMutex
	actions    map[string]ActionHandler
	surfaces   map[string]SurfaceHandler
	sdkActions map[string]bool // ids whose handler the SDK provides
	studioID   string
	idempotent map[string]bool // actions opted in to the idempotency layer
	data       dataRegistry    // typed resources, for the DataResource REST routes

	campaign *campaign.Control // the campaign-control extension, when served (campaign.go)

	// Rule-checkpoint state; NewServer attaches the server's store (checkpoint.go).
	checkpoints *checkpoint.Runtime
}

// NewAgent validates spec and builds the agent. It fails with an error naming
// the problem when the name is blank, the explicit id or the registration's
// agent.slug does not match the derived one, or when the registration,
// introduction, full description or billing catalog break the contract.
func NewAgent(spec AgentSpec) (*Agent, error) {
	if strings.TrimSpace(spec.Name) == "" {
		return nil, errors.New("supervaizer: AgentSpec.Name is required")
	}
	if strings.TrimSpace(spec.Version) == "" {
		return nil, fmt.Errorf("supervaizer: AgentSpec.Version is required (agent %q)", spec.Name)
	}
	a := &Agent{
		spec:       spec,
		slug:       slug.Make(spec.Name),
		legacyID:   slug.LegacyAgentID(spec.Name),
		actions:    map[string]ActionHandler{},
		surfaces:   map[string]SurfaceHandler{},
		sdkActions: map[string]bool{},
		studioID:   strings.TrimSpace(spec.StudioAgentID),
	}
	if a.slug == "" {
		return nil, fmt.Errorf("supervaizer: agent name %q derives an empty slug: the slug is made of "+
			"the name's letters and digits transliterated to ASCII, and a character without a "+
			"transliteration (emoji, private use, some rare scripts) is dropped", spec.Name)
	}
	v := validate.Default()
	if spec.Introduction != nil {
		if _, err := v.ValidateValue(contracts.ModelIntroduction, spec.Introduction); err != nil {
			return nil, fmt.Errorf("supervaizer: agent %q introduction: %w", a.slug, err)
		}
	}
	if spec.FullDescription != nil {
		if _, err := v.ValidateValue(contracts.ModelFullDescription, spec.FullDescription); err != nil {
			return nil, fmt.Errorf("supervaizer: agent %q full_description: %w", a.slug, err)
		}
	}
	if len(spec.BillingCatalog) > 0 {
		if _, err := v.ValidateValue(contracts.ModelBillingCatalog, spec.BillingCatalog); err != nil {
			return nil, fmt.Errorf("supervaizer: agent %q billing_catalog: %w", a.slug, err)
		}
	}
	rs := spec.Registration
	if rs.AgentSlug == "" {
		rs.AgentSlug = a.slug
	} else if rs.AgentSlug != a.slug {
		return nil, fmt.Errorf("supervaizer: AgentSpec.Registration.AgentSlug %q must equal the slug derived from AgentSpec.Name (%q); leave it empty to use it", rs.AgentSlug, a.slug)
	}
	rs.DisplayName = orDefault(rs.DisplayName, spec.Name)
	rs.A2UICatalogVersion = orDefault(rs.A2UICatalogVersion, a.slug+"."+spec.Version)
	a.regSpec, a.auto = rs, len(rs.Surfaces) == 0 && len(rs.Actions) == 0
	switch {
	case reflect.ValueOf(spec.Registration).IsZero():
		// Nothing declared yet: the agent has a registration only if
		// handlers are registered before the server serves (declare).
	case a.auto && rs.ScheduledStart:
		// scheduled_start needs job.start: unless the registration derives
		// it, ScheduledStart declares it, and Start reports it when no
		// handler is registered for it (incomplete).
		rs.ScheduledStart = false
		if err := a.buildRegistration(rs); err != nil {
			return nil, err
		}
		if !a.reg.Capabilities.HasAction(contracts.DefaultStartAction) {
			a.regSpec.Actions = []ActionSpec{Action(contracts.DefaultStartAction)}
		}
		fallthrough
	default:
		if err := a.buildRegistration(a.regSpec); err != nil {
			return nil, err
		}
	}
	if err := a.registerMethods(spec.Methods); err != nil {
		return nil, err
	}
	if a.auto {
		a.derived = a.reg
	}
	var capability *contracts.RuleCheckpoints
	if a.reg != nil {
		capability = a.reg.Capabilities.RuleCheckpoints
	}
	a.checkpoints = checkpoint.NewRuntime(a.slug, capability)
	return a, nil
}

// buildRegistration builds and validates the registration of rs, with the
// actions of the agent methods appended when missing.
func (a *Agent) buildRegistration(rs RegistrationSpec) error {
	reg, err := BuildRegistration(rs)
	if err != nil {
		return fmt.Errorf("supervaizer: agent %q: AgentSpec.Registration: %w", a.slug, err)
	}
	for _, id := range a.spec.Methods.actionIDs() {
		if !reg.Capabilities.HasAction(id) {
			reg.Capabilities.Actions = append(reg.Capabilities.Actions,
				contracts.ActionDefinition{ID: id, Mutating: true, Scope: contracts.ScopeJob, Kind: contracts.KindCommand})
		}
	}
	raw, err := validate.Default().ValidateValue(contracts.ModelRegistration, reg)
	if err != nil {
		return fmt.Errorf("supervaizer: agent %q: AgentSpec.Registration: %w", a.slug, err)
	}
	a.reg, a.regJSON = reg, raw
	return nil
}

// seal makes the registration final: a handler registered afterwards must
// be declared. It cannot fail: each registration call has already built and
// validated the registration it declares (declare), and what a registration
// still lacks once sealed is reported by [Agent.incomplete]. The server seals
// its agents when it starts or first serves.
func (a *Agent) seal() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.sealed = true
}

// declare rebuilds the registration of an agent whose registration lists no
// surface or action from the handlers registered so far and the one being
// registered (id, a surface or an action): the surfaces and the actions its
// registration does not already derive, in the order their handlers were
// registered. The registration calls run it under a.mu before recording the
// handler, so that a handler the registration cannot declare is refused by
// the call that registers it, and sealing has nothing left to fail.
func (a *Agent) declare(id string, surface bool) error {
	if !a.auto || a.sealed {
		return nil
	}
	order := a.order
	if a.actions[id] == nil && a.surfaces[id] == nil {
		order = append(slices.Clip(order), id)
	}
	derives := func(id string, surface bool) bool {
		switch {
		case a.derived == nil:
			return false
		case surface:
			return a.derived.Capabilities.HasSurface(id)
		default:
			return a.derived.Capabilities.HasAction(id)
		}
	}
	rs := a.regSpec
	rs.Surfaces, rs.Actions = slices.Clip(rs.Surfaces), slices.Clip(rs.Actions) // appended to: never a.regSpec's
	for _, o := range order {
		if (a.surfaces[o] != nil || o == id && surface) && !derives(o, true) {
			rs.Surfaces = append(rs.Surfaces, SurfaceSpec{ID: o})
		}
		if (a.actions[o] != nil && !a.sdkActions[o] || o == id && !surface) && !derives(o, false) {
			rs.Actions = append(rs.Actions, Action(o))
		}
	}
	return a.buildRegistration(rs)
}

// incomplete reports what the registration lacks once sealed: an action taken
// by Idempotent before sealing that no handler declared, and, on an agent
// whose handlers declare its actions, a scheduled start without a handler for
// job.start. [Server.Start] returns it; a server used as a plain http.Handler
// logs it and serves the registration as it is.
func (a *Agent) incomplete() error {
	a.mu.RLock()
	defer a.mu.RUnlock()
	var errs []error
	if a.auto && a.regSpec.ScheduledStart && a.actions[contracts.DefaultStartAction] == nil {
		errs = append(errs, fmt.Errorf("supervaizer: agent %q: AgentSpec.Registration: /scheduled_start: scheduled_start requires the action %q: no handler was registered for it",
			a.slug, contracts.DefaultStartAction))
	}
	if c := a.spec.Conversation; c != "" && (a.actions[c] == nil || !a.declared(c, false)) {
		errs = append(errs, fmt.Errorf("supervaizer: agent %q: AgentSpec.Conversation: the action %q is not declared or has no handler", a.slug, c))
	}
	for _, id := range slices.Sorted(maps.Keys(a.idempotent)) {
		if !a.declared(id, false) {
			errs = append(errs, fmt.Errorf("supervaizer: agent %q: Idempotent(%q): the action is not declared: no handler was registered for it", a.slug, id))
		}
	}
	return errors.Join(errs...)
}

// Slug returns the agent slug derived from its name.
func (a *Agent) Slug() string { return a.slug }

// Spec returns a copy of the agent's spec.
func (a *Agent) Spec() AgentSpec { return a.spec }

// Registration returns the agent's v2 registration (with method actions
// appended). It is final once the server serves (see [AgentSpec].Registration).
// Treat it as read-only.
func (a *Agent) Registration() *contracts.Registration { return a.reg }

// RegistrationJSON returns the validated JSON of the registration.
func (a *Agent) RegistrationJSON() json.RawMessage { return slices.Clone(a.regJSON) }

// developer is the developer, else the author, else "Supervaize".
func (a *Agent) developer() string {
	for _, s := range []string{a.spec.Developer, a.spec.Author} {
		if strings.TrimSpace(s) != "" {
			return s
		}
	}
	return "Supervaize"
}

// StudioAgentID returns the id Studio assigned to the agent, learned from the
// registration handshake or the agent lookup. Workspace tokens carry it.
func (a *Agent) StudioAgentID() (string, bool) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.studioID, a.studioID != ""
}

// linkStudioAgent records the id Studio assigned to the agent. It fails when the
// agent is already linked to a different id ("agent id mismatch"). The
// registration handshake and the agent lookup call it (attach.go).
func (a *Agent) linkStudioAgent(id string) error {
	if strings.TrimSpace(id) == "" {
		return fmt.Errorf("supervaizer: agent %q: Studio agent id must not be blank", a.slug)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.studioID != "" && a.studioID != id {
		return fmt.Errorf("supervaizer: agent %q: agent id mismatch: linked to %q, Studio says %q", a.slug, a.studioID, id)
	}
	a.studioID = id
	return nil
}

func (a *Agent) registerMethods(m *AgentMethods) error {
	if m == nil {
		return nil
	}
	add := func(id string, method AgentMethod) error {
		if method.Handler == nil {
			return fmt.Errorf("supervaizer: agent %q: method %q has no Handler", a.slug, id)
		}
		h, params := method.Handler, method.Params
		a.actions[id] = func(ctx context.Context, req *ActionRequest) (*ActionResult, error) {
			return h(ctx, req, params)
		}
		a.sdkActions[id] = true
		return nil
	}
	if m.Refresh != nil {
		if err := add("agent.refresh", *m.Refresh); err != nil {
			return err
		}
	}
	for _, c := range m.Custom {
		if !customKeyRE.MatchString(c.Key) {
			return fmt.Errorf("supervaizer: agent %q: custom method key %q must match ^[A-Za-z0-9_-]+$", a.slug, c.Key)
		}
		if err := add("agent.custom."+c.Key, c.AgentMethod); err != nil {
			return err
		}
	}
	return nil
}

// declaresAction reports whether the registration declares the action; until
// it is sealed, an agent whose registration lists no surface or action
// declares any action a handler is registered for.
func (a *Agent) declaresAction(id string) bool {
	return a.declared(id, false) || a.auto && !a.sealed && strings.TrimSpace(id) != ""
}

// declared reports whether the registration built so far declares the
// surface (or the action) id.
func (a *Agent) declared(id string, surface bool) bool {
	switch {
	case a.reg == nil:
		return false
	case surface:
		return a.reg.Capabilities.HasSurface(id)
	default:
		return a.reg.Capabilities.HasAction(id)
	}
}

// declaresSurface reports whether the registration declares the surface (see
// declaresAction).
func (a *Agent) declaresSurface(id string) bool {
	return a.declared(id, true) || a.auto && !a.sealed && strings.TrimSpace(id) != ""
}

// record notes the first registration of a handler for id, before a.mu is
// released.
func (a *Agent) record(id string) {
	if a.actions[id] == nil && a.surfaces[id] == nil {
		a.order = append(a.order, id)
	}
}

// notDeclared is the panic message of a handler registered for an id the
// registration does not declare.
func (a *Agent) notDeclared(op, kind, id string) string {
	if a.auto && a.sealed {
		return fmt.Sprintf("supervaizer: %s: %s %q of agent %q: the registration is final once the server serves; register every handler before", op, kind, id, a.slug)
	}
	return fmt.Sprintf("supervaizer: %s: %s %q is not declared in the registration of agent %q", op, kind, id, a.slug)
}

// HandleAction registers h for the action id. When the registration lists
// no surface and no action, registering the handler declares the action (until
// the server serves; see [AgentSpec].Registration); otherwise the registration
// must declare it. It panics if id is not declared or already has a handler
// (setup errors, like chi's and net/http's). The result of h is validated
// against the contracts before it is sent.
func (a *Agent) HandleAction(id string, h ActionHandler) {
	a.setAction(id, h, false)
}

func (a *Agent) setAction(id string, h ActionHandler, replaceSDK bool) {
	if h == nil {
		panic(fmt.Sprintf("supervaizer: HandleAction(%q) on agent %q: nil handler", id, a.slug))
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.declaresAction(id) {
		panic(a.notDeclared("HandleAction", "action", id))
	}
	if _, dup := a.actions[id]; dup && !(replaceSDK && a.sdkActions[id]) {
		panic(fmt.Sprintf("supervaizer: HandleAction: action %q of agent %q already has a handler", id, a.slug))
	}
	if err := a.declare(id, false); err != nil {
		panic(fmt.Sprintf("supervaizer: HandleAction: action %q of agent %q: %v", id, a.slug, err))
	}
	a.record(id)
	a.actions[id] = h
	delete(a.sdkActions, id)
}

// HandleSurface registers h for the surface id, declared like an action's
// (see [Agent.HandleAction]). It panics if id is not declared or already has a
// handler. The result of h is validated against the contracts before it is
// sent.
func (a *Agent) HandleSurface(id string, h SurfaceHandler) {
	if h == nil {
		panic(fmt.Sprintf("supervaizer: HandleSurface(%q) on agent %q: nil handler", id, a.slug))
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, dup := a.surfaces[id]; dup {
		panic(fmt.Sprintf("supervaizer: HandleSurface: surface %q of agent %q already has a handler", id, a.slug))
	}
	if !a.declaresSurface(id) {
		panic(a.notDeclared("HandleSurface", "surface", id))
	}
	if err := a.declare(id, true); err != nil {
		panic(fmt.Sprintf("supervaizer: HandleSurface: surface %q of agent %q: %v", id, a.slug, err))
	}
	a.record(id)
	a.surfaces[id] = h
}

// setSDKAction installs an SDK-provided default handler (e.g. the rule-checkpoint
// resume handler) unless the author registered one.
func (a *Agent) setSDKAction(id string, h ActionHandler) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.actions[id]; ok {
		return
	}
	a.actions[id] = h
	a.sdkActions[id] = true
}

func (a *Agent) action(id string) ActionHandler {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.actions[id]
}

func (a *Agent) surface(id string) SurfaceHandler {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.surfaces[id]
}

// ServeCampaignControl makes the agent serve the campaign-control
// extension (package campaign): the six campaign/* methods, and
// the A2A send and cancel under a lease. It fails when cc enforces no
// constraint. Call it before the server serves.
func (a *Agent) ServeCampaignControl(cc campaign.Control) error {
	if cc.Enforces == (campaign.Policy{}) {
		return fmt.Errorf("supervaizer: ServeCampaignControl: agent %q enforces no constraint", a.slug)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.campaign = &cc
	return nil
}

// campaignControl is the agent's extension (nil when not served).
func (a *Agent) campaignControl() *campaign.Control {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.campaign
}

// checkLanes warns about lanes the contract accepts but that are likely
// mistakes.
func checkLanes(logger *slog.Logger, a *Agent) {
	if a.reg == nil {
		return
	}
	seen, defaults := map[string]bool{}, 0
	for _, l := range a.reg.Capabilities.CaseLanes {
		if seen[l.ID] {
			logger.Warn("duplicate case lane id", slog.String("agent_slug", a.slug), slog.String("lane", l.ID))
		}
		seen[l.ID] = true
		if l.Default {
			defaults++
		}
	}
	if defaults > 1 {
		logger.Warn("more than one default case lane", slog.String("agent_slug", a.slug), slog.Int("defaults", defaults))
	}
}
