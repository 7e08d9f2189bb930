package supervaizer_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/errcode"
	svtest "github.com/supervaize/supervaizer-go/testing"
)

// TestErrorUnmarshalJSON: a client reads the JSON-RPC error object into the
// *Error the server sent, with its code, message and data.
func TestErrorUnmarshalJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		raw      string
		wantCode errcode.Code
		wantMsg  string
		wantData any
		wantErr  string
	}{
		{name: "with data", raw: `{"code":-32030,"message":"Unauthorized","data":{"code":"workspace_authorization_expired"}}`,
			wantCode: errcode.Unauthorized, wantMsg: "Unauthorized", wantData: map[string]any{"code": "workspace_authorization_expired"}},
		{name: "without data", raw: `{"code":-32601,"message":"Method not found: x"}`, wantCode: -32601, wantMsg: "Method not found: x"},
		{name: "null data", raw: `{"code":-32602,"message":"m","data":null}`, wantCode: errcode.InvalidParams, wantMsg: "m"},
		{name: "numbers as float64", raw: `{"code":-32602,"message":"m","data":{"errors":[{"n":1}]}}`, wantCode: errcode.InvalidParams,
			wantMsg: "m", wantData: map[string]any{"errors": []any{map[string]any{"n": float64(1)}}}},
		{name: "no message", raw: `{"code":-32603}`, wantCode: errcode.InternalError},
		{name: "extra members", raw: `{"code":-32603,"message":"m","x":1}`, wantCode: errcode.InternalError, wantMsg: "m"},
		{name: "no code", raw: `{"message":"m"}`, wantErr: "without a code"},
		{name: "null code", raw: `{"code":null,"message":"m"}`, wantErr: "without a code"},
		{name: "fractional code", raw: `{"code":1.5,"message":"m"}`, wantErr: "decode a JSON-RPC error object"},
		{name: "string code", raw: `{"code":"-32603","message":"m"}`, wantErr: "decode a JSON-RPC error object"},
		{name: "not an object", raw: `[1]`, wantErr: "decode a JSON-RPC error object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var e supervaizer.Error
			err := json.Unmarshal([]byte(tt.raw), &e)
			if tt.wantErr != "" {
				assert.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantCode, supervaizer.CodeOf(&e))
			assert.Equal(t, tt.wantMsg, e.Error())
			assert.Equal(t, tt.wantData, e.Data())
			assert.NoError(t, e.Unwrap(), "the logged cause never travels")
			var as *supervaizer.Error
			require.ErrorAs(t, errors.Join(errors.New("call"), &e), &as, "errors.As finds a wrapped *Error")
			assert.Equal(t, tt.wantCode, supervaizer.CodeOf(as))
		})
	}
}

// TestErrorUnmarshalJSONNull: null leaves the error as it was, as
// encoding/json does for other values.
func TestErrorUnmarshalJSONNull(t *testing.T) {
	t.Parallel()
	var resp struct {
		Error *supervaizer.Error `json:"error"`
	}
	require.NoError(t, json.Unmarshal([]byte(`{"error":null}`), &resp))
	assert.Nil(t, resp.Error)
	require.NoError(t, json.Unmarshal([]byte(`{"error":{"code":-32030,"message":"m"}}`), &resp))
	require.NotNil(t, resp.Error)
	require.NoError(t, resp.Error.UnmarshalJSON([]byte(" null ")))
	assert.Equal(t, errcode.Unauthorized, supervaizer.CodeOf(resp.Error))
	assert.Equal(t, "m", resp.Error.Error())
}

// TestCodeOfAWrappedError: CodeOf reports the code the dispatcher sends for
// an error a handler returns (spec item 61). A handler that wraps the -32030
// a client read (fmt.Errorf("x: %w", err)) is answered -32603, and CodeOf of
// what it returned says -32603; before the fix CodeOf found the wrapped
// *Error in the chain and reported -32030.
func TestCodeOfAWrappedError(t *testing.T) {
	t.Parallel()
	var received supervaizer.Error
	require.NoError(t, json.Unmarshal([]byte(`{"code":-32030,"message":"Unauthorized","data":{"code":"workspace_authorization_expired"}}`), &received))

	ts := svtest.NewTestServer(t, []*supervaizer.Agent{newTestAgent(t, "writer")})
	var returned error
	ts.Server.HandleAction("job.start", func(context.Context, *supervaizer.ActionRequest) (*supervaizer.ActionResult, error) {
		returned = fmt.Errorf("call the other agent: %w", &received)
		return nil, returned
	})
	_, err := ts.Invoke(t.Context(), ts.Request("job.start", map[string]any{}))
	require.Error(t, err)
	assert.Equal(t, errcode.InternalError, supervaizer.CodeOf(err), "the code on the wire")
	assert.Equal(t, supervaizer.CodeOf(err), supervaizer.CodeOf(returned), "CodeOf of what the handler returned is the code sent")

	tests := []struct {
		name string
		err  error
		want errcode.Code
	}{
		{"nil", nil, 0},
		{"received as is", &received, errcode.Unauthorized},
		{"wrapped", fmt.Errorf("x: %w", &received), errcode.InternalError},
		{"joined", errors.Join(errors.New("a"), &received), errcode.InternalError},
		{"typed nil", (*supervaizer.Error)(nil), errcode.InternalError},
		{"plain", errors.New("database down"), errcode.InternalError},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, supervaizer.CodeOf(tt.err), tt.name)
	}
}
