package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go"
	a2aclient "github.com/supervaize/supervaizer-go/a2a/client"
	"github.com/supervaize/supervaizer-go/a2atask"
	"github.com/supervaize/supervaizer-go/errcode"
	svtest "github.com/supervaize/supervaizer-go/testing"
)

// The campaign-control extension on two processes of the example sharing
// one PostgreSQL schema, driven by supervisors through package a2a/client
// (docs/supervised.md).

// campaignScopes are the scopes of the supervisors' tokens.
var campaignScopes = []string{supervaizer.MethodActionInvoke, actionStart, actionSync, actionStop,
	"campaign/claim_control", "campaign/read_control", "campaign/renew_control", "campaign/release_control",
	"campaign/intervene", "campaign/request_status"}

// supervisorOf is a supervisor's client of process p for workspace ws.
func (c *cluster) supervisorOf(t *testing.T, p *agentProc, ws workspace) *a2aclient.Client {
	t.Helper()
	tok := c.studio.Mint(c.studio.Claims(svtest.Grant{WorkspaceID: ws.id, WorkspaceSlug: ws.slug, AgentSlug: agentSlug, Scopes: campaignScopes}))
	cl, err := a2aclient.New(context.Background(), p.url, a2aclient.AllowLoopback(), a2aclient.WithCallTimeout(httpTimeout),
		a2aclient.WithHeader(supervaizer.HeaderAPIKey, testAPIKey), a2aclient.WithHeader(supervaizer.HeaderWorkspaceAuthorization, tok))
	require.NoError(t, err)
	return cl
}

// remoteCode is the JSON-RPC code of a refusal by the remote (0 otherwise).
func remoteCode(err error) errcode.Code {
	var re *a2aclient.Error
	if errors.As(err, &re) {
		return re.Code
	}
	return 0
}

// researchParts is the data part of a job.start on topic.
func researchParts(t *testing.T, topic string) []a2atask.Part {
	b, err := json.Marshal(map[string]any{"action": actionStart, "input": map[string]any{"topic_id": topic}})
	require.NoError(t, err)
	return []a2atask.Part{{Kind: "data", Data: b}}
}

// exampleConstraints is what the example enforces: remote only, no publication.
var exampleConstraints = &a2aclient.Constraints{RemoteOnly: true, NoPublication: true}

func TestCampaignControlPostgres(t *testing.T) {
	c := startCluster(t, 2, nil)
	ctx := context.Background()
	const camp = "campaign-eu-batteries"
	sups := make([]*a2aclient.Client, 6)
	for i := range sups {
		sups[i] = c.supervisorOf(t, c.procs[i%2], wsA)
	}
	on := [2]*a2aclient.Client{sups[0], sups[1]} // a client of each instance, for reads and refusals

	t.Run("the card", func(t *testing.T) {
		ext, ok := sups[0].Card().Extension(a2aclient.CampaignControlURI)
		require.True(t, ok)
		var p struct {
			Lease  bool            `json:"lease_epoch_enforced"`
			Policy bool            `json:"policy_enforced"`
			Cons   map[string]bool `json:"constraints"`
		}
		require.NoError(t, json.Unmarshal(ext.Params, &p))
		assert.True(t, p.Lease && p.Policy)
		assert.Equal(t, map[string]bool{"remote_only": true, "no_publication": true, "no_destructive_git": false,
			"no_credential_changes": false, "no_force_push": false, "no_merge": false}, p.Cons)
	})

	// Six supervisors race for the campaign through both instances.
	const ttl = 2 * time.Second
	leases := make([]*a2aclient.Lease, len(sups))
	errs := make([]error, len(sups))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, s := range sups {
		wg.Go(func() {
			<-start
			leases[i], errs[i] = s.ClaimControl(ctx, a2aclient.Claim{CampaignID: camp, ControllerID: fmt.Sprintf("sup-%d", i),
				TTL: ttl, RequestID: fmt.Sprintf("claim-%d", i), Constraints: exampleConstraints})
		})
	}
	close(start)
	wg.Wait()
	winner := -1
	for i, err := range errs {
		if err == nil {
			require.Equal(t, -1, winner, "two supervisors hold the lease: %d and %d", winner, i)
			winner = i
			continue
		}
		assert.Equal(t, errcode.LeaseHeld, remoteCode(err), "supervisor %d: %v", i, err)
	}
	require.NotEqual(t, -1, winner, "no supervisor holds the lease")
	held := leases[winner]
	assert.Equal(t, int64(1), held.Epoch)
	for i, s := range on {
		got, err := s.ReadControl(ctx, camp)
		require.NoError(t, err)
		assert.Equal(t, held, got, "instance %d reads the one lease", i+1)
	}
	_, err := c.supervisorOf(t, c.procs[1], wsB).ReadControl(ctx, camp)
	assert.Equal(t, errcode.TaskNotFound, remoteCode(err), "another workspace's campaign is not found: %v", err)

	// The holder starts a job under the lease: the campaign's bound task.
	w := sups[winner]
	stale := a2aclient.Control{CampaignID: camp, ControllerID: fmt.Sprintf("sup-%d", winner), Epoch: held.Epoch}
	bound, err := w.SendControlled(ctx, stale, a2aclient.SendRequest{RequestID: "bound-1", Parts: researchParts(t, "eu-battery-market")})
	require.NoError(t, err)
	require.NotNil(t, bound.Task)
	out, err := w.Intervene(ctx, stale, "status-1", json.RawMessage(`{"kind":"status"}`))
	require.NoError(t, err)
	assert.JSONEq(t, `{"accepted":true,"campaign_id":"`+camp+`","policy":{"remote_only":true,"no_publication":true,
		"no_destructive_git":false,"no_credential_changes":false,"no_force_push":false,"no_merge":false}}`, string(out))
	_, err = w.Intervene(ctx, stale, "publish-1", json.RawMessage(`{"kind":"publish"}`))
	assert.Equal(t, errcode.PolicyRefused, remoteCode(err), "no publication under this campaign")

	// After expiry, another supervisor takes over through the other instance.
	time.Sleep(time.Until(held.Expires().Add(100 * time.Millisecond)))
	next := (winner + 1) % len(sups)
	taken, err := sups[next].ClaimControl(ctx, a2aclient.Claim{CampaignID: camp, ControllerID: fmt.Sprintf("sup-%d", next),
		TTL: time.Minute, RequestID: "takeover", Constraints: exampleConstraints})
	require.NoError(t, err)
	assert.Equal(t, held.Epoch+1, taken.Epoch, "a takeover raises the epoch")

	// Every mutation with the stale epoch is refused, on both instances.
	for i, s := range on {
		_, err := s.RenewControl(ctx, stale, fmt.Sprintf("renew-stale-%d", i), time.Minute)
		assert.Equal(t, errcode.StaleEpoch, remoteCode(err), "renew on instance %d: %v", i+1, err)
		err = s.ReleaseControl(ctx, stale, fmt.Sprintf("release-stale-%d", i))
		assert.Equal(t, errcode.StaleEpoch, remoteCode(err), "release on instance %d: %v", i+1, err)
		_, err = s.Intervene(ctx, stale, fmt.Sprintf("intervene-stale-%d", i), json.RawMessage(`{"kind":"status"}`))
		assert.Equal(t, errcode.StaleEpoch, remoteCode(err), "intervene on instance %d: %v", i+1, err)
		_, err = s.SendControlled(ctx, stale, a2aclient.SendRequest{RequestID: fmt.Sprintf("send-stale-%d", i), Parts: researchParts(t, "solid-state")})
		assert.Equal(t, errcode.StaleEpoch, remoteCode(err), "send on instance %d: %v", i+1, err)
		_, err = s.CancelControlled(ctx, stale, fmt.Sprintf("cancel-stale-%d", i), bound.Task.ID)
		assert.Equal(t, errcode.StaleEpoch, remoteCode(err), "cancel on instance %d: %v", i+1, err)
		st, err := s.RequestStatus(ctx, camp, fmt.Sprintf("send-stale-%d", i))
		require.NoError(t, err)
		assert.Equal(t, a2aclient.RequestNotApplied, st.State)
	}

	// A supervisor killed mid-send: read back, then retry with the same id.
	ctl := a2aclient.Control{CampaignID: camp, ControllerID: fmt.Sprintf("sup-%d", next), Epoch: taken.Epoch}
	jobs := map[string]string{} // request id -> task id
	for i, d := range []time.Duration{0, time.Millisecond, 5 * time.Millisecond, 20 * time.Millisecond, 100 * time.Millisecond} {
		reqID := fmt.Sprintf("killed-%d", i)
		killed, cancel := context.WithTimeout(ctx, d)
		_, _ = sups[next].SendControlled(killed, ctl, a2aclient.SendRequest{RequestID: reqID, Parts: researchParts(t, fmt.Sprintf("topic-%d", i))})
		cancel()
		var st *a2aclient.RequestStatus
		waitUntil(t, clusterTimeout, func() bool {
			st, err = on[(i+1)%2].RequestStatus(ctx, camp, reqID)
			require.NoError(t, err)
			return st.State != a2aclient.RequestPending
		}, "request %s stays pending", reqID)
		require.Contains(t, []a2aclient.RequestState{a2aclient.RequestApplied, a2aclient.RequestNotApplied}, st.State, reqID)
		if st.State == a2aclient.RequestApplied {
			require.NotEmpty(t, st.TaskID)
		}
		retry, err := on[i%2].SendControlled(ctx, ctl, a2aclient.SendRequest{RequestID: reqID, Parts: researchParts(t, fmt.Sprintf("topic-%d", i))})
		require.NoError(t, err, reqID)
		if st.State == a2aclient.RequestApplied {
			assert.Equal(t, st.TaskID, retry.Task.ID, "the retry of %s is the same task", reqID)
		}
		again, err := on[(i+1)%2].RequestStatus(ctx, camp, reqID)
		require.NoError(t, err)
		assert.Equal(t, &a2aclient.RequestStatus{RequestID: reqID, State: a2aclient.RequestApplied, TaskID: retry.Task.ID}, again)
		jobs[reqID] = retry.Task.ID
		t.Logf("%s: killed after %v, read back %s", reqID, d, st.State)
	}
	created, _ := c.handlerRuns()
	for reqID, task := range jobs {
		assert.Equal(t, 1, created[task], "request %s started job %s once", reqID, task)
	}

	// The bound task of the new holder can be canceled; not under the stale epoch.
	_, err = on[1].CancelControlled(ctx, ctl, "cancel-bound", jobs["killed-4"])
	require.NoError(t, err)
}
