package supervaizer

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
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

// TestTypedHandlerGetsTheBodysTape: through ServeHTTP, a typed handler's
// input is the slice of the body parsed once, and the call's context holds
// that tape; a request whose body is not plain (an escaped key) takes the
// reference path and its input is checked on its own.
func TestTypedHandlerGetsTheBodysTape(t *testing.T) {
	type input struct {
		TopicID string `json:"topic_id"`
	}
	tests := []struct {
		name       string
		extraKey   string
		wantOnTape bool
	}{
		{"plain body", `"x_extra"`, true},
		{"escaped key in the body", `"x_\u0065xtra"`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := stAgent(t, "Tape Agent")
			srv, err := NewServer([]*Agent{a}, WithEnv(func(string) string { return "" }), WithLocalMode(true))
			require.NoError(t, err)
			var onTape, called atomic.Bool
			HandleActionFor(srv, "job.start", func(ctx context.Context, req *ActionRequest, in input) (*ActionResult, error) {
				_, _, ok := inputOnTape(ctx, req.Input)
				onTape.Store(ok)
				called.Store(in.TopicID == "t-1")
				return OK(), nil
			})
			body := `{"jsonrpc":"2.0","id":1,"method":"` + MethodActionInvoke + `","params":{"action_request":{` +
				`"request_id":"r-1","actor":{"user_id":"u-1"},"workspace":{"id":"w-1"},"mission_id":"m-1",` +
				`"agent_slug":"tape-agent","surface":"job.start","action":"job.start","input":{"topic_id":"t-1"}}},` +
				tt.extraKey + `:1}`
			r := httptest.NewRequest(http.MethodPost, "/a2a", strings.NewReader(body))
			r.Host = "localhost" // local mode answers only loopback hosts
			r.Header.Set(HeaderAPIKey, LocalModeAPIKey)
			w := httptest.NewRecorder()
			srv.ServeHTTP(w, r)
			require.Equal(t, http.StatusOK, w.Code)
			require.Contains(t, w.Body.String(), `"result":{"status":"ok"`, w.Body.String())
			assert.True(t, called.Load(), "the typed input was decoded")
			assert.Equal(t, tt.wantOnTape, onTape.Load())
		})
	}
}
