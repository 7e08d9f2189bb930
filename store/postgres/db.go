package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/supervaize/supervaizer-go/store"
)

// Defaults of [Open].
const (
	// DefaultSchema is the PostgreSQL schema that holds the tables when
	// [WithSchema] is not used.
	DefaultSchema = "supervaizer"
	// DefaultMaxConns bounds the pool when neither [WithMaxConns] nor the
	// pool_max_conns parameter of the URL sets it.
	DefaultMaxConns = 16
)

// Option configures [Open].
type Option func(*options)

type options struct {
	schema       string
	maxConns     int32
	logger       *slog.Logger
	retainEvents int
	retainBytes  int
}

// WithSchema sets the PostgreSQL schema that holds the tables; Open creates it
// when missing. Several deployments (or test runs) can share one database,
// each in its own schema. Default: [DefaultSchema].
func WithSchema(name string) Option { return func(o *options) { o.schema = name } }

// WithMaxConns bounds the number of pooled connections. A value ≤ 0 keeps the
// pool_max_conns parameter of the URL, else [DefaultMaxConns].
func WithMaxConns(n int) Option {
	return func(o *options) {
		if n > 0 {
			o.maxConns = int32(min(n, 1<<20))
		}
	}
}

// WithLogger sets the logger of the event log's followers (reconnections,
// events lost to the retention). Default: discard everything.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithEventRetention bounds the events the event log keeps for Last-Event-ID
// replay: the latest events, at most events of them and at most bytes of
// names and payloads. A value ≤ 0 keeps the default, [DefaultEventRetention]
// or [DefaultEventRetentionBytes].
func WithEventRetention(events, bytes int) Option {
	return func(o *options) {
		if events > 0 {
			o.retainEvents = events
		}
		if bytes > 0 {
			o.retainBytes = bytes
		}
	}
}

// DB is a pool of connections to one PostgreSQL database, with the tables of
// one schema migrated to the version this package needs. Its methods are safe
// for concurrent use. Create one with [Open]; close it with [DB.Close].
type DB struct {
	pool       *pgxpool.Pool
	connConfig *pgx.ConnConfig // for the followers' own connections
	schema     string
	channel    string // LISTEN/NOTIFY channel of the event log
	sql        statements
	store      *Store
	events     *EventLog
	logger     *slog.Logger

	retainEvents, retainBytes int
	appends                   atomic.Uint64 // events appended through this DB
	pruning                   atomic.Bool   // a pruning is running
	followersDown             atomic.Int32  // event log followers not reading the log (events.go)
	bg                        sync.WaitGroup

	closeOnce sync.Once
}

// Open connects to the database named by url (a postgres:// URL or a
// key=value connection string, as libpq accepts), creates the schema and its
// tables or migrates them to the current version, and returns the pool. It
// fails when the database cannot be reached, when url is malformed, and when
// the schema was migrated by a newer version of this package.
//
// Every statement the store runs is prepared once per pooled connection.
func Open(ctx context.Context, url string, opts ...Option) (*DB, error) {
	o := options{schema: DefaultSchema, retainEvents: DefaultEventRetention, retainBytes: DefaultEventRetentionBytes}
	for _, opt := range opts {
		opt(&o)
	}
	if strings.TrimSpace(o.schema) == "" {
		return nil, errors.New("postgres: empty schema name")
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// The parse error may quote the URL, password included.
		return nil, errors.New("postgres: malformed database URL")
	}
	if o.maxConns > 0 {
		cfg.MaxConns = o.maxConns
	} else if !strings.Contains(url, "pool_max_conns") {
		cfg.MaxConns = DefaultMaxConns
	}
	if o.logger == nil {
		o.logger = slog.New(slog.DiscardHandler)
	}
	db := &DB{
		schema: o.schema, channel: channelName(o.schema), logger: o.logger,
		sql:          newStatements(pgx.Identifier{o.schema}.Sanitize()),
		retainEvents: o.retainEvents, retainBytes: o.retainBytes,
	}
	cfg.AfterConnect = db.prepare
	cfg.PingTimeout = pingTimeout

	// The tables must exist before a pooled connection prepares statements on
	// them: migrate over a connection of its own.
	if err := migrate(ctx, cfg.ConnConfig, o.schema); err != nil {
		return nil, err
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: %w", err)
	}
	db.pool = pool
	db.connConfig = cfg.ConnConfig
	db.store = &Store{db: db}
	db.events = &EventLog{db: db, local: newLocalGroups()}
	return db, nil
}

// prepare prepares the store's statements on a new pooled connection.
func (db *DB) prepare(ctx context.Context, conn *pgx.Conn) error {
	for _, s := range db.sql.pooled() {
		if _, err := conn.Prepare(ctx, s.name, s.sql); err != nil {
			return fmt.Errorf("postgres: prepare %s: %w", s.name, err)
		}
	}
	return nil
}

var _ store.Backend = (*DB)(nil)

// Name returns "postgres", the name of the backend in the startup log.
func (db *DB) Name() string { return "postgres" }

// Schema returns the name of the schema that holds the tables.
func (db *DB) Schema() string { return db.schema }

// Store returns the [store.Store] kept in the database, a [*Store]. Every call
// returns the same Store. Its Close only marks it closed; [DB.Close] closes
// the pool.
func (db *DB) Store() store.Store { return db.store }

// Ping checks that the database answers, for a readiness probe.
func (db *DB) Ping(ctx context.Context) error {
	if err := db.pool.Ping(ctx); err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	if n := db.followersDown.Load(); n > 0 {
		return fmt.Errorf("postgres: %d event log follower(s) not reading the log (connecting, or reconnecting after a failure)", n)
	}
	return nil
}

// Close closes the store and then the pool, waiting for the connections in
// use to be released. Calling it again does nothing.
func (db *DB) Close() {
	db.closeOnce.Do(func() {
		db.store.closed.Store(true)
		db.bg.Wait()
		db.pool.Close()
	})
}

// pingTimeout bounds each health check of an idle connection.
const pingTimeout = 5 * time.Second
