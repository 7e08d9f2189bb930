package supervaizer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/internal/checkpoint"
	"github.com/supervaize/supervaizer-go/internal/sdkhook"
	"github.com/supervaize/supervaizer-go/internal/slug"
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

	// Registration is the v2 registration, usually from [BuildRegistration]. Its
	// agent.slug must equal the slug derived from Name. Required to serve /a2a.
	Registration *contracts.Registration

	Introduction    *contracts.Introduction    // agent-list entry; omitted when nil
	FullDescription *contracts.FullDescription // detail page; omitted when nil
	BillingCatalog  contracts.BillingCatalog   // billable SKUs; omitted when empty

	// Methods are the agent methods (agent.refresh, agent.custom.<key>). Their
	// action ids are appended to the registration when missing, and their
	// handlers are registered by the SDK.
	Methods *AgentMethods
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

	mu         sync.RWMutex
	actions    map[string]ActionHandler
	surfaces   map[string]SurfaceHandler
	sdkActions map[string]bool // ids whose handler the SDK provides
	studioID   string
	idempotent map[string]bool // actions opted in to the idempotency layer
	data       dataRegistry    // typed resources, for the DataResource REST routes

	// Rule-checkpoint state; NewServer attaches the server's store (checkpoint.go).
	checkpoints *checkpoint.Agent
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
	}
	if a.slug == "" {
		return nil, fmt.Errorf("supervaizer: agent name %q derives an empty slug: the slug is made of "+
			"the name's letters and digits transliterated to ASCII, and a character without a "+
			"transliteration (emoji, private use, some rare scripts) is dropped", spec.Name)
	}
	v := contracts.DefaultValidator()
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
	if spec.Registration != nil {
		reg, err := cloneRegistration(spec.Registration)
		if err != nil {
			return nil, err
		}
		if reg.Agent.Slug != a.slug {
			return nil, fmt.Errorf("supervaizer: v2 registration agent.slug must match Agent.slug: %q != %q", reg.Agent.Slug, a.slug)
		}
		for _, id := range spec.Methods.actionIDs() {
			if !reg.Capabilities.HasAction(id) {
				reg.Capabilities.Actions = append(reg.Capabilities.Actions,
					contracts.ActionDefinition{ID: id, Mutating: true, Scope: contracts.ScopeJob, Kind: contracts.KindCommand})
			}
		}
		raw, err := v.ValidateValue(contracts.ModelRegistration, reg)
		if err != nil {
			return nil, fmt.Errorf("supervaizer: agent %q registration: %w", a.slug, err)
		}
		a.reg, a.regJSON = reg, raw
	}
	if err := a.registerMethods(spec.Methods); err != nil {
		return nil, err
	}
	var capability *contracts.RuleCheckpoints
	if a.reg != nil {
		capability = a.reg.Capabilities.RuleCheckpoints
	}
	a.checkpoints = checkpoint.NewAgent(a.slug, capability)
	return a, nil
}

func cloneRegistration(r *contracts.Registration) (*contracts.Registration, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("supervaizer: encode registration: %w", err)
	}
	var out contracts.Registration
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("supervaizer: decode registration: %w", err)
	}
	// A typed setup plan decodes as raw JSON; keep the typed form for checks.
	if r.JobPolicy.Setup != nil && r.JobPolicy.Setup.Plan != nil && out.JobPolicy.Setup != nil {
		out.JobPolicy.Setup.Plan = r.JobPolicy.Setup.Plan
	}
	return &out, nil
}

// Slug returns the agent slug derived from its name.
func (a *Agent) Slug() string { return a.slug }

// Spec returns a copy of the agent's spec.
func (a *Agent) Spec() AgentSpec { return a.spec }

// Registration returns the agent's v2 registration (with method actions
// appended), or nil. Treat it as read-only.
func (a *Agent) Registration() *contracts.Registration { return a.reg }

// RegistrationJSON returns the validated JSON of the registration, or nil.
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
// agent is already linked to a different id ("agent id mismatch"). The Studio
// handshake calls it; svtest's FakeStudio.Link does too, through sdkhook.
func init() {
	sdkhook.LinkStudioAgent = func(agent any, id string) error {
		a, ok := agent.(*Agent)
		if !ok || a == nil {
			return fmt.Errorf("supervaizer: link a Studio agent id: %T is not a *supervaizer.Agent", agent)
		}
		return a.linkStudioAgent(id)
	}
}

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

// declaresAction reports whether the registration declares the action.
func (a *Agent) declaresAction(id string) bool {
	return a.reg != nil && a.reg.Capabilities.HasAction(id)
}

// declaresSurface reports whether the registration declares the surface.
func (a *Agent) declaresSurface(id string) bool {
	return a.reg != nil && a.reg.Capabilities.HasSurface(id)
}

// HandleAction registers h for the action id declared in the agent's
// registration. It panics if id is not declared or already has a handler
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
		panic(fmt.Sprintf("supervaizer: HandleAction: action %q is not declared in the registration of agent %q", id, a.slug))
	}
	if _, dup := a.actions[id]; dup && !(replaceSDK && a.sdkActions[id]) {
		panic(fmt.Sprintf("supervaizer: HandleAction: action %q of agent %q already has a handler", id, a.slug))
	}
	a.actions[id] = h
	delete(a.sdkActions, id)
}

// HandleSurface registers h for the surface id declared in the agent's
// registration. It panics if id is not declared or already has a handler. The
// result of h is validated against the contracts before it is sent.
func (a *Agent) HandleSurface(id string, h SurfaceHandler) {
	if h == nil {
		panic(fmt.Sprintf("supervaizer: HandleSurface(%q) on agent %q: nil handler", id, a.slug))
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.declaresSurface(id) {
		panic(fmt.Sprintf("supervaizer: HandleSurface: surface %q is not declared in the registration of agent %q", id, a.slug))
	}
	if _, dup := a.surfaces[id]; dup {
		panic(fmt.Sprintf("supervaizer: HandleSurface: surface %q of agent %q already has a handler", id, a.slug))
	}
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
