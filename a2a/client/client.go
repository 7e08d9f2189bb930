package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"

	"github.com/supervaize/supervaizer-go/a2atask"
	"github.com/supervaize/supervaizer-go/errcode"
)

// Client calls one remote A2A agent, safely. Build it with [New]; it is
// safe for concurrent use.
type Client struct {
	cfg      config
	t        *transport
	card     *Card
	binding  Binding
	endpoint *url.URL
	ids      atomic.Int64

	mu   sync.Mutex
	caps map[Operation]Capability
}

// New discovers the agent at base (an https URL, or http to a loopback host
// with [AllowLoopback]): it reads the Agent Card at
// base/.well-known/agent-card.json, else base/.well-known/agent.json, under
// one deadline for the whole walk ([WithDiscoveryTimeout]), checks it
// ([DecodeCard]), chooses the binding (A2A 1.0 JSON-RPC when the card offers
// it, else 0.3) and checks the endpoint the card names as it checked base:
// an endpoint the client would never connect to (plain http elsewhere than
// loopback, a link-local or cloud metadata address such as
// 169.254.169.254, ...) is refused here, before any connection to it.
func New(ctx context.Context, base string, opts ...Option) (*Client, error) {
	cfg := defaults()
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	u, err := cfg.checkURL(base)
	if err != nil {
		return nil, err
	}
	c := &Client{cfg: cfg, caps: map[Operation]Capability{}}
	c.t = newTransport(&c.cfg)
	if c.card, err = c.t.discover(ctx, u); err != nil {
		return nil, err
	}
	b, endpoint, err := c.card.chooseBinding(cfg.binding)
	if err != nil {
		return nil, err
	}
	if c.endpoint, err = cfg.checkURL(endpoint); err != nil {
		return nil, fmt.Errorf("%w (the card's endpoint)", err)
	}
	c.binding = b
	c.learnControl()
	return c, nil
}

// Card returns the remote's card as read by [New].
func (c *Client) Card() *Card { return c.card }

// Binding returns the binding chosen from the card.
func (c *Client) Binding() Binding { return c.binding }

// Operation names a logical capability of the remote.
type Operation string

// The operations of the standard A2A task methods.
const (
	OpSend   Operation = "send"   // message/send, SendMessage
	OpGet    Operation = "get"    // tasks/get, GetTask
	OpCancel Operation = "cancel" // tasks/cancel, CancelTask
)

// Capability is what the client knows of an operation of the remote.
type Capability int

// An operation is tentative until the remote accepts a call of it (a result
// or an error other than method-not-found), and unavailable for the
// client's life once the remote answers method-not-found. Nothing else
// (not the card's descriptions, not any natural language) changes it.
const (
	CapabilityTentative Capability = iota
	CapabilityAccepted
	CapabilityUnavailable
)

// String returns "tentative", "accepted" or "unavailable".
func (c Capability) String() string {
	switch c {
	case CapabilityAccepted:
		return "accepted"
	case CapabilityUnavailable:
		return "unavailable"
	}
	return "tentative"
}

// Capability returns what the client knows of op.
func (c *Client) Capability(op Operation) Capability {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.caps[op]
}

func (c *Client) learn(op Operation, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.caps[op] == CapabilityUnavailable:
	case errors.Is(err, ErrUnavailable):
		c.caps[op] = CapabilityUnavailable
	case err == nil:
		c.caps[op] = CapabilityAccepted
	default:
		// A JSON-RPC error other than method-not-found: the remote knows
		// the method.
		var e *Error
		if errors.As(err, &e) && e.Code != 0 {
			c.caps[op] = CapabilityAccepted
		}
	}
}

// call is one single-shot JSON-RPC call of op: never retried. decode reads
// the result. For a mutation whose request was written, an outcome other
// than a definite refusal is an [*AmbiguousError] naming requestID.
func (c *Client) call(ctx context.Context, op Operation, method string, params any, mutation bool, requestID string, decode func(json.RawMessage) error) error {
	if c.Capability(op) == CapabilityUnavailable {
		return fmt.Errorf("%w: %s (%s answered method-not-found before)", ErrUnavailable, op, method)
	}
	id := c.ids.Add(1)
	body, err := json.Marshal(struct {
		JSONRPC string `json:"jsonrpc"`
		ID      int64  `json:"id"`
		Method  string `json:"method"`
		Params  any    `json:"params"`
	}{"2.0", id, method, params})
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidRequest, err)
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.callTimeout)
	defer cancel()
	ex, err := c.t.do(ctx, http.MethodPost, c.endpoint, body, http.Header{
		"Content-Type": {"application/json"},
		"Accept":       {"application/json"},
		"A2a-Version":  {string(c.binding)},
	})
	if err == nil {
		var result json.RawMessage
		result, err = decodeResponse(ex.body, id)
		var rpcErr *Error
		switch {
		case errors.As(err, &rpcErr):
			rpcErr.Method = method
			if ex.status != http.StatusOK {
				rpcErr.HTTPStatus = ex.status
			}
		case ex.status != http.StatusOK:
			err = &Error{Method: method, HTTPStatus: ex.status}
		case err == nil:
			err = decode(result)
		}
	}
	c.learn(op, err)
	if err != nil && mutation && ex.wrote.Load() && ambiguous(err) {
		return &AmbiguousError{Method: method, RequestID: requestID, Err: err}
	}
	return err
}

// ambiguous reports whether a mutation that failed with err after its
// request was written may have been applied: every failure but a definite
// refusal by the remote (a JSON-RPC error other than -32603, an HTTP 4xx
// other than 408).
func ambiguous(err error) bool {
	var e *Error
	if !errors.As(err, &e) {
		return true
	}
	if e.Code == 0 {
		return e.HTTPStatus >= 500 || e.HTTPStatus == http.StatusRequestTimeout
	}
	return e.Code == errcode.InternalError
}

// SendRequest is a message for the remote.
type SendRequest struct {
	// RequestID is the caller's id for this request, sent as the message's
	// messageId: 1 to 256 bytes of UTF-8 without control characters. Keep
	// it: it is what reads the outcome back after an ambiguous send.
	RequestID string
	// TaskID and ContextID, optional, continue a task or a context.
	TaskID, ContextID string
	// Parts are the message's parts, text or data (at least one).
	Parts []a2atask.Part
	// Metadata is the call's params.metadata (optional).
	Metadata map[string]any
}

// Answer is the answer to a send: a task (Task) or an agent message
// (Message), never both.
type Answer struct {
	Task    *a2atask.Task
	Message *a2atask.Message
}

// Send sends one message, non-blocking (0.3: configuration.blocking false;
// 1.0: returnImmediately true; history length 0): the remote answers at
// once, usually with a task to read back later with [Client.GetTask]. The
// task's identity is its id (result.id) and its state result.status.state;
// a completed task is an attempt's outcome, nothing more.
//
// Send is single-shot: it never resends. When the outcome is unknown (the
// answer was lost, cut, too large, late or malformed, or the remote failed
// internally) it returns an [*AmbiguousError]: read back, and resend only
// what is known not to have been applied, with the same RequestID.
func (c *Client) Send(ctx context.Context, req SendRequest) (*Answer, error) {
	return c.send(ctx, OpSend, req)
}

func (c *Client) send(ctx context.Context, op Operation, req SendRequest) (*Answer, error) {
	params, err := c.sendParams(req)
	if err != nil {
		return nil, err
	}
	method := a2atask.MethodMessageSend
	if c.binding == Binding10 {
		method = a2atask.MethodSendMessage
	}
	var out *Answer
	err = c.call(ctx, op, method, params, true, req.RequestID, func(raw json.RawMessage) (err error) {
		out, err = decodeSendResult(raw, c.binding, c.cfg.maxArtifacts)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// sendParams checks req and builds the params of the binding.
func (c *Client) sendParams(req SendRequest) (any, error) {
	if err := checkID("RequestID", req.RequestID); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidRequest, err)
	}
	for field, v := range map[string]string{"TaskID": req.TaskID, "ContextID": req.ContextID} {
		if v != "" {
			if err := checkID(field, v); err != nil {
				return nil, fmt.Errorf("%w: %v", ErrInvalidRequest, err)
			}
		}
	}
	if len(req.Parts) == 0 {
		return nil, fmt.Errorf("%w: a message needs at least one part", ErrInvalidRequest)
	}
	parts := make([]map[string]any, 0, len(req.Parts))
	for i, p := range req.Parts {
		var part map[string]any
		switch {
		case p.Kind == "text" && p.Data == nil && p.File == nil:
			part = map[string]any{"text": p.Text}
		case p.Kind == "data" && p.Text == "" && p.File == nil && json.Valid(p.Data):
			part = map[string]any{"data": p.Data}
		default:
			return nil, fmt.Errorf("%w: part %d is neither a text part nor a data part with valid JSON", ErrInvalidRequest, i)
		}
		if c.binding == Binding03 {
			part["kind"] = p.Kind
		}
		parts = append(parts, part)
	}
	msg := map[string]any{"messageId": req.RequestID, "parts": parts}
	if req.TaskID != "" {
		msg["taskId"] = req.TaskID
	}
	if req.ContextID != "" {
		msg["contextId"] = req.ContextID
	}
	params := map[string]any{"message": msg}
	if c.binding == Binding10 {
		msg["role"] = "ROLE_USER"
		params["configuration"] = map[string]any{"returnImmediately": true, "historyLength": 0}
	} else {
		msg["kind"], msg["role"] = "message", "user"
		params["configuration"] = map[string]any{"blocking": false, "historyLength": 0}
	}
	if req.Metadata != nil {
		params["metadata"] = req.Metadata
	}
	return params, nil
}

// GetTask reads a task back (tasks/get or GetTask, history length 0). It
// changes nothing, so it is also how an ambiguous send or cancel is resolved.
func (c *Client) GetTask(ctx context.Context, id string) (*a2atask.Task, error) {
	if err := checkID("the task id", id); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidRequest, err)
	}
	method := a2atask.MethodTasksGet
	if c.binding == Binding10 {
		method = a2atask.MethodGetTask
	}
	return c.taskCall(ctx, OpGet, method, map[string]any{"id": id, "historyLength": 0}, false, "")
}

// Cancel asks the remote to cancel a task (tasks/cancel or CancelTask) and
// returns the task as the remote answers it. It is single-shot; an unknown
// outcome is an [*AmbiguousError] (its RequestID is the task id): read the
// task back with [Client.GetTask].
func (c *Client) Cancel(ctx context.Context, id string) (*a2atask.Task, error) {
	if err := checkID("the task id", id); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidRequest, err)
	}
	return c.taskCall(ctx, OpCancel, c.cancelMethod(), map[string]any{"id": id}, true, id)
}

// cancelMethod is the binding's cancel method.
func (c *Client) cancelMethod() string {
	if c.binding == Binding10 {
		return a2atask.MethodCancelTask
	}
	return a2atask.MethodTasksCancel
}

func (c *Client) taskCall(ctx context.Context, op Operation, method string, params any, mutation bool, requestID string) (*a2atask.Task, error) {
	var out *a2atask.Task
	err := c.call(ctx, op, method, params, mutation, requestID, func(raw json.RawMessage) (err error) {
		out, err = decodeTask(raw, c.binding, c.cfg.maxArtifacts)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
