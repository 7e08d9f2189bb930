package supervaizer

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/supervaize/supervaizer-go/a2a"
	"github.com/supervaize/supervaizer-go/campaign"
	"github.com/supervaize/supervaizer-go/internal/campaignctl"
	"github.com/supervaize/supervaizer-go/internal/preview"
	"github.com/supervaize/supervaizer-go/internal/taskview"
)

// maxCardBases bounds the cache of cards built per request host when no public
// URL is configured.
const maxCardBases = 16

// cards serves the discovery documents of a server's agents (their Agent
// Cards and agents.json), built once per base URL.
type cards struct {
	publicURL string
	agents    []*Agent
	bySlug    map[string]*Agent
	primary   *Agent
	logger    *slog.Logger

	mu   sync.Mutex
	sets map[string]*cardSet // base URL -> discovery documents (bounded, see maxCardBases)
}

// cardSet is the discovery output for one base URL, built once.
type cardSet struct {
	cards  map[string][]byte // slug -> card JSON
	agents []byte            // agents.json
}

// baseURL is the public URL, else the scheme and Host of the request.
func (cd *cards) baseURL(r *http.Request) string {
	if cd.publicURL != "" {
		return cd.publicURL
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// cardInput is what the card of a is built from. The card states the A2A
// version of its JSON-RPC interface (a2a.DefaultA2AVersion), not the
// registration's versions.a2a_version, which describes the registration to
// Studio and stays unchanged.
func cardInput(a *Agent, base string) a2a.CardInput {
	in := a2a.CardInput{
		Name: a.spec.Name, Description: a.spec.Description, Version: a.spec.Version, Slug: a.slug,
		Developer: a.developer(), BaseURL: base, Registration: a.regJSON,
	}
	if a.reg != nil {
		for _, d := range a.reg.Capabilities.Actions {
			info := a2a.ActionInfo{ID: d.ID, Label: d.Label, Description: d.Description, Scope: d.Scope, Mutating: d.Mutating, Kind: d.Kind}
			if d.ID == a.spec.Conversation {
				info.Conversation, info.Examples = true, a.spec.ConversationExamples
			}
			in.Actions = append(in.Actions, info)
		}
	}
	if cc := a.campaignControl(); cc != nil {
		in.Extensions = append(in.Extensions, a2a.AgentExtension{URI: campaign.URI, Params: campaignctl.ExtensionParams(cc),
			Description: "Campaign control: one supervisor at a time holds a campaign's lease; every mutation carries its epoch."})
	}
	if m := a.spec.Methods; m != nil {
		for _, c := range m.Custom {
			in.CustomMethods = append(in.CustomMethods, c.Key)
		}
	}
	return in
}

// discovery returns the cards and agents list for the request's base URL.
// They are built once per base URL; without a public URL the base comes from
// the request's Host, so at most maxCardBases bases are kept and any other is
// built for its request only.
func (cd *cards) discovery(r *http.Request) (*cardSet, error) {
	base := cd.baseURL(r)
	cd.mu.Lock()
	cs, ok := cd.sets[base]
	cd.mu.Unlock()
	if ok {
		return cs, nil
	}
	cs, err := cd.build(base)
	if err != nil {
		return nil, err
	}
	cd.mu.Lock()
	defer cd.mu.Unlock()
	if cd.sets == nil {
		cd.sets = map[string]*cardSet{}
	}
	if prev, ok := cd.sets[base]; ok {
		return prev, nil
	}
	if len(cd.sets) < maxCardBases {
		cd.sets[base] = cs
	}
	return cs, nil
}

// build builds the cards and agents list for one base URL.
func (cd *cards) build(base string) (*cardSet, error) {
	cs := &cardSet{cards: map[string][]byte{}}
	var summaries []a2a.AgentSummary
	for _, a := range cd.agents {
		in := cardInput(a, base)
		card, err := a2a.NewAgentCard(in)
		if err != nil {
			return nil, fmt.Errorf("agent %q card: %w", a.slug, err)
		}
		b, err := json.Marshal(card)
		if err != nil {
			return nil, fmt.Errorf("agent %q card: %w", a.slug, err)
		}
		cs.cards[a.slug] = b
		sum, err := a2a.NewAgentSummary(in)
		if err != nil {
			return nil, fmt.Errorf("agent %q summary: %w", a.slug, err)
		}
		summaries = append(summaries, sum)
	}
	b, err := json.Marshal(a2a.NewAgentsList(summaries...))
	if err != nil {
		return nil, err
	}
	cs.agents = b
	return cs, nil
}

func (cd *cards) serve(w http.ResponseWriter, r *http.Request, pick func(*cardSet) []byte) {
	cs, err := cd.discovery(r)
	if err != nil {
		cd.logger.LogAttrs(r.Context(), slog.LevelError, "discovery document failed", slog.Any("error", err))
		writeDetail(w, http.StatusInternalServerError, "Internal Server Error")
		return
	}
	b := pick(cs)
	if b == nil {
		writeDetail(w, http.StatusNotFound, "Not Found")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

func (cd *cards) serveAgentsList(w http.ResponseWriter, r *http.Request) {
	cd.serve(w, r, func(cs *cardSet) []byte { return cs.agents })
}

func (cd *cards) servePrimaryCard(w http.ResponseWriter, r *http.Request) {
	cd.serve(w, r, func(cs *cardSet) []byte { return cs.cards[cd.primary.slug] })
}

// serveAgentCard serves /.well-known/agents/v<version>/<slug>_agent.json and
// /.well-known/agents/<slug>_agent.json for the agents known at startup.
func (cd *cards) serveAgentCard(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.Path, "/.well-known/agents/")
	version, file, versioned := strings.Cut(rest, "/")
	if !versioned {
		file, version = version, ""
	}
	slug, ok := strings.CutSuffix(file, "_agent.json")
	a, known := cd.bySlug[slug]
	if !ok || !known || strings.Contains(file, "/") || (versioned && version != "v"+a.spec.Version) {
		writeDetail(w, http.StatusNotFound, "Not Found")
		return
	}
	cd.serve(w, r, func(cs *cardSet) []byte { return cs.cards[slug] })
}

// healthHandler serves GET /.well-known/health (public): each agent's
// status and figures come from counters the task view keeps as its jobs
// change (internal/taskview), never from a store scan per request.
func healthHandler(all []*Agent, tasks *taskview.View) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		agents := make([]a2a.AgentHealth, 0, len(all))
		for _, a := range all {
			studioID, _ := a.StudioAgentID()
			stats := tasks.Statistics(r.Context(), a.slug)
			agents = append(agents, a2a.AgentHealth{
				AgentID: a.legacyID, AgentServerID: studioID, Name: a.spec.Name,
				Status: stats.AgentStatus(), Version: a.spec.Version, Statistics: stats,
			})
		}
		writeJSON(w, http.StatusOK, a2a.NewHealth(time.Now(), agents...))
	}
}

// controllerContract is the v1 controller contract sent in server.register and
// served at GET /api/supervaizer/contract.
func controllerContract() map[string]any {
	return map[string]any{
		"controller_contract_version": "1.0",
		"api_base_path":               "/api",
		"endpoints":                   controllerEndpoints(),
	}
}

func controllerEndpoints() map[string]string {
	return map[string]string{
		"POST_AGENT_JOB_START":                 "/api/supervaizer/agents/{agent_slug}/jobs",
		"POST_AGENT_JOB_CUSTOM":                "/api/supervaizer/agents/{agent_slug}/custom/{method_name}",
		"POST_AGENT_STATUS":                    "/api/supervaizer/agents/{agent_slug}/status",
		"GET_JOB_STATUS":                       "/api/supervaizer/jobs/{job_id}",
		"GET_AGENT_JOB_STATUS":                 "/api/supervaizer/agents/{agent_slug}/jobs/{job_id}",
		"POST_AGENT_STOP":                      "/api/supervaizer/agents/{agent_slug}/stop",
		"GET_AGENT_JOB_LIST":                   "/api/supervaizer/agents/{agent_slug}/jobs",
		"GET_AGENT_BY_ID":                      "/api/supervaizer/agents/{agent_id}",
		"GET_AGENT_LIST":                       "/api/supervaizer/agents",
		"GET_AGENT_BY_SLUG":                    "/api/supervaizer/agents/{agent_slug}",
		"POST_AGENT_PARAMETERS":                "/api/supervaizer/agents/{agent_slug}/parameters",
		"POST_AGENT_CASE_UPDATE":               "/api/supervaizer/jobs/{job_id}/cases/{case_id}/update",
		"POST_AGENT_PARAMETER_VALIDATION":      "/api/supervaizer/agents/{agent_slug}/validate-agent-parameters",
		"POST_AGENT_METHOD_FIELD_VALIDATION":   "/api/supervaizer/agents/{agent_slug}/validate-method-fields",
		"DATA_RESOURCE":                        "/api/agents/{agent_slug}/data/{resource_name}/",
		"DATA_RESOURCE_ITEM":                   "/api/agents/{agent_slug}/data/{resource_name}/{item_id}",
		"DATA_RESOURCE_IMPORT":                 "/api/agents/{agent_slug}/data/{resource_name}/import/",
		"HEALTH_CHECK":                         ".well-known/health",
		"CONTROLLER_CONTRACT":                  "/api/supervaizer/contract",
		"POST_CONTROLLER_REGISTRATION_REFRESH": "/api/supervaizer/registration/refresh",
	}
}

func serveContract(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, controllerContract())
}

// previewPath is where the local preview is served: the agents' registration
// summary, every declared surface rendered from its surface.load result, the
// jobs started from it and a live event panel (see docs/getting-started.md).
const previewPath = preview.Prefix

// WithPreview turns the local preview at /_preview/ on or off. Default: on
// in local mode, answering only loopback connections addressed as localhost
// or a loopback IP; off otherwise. WithPreview(true) also serves it outside
// local mode and on any connection, and then every preview route, its event
// stream included, requires a write-scoped X-API-Key (401 without, 403 with a
// read key), as the preview calls the agent's actions with the controller's
// key: reach it through a proxy that adds the header. Outside local mode
// workspace tokens are still verified, so most calls are refused without one.
// It is never served when the controller is attached to Studio. The preview
// calls POST /a2a in-process with the controller's key; the page never sees
// a key or a token.
func WithPreview(on bool) Option { return func(c *config) { c.preview = &on } }

// newPreview builds the preview handler when it is enabled.
func (s *Server) newPreview() (*preview.Handler, error) {
	if s.cfg.studioAttached {
		return nil, nil
	}
	explicit := s.cfg.preview != nil
	if explicit && !*s.cfg.preview || !explicit && !s.cfg.localMode {
		return nil, nil
	}
	agents := make([]preview.Agent, 0, len(s.agents))
	for _, a := range s.agents {
		if a.regJSON == nil {
			continue // no registration (yet: seal rebuilds the preview)
		}
		pa := preview.Agent{
			Slug: a.slug, Name: a.spec.Name, Version: a.spec.Version, Description: a.spec.Description,
			CardPath: a2a.CardPath(a.slug), Registration: a.RegistrationJSON(),
		}
		if in := a.spec.Introduction; in != nil {
			pa.Tagline, pa.Summary, pa.ExampleGoals = in.Tagline, in.Summary, in.ExampleGoals
		}
		agents = append(agents, pa)
	}
	h, err := preview.New(preview.Config{Agents: agents, Call: s.callA2A, Events: s.broker, AllowRemote: explicit})
	if err != nil {
		return nil, fmt.Errorf("supervaizer: local preview: %w", err)
	}
	return h, nil
}

// mountPreview serves the preview under previewPath when it is enabled.
func (s *Server) mountPreview(r chi.Router) {
	if s.preview == nil {
		return
	}
	// Outside local mode every preview route, the event stream included,
	// needs the write key (spec item 68): the preview runs actions with it.
	r.Group(func(r chi.Router) {
		if !s.cfg.localMode {
			r.Use(requireKey(&s.keys, s.logger, ScopeWrite))
		}
		// Through s.preview: seal rebuilds it from the final registrations.
		r.Handle(previewPath+"*", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.preview.ServeHTTP(w, r) }))
		r.Get(previewPath[:len(previewPath)-1], func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, previewPath, http.StatusFound)
		})
	})
}

// callA2A posts a JSON-RPC body to this controller's POST /a2a in-process,
// with its write key: the whole pipeline applies (key, size, envelope, request
// model, workspace authorization, handler, result validation, SSE publish).
func (s *Server) callA2A(ctx context.Context, body []byte) ([]byte, error) {
	// A fresh routing context: the preview's own request is being routed.
	ctx = context.WithValue(ctx, chi.RouteCtxKey, (*chi.Context)(nil))
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "/a2a", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(HeaderAPIKey, s.keys.primary.Value())
	req.RemoteAddr = "127.0.0.1:0"
	rec := &bufferedResponse{header: http.Header{}}
	s.router.ServeHTTP(rec, req)
	if rec.status != http.StatusOK {
		return nil, fmt.Errorf("POST /a2a answered HTTP %d: %s", rec.status, bytes.TrimSpace(rec.body.Bytes()))
	}
	return rec.body.Bytes(), nil
}

// bufferedResponse collects a response in memory.
type bufferedResponse struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (b *bufferedResponse) Header() http.Header { return b.header }

func (b *bufferedResponse) WriteHeader(code int) {
	if b.status == 0 {
		b.status = code
	}
}

func (b *bufferedResponse) Write(p []byte) (int, error) {
	if b.status == 0 {
		b.status = http.StatusOK
	}
	return b.body.Write(p)
}
