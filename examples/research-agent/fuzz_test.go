package main

import (
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/store"
)

func TestLoadConfig(t *testing.T) {
	// The default data folder is the agent's own (store.ControllerPath) when
	// the environment passed in has no SUPERVAIZER_DATA_DIR, whatever the
	// process environment says: loadConfig reads the environment passed in
	// only. TMPDIR is the test's, so no store of an earlier run is found.
	t.Setenv("TMPDIR", t.TempDir())
	t.Setenv(envDataDir, "")
	legacy := store.DefaultPath("") // the shared default of earlier versions
	def, _ := store.ControllerPath("", agentSlug)
	require.Equal(t, filepath.Join(filepath.Dir(legacy), agentSlug, store.DefaultFileName), def)
	t.Setenv(envDataDir, filepath.Join(t.TempDir(), "process-env"))
	tests := []struct {
		name    string
		env     map[string]string
		want    config
		wantErr string
	}{
		{"defaults", nil, config{Addr: defaultAddr, DBPath: def}, ""},
		{"everything", map[string]string{envAddr: " 0.0.0.0:9000 ", envDataDir: "/var/lib/ra", envLocalMode: "TRUE"},
			config{Addr: "0.0.0.0:9000", DBPath: filepath.Join("/var/lib/ra", store.DefaultFileName), LocalMode: true}, ""},
		{"port 0", map[string]string{envAddr: "127.0.0.1:0"}, config{Addr: "127.0.0.1:0", DBPath: def}, ""},
		{"local mode off", map[string]string{envLocalMode: "off"}, config{Addr: defaultAddr, DBPath: def}, ""},
		{"no port", map[string]string{envAddr: "localhost"}, config{}, "SUPERVAIZER_ADDR"},
		{"bad port", map[string]string{envAddr: "localhost:http"}, config{}, "SUPERVAIZER_ADDR"},
		{"port too large", map[string]string{envAddr: ":65536"}, config{}, "SUPERVAIZER_ADDR"},
		{"bad local mode", map[string]string{envLocalMode: "maybe"}, config{}, "SUPERVAIZER_LOCAL_MODE"},
		{"instance and lease", map[string]string{envInstance: " eu-1 ", envLease: "45s"},
			config{Addr: defaultAddr, DBPath: def, InstanceID: "eu-1", Lease: 45 * time.Second}, ""},
		{"memory store", map[string]string{envStore: "Memory"}, config{Addr: defaultAddr, DBPath: def, Memory: true}, ""},
		{"file store", map[string]string{envStore: "file"}, config{Addr: defaultAddr, DBPath: def}, ""},
		{"bad lease", map[string]string{envLease: "10"}, config{}, "SUPERVAIZER_IDEMPOTENCY_LEASE"},
		{"negative lease", map[string]string{envLease: "-1s"}, config{}, "SUPERVAIZER_IDEMPOTENCY_LEASE"},
		{"sse queue", map[string]string{envSSEQueue: " 1024 "}, config{Addr: defaultAddr, DBPath: def, SSEQueue: 1024}, ""},
		{"bad sse queue", map[string]string{envSSEQueue: "0"}, config{}, "SUPERVAIZER_SSE_QUEUE_SIZE"},
		{"send delay", map[string]string{envSendDelay: " 30s "}, config{Addr: defaultAddr, DBPath: def, SendDelay: 30 * time.Second}, ""},
		{"no send delay", map[string]string{envSendDelay: "0"}, config{Addr: defaultAddr, DBPath: def}, ""},
		{"bad send delay", map[string]string{envSendDelay: "30"}, config{}, "RESEARCH_AGENT_SEND_DELAY"},
		{"negative send delay", map[string]string{envSendDelay: "-1s"}, config{}, "RESEARCH_AGENT_SEND_DELAY"},
		{"bad store", map[string]string{envStore: "bolt"}, config{}, "SUPERVAIZER_STORE"},
		{"delegation", map[string]string{envDelegateURL: " https://sources.example.com ", envDelegateAPIKey: " k1 "},
			config{Addr: defaultAddr, DBPath: def, DelegateURL: "https://sources.example.com", DelegateAPIKey: "k1"}, ""},
		{"delegation on loopback", map[string]string{envDelegateURL: "http://127.0.0.1:9001", envDelegateLoopback: "true"},
			config{Addr: defaultAddr, DBPath: def, DelegateURL: "http://127.0.0.1:9001", DelegateLoopback: true}, ""},
		{"bad delegate url", map[string]string{envDelegateURL: "sources.example.com"}, config{}, "RESEARCH_AGENT_DELEGATE_URL"},
		{"bad delegate loopback", map[string]string{envDelegateLoopback: "maybe"}, config{}, "RESEARCH_AGENT_DELEGATE_ALLOW_LOOPBACK"},
		{"memory and database", map[string]string{envStore: "memory", envDatabase: "postgres://db"}, config{}, "exclusive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := loadConfig(func(k string) string { return tt.env[k] })
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			cfg.Getenv = nil
			assert.Equal(t, tt.want, cfg)
		})
	}

	// Upgraded from a version whose default every agent shared: the store
	// there stays in use, and the agent says so at startup.
	old, err := store.Open(legacy)
	require.NoError(t, err)
	require.NoError(t, old.Close())
	cfg, err := loadConfig(func(string) string { return "" })
	require.NoError(t, err)
	assert.Equal(t, legacy, cfg.DBPath)
	assert.True(t, cfg.SharedDefault)
	var logs strings.Builder
	cfg.Logger, cfg.LocalMode = slog.New(slog.NewTextHandler(&logs, nil)), true
	a, err := newApp(cfg)
	require.NoError(t, err)
	require.NoError(t, a.Close())
	assert.Contains(t, logs.String(), "using the store of the shared default folder")
	assert.Contains(t, logs.String(), "set SUPERVAIZER_DATA_DIR to a folder of this agent's own")
}

// FuzzLoadConfig: any environment gives a usable configuration or an error,
// never a panic.
func FuzzLoadConfig(f *testing.F) {
	f.Add("127.0.0.1:8080", "/tmp/ra", "true")
	f.Add("", "", "")
	f.Add("[::1]:0", " ", "0")
	f.Add(":99999", "\x00", "yes")
	f.Fuzz(func(t *testing.T, addr, dir, local string) {
		env := map[string]string{envAddr: addr, envDataDir: dir, envLocalMode: local}
		cfg, err := loadConfig(func(k string) string { return env[k] })
		if err != nil {
			return
		}
		_, _, serr := net.SplitHostPort(cfg.Addr)
		assert.NoError(t, serr)
		assert.Equal(t, store.DefaultFileName, filepath.Base(cfg.DBPath))
	})
}
