package wsauth

import (
	"fmt"
	"strings"
)

// Code is a workspace authorization error code. It is
// sent to Studio as data.code of JSON-RPC error -32030; programs match on the
// code, never on the message.
type Code string

// The error codes of the workspace-token rules, in the order of the table.
const (
	// CodeNotConfigured means verification is required but not configured
	// (disabled, invalid settings, or no key source).
	CodeNotConfigured Code = "workspace_authorization_not_configured"
	// CodeMissing means there is no token in X-Supervaize-Workspace-Authorization.
	CodeMissing Code = "workspace_authorization_missing"
	// CodeMalformed means the token is not three base64url segments holding
	// UTF-8 JSON objects, or exceeds [MaxTokenBytes].
	CodeMalformed Code = "workspace_authorization_malformed"
	// CodeUnsupportedAlg means the header alg is not exactly "EdDSA".
	CodeUnsupportedAlg Code = "workspace_authorization_unsupported_alg"
	// CodeInvalidKey means the configured public key is unusable.
	CodeInvalidKey Code = "workspace_authorization_invalid_key"
	// CodeMissingKID means keys come from a JWKS and the header has no usable
	// kid (a non-empty string).
	CodeMissingKID Code = "workspace_authorization_missing_kid"
	// CodeJWKSUnavailable means the JWKS fetch failed (network, HTTP status,
	// oversized or non-JSON body).
	CodeJWKSUnavailable Code = "workspace_authorization_jwks_unavailable"
	// CodeInvalidJWKS means the JWKS body is not an object, its keys member is
	// not an array, or an entry met before the match is not an object.
	CodeInvalidJWKS Code = "workspace_authorization_invalid_jwks"
	// CodeInvalidJWK means the matching JWK is not OKP/Ed25519 or its x is not
	// the base64url encoding of 32 bytes.
	CodeInvalidJWK Code = "workspace_authorization_invalid_jwk"
	// CodeUnknownKID means no JWK carries the token's kid.
	CodeUnknownKID Code = "workspace_authorization_unknown_kid"
	// CodeBadSignature means the Ed25519 signature does not verify.
	CodeBadSignature Code = "workspace_authorization_bad_signature"
	// CodeInvalidClaims means a required claim is missing, a claim has the
	// wrong JSON type, or scopes is empty.
	CodeInvalidClaims Code = "workspace_authorization_invalid_claims"
	// CodeWrongIssuer means iss differs from the configured issuer.
	CodeWrongIssuer Code = "workspace_authorization_wrong_issuer"
	// CodeWrongAudience means aud does not match the expected audience.
	CodeWrongAudience Code = "workspace_authorization_wrong_audience"
	// CodeExpired means exp + leeway < now.
	CodeExpired Code = "workspace_authorization_expired"
	// CodeNotYetValid means iat − leeway > now.
	CodeNotYetValid Code = "workspace_authorization_not_yet_valid"
	// CodeWrongServer means server_id differs from the expected server id.
	CodeWrongServer Code = "workspace_authorization_wrong_server"
	// CodeUnknownAgent means the request's agent_slug is not served by this
	// controller.
	CodeUnknownAgent Code = "workspace_authorization_unknown_agent"
	// CodeWrongAgent means the agent_slug or agent_id claim does not match.
	CodeWrongAgent Code = "workspace_authorization_wrong_agent"
	// CodeAgentNotRegistered means the agent has no Studio agent id yet.
	CodeAgentNotRegistered Code = "workspace_authorization_agent_not_registered"
	// CodeWrongWorkspace means workspace_id differs, or both workspace slugs
	// are present and differ.
	CodeWrongWorkspace Code = "workspace_authorization_wrong_workspace"
	// CodeMissingScope means a required scope is absent from scopes.
	CodeMissingScope Code = "workspace_authorization_missing_scope"
)

// Codes lists every error code of the workspace-token rules, in table order.
func Codes() []Code {
	return []Code{
		CodeNotConfigured, CodeMissing, CodeMalformed, CodeUnsupportedAlg, CodeInvalidKey,
		CodeMissingKID, CodeJWKSUnavailable, CodeInvalidJWKS, CodeInvalidJWK, CodeUnknownKID,
		CodeBadSignature, CodeInvalidClaims, CodeWrongIssuer, CodeWrongAudience, CodeExpired,
		CodeNotYetValid, CodeWrongServer, CodeUnknownAgent, CodeWrongAgent,
		CodeAgentNotRegistered, CodeWrongWorkspace, CodeMissingScope,
	}
}

// Error is a workspace authorization failure. Message is human-readable, may
// change between versions and never contains the token.
type Error struct {
	Code    Code
	Message string
}

// Error returns the message.
func (e *Error) Error() string { return e.Message }

// Is reports whether target is an *Error with the same code, so that
// errors.Is(err, &wsauth.Error{Code: wsauth.CodeExpired}) works through
// wrapping.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// fail builds an *Error with the default message of code.
func fail(code Code) *Error { return &Error{Code: code, Message: defaultMessages[code]} }

// failf builds an *Error whose message is the default message of code
// followed by ": " and the formatted detail.
func failf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: defaultMessages[code] + ": " + fmt.Sprintf(format, args...)}
}

// missingScopes builds the CodeMissingScope error listing the missing scopes
// comma-separated.
func missingScopes(missing []string) *Error {
	return &Error{
		Code:    CodeMissingScope,
		Message: "Workspace authorization token is missing required scopes: " + strings.Join(missing, ", "),
	}
}

var defaultMessages = map[Code]string{
	CodeNotConfigured:      "Workspace authorization is required but not configured on this controller",
	CodeMissing:            "Missing X-Supervaize-Workspace-Authorization header",
	CodeMalformed:          "Malformed workspace authorization token",
	CodeUnsupportedAlg:     "Unsupported workspace authorization token algorithm (EdDSA required)",
	CodeInvalidKey:         "Invalid workspace authorization public key",
	CodeMissingKID:         "Workspace authorization token header has no kid",
	CodeJWKSUnavailable:    "Workspace authorization JWKS unavailable",
	CodeInvalidJWKS:        "Invalid workspace authorization JWKS",
	CodeInvalidJWK:         "Invalid workspace authorization JWK",
	CodeUnknownKID:         "Unknown workspace authorization key id",
	CodeBadSignature:       "Invalid workspace authorization token signature",
	CodeInvalidClaims:      "Invalid workspace authorization token claims",
	CodeWrongIssuer:        "Workspace authorization token issuer mismatch",
	CodeWrongAudience:      "Workspace authorization token audience mismatch",
	CodeExpired:            "Workspace authorization token expired",
	CodeNotYetValid:        "Workspace authorization token not yet valid",
	CodeWrongServer:        "Workspace authorization token server_id mismatch",
	CodeUnknownAgent:       "Agent is not served by this controller",
	CodeWrongAgent:         "Workspace authorization token agent mismatch",
	CodeAgentNotRegistered: "Agent has no Studio agent id yet",
	CodeWrongWorkspace:     "Workspace authorization token workspace mismatch",
	CodeMissingScope:       "Workspace authorization token is missing required scopes",
}
