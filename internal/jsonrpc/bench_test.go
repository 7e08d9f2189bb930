package jsonrpc

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/errcode"
)

// benchBody is a typical supervaizer/action.invoke call (about 600 bytes).
var benchBody = []byte(`{"jsonrpc":"2.0","id":"rpc-0b6f3c1e-42","method":"supervaizer/action.invoke","params":{"action_request":{` +
	`"request_id":"req-7f9a2d4c-1b3e-4c5d-8e6f-0a1b2c3d4e5f","actor":{"user_id":"u-1"},` +
	`"workspace":{"id":"w-1","slug":"research"},"mission_id":"m-1","agent_slug":"research-agent",` +
	`"surface":"job.start","action":"job.start","job_id":"j-1",` +
	`"input":{"topic_id":"t-1","title":"Quarterly market scan","depth":3,"sources":["news","filings"],` +
	`"options":{"language":"en","include_summary":true,"max_items":25}},` +
	`"mission":{"id":"m-1","metadata":{"region":"EU"}},` +
	`"workspace_authorization":{"token":"eyJhbGciOiJFZERTQSJ9.e30.sig"}}}}`)

func TestBenchBodyIsTypical(t *testing.T) {
	require.InDelta(t, 600, len(benchBody), 50)
	req, rpcErr := DecodeRequest(benchBody)
	require.Nil(t, rpcErr)
	require.Equal(t, "supervaizer/action.invoke", req.Method)
}

func BenchmarkDecodeRequest(b *testing.B) {
	b.SetBytes(int64(len(benchBody)))
	b.ReportAllocs()
	for b.Loop() {
		if _, rpcErr := DecodeRequest(benchBody); rpcErr != nil {
			b.Fatal(rpcErr.Message)
		}
	}
}

func BenchmarkDecodeRequestInvalid(b *testing.B) {
	body := []byte(`{"jsonrpc":"2.0","id":7,"method":"supervaizer/action.invoke","params":null}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, rpcErr := DecodeRequest(body); rpcErr == nil {
			b.Fatal("want an error")
		}
	}
}

func BenchmarkAppendResult(b *testing.B) {
	id := json.RawMessage(`"rpc-0b6f3c1e-42"`)
	result := json.RawMessage(`{"status":"ok","effects":[{"type":"job.started","data":{"job_id":"j-1"}}],"job_id":"j-1"}`)
	buf := make([]byte, 0, 512)
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendResult(buf[:0], id, result)
	}
}

func BenchmarkAppendError(b *testing.B) {
	id := json.RawMessage(`7`)
	_, rpcErr := DecodeRequest([]byte(`{"jsonrpc":"2.0","id":7,"method":"supervaizer/action.invoke","params":null}`))
	require.NotNil(b, rpcErr)
	buf := make([]byte, 0, 512)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = AppendError(buf[:0], id, rpcErr); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendErrorNoData(b *testing.B) {
	rpcErr := &Error{Code: errcode.MethodNotFound, Message: "Method not found: supervaizer/nope"}
	buf := make([]byte, 0, 512)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = AppendError(buf[:0], json.RawMessage(`7`), rpcErr); err != nil {
			b.Fatal(err)
		}
	}
}
