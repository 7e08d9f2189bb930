package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestContractsBudget: the agent's own code reaches the wire models through
// the root package, a2ui and studio; `contracts.` stays for the registration
// blocks that have no other name (at most 20 times in the non-test files).
func TestContractsBudget(t *testing.T) {
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	perFile, total := map[string]int{}, 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		if n := strings.Count(string(b), "contracts."); n > 0 {
			perFile[f], total = n, total+n
		}
	}
	assert.LessOrEqual(t, total, 20, "contracts. in the example's non-test files: %v", perFile)
}
