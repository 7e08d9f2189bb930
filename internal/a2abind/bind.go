// Package a2abind holds the A2A JSON-RPC bindings served on POST /a2a: A2A
// 0.3 (message/send, message/stream, tasks/get, tasks/cancel,
// tasks/resubscribe) and A2A 1.0 (SendMessage, SendStreamingMessage,
// GetTask, CancelTask, SubscribeToTask), spec open-questions item 65.
//
// An A2A call is a translation: its params into the
// supervaizer/action.invoke request it maps to, run by the one pipeline of
// package supervaizer through [Pipeline] (admission and token scopes,
// handler lookup, input schema, idempotency record, result validation, task
// view and SSE publish all happen there, once), and the validated v2 result
// back into a Task or a Message. What is the same in both versions is
// written once here; where they differ, each version's converter ([binding]:
// v03.go, v10.go) says so once. The task view the answers are read from is
// package taskview's, beside the pipeline.
package a2abind

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/supervaize/supervaizer-go/a2atask"
	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/conversation"
	"github.com/supervaize/supervaizer-go/errcode"
	"github.com/supervaize/supervaizer-go/internal/jsonrpc"
	"github.com/supervaize/supervaizer-go/internal/taskview"
	"github.com/supervaize/supervaizer-go/internal/wire"
)

// Pipeline is what the root gives the bindings: the one pipeline and the
// few facts about the served agents a translation needs.
type Pipeline interface {
	// Invoke runs req through the pipeline as a call of c (its input at
	// node input of c.T when input >= 0) and appends the validated result
	// to dst. job is the task view's reading of the result when read is
	// true (the result had a job_state).
	Invoke(c *Call, req *contracts.ActionRequest, input int32, dst []byte) (raw []byte, job taskview.Job, read bool, err *jsonrpc.Error)
	// Refresh runs the agent's job.sync request req in process, as the
	// verified workspace vc of a call already authorized for the task (no
	// token is read: the caller's token need not carry job.sync's scope,
	// spec item 72), under ctx; the result updates the task view. job is
	// the view's reading of the result when read is true.
	Refresh(ctx context.Context, vc *contracts.VerifiedWorkspaceContext, req *contracts.ActionRequest) (job taskview.Job, read bool, err *jsonrpc.Error)
	// TokenLeeway is the clock leeway of workspace tokens: a stream ends
	// at its token's exp plus it.
	TokenLeeway() time.Duration
	// Authorize verifies the call's workspace token for agent slug in the
	// workspace workspaceID with scopes (local mode: the bypass).
	Authorize(c *Call, workspaceID, slug string, scopes []string) (*contracts.VerifiedWorkspaceContext, *jsonrpc.Error)
	// PrimaryAgent is the slug of the agent a call naming none addresses.
	PrimaryAgent() string
	// Supervised admits a call made under a campaign lease (its
	// metadata.argus_supervisor, sup): a send (taskID "") or the cancel of
	// task taskID, of agent slug. It returns the context the call runs
	// with (the campaign's policy in it) and done, called once the call
	// ended: with the job id when it succeeded, "" otherwise.
	Supervised(c *Call, slug string, sup []byte, messageID, action, taskID string) (context.Context, func(jobID string), *jsonrpc.Error)
	// LocalAuth reports the local-mode bypass of workspace authorization.
	LocalAuth() bool
	// HasAction reports whether agent slug has a handler for action.
	HasAction(slug, action string) bool
	// IsJobAction reports whether an error result of action is a failed
	// task: the agent's start action, its job.sync and job.stop.
	IsJobAction(slug, action string) bool
	// Tasks is the task view.
	Tasks() *taskview.View
	// Blocking bounds a blocking message/send or SendMessage (0: the
	// default, a2atask.DefaultBlockingTimeout).
	Blocking() time.Duration
	// Logger is the controller's logger.
	Logger() *slog.Logger
	// Conversation is the conversation action of agent slug, "" for none.
	Conversation(slug string) string
	// History is the conversations' history.
	History() *History
}

// Call is one call of an A2A method, as the root hands it over.
type Call struct {
	R      *http.Request       // the request (its context is the call's)
	W      http.ResponseWriter // the response (a stream writes its events there)
	T      *wire.Tape          // the body's one parse
	Params int32               // the node of params on T, -1 when absent
	ID     json.RawMessage     // the JSON-RPC id
	Ref    any                 // the root's own call, handed back to Pipeline
	// Usage is the token usage the handler of the last Invoke reported.
	Usage conversation.Usage
	// Emit, when set before Invoke, receives the handler's partial text.
	Emit func(text string)
}

// Method is one A2A method: an entry of the root's method table. Unary
// serves a method answered with one JSON-RPC response (it appends the
// result to dst), Stream one answered with an event stream; one of them is
// set.
type Method struct {
	Name    string
	Binding string // "a2a/0.3" or "a2a/1.0"
	// TokenScope is the scope a workspace token needs for the call, with
	// the id of the action it maps to: action.invoke's.
	TokenScope string
	Unary      func(p Pipeline, c *Call, dst []byte) ([]byte, *jsonrpc.Error)
	Stream     func(p Pipeline, c *Call)
}

// unary is the Method of a unary method whose params decode reads.
func unary[P any](b binding, name string, decode func(c *Call) (P, *jsonrpc.Error),
	handle func(p Pipeline, c *Call, params P, dst []byte) ([]byte, *jsonrpc.Error)) Method {
	return Method{Name: name, Binding: b.name(), TokenScope: jsonrpc.MethodActionInvoke,
		Unary: func(p Pipeline, c *Call, dst []byte) ([]byte, *jsonrpc.Error) {
			params, err := decode(c)
			if err != nil {
				return dst, err
			}
			return handle(p, c, params, dst)
		}}
}

// stream is the Method of a streaming method: handle answers the params'
// error as the stream's one event.
func stream[P any](b binding, name string, decode func(c *Call) (P, *jsonrpc.Error),
	handle func(p Pipeline, c *Call, params P, err *jsonrpc.Error)) Method {
	return Method{Name: name, Binding: b.name(), TokenScope: jsonrpc.MethodActionInvoke,
		Stream: func(p Pipeline, c *Call) {
			params, err := decode(c)
			handle(p, c, params, err)
		}}
}

// Methods lists the methods of both bindings.
func Methods() []Method {
	return append(v03{}.methods(), v10{}.methods()...)
}

// taskMethods are the methods both bindings serve, under b's names.
func taskMethods(b binding, send, sendStream, get, cancel, resubscribe string) []Method {
	return []Method{
		unary(b, send, decodeMessage(b), sendMethod(b)),
		stream(b, sendStream, decodeMessage(b), streamSendMethod(b)),
		unary(b, get, decodeTask, getMethod(b)),
		unary(b, cancel, decodeTask, cancelMethod(b)),
		stream(b, resubscribe, decodeTask, streamResumeMethod(b)),
	}
}

// refused is the Method of a method the bindings name but do not offer:
// it answers err, once the A2A-Version header is one they speak.
func refused(b binding, name string, err func() *jsonrpc.Error) Method {
	return Method{Name: name, Binding: b.name(), TokenScope: jsonrpc.MethodActionInvoke,
		Unary: func(_ Pipeline, c *Call, dst []byte) ([]byte, *jsonrpc.Error) {
			if rpcErr := versionError(c.R); rpcErr != nil {
				return dst, rpcErr
			}
			return dst, err()
		}}
}

// pushNotSupported is the -32003 answer of the push notification methods.
func pushNotSupported() *jsonrpc.Error {
	return &jsonrpc.Error{Code: errcode.PushNotificationNotSupported, Message: "Push Notification is not supported"}
}

// Unknown answers a method no table entry has: -32003 for the 0.3 push
// notification methods (tasks/pushNotificationConfig/…), -32601 for any
// other, once the A2A-Version header is one the bindings speak.
func Unknown(c *Call, method string) *jsonrpc.Error {
	if rpcErr := versionError(c.R); rpcErr != nil {
		return rpcErr
	}
	if strings.HasPrefix(method, a2atask.MethodPushConfigPrefix) {
		return pushNotSupported()
	}
	return &jsonrpc.Error{Code: errcode.MethodNotFound, Message: "Method not found: " + method}
}

// versionHeaderKey is the A2A-Version header's key in an http.Header
// ("A2a-Version": canonicalized once, not per call).
var versionHeaderKey = http.CanonicalHeaderKey(a2atask.HeaderVersion)

// versionError answers a call whose A2A-Version header names a protocol
// version neither binding speaks (A2A 1.0: VersionNotSupportedError). An
// absent or empty header, and any 0.3.x or 1.0.x, is served; the method
// name chooses the binding.
func versionError(r *http.Request) *jsonrpc.Error {
	vals := r.Header[versionHeaderKey]
	if len(vals) == 0 {
		return nil
	}
	v := strings.TrimSpace(vals[0])
	if v == "" || majorMinor(v) == a2atask.ProtocolVersion03 || majorMinor(v) == a2atask.ProtocolVersion10 {
		return nil
	}
	return &jsonrpc.Error{Code: errcode.VersionNotSupported, Message: "Version not supported: " + strconv.Quote(v),
		Data: map[string]any{"version": v, "supported": []string{a2atask.ProtocolVersion10, a2atask.ProtocolVersion03}}}
}

// majorMinor is the major.minor of a version ("1.0.2" → "1.0", "1" →
// "1.0", "00.3" → "0.3"); "" when v does not start with numbers.
func majorMinor(v string) string {
	major, rest, _ := strings.Cut(v, ".")
	minor, _, _ := strings.Cut(rest, ".")
	if minor == "" {
		minor = "0"
	}
	ma, err := strconv.ParseUint(major, 10, 32)
	if err != nil {
		return ""
	}
	mi, err := strconv.ParseUint(minor, 10, 32)
	if err != nil {
		return ""
	}
	return strconv.FormatUint(ma, 10) + "." + strconv.FormatUint(mi, 10)
}
