package supervaizer

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/internal/tools/studiotest"
	"github.com/supervaize/supervaizer-go/observe"
	"github.com/supervaize/supervaizer-go/store"
	"github.com/supervaize/supervaizer-go/studio"
)

// storeRecorder is an observer that records store operations.
type storeRecorder struct {
	observe.Nop
	mu  sync.Mutex
	ops []observe.StoreOp
}

func (r *storeRecorder) Store(_ context.Context, op observe.StoreOp) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ops = append(r.ops, op)
}

// failingStore fails every operation.
type failingStore struct{ store.Store }

var errStoreDown = errors.New("store down")

func (failingStore) Get(context.Context, string) ([]byte, bool, error) {
	return nil, false, errStoreDown
}

// TestObservedStore: the wrapper reports each operation with its kind and
// error, and store.IsExclusive answers through it.
func TestObservedStore(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name      string
		st        store.Store
		exclusive bool
	}{
		{"memory", store.NewMemory(), true},
		{"shared", sharedStore{store.NewMemory()}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := &storeRecorder{}
			st := observedStore{st: tt.st, obs: rec}
			assert.Equal(t, tt.exclusive, store.IsExclusive(st))
			_, stored, err := st.PutIfAbsent(ctx, "k", []byte("v1"))
			require.NoError(t, err)
			require.True(t, stored)
			v, found, err := st.Get(ctx, "k")
			require.NoError(t, err)
			require.True(t, found)
			assert.Equal(t, "v1", string(v))
			swapped, err := st.CompareAndSwap(ctx, "k", []byte("v1"), []byte("v2"))
			require.NoError(t, err)
			require.True(t, swapped)
			var keys []string
			require.NoError(t, st.Scan(ctx, "", func(k string, _ []byte) error { keys = append(keys, k); return nil }))
			assert.Equal(t, []string{"k"}, keys)
			require.NoError(t, st.Delete(ctx, "k"))
			require.NoError(t, st.Close())
			var kinds []string
			for _, op := range rec.ops {
				kinds = append(kinds, op.Kind)
				assert.NoError(t, op.Err)
				assert.False(t, op.Start.IsZero())
				assert.GreaterOrEqual(t, op.Duration, int64(0))
			}
			assert.Equal(t, []string{observe.StorePutIfAbsent, observe.StoreGet, observe.StoreCompareAndSwap, observe.StoreScan, observe.StoreDelete}, kinds)
		})
	}
	t.Run("error", func(t *testing.T) {
		rec := &storeRecorder{}
		st := observedStore{st: failingStore{store.NewMemory()}, obs: rec}
		_, _, err := st.Get(ctx, "k")
		require.ErrorIs(t, err, errStoreDown)
		require.Len(t, rec.ops, 1)
		assert.Equal(t, observe.StoreGet, rec.ops[0].Kind)
		assert.ErrorIs(t, rec.ops[0].Err, errStoreDown)
	})
}

// TestObserverStoreInstalled: the server's store is wrapped only when an
// observer is set.
func TestObserverStoreInstalled(t *testing.T) {
	for _, tt := range []struct {
		name    string
		obs     observe.Observer
		wrapped bool
	}{
		{"no observer", nil, false},
		{"observer", &storeRecorder{}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			opts := []Option{WithEnv(func(string) string { return "" }), WithLocalMode(true), WithLogger(slog.New(slog.DiscardHandler))}
			if tt.obs != nil {
				opts = append(opts, WithObserver(tt.obs))
			}
			srv, err := NewServer([]*Agent{stAgent(t, studiotest.AgentName)}, opts...)
			require.NoError(t, err)
			_, wrapped := srv.idem.store.(observedStore)
			assert.Equal(t, tt.wrapped, wrapped)
			assert.True(t, store.IsExclusive(srv.idem.store), "the memory store is exclusive, wrapped or not")
		})
	}
}

// transportRecorder wraps the Studio client's transport and counts requests.
type transportRecorder struct {
	observe.Nop
	wrapped  atomic.Int64
	requests atomic.Int64
}

func (r *transportRecorder) Transport(base http.RoundTripper) http.RoundTripper {
	r.wrapped.Add(1)
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		r.requests.Add(1)
		return base.RoundTrip(req)
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestObserverTransportForStudio: the Studio client built from the
// environment sends its calls through the observer's transport.
func TestObserverTransportForStudio(t *testing.T) {
	f := studiotest.New(t)
	key, _ := studiotest.ControllerRSA(t)
	env := map[string]string{studio.EnvAPIURL: f.URL(), studio.EnvAPIKey: studiotest.AccountKey,
		studio.EnvWorkspaceID: studiotest.Workspace, "SUPERVAIZER_PUBLIC_URL": studiotest.PublicURL,
		"SUPERVAIZER_SERVER_ID": studiotest.LocalServer}
	rec := &transportRecorder{}
	srv, err := NewServer([]*Agent{stAgent(t, studiotest.AgentName)},
		WithEnv(func(k string) string { return env[k] }), WithObserver(rec), WithLogger(slog.New(slog.DiscardHandler)),
		WithWorkspaceAuth(WorkspaceAuthSettings{Enabled: true, Issuer: studiotest.Issuer, PublicKeyPEM: studiotest.SigningPEM}),
		WithAPIKey(studiotest.ControllerKey, ScopeWrite), WithControllerKey(key))
	require.NoError(t, err)
	assert.EqualValues(t, 1, rec.wrapped.Load())
	a, _ := srv.Agent(studiotest.AgentSlug)
	a.HandleAction("job.start", func(context.Context, *ActionRequest) (*ActionResult, error) { return OK(), nil })
	require.NoError(t, srv.Start(context.Background()))
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	assert.EqualValues(t, len(f.Recorded()), rec.requests.Load(), "every Studio call went through the observer's transport")
	assert.Positive(t, rec.requests.Load())
}
