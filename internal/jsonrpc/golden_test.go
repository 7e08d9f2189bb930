package jsonrpc

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/errcode"
	"github.com/supervaize/supervaizer-go/testing/golden"
)

// respond decodes body and encodes the response a controller would send,
// with the fixed result {} for a valid request.
func respond(t testing.TB, body []byte) []byte {
	t.Helper()
	req, rpcErr := DecodeRequest(body)
	if rpcErr == nil {
		return AppendResult(nil, req.ID, json.RawMessage(`{}`))
	}
	out, err := AppendError(nil, req.ID, rpcErr)
	require.NoError(t, err)
	return out
}

// goldenCases returns the case names of testdata/<case>.request.json.
func goldenCases(t testing.TB) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "*.request.json"))
	require.NoError(t, err)
	require.NotEmpty(t, paths)
	names := make([]string, 0, len(paths))
	for _, p := range paths {
		names = append(names, strings.TrimSuffix(filepath.Base(p), ".request.json"))
	}
	return names
}

func TestGolden(t *testing.T) {
	for _, name := range goldenCases(t) {
		t.Run(name, func(t *testing.T) {
			body, err := os.ReadFile(filepath.Join("testdata", name+".request.json"))
			require.NoError(t, err)
			got := respond(t, body)
			require.True(t, json.Valid(got), "response is not valid JSON: %s", got)

			// Byte for byte: the key order and spacing the encoder writes are
			// part of the wire.
			golden.Bytes(t, filepath.Join("testdata", name+".response.json"), append(got, '\n'))

			// The file name states the expected outcome, so a wrong -update shows up here.
			var resp struct {
				Error *struct{ Code int } `json:"error"`
			}
			require.NoError(t, json.Unmarshal(got, &resp))
			switch {
			case strings.HasPrefix(name, "ok_"):
				assert.Nil(t, resp.Error)
			case strings.HasPrefix(name, "parse_error_"):
				require.NotNil(t, resp.Error)
				assert.Equal(t, int(errcode.ParseError), resp.Error.Code)
			case strings.HasPrefix(name, "invalid_"):
				require.NotNil(t, resp.Error)
				assert.Equal(t, int(errcode.InvalidRequest), resp.Error.Code)
			default:
				t.Fatalf("case %q must start with ok_, parse_error_ or invalid_", name)
			}
		})
	}
}

// TestGoldenKeyOrder checks one response byte for byte, since JSONEq
// ignores the key order that the encoder guarantees.
func TestGoldenKeyOrder(t *testing.T) {
	body, err := os.ReadFile(filepath.Join("testdata", "invalid_params_null.request.json"))
	require.NoError(t, err)
	want, err := os.ReadFile(filepath.Join("testdata", "invalid_params_null.response.json"))
	require.NoError(t, err)
	assert.Equal(t, string(want), string(respond(t, body))+"\n")
	assert.Equal(t,
		`{"jsonrpc":"2.0","id":7,"error":{"code":-32600,"message":"Invalid Request","data":{"errors":[{"loc":["params"],"msg":"must be an object","type":"type_error","path":"/params"}]}}}`+"\n",
		string(want))
}
