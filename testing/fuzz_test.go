package testing

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	supervaizer "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/errcode"
)

func TestDecodeResponse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		body       string
		wantResult string
		wantCode   errcode.Code // for a JSON-RPC error
		wantData   any
		wantErr    string // for a response that is not usable
	}{
		{name: "result", body: `{"jsonrpc":"2.0","id":1,"result":{"status":"ok","effects":[]}}`, wantResult: `{"status":"ok","effects":[]}`},
		{name: "error with data", body: `{"jsonrpc":"2.0","id":1,"error":{"code":-32030,"message":"m","data":{"code":"workspace_authorization_missing"}}}`,
			wantCode: errcode.Unauthorized, wantData: map[string]any{"code": "workspace_authorization_missing"}},
		{name: "error without data", body: `{"error":{"code":-32601,"message":"Method not found: x"}}`, wantCode: errcode.MethodNotFound},
		{name: "error with null data", body: `{"error":{"code":-32601,"message":"m","data":null}}`, wantCode: errcode.MethodNotFound},
		{name: "error without code", body: `{"error":{"message":"m"}}`, wantErr: "without a code"},
		{name: "neither", body: `{"jsonrpc":"2.0","id":1}`, wantErr: "neither"},
		{name: "null result", body: `{"result":null}`, wantErr: "neither"},
		{name: "not JSON", body: `{`, wantErr: "decode the JSON-RPC response"},
		{name: "bad data", body: `{"error":{"code":1,"data":{"a":}}}`, wantErr: "decode the JSON-RPC response"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res, err := decodeResponse([]byte(tt.body))
			switch {
			case tt.wantResult != "":
				require.NoError(t, err)
				assert.JSONEq(t, tt.wantResult, string(res))
			case tt.wantCode != 0:
				var e *supervaizer.Error
				require.ErrorAs(t, err, &e)
				assert.Equal(t, tt.wantCode, supervaizer.CodeOf(err))
				assert.Equal(t, tt.wantData, e.Data())
			default:
				assert.ErrorContains(t, err, tt.wantErr)
				assert.False(t, errors.As(err, new(*supervaizer.Error)))
			}
		})
	}
}

func TestNewEffects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		r1, r2 string
		want   []string
		err    bool
	}{
		{"same", `{"effects":[{"type":"a"},{"type":"b"}]}`, `{"effects":[{"type":"b"},{"type":"a"}]}`, nil, false},
		{"key order and space", `{"effects":[{"type":"a","n":1}]}`, `{"effects":[ { "n":1, "type":"a" } ]}`, nil, false},
		{"appended", `{"effects":[{"type":"a"}]}`, `{"effects":[{"type":"a"},{"type":"b"}]}`, []string{`{"type":"b"}`}, false},
		{"repeated", `{"effects":[{"type":"a"}]}`, `{"effects":[{"type":"a"},{"type":"a"}]}`, []string{`{"type":"a"}`}, false},
		{"fewer", `{"effects":[{"type":"a"},{"type":"b"}]}`, `{"effects":[{"type":"a"}]}`, nil, false},
		{"number literals", `{"effects":[{"n":1.0}]}`, `{"effects":[{"n":1}]}`, []string{`{"n":1}`}, false},
		{"no effects", `{}`, `{"effects":[]}`, nil, false},
		{"effects not an array", `{"effects":{}}`, `{}`, nil, true},
		{"not JSON", `{}`, `[`, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := newEffects([]byte(tt.r1), []byte(tt.r2))
			if tt.err {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestJSONEqual(t *testing.T) {
	t.Parallel()
	tests := []struct {
		a, b string
		want bool
	}{
		{`{"a":1,"b":[1,2]}`, `{ "b":[1,2], "a":1 }`, true},
		{`{"a":1}`, `{"a":2}`, false},
		{`{"a":[1,2]}`, `{"a":[2,1]}`, false},
		{`{"a":1}`, `{"a":1} {}`, false},
		{`{`, `{`, false},
		{`null`, `null`, true},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, jsonEqual([]byte(tt.a), []byte(tt.b)), "%s vs %s", tt.a, tt.b)
	}
}

func FuzzDecodeResponse(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"result":{"status":"ok","effects":[]}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32030,"message":"m","data":{"code":"x"}}}`))
	f.Add([]byte(`{"error":{"code":1.5}}`))
	f.Add([]byte(`{"result":null,"error":null}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, body []byte) {
		res, err := decodeResponse(body) // must never panic
		if err == nil {
			assert.True(t, json.Valid(res), "result %q", res)
			assert.NotEqual(t, "null", string(res))
		} else {
			assert.Nil(t, res)
		}
	})
}

func FuzzNewEffects(f *testing.F) {
	f.Add([]byte(`{"effects":[{"type":"a"}]}`), []byte(`{"effects":[{"type":"a"},{"type":"b"}]}`))
	f.Add([]byte(`{"effects":[{"n":1e3}]}`), []byte(`{"effects":[{"n":1000}]}`))
	f.Add([]byte(`{}`), []byte(`{"effects":null}`))
	f.Fuzz(func(t *testing.T, r1, r2 []byte) {
		added, err := newEffects(r1, r2) // must never panic
		if err != nil {
			return
		}
		self, err := newEffects(r2, r2)
		require.NoError(t, err)
		assert.Empty(t, self, "a result adds no effect to itself")
		e2, err := canonicalEffects(r2)
		require.NoError(t, err)
		assert.LessOrEqual(t, len(added), len(e2))
	})
}
