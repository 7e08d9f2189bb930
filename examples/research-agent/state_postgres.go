package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/store"
	"github.com/supervaize/supervaizer-go/store/postgres"
)

// databaseOpenTimeout bounds connecting to the database and migrating it.
const databaseOpenTimeout = 30 * time.Second

// openDatabase opens the PostgreSQL state of SUPERVAIZER_DATABASE_URL: the
// store and the event stream, shared by every instance.
func openDatabase(cfg config, logger *slog.Logger) (store.Store, supervaizer.Option, func() error, error) {
	ctx, cancel := context.WithTimeout(context.Background(), databaseOpenTimeout)
	defer cancel()
	opts := []postgres.Option{postgres.WithLogger(logger)}
	if cfg.DatabaseSchema != "" {
		opts = append(opts, postgres.WithSchema(cfg.DatabaseSchema))
	}
	db, err := postgres.Open(ctx, cfg.DatabaseURL, opts...)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("open the database (%s): %w", supervaizer.EnvDatabaseURL, err)
	}
	return db.Store(), supervaizer.WithBackend(db), func() error { db.Close(); return nil }, nil
}
