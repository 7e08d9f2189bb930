package supervaizer

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/internal/wire"
)

// TestInputOnTape: a typed handler checks its input on the tape of the
// request body only when the input is the bytes parsed there; any other
// input (a copy, another request's) is parsed on its own.
func TestInputOnTape(t *testing.T) {
	tp := wire.Get()
	defer wire.Put(tp)
	body := []byte(`{"input":{"topic_id":"t-1"}}`)
	require.True(t, tp.Parse(body))
	node, ok := tp.Member(0, []byte("input"))
	require.True(t, ok)
	input := tp.Raw(node)

	call := withCall(context.Background(), nil, nil)
	call.tape, call.inputNode = tp, node
	tests := []struct {
		name  string
		ctx   context.Context
		input []byte
		want  bool
	}{
		{"the parsed input", call, input, true},
		{"a copy of it", call, append([]byte(nil), input...), false},
		{"a prefix of it", call, input[:len(input)-1], false},
		{"no tape", withCall(context.Background(), nil, nil), input, false},
		{"not a call", context.Background(), input, false},
		{"empty input", call, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gotTape, gotNode, ok := inputOnTape(tt.ctx, tt.input)
			assert.Equal(t, tt.want, ok)
			if tt.want {
				assert.Same(t, tp, gotTape)
				assert.Equal(t, node, gotNode)
			}
		})
	}
}
