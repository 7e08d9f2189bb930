package main

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cli runs the command in-process and returns its output and exit status.
func cli(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(args, &out, &errOut)
	return out.String(), errOut.String(), code
}

// repoRoot returns the SDK's folder (this file is in cmd/supervaizer).
func repoRoot(t *testing.T) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	require.True(t, ok)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

func TestUsage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		args   []string
		code   int
		output string
	}{
		{"no command", nil, 2, "Usage:"},
		{"help", []string{"help"}, 0, "supervaizer new [flags] NAME"},
		{"unknown command", []string{"deploy"}, 2, `unknown command "deploy"`},
		{"flag after the name", []string{"new", filepath.Join(t.TempDir(), "a"), "-force"}, 2, "flags come before the arguments"},
		{"check without URL", []string{"check"}, 2, "1 argument(s) expected, got 0"},
		{"check with a bad URL", []string{"check", "ftp://x"}, 2, "not an http(s) URL"},
		{"unknown flag", []string{"keygen", "-nope"}, 2, "flag provided but not defined: -nope"},
		{"command help", []string{"token", "-h"}, 0, "-agent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out, errOut, code := cli(t, tt.args...)
			assert.Equal(t, tt.code, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
			assert.Contains(t, out+errOut, tt.output)
		})
	}
}

// TestNewVersionsFollowTheSDK: a new agent's go.mod starts from the SDK's
// go directive and testify version.
func TestNewVersionsFollowTheSDK(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "go.mod"))
	require.NoError(t, err)
	assert.Contains(t, string(b), "\ngo "+goVersion+"\n")
	assert.Contains(t, string(b), "\tgithub.com/stretchr/testify "+testifyVersion+"\n")
}

func TestNewRefusesNonEmptyFoldersAndBadNames(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "busy-agent")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o644))
	_, errOut, code := cli(t, "new", "-replace", repoRoot(t), "-no-tidy", dir)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "is not empty")
	_, err := os.Stat(filepath.Join(dir, "main.go"))
	assert.ErrorIs(t, err, os.ErrNotExist, "nothing written")

	_, errOut, code = cli(t, "new", "-replace", repoRoot(t), "-no-tidy", "-force", dir)
	assert.Equal(t, 0, code, errOut)
	for _, f := range []string{"main.go", "main_test.go", "Makefile", "README.md", ".gitignore", "go.mod", "notes.txt"} {
		assert.FileExists(t, filepath.Join(dir, f))
	}
	gi, err := os.ReadFile(filepath.Join(dir, ".gitignore"))
	require.NoError(t, err)
	assert.Contains(t, strings.Split(string(gi), "\n"), "*.pem")
	mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	require.NoError(t, err)
	assert.Contains(t, string(mod), "module busy-agent\n")
	assert.Contains(t, string(mod), "replace "+sdkModule+" => "+repoRoot(t))

	for _, name := range []string{"My-Agent", "1agent", "agent--x", "agent.x"} {
		_, errOut, code := cli(t, "new", "-replace", repoRoot(t), "-no-tidy", filepath.Join(t.TempDir(), name))
		assert.Equal(t, 2, code, name)
		assert.Contains(t, errOut, "lower-case letters and digits", name)
	}
	_, errOut, code = cli(t, "new", "-replace", t.TempDir(), "-no-tidy", filepath.Join(t.TempDir(), "x"))
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "not the SDK's folder")
	// Built from a source tree (this test binary): no published version to require.
	_, errOut, code = cli(t, "new", "-no-tidy", filepath.Join(t.TempDir(), "x"))
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "pass -replace DIR")
}

func TestDisplayName(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"my-agent": "My Agent", "a": "A", "web_crawler2": "Web Crawler2"} {
		assert.Equal(t, want, displayName(in))
	}
}

func TestSDKRequirement(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "v1.2.3", sdkRequirement("v1.2.3", true), "the flag wins")
	// A test binary's main module is the SDK in (devel): no version of its own.
	assert.Equal(t, "v0.0.0-00010101000000-000000000000", sdkRequirement("", true))
	assert.Empty(t, sdkRequirement("", false))
}
