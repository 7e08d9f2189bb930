package errcode_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/errcode"
)

// TestCodes pins every code's value: they are wire values, shared with the
// Python reference SDK and the A2A specification.
func TestCodes(t *testing.T) {
	tests := []struct {
		code errcode.Code
		want int
	}{
		{errcode.ParseError, -32700},
		{errcode.InvalidRequest, -32600},
		{errcode.MethodNotFound, -32601},
		{errcode.InvalidParams, -32602},
		{errcode.InternalError, -32603},
		{errcode.TaskNotFound, -32001},
		{errcode.TaskNotCancelable, -32002},
		{errcode.PushNotificationNotSupported, -32003},
		{errcode.UnsupportedOperation, -32004},
		{errcode.ContentTypeNotSupported, -32005},
		{errcode.InvalidAgentResponse, -32006},
		{errcode.ExtendedAgentCardNotConfigured, -32007},
		{errcode.VersionNotSupported, -32009},
		{errcode.ActionNotRegistered, -32010},
		{errcode.SurfaceNotRegistered, -32011},
		{errcode.Unauthorized, -32030},
		{errcode.LeaseHeld, -32050},
		{errcode.StaleEpoch, -32051},
		{errcode.LeaseExpired, -32052},
		{errcode.PolicyRefused, -32053},
	}
	seen := map[errcode.Code]bool{}
	for _, tt := range tests {
		assert.Equal(t, tt.want, int(tt.code))
		assert.False(t, seen[tt.code], "%d twice", tt.want)
		seen[tt.code] = true
	}
}

// A client reads the code of a JSON-RPC error object with supervaizer.CodeOf
// and compares it with the codes of this package.
func Example() {
	var resp struct {
		Error *supervaizer.Error `json:"error"`
	}
	body := `{"jsonrpc":"2.0","id":1,"error":{"code":-32030,"message":"Workspace authorization failed","data":{"code":"workspace_authorization_expired"}}}`
	if err := json.Unmarshal([]byte(body), &resp); err != nil {
		panic(err)
	}
	var err error = resp.Error
	if supervaizer.CodeOf(err) == errcode.Unauthorized {
		// the workspace token failed a check: data.code says which
		fmt.Println("token refused:", resp.Error.Data())
	}
	// Output: token refused: map[code:workspace_authorization_expired]
}
