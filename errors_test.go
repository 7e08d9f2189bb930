package supervaizer_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go"
)

// TestErrorUnmarshalJSON: a client reads the JSON-RPC error object into the
// *Error the server sent, with its code, message and data.
func TestErrorUnmarshalJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		raw      string
		wantCode supervaizer.Code
		wantMsg  string
		wantData any
		wantErr  string
	}{
		{name: "with data", raw: `{"code":-32030,"message":"Unauthorized","data":{"code":"workspace_authorization_expired"}}`,
			wantCode: supervaizer.CodeUnauthorized, wantMsg: "Unauthorized", wantData: map[string]any{"code": "workspace_authorization_expired"}},
		{name: "without data", raw: `{"code":-32601,"message":"Method not found: x"}`, wantCode: -32601, wantMsg: "Method not found: x"},
		{name: "null data", raw: `{"code":-32602,"message":"m","data":null}`, wantCode: supervaizer.CodeInvalidParams, wantMsg: "m"},
		{name: "numbers as float64", raw: `{"code":-32602,"message":"m","data":{"errors":[{"n":1}]}}`, wantCode: supervaizer.CodeInvalidParams,
			wantMsg: "m", wantData: map[string]any{"errors": []any{map[string]any{"n": float64(1)}}}},
		{name: "no message", raw: `{"code":-32603}`, wantCode: supervaizer.CodeInternalError},
		{name: "extra members", raw: `{"code":-32603,"message":"m","x":1}`, wantCode: supervaizer.CodeInternalError, wantMsg: "m"},
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
			require.ErrorAs(t, errors.Join(errors.New("call"), &e), &as)
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
	assert.Equal(t, supervaizer.CodeUnauthorized, supervaizer.CodeOf(resp.Error))
	assert.Equal(t, "m", resp.Error.Error())
}
