package testing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"time"

	supervaizer "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/store"
	"github.com/supervaize/supervaizer-go/studio"
)

// linkTimeout bounds the registration handshake of [FakeStudio.Link].
const linkTimeout = 30 * time.Second

// handshake links agent to the Studio agent id s records for its slug as
// production does: a controller serving the agent, attached to a fake
// Studio API of s, runs Server.Start (server.register, the handshake that
// binds the agent's slug to its Studio agent id, the agent lookup), then
// shuts down. The controller logs nothing and keeps nothing.
func (s *FakeStudio) handshake(agent *supervaizer.Agent) error {
	api := newFakeStudioAPI(s.t, s, apiConfig{accountKey: DefaultAccountKey, workspaceID: DefaultWorkspaceID})
	hs := httptest.NewServer(api)
	defer hs.Close()
	key, err := controllerKey()
	if err != nil {
		return fmt.Errorf("generate the controller key: %w", err)
	}
	client, err := studio.NewClient(studio.Config{APIURL: hs.URL, WorkspaceID: api.ws, APIKey: api.key, MaxRetries: studio.NoRetries})
	if err != nil {
		return err
	}
	mem := store.NewMemory()
	defer func() { _ = mem.Close() }()
	ctrl, err := supervaizer.NewServer([]*supervaizer.Agent{agent},
		supervaizer.WithEnv(func(string) string { return "" }),
		supervaizer.WithLogger(slog.New(slog.DiscardHandler)),
		supervaizer.WithAPIKey(DefaultAPIKey, supervaizer.ScopeWrite),
		supervaizer.WithServerID(DefaultControllerID),
		supervaizer.WithWorkspaceAuth(s.AttachedSettings()),
		supervaizer.WithStudio(client),
		supervaizer.WithControllerKey(key),
		supervaizer.WithPublicURL(DefaultPublicURL),
		supervaizer.WithStore(mem),
	)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), linkTimeout)
	defer cancel()
	return errors.Join(ctrl.Start(ctx), ctrl.Shutdown(ctx))
}
