package postgres

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"

	"github.com/jackc/pgx/v5"
)

// migration is one step of the schema. Steps are applied in order, each in
// the transaction that records its version; a step never changes once
// released: a change of layout is a new step.
type migration struct {
	version int
	// Each statement runs with %[1]s replaced by the quoted schema name.
	sql []string
}

// migrations is the history of the schema, oldest first; versions are 1, 2, …
var migrations = []migration{
	{1, []string{`
CREATE TABLE %[1]s.kv (
	key   bytea PRIMARY KEY CHECK (octet_length(key) BETWEEN 1 AND 1024),
	value bytea NOT NULL
)`}},
	// The event log: events, the counter that numbers them (one row), and
	// the last id the retention deleted (one row).
	{2, []string{`
CREATE TABLE %[1]s.events (
	id         bigint PRIMARY KEY,
	name       bytea NOT NULL,
	data       bytea NOT NULL,
	created_at timestamptz NOT NULL DEFAULT now()
)`, `
CREATE TABLE %[1]s.event_seq (
	one     boolean PRIMARY KEY DEFAULT true CHECK (one),
	last_id bigint NOT NULL
)`,
		`INSERT INTO %[1]s.event_seq (last_id) VALUES (0)`, `
CREATE TABLE %[1]s.event_pruned (
	one     boolean PRIMARY KEY DEFAULT true CHECK (one),
	through bigint NOT NULL
)`,
		`INSERT INTO %[1]s.event_pruned (through) VALUES (0)`,
	}},
}

// SchemaVersion is the version of the tables this package reads and writes.
var SchemaVersion = migrations[len(migrations)-1].version

// ErrSchemaTooNew is returned by [Open] when the schema was migrated by a newer
// version of this package: this one could misread the tables.
var ErrSchemaTooNew = errors.New("postgres: schema version is newer than this package supports")

// migrate creates the schema and its version table if missing and applies the
// migrations the database lacks, in one transaction that holds an advisory
// lock, so that instances starting together migrate once and in order.
func migrate(ctx context.Context, cfg *pgx.ConnConfig, schema string) error {
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		return migrateTx(ctx, tx, schema)
	})
	if err != nil {
		if errors.Is(err, ErrSchemaTooNew) {
			return err
		}
		return fmt.Errorf("postgres: migrate schema %q: %w", schema, err)
	}
	return nil
}

func migrateTx(ctx context.Context, tx pgx.Tx, schema string) error {
	q := pgx.Identifier{schema}.Sanitize()
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", migrationLockKey(schema)); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+q); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, "CREATE TABLE IF NOT EXISTS "+q+`.schema_version (
	version    integer PRIMARY KEY,
	applied_at timestamptz NOT NULL DEFAULT now()
)`)
	if err != nil {
		return err
	}
	var current int
	if err := tx.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM "+q+".schema_version").Scan(&current); err != nil {
		return err
	}
	if current > SchemaVersion {
		return fmt.Errorf("%w: schema %q is at version %d, this package knows up to %d",
			ErrSchemaTooNew, schema, current, SchemaVersion)
	}
	for _, m := range migrations[current:] {
		for _, stmt := range m.sql {
			if _, err := tx.Exec(ctx, fmt.Sprintf(stmt, q)); err != nil {
				return fmt.Errorf("version %d: %w", m.version, err)
			}
		}
		if _, err := tx.Exec(ctx, "INSERT INTO "+q+".schema_version (version) VALUES ($1)", m.version); err != nil {
			return err
		}
	}
	return nil
}

// migrationLockKey is the advisory lock taken while a schema is migrated.
func migrationLockKey(schema string) int64 {
	h := fnv.New64a()
	h.Write([]byte("supervaizer-go/store/postgres migrate "))
	h.Write([]byte(schema))
	return int64(h.Sum64())
}
