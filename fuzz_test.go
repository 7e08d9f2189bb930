package supervaizer_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	supervaizer "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/errcode"
)

// fuzzMaxBody is the body limit of the fuzzed servers.
const fuzzMaxBody = 64 << 10

// errorTableCodes are the codes of the protocol: nothing else may be sent.
var errorTableCodes = map[errcode.Code]bool{
	errcode.ParseError: true, errcode.InvalidRequest: true, errcode.MethodNotFound: true,
	errcode.InvalidParams: true, errcode.InternalError: true, errcode.ActionNotRegistered: true,
	errcode.SurfaceNotRegistered: true, errcode.Unauthorized: true,
	// The A2A task methods' own codes (both bindings).
	errcode.TaskNotFound: true, errcode.TaskNotCancelable: true, errcode.PushNotificationNotSupported: true,
	errcode.UnsupportedOperation: true, errcode.ContentTypeNotSupported: true, errcode.VersionNotSupported: true,
}

// addGoldenSeeds adds every golden request body to the corpus.
func addGoldenSeeds(f *testing.F, add func(body []byte)) {
	paths, err := filepath.Glob(filepath.Join("testdata", "rpc", "*.request.json"))
	require.NoError(f, err)
	require.NotEmpty(f, paths)
	for _, p := range paths {
		body, err := os.ReadFile(p)
		require.NoError(f, err)
		add(body)
	}
}

// checkRPCResponse fails unless body is one well-formed JSON-RPC 2.0 response
// whose error, if any, is from the error table, and returns the error.
func checkRPCResponse(t *testing.T, body []byte) *rpcError {
	t.Helper()
	var members map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(body, &members), "response is not a JSON object: %q", body)
	for k := range members {
		require.Contains(t, []string{"jsonrpc", "id", "result", "error"}, k, "unexpected member in %s", body)
	}
	require.JSONEq(t, `"2.0"`, string(members["jsonrpc"]))
	if id, ok := members["id"]; ok {
		var s string
		if json.Unmarshal(id, &s) != nil {
			require.Regexp(t, `^-?[0-9]+$`, string(id), "the id is a string or an integer: %s", body)
		}
	}
	_, hasResult := members["result"]
	raw, hasError := members["error"]
	require.NotEqual(t, hasResult, hasError, "exactly one of result and error: %s", body)
	if !hasError {
		var result map[string]any
		require.NoError(t, json.Unmarshal(members["result"], &result), "result is an object: %s", body)
		return nil
	}
	var e struct {
		Code    *int             `json:"code"`
		Message *string          `json:"message"`
		Data    *json.RawMessage `json:"data"`
	}
	require.NoError(t, json.Unmarshal(raw, &e))
	require.NotNil(t, e.Code)
	require.True(t, errorTableCodes[errcode.Code(*e.Code)], "code %d is not in the error table: %s", *e.Code, body)
	require.NotNil(t, e.Message)
	require.NotEmpty(t, *e.Message)
	out := &rpcError{Code: *e.Code, Message: *e.Message}
	if e.Data != nil {
		var data map[string]any
		require.NoError(t, json.Unmarshal(*e.Data, &data), "data is an object: %s", body)
		out.Data = *e.Data
	}
	return out
}

// FuzzServeA2A sends arbitrary bodies through ServeHTTP: it never panics and
// always answers HTTP 200 with a well-formed JSON-RPC response, or 413.
func FuzzServeA2A(f *testing.F) {
	addGoldenSeeds(f, func(body []byte) { f.Add(body) })
	for _, s := range []string{
		``, `{}`, `null`, `[]`, `{"method":"supervaizer/action.invoke"}`,
		`{"jsonrpc":"2.0","id":1,"method":"x","Method":"supervaizer/action.invoke"}`,
		`{"jsonrpc":"2.0","id":9007199254740993,"method":"supervaizer/surface.load","params":{"surface_request":{}}}`,
		`{"jsonrpc":"2.0","id":1e400,"method":"m"}`,
		`{"jsonrpc":"2.0","id":1,"method":"supervaizer/action.invoke","params":{"action_request":null}}`,
		`{"id":"\ud800","method":"supervaizer/action.invoke","params":{}}`,
	} {
		f.Add([]byte(s))
	}
	h := newHarness(f, withServerOptions(supervaizer.WithMaxBodyBytes(fuzzMaxBody)))
	tok := "Bearer " + h.validToken()
	f.Fuzz(func(t *testing.T, body []byte) {
		w := h.serve(rpcCall{body: body, key: testWriteKey, token: tok})
		switch w.Code {
		case http.StatusRequestEntityTooLarge:
			require.Greater(t, len(body), fuzzMaxBody)
			return
		case http.StatusOK:
		default:
			t.Fatalf("HTTP %d for %q: %s", w.Code, body, w.Body)
		}
		require.Equal(t, "application/json", w.Header().Get("Content-Type"))
		checkRPCResponse(t, w.Body.Bytes())
	})
}

// FuzzRequestModel sends arbitrary params to both methods: it never panics,
// and a -32602 lists well-formed problems (loc, msg, type).
func FuzzRequestModel(f *testing.F) {
	addGoldenSeeds(f, func(body []byte) {
		var env struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if json.Unmarshal(body, &env) == nil && len(env.Params) > 0 {
			f.Add([]byte(env.Params), env.Method == supervaizer.MethodSurfaceLoad)
		}
	})
	for _, s := range []string{
		`{}`, `{"action_request":{}}`, `{"surface_request":[]}`,
		`{"request_id":"r","actor":{"user_id":1},"workspace":{"id":"w","ID":"x"},"mission_id":"m","agent_slug":"research-agent","surface":"s","action":"job.sync"}`,
		`{"request_id":"r","actor":{"user_id":"u"},"workspace":{"id":"w"},"mission_id":"m","agent_slug":"research-agent","surface":"s","action":"job.sync","mission":{"id":"m","metadata":"{}"}}`,
		`{"request_id":"r","actor":{"user_id":"u"},"workspace":{"id":"w"},"mission_id":"m","agent_slug":"research-agent","surface":"s","action":"job.start","input":{"topic_id":"t","Topic_ID":"u"}}`,
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	h := newHarness(f, withServerOptions(supervaizer.WithMaxBodyBytes(fuzzMaxBody)))
	tok := "Bearer " + h.validToken()
	f.Fuzz(func(t *testing.T, params []byte, surface bool) {
		method := supervaizer.MethodActionInvoke
		if surface {
			method = supervaizer.MethodSurfaceLoad
		}
		var body bytes.Buffer
		body.WriteString(`{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":`)
		body.Write(params)
		body.WriteString(`}`)
		w := h.serve(rpcCall{body: body.Bytes(), key: testWriteKey, token: tok})
		if w.Code == http.StatusRequestEntityTooLarge {
			require.Greater(t, body.Len(), fuzzMaxBody)
			return
		}
		require.Equal(t, http.StatusOK, w.Code)
		e := checkRPCResponse(t, w.Body.Bytes())
		if e == nil || e.Code != int(errcode.InvalidParams) {
			return
		}
		var data struct {
			Errors []map[string]json.RawMessage `json:"errors"`
		}
		require.NoError(t, json.Unmarshal(e.Data, &data))
		require.NotEmpty(t, data.Errors)
		for _, p := range data.Errors {
			var loc []any
			require.NoError(t, json.Unmarshal(p["loc"], &loc), "loc is a list: %s", w.Body)
			for _, seg := range loc {
				switch seg.(type) {
				case string, float64:
				default:
					t.Fatalf("loc segment %v in %s", seg, w.Body)
				}
			}
			var msg, typ string
			require.NoError(t, json.Unmarshal(p["msg"], &msg))
			require.NoError(t, json.Unmarshal(p["type"], &typ))
			require.NotEmpty(t, msg)
			require.NotEmpty(t, typ)
		}
	})
}
