package supervaizer

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/supervaize/supervaizer-go/campaign"
	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/internal/a2abind"
	"github.com/supervaize/supervaizer-go/internal/callstate"
	"github.com/supervaize/supervaizer-go/internal/jsonrpc"
)

// The campaign-control extension's readback (campaign/request_status) and
// the A2A send and cancel under a lease (with
// metadata.argus_supervisor); campaign.go has the leases.

// requestStatus answers from the request's records: the campaign's and,
// for a send, its idempotency record.
func (s *campaigns) requestStatus(cx *campaignCall) (any, *Error) {
	ctx := cx.ctx()
	answer := func(state, task string) (any, *Error) {
		out := map[string]any{"request_id": cx.p.RequestID, "state": state}
		if task != "" {
			out["task_id"] = task
		}
		return out, nil
	}
	raw, found, err := s.st.Get(ctx, requestKey(cx.ws, cx.agent.slug, cx.p.CampaignID, cx.p.RequestID))
	if err != nil {
		return nil, s.campaignStoreFailed(ctx, err)
	}
	if !found {
		return answer("not_applied", "")
	}
	var r campaignRequest
	if json.Unmarshal(raw, &r) != nil {
		return nil, s.campaignStoreFailed(ctx, errors.New("malformed request record"))
	}
	if time.Since(time.Unix(r.At, 0)) > s.retention {
		return answer("unknown", "") // past the retention: the records may be gone
	}
	if r.Action == "" {
		return answer(r.State, r.TaskID)
	}
	// A send: its idempotency record says whether the job started.
	rec, found, err := s.st.Get(ctx, recordKey(cx.ws, cx.agent.slug, r.Action, cx.p.RequestID))
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
	var ir idemRecord
	if json.Unmarshal(rec, &ir) != nil {
		return nil, s.campaignStoreFailed(ctx, errors.New("malformed idempotency record"))
	}
	if ir.State == recordDone {
		return answer("applied", ir.JobID)
	}
	return answer("pending", ir.JobID)
}

// supervisorMeta is metadata.argus_supervisor.
type supervisorMeta struct {
	CampaignID      string          `json:"campaign_id"`
	ControllerID    string          `json:"controller_id"`
	ControllerEpoch *int64          `json:"controller_epoch"`
	RequestID       string          `json:"request_id"`
	Constraints     json.RawMessage `json:"constraints"`
}

// Supervised admits an A2A send or cancel under a campaign lease.
func (p *a2aPipeline) Supervised(bc *a2abind.Call, slug string, raw []byte, messageID, action, taskID string) (context.Context, func(string), *jsonrpc.Error) {
	s := p.campaigns()
	c := bc.Ref.(*Call)
	var sm supervisorMeta
	if json.Unmarshal(raw, &sm) != nil || sm.ControllerEpoch == nil || *sm.ControllerEpoch < 0 {
		return nil, nil, toRPC(invalidCampaign("Invalid params: metadata.argus_supervisor needs campaign_id, controller_id, controller_epoch and request_id"))
	}
	for _, ch := range []struct{ name, v string }{{"campaign_id", sm.CampaignID}, {"controller_id", sm.ControllerID}, {"request_id", sm.RequestID}} {
		if err := checkIdentifier("metadata.argus_supervisor."+ch.name, ch.v); err != nil {
			return nil, nil, toRPC(err)
		}
	}
	if taskID == "" && sm.RequestID != messageID {
		return nil, nil, toRPC(invalidCampaign("Invalid params: metadata.argus_supervisor.request_id must be the message's messageId"))
	}
	a := p.bySlug[slug]
	var cc *campaign.Control
	if a != nil {
		cc = a.campaignControl()
	}
	if cc == nil {
		return nil, nil, toRPC(policyRefused("the agent does not serve campaign control"))
	}
	if taskID == "" && !a.isIdempotent(action) {
		return nil, nil, toRPC(policyRefused("action " + action + " is not idempotent: a send under a lease needs its idempotency record"))
	}
	vc, err := (*Server)(p).authorize(bc.R.Context(), bc.R, contracts.WorkspaceRef{ID: a2abind.TokenWorkspace(p, bc)}, slug, []string{MethodActionInvoke})
	if err != nil {
		return nil, nil, toRPC(err)
	}
	cx := &campaignCall{c: c, ws: vc.WorkspaceID, agent: a, cc: cc,
		p: &campaignParams{CampaignID: sm.CampaignID, ControllerID: sm.ControllerID, RequestID: sm.RequestID}}
	var pol campaign.Policy
	_, err = s.updateLease(bc.R.Context(), cx.leaseKey(), func(cur *campaignLease) (*campaignLease, *Error) {
		var err *Error
		if pol, err = guard(cx, cur, sm.ControllerID, *sm.ControllerEpoch, sm.Constraints, campaignNow()); err != nil {
			return nil, err
		}
		if taskID != "" && cur.Task != taskID {
			return nil, policyRefused("a cancel under the lease targets the campaign's bound task only")
		}
		return nil, nil
	})
	if err != nil {
		return nil, nil, toRPC(err)
	}
	rec := campaignRequest{State: "pending", TaskID: taskID}
	if taskID == "" {
		rec.Action = action
	}
	s.recordRequest(cx, rec)
	ctx := bc.R.Context()
	if taskID == "" {
		// A send runs to its recorded outcome even when its client goes away
		// (a killed supervisor reads it back with request_status).
		ctx = context.WithoutCancel(ctx)
	}
	ctx = context.WithValue(ctx, callstate.PolicyKey{}, pol)
	done := func(jobID string) {
		if jobID == "" {
			if taskID != "" { // a cancel that did not cancel: nothing applied
				_ = s.st.Delete(context.WithoutCancel(ctx), requestKey(cx.ws, a.slug, sm.CampaignID, sm.RequestID))
			}
			return
		}
		s.settleSupervised(context.WithoutCancel(ctx), cx, jobID, *sm.ControllerEpoch, taskID == "")
	}
	return ctx, done, nil
}

// settleSupervised records a supervised call that succeeded: the request
// applied, and a send's job bound to the campaign as its task.
func (s *campaigns) settleSupervised(ctx context.Context, cx *campaignCall, jobID string, epoch int64, bind bool) {
	key := requestKey(cx.ws, cx.agent.slug, cx.p.CampaignID, cx.p.RequestID)
	b, _ := json.Marshal(campaignRequest{State: "applied", TaskID: jobID, At: campaignNow()})
	if old, found, err := s.st.Get(ctx, key); err == nil && found {
		var r campaignRequest
		if json.Unmarshal(old, &r) == nil {
			r.State, r.TaskID = "applied", jobID
			b, _ = json.Marshal(r)
		}
		_, _ = s.st.CompareAndSwap(ctx, key, old, b)
	}
	if !bind {
		return
	}
	if _, err := s.updateLease(ctx, cx.leaseKey(), func(cur *campaignLease) (*campaignLease, *Error) {
		if cur == nil || cur.Epoch != epoch || cur.Task == jobID {
			return nil, nil
		}
		next := *cur
		next.Task = jobID
		return &next, nil
	}); err != nil {
		s.logger.ErrorContext(ctx, "campaign control: binding the task failed", "agent_slug", cx.agent.slug)
	}
}
