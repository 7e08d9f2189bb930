package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// envTestURL names the variable that holds the URL of the test server.
const envTestURL = "SUPERVAIZER_TEST_DATABASE_URL"

// testURL returns the URL of the test database, or skips the test when
// SUPERVAIZER_TEST_DATABASE_URL is unset.
func testURL(t testing.TB) string {
	t.Helper()
	url := os.Getenv(envTestURL)
	if url == "" {
		t.Skipf("%s is not set: this test needs a PostgreSQL server (for example %s=postgres://postgres@127.0.0.1:5432/test)",
			envTestURL, envTestURL)
	}
	return withTestParams(url)
}

// withTestParams turns off synchronous commits for the tests' sessions: a
// commit then costs no disk flush, and what the tests check (atomicity,
// visibility, order) does not depend on it.
func withTestParams(url string) string {
	if !strings.Contains(url, "://") || strings.Contains(url, "synchronous_commit") {
		return url
	}
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	return url + sep + "synchronous_commit=off"
}

// testSchema returns the name of a new schema that is dropped when the test
// ends, so that tests and test runs sharing a database never meet.
func testSchema(t testing.TB) string {
	t.Helper()
	url := testURL(t)
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "svtest_" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	return schema
}

// openTest opens a DB on a new schema; it is closed when the test ends.
func openTest(t testing.TB, opts ...Option) *DB {
	t.Helper()
	schema := testSchema(t)
	db, err := Open(context.Background(), testURL(t), append([]Option{WithSchema(schema)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(db.Close)
	return db
}
