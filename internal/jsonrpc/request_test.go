package jsonrpc

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/errcode"
)

func TestDecodeRequestValid(t *testing.T) {
	tests := []struct {
		name       string
		body       string
		wantID     string // "" means nil
		wantMethod string
		wantParams string
	}{
		{"string id", `{"jsonrpc":"2.0","id":"rpc-1","method":"m","params":{"a":1}}`, `"rpc-1"`, "m", `{"a":1}`},
		{"string id kept as received", `{"jsonrpc":"2.0","id":"r\u002d1 <&>","method":"m"}`, `"r\u002d1 <&>"`, "m", `{}`},
		{"empty string id", `{"id":"","method":"m"}`, `""`, "m", `{}`},
		{"integer id", `{"jsonrpc":"2.0","id":7,"method":"m"}`, `7`, "m", `{}`},
		{"negative integer id", `{"id":-42,"method":"m"}`, `-42`, "m", `{}`},
		{"zero id", `{"id":0,"method":"m"}`, `0`, "m", `{}`},
		{"negative zero id", `{"id":-0,"method":"m"}`, `0`, "m", `{}`},
		{"big integer id", `{"id":9007199254740993,"method":"m"}`, `9007199254740993`, "m", `{}`},
		{"huge integer id", `{"id":-123456789012345678901234567890123456789,"method":"m"}`, `-123456789012345678901234567890123456789`, "m", `{}`},
		{"integral float id", `{"id":7.0,"method":"m"}`, `7`, "m", `{}`},
		{"integral float id trailing zeros", `{"id":-3.000,"method":"m"}`, `-3`, "m", `{}`},
		{"exponent id", `{"id":1e2,"method":"m"}`, `100`, "m", `{}`},
		{"upper exponent id", `{"id":1E+2,"method":"m"}`, `100`, "m", `{}`},
		{"fraction with exponent id", `{"id":1.5e1,"method":"m"}`, `15`, "m", `{}`},
		{"negative exponent integral id", `{"id":1500e-2,"method":"m"}`, `15`, "m", `{}`},
		{"big integral float id", `{"id":9007199254740993.0,"method":"m"}`, `9007199254740993`, "m", `{}`},
		{"negative zero float id", `{"id":-0.0,"method":"m"}`, `0`, "m", `{}`},
		{"zero with huge exponent id", `{"id":0e999999,"method":"m"}`, `0`, "m", `{}`},
		{"exponent at digit bound", `{"id":1e1023,"method":"m"}`, "1" + strings.Repeat("0", 1023), "m", `{}`},
		{"null id", `{"jsonrpc":"2.0","id":null,"method":"m"}`, "", "m", `{}`},
		{"absent id", `{"jsonrpc":"2.0","method":"m"}`, "", "m", `{}`},
		{"absent jsonrpc", `{"method":"m","params":{}}`, "", "m", `{}`},
		{"escaped jsonrpc", `{"jsonrpc":"2\u002e0","method":"m"}`, "", "m", `{}`},
		{"empty method", `{"method":""}`, "", "", `{}`},
		{"escaped method", `{"method":"supervaizer\/action.invoke\u00e9"}`, "", "supervaizer/action.invokeé", `{}`},
		{"escaped key", `{"\u006dethod":"m"}`, "", "m", `{}`},
		{"params exactly as received", "{\"method\":\"m\",\"params\": {\n \"b\" : [1, 2.50],\"a\":null}\n}", "", "m", "{\n \"b\" : [1, 2.50],\"a\":null}"},
		{"nested params with braces in strings", `{"method":"m","params":{"s":"}{\"]","o":{"x":[{}]}},"id":1}`, `1`, "m", `{"s":"}{\"]","o":{"x":[{}]}}`},
		{"backslashes before quotes", `{"method":"a\\\\","params":{"x\\\"":"\\\\\"}\\"},"id":"\\"}`, `"\\"`, `a\\`, `{"x\\\"":"\\\\\"}\\"}`},
		{"unknown keys ignored", `{"method":"m","extra":{"id":true},"x":1,"y":[],"z":"s","w":null,"v":false}`, "", "m", `{}`},
		{"many distinct unknown keys", `{"method":"m","k1":1,"k2":1,"k3":1,"k4":1,"k5":1,"k6":1,"k7":1,"k8":1,"k9":1,"k10":1,"k11":1}`, "", "m", `{}`},
		{"whitespace everywhere", " \t\n{ \"id\" : 1 , \"method\" : \"m\" } \r\n", `1`, "m", `{}`},
		{"key order free", `{"params":{"p":1},"method":"m","id":"x","jsonrpc":"2.0"}`, `"x"`, "m", `{"p":1}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req, rpcErr := DecodeRequest([]byte(tt.body))
			require.Nil(t, rpcErr)
			require.NotNil(t, req)
			if tt.wantID == "" {
				assert.Nil(t, req.ID)
			} else {
				assert.Equal(t, tt.wantID, string(req.ID))
			}
			assert.Equal(t, tt.wantMethod, req.Method)
			assert.Equal(t, tt.wantParams, string(req.Params))
		})
	}
}

func TestDecodeRequestParseError(t *testing.T) {
	tests := []struct{ name, body string }{
		{"empty body", ""},
		{"whitespace only", " \n"},
		{"truncated object", `{"jsonrpc":"2.0","method":`},
		{"trailing garbage", `{"method":"m"} x`},
		{"two values", `{"method":"m"}{"method":"m"}`},
		{"single quotes", `{'method':'m'}`},
		{"trailing comma", `{"method":"m",}`},
		{"invalid UTF-8 in string", "{\"method\":\"m\xff\"}"},
		{"invalid UTF-8 in key", "{\"m\xc3\":1,\"method\":\"m\"}"},
		{"invalid UTF-8 outside strings", "{\"method\":\"m\"}\xff"},
		{"byte order mark", "\xef\xbb\xbf{\"method\":\"m\"}"},
		{"control character in string", "{\"method\":\"m\x01\"}"},
		{"bad escape", `{"method":"\x"}`},
		{"leading zero", `{"method":"m","id":01}`},
		{"NaN", `{"method":"m","id":NaN}`},
		{"nesting too deep", strings.Repeat("[", 10001) + strings.Repeat("]", 10001)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req, rpcErr := DecodeRequest([]byte(tt.body))
			require.NotNil(t, rpcErr)
			assert.Equal(t, &Error{Code: errcode.ParseError, Message: "Parse error"}, rpcErr)
			require.NotNil(t, req)
			assert.Nil(t, req.ID)
		})
	}
}

// detail builds an expected Detail for a top-level key.
func detail(key, msg, typ string) Detail {
	return Detail{Loc: []any{key}, Msg: msg, Type: typ, Path: "/" + key}
}

// rootDetail builds an expected Detail for the whole request.
func rootDetail(msg, typ string) Detail {
	return Detail{Loc: []any{}, Msg: msg, Type: typ}
}

func TestDecodeRequestInvalid(t *testing.T) {
	var (
		notObject   = rootDetail("request must be a JSON object", "type_error")
		batch       = rootDetail("batch requests are not supported; the request must be a JSON object", "type_error")
		badVersionT = detail("jsonrpc", `must be the string "2.0"`, "type_error")
		badVersionV = detail("jsonrpc", `must be the string "2.0"`, "value_error")
		noMethod    = detail("method", "field required", "missing")
		methodType  = detail("method", "must be a string", "type_error")
		idType      = detail("id", "must be a string, an integer or null", "type_error")
		idFraction  = detail("id", "must be an integer, not a fractional number", "type_error")
		idTooLarge  = detail("id", "integer is too large", "value_error")
		paramsType  = detail("params", "must be an object", "type_error")
		dupUnknown  = rootDetail("duplicate key", "value_error")
	)
	caseOf := func(key, canonical string) Detail {
		return detail(key, `key differs only in letter case from "`+canonical+`"`, "value_error")
	}
	dup := func(key string) Detail { return detail(key, "duplicate key", "value_error") }

	tests := []struct {
		name   string
		body   string
		wantID string // "" means nil: not echoed
		want   []Detail
	}{
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"m"}]`, "", []Detail{batch}},
		{"empty batch", `[]`, "", []Detail{batch}},
		{"null body", `null`, "", []Detail{notObject}},
		{"string body", ` "x" `, "", []Detail{notObject}},
		{"number body", `1`, "", []Detail{notObject}},
		{"boolean body", `true`, "", []Detail{notObject}},
		{"empty object", `{}`, "", []Detail{noMethod}},
		{"jsonrpc 1.0", `{"jsonrpc":"1.0","id":1,"method":"m"}`, `1`, []Detail{badVersionV}},
		{"jsonrpc number", `{"jsonrpc":2.0,"id":1,"method":"m"}`, `1`, []Detail{badVersionT}},
		{"jsonrpc null", `{"jsonrpc":null,"id":1,"method":"m"}`, `1`, []Detail{badVersionT}},
		{"jsonrpc padded", `{"jsonrpc":" 2.0","id":"a","method":"m"}`, `"a"`, []Detail{badVersionV}},
		{"method missing", `{"jsonrpc":"2.0","id":"a"}`, `"a"`, []Detail{noMethod}},
		{"method number", `{"id":"a","method":1}`, `"a"`, []Detail{methodType}},
		{"method null", `{"id":"a","method":null}`, `"a"`, []Detail{methodType}},
		{"method array", `{"id":"a","method":["m"]}`, `"a"`, []Detail{methodType}},
		{"id true", `{"id":true,"method":"m"}`, "", []Detail{idType}},
		{"id false", `{"id":false,"method":"m"}`, "", []Detail{idType}},
		{"id fractional", `{"id":1.5,"method":"m"}`, "", []Detail{idFraction}},
		{"id fractional exponent", `{"id":15e-1,"method":"m"}`, "", []Detail{idFraction}},
		{"id tiny", `{"id":1e-999999,"method":"m"}`, "", []Detail{idFraction}},
		{"id huge exponent", `{"id":1e999999,"method":"m"}`, "", []Detail{idTooLarge}},
		{"id exponent overflow", `{"id":1e99999999999999999999999999,"method":"m"}`, "", []Detail{idTooLarge}},
		{"id just over digit bound", `{"id":1e1024,"method":"m"}`, "", []Detail{idTooLarge}},
		{"id array", `{"id":[1],"method":"m"}`, "", []Detail{idType}},
		{"id object", `{"id":{},"method":"m"}`, "", []Detail{idType}},
		{"params array", `{"id":7,"method":"m","params":[1,2]}`, `7`, []Detail{paramsType}},
		{"params null", `{"id":7,"method":"m","params":null}`, `7`, []Detail{paramsType}},
		{"params string", `{"id":7,"method":"m","params":"{}"}`, `7`, []Detail{paramsType}},
		{"Method smuggled", `{"jsonrpc":"2.0","id":1,"method":"x","Method":"supervaizer/action.invoke"}`, `1`, []Detail{caseOf("Method", "method")}},
		{"ID smuggled", `{"ID":1,"method":"m"}`, "", []Detail{caseOf("ID", "id")}},
		{"JSONRPC smuggled", `{"JSONRPC":"1.0","method":"m"}`, "", []Detail{caseOf("JSONRPC", "jsonrpc")}},
		{"Params smuggled", `{"method":"m","Params":{}}`, "", []Detail{caseOf("Params", "params")}},
		{"escaped case variant", `{"method":"m","\u004dethod":"x"}`, "", []Detail{caseOf("Method", "method")}},
		{"long s smuggled", `{"jſonrpc":"2.0","method":"m"}`, "", []Detail{caseOf("jſonrpc", "jsonrpc")}},
		{"duplicate method", `{"id":1,"method":"a","method":"b"}`, `1`, []Detail{dup("method")}},
		{"duplicate method by escape", `{"id":1,"method":"a","\u006dethod":"b"}`, `1`, []Detail{dup("method")}},
		{"duplicate id", `{"id":1,"id":2,"method":"m"}`, "", []Detail{dup("id")}},
		{"duplicate jsonrpc", `{"jsonrpc":"2.0","jsonrpc":"2.0","method":"m"}`, "", []Detail{dup("jsonrpc")}},
		{"duplicate params", `{"method":"m","params":{},"params":{}}`, "", []Detail{dup("params")}},
		{"duplicate unknown key", `{"method":"m","x":1,"x":2}`, "", []Detail{dupUnknown}},
		{"duplicate unknown key after many", `{"method":"m","k1":1,"k2":1,"k3":1,"k4":1,"k5":1,"k6":1,"k7":1,"k8":1,"k9":1,"k10":1,"k3":1}`, "", []Detail{dupUnknown}},
		{"duplicate unknown key among many", `{"method":"m","k1":1,"k2":1,"k3":1,"k4":1,"k5":1,"k6":1,"k7":1,"k8":1,"k9":1,"k10":1,"k10":1}`, "", []Detail{dupUnknown}},
		{"every problem at once", `{"jsonrpc":"1.0","id":true,"params":[],"Method":"m"}`, "", []Detail{badVersionV, idType, paramsType, caseOf("Method", "method"), noMethod}},
		{"valid id echoed with several problems", `{"id":"r-1","method":2,"params":null}`, `"r-1"`, []Detail{methodType, paramsType}},
		{"normalized id echoed", `{"id":2.0e1}`, `20`, []Detail{noMethod}},
		{"null id not echoed", `{"id":null}`, "", []Detail{noMethod}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req, rpcErr := DecodeRequest([]byte(tt.body))
			require.NotNil(t, rpcErr)
			assert.Equal(t, errcode.InvalidRequest, rpcErr.Code)
			assert.Equal(t, "Invalid Request", rpcErr.Message)
			assert.Equal(t, map[string]any{"errors": tt.want}, rpcErr.Data)
			require.NotNil(t, req)
			if tt.wantID == "" {
				assert.Nil(t, req.ID)
			} else {
				assert.Equal(t, tt.wantID, string(req.ID))
			}
			assert.Empty(t, req.Method)
			assert.Nil(t, req.Params)
		})
	}
}

func TestDecodeRequestDetailsNeverQuoteValues(t *testing.T) {
	const secret = "s3cr3t-value"
	bodies := []string{
		`{"jsonrpc":"` + secret + `","id":"` + secret + `","method":"m"}`,
		`{"id":["` + secret + `"],"method":{"` + secret + `":1}}`,
		`{"method":"m","params":"` + secret + `"}`,
		`{"method":"m","` + secret + `":1,"` + secret + `":2}`,
	}
	for _, body := range bodies {
		_, rpcErr := DecodeRequest([]byte(body))
		require.NotNil(t, rpcErr, body)
		out, err := AppendError(nil, nil, rpcErr) // the id is echoed by design, so leave it out
		require.NoError(t, err)
		assert.NotContains(t, string(out), secret, body)
	}
}

func TestDecodeRequestAliasing(t *testing.T) {
	body := []byte(`{"id":"a","method":"m","params":{"k":1},"x":0}`)
	orig := string(body)
	req, rpcErr := DecodeRequest(body)
	require.Nil(t, rpcErr)
	assert.Equal(t, len(req.ID), cap(req.ID), "ID capacity must be clipped")
	assert.Equal(t, len(req.Params), cap(req.Params), "Params capacity must be clipped")
	_ = append(req.ID, "XXXX"...)
	_ = append(req.Params, "XXXX"...)
	assert.Equal(t, orig, string(body))
}

func TestDecodeRequestDefaultParamsAreFresh(t *testing.T) {
	a, err := DecodeRequest([]byte(`{"method":"m"}`))
	require.Nil(t, err)
	a.Params[0] = 'X'
	b, err := DecodeRequest([]byte(`{"method":"m"}`))
	require.Nil(t, err)
	assert.Equal(t, "{}", string(b.Params))
}

func TestDecodeRequestManyKeysIsLinear(t *testing.T) {
	// 200k distinct keys must decode quickly (the duplicate check switches to a map).
	var sb strings.Builder
	sb.WriteString(`{"method":"m"`)
	for i := range 200_000 {
		sb.WriteString(`,"k`)
		sb.WriteString(strings.Repeat("x", i%7))
		sb.WriteString(strconv.Itoa(i))
		sb.WriteString(`":0`)
	}
	sb.WriteString(`}`)
	req, rpcErr := DecodeRequest([]byte(sb.String()))
	require.Nil(t, rpcErr)
	assert.Equal(t, "m", req.Method)
}

// TestDecodeMethodOwnsItsBytes checks that Decode's method, a protocol
// constant or a copy, stays the same when the body is reused.
func TestDecodeMethodOwnsItsBytes(t *testing.T) {
	tests := []struct {
		name, method, want string
	}{
		{"action invoke", MethodActionInvoke, MethodActionInvoke},
		{"surface load", MethodSurfaceLoad, MethodSurfaceLoad},
		{"other method", "supervaizer/other", "supervaizer/other"},
		{"prefix of a protocol method", "supervaizer/action", "supervaizer/action"},
		{"escaped protocol method", `supervaizer\/action.invoke`, MethodActionInvoke},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := []byte(`{"jsonrpc":"2.0","id":1,"method":"` + tt.method + `","params":{}}`)
			req, rpcErr := DecodeRequest(body)
			require.Nil(t, rpcErr)
			for i := range body {
				body[i] = 'x'
			}
			assert.Equal(t, tt.want, req.Method)
		})
	}
}
