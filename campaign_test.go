package supervaizer_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	supervaizer "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/a2a/client"
	"github.com/supervaize/supervaizer-go/a2atask"
	"github.com/supervaize/supervaizer-go/campaign"
	"github.com/supervaize/supervaizer-go/errcode"
	"github.com/supervaize/supervaizer-go/store"
	svtest "github.com/supervaize/supervaizer-go/testing"
)

// campaignScopes are the scopes of every campaign-control call, send and
// cancel included.
var campaignScopes = []string{supervaizer.MethodActionInvoke, "job.start", "job.sync", "job.stop",
	"campaign/claim_control", "campaign/read_control", "campaign/renew_control", "campaign/release_control",
	"campaign/intervene", "campaign/request_status"}

// campaignPolicy is what the task agent enforces in these tests.
var campaignPolicy = campaign.Policy{RemoteOnly: true, NoPublication: true}

// campaignConstraints is the envelope the supervisors of these tests send.
var campaignConstraints = &client.Constraints{RemoteOnly: true, NoPublication: true}

// campaignEnv is the task agent serving campaign control behind HTTP.
type campaignEnv struct {
	fake   *svtest.FakeStudio
	jobs   *taskJobs
	url    string
	mu     sync.Mutex
	policy []campaign.Policy // what the intervention handler saw
}

func newCampaignEnv(t *testing.T, fake *svtest.FakeStudio, backend store.Backend) *campaignEnv {
	t.Helper()
	if fake == nil {
		fake = svtest.NewFakeStudio(t)
	}
	env := &campaignEnv{fake: fake}
	a := newTaskAgent(t, "job.stop", "job.sync")
	env.fake.Link(a, testStudioAgentID)
	require.NoError(t, a.ServeCampaignControl(campaign.Control{Enforces: campaignPolicy,
		Intervene: func(ctx context.Context, in campaign.Intervention) (json.RawMessage, error) {
			pol, ok := campaign.PolicyFrom(ctx)
			if !ok || pol != in.Policy {
				return nil, errors.New("the policy is not in the context")
			}
			env.mu.Lock()
			env.policy = append(env.policy, pol)
			env.mu.Unlock()
			if string(in.Params) == `{"publish":true}` && in.Policy.NoPublication {
				return nil, campaign.ErrPolicy
			}
			return json.RawMessage(`{"accepted":true}`), nil
		}}))
	opts := []supervaizer.Option{supervaizer.WithWorkspaceAuth(testWorkspaceAuth(env.fake)), supervaizer.WithAPIKey(campaignA2AKey, supervaizer.ScopeA2A)}
	if backend != nil {
		opts = append(opts, supervaizer.WithBackend(backend))
	}
	srv, jobs := serveTaskAgent(t, a, opts...)
	env.jobs = jobs
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	env.url = hs.URL
	return env
}

// campaignA2AKey is the supervisors' API key: an a2a-scoped one (spec item 71).
const campaignA2AKey = "campaign-a2a-key-0123456789abcdef"

// supervisor is a client of env for workspace ws.
func (env *campaignEnv) supervisor(t *testing.T, ws string, scopes ...string) *client.Client {
	t.Helper()
	if scopes == nil {
		scopes = campaignScopes
	}
	tok := mintToken(env.fake, func(c *svtest.Claims) {
		taskClaims(scopes...)(c)
		c.WorkspaceID = ws
	})
	c, err := client.New(context.Background(), env.url, client.AllowLoopback(),
		client.WithHeader(supervaizer.HeaderAPIKey, campaignA2AKey), client.WithHeader(supervaizer.HeaderWorkspaceAuthorization, tok))
	require.NoError(t, err)
	return c
}

// refusedWith asserts err is the remote's refusal code.
func refusedWith(t *testing.T, err error, code errcode.Code) {
	t.Helper()
	var re *client.Error
	require.ErrorAs(t, err, &re)
	assert.Equal(t, code, re.Code, "%v", err)
}

func claim(campaign, controller, requestID string, ttl time.Duration) client.Claim {
	return client.Claim{CampaignID: campaign, ControllerID: controller, TTL: ttl, RequestID: requestID, Constraints: campaignConstraints}
}

// startPart is job.start's data part.
func startPart(t *testing.T, topic string) []a2atask.Part {
	b, err := json.Marshal(map[string]any{"action": "job.start", "input": map[string]any{"topic_id": topic, "status": "active"}})
	require.NoError(t, err)
	return []a2atask.Part{{Kind: "data", Data: b}}
}

// TestCampaignControlCard: the card advertises the extension with its
// operations and both enforcement flags only on an agent that serves it.
func TestCampaignControlCard(t *testing.T) {
	env := newCampaignEnv(t, nil, nil)
	c := env.supervisor(t, testWorkspaceID)
	for _, op := range []client.Operation{client.OpClaimControl, client.OpReadControl, client.OpRenewControl, client.OpReleaseControl,
		client.OpIntervene, client.OpRequestStatus, client.OpControlCancel, client.OpControlSend} {
		assert.NotEqual(t, client.CapabilityUnavailable, c.Capability(op), op)
	}
	ext, ok := c.Card().Extension(client.CampaignControlURI)
	require.True(t, ok)
	assert.JSONEq(t, `{"lease_epoch_enforced":true,"policy_enforced":true,"operations":{"claim_control":"campaign/claim_control",
		"read_control":"campaign/read_control","renew_control":"campaign/renew_control","release_control":"campaign/release_control",
		"intervene":"campaign/intervene","request_status":"campaign/request_status","cancel":"tasks/cancel"},
		"constraints":{"remote_only":true,"no_publication":true,"no_destructive_git":false,"no_credential_changes":false,"no_force_push":false,"no_merge":false}}`,
		string(ext.Params))

	plain, _ := newTaskServer(t, supervaizer.WithLocalMode(true))
	hs := httptest.NewServer(plain)
	defer hs.Close()
	pc, err := client.New(context.Background(), hs.URL, client.AllowLoopback(), client.WithHeader(supervaizer.HeaderAPIKey, testWriteKey))
	require.NoError(t, err)
	_, ok = pc.Card().Extension(client.CampaignControlURI)
	assert.False(t, ok, "an agent that does not serve it does not advertise it")
	assert.Equal(t, client.CapabilityUnavailable, pc.Capability(client.OpClaimControl))

	a := newTaskAgent(t)
	assert.Error(t, a.ServeCampaignControl(campaign.Control{}), "an agent enforcing nothing cannot serve it")
}

// TestCampaignControlLease: one holder at a time, a takeover after expiry
// raises the epoch, the stale epoch is refused on every mutation; another
// workspace's campaign is not found; the token needs the method's scope.
func TestCampaignControlLease(t *testing.T) {
	env := newCampaignEnv(t, nil, nil)
	ctx := context.Background()
	a, b := env.supervisor(t, testWorkspaceID), env.supervisor(t, testWorkspaceID)

	la, err := a.ClaimControl(ctx, claim("camp-1", "sup-a", "claim-a", time.Second))
	require.NoError(t, err)
	assert.Equal(t, int64(1), la.Epoch)
	_, err = b.ClaimControl(ctx, claim("camp-1", "sup-b", "claim-b", time.Minute))
	refusedWith(t, err, errcode.LeaseHeld)
	read, err := b.ReadControl(ctx, "camp-1")
	require.NoError(t, err)
	assert.Equal(t, la, read)

	_, err = env.supervisor(t, "ws-2").ReadControl(ctx, "camp-1")
	refusedWith(t, err, errcode.TaskNotFound)
	_, err = env.supervisor(t, testWorkspaceID, supervaizer.MethodActionInvoke).ReadControl(ctx, "camp-1")
	refusedWith(t, err, errcode.Unauthorized)

	// A task started under the lease is its bound task.
	ctlA := client.Control{CampaignID: "camp-1", ControllerID: "sup-a", Epoch: la.Epoch}
	ans, err := a.SendControlled(ctx, ctlA, client.SendRequest{RequestID: "send-a", Parts: startPart(t, "t1")})
	require.NoError(t, err)
	require.NotNil(t, ans.Task)

	time.Sleep(time.Until(la.Expires().Add(50 * time.Millisecond)))
	_, err = a.RenewControl(ctx, ctlA, "renew-late", time.Minute)
	refusedWith(t, err, errcode.LeaseExpired)
	lb, err := b.ClaimControl(ctx, claim("camp-1", "sup-b", "claim-b2", time.Minute))
	require.NoError(t, err)
	assert.Equal(t, la.Epoch+1, lb.Epoch, "a takeover raises the epoch")

	calls := env.jobs.count()
	_, err = a.RenewControl(ctx, ctlA, "renew-stale", time.Minute)
	refusedWith(t, err, errcode.StaleEpoch)
	err = a.ReleaseControl(ctx, ctlA, "release-stale")
	refusedWith(t, err, errcode.StaleEpoch)
	_, err = a.Intervene(ctx, ctlA, "intervene-stale", json.RawMessage(`{"pause":true}`))
	refusedWith(t, err, errcode.StaleEpoch)
	_, err = a.SendControlled(ctx, ctlA, client.SendRequest{RequestID: "send-stale", Parts: startPart(t, "t2")})
	refusedWith(t, err, errcode.StaleEpoch)
	_, err = a.CancelControlled(ctx, ctlA, "cancel-stale", ans.Task.ID)
	refusedWith(t, err, errcode.StaleEpoch)
	assert.Equal(t, calls, env.jobs.count(), "no handler ran for a stale epoch")
	st, err := a.RequestStatus(ctx, "camp-1", "send-stale")
	require.NoError(t, err)
	assert.Equal(t, client.RequestNotApplied, st.State)

	ctlB := client.Control{CampaignID: "camp-1", ControllerID: "sup-b", Epoch: lb.Epoch}
	renewed, err := b.RenewControl(ctx, ctlB, "renew-b", 2*time.Minute)
	require.NoError(t, err)
	assert.Greater(t, renewed.ExpiresAt, lb.ExpiresAt)
	require.NoError(t, b.ReleaseControl(ctx, ctlB, "release-b"))
	read, err = b.ReadControl(ctx, "camp-1")
	require.NoError(t, err)
	assert.Nil(t, read, "released")
	lc, err := a.ClaimControl(ctx, claim("camp-1", "sup-a", "claim-a3", time.Minute))
	require.NoError(t, err)
	assert.Equal(t, lb.Epoch+1, lc.Epoch, "a claim after a release raises the epoch")
}

// TestCampaignControlRequestStatus: a send under the lease is answered by
// request_status from its idempotency record; a retry with the same request
// id starts no second job; the bound task only can be canceled.
func TestCampaignControlRequestStatus(t *testing.T) {
	env := newCampaignEnv(t, nil, nil)
	ctx := context.Background()
	c := env.supervisor(t, testWorkspaceID)
	l, err := c.ClaimControl(ctx, claim("camp-2", "sup", "claim-2", time.Minute))
	require.NoError(t, err)
	ctl := client.Control{CampaignID: "camp-2", ControllerID: "sup", Epoch: l.Epoch}

	st, err := c.RequestStatus(ctx, "camp-2", "send-1")
	require.NoError(t, err)
	assert.Equal(t, client.RequestNotApplied, st.State, "before the send")
	ans, err := c.SendControlled(ctx, ctl, client.SendRequest{RequestID: "send-1", Parts: startPart(t, "t")})
	require.NoError(t, err)
	starts := env.jobs.count()
	st, err = c.RequestStatus(ctx, "camp-2", "send-1")
	require.NoError(t, err)
	assert.Equal(t, &client.RequestStatus{RequestID: "send-1", State: client.RequestApplied, TaskID: ans.Task.ID}, st)
	again, err := c.SendControlled(ctx, ctl, client.SendRequest{RequestID: "send-1", Parts: startPart(t, "t")})
	require.NoError(t, err)
	assert.Equal(t, ans.Task.ID, again.Task.ID)
	assert.Equal(t, starts, env.jobs.count(), "the retry started no second job")
	st, err = c.RequestStatus(ctx, "camp-2", "claim-2")
	require.NoError(t, err)
	assert.Equal(t, client.RequestApplied, st.State, "the claim is recorded too")

	other, err := env.supervisor(t, testWorkspaceID).Send(ctx, client.SendRequest{RequestID: "free-send", Parts: startPart(t, "u")})
	require.NoError(t, err)
	_, err = c.CancelControlled(ctx, ctl, "cancel-other", other.Task.ID)
	refusedWith(t, err, errcode.PolicyRefused)
	canceled, err := c.CancelControlled(ctx, ctl, "cancel-1", ans.Task.ID)
	require.NoError(t, err)
	assert.Equal(t, a2atask.StateCanceled, canceled.Status.State)
	st, err = c.RequestStatus(ctx, "camp-2", "cancel-1")
	require.NoError(t, err)
	assert.Equal(t, &client.RequestStatus{RequestID: "cancel-1", State: client.RequestApplied, TaskID: ans.Task.ID}, st)
}

// TestCampaignControlPolicy: absent constraints are all true, refused when
// the agent cannot enforce them; no call relaxes the claim's; the handler
// receives the policy.
func TestCampaignControlPolicy(t *testing.T) {
	env := newCampaignEnv(t, nil, nil)
	ctx := context.Background()
	c := env.supervisor(t, testWorkspaceID)
	_, err := c.ClaimControl(ctx, client.Claim{CampaignID: "camp-3", ControllerID: "sup", TTL: time.Minute, RequestID: "claim-all"})
	refusedWith(t, err, errcode.PolicyRefused)
	l, err := c.ClaimControl(ctx, claim("camp-3", "sup", "claim-3", time.Minute))
	require.NoError(t, err)
	ctl := client.Control{CampaignID: "camp-3", ControllerID: "sup", Epoch: l.Epoch}

	relaxed := ctl
	relaxed.Constraints = &client.Constraints{RemoteOnly: true}
	_, err = c.RenewControl(ctx, relaxed, "renew-relaxed", time.Minute)
	refusedWith(t, err, errcode.PolicyRefused)
	_, err = c.Intervene(ctx, relaxed, "intervene-relaxed", json.RawMessage(`{"pause":true}`))
	refusedWith(t, err, errcode.PolicyRefused)
	_, err = c.ClaimControl(ctx, client.Claim{CampaignID: "camp-3", ControllerID: "sup", TTL: time.Minute, RequestID: "claim-relax",
		Constraints: &client.Constraints{}})
	refusedWith(t, err, errcode.PolicyRefused)

	out, err := c.Intervene(ctx, ctl, "intervene-1", json.RawMessage(`{"pause":true}`))
	require.NoError(t, err)
	assert.JSONEq(t, `{"accepted":true}`, string(out))
	_, err = c.Intervene(ctx, ctl, "intervene-2", json.RawMessage(`{"publish":true}`))
	refusedWith(t, err, errcode.PolicyRefused)
	env.mu.Lock()
	defer env.mu.Unlock()
	assert.Equal(t, []campaign.Policy{campaignPolicy, campaignPolicy}, env.policy)
}

// TestCampaignControlClaimRace: supervisors racing for one campaign on two
// servers sharing a backend: exactly one holds the lease.
func TestCampaignControlClaimRace(t *testing.T) {
	backend := store.NewMemoryBackend()
	fake := svtest.NewFakeStudio(t)
	envs := []*campaignEnv{newCampaignEnv(t, fake, backend), newCampaignEnv(t, fake, backend)}
	const n = 8
	var wg sync.WaitGroup
	won := make([]bool, n)
	for i := range n {
		c := envs[i%2].supervisor(t, testWorkspaceID)
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := c.ClaimControl(context.Background(), claim("race", "sup-"+string(rune('a'+i)), "claim", time.Minute))
			won[i] = err == nil
			if err != nil {
				refusedWith(t, err, errcode.LeaseHeld)
			}
		}()
	}
	wg.Wait()
	winners := 0
	for _, w := range won {
		if w {
			winners++
		}
	}
	assert.Equal(t, 1, winners)
}

// FuzzCampaignParams: any params of any campaign/* method (and of a send
// under a lease) get exactly one JSON-RPC answer: a refusal with a code of
// the extension or of JSON-RPC, or a result of the method's shape.
func FuzzCampaignParams(f *testing.F) {
	methods := []string{"campaign/claim_control", "campaign/read_control", "campaign/renew_control",
		"campaign/release_control", "campaign/intervene", "campaign/request_status", a2atask.MethodMessageSend}
	for _, seed := range []struct {
		m      uint8
		params string
	}{
		{0, `{"campaign_id":"c","controller_id":"s","ttl_seconds":60,"request_id":"r","constraints":{"remote_only":true,"no_publication":true,"no_destructive_git":false,"no_credential_changes":false,"no_force_push":false,"no_merge":false}}`},
		{0, `{"campaign_id":"c","controller_id":"s","ttl_seconds":60,"request_id":"r"}`},
		{0, `{"campaign_id":"c","controller_id":"s","ttl_seconds":1.5,"request_id":"r","constraints":{"remote_only":"yes"}}`},
		{1, `{"campaign_id":"c"}`},
		{2, `{"campaign_id":"c","controller_id":"s","controller_epoch":1,"request_id":"r2","ttl_seconds":30}`},
		{3, `{"campaign_id":"c","controller_id":"s","controller_epoch":-1,"request_id":"r3"}`},
		{4, `{"campaign_id":"c","controller_id":"s","controller_epoch":1,"request_id":"r4","params":{"pause":true}}`},
		{5, `{"campaign_id":"c","request_id":"r"}`},
		{6, `{"message":{"messageId":"m","parts":[{"kind":"data","data":{"action":"job.start","input":{"topic_id":"t"}}}]},"metadata":{"argus_supervisor":{"campaign_id":"c","controller_id":"s","controller_epoch":1,"request_id":"m"}}}`},
		{6, `{"message":{"messageId":"m","parts":[]},"metadata":{"argus_supervisor":[]}}`},
		{1, `null`}, {2, `[]`}, {5, `{"campaign_id":"","request_id":"\u0000"}`},
	} {
		f.Add(seed.m, []byte(seed.params))
	}
	a := newTaskAgent(f, "job.stop", "job.sync")
	require.NoError(f, a.ServeCampaignControl(campaign.Control{Enforces: campaignPolicy,
		Intervene: func(context.Context, campaign.Intervention) (json.RawMessage, error) {
			return json.RawMessage(`{"accepted":true}`), nil
		}}))
	srv, _ := serveTaskAgent(f, a, supervaizer.WithLocalMode(true))
	known := map[int]bool{-32700: true, -32600: true, -32601: true, -32602: true, -32603: true, -32001: true, -32002: true,
		-32050: true, -32051: true, -32052: true, -32053: true}
	f.Fuzz(func(t *testing.T, m uint8, params []byte) {
		method := methods[int(m)%len(methods)]
		body := append(append([]byte(`{"jsonrpc":"2.0","id":"f","method":"`+method+`","params":`), params...), '}')
		w := postA2A(t, srv, a2aCall{raw: body})
		require.Equal(t, http.StatusOK, w.Code, "body: %s", w.Body)
		var resp struct {
			Result json.RawMessage `json:"result"`
			Error  *rpcError       `json:"error"`
		}
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &resp), "body: %s", w.Body)
		require.True(t, (resp.Result == nil) != (resp.Error == nil), "exactly one of result and error: %s", w.Body)
		if resp.Error != nil {
			if method != a2atask.MethodMessageSend {
				require.True(t, known[resp.Error.Code], "code %d: %s", resp.Error.Code, w.Body)
			}
			return
		}
		if method == "campaign/claim_control" || method == "campaign/renew_control" {
			var l struct{ Lease *client.Lease }
			require.NoError(t, json.Unmarshal(resp.Result, &l))
			require.NotNil(t, l.Lease, "body: %s", w.Body)
			require.Positive(t, l.Lease.Epoch)
		}
	})
}

// TestCampaignControlNoBypass: a send carrying a lease where the SDK does
// not check it (a stream) is refused, whatever its epoch: no path bypasses
// the lease.
func TestCampaignControlNoBypass(t *testing.T) {
	a := newTaskAgent(t, "job.stop", "job.sync")
	require.NoError(t, a.ServeCampaignControl(campaign.Control{Enforces: campaignPolicy}))
	srv, jobs := serveTaskAgent(t, a, supervaizer.WithLocalMode(true))
	params := taskMessage("m-stream", "job.start", map[string]any{"topic_id": "t"}, func(p, _ map[string]any) {
		p["metadata"] = map[string]any{"argus_supervisor": map[string]any{"campaign_id": "c", "controller_id": "s", "controller_epoch": 1, "request_id": "m-stream"}}
	})
	w := postA2A(t, srv, a2aCall{method: a2atask.MethodMessageStream, params: params})
	assert.Contains(t, w.Body.String(), `"code":-32053`)
	assert.Zero(t, jobs.count(), "no handler ran")
}
