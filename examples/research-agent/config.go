package main

import (
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

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
)

// defaultAddr is where the agent listens when SUPERVAIZER_ADDR is not set:
// loopback only, so a development run is never reachable from the network.
const defaultAddr = "127.0.0.1:8080"

// config is everything newApp needs. It comes from the environment only.
type config struct {
	// Addr is the TCP address to listen on (SUPERVAIZER_ADDR).
	Addr string
	// DBPath is the embedded store file: SUPERVAIZER_DATA_DIR/supervaizer.db,
	// else the folder store.DefaultPath uses in the OS temp dir.
	DBPath string
	// DatabaseURL is SUPERVAIZER_DATABASE_URL: when set, the state (store
	// and event stream) is kept in that PostgreSQL database, shared by every
	// instance, and DBPath is not used.
	DatabaseURL string
	// DatabaseSchema is SUPERVAIZER_DATABASE_SCHEMA, the PostgreSQL schema
	// of the tables ("" for the default, supervaizer): deployments sharing
	// a database each use their own.
	DatabaseSchema string
	// LocalMode reports SUPERVAIZER_LOCAL_MODE; the SDK reads it too.
	LocalMode bool
	// Getenv is handed to the SDK (supervaizer.WithEnv) for every other
	// setting, so a test can run the agent with an environment of its own.
	Getenv func(string) string
	// Logger receives the agent's and the SDK's logs; nil discards them.
	Logger *slog.Logger
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
	if dir := strings.TrimSpace(getenv(envDataDir)); dir != "" {
		cfg.DBPath = filepath.Join(dir, store.DefaultFileName)
	} else {
		cfg.DBPath = defaultDBPath()
	}
	cfg.DatabaseURL = strings.TrimSpace(getenv(envDatabase))
	cfg.DatabaseSchema = strings.TrimSpace(getenv(envSchema))
	switch v := strings.ToLower(strings.TrimSpace(getenv(envLocalMode))); v {
	case "1", "true", "yes", "on":
		cfg.LocalMode = true
	case "", "0", "false", "no", "off":
	default:
		return config{}, fmt.Errorf("%s=%q: use true or false", envLocalMode, v)
	}
	return cfg, nil
}

// defaultDBPath is the database file when SUPERVAIZER_DATA_DIR is not set: the
// one store.DefaultPath gives in that case, supervaizer-<uid>/supervaizer.db
// under os.TempDir. store.DefaultPath itself is not called because it reads
// SUPERVAIZER_DATA_DIR from the process environment, not from getenv.
func defaultDBPath() string {
	return filepath.Join(os.TempDir(), "supervaizer-"+userTag(), store.DefaultFileName)
}
