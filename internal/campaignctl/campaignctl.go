// Package campaignctl serves the campaign-control extension (spec item 85)
// for package supervaizer: the campaign/* methods' params, the leases and
// request records in the store (changed by compare-and-swap only, so
// claims on several instances are serialized), the checks of every
// mutation, the readback. The root admits each call (the agent, the
// workspace token) and hands it here; package campaign is the agent's side.
package campaignctl

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/supervaize/supervaizer-go/a2atask"
	"github.com/supervaize/supervaizer-go/campaign"
	"github.com/supervaize/supervaizer-go/errcode"
	"github.com/supervaize/supervaizer-go/internal/callstate"
	"github.com/supervaize/supervaizer-go/internal/jsonrpc"
	"github.com/supervaize/supervaizer-go/store"
)

func rpcError(code errcode.Code, msg string, data any) *jsonrpc.Error {
	return &jsonrpc.Error{Code: code, Message: msg, Data: data}
}

// keyPart is a store key part: literal up to 128 bytes, else hashed (a
// hashed part starts with "#", a literal one with "=", so they never meet).
func keyPart(v string) string {
	if len(v) > 128 {
		d := sha256.Sum256([]byte(v))
		return "#" + hex.EncodeToString(d[:])
	}
	return "=" + v
}

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

// ExtensionParams are the params of the extension's entry in the card of
// an agent serving cc: both enforcement flags, the operations map, the
// constraints it enforces.
func ExtensionParams(cc *campaign.Control) json.RawMessage {
	ops := map[string]string{"cancel": a2atask.MethodTasksCancel}
	for _, m := range Methods {
		if m.Op != "intervene" || cc.Intervene != nil {
			ops[m.Op] = m.Name
		}
	}
	params, _ := json.Marshal(map[string]any{"lease_epoch_enforced": true, "policy_enforced": true, "operations": ops,
		"constraints": cc.Enforces})
	return params
}

// Lease is the lease record of a campaign in the store.
type Lease struct {
	ControllerID string          `json:"controller_id"`
	Epoch        int64           `json:"epoch"`
	ExpiresAt    int64           `json:"expires_at"`
	Released     bool            `json:"released,omitempty"`
	Policy       campaign.Policy `json:"policy"`
	Task         string          `json:"task,omitempty"` // the bound task: the job the last send under the lease started
}

// Request is what the store keeps of a request id of a campaign.
type Request struct {
	State  string `json:"state"`            // "pending" (a send or cancel running) or "applied"
	Action string `json:"action,omitempty"` // a send's action: its idempotency record tells the outcome
	TaskID string `json:"task_id,omitempty"`
	At     int64  `json:"at"` // Unix seconds of the request
}

const campaignNamespace = "campaign"

func leaseKey(ws, slug, campaign string) string {
	return store.Key(campaignNamespace, keyPart(ws), slug, keyPart(campaign), "lease")
}

func requestKey(ws, slug, campaign, requestID string) string {
	return store.Key(campaignNamespace, keyPart(ws), slug, keyPart(campaign), "request", keyPart(requestID))
}

// Params are the params of every campaign/* method.
type Params struct {
	CampaignID      string          `json:"campaign_id"`
	ControllerID    string          `json:"controller_id"`
	ControllerEpoch *int64          `json:"controller_epoch"`
	TTLSeconds      *int64          `json:"ttl_seconds"`
	RequestID       string          `json:"request_id"`
	Constraints     json.RawMessage `json:"constraints"`
	Params          json.RawMessage `json:"params"`
	AgentSlug       string          `json:"agent_slug"`
}

// Method is one campaign/* method: its operation name and what it needs.
type Method struct {
	Op, Name string
	mutation bool // carries controller_id, controller_epoch, request_id
	ttl      bool
	// Serve serves an admitted call.
	Serve func(cs *Service, cx *Call) (any, *jsonrpc.Error)
}

var Methods []Method

func init() {
	Methods = []Method{
		{Op: "claim_control", Name: "campaign/claim_control", ttl: true, Serve: (*Service).claimControl},
		{Op: "read_control", Name: "campaign/read_control", Serve: (*Service).readControl},
		{Op: "renew_control", Name: "campaign/renew_control", mutation: true, ttl: true, Serve: (*Service).renewControl},
		{Op: "release_control", Name: "campaign/release_control", mutation: true, Serve: (*Service).releaseControl},
		{Op: "intervene", Name: "campaign/intervene", mutation: true, Serve: (*Service).intervene},
		{Op: "request_status", Name: "campaign/request_status", Serve: (*Service).requestStatus},
	}
}

// Binding is the method table's binding of the campaign/* methods.
const Binding = "campaign-control"

// Service keeps the extension's state, the leases and request records, in
// the server's store.
type Service struct {
	St        store.Store
	Logger    *slog.Logger
	Retention time.Duration // of the request records: the idempotency records'
	// Idem reads the idempotency record of a send: whether it is done, its
	// job id, found false when there is none.
	Idem func(ctx context.Context, ws, slug, action, key string) (done bool, jobID string, found bool, err error)
}

// maxCampaignID bounds the identifiers of the campaign methods, in bytes.
const maxCampaignID = 256

func invalidCampaign(msg string) *jsonrpc.Error { return rpcError(errcode.InvalidParams, msg, nil) }

// checkIdentifier checks a required identifier: 1 to 256 bytes, no
// control characters.
func checkIdentifier(name, v string) *jsonrpc.Error {
	if v == "" || len(v) > maxCampaignID || strings.IndexFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0 {
		return invalidCampaign(fmt.Sprintf("Invalid params: %s must be 1 to %d bytes without control characters", name, maxCampaignID))
	}
	return nil
}

// Decode reads and checks the params of a campaign/* method.
func Decode(raw []byte, cm *Method) (Params, *jsonrpc.Error) {
	var p Params
	if len(raw) == 0 || json.Unmarshal(raw, &p) != nil {
		return p, invalidCampaign("Invalid params: an object with the method's members is required")
	}
	checks := []struct{ name, v string }{{"campaign_id", p.CampaignID}}
	if cm.Op != "read_control" && cm.Op != "request_status" {
		checks = append(checks, struct{ name, v string }{"controller_id", p.ControllerID})
	}
	if cm.Op != "read_control" {
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
	if cm.Op == "intervene" && (len(p.Params) == 0 || p.Params[0] != '{') {
		return p, invalidCampaign("Invalid params: params must be an object")
	}
	return p, nil
}

// maxLeaseTTL is the longest lease, in seconds (one day).
const maxLeaseTTL = 86400

// parseConstraints reads a constraints envelope: absent, ok is false; an
// absent member of an envelope is true (spec item 85).
func parseConstraints(raw json.RawMessage) (pol campaign.Policy, present bool, err *jsonrpc.Error) {
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

// Call is one call of a campaign method, admitted.
type Call struct {
	Ctx  context.Context
	P    *Params
	WS   string // the verified workspace
	Slug string // the agent
	CC   *campaign.Control
}

func (cx *Call) leaseKey() string { return leaseKey(cx.WS, cx.Slug, cx.P.CampaignID) }

// now is the time leases are measured against, in Unix seconds.
func campaignNow() int64 { return time.Now().Unix() }

// leaseEnd is the expires_at of a lease granted now for ttl seconds: the end
// rounded up to the whole second, so that the lease lasts at least ttl
// seconds. A lease expires when the clock reaches expires_at (a Unix second):
// now + ttl in whole seconds would leave a 1-second lease claimed late in a
// second a few milliseconds.
func leaseEnd(ttl int64) int64 {
	return time.Now().Add(time.Duration(ttl)*time.Second-1).Unix() + 1
}

// updateLease applies fn to the lease record of key atomically (the
// store's PutIfAbsent and CompareAndSwap): on a concurrent change, on this
// instance or another, fn runs again on the new record.
func (s *Service) updateLease(ctx context.Context, key string, fn func(cur *Lease) (*Lease, *jsonrpc.Error)) (*Lease, *jsonrpc.Error) {
	for range 64 {
		old, found, err := s.St.Get(ctx, key)
		if err != nil {
			return nil, s.campaignStoreFailed(ctx, err)
		}
		var cur *Lease
		if found {
			cur = new(Lease)
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
			ok, err = s.St.CompareAndSwap(ctx, key, old, b)
		} else {
			_, ok, err = s.St.PutIfAbsent(ctx, key, b)
		}
		if err != nil {
			return nil, s.campaignStoreFailed(ctx, err)
		}
		if ok {
			return next, nil
		}
	}
	return nil, rpcError(errcode.InternalError, "Lease contended: retry", nil)
}

func (s *Service) campaignStoreFailed(ctx context.Context, err error) *jsonrpc.Error {
	s.Logger.ErrorContext(ctx, "campaign control: store failed", "error", err)
	return rpcError(errcode.InternalError, "Lease store unavailable", nil)
}

func leaseAnswer(l *Lease) map[string]any {
	if l == nil || l.Released {
		return map[string]any{"lease": nil}
	}
	return map[string]any{"lease": map[string]any{"controller_id": l.ControllerID, "epoch": l.Epoch, "expires_at": l.ExpiresAt}}
}

var (
	errLeaseHeld    = func() *jsonrpc.Error { return rpcError(errcode.LeaseHeld, "Lease held by another controller", nil) }
	errStaleEpoch   = func() *jsonrpc.Error { return rpcError(errcode.StaleEpoch, "Stale controller epoch", nil) }
	errLeaseExpired = func() *jsonrpc.Error { return rpcError(errcode.LeaseExpired, "Lease expired", nil) }
)

func policyRefused(why string) *jsonrpc.Error {
	return rpcError(errcode.PolicyRefused, "Refused by the campaign policy: "+why, nil)
}

// enforceable refuses a policy asking for a constraint the agent does not enforce.
func (cx *Call) enforceable(pol campaign.Policy) *jsonrpc.Error {
	if missing := beyond(pol, cx.CC.Enforces); missing != "" {
		return policyRefused("the agent cannot enforce " + missing)
	}
	return nil
}

func (s *Service) claimControl(cx *Call) (any, *jsonrpc.Error) {
	pol, present, err := parseConstraints(cx.P.Constraints)
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
	l, err := s.updateLease(cx.Ctx, cx.leaseKey(), func(cur *Lease) (*Lease, *jsonrpc.Error) {
		next := &Lease{ControllerID: cx.P.ControllerID, Epoch: 1, ExpiresAt: leaseEnd(*cx.P.TTLSeconds), Policy: pol}
		switch {
		case cur == nil:
		case !cur.Released && cur.ExpiresAt > now && cur.ControllerID != cx.P.ControllerID:
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
	s.recordRequest(cx, Request{State: "applied"})
	return leaseAnswer(l), nil
}

func (s *Service) readControl(cx *Call) (any, *jsonrpc.Error) {
	raw, found, err := s.St.Get(cx.Ctx, cx.leaseKey())
	if err != nil {
		return nil, s.campaignStoreFailed(cx.Ctx, err)
	}
	if !found { // never claimed in the caller's workspace (another's included: never a leak)
		return nil, rpcError(errcode.TaskNotFound, "Campaign not found", map[string]any{"campaign_id": cx.P.CampaignID})
	}
	var l Lease
	if json.Unmarshal(raw, &l) != nil {
		return nil, s.campaignStoreFailed(cx.Ctx, errors.New("malformed lease record"))
	}
	return leaseAnswer(&l), nil
}

// guard checks a mutation under the lease cur: the controller and epoch
// held, not expired, constraints that neither relax the claim's nor go
// beyond what the agent enforces. It returns the policy the call runs under.
func guard(cx *Call, cur *Lease, controller string, epoch int64, constraints json.RawMessage, now int64) (campaign.Policy, *jsonrpc.Error) {
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

func (s *Service) renewControl(cx *Call) (any, *jsonrpc.Error) {
	now := campaignNow()
	l, err := s.updateLease(cx.Ctx, cx.leaseKey(), func(cur *Lease) (*Lease, *jsonrpc.Error) {
		if _, err := guard(cx, cur, cx.P.ControllerID, *cx.P.ControllerEpoch, cx.P.Constraints, now); err != nil {
			return nil, err
		}
		next := *cur
		next.ExpiresAt = leaseEnd(*cx.P.TTLSeconds)
		return &next, nil
	})
	if err != nil {
		return nil, err
	}
	s.recordRequest(cx, Request{State: "applied"})
	return leaseAnswer(l), nil
}

func (s *Service) releaseControl(cx *Call) (any, *jsonrpc.Error) {
	now := campaignNow()
	_, err := s.updateLease(cx.Ctx, cx.leaseKey(), func(cur *Lease) (*Lease, *jsonrpc.Error) {
		if _, err := guard(cx, cur, cx.P.ControllerID, *cx.P.ControllerEpoch, cx.P.Constraints, now); err != nil {
			return nil, err
		}
		next := *cur
		next.Released, next.ExpiresAt = true, now
		return &next, nil
	})
	if err != nil {
		return nil, err
	}
	s.recordRequest(cx, Request{State: "applied"})
	return map[string]any{"released": true, "lease": nil}, nil
}

func (s *Service) intervene(cx *Call) (any, *jsonrpc.Error) {
	var pol campaign.Policy
	_, err := s.updateLease(cx.Ctx, cx.leaseKey(), func(cur *Lease) (*Lease, *jsonrpc.Error) {
		var err *jsonrpc.Error
		pol, err = guard(cx, cur, cx.P.ControllerID, *cx.P.ControllerEpoch, cx.P.Constraints, campaignNow())
		return nil, err
	})
	if err != nil {
		return nil, err
	}
	ctx := context.WithValue(cx.Ctx, callstate.PolicyKey{}, pol)
	out, herr := cx.CC.Intervene(ctx, campaign.Intervention{WorkspaceID: cx.WS, CampaignID: cx.P.CampaignID, ControllerID: cx.P.ControllerID,
		Epoch: *cx.P.ControllerEpoch, RequestID: cx.P.RequestID, Params: cx.P.Params, Policy: pol})
	switch {
	case errors.Is(herr, campaign.ErrPolicy):
		return nil, policyRefused("the intervention asks what the policy forbids")
	case herr != nil:
		s.Logger.ErrorContext(ctx, "campaign control: intervention failed", "agent_slug", cx.Slug, "error", herr)
		return nil, rpcError(errcode.InternalError, "Intervention failed", nil)
	case len(out) == 0 || out[0] != '{' || !json.Valid(out):
		return nil, rpcError(errcode.InternalError, "Intervention answered no object", nil)
	}
	s.recordRequest(cx, Request{State: "applied"})
	return json.RawMessage(out), nil
}

// recordRequest keeps what became of a request id, for request_status (a
// failure to keep it is logged: the call itself succeeded).
func (s *Service) recordRequest(cx *Call, r Request) {
	r.At = campaignNow()
	b, _ := json.Marshal(r)
	key := requestKey(cx.WS, cx.Slug, cx.P.CampaignID, cx.P.RequestID)
	if _, _, err := s.St.PutIfAbsent(cx.Ctx, key, b); err != nil {
		s.Logger.ErrorContext(cx.Ctx, "campaign control: request record failed", "error", err)
	}
}

// requestStatus answers from the request's records: the campaign's and,
// for a send, its idempotency record.
func (s *Service) requestStatus(cx *Call) (any, *jsonrpc.Error) {
	ctx := cx.Ctx
	answer := func(state, task string) (any, *jsonrpc.Error) {
		out := map[string]any{"request_id": cx.P.RequestID, "state": state}
		if task != "" {
			out["task_id"] = task
		}
		return out, nil
	}
	raw, found, err := s.St.Get(ctx, requestKey(cx.WS, cx.Slug, cx.P.CampaignID, cx.P.RequestID))
	if err != nil {
		return nil, s.campaignStoreFailed(ctx, err)
	}
	if !found {
		return answer("not_applied", "")
	}
	var r Request
	if json.Unmarshal(raw, &r) != nil {
		return nil, s.campaignStoreFailed(ctx, errors.New("malformed request record"))
	}
	if time.Since(time.Unix(r.At, 0)) > s.Retention {
		return answer("unknown", "") // past the retention: the records may be gone
	}
	if r.Action == "" {
		return answer(r.State, r.TaskID)
	}
	// A send: its idempotency record says whether the job started.
	done, jobID, found, err := s.Idem(ctx, cx.WS, cx.Slug, r.Action, cx.P.RequestID)
	if err != nil {
		return nil, s.campaignStoreFailed(ctx, err)
	}
	if !found {
		if r.State == "applied" {
			return answer("unknown", "")
		}
		// The record is written before the handler runs: it never ran.
		return answer("not_applied", "")
	}
	if done {
		return answer("applied", jobID)
	}
	return answer("pending", jobID)
}

// SupervisorMeta is metadata.argus_supervisor.
type SupervisorMeta struct {
	CampaignID      string          `json:"campaign_id"`
	ControllerID    string          `json:"controller_id"`
	ControllerEpoch *int64          `json:"controller_epoch"`
	RequestID       string          `json:"request_id"`
	Constraints     json.RawMessage `json:"constraints"`
}

// settle records a supervised call that succeeded: the request
// applied, and a send's job bound to the campaign as its task.
func (s *Service) settle(ctx context.Context, cx *Call, jobID string, epoch int64, bind bool) {
	key := requestKey(cx.WS, cx.Slug, cx.P.CampaignID, cx.P.RequestID)
	b, _ := json.Marshal(Request{State: "applied", TaskID: jobID, At: campaignNow()})
	if old, found, err := s.St.Get(ctx, key); err == nil && found {
		var r Request
		if json.Unmarshal(old, &r) == nil {
			r.State, r.TaskID = "applied", jobID
			b, _ = json.Marshal(r)
		}
		_, _ = s.St.CompareAndSwap(ctx, key, old, b)
	}
	if !bind {
		return
	}
	if _, err := s.updateLease(ctx, cx.leaseKey(), func(cur *Lease) (*Lease, *jsonrpc.Error) {
		if cur == nil || cur.Epoch != epoch || cur.Task == jobID {
			return nil, nil
		}
		next := *cur
		next.Task = jobID
		return &next, nil
	}); err != nil {
		s.Logger.ErrorContext(ctx, "campaign control: binding the task failed", "agent_slug", cx.Slug)
	}
}

// ParseSupervisor reads metadata.argus_supervisor of a send (messageID its
// message's id, taskID "") or of the cancel of task taskID.
func ParseSupervisor(raw []byte, messageID, taskID string) (SupervisorMeta, *jsonrpc.Error) {
	var sm SupervisorMeta
	if json.Unmarshal(raw, &sm) != nil || sm.ControllerEpoch == nil || *sm.ControllerEpoch < 0 {
		return sm, invalidCampaign("Invalid params: metadata.argus_supervisor needs campaign_id, controller_id, controller_epoch and request_id")
	}
	for _, ch := range []struct{ name, v string }{{"campaign_id", sm.CampaignID}, {"controller_id", sm.ControllerID}, {"request_id", sm.RequestID}} {
		if err := checkIdentifier("metadata.argus_supervisor."+ch.name, ch.v); err != nil {
			return sm, err
		}
	}
	if taskID == "" && sm.RequestID != messageID {
		return sm, invalidCampaign("Invalid params: metadata.argus_supervisor.request_id must be the message's messageId")
	}
	return sm, nil
}

// Supervise admits a send (taskID "", of action) or the cancel of task
// taskID under the lease sm names, in the verified workspace and agent of
// cx: the lease checked as for every mutation, a cancel of the bound task
// only. It records the request pending and returns the context the call
// runs with (the campaign's policy in it; a send's not canceled with its
// client) and done, to call with the job id once the call succeeded ("" when
// it did not).
func (s *Service) Supervise(cx *Call, sm SupervisorMeta, action, taskID string) (context.Context, func(jobID string), *jsonrpc.Error) {
	cx.P = &Params{CampaignID: sm.CampaignID, ControllerID: sm.ControllerID, RequestID: sm.RequestID}
	var pol campaign.Policy
	_, err := s.updateLease(cx.Ctx, cx.leaseKey(), func(cur *Lease) (*Lease, *jsonrpc.Error) {
		var err *jsonrpc.Error
		if pol, err = guard(cx, cur, sm.ControllerID, *sm.ControllerEpoch, sm.Constraints, campaignNow()); err != nil {
			return nil, err
		}
		if taskID != "" && cur.Task != taskID {
			return nil, policyRefused("a cancel under the lease targets the campaign's bound task only")
		}
		return nil, nil
	})
	if err != nil {
		return nil, nil, err
	}
	rec := Request{State: "pending", TaskID: taskID}
	if taskID == "" {
		rec.Action = action
	}
	s.recordRequest(cx, rec)
	ctx := cx.Ctx
	if taskID == "" {
		// A send runs to its recorded outcome even when its client goes away
		// (a killed supervisor reads it back with request_status).
		ctx = context.WithoutCancel(ctx)
	}
	ctx = context.WithValue(ctx, callstate.PolicyKey{}, pol)
	done := func(jobID string) {
		if jobID == "" {
			if taskID != "" { // a cancel that did not cancel: nothing applied
				_ = s.St.Delete(context.WithoutCancel(ctx), requestKey(cx.WS, cx.Slug, sm.CampaignID, sm.RequestID))
			}
			return
		}
		s.settle(context.WithoutCancel(ctx), cx, jobID, *sm.ControllerEpoch, taskID == "")
	}
	return ctx, done, nil
}
