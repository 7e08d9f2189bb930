package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/a2a/client"
	"github.com/supervaize/supervaizer-go/a2atask"
	"github.com/supervaize/supervaizer-go/errcode"
	"github.com/supervaize/supervaizer-go/testing/golden"
)

func dialCampaign(t *testing.T, r *campaignRemote, workspace string, more ...client.Option) *client.Client {
	t.Helper()
	t.Cleanup(r.srv.Close)
	c, err := client.New(context.Background(), r.srv.URL, append([]client.Option{client.AllowLoopback(),
		client.WithHeader("X-Workspace", workspace)}, more...)...)
	require.NoError(t, err)
	return c
}

func claim(campaign, controller, requestID string) client.Claim {
	return client.Claim{CampaignID: campaign, ControllerID: controller, TTL: 60 * time.Second, RequestID: requestID}
}

func assertCode(t *testing.T, err error, code errcode.Code) {
	t.Helper()
	var e *client.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, code, e.Code)
	var amb *client.AmbiguousError
	assert.False(t, errors.As(err, &amb), "a refusal is a definite outcome: %v", err)
}

// TestCampaignControlLifecycle: claim, read, renew, a send and a cancel
// under the lease, request status, intervene, release, each single-shot.
func TestCampaignControlLifecycle(t *testing.T) {
	r := newCampaignRemote(fullControl)
	c := dialCampaign(t, r, "ws-1")
	ctx := context.Background()

	lease, err := c.ClaimControl(ctx, claim("camp-1", "sup-a", "req-claim"))
	require.NoError(t, err)
	assert.Equal(t, &client.Lease{ControllerID: "sup-a", Epoch: 1, ExpiresAt: 1_000_060}, lease)
	assert.Equal(t, time.Unix(1_000_060, 0), lease.Expires())
	read, err := c.ReadControl(ctx, "camp-1")
	require.NoError(t, err)
	assert.Equal(t, lease, read, "readback agrees")

	ctl := client.Control{CampaignID: "camp-1", ControllerID: "sup-a", Epoch: lease.Epoch}
	r.advance(30)
	renewed, err := c.RenewControl(ctx, ctl, "req-renew", 120*time.Second)
	require.NoError(t, err)
	assert.Equal(t, int64(1_000_030+120), renewed.ExpiresAt)

	ans, err := c.SendControlled(ctx, ctl, client.SendRequest{RequestID: "req-run-1", Parts: []a2atask.Part{{Kind: "text", Text: "run"}}})
	require.NoError(t, err)
	assert.Equal(t, "task-req-run-1", ans.Task.ID)
	assert.JSONEq(t, `{"argus_supervisor":{"revision":1,"stage":"run"}}`, string(ans.Task.Metadata))
	st, err := c.RequestStatus(ctx, "camp-1", "req-run-1")
	require.NoError(t, err)
	assert.Equal(t, &client.RequestStatus{RequestID: "req-run-1", State: client.RequestApplied, TaskID: "task-req-run-1"}, st)
	st, err = c.RequestStatus(ctx, "camp-1", "req-never-sent")
	require.NoError(t, err)
	assert.Equal(t, client.RequestNotApplied, st.State)

	out, err := c.Intervene(ctx, ctl, "req-int", json.RawMessage(`{"action":"pause"}`))
	require.NoError(t, err)
	assert.JSONEq(t, `{"accepted":true,"params":{"action":"pause"}}`, string(out))

	_, err = c.CancelControlled(ctx, ctl, "req-cancel-other", "task-not-bound")
	assertCode(t, err, errcode.TaskNotFound)
	task, err := c.CancelControlled(ctx, ctl, "req-cancel", ans.Task.ID)
	require.NoError(t, err)
	assert.Equal(t, a2atask.StateCanceled, task.Status.State)

	require.NoError(t, c.ReleaseControl(ctx, ctl, "req-release"))
	read, err = c.ReadControl(ctx, "camp-1")
	require.NoError(t, err)
	assert.Nil(t, read)
	for _, op := range []client.Operation{client.OpClaimControl, client.OpReadControl, client.OpRenewControl, client.OpReleaseControl,
		client.OpIntervene, client.OpRequestStatus, client.OpControlSend, client.OpControlCancel} {
		assert.Equal(t, client.CapabilityAccepted, c.Capability(op), op)
	}
}

// TestCampaignControlWire pins the params of every campaign-control call.
func TestCampaignControlWire(t *testing.T) {
	var got []rpcCall
	r := newRemote(t, false, `{"name":"R","skills":[],"url":"{{base}}/a2a","protocolVersion":"0.3.0",
		"capabilities":{"extensions":[{"uri":"urn:openoperator:campaign-control:v1","params":`+fullControl+`}]}}`,
		func(w http.ResponseWriter, call rpcCall) {
			got = append(got, call)
			switch call.Method {
			case "campaign/claim_control", "campaign/renew_control":
				reply(w, call, `{"lease":{"controller_id":"sup-a","epoch":3,"expires_at":1000060}}`)
			case "campaign/read_control":
				reply(w, call, `{"lease":null}`)
			case "campaign/request_status":
				reply(w, call, `{"request_id":"req-1","state":"pending"}`)
			case "message/send", "tasks/cancel":
				reply(w, call, task03)
			default:
				reply(w, call, `{}`)
			}
		})
	c := r.dial(t)
	ctx := context.Background()
	strict := client.StrictConstraints()
	strict.NoMerge = false
	ctl := client.Control{CampaignID: "camp-1", ControllerID: "sup-a", Epoch: 3, Constraints: &strict}
	_, err := c.ClaimControl(ctx, client.Claim{CampaignID: "camp-1", ControllerID: "sup-a", TTL: time.Minute, RequestID: "req-claim", Constraints: &strict})
	require.NoError(t, err)
	_, err = c.ReadControl(ctx, "camp-1")
	require.NoError(t, err)
	_, err = c.RenewControl(ctx, client.Control{CampaignID: "camp-1", ControllerID: "sup-a", Epoch: 3}, "req-renew", 90*time.Second)
	require.NoError(t, err)
	require.NoError(t, c.ReleaseControl(ctx, ctl, "req-release"))
	_, err = c.Intervene(ctx, ctl, "req-int", json.RawMessage(`{"action":"pause"}`))
	require.NoError(t, err)
	_, err = c.RequestStatus(ctx, "camp-1", "req-1")
	require.NoError(t, err)
	_, err = c.SendControlled(ctx, ctl, client.SendRequest{RequestID: "req-send", Parts: []a2atask.Part{{Kind: "text", Text: "run"}},
		Metadata: map[string]any{"project": "p-1"}})
	require.NoError(t, err)
	_, err = c.CancelControlled(ctx, ctl, "req-cancel", "task-1")
	require.NoError(t, err)
	require.Len(t, got, 8)
	for i, name := range []string{"claim_control", "read_control", "renew_control", "release_control", "intervene", "request_status", "send", "cancel"} {
		golden.JSON(t, filepath.Join("testdata", "control", name+".json"), got[i].Params)
	}
}

// TestCampaignControlRace: two supervisors claim one campaign at once;
// exactly one holds the lease, the other is refused with -32050.
func TestCampaignControlRace(t *testing.T) {
	r := newCampaignRemote(fullControl)
	a, b := dialCampaign(t, r, "ws-1"), dialCampaign(t, r, "ws-1")
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, c := range []*client.Client{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = c.ClaimControl(context.Background(), claim("camp-1", []string{"sup-a", "sup-b"}[i], "req-"+[]string{"a", "b"}[i]))
		}()
	}
	wg.Wait()
	require.True(t, (errs[0] == nil) != (errs[1] == nil), "exactly one wins: %v", errs)
	loser := errs[0]
	if loser == nil {
		loser = errs[1]
	}
	assertCode(t, loser, errcode.LeaseHeld)
}

// TestCampaignControlTakeoverAndStaleEpoch: after expiry another
// supervisor takes over with a higher epoch; every mutation with the stale
// epoch is refused (-32051), none ambiguous; the expired holder's renew
// before the takeover is -32052.
func TestCampaignControlTakeoverAndStaleEpoch(t *testing.T) {
	r := newCampaignRemote(fullControl)
	a, b := dialCampaign(t, r, "ws-1"), dialCampaign(t, r, "ws-1")
	ctx := context.Background()
	first, err := a.ClaimControl(ctx, claim("camp-1", "sup-a", "req-a1"))
	require.NoError(t, err)
	old := client.Control{CampaignID: "camp-1", ControllerID: "sup-a", Epoch: first.Epoch}
	ans, err := a.SendControlled(ctx, old, client.SendRequest{RequestID: "req-run", Parts: []a2atask.Part{{Kind: "text", Text: "run"}}})
	require.NoError(t, err)

	r.advance(61)
	_, err = a.RenewControl(ctx, old, "req-a2", time.Minute)
	assertCode(t, err, errcode.LeaseExpired)
	second, err := b.ClaimControl(ctx, claim("camp-1", "sup-b", "req-b1"))
	require.NoError(t, err)
	assert.Greater(t, second.Epoch, first.Epoch, "a takeover raises the epoch")

	_, err = a.RenewControl(ctx, old, "req-a3", time.Minute)
	assertCode(t, err, errcode.StaleEpoch)
	assertCode(t, a.ReleaseControl(ctx, old, "req-a4"), errcode.StaleEpoch)
	_, err = a.Intervene(ctx, old, "req-a5", json.RawMessage(`{}`))
	assertCode(t, err, errcode.StaleEpoch)
	_, err = a.SendControlled(ctx, old, client.SendRequest{RequestID: "req-a6", Parts: []a2atask.Part{{Kind: "text", Text: "run"}}})
	assertCode(t, err, errcode.StaleEpoch)
	_, err = a.CancelControlled(ctx, old, "req-a7", ans.Task.ID)
	assertCode(t, err, errcode.StaleEpoch)
	_, err = a.ClaimControl(ctx, claim("camp-1", "sup-a", "req-a8"))
	assertCode(t, err, errcode.LeaseHeld)

	lease, err := b.ReadControl(ctx, "camp-1")
	require.NoError(t, err)
	assert.Equal(t, second, lease)
}

// TestCampaignControlConstraints: a mutation cannot relax what the claim
// set (-32053).
func TestCampaignControlConstraints(t *testing.T) {
	r := newCampaignRemote(fullControl)
	c := dialCampaign(t, r, "ws-1")
	ctx := context.Background()
	lease, err := c.ClaimControl(ctx, claim("camp-1", "sup-a", "req-1"))
	require.NoError(t, err)
	relaxed := client.StrictConstraints()
	relaxed.NoPublication = false
	_, err = c.Intervene(ctx, client.Control{CampaignID: "camp-1", ControllerID: "sup-a", Epoch: lease.Epoch, Constraints: &relaxed},
		"req-2", json.RawMessage(`{"publish":true}`))
	assertCode(t, err, errcode.PolicyRefused)
}

// TestCampaignControlWorkspaces: another workspace does not see the
// campaign's lease.
func TestCampaignControlWorkspaces(t *testing.T) {
	r := newCampaignRemote(fullControl)
	mine, other := dialCampaign(t, r, "ws-1"), dialCampaign(t, r, "ws-2")
	_, err := mine.ClaimControl(context.Background(), claim("camp-1", "sup-a", "req-1"))
	require.NoError(t, err)
	lease, err := other.ReadControl(context.Background(), "camp-1")
	require.NoError(t, err)
	assert.Nil(t, lease)
}

// TestCampaignControlAdvertisement: what the card advertises decides what
// the client calls; nothing unadvertised is sent.
func TestCampaignControlAdvertisement(t *testing.T) {
	mutations := []client.Operation{client.OpClaimControl, client.OpRenewControl, client.OpReleaseControl, client.OpIntervene, client.OpControlSend, client.OpControlCancel}
	tests := []struct {
		name      string
		params    string
		available []client.Operation
	}{
		{"no extension", ``, nil},
		{"no enforcement: an observer", `{"operations":{"read_control":"campaign/read_control","request_status":"campaign/request_status","claim_control":"campaign/claim_control","cancel":"tasks/cancel"}}`,
			[]client.Operation{client.OpReadControl, client.OpRequestStatus}},
		{"lease enforcement only", `{"lease_epoch_enforced":true,"operations":{"claim_control":"campaign/claim_control"}}`, nil},
		{"another method name", `{"lease_epoch_enforced":true,"policy_enforced":true,"operations":{"claim_control":"message/send","read_control":"campaign/read_control"}}`,
			[]client.Operation{client.OpReadControl, client.OpControlSend}},
		{"malformed params", `{"lease_epoch_enforced":true,"policy_enforced":true,"operations":["claim_control"]}`, nil},
		{"all", fullControl, append([]client.Operation{client.OpReadControl, client.OpRequestStatus}, mutations...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			params := tt.params
			if params == "" {
				params = `null`
			}
			r := newCampaignRemote(params)
			c := dialCampaign(t, r, "ws-1")
			for _, op := range append([]client.Operation{client.OpReadControl, client.OpRequestStatus}, mutations...) {
				want := client.CapabilityUnavailable
				for _, a := range tt.available {
					if a == op {
						want = client.CapabilityTentative
					}
				}
				assert.Equal(t, want, c.Capability(op), op)
			}
			ctx := context.Background()
			ctl := client.Control{CampaignID: "camp-1", ControllerID: "sup-a", Epoch: 1}
			errs := map[client.Operation]error{}
			_, errs[client.OpClaimControl] = c.ClaimControl(ctx, claim("camp-1", "sup-a", "req-1"))
			_, errs[client.OpRenewControl] = c.RenewControl(ctx, ctl, "req-2", time.Minute)
			errs[client.OpReleaseControl] = c.ReleaseControl(ctx, ctl, "req-3")
			_, errs[client.OpIntervene] = c.Intervene(ctx, ctl, "req-4", json.RawMessage(`{}`))
			_, errs[client.OpControlSend] = c.SendControlled(ctx, ctl, client.SendRequest{RequestID: "req-5", Parts: []a2atask.Part{{Kind: "text", Text: "x"}}})
			_, errs[client.OpControlCancel] = c.CancelControlled(ctx, ctl, "req-6", "task-1")
			for op, err := range errs {
				if c.Capability(op) == client.CapabilityUnavailable {
					assert.ErrorIs(t, err, client.ErrUnavailable, op)
				}
			}
			calls := 0
			for _, op := range mutations {
				if c.Capability(op) != client.CapabilityUnavailable {
					calls++
				}
			}
			assert.Equal(t, calls, r.callCount(), "only advertised operations reach the remote")
		})
	}
}

// TestCampaignControlAmbiguity: a claim whose answer is lost is ambiguous;
// read_control and request_status resolve it, and request_status's
// unknown is not not_applied.
func TestCampaignControlAmbiguity(t *testing.T) {
	r := newCampaignRemote(fullControl)
	c := dialCampaign(t, r, "ws-1", client.WithCallTimeout(200*time.Millisecond))
	ctx := context.Background()
	inner := r.srv.Config.Handler
	r.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		inner.ServeHTTP(httptestDiscard{}, req) // the claim is applied, its answer lost
		<-req.Context().Done()
	})
	_, err := c.ClaimControl(ctx, claim("camp-1", "sup-a", "req-claim"))
	var amb *client.AmbiguousError
	require.ErrorAs(t, err, &amb)
	assert.Equal(t, "req-claim", amb.RequestID)
	assert.Equal(t, 1, r.callCount(), "never resent")
	r.srv.Config.Handler = inner

	lease, err := c.ReadControl(ctx, "camp-1")
	require.NoError(t, err)
	assert.Equal(t, "sup-a", lease.ControllerID, "read back: the claim was applied")
	st, err := c.RequestStatus(ctx, "camp-1", "req-claim")
	require.NoError(t, err)
	assert.Equal(t, client.RequestApplied, st.State)

	r.mu.Lock()
	r.forgot["req-old"] = true
	r.mu.Unlock()
	st, err = c.RequestStatus(ctx, "camp-1", "req-old")
	require.NoError(t, err)
	assert.Equal(t, client.RequestUnknown, st.State)
}

// httptestDiscard is a ResponseWriter that drops the answer.
type httptestDiscard struct{}

func (httptestDiscard) Header() http.Header         { return http.Header{} }
func (httptestDiscard) Write(b []byte) (int, error) { return len(b), nil }
func (httptestDiscard) WriteHeader(int)             {}

// TestCampaignControlInvalid: arguments checked before anything is sent;
// answers that contradict the call refused (ambiguously for a mutation).
func TestCampaignControlInvalid(t *testing.T) {
	r := newCampaignRemote(fullControl)
	c := dialCampaign(t, r, "ws-1")
	ctx := context.Background()
	ctl := client.Control{CampaignID: "camp-1", ControllerID: "sup-a", Epoch: 1}
	for name, err := range map[string]error{
		"ttl fraction": func() error {
			_, err := c.ClaimControl(ctx, client.Claim{CampaignID: "c", ControllerID: "s", TTL: 1500 * time.Millisecond, RequestID: "r"})
			return err
		}(),
		"ttl zero": func() error { _, err := c.RenewControl(ctx, ctl, "r", 0); return err }(),
		"no request id": func() error {
			_, err := c.ClaimControl(ctx, client.Claim{CampaignID: "c", ControllerID: "s", TTL: time.Minute})
			return err
		}(),
		"no campaign":  func() error { _, err := c.ReadControl(ctx, ""); return err }(),
		"status no id": func() error { _, err := c.RequestStatus(ctx, "c", ""); return err }(),
		"negative":     c.ReleaseControl(ctx, client.Control{CampaignID: "c", ControllerID: "s", Epoch: -1}, "r"),
		"params":       func() error { _, err := c.Intervene(ctx, ctl, "r", json.RawMessage(`[1]`)); return err }(),
		"cancel no id": func() error { _, err := c.CancelControlled(ctx, ctl, "r", ""); return err }(),
		"send no id":   func() error { _, err := c.SendControlled(ctx, client.Control{}, client.SendRequest{}); return err }(),
	} {
		assert.ErrorIs(t, err, client.ErrInvalidRequest, name)
	}
	assert.Zero(t, r.callCount())

	for method, result := range map[string]string{
		"campaign/claim_control":  `{"lease":{"controller_id":"someone-else","epoch":1,"expires_at":5}}`,
		"campaign/renew_control":  `{"lease":{"controller_id":"sup-a","epoch":7,"expires_at":5}}`,
		"campaign/request_status": `{"request_id":"another","state":"applied","task_id":"t"}`,
		"campaign/read_control":   `{"lease":{"controller_id":"","epoch":1,"expires_at":5}}`,
	} {
		hostile := newRemote(t, false, `{"name":"R","skills":[],"url":"{{base}}/a2a","protocolVersion":"0.3.0",
			"capabilities":{"extensions":[{"uri":"urn:openoperator:campaign-control:v1","params":`+fullControl+`}]}}`,
			func(w http.ResponseWriter, call rpcCall) { reply(w, call, result) })
		hc := hostile.dial(t)
		var err error
		switch method {
		case "campaign/claim_control":
			_, err = hc.ClaimControl(ctx, claim("camp-1", "sup-a", "req-1"))
		case "campaign/renew_control":
			_, err = hc.RenewControl(ctx, ctl, "req-1", time.Minute)
		case "campaign/request_status":
			_, err = hc.RequestStatus(ctx, "camp-1", "req-1")
		case "campaign/read_control":
			_, err = hc.ReadControl(ctx, "camp-1")
		}
		require.ErrorIs(t, err, client.ErrInvalidAnswer, method)
		var amb *client.AmbiguousError
		assert.Equal(t, method == "campaign/claim_control" || method == "campaign/renew_control", errors.As(err, &amb), method)
	}
}
