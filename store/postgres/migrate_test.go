package postgres

import (
	"context"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMigrateConcurrent opens one new schema from several goroutines at once,
// as instances starting together do: every Open succeeds and each migration
// is recorded once.
func TestMigrateConcurrent(t *testing.T) {
	schema := testSchema(t)
	url := testURL(t)
	const n = 4
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			db, err := Open(context.Background(), url, WithSchema(schema), WithMaxConns(1))
			errs[i] = err
			if err == nil {
				db.Close()
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "Open %d", i)
	}
	db := openSchema(t, url, schema)
	var versions []int
	rows, err := db.pool.Query(t.Context(), "SELECT version FROM "+pgx.Identifier{schema}.Sanitize()+".schema_version ORDER BY version")
	require.NoError(t, err)
	versions, err = pgx.CollectRows(rows, pgx.RowTo[int])
	require.NoError(t, err)
	var want []int
	for _, m := range migrations {
		want = append(want, m.version)
	}
	assert.Equal(t, want, versions)
	assert.Equal(t, SchemaVersion, versions[len(versions)-1])
}

// TestMigrateKeepsData reopens a schema: the data stays and nothing is
// migrated twice.
func TestMigrateKeepsData(t *testing.T) {
	schema := testSchema(t)
	url := testURL(t)
	db := openSchema(t, url, schema)
	_, _, err := db.Store().PutIfAbsent(t.Context(), "k", []byte("v"))
	require.NoError(t, err)
	db.Close()

	db = openSchema(t, url, schema)
	v, found, err := db.Store().Get(t.Context(), "k")
	require.NoError(t, err)
	assert.True(t, found)
	assert.Equal(t, []byte("v"), v)
}

// TestMigrateTooNew refuses a schema migrated by a newer version.
func TestMigrateTooNew(t *testing.T) {
	schema := testSchema(t)
	url := testURL(t)
	db := openSchema(t, url, schema)
	_, err := db.pool.Exec(t.Context(), "INSERT INTO "+pgx.Identifier{schema}.Sanitize()+".schema_version (version) VALUES ($1)", SchemaVersion+1)
	require.NoError(t, err)
	db.Close()

	_, err = Open(t.Context(), url, WithSchema(schema))
	assert.ErrorIs(t, err, ErrSchemaTooNew)
}

func openSchema(t *testing.T, url, schema string) *DB {
	t.Helper()
	db, err := Open(t.Context(), url, WithSchema(schema))
	require.NoError(t, err)
	t.Cleanup(db.Close)
	return db
}
