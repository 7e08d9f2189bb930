package a2atask_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/supervaize/supervaizer-go/a2atask"
)

func TestTaskStateTerminalAndFinal(t *testing.T) {
	tests := []struct {
		state           a2atask.TaskState
		terminal, final bool
	}{
		{a2atask.StateSubmitted, false, false},
		{a2atask.StateWorking, false, false},
		{a2atask.StateInputRequired, false, true},
		{a2atask.StateCompleted, true, true},
		{a2atask.StateFailed, true, true},
		{a2atask.StateCanceled, true, true},
		{a2atask.StateUnknown, false, false},
	}
	for _, tt := range tests {
		t.Run(string(tt.state), func(t *testing.T) {
			assert.Equal(t, tt.terminal, tt.state.Terminal())
			assert.Equal(t, tt.final, tt.state.Final())
		})
	}
}

func TestTaskStateProtoName(t *testing.T) {
	tests := []struct {
		state a2atask.TaskState
		want  string
	}{
		{a2atask.StateSubmitted, "TASK_STATE_SUBMITTED"},
		{a2atask.StateWorking, "TASK_STATE_WORKING"},
		{a2atask.StateInputRequired, "TASK_STATE_INPUT_REQUIRED"},
		{a2atask.StateCompleted, "TASK_STATE_COMPLETED"},
		{a2atask.StateFailed, "TASK_STATE_FAILED"},
		{a2atask.StateCanceled, "TASK_STATE_CANCELED"},
		{a2atask.StateUnknown, "TASK_STATE_UNSPECIFIED"},
		{"rejected", "TASK_STATE_UNSPECIFIED"},
		{"", "TASK_STATE_UNSPECIFIED"},
	}
	for _, tt := range tests {
		t.Run(string(tt.state), func(t *testing.T) {
			assert.Equal(t, tt.want, tt.state.ProtoName())
		})
	}
}
