package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/supervaize/supervaizer-go/a2a/client"
	"github.com/supervaize/supervaizer-go/a2atask"
	"github.com/supervaize/supervaizer-go/errcode"
)

// dialExample returns a client of the example remote (the caller closes
// srv).
func dialExample() (*client.Client, *httptest.Server, error) {
	srv := exampleRemote()
	c, err := client.New(context.Background(), srv.URL, client.AllowLoopback())
	if err != nil {
		srv.Close()
	}
	return c, srv, err
}

func ExampleClient() {
	c, srv, err := dialExample()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	ctx := context.Background()
	ans, err := c.Send(ctx, start("solid-state"))
	if err != nil {
		fmt.Println(err)
		return
	}
	task, err := c.GetTask(ctx, ans.Task.ID)
	fmt.Println(task.ID, task.Status.State, err)
	// Output: task-7 completed <nil>
}

func ExampleCard() {
	card, err := client.DecodeCard([]byte(`{"name":"Agent","protocolVersion":"0.3.0","url":"https://agent.example/a2a",
		"skills":[{"id":"summarize","name":"Summarize","description":"","tags":[]}]}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(card.Name, card.URL, card.Skills[0].ID)
	// Output: Agent https://agent.example/a2a summarize
}

func ExampleInterface03() {
	card, err := client.DecodeCard([]byte(`{"name":"Agent","skills":[],"protocolVersion":"0.3.0",
		"url":"https://agent.example/grpc","preferredTransport":"GRPC",
		"additionalInterfaces":[{"url":"https://agent.example/a2a","transport":"JSONRPC"}]}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(card.AdditionalInterfaces[0].Transport, card.AdditionalInterfaces[0].URL) // the client's 0.3 endpoint
	// Output: JSONRPC https://agent.example/a2a
}

func ExampleExtension() {
	card, err := client.DecodeCard([]byte(`{"name":"Agent","skills":[],"capabilities":{"extensions":[
		{"uri":"urn:openoperator:campaign-control:v1","params":{"lease_epoch_enforced":true}}]}}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, e := range card.Extensions {
		fmt.Println(e.URI, e.Required, string(e.Params))
	}
	// Output: urn:openoperator:campaign-control:v1 false {"lease_epoch_enforced":true}
}

func ExampleBinding() {
	c, srv, err := dialExample()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	switch c.Binding() {
	case client.Binding10:
		fmt.Println("SendMessage, GetTask, CancelTask")
	case client.Binding03:
		fmt.Println("message/send, tasks/get, tasks/cancel")
	}
	// Output: SendMessage, GetTask, CancelTask
}

func ExampleOperation() {
	c, srv, err := dialExample()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	_, _ = c.GetTask(context.Background(), "task-7")
	for _, op := range []client.Operation{client.OpSend, client.OpGet, client.OpCancel} {
		fmt.Println(op, c.Capability(op))
	}
	// Output:
	// send tentative
	// get accepted
	// cancel tentative
}

func ExampleCapability() {
	c, srv, err := dialExample()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	if c.Capability(client.OpCancel) != client.CapabilityUnavailable {
		_, err = c.Cancel(context.Background(), "task-7")
	}
	fmt.Println(c.Capability(client.OpCancel) == client.CapabilityUnavailable, errors.Is(err, client.ErrUnavailable))
	// Output: true true
}

func ExampleSendRequest() {
	req := client.SendRequest{
		RequestID: "review-42-approve", // stable: the messageId, and what reads the outcome back
		TaskID:    "task-7",            // continue this task
		ContextID: "ctx-7",
		Parts: []a2atask.Part{{Kind: "data",
			Data: json.RawMessage(`{"action":"step.awaiting.submit","input":{"approve_review":true}}`)}},
		Metadata: map[string]any{"supervaizer/agent_slug": "research-agent"},
	}
	c, srv, err := dialExample()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	ans, err := c.Send(context.Background(), req)
	fmt.Println(ans.Task.ID, err)
	// Output: task-7 <nil>
}

func ExampleAnswer() {
	c, srv, err := dialExample()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	ans, err := c.Send(context.Background(), start("ev-batteries"))
	if err != nil {
		fmt.Println(err)
		return
	}
	if ans.Task != nil {
		fmt.Println("task", ans.Task.ID)
	} else {
		fmt.Println("message", ans.Message.MessageID)
	}
	// Output: task task-7
}

func ExampleOption() {
	opts := []client.Option{
		client.WithHeader("X-API-Key", "sk-remote"),
		client.WithCallTimeout(5 * time.Minute),
		client.AllowPrivateNetworks(),
	}
	_, err := client.New(context.Background(), "http://agent.internal", opts...)
	fmt.Println(errors.Is(err, client.ErrInsecureURL)) // private is not loopback: HTTPS only
	// Output: true
}

func ExampleError_Error() {
	err := &client.Error{Method: "tasks/get", Code: -32001}
	fmt.Println(err.Error())
	err = &client.Error{Method: "message/send", HTTPStatus: http.StatusForbidden}
	fmt.Println(err.Error())
	// Output:
	// a2a client: tasks/get: error -32001: task not found
	// a2a client: message/send: HTTP 403: the credentials lack a scope the remote requires
}

func ExampleError_Is() {
	err := error(&client.Error{Method: "CancelTask", Code: -32601})
	fmt.Println(errors.Is(err, client.ErrUnavailable))
	// Output: true
}

func ExampleAmbiguousError_Error() {
	err := &client.AmbiguousError{Method: "message/send", RequestID: "req-1", Err: context.DeadlineExceeded}
	fmt.Println(err.Error())
	// Output: a2a client: message/send: the outcome of request "req-1" is unknown (it may have been applied): read it back before any new attempt, never resend blindly: context deadline exceeded
}

func ExampleAmbiguousError_Unwrap() {
	err := error(&client.AmbiguousError{Method: "message/send", RequestID: "req-1", Err: &client.Error{Code: -32603}})
	var e *client.Error
	fmt.Println(errors.As(err, &e), e.Code)
	// Output: true -32603
}

func ExampleErrInsecureURL() {
	_, err := client.New(context.Background(), "http://agent.example.com")
	fmt.Println(err)
	// Output: a2a client: insecure URL: plain http to agent.example.com, which is not a loopback host
}

func ExampleErrAddressRefused() {
	_, err := client.New(context.Background(), "https://[fd00:ec2::254]") // AWS metadata over IPv6
	fmt.Println(errors.Is(err, client.ErrAddressRefused))
	// Output: true
}

func ExampleErrRedirect() {
	srv := httptest.NewServer(http.RedirectHandler("https://elsewhere.example/", http.StatusFound))
	defer srv.Close()
	_, err := client.New(context.Background(), srv.URL, client.AllowLoopback())
	fmt.Println(errors.Is(err, client.ErrRedirect))
	// Output: true
}

func ExampleErrTooLarge() {
	srv := exampleRemote()
	defer srv.Close()
	_, err := client.New(context.Background(), srv.URL, client.AllowLoopback(), client.WithMaxResponseBytes(100))
	fmt.Println(errors.Is(err, client.ErrTooLarge))
	// Output: true
}

func ExampleErrInvalidCard() {
	_, err := client.DecodeCard([]byte(`{"skills":[]}`))
	fmt.Println(err)
	// Output: a2a client: invalid agent card: no name
}

func ExampleErrNoCard() {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	_, err := client.New(context.Background(), srv.URL, client.AllowLoopback())
	fmt.Println(err)
	// Output: a2a client: no agent card
}

func ExampleErrNoBinding() {
	srv := exampleRemote()
	defer srv.Close()
	_, err := client.New(context.Background(), srv.URL, client.AllowLoopback(), client.WithBinding(client.Binding03))
	fmt.Println(err)
	// Output: a2a client: no supported A2A binding
}

func ExampleErrInvalidAnswer() {
	c, srv, err := dialExample()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	_, err = c.GetTask(context.Background(), "malformed")
	fmt.Println(errors.Is(err, client.ErrInvalidAnswer))
	// Output: true
}

func ExampleErrInvalidRequest() {
	c, srv, err := dialExample()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	_, err = c.Send(context.Background(), client.SendRequest{Parts: []a2atask.Part{{Kind: "text", Text: "hi"}}})
	fmt.Println(err)
	// Output: a2a client: invalid request: RequestID must be 1 to 256 bytes of UTF-8 without control characters
}

func ExampleErrUnavailable() {
	c, srv, err := dialExample()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	_, err = c.Cancel(context.Background(), "task-7")
	fmt.Println(errors.Is(err, client.ErrUnavailable))
	// Output: true
}

func ExampleDefaultDiscoveryTimeout() {
	fmt.Println(client.DefaultDiscoveryTimeout)
	// Output: 15s
}

func ExampleDefaultCallTimeout() {
	fmt.Println(client.DefaultCallTimeout)
	// Output: 2m0s
}

func ExampleDefaultDialTimeout() {
	fmt.Println(client.DefaultDialTimeout)
	// Output: 10s
}

func ExampleDefaultMaxResponseBytes() {
	fmt.Println(client.DefaultMaxResponseBytes)
	// Output: 1048576
}

func ExampleDefaultMaxArtifacts() {
	fmt.Println(client.DefaultMaxArtifacts)
	// Output: 64
}

// A refusal of the campaign-control extension carries its code, one of
// package errcode's.
func ExampleError_campaign() {
	err := error(&client.Error{Method: "campaign/claim_control", Code: errcode.LeaseHeld})
	var refused *client.Error
	if errors.As(err, &refused) && refused.Code == errcode.LeaseHeld {
		fmt.Println(err)
	}
	fmt.Println(&client.Error{Method: "campaign/intervene", Code: errcode.StaleEpoch})
	fmt.Println(&client.Error{Method: "campaign/renew_control", Code: errcode.LeaseExpired})
	fmt.Println(&client.Error{Method: "campaign/claim_control", Code: errcode.PolicyRefused})
	// Output:
	// a2a client: campaign/claim_control: error -32050: the lease is held by another controller
	// a2a client: campaign/intervene: error -32051: the controller epoch is stale
	// a2a client: campaign/renew_control: error -32052: the lease has expired
	// a2a client: campaign/claim_control: error -32053: refused by the remote's constraints policy
}
