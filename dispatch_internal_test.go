package supervaizer

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/errcode"
	"github.com/supervaize/supervaizer-go/internal/encode"
	"github.com/supervaize/supervaizer-go/internal/tools/studiotest"
	"github.com/supervaize/supervaizer-go/internal/validate"
)

// echoParams is the params of the test method: {"text": …}.
type echoParams struct{ text string }

// decodeEcho reads params.text: -32602 when it is not a string.
func decodeEcho(_ *validate.Validator, c *Call) (echoParams, *Error) {
	n, ok := c.t.Member(c.rpc.ParamsNode, []byte("text"))
	if c.rpc.ParamsNode < 0 || !ok {
		return echoParams{}, newError(errcode.InvalidParams, "text is required", nil)
	}
	return echoParams{text: string(c.t.Str(n))}, nil
}

// echo answers {"echo": text}.
func echo(_ *Server, _ *Call, p echoParams, dst []byte) ([]byte, *Error) {
	dst = append(dst, `{"echo":`...)
	dst = encode.AppendString(dst, p.text, false)
	return append(dst, '}'), nil
}

// countingInterceptor counts the unary calls it sees, by method.
type countingInterceptor struct{ methods []string }

func (ci *countingInterceptor) WrapUnary(next UnaryFunc) UnaryFunc {
	return func(ctx context.Context, c *Call) {
		next(ctx, c)
		ci.methods = append(ci.methods, c.Method)
	}
}
func (ci *countingInterceptor) WrapStream(next StreamFunc) StreamFunc    { return next }
func (ci *countingInterceptor) WrapHandler(next HandlerFunc) HandlerFunc { return next }

// TestMethodTableOneEntry: a new JSON-RPC method is one entry of the table
// (and its decoder and handler): served on POST /a2a behind the same
// transport key, seen by the interceptors, its params errors answered as
// any method's.
func TestMethodTableOneEntry(t *testing.T) {
	ci := &countingInterceptor{}
	srv, err := NewServer([]*Agent{stAgent(t, studiotest.AgentName)}, WithEnv(func(string) string { return "" }),
		WithLocalMode(true), WithLogger(slog.New(slog.DiscardHandler)), WithInterceptors(ci))
	require.NoError(t, err)
	srv.buildMethods(append(methodTable(),
		unaryMethod("test/echo", "test", ScopeWrite, MethodActionInvoke, decodeEcho, echo), // the new method: one entry
	), []Interceptor{ci})

	for _, tt := range []struct {
		name, body, key string
		status          int
		want            string
	}{
		{"served", `{"jsonrpc":"2.0","id":1,"method":"test/echo","params":{"text":"hi"}}`, LocalModeAPIKey, http.StatusOK,
			`{"jsonrpc":"2.0","id":1,"result":{"echo":"hi"}}`},
		{"params refused", `{"jsonrpc":"2.0","id":2,"method":"test/echo","params":{}}`, LocalModeAPIKey, http.StatusOK,
			`{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"text is required"}}`},
		{"no key", `{"jsonrpc":"2.0","id":3,"method":"test/echo","params":{"text":"hi"}}`, "", http.StatusUnauthorized,
			`{"detail":"Invalid or missing API key"}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/a2a", strings.NewReader(tt.body))
			r.Header.Set("Content-Type", "application/json")
			if tt.key != "" {
				r.Header.Set(HeaderAPIKey, tt.key)
			}
			w := httptest.NewRecorder()
			srv.ServeHTTP(w, r)
			assert.Equal(t, tt.status, w.Code)
			assert.JSONEq(t, tt.want, w.Body.String())
		})
	}
	assert.Equal(t, []string{"test/echo", "test/echo", ""}, ci.methods)
}
