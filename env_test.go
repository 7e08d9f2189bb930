package supervaizer_test

import (
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	supervaizer "github.com/supervaize/supervaizer-go"
)

// readEnvNames returns the variables ReadEnv asks its getenv for, sorted, and
// checks that each fills a field of Env of its own.
func readEnvNames(t *testing.T) []string {
	t.Helper()
	var names []string
	env := supervaizer.ReadEnv(func(k string) string {
		names = append(names, k)
		return "value of " + k
	})
	v := reflect.ValueOf(env)
	var values []string
	for i := range v.NumField() {
		values = append(values, v.Field(i).String())
	}
	slices.Sort(names)
	want := make([]string, len(names))
	for i, n := range names {
		want[i] = "value of " + n
	}
	slices.Sort(values)
	assert.Equal(t, want, values, "each variable read fills one field of Env, and every field is read")
	return slices.Compact(names)
}

// TestReadEnvMatchesDeployingDoc: the rows of docs/deploying.md's table read
// by ReadEnv are exactly the variables ReadEnv reads.
func TestReadEnvMatchesDeployingDoc(t *testing.T) {
	read := readEnvNames(t)
	require.NotEmpty(t, read)
	doc, err := os.ReadFile("docs/deploying.md")
	require.NoError(t, err)
	row := regexp.MustCompile("^\\| ((?:`[A-Z0-9_]+`(?:, )?)+) \\| ([^|]*) \\|")
	name := regexp.MustCompile("`([A-Z0-9_]+)`")
	var documented []string
	for _, line := range strings.Split(string(doc), "\n") {
		m := row.FindStringSubmatch(line)
		if m == nil || !strings.Contains(m[2], "`ReadEnv`") {
			continue
		}
		for _, n := range name.FindAllStringSubmatch(m[1], -1) {
			documented = append(documented, n[1])
		}
	}
	slices.Sort(documented)
	assert.Equal(t, read, documented, "docs/deploying.md's rows read by `ReadEnv` and the variables ReadEnv reads differ")
}

// TestReadEnvDefaultsToTheProcess: ReadEnv(nil) reads the process
// environment, values as they are.
func TestReadEnvDefaultsToTheProcess(t *testing.T) {
	t.Setenv("SUPERVAIZER_DATA_DIR", " /srv/agent ")
	t.Setenv("SUPERVAIZE_API_URL", "https://studio.example")
	env := supervaizer.ReadEnv(nil)
	assert.Equal(t, " /srv/agent ", env.DataDir)
	assert.Equal(t, "https://studio.example", env.StudioAPIURL)
	assert.Equal(t, supervaizer.Env{}, supervaizer.ReadEnv(func(string) string { return "" }))
}
