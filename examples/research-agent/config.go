package main

import (
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/store"
)

// Environment variables the example reads itself. Every other setting
// (SUPERVAIZER_API_KEY, SUPERVAIZER_SERVER_ID, SUPERVAIZER_PUBLIC_URL, the
// SUPERVAIZER_WORKSPACE_AUTH_* variables and the Studio account variables
// SUPERVAIZE_API_URL, SUPERVAIZE_API_KEY, SUPERVAIZE_WORKSPACE_ID) is read by
// the SDK, through the same getenv.
const (
	envAddr      = "SUPERVAIZER_ADDR"
	envDataDir   = store.EnvDataDir // SUPERVAIZER_DATA_DIR
	envLocalMode = "SUPERVAIZER_LOCAL_MODE"
	envDatabase  = supervaizer.EnvDatabaseURL // SUPERVAIZER_DATABASE_URL
	envSchema    = "SUPERVAIZER_DATABASE_SCHEMA"
	envInstance  = "SUPERVAIZER_INSTANCE_ID"
	envLease     = "SUPERVAIZER_IDEMPOTENCY_LEASE"
	envStore     = "SUPERVAIZER_STORE"
	envSSEQueue  = "SUPERVAIZER_SSE_QUEUE_SIZE"
	// envSendDelay is the agent's own business setting, hence its prefix.
	envSendDelay = "RESEARCH_AGENT_SEND_DELAY"
	// The remote agent the gathering of sources is delegated to (delegate.go).
	envDelegateURL      = "RESEARCH_AGENT_DELEGATE_URL"
	envDelegateAPIKey   = "RESEARCH_AGENT_DELEGATE_API_KEY"
	envDelegateLoopback = "RESEARCH_AGENT_DELEGATE_ALLOW_LOOPBACK"
)

// Values of SUPERVAIZER_STORE, where the state lives when
// SUPERVAIZER_DATABASE_URL is not set.
const (
	storeFile   = "file"   // the bbolt file in SUPERVAIZER_DATA_DIR (default)
	storeMemory = "memory" // in memory: lost at exit (development, measurements)
)

// defaultAddr is where the agent listens when SUPERVAIZER_ADDR is not set:
// loopback only, so a development run is never reachable from the network.
const defaultAddr = "127.0.0.1:8080"

// config is everything newApp needs. It comes from the environment only.
type config struct {
	// Addr is the TCP address to listen on (SUPERVAIZER_ADDR).
	Addr string
	// DBPath is the embedded store file: SUPERVAIZER_DATA_DIR/supervaizer.db,
	// else this agent's own folder in the OS temp dir (store.ControllerPath).
	DBPath string
	// SharedDefault is true when DBPath is the shared default folder of
	// earlier versions, kept in use because it holds a store (logged).
	SharedDefault bool
	// DatabaseURL is SUPERVAIZER_DATABASE_URL: when set, the state (store
	// and event stream) is kept in that PostgreSQL database, shared by every
	// instance, and DBPath is not used.
	DatabaseURL string
	// DatabaseSchema is SUPERVAIZER_DATABASE_SCHEMA, the PostgreSQL schema
	// of the tables ("" for the default, supervaizer): deployments sharing
	// a database each use their own.
	DatabaseSchema string
	// Memory keeps the state in memory (SUPERVAIZER_STORE=memory): nothing
	// survives the process; for development and measurements only.
	Memory bool
	// InstanceID is SUPERVAIZER_INSTANCE_ID, this instance's stable name
	// among those sharing the database (supervaizer.WithInstanceID): after
	// a crash, the restarted instance takes over the job starts it left in
	// progress at once instead of after the lease.
	InstanceID string
	// Lease is SUPERVAIZER_IDEMPOTENCY_LEASE (a Go duration; 0: the SDK's
	// default, 10 min): how long another instance waits before taking over
	// a job start left in progress by a dead one
	// (supervaizer.WithIdempotencyLease).
	Lease time.Duration
	// SSEQueue is SUPERVAIZER_SSE_QUEUE_SIZE: the events each SSE subscriber
	// may have queued before the oldest is dropped (0: the SDK's default,
	// 100; see supervaizer.WithSSEQueueSize). Raise it when bursts of calls
	// outrun a subscriber's connection.
	SSEQueue int
	// SendDelay is RESEARCH_AGENT_SEND_DELAY: how long an approved brief
	// waits before it is sent (0, the default: at once). Until then job.stop
	// recalls it, as "undo send" does in a mail client. The delay counts from
	// the approval, across restarts.
	SendDelay time.Duration
	// DelegateURL is RESEARCH_AGENT_DELEGATE_URL, the base URL of another
	// A2A agent: when set, each new job hands its gathering of sources to
	// it (one sub-task per job, delegate.go). Empty: no delegation.
	DelegateURL string
	// DelegateAPIKey is RESEARCH_AGENT_DELEGATE_API_KEY, sent to the remote
	// as its X-API-Key.
	DelegateAPIKey string
	// DelegateLoopback is RESEARCH_AGENT_DELEGATE_ALLOW_LOOPBACK: plain HTTP
	// to a loopback remote is allowed (a2a/client.AllowLoopback), for
	// development and tests. Otherwise the remote must be HTTPS.
	DelegateLoopback bool
	// LocalMode reports SUPERVAIZER_LOCAL_MODE; the SDK reads it too.
	LocalMode bool
	// Getenv is handed to the SDK (supervaizer.WithEnv) for every other
	// setting, so a test can run the agent with an environment of its own.
	Getenv func(string) string
	// Logger receives the agent's and the SDK's logs; nil discards them.
	Logger *slog.Logger
	// Observer installs the OpenTelemetry observer (telemetry.go); nil
	// when SUPERVAIZER_METRICS_ADDR and OTEL_EXPORTER_OTLP_ENDPOINT are unset.
	Observer supervaizer.Option

	// wrapStore, when set, wraps the local store before anything uses it:
	// the crash tests inject a kill at a chosen write.
	wrapStore func(store.Store) store.Store
}

// loadConfig reads the configuration through getenv (os.Getenv in main).
func loadConfig(getenv func(string) string) (config, error) {
	cfg := config{Addr: strings.TrimSpace(getenv(envAddr)), Getenv: getenv}
	if cfg.Addr == "" {
		cfg.Addr = defaultAddr
	}
	if _, port, err := net.SplitHostPort(cfg.Addr); err != nil {
		return config{}, fmt.Errorf("%s=%q is not a host:port address: %w", envAddr, cfg.Addr, err)
	} else if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return config{}, fmt.Errorf("%s=%q: the port must be a number between 0 and 65535", envAddr, cfg.Addr)
	}
	cfg.DBPath, cfg.SharedDefault = store.ControllerPath(getenv(envDataDir), agentSlug)
	cfg.DatabaseURL = strings.TrimSpace(getenv(envDatabase))
	cfg.DatabaseSchema = strings.TrimSpace(getenv(envSchema))
	cfg.InstanceID = strings.TrimSpace(getenv(envInstance))
	if v := strings.TrimSpace(getenv(envLease)); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return config{}, fmt.Errorf("%s=%q: want a positive Go duration such as 30s or 10m", envLease, v)
		}
		cfg.Lease = d
	}
	if v := strings.TrimSpace(getenv(envSSEQueue)); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return config{}, fmt.Errorf("%s=%q: want a positive number of events such as 1024", envSSEQueue, v)
		}
		cfg.SSEQueue = n
	}
	if v := strings.TrimSpace(getenv(envSendDelay)); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return config{}, fmt.Errorf("%s=%q: want a Go duration such as 0s, 30s or 5m", envSendDelay, v)
		}
		cfg.SendDelay = d
	}
	cfg.DelegateURL = strings.TrimSpace(getenv(envDelegateURL))
	cfg.DelegateAPIKey = strings.TrimSpace(getenv(envDelegateAPIKey))
	if cfg.DelegateURL != "" {
		if u, err := url.Parse(cfg.DelegateURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return config{}, fmt.Errorf("%s=%q: want the remote agent's base URL, such as https://agent.example.com", envDelegateURL, cfg.DelegateURL)
		}
	}
	loopback, err := parseBool(envDelegateLoopback, getenv(envDelegateLoopback))
	if err != nil {
		return config{}, err
	}
	cfg.DelegateLoopback = loopback
	switch v := strings.ToLower(strings.TrimSpace(getenv(envStore))); v {
	case "", storeFile:
	case storeMemory:
		if cfg.DatabaseURL != "" {
			return config{}, fmt.Errorf("%s=%s and %s are exclusive", envStore, v, envDatabase)
		}
		cfg.Memory = true
	default:
		return config{}, fmt.Errorf("%s=%q: use %s or %s (PostgreSQL: set %s)", envStore, v, storeFile, storeMemory, envDatabase)
	}
	if cfg.LocalMode, err = parseBool(envLocalMode, getenv(envLocalMode)); err != nil {
		return config{}, err
	}
	return cfg, nil
}

// parseBool reads the boolean variable name of value v (unset: false).
func parseBool(name, v string) (bool, error) {
	switch v = strings.ToLower(strings.TrimSpace(v)); v {
	case "1", "true", "yes", "on":
		return true, nil
	case "", "0", "false", "no", "off":
		return false, nil
	default:
		return false, fmt.Errorf("%s=%q: use true or false", name, v)
	}
}
