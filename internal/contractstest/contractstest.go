// Package contractstest holds the assertions the module's tests share about
// contracts values.
package contractstest

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/contracts"
)

// RequireProblem checks that err is (or wraps) a *contracts.ValidationError
// holding a problem at the JSON Pointer path, of the rule, whose message is not
// empty and contains msg ("" accepts any message); it stops the test
// otherwise, showing the problems err holds.
func RequireProblem(t testing.TB, err error, path, rule, msg string) {
	t.Helper()
	var ve *contracts.ValidationError
	require.ErrorAs(t, err, &ve)
	for _, p := range ve.Problems {
		if p.Path == path && p.Type == rule && p.Msg != "" && strings.Contains(p.Msg, msg) {
			return
		}
	}
	require.FailNowf(t, "missing validation problem", "no problem at %s (%s, message containing %q) in:\n%v", path, rule, msg, err)
}
