// Package campaign is the agent's side of the campaign-control extension
// (urn:openoperator:campaign-control:v1, spec open-questions item 85): what
// an agent opts in with ([Control], installed by
// supervaizer.Agent.ServeCampaignControl), the constraints policy its
// handlers enforce ([Policy], read with [PolicyFrom]) and the interventions
// a supervisor sends ([Intervention]). The SDK serves the six campaign/*
// methods, keeps the leases in the controller's store and refuses every
// mutation with a stale epoch before any handler runs; docs/supervised.md
// says it for authors. The supervisor's side is package a2a/client.
package campaign

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/supervaize/supervaizer-go/internal/callstate"
)

// URI identifies the campaign-control extension in a card's
// capabilities.extensions.
const URI = "urn:openoperator:campaign-control:v1"

// Policy is the constraints envelope of a campaign: what the agent must
// never do for it, whatever a model or a supervisor's params ask. A claim
// sets it (sent without one, every constraint is true); no later call can
// relax it. As [Control.Enforces] it is what the agent's handlers enforce.
type Policy struct {
	RemoteOnly          bool `json:"remote_only"`
	NoPublication       bool `json:"no_publication"`
	NoDestructiveGit    bool `json:"no_destructive_git"`
	NoCredentialChanges bool `json:"no_credential_changes"`
	NoForcePush         bool `json:"no_force_push"`
	NoMerge             bool `json:"no_merge"`
}

// Strict is the policy with every constraint set: a claim's envelope when
// it sends none.
func Strict() Policy {
	return Policy{RemoteOnly: true, NoPublication: true, NoDestructiveGit: true,
		NoCredentialChanges: true, NoForcePush: true, NoMerge: true}
}

// Intervention is a campaign/intervene call, as the agent's handler
// receives it once the lease has been checked.
type Intervention struct {
	// WorkspaceID is the verified workspace of the caller.
	WorkspaceID string
	CampaignID  string
	// ControllerID and Epoch are the lease the call holds.
	ControllerID string
	Epoch        int64
	// RequestID identifies the call.
	RequestID string
	// Params are the operation's params: a JSON object in the agent's
	// vocabulary, as the supervisor sent them (untrusted data).
	Params json.RawMessage
	// Policy is the campaign's constraints envelope: what the agent must
	// not do, whatever Params ask.
	Policy Policy
}

// Control opts an agent in to the extension
// (supervaizer.Agent.ServeCampaignControl).
type Control struct {
	// Enforces is the policy the agent's handlers enforce: the constraints
	// they honour (read with [PolicyFrom]). A claim or mutation asking for
	// a constraint not set here is refused (errcode.PolicyRefused). At
	// least one must be set: an agent that enforces nothing cannot serve
	// the extension, and its card does not advertise it.
	Enforces Policy
	// Intervene serves campaign/intervene; its result (a JSON object) is
	// the answer. Nil: the method is not served (method not found). An
	// error wrapping [ErrPolicy] is answered errcode.PolicyRefused, any
	// other an internal error (its text is logged, never sent).
	Intervene func(ctx context.Context, in Intervention) (json.RawMessage, error)
}

// ErrPolicy is what an intervention handler returns (wrapped) when the
// campaign's policy forbids what the intervention asks.
var ErrPolicy = errors.New("refused by the campaign policy")

// PolicyFrom returns the policy of the campaign a handler runs under (an
// action started or stopped by message/send or tasks/cancel under a
// lease, an intervention): ok is false outside any campaign.
func PolicyFrom(ctx context.Context) (Policy, bool) {
	p, ok := ctx.Value(callstate.PolicyKey{}).(Policy)
	return p, ok
}
