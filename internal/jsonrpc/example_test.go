package jsonrpc_test

import (
	"encoding/json"
	"fmt"

	"github.com/supervaize/supervaizer-go/errcode"
	"github.com/supervaize/supervaizer-go/internal/jsonrpc"
)

// respond shows the controller's use of the package: decode, dispatch, encode.
func respond(body []byte) string {
	req, rpcErr := jsonrpc.DecodeRequest(body)
	if rpcErr != nil {
		out, err := jsonrpc.AppendError(nil, req.ID, rpcErr)
		if err != nil {
			return err.Error()
		}
		return string(out)
	}
	if req.Method != "supervaizer/action.invoke" {
		out, err := jsonrpc.AppendError(nil, req.ID, &jsonrpc.Error{
			Code: errcode.MethodNotFound, Message: "Method not found: " + req.Method})
		if err != nil {
			return err.Error()
		}
		return string(out)
	}
	return string(jsonrpc.AppendResult(nil, req.ID, json.RawMessage(`{"status":"ok","effects":[]}`)))
}

func ExampleDecodeRequest() {
	fmt.Println(respond([]byte(`{"jsonrpc":"2.0","id":7.0,"method":"supervaizer/action.invoke","params":{}}`)))
	fmt.Println(respond([]byte(`{"jsonrpc":"2.0","id":"rpc-1","method":"<nope>"}`)))
	fmt.Println(respond([]byte(`{"jsonrpc":"2.0","id":8,"method":"x","Method":"supervaizer/action.invoke"}`)))
	fmt.Println(respond([]byte(`{"jsonrpc":"2.0",`)))
	// Output:
	// {"jsonrpc":"2.0","id":7,"result":{"status":"ok","effects":[]}}
	// {"jsonrpc":"2.0","id":"rpc-1","error":{"code":-32601,"message":"Method not found: <nope>"}}
	// {"jsonrpc":"2.0","id":8,"error":{"code":-32600,"message":"Invalid Request","data":{"errors":[{"loc":["Method"],"msg":"key differs only in letter case from \"method\"","type":"value_error","path":"/Method"}]}}}
	// {"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error"}}
}
