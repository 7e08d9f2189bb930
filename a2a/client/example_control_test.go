package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/supervaize/supervaizer-go/a2a/client"
	"github.com/supervaize/supervaizer-go/a2atask"
)

// supervise returns a client of a fake agent serving campaign control (the
// caller closes r.srv) and the lease it holds on campaign "camp-1".
func supervise() (*client.Client, *campaignRemote, client.Control, error) {
	r := newCampaignRemote(fullControl)
	c, err := client.New(context.Background(), r.srv.URL, client.AllowLoopback())
	if err != nil {
		return nil, r, client.Control{}, err
	}
	lease, err := c.ClaimControl(context.Background(), client.Claim{CampaignID: "camp-1", ControllerID: "sup-a", TTL: time.Minute, RequestID: "claim-1"})
	if err != nil {
		return nil, r, client.Control{}, err
	}
	return c, r, client.Control{CampaignID: "camp-1", ControllerID: "sup-a", Epoch: lease.Epoch}, nil
}

func ExampleCampaignControlURI() {
	card, err := client.DecodeCard([]byte(`{"name":"Agent","skills":[],"capabilities":{"extensions":[
		{"uri":"urn:openoperator:campaign-control:v1","params":{"lease_epoch_enforced":true,"policy_enforced":true}}]}}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	_, ok := card.Extension(client.CampaignControlURI)
	fmt.Println(ok)
	// Output: true
}

func ExampleClient_ClaimControl() {
	r := newCampaignRemote(fullControl)
	defer r.srv.Close()
	ctx := context.Background()
	c, err := client.New(ctx, r.srv.URL, client.AllowLoopback())
	if err != nil {
		fmt.Println(err)
		return
	}
	strict := client.StrictConstraints()
	lease, err := c.ClaimControl(ctx, client.Claim{CampaignID: "camp-1", ControllerID: "sup-a", TTL: time.Minute,
		RequestID: "claim-1", Constraints: &strict})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(lease.ControllerID, lease.Epoch)
	_, err = c.ClaimControl(ctx, client.Claim{CampaignID: "camp-1", ControllerID: "sup-b", TTL: time.Minute, RequestID: "claim-2"})
	fmt.Println(err)
	// Output:
	// sup-a 1
	// a2a client: campaign/claim_control: error -32050: the lease is held by another controller
}

func ExampleClient_ReadControl() {
	c, r, _, err := supervise()
	defer r.srv.Close()
	if err != nil {
		fmt.Println(err)
		return
	}
	lease, err := c.ReadControl(context.Background(), "camp-1")
	fmt.Println(lease.ControllerID, lease.Epoch, err)
	none, err := c.ReadControl(context.Background(), "camp-2")
	fmt.Println(none == nil, err)
	// Output:
	// sup-a 1 <nil>
	// true <nil>
}

func ExampleClient_RenewControl() {
	c, r, ctl, err := supervise()
	defer r.srv.Close()
	if err != nil {
		fmt.Println(err)
		return
	}
	lease, err := c.RenewControl(context.Background(), ctl, "renew-1", 5*time.Minute)
	fmt.Println(lease.Epoch == ctl.Epoch, err)
	// Output: true <nil>
}

func ExampleClient_ReleaseControl() {
	c, r, ctl, err := supervise()
	defer r.srv.Close()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(c.ReleaseControl(context.Background(), ctl, "release-1"))
	lease, _ := c.ReadControl(context.Background(), "camp-1")
	fmt.Println(lease == nil)
	// Output:
	// <nil>
	// true
}

func ExampleClient_Intervene() {
	c, r, ctl, err := supervise()
	defer r.srv.Close()
	if err != nil {
		fmt.Println(err)
		return
	}
	out, err := c.Intervene(context.Background(), ctl, "intervene-1", json.RawMessage(`{"action":"pause"}`))
	fmt.Println(string(out), err)
	// Output: {"accepted":true,"params":{"action":"pause"}} <nil>
}

func ExampleClient_RequestStatus() {
	c, r, ctl, err := supervise()
	defer r.srv.Close()
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	_, err = c.SendControlled(ctx, ctl, client.SendRequest{RequestID: "run-1", Parts: []a2atask.Part{{Kind: "text", Text: "run"}}})
	var amb *client.AmbiguousError
	if errors.As(err, &amb) || err == nil {
		st, err := c.RequestStatus(ctx, ctl.CampaignID, "run-1")
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(st.State, st.TaskID) // only not_applied would allow a new attempt
	}
	// Output: applied task-run-1
}

func ExampleClient_SendControlled() {
	c, r, ctl, err := supervise()
	defer r.srv.Close()
	if err != nil {
		fmt.Println(err)
		return
	}
	ans, err := c.SendControlled(context.Background(), ctl, client.SendRequest{RequestID: "run-1",
		Parts: []a2atask.Part{{Kind: "text", Text: "run the evaluation"}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(ans.Task.ID, ans.Task.Status.State)
	// Output: task-run-1 working
}

func ExampleClient_CancelControlled() {
	c, r, ctl, err := supervise()
	defer r.srv.Close()
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	ans, err := c.SendControlled(ctx, ctl, client.SendRequest{RequestID: "run-1", Parts: []a2atask.Part{{Kind: "text", Text: "run"}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	task, err := c.CancelControlled(ctx, ctl, "cancel-1", ans.Task.ID)
	fmt.Println(task.Status.State, err)
	// Output: canceled <nil>
}

func ExampleLease() {
	lease := client.Lease{ControllerID: "sup-a", Epoch: 2, ExpiresAt: 1_000_060}
	b, _ := json.Marshal(lease)
	fmt.Println(string(b))
	// Output: {"controller_id":"sup-a","epoch":2,"expires_at":1000060}
}

func ExampleLease_Expires() {
	lease := client.Lease{ControllerID: "sup-a", Epoch: 2, ExpiresAt: 1_000_060}
	fmt.Println(lease.Expires().UTC().Format(time.RFC3339))
	// Output: 1970-01-12T13:47:40Z
}

func ExampleConstraints() {
	c := client.StrictConstraints()
	b, _ := json.Marshal(c)
	fmt.Println(string(b))
	// Output: {"remote_only":true,"no_publication":true,"no_destructive_git":true,"no_credential_changes":true,"no_force_push":true,"no_merge":true}
}

func ExampleStrictConstraints() {
	c := client.StrictConstraints()
	c.NoMerge = false // a relaxation the remote's policy may refuse (-32053)
	fmt.Println(c.RemoteOnly, c.NoMerge)
	// Output: true false
}

func ExampleClaim() {
	claim := client.Claim{CampaignID: "camp-1", ControllerID: "sup-a", TTL: 1500 * time.Millisecond, RequestID: "claim-1"}
	r := newCampaignRemote(fullControl)
	defer r.srv.Close()
	c, err := client.New(context.Background(), r.srv.URL, client.AllowLoopback())
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = c.ClaimControl(context.Background(), claim) // nothing is sent
	fmt.Println(err)
	// Output: a2a client: invalid request: the TTL must be a whole number of seconds, at least one
}

func ExampleControl() {
	c, r, ctl, err := supervise()
	defer r.srv.Close()
	if err != nil {
		fmt.Println(err)
		return
	}
	stale := ctl
	stale.Epoch-- // a lease taken over since
	_, err = c.RenewControl(context.Background(), stale, "renew-1", time.Minute)
	fmt.Println(err)
	// Output: a2a client: campaign/renew_control: error -32051: the controller epoch is stale
}

func ExampleRequestState() {
	for _, s := range []client.RequestState{client.RequestApplied, client.RequestNotApplied, client.RequestPending, client.RequestUnknown} {
		fmt.Println(s, s == client.RequestNotApplied) // only not_applied allows a new attempt
	}
	// Output:
	// applied false
	// not_applied true
	// pending false
	// unknown false
}

func ExampleRequestStatus() {
	var st client.RequestStatus
	err := json.Unmarshal([]byte(`{"request_id":"run-1","state":"applied","task_id":"task-9"}`), &st)
	fmt.Println(st.RequestID, st.State, st.TaskID, err)
	// Output: run-1 applied task-9 <nil>
}
