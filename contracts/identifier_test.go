package contracts_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/contracts"
)

// TestRequestIdentifiersAreBounded (spec item 74, issue 35 row 11): the
// identifiers a client chooses are at most 256 bytes of UTF-8 (bytes, not
// characters) without control characters, U+2028 or U+2029; a request
// breaking the rule is a validation problem (rule "identifier") at the
// field's path, never quoting the value. It fails on the code before the
// rule: the Validator accepted a 100 KB request_id, NUL and U+2028.
func TestRequestIdentifiersAreBounded(t *testing.T) {
	ids := []struct {
		name  string
		id    string
		valid bool
	}{
		{"256 bytes", strings.Repeat("a", 256), true},
		{"257 bytes", strings.Repeat("a", 257), false},
		{"100 KB", strings.Repeat("a", 100<<10), false},
		{"128 two-byte characters", strings.Repeat("é", 128), true},
		{"129 two-byte characters, 258 bytes", strings.Repeat("é", 129), false},
		{"printable Unicode", "job-\u00e9\u4e2d\U0001F600", true},
		{"NUL", "job\x00", false},
		{"newline", "job\n1", false},
		{"DEL", "job\x7f", false},
		{"C1 control", "job\u0085", false},
		{"line separator", "job\u20281", false},
		{"paragraph separator", "job\u2029", false},
	}
	fields := map[contracts.Model][]string{
		contracts.ModelActionRequest:  {"request_id", "mission_id", "job_id", "idempotency_key"},
		contracts.ModelSurfaceRequest: {"request_id", "mission_id", "job_id"},
	}
	v := contracts.DefaultValidator()
	for m, keys := range fields {
		for _, key := range keys {
			for _, tc := range ids {
				t.Run(string(m)+"/"+key+"/"+tc.name, func(t *testing.T) {
					req := map[string]any{
						"request_id": "req-1", "actor": map[string]any{"user_id": "u"},
						"workspace": map[string]any{"id": "ws", "slug": "acme"}, "mission_id": "mis-1",
						"agent_slug": "a", "surface": "job.start",
					}
					if m == contracts.ModelActionRequest {
						req["action"] = "job.start"
					}
					req[key] = tc.id
					raw, err := contracts.Marshal(req)
					require.NoError(t, err)
					err = v.Validate(m, raw)
					if tc.valid {
						assert.NoError(t, err)
						assert.NoError(t, contracts.CheckIdentifier(tc.id))
						return
					}
					assert.Error(t, contracts.CheckIdentifier(tc.id))
					var ve *contracts.ValidationError
					require.ErrorAs(t, err, &ve)
					require.Len(t, ve.Problems, 1, "%v", ve)
					p := ve.Problems[0]
					assert.Equal(t, "/"+key, p.Path)
					assert.Equal(t, []any{key}, p.Loc)
					assert.Equal(t, "identifier", p.Type)
					assert.Contains(t, p.Msg, key)
					assert.NotContains(t, p.Msg, tc.id[:min(len(tc.id), 8)], "the message never quotes the value")
				})
			}
		}
	}
}

func ExampleCheckIdentifier() {
	for _, id := range []string{"req-7f3c", strings.Repeat("x", 300), "job\u2028"} {
		fmt.Println(contracts.CheckIdentifier(id))
	}
	// Output:
	// <nil>
	// longer than 256 bytes
	// holds a control character, U+2028 or U+2029
}
