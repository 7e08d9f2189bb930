package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const changelogHead = "# Changelog\n\n## [Unreleased]\n\n### Added\n\n- `./p.C`, a new function.\n"

// TestUnrecorded: a change is recorded by its symbol or a prefix of it ending
// before a dot, quoted under Breaking in the Unreleased section only.
func TestUnrecorded(t *testing.T) {
	changes := []string{"R: removed", "./p.A: changed from func() to func(int)", "./p.T.M: removed", "(*Server).Start: removed"}
	tests := []struct {
		name      string
		changelog string
		missing   []string
	}{
		{name: "nothing recorded", changelog: changelogHead, missing: changes},
		{name: "each symbol", changelog: changelogHead + "\n### Breaking\n\n- `R`, `./p.A` and `./p.T.M` go; `Server.Start` too.\n", missing: nil},
		{name: "a type and a package", changelog: changelogHead + "\n### Breaking\n\n- `./p` is re-cut; `Server` and `R` change.\n", missing: nil},
		{name: "not a dot boundary", changelog: changelogHead + "\n### Breaking\n\n- `./p.T.` `Serv` `R`\n",
			missing: []string{"./p.A: changed from func() to func(int)", "./p.T.M: removed", "(*Server).Start: removed"}},
		{name: "another section", changelog: changelogHead + "\n## [0.2.0] - 2026-12-01\n\n### Breaking\n\n- `R`\n", missing: changes},
		{name: "another heading", changelog: changelogHead + "\n### Breaking\n\n- `R`\n\n### Fixed\n\n- `./p.A`\n",
			missing: []string{"./p.A: changed from func() to func(int)", "./p.T.M: removed", "(*Server).Start: removed"}},
		{name: "not quoted", changelog: changelogHead + "\n### Breaking\n\n- R ./p.A ./p.T.M Server.Start\n", missing: changes},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.missing, unrecorded(changes, breakingSymbols([]byte(tt.changelog))))
		})
	}
}

// TestApicheckOnAModule records the baseline of a small module with the real
// apidiff, then changes its API: a compatible change passes, an incompatible
// one fails until CHANGELOG.md records it.
func TestApicheckOnAModule(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
	}
	write("go.mod", "module example.com/m\n\ngo 1.26\n")
	write("m.go", "package m\n\n// R is kept.\nfunc R() {}\n")
	write("p/p.go", "package p\n\n// A takes nothing.\nfunc A() {}\n")
	write("internal/q/q.go", "package q\n\n// Q is internal.\nfunc Q() {}\n")
	write("CHANGELOG.md", changelogHead)
	t.Chdir(dir)
	baseline := filepath.Join("api", "m.apidiff")
	require.NoError(t, os.MkdirAll("api", 0o755))
	require.NoError(t, recordBaseline(apidiffVersion, baseline))

	var out strings.Builder
	require.NoError(t, run(apidiffVersion, baseline, "CHANGELOG.md", &out), "unchanged")

	write("p/p.go", "package p\n\n// A takes nothing.\nfunc A() {}\n\n// C is new.\nfunc C() {}\n")
	write("internal/q/q.go", "package q\n\n// Q2 replaces Q.\nfunc Q2() {}\n")
	out.Reset()
	require.NoError(t, run(apidiffVersion, baseline, "CHANGELOG.md", &out), "an addition and an internal change are compatible")

	write("p/p.go", "package p\n\n// A takes an int.\nfunc A(int) {}\n\n// C is new.\nfunc C() {}\n")
	out.Reset()
	err := run(apidiffVersion, baseline, "CHANGELOG.md", &out)
	require.Error(t, err, "an incompatible change the changelog does not record")
	assert.Contains(t, out.String(), "./p.A: changed from func() to func(int)")
	assert.Contains(t, out.String(), "1 incompatible changes since api/m.apidiff, 1 not recorded")

	write("CHANGELOG.md", changelogHead+"\n### Breaking\n\n- `./p.A` takes the number of items.\n")
	out.Reset()
	require.NoError(t, run(apidiffVersion, baseline, "CHANGELOG.md", &out), "recorded")
	assert.Contains(t, out.String(), "1 incompatible changes since api/m.apidiff, 0 not recorded")
}
