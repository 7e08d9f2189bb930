package supervaizer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/supervaize/supervaizer-go/a2a"
	"github.com/supervaize/supervaizer-go/campaign"
	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/errcode"
	"github.com/supervaize/supervaizer-go/internal/a2abind"
	"github.com/supervaize/supervaizer-go/internal/callstate"
	"github.com/supervaize/supervaizer-go/internal/jsonrpc"
	"github.com/supervaize/supervaizer-go/store"
)

// The campaign-control extension (urn:openoperator:campaign-control:v1,
// spec open-questions item 85): a supervisor takes the control of a
// campaign through a lease kept in the store, and every mutation under it
// carries the lease's epoch. docs/supervised.md says it for authors.

// policyConstraints lists p's members by wire name.
func policyConstraints(p *campaign.Policy) [6]struct {
	name string
	v    *bool
} {
	return [6]struct {
		name string
		v    *bool
	}{{"remote_only", &p.RemoteOnly}, {"no_publication", &p.NoPublication}, {"no_destructive_git", &p.NoDestructiveGit},
		{"no_credential_changes", &p.NoCredentialChanges}, {"no_force_push", &p.NoForcePush}, {"no_merge", &p.NoMerge}}
}

// beyond names the constraints set in p and not in q ("" when none).
func beyond(p, q campaign.Policy) string {
	var names []string
	pc, qc := policyConstraints(&p), policyConstraints(&q)
	for i := range pc {
		if *pc[i].v && !*qc[i].v {
			names = append(names, pc[i].name)
		}
	}
	return strings.Join(names, ", ")
}

// ServeCampaignControl makes the agent serve the campaign-control
// extension (package campaign): the six campaign/* methods, and
// the A2A send and cancel under a lease. It fails when cc enforces no
// constraint. Call it before the server serves.
func (a *Agent) ServeCampaignControl(cc campaign.Control) error {
	if cc.Enforces == (campaign.Policy{}) {
		return fmt.Errorf("supervaizer: ServeCampaignControl: agent %q enforces no constraint", a.slug)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.campaign = &cc
	return nil
}

// campaignControl is the agent's extension (nil when not served).
func (a *Agent) campaignControl() *campaign.Control {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.campaign
}

// campaignExtension is the card's entry of the extension for cc.
func campaignExtension(cc *campaign.Control) a2a.AgentExtension {
	ops := map[string]string{"cancel": a2abind.CampaignCancel}
	for _, m := range campaignMethods {
		if m.op != "intervene" || cc.Intervene != nil {
			ops[m.op] = m.name
		}
	}
	params, _ := json.Marshal(map[string]any{"lease_epoch_enforced": true, "policy_enforced": true, "operations": ops,
		"constraints": cc.Enforces})
	return a2a.AgentExtension{URI: campaign.URI, Params: params,
		Description: "Campaign control: one supervisor at a time holds a campaign's lease; every mutation carries its epoch."}
}

// campaignLease is the lease record of a campaign in the store.
type campaignLease struct {
	ControllerID string          `json:"controller_id"`
	Epoch        int64           `json:"epoch"`
	ExpiresAt    int64           `json:"expires_at"`
	Released     bool            `json:"released,omitempty"`
	Policy       campaign.Policy `json:"policy"`
	Task         string          `json:"task,omitempty"` // the bound task: the job the last send under the lease started
}

// campaignRequest is what the store keeps of a request id of a campaign.
type campaignRequest struct {
	State  string `json:"state"`            // "pending" (a send or cancel running) or "applied"
	Action string `json:"action,omitempty"` // a send's action: its idempotency record tells the outcome
	TaskID string `json:"task_id,omitempty"`
	At     int64  `json:"at"` // Unix seconds of the request
}

const campaignNamespace = "campaign"

func leaseKey(ws, slug, campaign string) string {
	return store.Key(campaignNamespace, idemKeyPart(ws), slug, idemKeyPart(campaign), "lease")
}

func requestKey(ws, slug, campaign, requestID string) string {
	return store.Key(campaignNamespace, idemKeyPart(ws), slug, idemKeyPart(campaign), "request", idemKeyPart(requestID))
}

// campaignParams are the params of every campaign/* method.
type campaignParams struct {
	CampaignID      string          `json:"campaign_id"`
	ControllerID    string          `json:"controller_id"`
	ControllerEpoch *int64          `json:"controller_epoch"`
	TTLSeconds      *int64          `json:"ttl_seconds"`
	RequestID       string          `json:"request_id"`
	Constraints     json.RawMessage `json:"constraints"`
	Params          json.RawMessage `json:"params"`
	AgentSlug       string          `json:"agent_slug"`
}

// campaignMethod is one campaign/* method: its operation name and what it needs.
type campaignMethod struct {
	op, name string
	mutation bool // carries controller_id, controller_epoch, request_id
	ttl      bool
	serve    func(cs *campaigns, cx *campaignCall) (any, *Error)
}

var campaignMethods []campaignMethod

func init() {
	campaignMethods = []campaignMethod{
		{op: "claim_control", name: "campaign/claim_control", ttl: true, serve: (*campaigns).claimControl},
		{op: "read_control", name: "campaign/read_control", serve: (*campaigns).readControl},
		{op: "renew_control", name: "campaign/renew_control", mutation: true, ttl: true, serve: (*campaigns).renewControl},
		{op: "release_control", name: "campaign/release_control", mutation: true, serve: (*campaigns).releaseControl},
		{op: "intervene", name: "campaign/intervene", mutation: true, serve: (*campaigns).intervene},
		{op: "request_status", name: "campaign/request_status", serve: (*campaigns).requestStatus},
	}
}

// bindingCampaign is the binding of the campaign/* methods.
const bindingCampaign = "campaign-control"

// campaignTable is the method table's entries of the extension: each
// served like a binding's method (bindingMethod), through the narrow face of
// the server (a2aPipeline).
func campaignTable() []method {
	out := make([]method, 0, len(campaignMethods))
	for i := range campaignMethods {
		cm := &campaignMethods[i]
		out = append(out, bindingMethod(a2abind.Method{Name: cm.name, Binding: bindingCampaign, TokenScope: cm.name,
			Unary: func(p a2abind.Pipeline, bc *a2abind.Call, dst []byte) ([]byte, *jsonrpc.Error) {
				c := bc.Ref.(*Call)
				params, err := decodeCampaign(c, cm)
				if err == nil {
					dst, err = p.(*a2aPipeline).serveCampaign(c, cm, &params, dst)
				}
				return dst, toRPC(err)
			}}))
	}
	return out
}

// campaigns is the extension's state: the leases and request records in
// the server's store.
type campaigns struct {
	st        store.Store
	logger    *slog.Logger
	retention time.Duration // of the request records, the idempotency records'
}

// campaigns is the server's campaign-control component.
func (p *a2aPipeline) campaigns() *campaigns {
	return &campaigns{st: p.idem.store, logger: p.logger, retention: p.idem.retention}
}

// maxCampaignID bounds the identifiers of the campaign methods, in bytes.
const maxCampaignID = 256

func invalidCampaign(msg string) *Error { return newError(errcode.InvalidParams, msg, nil) }

// checkIdentifier checks a required identifier: 1 to 256 bytes, no
// control characters.
func checkIdentifier(name, v string) *Error {
	if v == "" || len(v) > maxCampaignID || strings.IndexFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0 {
		return invalidCampaign(fmt.Sprintf("Invalid params: %s must be 1 to %d bytes without control characters", name, maxCampaignID))
	}
	return nil
}

// decodeCampaign reads and checks the params of a campaign/* method.
func decodeCampaign(c *Call, cm *campaignMethod) (campaignParams, *Error) {
	var p campaignParams
	if c.rpc.ParamsNode < 0 || json.Unmarshal(c.t.Raw(c.rpc.ParamsNode), &p) != nil {
		return p, invalidCampaign("Invalid params: an object with the method's members is required")
	}
	checks := []struct{ name, v string }{{"campaign_id", p.CampaignID}}
	if cm.op != "read_control" && cm.op != "request_status" {
		checks = append(checks, struct{ name, v string }{"controller_id", p.ControllerID})
	}
	if cm.op != "read_control" {
		checks = append(checks, struct{ name, v string }{"request_id", p.RequestID})
	}
	for _, ch := range checks {
		if err := checkIdentifier(ch.name, ch.v); err != nil {
			return p, err
		}
	}
	if cm.mutation && (p.ControllerEpoch == nil || *p.ControllerEpoch < 0) {
		return p, invalidCampaign("Invalid params: controller_epoch must be a non-negative integer")
	}
	if cm.ttl && (p.TTLSeconds == nil || *p.TTLSeconds < 1 || *p.TTLSeconds > maxLeaseTTL) {
		return p, invalidCampaign(fmt.Sprintf("Invalid params: ttl_seconds must be an integer from 1 to %d", maxLeaseTTL))
	}
	if cm.op == "intervene" && (len(p.Params) == 0 || p.Params[0] != '{') {
		return p, invalidCampaign("Invalid params: params must be an object")
	}
	return p, nil
}

// maxLeaseTTL is the longest lease, in seconds (one day).
const maxLeaseTTL = 86400

// parseConstraints reads a constraints envelope: absent, ok is false; an
// absent member of an envelope is true (spec item 85).
func parseConstraints(raw json.RawMessage) (pol campaign.Policy, present bool, err *Error) {
	if len(raw) == 0 || string(raw) == "null" {
		return pol, false, nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return pol, false, invalidCampaign("Invalid params: constraints must be an object of booleans")
	}
	for _, c := range policyConstraints(&pol) {
		*c.v = true
		if v, ok := m[c.name]; ok && json.Unmarshal(v, c.v) != nil {
			return pol, false, invalidCampaign("Invalid params: constraints." + c.name + " must be a boolean")
		}
	}
	return pol, true, nil
}

// campaignCall is one call of a campaign method, admitted.
type campaignCall struct {
	c     *Call
	p     *campaignParams
	ws    string
	agent *Agent
	cc    *campaign.Control
}

func (cx *campaignCall) ctx() context.Context { return cx.c.r.Context() }

func (cx *campaignCall) leaseKey() string { return leaseKey(cx.ws, cx.agent.slug, cx.p.CampaignID) }

// serveCampaign admits a campaign/* call (its agent serves the extension,
// a workspace token with action.invoke and the method's scope) and serves it.
func (s *a2aPipeline) serveCampaign(c *Call, cm *campaignMethod, p *campaignParams, dst []byte) ([]byte, *Error) {
	slug := p.AgentSlug
	if slug == "" {
		slug = s.primary.slug
	}
	a := s.bySlug[slug]
	var cc *campaign.Control
	if a != nil {
		cc = a.campaignControl()
	}
	if cc == nil || (cm.op == "intervene" && cc.Intervene == nil) {
		return dst, newError(errcode.MethodNotFound, "Method not found", map[string]any{"method": cm.name})
	}
	vc, err := (*Server)(s).authorize(c.r.Context(), c.r, contracts.WorkspaceRef{ID: a2abind.TokenWorkspace(s, &c.a2a)}, slug,
		[]string{MethodActionInvoke, cm.name})
	if err != nil {
		return dst, err
	}
	c.note(a, "", "", vc.WorkspaceID)
	cx := &campaignCall{c: c, p: p, ws: vc.WorkspaceID, agent: a, cc: cc}
	res, err := cm.serve(s.campaigns(), cx)
	if err != nil {
		return dst, err
	}
	b, merr := json.Marshal(res)
	if merr != nil {
		return dst, newError(errcode.InternalError, "Internal error", nil)
	}
	return append(dst, b...), nil
}

// now is the time leases are measured against, in Unix seconds.
func campaignNow() int64 { return time.Now().Unix() }

// updateLease applies fn to the lease record of key atomically (the
// store's PutIfAbsent and CompareAndSwap): on a concurrent change, on this
// instance or another, fn runs again on the new record.
func (s *campaigns) updateLease(ctx context.Context, key string, fn func(cur *campaignLease) (*campaignLease, *Error)) (*campaignLease, *Error) {
	for range 64 {
		old, found, err := s.st.Get(ctx, key)
		if err != nil {
			return nil, s.campaignStoreFailed(ctx, err)
		}
		var cur *campaignLease
		if found {
			cur = new(campaignLease)
			if json.Unmarshal(old, cur) != nil {
				return nil, s.campaignStoreFailed(ctx, errors.New("malformed lease record"))
			}
		}
		next, rerr := fn(cur)
		if rerr != nil || next == nil {
			return cur, rerr
		}
		b, _ := json.Marshal(next)
		var ok bool
		if found {
			ok, err = s.st.CompareAndSwap(ctx, key, old, b)
		} else {
			_, ok, err = s.st.PutIfAbsent(ctx, key, b)
		}
		if err != nil {
			return nil, s.campaignStoreFailed(ctx, err)
		}
		if ok {
			return next, nil
		}
	}
	return nil, newError(errcode.InternalError, "Lease contended: retry", nil)
}

func (s *campaigns) campaignStoreFailed(ctx context.Context, err error) *Error {
	s.logger.ErrorContext(ctx, "campaign control: store failed", "error", err)
	return newError(errcode.InternalError, "Lease store unavailable", nil)
}

func leaseAnswer(l *campaignLease) map[string]any {
	if l == nil || l.Released {
		return map[string]any{"lease": nil}
	}
	return map[string]any{"lease": map[string]any{"controller_id": l.ControllerID, "epoch": l.Epoch, "expires_at": l.ExpiresAt}}
}

var (
	errLeaseHeld    = func() *Error { return newError(errcode.LeaseHeld, "Lease held by another controller", nil) }
	errStaleEpoch   = func() *Error { return newError(errcode.StaleEpoch, "Stale controller epoch", nil) }
	errLeaseExpired = func() *Error { return newError(errcode.LeaseExpired, "Lease expired", nil) }
)

func policyRefused(why string) *Error {
	return newError(errcode.PolicyRefused, "Refused by the campaign policy: "+why, nil)
}

// enforceable refuses a policy asking for a constraint the agent does not enforce.
func (cx *campaignCall) enforceable(pol campaign.Policy) *Error {
	if missing := beyond(pol, cx.cc.Enforces); missing != "" {
		return policyRefused("the agent cannot enforce " + missing)
	}
	return nil
}

func (s *campaigns) claimControl(cx *campaignCall) (any, *Error) {
	pol, present, err := parseConstraints(cx.p.Constraints)
	if err != nil {
		return nil, err
	}
	if !present {
		pol = campaign.Strict()
	}
	if err := cx.enforceable(pol); err != nil {
		return nil, err
	}
	now := campaignNow()
	l, err := s.updateLease(cx.ctx(), cx.leaseKey(), func(cur *campaignLease) (*campaignLease, *Error) {
		next := &campaignLease{ControllerID: cx.p.ControllerID, Epoch: 1, ExpiresAt: now + *cx.p.TTLSeconds, Policy: pol}
		switch {
		case cur == nil:
		case !cur.Released && cur.ExpiresAt > now && cur.ControllerID != cx.p.ControllerID:
			return nil, errLeaseHeld()
		case !cur.Released && cur.ExpiresAt > now:
			next.Epoch, next.Task = cur.Epoch, cur.Task // the holder claims again: the same lease, extended
			if relaxed := beyond(cur.Policy, pol); relaxed != "" {
				return nil, policyRefused("a claim cannot relax " + relaxed)
			}
		default:
			next.Epoch = cur.Epoch + 1 // a takeover (after expiry or release)
		}
		return next, nil
	})
	if err != nil {
		return nil, err
	}
	s.recordRequest(cx, campaignRequest{State: "applied"})
	return leaseAnswer(l), nil
}

func (s *campaigns) readControl(cx *campaignCall) (any, *Error) {
	raw, found, err := s.st.Get(cx.ctx(), cx.leaseKey())
	if err != nil {
		return nil, s.campaignStoreFailed(cx.ctx(), err)
	}
	if !found { // never claimed in the caller's workspace (another's included: never a leak)
		return nil, newError(errcode.TaskNotFound, "Campaign not found", map[string]any{"campaign_id": cx.p.CampaignID})
	}
	var l campaignLease
	if json.Unmarshal(raw, &l) != nil {
		return nil, s.campaignStoreFailed(cx.ctx(), errors.New("malformed lease record"))
	}
	return leaseAnswer(&l), nil
}

// guard checks a mutation under the lease cur: the controller and epoch
// held, not expired, constraints that neither relax the claim's nor go
// beyond what the agent enforces. It returns the policy the call runs under.
func guard(cx *campaignCall, cur *campaignLease, controller string, epoch int64, constraints json.RawMessage, now int64) (campaign.Policy, *Error) {
	if cur == nil || cur.Released || cur.ControllerID != controller || cur.Epoch != epoch {
		if cur != nil && !cur.Released && cur.Epoch == epoch && cur.ControllerID != controller {
			return campaign.Policy{}, errLeaseHeld()
		}
		return campaign.Policy{}, errStaleEpoch()
	}
	if cur.ExpiresAt <= now {
		return campaign.Policy{}, errLeaseExpired()
	}
	pol, present, err := parseConstraints(constraints)
	if err != nil {
		return pol, err
	}
	if !present {
		return cur.Policy, nil
	}
	if relaxed := beyond(cur.Policy, pol); relaxed != "" {
		return pol, policyRefused("a call cannot relax " + relaxed)
	}
	return pol, cx.enforceable(pol)
}

func (s *campaigns) renewControl(cx *campaignCall) (any, *Error) {
	now := campaignNow()
	l, err := s.updateLease(cx.ctx(), cx.leaseKey(), func(cur *campaignLease) (*campaignLease, *Error) {
		if _, err := guard(cx, cur, cx.p.ControllerID, *cx.p.ControllerEpoch, cx.p.Constraints, now); err != nil {
			return nil, err
		}
		next := *cur
		next.ExpiresAt = now + *cx.p.TTLSeconds
		return &next, nil
	})
	if err != nil {
		return nil, err
	}
	s.recordRequest(cx, campaignRequest{State: "applied"})
	return leaseAnswer(l), nil
}

func (s *campaigns) releaseControl(cx *campaignCall) (any, *Error) {
	now := campaignNow()
	_, err := s.updateLease(cx.ctx(), cx.leaseKey(), func(cur *campaignLease) (*campaignLease, *Error) {
		if _, err := guard(cx, cur, cx.p.ControllerID, *cx.p.ControllerEpoch, cx.p.Constraints, now); err != nil {
			return nil, err
		}
		next := *cur
		next.Released, next.ExpiresAt = true, now
		return &next, nil
	})
	if err != nil {
		return nil, err
	}
	s.recordRequest(cx, campaignRequest{State: "applied"})
	return map[string]any{"released": true, "lease": nil}, nil
}

func (s *campaigns) intervene(cx *campaignCall) (any, *Error) {
	var pol campaign.Policy
	_, err := s.updateLease(cx.ctx(), cx.leaseKey(), func(cur *campaignLease) (*campaignLease, *Error) {
		var err *Error
		pol, err = guard(cx, cur, cx.p.ControllerID, *cx.p.ControllerEpoch, cx.p.Constraints, campaignNow())
		return nil, err
	})
	if err != nil {
		return nil, err
	}
	ctx := context.WithValue(cx.ctx(), callstate.PolicyKey{}, pol)
	out, herr := cx.cc.Intervene(ctx, campaign.Intervention{WorkspaceID: cx.ws, CampaignID: cx.p.CampaignID, ControllerID: cx.p.ControllerID,
		Epoch: *cx.p.ControllerEpoch, RequestID: cx.p.RequestID, Params: cx.p.Params, Policy: pol})
	switch {
	case errors.Is(herr, campaign.ErrPolicy):
		return nil, policyRefused("the intervention asks what the policy forbids")
	case herr != nil:
		s.logger.ErrorContext(ctx, "campaign control: intervention failed", "agent_slug", cx.agent.slug, "error", herr)
		return nil, newError(errcode.InternalError, "Intervention failed", nil)
	case len(out) == 0 || out[0] != '{' || !json.Valid(out):
		return nil, newError(errcode.InternalError, "Intervention answered no object", nil)
	}
	s.recordRequest(cx, campaignRequest{State: "applied"})
	return json.RawMessage(out), nil
}

// recordRequest keeps what became of a request id, for request_status (a
// failure to keep it is logged: the call itself succeeded).
func (s *campaigns) recordRequest(cx *campaignCall, r campaignRequest) {
	r.At = campaignNow()
	b, _ := json.Marshal(r)
	key := requestKey(cx.ws, cx.agent.slug, cx.p.CampaignID, cx.p.RequestID)
	if _, _, err := s.st.PutIfAbsent(cx.ctx(), key, b); err != nil {
		s.logger.ErrorContext(cx.ctx(), "campaign control: request record failed", "error", err)
	}
}
