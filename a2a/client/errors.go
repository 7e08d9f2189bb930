package client

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/supervaize/supervaizer-go/errcode"
)

// Refusals. Every error the client returns for one of them wraps the
// sentinel, so that errors.Is tells them apart.
var (
	// ErrInsecureURL: a URL that is not https, or plain http to an address
	// that is not a loopback one (plain http to loopback needs
	// [AllowLoopback]), or a URL carrying credentials.
	ErrInsecureURL = errors.New("a2a client: insecure URL")
	// ErrAddressRefused: the dial guard refused the address, before any
	// connection: link-local and cloud metadata addresses always,
	// loopback without [AllowLoopback], private ranges without
	// [AllowPrivateNetworks].
	ErrAddressRefused = errors.New("a2a client: address refused")
	// ErrRedirect: the remote answered with a redirect, which the client
	// never follows.
	ErrRedirect = errors.New("a2a client: redirect refused")
	// ErrTooLarge: an answer larger than the response cap
	// ([WithMaxResponseBytes]), or a task with more artifacts than
	// [WithMaxArtifacts] allows.
	ErrTooLarge = errors.New("a2a client: answer too large")
	// ErrInvalidCard: the Agent Card is not a JSON object with a name and a
	// skills array, or names no endpoint the client can use.
	ErrInvalidCard = errors.New("a2a client: invalid agent card")
	// ErrNoCard: neither discovery URL served a card (both answered 404
	// or 410).
	ErrNoCard = errors.New("a2a client: no agent card")
	// ErrNoBinding: the card names neither an A2A 1.0 nor an A2A 0.3
	// JSON-RPC interface.
	ErrNoBinding = errors.New("a2a client: no supported A2A binding")
	// ErrInvalidAnswer: the remote's answer is not the JSON-RPC response
	// the call expects (wrong id, neither result nor error, a malformed
	// task, ...).
	ErrInvalidAnswer = errors.New("a2a client: invalid answer")
	// ErrInvalidRequest: the call's own arguments are invalid (an empty or
	// overlong request id, no part, ...); nothing was sent.
	ErrInvalidRequest = errors.New("a2a client: invalid request")
	// ErrUnavailable: the remote does not serve the operation. A
	// method-not-found answer (-32601) marks the operation unavailable for
	// the client's life: later calls fail with this error at once, sending
	// nothing.
	ErrUnavailable = errors.New("a2a client: operation unavailable")
)

// Error is a refusal by the remote: a JSON-RPC error answer (Code), or an
// HTTP status other than 200 (HTTPStatus). The remote's own message and data
// are never read, logged or surfaced: they may hold anything, a stack trace
// or a prompt injection included. Error returns a fixed message chosen by
// the code.
type Error struct {
	// Method is the JSON-RPC method called, or "GET" for discovery.
	Method string
	// Code is the JSON-RPC error code; 0 when the refusal is an HTTP status.
	Code errcode.Code
	// HTTPStatus is the HTTP status of the answer when it is not 200, else 0.
	HTTPStatus int
}

// Error returns "a2a client: <method>: <fixed message>".
func (e *Error) Error() string {
	return "a2a client: " + e.Method + ": " + e.safeMessage()
}

// Is reports whether target is [ErrUnavailable] and the code is
// method-not-found (-32601).
func (e *Error) Is(target error) bool {
	return target == ErrUnavailable && e.Code == errcode.MethodNotFound
}

// codeMessages are the fixed messages of the JSON-RPC codes the client
// knows: those of JSON-RPC 2.0, of A2A and of Supervaizer, and those of
// the campaign-control extension.
var codeMessages = map[errcode.Code]string{
	errcode.ParseError:                     "the remote could not parse the request",
	errcode.InvalidRequest:                 "the remote refused the request as invalid",
	errcode.MethodNotFound:                 "the remote does not serve this method",
	errcode.InvalidParams:                  "the remote refused the parameters",
	errcode.InternalError:                  "the remote failed internally",
	errcode.TaskNotFound:                   "task not found",
	errcode.TaskNotCancelable:              "the task cannot be canceled",
	errcode.PushNotificationNotSupported:   "push notifications are not supported",
	errcode.UnsupportedOperation:           "the remote does not support this operation",
	errcode.ContentTypeNotSupported:        "the remote does not accept this content type",
	errcode.InvalidAgentResponse:           "the remote reported an invalid agent response",
	errcode.ExtendedAgentCardNotConfigured: "the remote has no extended agent card",
	errcode.VersionNotSupported:            "the remote does not speak this A2A version",
	errcode.ActionNotRegistered:            "the remote has no such action",
	errcode.SurfaceNotRegistered:           "the remote has no such surface",
	errcode.Unauthorized:                   "the remote refused the workspace authorization",
	errcode.LeaseHeld:                      "the lease is held by another controller",
	errcode.StaleEpoch:                     "the controller epoch is stale",
	errcode.LeaseExpired:                   "the lease has expired",
	errcode.PolicyRefused:                  "refused by the remote's constraints policy",
}

func (e *Error) safeMessage() string {
	if e.Code == 0 {
		switch {
		case e.HTTPStatus == http.StatusUnauthorized:
			return "HTTP 401: the remote refused the credentials"
		case e.HTTPStatus == http.StatusForbidden:
			return "HTTP 403: the credentials lack a scope the remote requires"
		case e.HTTPStatus == http.StatusNotFound:
			return "HTTP 404: not found"
		case e.HTTPStatus == http.StatusRequestEntityTooLarge:
			return "HTTP 413: the request is too large for the remote"
		case e.HTTPStatus == http.StatusTooManyRequests || e.HTTPStatus == http.StatusServiceUnavailable:
			return "HTTP " + strconv.Itoa(e.HTTPStatus) + ": the remote is busy, try later"
		case e.HTTPStatus >= 500:
			return "HTTP " + strconv.Itoa(e.HTTPStatus) + ": the remote failed"
		}
		return "HTTP " + strconv.Itoa(e.HTTPStatus) + ": unexpected status"
	}
	if m, ok := codeMessages[e.Code]; ok {
		return "error " + strconv.Itoa(int(e.Code)) + ": " + m
	}
	return "error " + strconv.Itoa(int(e.Code))
}

// AmbiguousError is the outcome of a mutation (a send, a cancel, a
// campaign-control call) that may or may not have been applied: the request
// was written, then the answer was lost, cut, too large, malformed, late, or
// said the remote failed internally. The client never sends the request
// again by itself. Read back before deciding anything: [Client.GetTask] with
// a task id you know, or [Client.RequestStatus] with the request id where the
// remote serves campaign control. Resending is the caller's decision, with
// the same request id, once the read back says it was not applied.
type AmbiguousError struct {
	// Method is the JSON-RPC method called.
	Method string
	// RequestID is the request id of the call (the messageId of a send).
	RequestID string
	// Err is what made the outcome unknown.
	Err error
}

// Error says that the outcome is unknown and what to do.
func (e *AmbiguousError) Error() string {
	return "a2a client: " + e.Method + ": the outcome of request " + strconv.Quote(e.RequestID) +
		" is unknown (it may have been applied): read it back before any new attempt, never resend blindly: " + e.Err.Error()
}

// Unwrap returns the cause.
func (e *AmbiguousError) Unwrap() error { return e.Err }
