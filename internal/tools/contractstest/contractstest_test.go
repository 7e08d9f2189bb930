package contractstest

import (
	"errors"
	"fmt"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/supervaize/supervaizer-go/contracts"
)

// recorder records a failure instead of failing the test; FailNow ends the
// goroutine, as testing.T's does.
type recorder struct {
	testing.TB
	failed bool
}

func (r *recorder) Helper()               {}
func (r *recorder) Errorf(string, ...any) { r.failed = true }
func (r *recorder) FailNow()              { r.failed = true; runtime.Goexit() }

// fails reports whether RequireProblem fails for err and the wanted problem.
func fails(t *testing.T, err error, path, rule, msg string) bool {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		RequireProblem(r, err, path, rule, msg)
	}()
	<-done
	return r.failed
}

func TestRequireProblem(t *testing.T) {
	ve := &contracts.ValidationError{Model: contracts.ModelActionResult, Problems: []contracts.Problem{
		{Path: "/status", Type: "enum", Msg: "must be ok or error"},
		{Path: "/effects/0", Type: "required", Msg: ""},
	}}
	wrapped := fmt.Errorf("result: %w", ve)
	tests := []struct {
		name            string
		err             error
		path, rule, msg string
		wantFail        bool
	}{
		{"found", ve, "/status", "enum", "", false},
		{"found in the chain, message fragment", wrapped, "/status", "enum", "ok or error", false},
		{"other message", ve, "/status", "enum", "nope", true},
		{"other rule", ve, "/status", "const", "", true},
		{"other path", ve, "/effects", "enum", "", true},
		{"empty message", ve, "/effects/0", "required", "", true},
		{"not a ValidationError", errors.New("x"), "/status", "enum", "", true},
		{"no error", nil, "/status", "enum", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.wantFail, fails(t, tt.err, tt.path, tt.rule, tt.msg))
		})
	}
}
