package client_test

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/a2a/client"
	"github.com/supervaize/supervaizer-go/a2atask"
)

// rpcCall is one JSON-RPC request a test remote received.
type rpcCall struct {
	Method string          `json:"method"`
	ID     json.RawMessage `json:"id"`
	Params json.RawMessage `json:"params"`
	Header http.Header     `json:"-"`
}

// remote is a programmable A2A remote: it serves card (with {{base}}
// replaced by its URL) at /.well-known/agent-card.json, answers POST /a2a
// with answer, and counts the hits of every path.
type remote struct {
	srv    *httptest.Server
	card   string
	answer func(w http.ResponseWriter, call rpcCall)

	mu    sync.Mutex
	hits  map[string]int
	calls []rpcCall
}

// card10 and card03 are minimal cards of the two bindings.
const (
	card10 = `{"name":"Remote","skills":[],"supportedInterfaces":[{"url":"{{base}}/a2a","protocolBinding":"JSONRPC","protocolVersion":"1.0"}]}`
	card03 = `{"name":"Remote","skills":[],"url":"{{base}}/a2a","protocolVersion":"0.3.0","preferredTransport":"JSONRPC"}`
)

func newRemote(t *testing.T, tls bool, card string, answer func(w http.ResponseWriter, call rpcCall)) *remote {
	t.Helper()
	r := &remote{card: card, answer: answer, hits: map[string]int{}}
	h := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.hits[req.URL.Path]++
		r.mu.Unlock()
		switch {
		case req.URL.Path == "/.well-known/agent-card.json" && r.card != "":
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, strings.ReplaceAll(r.card, "{{base}}", r.srv.URL))
		case req.URL.Path == "/a2a" && req.Method == http.MethodPost:
			var call rpcCall
			body, _ := io.ReadAll(req.Body)
			if err := json.Unmarshal(body, &call); err != nil {
				http.Error(w, "bad request", http.StatusBadRequest)
				return
			}
			call.Header = req.Header.Clone()
			r.mu.Lock()
			r.calls = append(r.calls, call)
			r.mu.Unlock()
			r.answer(w, call)
		default:
			http.NotFound(w, req)
		}
	})
	if tls {
		r.srv = httptest.NewTLSServer(h)
	} else {
		r.srv = httptest.NewServer(h)
	}
	t.Cleanup(r.srv.Close)
	return r
}

func (r *remote) hit(path string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.hits[path]
}

func (r *remote) received() []rpcCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]rpcCall(nil), r.calls...)
}

// opts are the options that let a client reach the test remote: loopback,
// and its certificate when it speaks TLS.
func (r *remote) opts(more ...client.Option) []client.Option {
	o := []client.Option{client.AllowLoopback()}
	if r.srv.TLS != nil {
		pool := x509.NewCertPool()
		pool.AddCert(r.srv.Certificate())
		o = append(o, client.WithRootCAs(pool))
	}
	return append(o, more...)
}

func (r *remote) dial(t *testing.T, more ...client.Option) *client.Client {
	t.Helper()
	c, err := client.New(context.Background(), r.srv.URL, r.opts(more...)...)
	require.NoError(t, err)
	return c
}

// reply writes a JSON-RPC result answering call.
func reply(w http.ResponseWriter, call rpcCall, result string) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(call.ID)+`,"result":`+result+`}`)
}

// replyError writes a JSON-RPC error answering call.
func replyError(w http.ResponseWriter, call rpcCall, code int, message string, data string) {
	w.Header().Set("Content-Type", "application/json")
	e, _ := json.Marshal(message)
	if data == "" {
		data = "null"
	}
	_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(call.ID)+`,"error":{"code":`+itoa(code)+`,"message":`+string(e)+`,"data":`+data+`}}`)
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// task03 and task10 are a working task in each binding.
const (
	task03 = `{"kind":"task","id":"task-1","contextId":"ctx-1","status":{"state":"working"},"history":[{"kind":"message","role":"user","messageId":"m","parts":[{"kind":"text","text":"hi"}]}]}`
	task10 = `{"id":"task-1","contextId":"ctx-1","status":{"state":"TASK_STATE_WORKING"}}`
)

// tasks answers every task method with a working task of the binding.
func tasks(task string) func(w http.ResponseWriter, call rpcCall) {
	return func(w http.ResponseWriter, call rpcCall) {
		if call.Method == "SendMessage" {
			reply(w, call, `{"task":`+task+`}`)
			return
		}
		reply(w, call, task)
	}
}

func dataPart(t *testing.T, v any) client.SendRequest {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return client.SendRequest{RequestID: "req-1", Parts: []a2atask.Part{{Kind: "data", Data: b}}}
}
