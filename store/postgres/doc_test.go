package postgres_test

import (
	"context"
	"log/slog"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/internal/tools/proctest"
	"github.com/supervaize/supervaizer-go/store/postgres"
)

// TestPackageDocQuickStart runs the package comment's quick start as written,
// on the database of SUPERVAIZER_TEST_DATABASE_URL (skipped, saying so,
// without it, as this package's other tests): the server serves with the
// PostgreSQL store and event stream, and returns nil once ctx is cancelled.
// It creates DefaultSchema, and drops it when it did not exist before.
func TestPackageDocQuickStart(t *testing.T) {
	url := os.Getenv("SUPERVAIZER_TEST_DATABASE_URL")
	if url == "" {
		t.Skip("SUPERVAIZER_TEST_DATABASE_URL is not set: this test needs a PostgreSQL server (.ci/run sets it, and fails when the server cannot be reached)")
	}
	dropSchemaIfNew(t, url, postgres.DefaultSchema)
	t.Setenv("SUPERVAIZER_DATABASE_URL", url)
	t.Setenv("SUPERVAIZER_LOCAL_MODE", "true")
	t.Setenv("SUPERVAIZER_ADDR", "127.0.0.1:0")
	t.Setenv("SUPERVAIZER_SERVER_ID", "doc-quick-start")
	var logs proctest.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&logs, nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })
	spec := supervaizer.AgentSpec{Name: "Research Agent", Version: "1.0.0"}

	quickStart := func(ctx context.Context) error {
		db, err := postgres.Open(ctx, os.Getenv("SUPERVAIZER_DATABASE_URL"))
		if err != nil {
			return err
		}
		defer db.Close()
		srv, err := supervaizer.New(spec, supervaizer.WithBackend(db))
		if err != nil {
			return err
		}
		return srv.ListenAndServe(ctx)
	}

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- quickStart(ctx) }()
	ready := regexp.MustCompile(`controller ready" .*url=(http://\S+)`)
	var base string
	for deadline := time.Now().Add(proctest.ServeTimeout); base == ""; time.Sleep(50 * time.Millisecond) {
		select {
		case err := <-done:
			require.NoError(t, err, "the quick start returned before serving")
			require.FailNow(t, "the quick start returned before serving")
		default:
		}
		require.True(t, time.Now().Before(deadline), "the server does not serve\n%s", logs.String())
		if m := ready.FindStringSubmatch(logs.String()); m != nil {
			base = m[1]
		}
	}
	assert.Contains(t, logs.String(), `store=postgres events="postgres`, "WithBackend: the PostgreSQL store and event stream")
	resp, err := http.Get(base + "/.well-known/health")
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	cancel()
	require.NoError(t, <-done)
}

// dropSchemaIfNew drops schema when the test ends, unless it existed before.
func dropSchemaIfNew(t *testing.T, url, schema string) {
	t.Helper()
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	var exists bool
	require.NoError(t, conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)", schema).Scan(&exists))
	if exists {
		return
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil && !strings.Contains(err.Error(), "does not exist") {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
}
