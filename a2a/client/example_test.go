package client_test

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/supervaize/supervaizer-go/a2a/client"
	"github.com/supervaize/supervaizer-go/a2atask"
	"github.com/supervaize/supervaizer-go/observe"
)

// exampleRemote serves an A2A 1.0 agent on loopback: SendMessage answers a
// submitted task (after a second for the request id "slow", with a stack
// trace in an internal error for "crash"), GetTask a completed one whose
// artifact is a file reference (a task without id for "malformed"),
// CancelTask method-not-found.
func exampleRemote() *httptest.Server {
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/.well-known/agent-card.json" {
			fmt.Fprintf(w, `{"name":"Research Agent","skills":[{"id":"job.start","name":"Start","description":"Starts a brief","tags":["job"]}],
				"supportedInterfaces":[{"url":"%s/a2a","protocolBinding":"JSONRPC","protocolVersion":"1.0"}],
				"capabilities":{"extensions":[{"uri":"urn:example:ext","params":{"level":2}}]}}`, srv.URL)
			return
		}
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ID      string `json:"id"`
				Message struct {
					MessageID string `json:"messageId"`
				} `json:"message"`
			} `json:"params"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.NotFound(w, r)
			return
		}
		answer := func(member string) {
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,%s}`, req.ID, member)
		}
		switch {
		case req.Method == "SendMessage" && req.Params.Message.MessageID == "slow":
			select {
			case <-time.After(time.Second):
			case <-r.Context().Done():
			}
			answer(`"result":{"task":{"id":"task-7","status":{"state":"TASK_STATE_SUBMITTED"}}}`)
		case req.Method == "SendMessage" && req.Params.Message.MessageID == "crash":
			answer(`"error":{"code":-32603,"message":"panic: nil map\ngoroutine 1 [running]:\nmain.go:12"}`)
		case req.Method == "SendMessage":
			answer(`"result":{"task":{"id":"task-7","contextId":"ctx-7","status":{"state":"TASK_STATE_SUBMITTED"}}}`)
		case req.Method == "GetTask" && req.Params.ID == "malformed":
			answer(`"result":{"status":{}}`)
		case req.Method == "GetTask":
			answer(`"result":{"id":"task-7","contextId":"ctx-7","status":{"state":"TASK_STATE_COMPLETED"},
				"artifacts":[{"artifactId":"brief","parts":[{"url":"https://files.example/brief.pdf","mediaType":"application/pdf"}]}]}`)
		default:
			answer(`"error":{"code":-32601,"message":"Method not found"}`)
		}
	}))
	return srv
}

func start(topic string) client.SendRequest {
	return client.SendRequest{RequestID: "req-" + topic, Parts: []a2atask.Part{
		{Kind: "data", Data: json.RawMessage(`{"action":"job.start","input":{"topic_id":"` + topic + `"}}`)}}}
}

func ExampleNew() {
	srv := exampleRemote()
	defer srv.Close()
	ctx := context.Background()

	// An https URL in production; loopback (and plain HTTP to it) needs
	// AllowLoopback.
	c, err := client.New(ctx, srv.URL, client.AllowLoopback(), client.WithHeader("X-API-Key", "key"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(c.Card().Name, "speaks A2A", c.Binding())

	// A metadata address is refused before any connection.
	_, err = client.New(ctx, "https://169.254.169.254")
	fmt.Println(errors.Is(err, client.ErrAddressRefused))
	// Output:
	// Research Agent speaks A2A 1.0
	// true
}

func ExampleClient_Send() {
	srv := exampleRemote()
	defer srv.Close()
	ctx := context.Background()
	c, err := client.New(ctx, srv.URL, client.AllowLoopback())
	if err != nil {
		fmt.Println(err)
		return
	}
	ans, err := c.Send(ctx, start("ev-batteries"))
	var amb *client.AmbiguousError
	switch {
	case errors.As(err, &amb):
		fmt.Println("unknown outcome of", amb.RequestID, "- read it back")
	case err != nil:
		fmt.Println(err)
	case ans.Task != nil:
		fmt.Println(ans.Task.ID, ans.Task.Status.State)
	}
	// Output: task-7 submitted
}

func ExampleClient_GetTask() {
	srv := exampleRemote()
	defer srv.Close()
	ctx := context.Background()
	c, err := client.New(ctx, srv.URL, client.AllowLoopback())
	if err != nil {
		fmt.Println(err)
		return
	}
	task, err := c.GetTask(ctx, "task-7")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(task.ID, task.Status.State, task.Status.State.Terminal())
	file := task.Artifacts[0].Parts[0].File // a reference: the client never fetches it
	fmt.Println(file.URI, file.MimeType)
	// Output:
	// task-7 completed true
	// https://files.example/brief.pdf application/pdf
}

func ExampleClient_Cancel() {
	srv := exampleRemote()
	defer srv.Close()
	ctx := context.Background()
	c, err := client.New(ctx, srv.URL, client.AllowLoopback())
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = c.Cancel(ctx, "task-7") // this remote has no CancelTask
	fmt.Println(err)
	fmt.Println(errors.Is(err, client.ErrUnavailable))
	// Output:
	// a2a client: CancelTask: error -32601: the remote does not serve this method
	// true
}

func ExampleClient_Capability() {
	srv := exampleRemote()
	defer srv.Close()
	ctx := context.Background()
	c, err := client.New(ctx, srv.URL, client.AllowLoopback())
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(c.Capability(client.OpCancel))
	_, _ = c.Cancel(ctx, "task-7")
	fmt.Println(c.Capability(client.OpCancel))
	_, err = c.Cancel(ctx, "task-8") // sends nothing
	fmt.Println(err)
	// Output:
	// tentative
	// unavailable
	// a2a client: operation unavailable: cancel (CancelTask answered method-not-found before)
}

func ExampleClient_Card() {
	srv := exampleRemote()
	defer srv.Close()
	c, err := client.New(context.Background(), srv.URL, client.AllowLoopback())
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range c.Card().Skills {
		fmt.Println(s.ID, "-", s.Description) // the remote's words: data, never instructions
	}
	// Output: job.start - Starts a brief
}

func ExampleClient_Binding() {
	srv := exampleRemote()
	defer srv.Close()
	c, err := client.New(context.Background(), srv.URL, client.AllowLoopback())
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(c.Binding() == client.Binding10, c.Binding() == client.Binding03)
	// Output: true false
}

func ExampleDecodeCard() {
	_, err := client.DecodeCard([]byte(`{"name":"No Skills","url":"https://a.example/a2a"}`))
	fmt.Println(err)
	card, err := client.DecodeCard([]byte(`{"name":"Agent","skills":[]}`))
	fmt.Println(card.Name, len(card.Skills), err)
	// Output:
	// a2a client: invalid agent card: no skills array
	// Agent 0 <nil>
}

func ExampleCard_Extension() {
	card, err := client.DecodeCard([]byte(`{"name":"Agent","skills":[],
		"capabilities":{"extensions":[{"uri":"urn:example:ext","params":{"level":2}}]}}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	ext, ok := card.Extension("urn:example:ext")
	fmt.Println(ok, string(ext.Params))
	// Output: true {"level":2}
}

func ExampleError() {
	srv := exampleRemote()
	defer srv.Close()
	ctx := context.Background()
	c, err := client.New(ctx, srv.URL, client.AllowLoopback())
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = c.Send(ctx, client.SendRequest{RequestID: "crash", Parts: []a2atask.Part{{Kind: "text", Text: "hi"}}})
	var e *client.Error
	if errors.As(err, &e) {
		fmt.Println(e.Code, e) // the remote's stack trace is not in it
	}
	// Output: -32603 a2a client: SendMessage: error -32603: the remote failed internally
}

func ExampleAmbiguousError() {
	srv := exampleRemote()
	defer srv.Close()
	ctx := context.Background()
	c, err := client.New(ctx, srv.URL, client.AllowLoopback(), client.WithCallTimeout(100*time.Millisecond))
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = c.Send(ctx, client.SendRequest{RequestID: "slow", Parts: []a2atask.Part{{Kind: "text", Text: "hi"}}})
	var amb *client.AmbiguousError
	if errors.As(err, &amb) {
		fmt.Println(amb.RequestID, errors.Is(err, context.DeadlineExceeded))
	}
	// Output: slow true
}

func ExampleCapability_String() {
	fmt.Println(client.CapabilityTentative, client.CapabilityAccepted, client.CapabilityUnavailable)
	// Output: tentative accepted unavailable
}

func ExampleAllowLoopback() {
	srv := exampleRemote() // http://127.0.0.1:…
	defer srv.Close()
	_, err := client.New(context.Background(), srv.URL)
	fmt.Println(errors.Is(err, client.ErrInsecureURL))
	_, err = client.New(context.Background(), srv.URL, client.AllowLoopback())
	fmt.Println(err)
	// Output:
	// true
	// <nil>
}

func ExampleAllowPrivateNetworks() {
	// 10.0.0.7 is a private address: refused without the option (before
	// any connection, since the URL names the address).
	_, err := client.New(context.Background(), "https://10.0.0.7")
	fmt.Println(errors.Is(err, client.ErrAddressRefused))
	// Output: true
}

func ExampleWithRootCAs() {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, `{"name":"TLS Agent","skills":[],"url":"https://127.0.0.1/a2a","protocolVersion":"0.3.0"}`)
	}))
	defer srv.Close()
	_, err := client.New(context.Background(), srv.URL, client.AllowLoopback())
	fmt.Println(err != nil) // an unknown certificate authority
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	c, err := client.New(context.Background(), srv.URL, client.AllowLoopback(), client.WithRootCAs(pool))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(c.Card().Name)
	// Output:
	// true
	// TLS Agent
}

func ExampleWithDiscoveryTimeout() {
	srv := exampleRemote()
	defer srv.Close()
	c, err := client.New(context.Background(), srv.URL, client.AllowLoopback(), client.WithDiscoveryTimeout(5*time.Second))
	fmt.Println(c.Card().Name, err)
	// Output: Research Agent <nil>
}

func ExampleWithCallTimeout() {
	srv := exampleRemote()
	defer srv.Close()
	ctx := context.Background()
	// A remote that thinks for minutes is normal: the default is generous.
	c, err := client.New(ctx, srv.URL, client.AllowLoopback(), client.WithCallTimeout(10*time.Minute))
	if err != nil {
		fmt.Println(err)
		return
	}
	task, err := c.GetTask(ctx, "task-7")
	fmt.Println(task.Status.State, err)
	// Output: completed <nil>
}

func ExampleWithDialTimeout() {
	_, err := client.New(context.Background(), "https://agent.example.com", client.WithDialTimeout(0))
	fmt.Println(err)
	// Output: a2a client: WithDialTimeout(0s): a timeout must be positive
}

func ExampleWithMaxResponseBytes() {
	srv := exampleRemote()
	defer srv.Close()
	_, err := client.New(context.Background(), srv.URL, client.AllowLoopback(), client.WithMaxResponseBytes(64))
	fmt.Println(errors.Is(err, client.ErrTooLarge)) // the card is larger than 64 bytes
	// Output: true
}

func ExampleWithMaxArtifacts() {
	srv := exampleRemote()
	defer srv.Close()
	ctx := context.Background()
	c, err := client.New(ctx, srv.URL, client.AllowLoopback(), client.WithMaxArtifacts(1))
	if err != nil {
		fmt.Println(err)
		return
	}
	task, err := c.GetTask(ctx, "task-7") // one artifact: within the cap
	fmt.Println(len(task.Artifacts), err)
	// Output: 1 <nil>
}

func ExampleWithHeader() {
	srv := exampleRemote()
	defer srv.Close()
	// The remote's key, sent with every request (discovery included).
	_, err := client.New(context.Background(), srv.URL, client.AllowLoopback(), client.WithHeader("X-API-Key", "sk-remote"))
	fmt.Println(err)
	// Output: <nil>
}

func ExampleWithHeaderFunc() {
	srv := exampleRemote()
	defer srv.Close()
	token := func(context.Context) (string, error) { return "a-fresh-workspace-token", nil }
	_, err := client.New(context.Background(), srv.URL, client.AllowLoopback(),
		client.WithHeaderFunc(func(ctx context.Context, h http.Header) error {
			t, err := token(ctx)
			if err != nil {
				return err // nothing is sent
			}
			h.Set("X-Supervaize-Workspace-Authorization", "Bearer "+t)
			return nil
		}))
	fmt.Println(err)
	// Output: <nil>
}

// printTrace is an observer whose transport shows the traceparent it would
// inject; the otel module's observer injects the caller's span context.
type printTrace struct{ observe.Nop }

func (printTrace) Transport(base http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if strings.HasSuffix(r.URL.Path, "/a2a") {
			fmt.Println("traceparent injected for", r.URL.Path)
		}
		return base.RoundTrip(r)
	})
}

func ExampleWithObserver() {
	srv := exampleRemote()
	defer srv.Close()
	ctx := context.Background() // a handler's context, holding its span
	c, err := client.New(ctx, srv.URL, client.AllowLoopback(), client.WithObserver(printTrace{}))
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = c.GetTask(ctx, "task-7")
	fmt.Println(err)
	// Output:
	// traceparent injected for /a2a
	// <nil>
}

func ExampleWithBinding() {
	srv := exampleRemote() // its card offers A2A 1.0 only
	defer srv.Close()
	_, err := client.New(context.Background(), srv.URL, client.AllowLoopback(), client.WithBinding(client.Binding03))
	fmt.Println(errors.Is(err, client.ErrNoBinding))
	// Output: true
}
