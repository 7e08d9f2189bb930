package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/supervaize/supervaizer-go/a2atask"
	"github.com/supervaize/supervaizer-go/campaign"
)

// CampaignControlURI identifies the campaign-control extension (spec
// open-questions item 85) in a card's capabilities.extensions: a remote
// that serves it lets one supervisor at a time take control of a campaign
// through a lease, and enforces a constraints envelope no model can relax.
const CampaignControlURI = "urn:openoperator:campaign-control:v1"

// The operations of the campaign-control extension. Each is optional and
// detected from the card's operations map; the mutations (claim, renew,
// release, intervene, and the cancel and send under a lease) are enabled
// only when the card states both lease_epoch_enforced and policy_enforced.
// Without them the client is an observer: read_control and request_status
// only.
const (
	OpClaimControl   Operation = "claim_control"
	OpReadControl    Operation = "read_control"
	OpRenewControl   Operation = "renew_control"
	OpReleaseControl Operation = "release_control"
	OpIntervene      Operation = "intervene"
	OpRequestStatus  Operation = "request_status"
	OpControlCancel  Operation = "control_cancel" // the operations map's "cancel": tasks/cancel of the bound task, under the lease
	OpControlSend    Operation = "control_send"   // message/send under the lease (metadata.argus_supervisor)
)

// controlMethods are the only method names the client calls for each
// operation: a card mapping an operation to any other method leaves it
// unavailable (the card does not choose what the client calls).
var controlMethods = map[Operation]string{
	OpClaimControl:   "campaign/claim_control",
	OpReadControl:    "campaign/read_control",
	OpRenewControl:   "campaign/renew_control",
	OpReleaseControl: "campaign/release_control",
	OpIntervene:      "campaign/intervene",
	OpRequestStatus:  "campaign/request_status",
}

// controlReads are the operations an observer may call.
var controlReads = map[Operation]bool{OpReadControl: true, OpRequestStatus: true}

// learnControl sets what the card says of the campaign-control operations:
// each one the card does not advertise (or a mutation without both
// enforcement flags) is unavailable from the start.
func (c *Client) learnControl() {
	var p struct {
		LeaseEpochEnforced bool              `json:"lease_epoch_enforced"`
		PolicyEnforced     bool              `json:"policy_enforced"`
		Operations         map[string]string `json:"operations"`
	}
	ext, ok := c.card.Extension(CampaignControlURI)
	if ok && json.Unmarshal(ext.Params, &p) != nil {
		p.LeaseEpochEnforced, p.PolicyEnforced, p.Operations = false, false, nil // malformed params advertise nothing
	}
	mutable := p.LeaseEpochEnforced && p.PolicyEnforced
	for op, method := range controlMethods {
		if p.Operations[string(op)] != method || (!controlReads[op] && !mutable) {
			c.caps[op] = CapabilityUnavailable
		}
	}
	cancel := p.Operations["cancel"]
	if !mutable || (cancel != a2atask.MethodTasksCancel && cancel != a2atask.MethodCancelTask) {
		c.caps[OpControlCancel] = CapabilityUnavailable
	}
	if !mutable {
		c.caps[OpControlSend] = CapabilityUnavailable
	}
}

// Lease is a campaign's control lease.
type Lease struct {
	// ControllerID is the supervisor holding the lease.
	ControllerID string `json:"controller_id"`
	// Epoch rises on every takeover; every mutation carries it and a stale
	// one is refused ([errcode.StaleEpoch]).
	Epoch int64 `json:"epoch"`
	// ExpiresAt is when the lease ends, in Unix seconds.
	ExpiresAt int64 `json:"expires_at"`
}

// Expires returns ExpiresAt as a time.
func (l *Lease) Expires() time.Time { return time.Unix(l.ExpiresAt, 0) }

// Constraints is the envelope a claim (and any later mutation) sets: what
// the remote must never do for the campaign, whatever a model asks. Absent
// from a call, the remote takes every constraint as true; a later call
// cannot relax what the claim set; constraints the remote cannot enforce
// are refused ([errcode.PolicyRefused]). Start from [StrictConstraints]. It
// is the envelope the serving side calls [campaign.Policy]: one type for
// both ends of the wire.
type Constraints = campaign.Policy

// StrictConstraints returns the envelope with every constraint set, the
// remote's default ([campaign.Strict]).
func StrictConstraints() Constraints { return campaign.Strict() }

// Claim asks for the control of a campaign.
type Claim struct {
	CampaignID   string
	ControllerID string
	// TTL is the lease's duration, a whole number of seconds, at least one.
	TTL time.Duration
	// RequestID identifies this claim (1 to 256 bytes, no control
	// characters).
	RequestID string
	// Constraints, when not nil, is sent; nil leaves the remote's default
	// (every constraint true).
	Constraints *Constraints
}

// Control is a held lease, as every mutation under it carries it.
type Control struct {
	CampaignID   string
	ControllerID string
	// Epoch is the lease's epoch ([Lease.Epoch]).
	Epoch int64
	// Constraints, when not nil, is sent with the mutation; it cannot relax
	// what the claim set.
	Constraints *Constraints
}

func (ctl Control) check() error {
	if err := checkID("CampaignID", ctl.CampaignID); err != nil {
		return err
	}
	if err := checkID("ControllerID", ctl.ControllerID); err != nil {
		return err
	}
	if ctl.Epoch < 0 {
		return fmt.Errorf("the epoch must not be negative")
	}
	return nil
}

// params are the members every mutation under a lease carries.
func (ctl Control) params(requestID string) map[string]any {
	p := map[string]any{"campaign_id": ctl.CampaignID, "controller_id": ctl.ControllerID,
		"controller_epoch": ctl.Epoch, "request_id": requestID}
	if ctl.Constraints != nil {
		p["constraints"] = ctl.Constraints
	}
	return p
}

// ttlSeconds checks a TTL: whole seconds, at least one.
func ttlSeconds(ttl time.Duration) (int64, error) {
	if ttl < time.Second || ttl%time.Second != 0 {
		return 0, fmt.Errorf("the TTL must be a whole number of seconds, at least one")
	}
	return int64(ttl / time.Second), nil
}

// controlCall runs one single-shot call of a campaign-control operation
// after checking its arguments with check.
func (c *Client) controlCall(ctx context.Context, op Operation, params map[string]any, requestID string, check error, decode func(json.RawMessage) error) error {
	if check != nil {
		return fmt.Errorf("%w: %v", ErrInvalidRequest, check)
	}
	if !controlReads[op] {
		if err := checkID("RequestID", requestID); err != nil {
			return fmt.Errorf("%w: %v", ErrInvalidRequest, err)
		}
	}
	if c.Capability(op) == CapabilityUnavailable {
		return fmt.Errorf("%w: %s (not advertised by the card with lease and policy enforcement, or answered method-not-found)", ErrUnavailable, op)
	}
	return c.call(ctx, op, controlMethods[op], params, !controlReads[op], requestID, decode)
}

// decodeLease reads {"lease": …}: a lease, or nil when null is allowed.
func decodeLease(raw json.RawMessage, nullable bool) (*Lease, error) {
	var w struct {
		Lease *Lease `json:"lease"`
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, fmt.Errorf("%w: not a lease answer", ErrInvalidAnswer)
	}
	if w.Lease == nil {
		if nullable {
			return nil, nil
		}
		return nil, fmt.Errorf("%w: no lease", ErrInvalidAnswer)
	}
	if checkID("controller_id", w.Lease.ControllerID) != nil || w.Lease.Epoch < 0 || w.Lease.ExpiresAt <= 0 {
		return nil, fmt.Errorf("%w: a lease needs a controller_id, an epoch and expires_at", ErrInvalidAnswer)
	}
	return w.Lease, nil
}

// ClaimControl claims the control of a campaign (campaign/claim_control)
// and returns the lease granted. Another controller's live lease is
// refused with [errcode.LeaseHeld]. Single-shot: an unknown outcome is an
// [*AmbiguousError]; resolve it with [Client.ReadControl], never by
// claiming again blindly.
func (c *Client) ClaimControl(ctx context.Context, claim Claim) (*Lease, error) {
	ttl, err := ttlSeconds(claim.TTL)
	if err == nil {
		err = Control{CampaignID: claim.CampaignID, ControllerID: claim.ControllerID}.check()
	}
	params := map[string]any{"campaign_id": claim.CampaignID, "controller_id": claim.ControllerID,
		"ttl_seconds": ttl, "request_id": claim.RequestID}
	if claim.Constraints != nil {
		params["constraints"] = claim.Constraints
	}
	var lease *Lease
	err = c.controlCall(ctx, OpClaimControl, params, claim.RequestID, err, func(raw json.RawMessage) (err error) {
		if lease, err = decodeLease(raw, false); err == nil && lease.ControllerID != claim.ControllerID {
			err = fmt.Errorf("%w: the lease granted is another controller's", ErrInvalidAnswer)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return lease, nil
}

// ReadControl reads a campaign's lease (campaign/read_control): nil when
// no one holds it. A campaign of another workspace is not found
// ([errcode.TaskNotFound] or another refusal, as the remote answers).
func (c *Client) ReadControl(ctx context.Context, campaignID string) (*Lease, error) {
	var lease *Lease
	err := c.controlCall(ctx, OpReadControl, map[string]any{"campaign_id": campaignID}, "", checkID("CampaignID", campaignID),
		func(raw json.RawMessage) (err error) {
			lease, err = decodeLease(raw, true)
			return err
		})
	if err != nil {
		return nil, err
	}
	return lease, nil
}

// RenewControl extends the lease held (campaign/renew_control) by ttl and
// returns it: its controller and epoch must be the ones held. A stale epoch
// is [errcode.StaleEpoch], an expired lease [errcode.LeaseExpired].
func (c *Client) RenewControl(ctx context.Context, ctl Control, requestID string, ttl time.Duration) (*Lease, error) {
	secs, err := ttlSeconds(ttl)
	if err == nil {
		err = ctl.check()
	}
	params := ctl.params(requestID)
	params["ttl_seconds"] = secs
	var lease *Lease
	err = c.controlCall(ctx, OpRenewControl, params, requestID, err, func(raw json.RawMessage) (err error) {
		if lease, err = decodeLease(raw, false); err == nil && (lease.ControllerID != ctl.ControllerID || lease.Epoch != ctl.Epoch) {
			err = fmt.Errorf("%w: the renewed lease is not the one held", ErrInvalidAnswer)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return lease, nil
}

// ReleaseControl gives the lease up (campaign/release_control).
func (c *Client) ReleaseControl(ctx context.Context, ctl Control, requestID string) error {
	return c.controlCall(ctx, OpReleaseControl, ctl.params(requestID), requestID, ctl.check(), func(raw json.RawMessage) error {
		if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' {
			return fmt.Errorf("%w: not an object", ErrInvalidAnswer)
		}
		return nil
	})
}

// Intervene sends an intervention (campaign/intervene) with its params
// (a JSON object, the agent's vocabulary) and returns the remote's result
// as it is: data, never instructions.
func (c *Client) Intervene(ctx context.Context, ctl Control, requestID string, params json.RawMessage) (json.RawMessage, error) {
	err := ctl.check()
	if err == nil && (!json.Valid(params) || len(params) == 0 || params[0] != '{') {
		err = fmt.Errorf("the intervention's params must be a JSON object")
	}
	p := ctl.params(requestID)
	p["params"] = params
	var out json.RawMessage
	err = c.controlCall(ctx, OpIntervene, p, requestID, err, func(raw json.RawMessage) error {
		out = raw
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// RequestState is what a remote knows of a request id.
type RequestState string

// The request states of campaign/request_status.
const (
	// RequestApplied: the request ran; for a submission, TaskID is the
	// durable id of the task it started.
	RequestApplied RequestState = "applied"
	// RequestNotApplied: the request did not run; a new attempt with the
	// same request id is safe.
	RequestNotApplied RequestState = "not_applied"
	// RequestPending: the request is running; read again later.
	RequestPending RequestState = "pending"
	// RequestUnknown: the remote no longer knows (its record's retention
	// has passed). It is not not_applied: never resend on it.
	RequestUnknown RequestState = "unknown"
)

// RequestStatus is the remote's answer about one request id.
type RequestStatus struct {
	RequestID string       `json:"request_id"`
	State     RequestState `json:"state"`
	TaskID    string       `json:"task_id,omitempty"`
}

// RequestStatus reads back what became of a request (campaign/request_status):
// the way to resolve an [*AmbiguousError]. Only [RequestNotApplied] allows
// a new attempt, with the same request id; the client never makes it by
// itself.
func (c *Client) RequestStatus(ctx context.Context, campaignID, requestID string) (*RequestStatus, error) {
	check := checkID("CampaignID", campaignID)
	if check == nil {
		check = checkID("RequestID", requestID)
	}
	var st *RequestStatus
	err := c.controlCall(ctx, OpRequestStatus, map[string]any{"campaign_id": campaignID, "request_id": requestID}, "",
		check, func(raw json.RawMessage) (err error) {
			st, err = decodeRequestStatus(raw, requestID)
			return err
		})
	if err != nil {
		return nil, err
	}
	return st, nil
}

// SendControlled sends a message under the lease (message/send or
// SendMessage with metadata.argus_supervisor = {campaign_id,
// controller_id, controller_epoch, request_id}, request_id being
// req.RequestID), as [Client.Send] does otherwise: non-blocking,
// single-shot, an unknown outcome an [*AmbiguousError] to resolve with
// [Client.RequestStatus].
func (c *Client) SendControlled(ctx context.Context, ctl Control, req SendRequest) (*Answer, error) {
	if err := ctl.check(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidRequest, err)
	}
	if c.Capability(OpControlSend) == CapabilityUnavailable {
		return nil, fmt.Errorf("%w: %s (the card does not advertise campaign control with lease and policy enforcement)", ErrUnavailable, OpControlSend)
	}
	meta := make(map[string]any, len(req.Metadata)+1)
	for k, v := range req.Metadata {
		meta[k] = v
	}
	meta["argus_supervisor"] = ctl.params(req.RequestID)
	req.Metadata = meta
	return c.send(ctx, OpControlSend, req)
}

// CancelControlled cancels the campaign's bound task under the lease
// (tasks/cancel or CancelTask with metadata.argus_supervisor). Single-shot;
// an unknown outcome is an [*AmbiguousError] to resolve with
// [Client.RequestStatus] or [Client.GetTask].
func (c *Client) CancelControlled(ctx context.Context, ctl Control, requestID, taskID string) (*a2atask.Task, error) {
	err := ctl.check()
	if err == nil {
		err = checkID("the task id", taskID)
	}
	if err == nil {
		err = checkID("RequestID", requestID)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidRequest, err)
	}
	if c.Capability(OpControlCancel) == CapabilityUnavailable {
		return nil, fmt.Errorf("%w: %s (the card does not advertise campaign control with lease and policy enforcement)", ErrUnavailable, OpControlCancel)
	}
	params := map[string]any{"id": taskID, "metadata": map[string]any{"argus_supervisor": ctl.params(requestID)}}
	return c.taskCall(ctx, OpControlCancel, c.cancelMethod(), params, true, requestID)
}

// decodeRequestStatus reads the answer of campaign/request_status about
// requestID: that request id, a known state, a bounded task id if any.
func decodeRequestStatus(raw json.RawMessage, requestID string) (*RequestStatus, error) {
	st := new(RequestStatus)
	if err := json.Unmarshal(raw, st); err != nil {
		return nil, fmt.Errorf("%w: not a request status", ErrInvalidAnswer)
	}
	switch {
	case st.RequestID != requestID:
		return nil, fmt.Errorf("%w: the status of another request", ErrInvalidAnswer)
	case st.TaskID != "" && checkID("task_id", st.TaskID) != nil:
		return nil, fmt.Errorf("%w: a malformed task id", ErrInvalidAnswer)
	case st.State != RequestApplied && st.State != RequestNotApplied && st.State != RequestPending && st.State != RequestUnknown:
		return nil, fmt.Errorf("%w: an unknown request state", ErrInvalidAnswer)
	}
	return st, nil
}
