package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/conversation"
	"github.com/supervaize/supervaizer-go/store"
	"github.com/supervaize/supervaizer-go/studio"
)

// app is the research agent: the SDK server, the agent and its handlers, and
// the agent's own state. main runs it; tests build it in-process with newApp.
type app struct {
	logger *slog.Logger
	store  store.Store
	agent  *supervaizer.Agent
	srv    *supervaizer.Server
	jobs   *jobStore
	sender sender
	ctxs   *studio.ContextAssigner
	now    func() time.Time
	// sendDelay is how long an approved brief waits before it is sent
	// (RESEARCH_AGENT_SEND_DELAY).
	sendDelay time.Duration
	// delegate hands the gathering of sources to a remote agent
	// (RESEARCH_AGENT_DELEGATE_URL); nil: the agent gathers them itself.
	delegate *delegator

	closeStore func() error // closes the store, or the database pool

	// Background deliveries run on bg; Shutdown cancels it and waits for them.
	bg     context.Context
	stopBG context.CancelFunc
	work   sync.WaitGroup
}

// newApp opens the store, builds the agent and its server,
// registers every handler, and resumes the deliveries a previous run left
// unfinished. The caller must call Shutdown, then Close.
func newApp(cfg config) (*app, error) {
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	getenv := cfg.Getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	// Jobs, contacts and the SDK's idempotency records survive a restart: in
	// one local file, or in PostgreSQL shared by every instance (unless
	// SUPERVAIZER_STORE=memory asks for none of that).
	st, state, closeState, err := openState(cfg, logger)
	if err != nil {
		return nil, err
	}
	opts := []supervaizer.Option{supervaizer.WithEnv(getenv), state, supervaizer.WithLogger(logger),
		// The conversation's token usage is billed as consumption of its job.
		supervaizer.WithUsageBilling(conversation.BillingSKUs{InputTokens: skuInputTokens, OutputTokens: skuOutputTokens})}
	if cfg.InstanceID != "" {
		opts = append(opts, supervaizer.WithInstanceID(cfg.InstanceID))
	}
	if cfg.Observer != nil {
		opts = append(opts, cfg.Observer)
	}
	if cfg.SSEQueue > 0 {
		opts = append(opts, supervaizer.WithSSEQueueSize(cfg.SSEQueue))
	}
	if cfg.Lease > 0 {
		opts = append(opts, supervaizer.WithIdempotencyLease(cfg.Lease))
	}
	srv, err := supervaizer.New(agentSpec(), opts...)
	if err != nil {
		return nil, errors.Join(err, closeState())
	}
	agent, ok := srv.Agent(agentSlug) // for the agent-level APIs: idempotent actions, rule checkpoints
	if !ok {
		return nil, errors.Join(fmt.Errorf("agent: %q is not the slug of %q", agentSlug, agentName), closeState())
	}
	bg, stop := context.WithCancel(context.Background())
	a := &app{
		logger: logger, store: st, closeStore: closeState, agent: agent, srv: srv,
		jobs: &jobStore{st: st, now: time.Now, exclusive: store.IsExclusive(st)}, sender: &outboxSender{st: st, now: time.Now},
		now: time.Now, sendDelay: cfg.SendDelay, delegate: newDelegator(cfg, st), bg: bg, stopBG: stop,
	}
	a.ctxs = &studio.ContextAssigner{Opener: srv.Studio().Context(), Save: a.saveContext}
	a.register()
	if err := a.serveCampaignControl(); err != nil {
		return nil, errors.Join(err, closeState())
	}
	return a, nil
}

// Start registers with Studio when attached (and checks the handshake), then
// resumes the work a previous run left unfinished. Resuming comes second on
// purpose: recovering a governed delivery may ask Studio's rule checkpoints,
// which must never happen before the handshake succeeded (startup can still
// fail until then).
func (a *app) Start(ctx context.Context) error {
	if err := a.srv.Start(ctx); err != nil {
		return err
	}
	if err := a.resumeDeliveries(a.bg); err != nil {
		return fmt.Errorf("resume deliveries: %w", err)
	}
	return nil
}

// register wires every action and surface of the registration to its handler.
func (a *app) register() {
	// job.start: the typed form validates {"topic_id": …} before the handler
	// runs. The SDK's idempotency layer applies to it automatically.
	supervaizer.HandleActionFor(a.srv, actionStart, a.startJob)
	supervaizer.HandleActionFor(a.srv, actionPreview, a.previewJob)
	supervaizer.HandleActionFor(a.srv, actionSubmit, a.submitReview)
	a.agent.Idempotent(actionSubmit) // a retried approval returns the original result
	a.srv.HandleAction(actionSync, a.syncJob)
	a.srv.HandleAction(actionStop, a.stopJob)
	supervaizer.HandleActionFor(a.srv, actionGoalSuggest, a.suggestGoal)
	supervaizer.HandleActionFor(a.srv, actionTest, a.testJob)
	supervaizer.HandleActionFor(a.srv, actionAsk, a.ask) // the conversation action (conversation.go)
	a.srv.HandleAction(studio.ContextAssignAction, a.assignContext)

	a.registerWorkspaceBinding()
	a.registerContacts()
	a.registerProgress()

	a.srv.HandleSurface(surfaceJobStart, a.jobStartSurface)
	a.srv.HandleSurface(surfaceStepAwaiting, a.reviewSurface)
	a.srv.HandleSurface(surfaceStepDetail, a.stepDetailSurface)
	a.srv.HandleSurface(surfaceAnalytics, a.analyticsSurface)
}

// Handler is the agent's HTTP handler: Agent Cards, POST /a2a, GET /a2a/events.
func (a *app) Handler() http.Handler { return a.srv }

// Shutdown closes the event streams, waits for in-flight /a2a calls, then
// stops the background deliveries and waits for them (a delivery that is
// interrupted resumes at the next start). Call it before http.Server.Shutdown.
func (a *app) Shutdown(ctx context.Context) error {
	err := a.srv.Shutdown(ctx)
	a.stopBG()
	done := make(chan struct{})
	go func() { a.work.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		err = errors.Join(err, fmt.Errorf("background deliveries: %w", ctx.Err()))
	}
	return err
}

// Close releases the store. Call it after Shutdown.
func (a *app) Close() error { return a.closeStore() }

// openState opens where the agent keeps its state and returns it with the
// server option that hands it to the SDK: PostgreSQL, shared by every
// instance, when SUPERVAIZER_DATABASE_URL is set (store and event stream
// together), memory with SUPERVAIZER_STORE=memory, else the local bbolt file.
func openState(cfg config, logger *slog.Logger) (store.Store, supervaizer.Option, func() error, error) {
	if cfg.DatabaseURL != "" {
		return openDatabase(cfg, logger) // state_postgres.go
	}
	if cfg.Memory {
		st := store.NewMemory()
		return st, supervaizer.WithStore(st), st.Close, nil
	}
	st, err := store.Open(cfg.DBPath)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("open the store: %w", err)
	}
	if cfg.SharedDefault {
		// Upgraded from a version whose default folder every agent of the
		// user shared: its records stay in use, and the log says how to move.
		logger.Info("using the store of the shared default folder (earlier versions): other agents of this user may use it too; "+
			"set "+store.EnvDataDir+" to a folder of this agent's own and move the file there", "path", cfg.DBPath)
	}
	var s store.Store = st
	if cfg.wrapStore != nil {
		s = cfg.wrapStore(st)
	}
	return s, supervaizer.WithStore(s), st.Close, nil
}
