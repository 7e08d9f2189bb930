package supervaizer

import (
	"bytes"
	"context"
	"fmt"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/supervaize/supervaizer-go/a2a"
	"github.com/supervaize/supervaizer-go/internal/preview"
)

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
			r.Use(s.requireKey(ScopeWrite))
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
