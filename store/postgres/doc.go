// Package postgres keeps the state of supervaizer-go controllers in
// PostgreSQL, so that several instances of a controller behind one load
// balancer share it: a [Store] implementing store.Store.
//
// It is a Go module of its own, github.com/supervaize/supervaizer-go/store/postgres,
// so that importing the SDK never adds the PostgreSQL driver
// (github.com/jackc/pgx/v5) to an agent's build; only agents that import this
// package get it:
//
//	go get github.com/supervaize/supervaizer-go/store/postgres
//
// # Quick start
//
// Open the database, then give it to the server with WithBackend: the store
// and the event stream together, so that a client of any instance sees the
// events of every instance (WithStore(db.Store()) would share the state but
// not the stream; see docs/deploying.md):
//
//	db, err := postgres.Open(ctx, os.Getenv("SUPERVAIZER_DATABASE_URL"))
//	if err != nil {
//		return err
//	}
//	defer db.Close()
//	srv, err := supervaizer.New(spec, supervaizer.WithBackend(db))
//	if err != nil {
//		return err
//	}
//	return srv.ListenAndServe(ctx)
//
// # Schema
//
// [Open] creates the tables in a schema of their own ([DefaultSchema] unless
// [WithSchema] names another) and migrates them when a newer version of this
// package needs more: migrations run in one transaction under an advisory
// lock, so that instances starting together migrate once, and the schema
// records its version in the table schema_version. A schema migrated by a
// newer version makes Open fail with [ErrSchemaTooNew] rather than misread it.
// The database user needs the right to create the schema, or must own it.
//
// # Tests
//
// The tests of this package need a PostgreSQL server: they run when
// SUPERVAIZER_TEST_DATABASE_URL holds its URL, each test in a schema of its
// own that it drops at the end, and are skipped, saying so, when it is unset.
package postgres
