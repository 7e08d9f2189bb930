package jsonrpc

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/errcode"
)

func TestAppendResult(t *testing.T) {
	tests := []struct {
		name   string
		id     json.RawMessage
		result json.RawMessage
		want   string
	}{
		{"string id", json.RawMessage(`"rpc-1"`), json.RawMessage(`{}`), `{"jsonrpc":"2.0","id":"rpc-1","result":{}}`},
		{"integer id", json.RawMessage(`7`), json.RawMessage(`{"a":[1]}`), `{"jsonrpc":"2.0","id":7,"result":{"a":[1]}}`},
		{"nil id omitted", nil, json.RawMessage(`{}`), `{"jsonrpc":"2.0","result":{}}`},
		{"null id omitted", json.RawMessage(`null`), json.RawMessage(`{}`), `{"jsonrpc":"2.0","result":{}}`},
		{"nil result is null", json.RawMessage(`1`), nil, `{"jsonrpc":"2.0","id":1,"result":null}`},
		{"result copied verbatim", json.RawMessage(`1`), json.RawMessage(`{"h":"<&>"}`), `{"jsonrpc":"2.0","id":1,"result":{"h":"<&>"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := AppendResult(nil, tt.id, tt.result)
			assert.Equal(t, tt.want, string(got))
			assert.True(t, json.Valid(got))
		})
	}
}

func TestAppendResultAppends(t *testing.T) {
	dst := []byte("prefix:")
	got := AppendResult(dst, json.RawMessage(`1`), json.RawMessage(`{}`))
	assert.Equal(t, `prefix:{"jsonrpc":"2.0","id":1,"result":{}}`, string(got))
}

type failingMarshaler struct{}

func (failingMarshaler) MarshalJSON() ([]byte, error) { return nil, errors.New("boom") }

func TestAppendError(t *testing.T) {
	var nilMap map[string]any
	tests := []struct {
		name string
		id   json.RawMessage
		e    *Error
		want string
	}{
		{"parse error without id", nil, &Error{Code: errcode.ParseError, Message: "Parse error"},
			`{"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error"}}`},
		{"null id omitted", json.RawMessage(`null`), &Error{Code: errcode.InternalError, Message: "x"},
			`{"jsonrpc":"2.0","error":{"code":-32603,"message":"x"}}`},
		{"id and data", json.RawMessage(`"rpc-1"`), &Error{Code: -32010, Message: "Action handler not registered: job.x",
			Data: map[string]any{"agent_slug": "a", "action": "job.x"}},
			`{"jsonrpc":"2.0","id":"rpc-1","error":{"code":-32010,"message":"Action handler not registered: job.x","data":{"action":"job.x","agent_slug":"a"}}}`},
		{"html not escaped", json.RawMessage(`1`), &Error{Code: errcode.MethodNotFound, Message: "Method not found: <a&b>",
			Data: map[string]any{"h": "<&>"}},
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found: <a&b>","data":{"h":"<&>"}}}`},
		{"typed nil data omitted", json.RawMessage(`1`), &Error{Code: errcode.InternalError, Message: "m", Data: nilMap},
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"m"}}`},
		{"raw data", json.RawMessage(`1`), &Error{Code: errcode.InvalidParams, Message: "m", Data: json.RawMessage(` {"a" : 1} `)},
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"m","data":{"a":1}}}`},
		{"details", json.RawMessage(`1`), newInvalidRequest([]Detail{{Loc: []any{}, Msg: "m", Type: "t"}, {Loc: []any{"params", 0}, Msg: "n", Type: "u", Path: "/params/0"}}),
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"Invalid Request","data":{"errors":[{"loc":[],"msg":"m","type":"t"},{"loc":["params",0],"msg":"n","type":"u","path":"/params/0"}]}}}`},
		{"message escaping", nil, &Error{Code: errcode.InternalError, Message: "q\"b\\n\n\r\t\b\f\x01\x1f\u2028\u2029é\xff<>&"},
			`{"jsonrpc":"2.0","error":{"code":-32603,"message":"q\"b\\n\n\r\t\b\f\u0001\u001f\u2028\u2029é\ufffd<>&"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := AppendError(nil, tt.id, tt.e)
			require.NoError(t, err)
			assert.Equal(t, tt.want, string(got))
			assert.True(t, json.Valid(got))
		})
	}
}

func TestAppendErrorFailures(t *testing.T) {
	tests := []struct {
		name string
		e    *Error
	}{
		{"nil error", nil},
		{"code zero", &Error{Message: "m"}},
		{"unmarshalable data", &Error{Code: errcode.InternalError, Message: "m", Data: map[string]any{"f": func() {}}}},
		{"failing marshaler", &Error{Code: errcode.InternalError, Message: "m", Data: failingMarshaler{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dst := []byte("keep")
			got, err := AppendError(dst, json.RawMessage(`1`), tt.e)
			require.Error(t, err)
			assert.Equal(t, "keep", string(got))
		})
	}
}

func TestAppendErrorAppends(t *testing.T) {
	dst := make([]byte, 0, 256)
	dst = append(dst, "prefix:"...)
	got, err := AppendError(dst, nil, &Error{Code: errcode.InternalError, Message: "m", Data: map[string]any{"k": "v"}})
	require.NoError(t, err)
	assert.Equal(t, `prefix:{"jsonrpc":"2.0","error":{"code":-32603,"message":"m","data":{"k":"v"}}}`, string(got))
}

func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	inputs := []string{"", "plain", "<script>&</script>", "tab\there", "nul\x00", "del\x7f", "é日本",
		"\xff\xfe", "a\xc3", "\u2028\u2029", "\"\\/", "\U0001F600", "\xed\xa0\x80"}
	for _, s := range inputs {
		got := appendString(nil, s)
		require.True(t, json.Valid(got), "%q", s)
		var back string
		require.NoError(t, json.Unmarshal(got, &back))
		want, err := json.Marshal(s) // json.Marshal escapes HTML, so compare decoded values
		require.NoError(t, err)
		var wantBack string
		require.NoError(t, json.Unmarshal(want, &wantBack))
		assert.Equal(t, wantBack, back, "%q", s)
	}
}
