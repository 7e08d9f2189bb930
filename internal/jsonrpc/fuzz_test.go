package jsonrpc

import (
	"encoding/json"
	"math/big"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/errcode"
)

// integerID matches the integer literals DecodeRequest may return as an ID.
var integerID = regexp.MustCompile(`^(0|-?[1-9][0-9]*)$`)

// requireValidID fails unless id is nil, a JSON string literal or a
// normalized integer literal.
func requireValidID(t *testing.T, id json.RawMessage) {
	t.Helper()
	if id == nil {
		return
	}
	if id[0] == '"' {
		var s string
		require.NoError(t, json.Unmarshal(id, &s), "id %s", id)
		return
	}
	require.Regexp(t, integerID, string(id))
}

// appendRequest encodes req as a request envelope.
func appendRequest(dst []byte, req *Request) []byte {
	dst = append(dst, `{"jsonrpc":"2.0"`...)
	dst = appendID(dst, req.ID)
	dst = append(dst, `,"method":`...)
	dst = appendString(dst, req.Method)
	dst = append(dst, `,"params":`...)
	dst = append(dst, req.Params...)
	return append(dst, '}')
}

func FuzzDecodeRequest(f *testing.F) {
	paths, err := filepath.Glob(filepath.Join("testdata", "*.request.json"))
	require.NoError(f, err)
	for _, p := range paths {
		body, err := os.ReadFile(p)
		require.NoError(f, err)
		f.Add(body)
	}
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"supervaizer/action.invoke","params":{}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"x","Method":"supervaizer/action.invoke"}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":9007199254740993,"method":"m"}`))
	f.Add([]byte(`{"id":-0.0e-0,"method":"\u00e9\ud800","params":{"a":"\"}"},"\u0069d":1}`))
	f.Add([]byte(`{"id":1500e-2,"method":"m","k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k1":0}`))
	f.Add(benchBody)

	f.Fuzz(func(t *testing.T, data []byte) {
		req, rpcErr := DecodeRequest(data)
		require.NotNil(t, req)
		wellFormed := utf8.Valid(data) && json.Valid(data)

		if rpcErr != nil {
			if wellFormed {
				require.Equal(t, errcode.InvalidRequest, rpcErr.Code)
				requireValidID(t, req.ID)
			} else {
				require.Equal(t, errcode.ParseError, rpcErr.Code)
				require.Nil(t, req.ID)
			}
			out, err := AppendError(nil, req.ID, rpcErr)
			require.NoError(t, err)
			require.True(t, json.Valid(out), "invalid response %s", out)
			return
		}

		require.True(t, wellFormed)
		requireValidID(t, req.ID)
		require.True(t, json.Valid(req.Params))
		require.Equal(t, byte('{'), req.Params[0])

		// encoding/json must read the same request from the same bytes.
		var m map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(data, &m))
		var method string
		require.NoError(t, json.Unmarshal(m[keyMethod], &method))
		assert.Equal(t, method, req.Method)
		if p, ok := m[keyParams]; ok {
			assert.Equal(t, string(p), string(req.Params))
		} else {
			assert.Equal(t, "{}", string(req.Params))
		}
		switch rawID, ok := m[keyID]; {
		case !ok || string(rawID) == "null":
			assert.Nil(t, req.ID)
		case rawID[0] == '"':
			assert.Equal(t, string(rawID), string(req.ID))
		default:
			want, ok := new(big.Rat).SetString(string(rawID))
			require.True(t, ok, "id %s", rawID)
			got, ok := new(big.Rat).SetString(string(req.ID))
			require.True(t, ok)
			assert.Zero(t, want.Cmp(got), "id %s normalized to %s", rawID, req.ID)
		}

		// Re-encoding the accepted request gives the same request.
		again, rpcErr := DecodeRequest(appendRequest(nil, req))
		require.Nil(t, rpcErr)
		assert.Equal(t, req.ID, again.ID)
		assert.Equal(t, req.Method, again.Method)
		assert.Equal(t, req.Params, again.Params)

		require.True(t, json.Valid(AppendResult(nil, req.ID, json.RawMessage(`{}`))))
	})
}
