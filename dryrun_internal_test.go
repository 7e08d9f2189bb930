package supervaizer

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/internal/wire"
)

// TestIsDryRunTapeAndBytes: a result read from its tape (a fresh result's
// validation left one) and from its bytes (a replayed result) is judged
// alike: a top-level dry_run that is not null marks a dry run, a dry_run
// key anywhere else does not.
func TestIsDryRunTapeAndBytes(t *testing.T) {
	t.Parallel()
	req := &ActionRequest{Action: "job.try"}
	tests := []struct {
		name string
		raw  string
		want bool
	}{
		{"no dry_run", `{"status":"ok","effects":[]}`, false},
		{"dry_run outcome", `{"status":"ok","dry_run":{"would_start":false}}`, true},
		{"dry_run null", `{"status":"ok","dry_run":null}`, false},
		{"dry_run in a nested value", `{"status":"ok","job_state":{"display":{"text":"\"dry_run\""},"dry_run":{}}}`, false},
		{"dry_run in a string", `{"status":"ok","message":"\"dry_run\":true"}`, false},
		{"escaped key", `{"status":"ok","dry\u005frun":{}}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw := []byte(tt.raw)
			assert.Equal(t, tt.want, isDryRun(nil, req, raw, nil), "from the bytes")
			tape := wire.Get()
			defer wire.Put(tape)
			require.True(t, tape.Parse(raw))
			assert.Equal(t, tt.want, isDryRun(nil, req, raw, tape), "from the tape")
		})
	}
}
