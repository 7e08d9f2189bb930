package supervaizer_test

import (
	"os"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	supervaizer "github.com/supervaize/supervaizer-go"
)

// TestVersionIsTheLastRelease: Version, sent to Studio as controller_version,
// is the newest release section of CHANGELOG.md (the first "## [x.y.z]"
// heading after Unreleased), so a release cannot ship with the previous one.
func TestVersionIsTheLastRelease(t *testing.T) {
	changelog, err := os.ReadFile("CHANGELOG.md")
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^## \[(\d+\.\d+\.\d+)\]`).FindSubmatch(changelog)
	require.NotNil(t, m, "CHANGELOG.md has a release section")
	require.Equal(t, string(m[1]), supervaizer.Version, "supervaizer.Version and CHANGELOG.md's last release")
}
