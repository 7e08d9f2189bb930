package answer_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/answer"
)

var parseSeeds = []string{
	valid,
	"Here:\n```json\n" + valid + "\n```\nDone.",
	`{"status": "success", "findings": ["old"]} {"status": "fail", "findings": ["new"]}`,
	`{"status": "success", "findings": ["a"]} {"status": "success", "findings": ["cut`,
	`{"status": "maybe", "findings": [], "sources": [{"url": " "}], "x": 1}`,
	`{"status": "success", "summary": null, "findings": ["a"], "score": 0.5, "depth": "deep"}`,
	`Use {braces} {"status": "success", "findings": ["{\"}"]} {see}`,
	`{"status": "success", "findings": ["a"], "status": "fail"}`,
	`{"status":"success","findings":["\u00e9"],"Status":"fail"}`,
	"",
}

// FuzzParse: Parse never panics and either returns a valid answer (status
// fail included), whose encoding parses back to the same bytes, bare or in
// prose and a fence, or a *ContractError whose every violation names a rule.
func FuzzParse(f *testing.F) {
	for _, s := range parseSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		got, err := answer.Parse[research](text)
		var ce *answer.ContractError
		switch {
		case err == nil || errors.Is(err, answer.ErrFailed):
			b, merr := json.Marshal(got)
			require.NoError(t, merr)
			for _, again := range []string{string(b), "Answer:\n```json\n" + string(b) + "\n```\nThat is all {really}."} {
				v, err2 := answer.Parse[research](again)
				assert.Equal(t, err == nil, err2 == nil, "%q", again)
				b2, merr := json.Marshal(v)
				require.NoError(t, merr)
				assert.Equal(t, string(b), string(b2))
			}
		case errors.As(err, &ce):
			require.NotEmpty(t, ce.Violations)
			for _, v := range ce.Violations {
				assert.NotEmpty(t, v.Rule)
				assert.NotEmpty(t, v.Msg)
			}
		default:
			t.Fatalf("an error of another kind: %v", err)
		}
	})
}
