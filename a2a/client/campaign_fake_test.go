package client_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
)

// campaignRemote is a fake agent serving the campaign-control extension
// (spec open-questions item 85) on the A2A 0.3 binding, its wire exactly:
// leases keyed by workspace (the X-Workspace header stands for the
// verified workspace) and campaign, serialized by one mutex; epochs rising
// on every takeover; expiry enforced against its clock (now, Unix
// seconds); a stale epoch refused on every mutation (-32051), another's
// live lease -32050, an expired one -32052, a relaxed constraint -32053;
// message/send with metadata.argus_supervisor starts the campaign's bound
// task and records its request id, which campaign/request_status answers.
type campaignRemote struct {
	srv    *httptest.Server
	params string // the extension's params in the card

	mu       sync.Mutex
	now      int64
	leases   map[string]*fakeLease     // by workspace + "\n" + campaign
	requests map[string]map[string]any // request_status answers by request id
	forgot   map[string]bool           // request ids past retention
	tasks    map[string]string         // task state by id
	calls    int
}

type fakeLease struct {
	ControllerID string          `json:"controller_id"`
	Epoch        int64           `json:"epoch"`
	ExpiresAt    int64           `json:"expires_at"`
	released     bool            // no holder: the epoch stays for the next claim
	constraints  map[string]bool // what the claim set
	task         string          // the bound task
}

// fullControl advertises every operation with both enforcements.
const fullControl = `{"lease_epoch_enforced":true,"policy_enforced":true,"operations":{
	"claim_control":"campaign/claim_control","read_control":"campaign/read_control",
	"renew_control":"campaign/renew_control","release_control":"campaign/release_control",
	"intervene":"campaign/intervene","request_status":"campaign/request_status","cancel":"tasks/cancel"}}`

var constraintNames = []string{"remote_only", "no_publication", "no_destructive_git", "no_credential_changes", "no_force_push", "no_merge"}

func newCampaignRemote(params string) *campaignRemote {
	r := &campaignRemote{params: params, now: 1_000_000, leases: map[string]*fakeLease{},
		requests: map[string]map[string]any{}, forgot: map[string]bool{}, tasks: map[string]string{}}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	return r
}

func (r *campaignRemote) serve(w http.ResponseWriter, req *http.Request) {
	if req.URL.Path == "/.well-known/agent-card.json" {
		fmt.Fprintf(w, `{"name":"Campaign Agent","skills":[],"url":"%s/a2a","protocolVersion":"0.3.0",
			"capabilities":{"extensions":[{"uri":"urn:openoperator:campaign-control:v1","params":%s}]}}`, r.srv.URL, r.params)
		return
	}
	var call struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params map[string]any  `json:"params"`
	}
	body, _ := io.ReadAll(req.Body)
	if err := json.Unmarshal(body, &call); err != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	result, code := r.handle(req.Header.Get("X-Workspace"), call.Method, call.Params)
	if code != 0 {
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":"refused"}}`, call.ID, code)
		return
	}
	b, _ := json.Marshal(result)
	fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, call.ID, b)
}

func str(p map[string]any, k string) string { s, _ := p[k].(string); return s }

func num(p map[string]any, k string) (int64, bool) {
	f, ok := p[k].(float64)
	return int64(f), ok && f == float64(int64(f))
}

// constraints reads params.constraints: nil when absent (every one true).
func constraints(p map[string]any) (map[string]bool, bool) {
	raw, ok := p["constraints"]
	if !ok {
		return nil, true
	}
	m, ok := raw.(map[string]any)
	if !ok {
		return nil, false
	}
	out := map[string]bool{}
	for _, n := range constraintNames {
		v, present := m[n]
		b, isBool := v.(bool)
		if present && !isBool {
			return nil, false
		}
		out[n] = !present || b
	}
	return out, true
}

// relaxes reports whether a call's constraints relax the claim's.
func relaxes(claim, call map[string]bool) bool {
	for _, n := range constraintNames {
		if call != nil && (claim == nil || claim[n]) && !call[n] {
			return true
		}
	}
	return false
}

// guard checks a mutation under the lease: the lease is live and held
// with this epoch by this controller.
func (r *campaignRemote) guard(ws string, p map[string]any) (*fakeLease, int) {
	l := r.leases[ws+"\n"+str(p, "campaign_id")]
	epoch, ok := num(p, "controller_epoch")
	switch {
	case !ok:
		return nil, -32602
	case l == nil || l.released || l.ControllerID != str(p, "controller_id") || l.Epoch != epoch:
		return nil, -32051
	case l.ExpiresAt <= r.now:
		return nil, -32052
	}
	c, ok := constraints(p)
	if !ok {
		return nil, -32602
	}
	if relaxes(l.constraints, c) {
		return nil, -32053
	}
	return l, 0
}

func (r *campaignRemote) handle(ws, method string, p map[string]any) (any, int) {
	switch method {
	case "campaign/claim_control":
		key := ws + "\n" + str(p, "campaign_id")
		ttl, ok := num(p, "ttl_seconds")
		c, okc := constraints(p)
		if !ok || ttl < 1 || !okc || str(p, "request_id") == "" {
			return nil, -32602
		}
		l := r.leases[key]
		switch {
		case l != nil && !l.released && l.ExpiresAt > r.now && l.ControllerID != str(p, "controller_id"):
			return nil, -32050
		case l == nil:
			l = &fakeLease{Epoch: 1}
			r.leases[key] = l
		case l.released || l.ExpiresAt <= r.now || l.ControllerID != str(p, "controller_id"):
			l.Epoch++ // a takeover
		}
		l.ControllerID, l.ExpiresAt, l.released, l.constraints = str(p, "controller_id"), r.now+ttl, false, c
		r.requests[str(p, "request_id")] = map[string]any{"request_id": str(p, "request_id"), "state": "applied"}
		return map[string]any{"lease": l}, 0
	case "campaign/read_control":
		l := r.leases[ws+"\n"+str(p, "campaign_id")]
		if l == nil || l.released {
			return map[string]any{"lease": nil}, 0
		}
		return map[string]any{"lease": l}, 0
	case "campaign/renew_control", "campaign/release_control", "campaign/intervene":
		l, code := r.guard(ws, p)
		if code != 0 {
			return nil, code
		}
		r.requests[str(p, "request_id")] = map[string]any{"request_id": str(p, "request_id"), "state": "applied"}
		switch method {
		case "campaign/renew_control":
			ttl, ok := num(p, "ttl_seconds")
			if !ok || ttl < 1 {
				return nil, -32602
			}
			l.ExpiresAt = r.now + ttl
			return map[string]any{"lease": l}, 0
		case "campaign/release_control":
			l.released = true
			return map[string]any{"released": true}, 0
		}
		return map[string]any{"accepted": true, "params": p["params"]}, 0
	case "campaign/request_status":
		id := str(p, "request_id")
		if r.forgot[id] {
			return map[string]any{"request_id": id, "state": "unknown"}, 0
		}
		if st, ok := r.requests[id]; ok {
			return st, 0
		}
		return map[string]any{"request_id": id, "state": "not_applied"}, 0
	case "message/send":
		meta, _ := p["metadata"].(map[string]any)
		sup, _ := meta["argus_supervisor"].(map[string]any)
		msg, _ := p["message"].(map[string]any)
		if sup == nil || str(sup, "request_id") != str(msg, "messageId") {
			return nil, -32602
		}
		l, code := r.guard(ws, sup)
		if code != 0 {
			return nil, code
		}
		id := "task-" + str(msg, "messageId")
		l.task, r.tasks[id] = id, "working"
		r.requests[str(sup, "request_id")] = map[string]any{"request_id": str(sup, "request_id"), "state": "applied", "task_id": id}
		return r.task(id), 0
	case "tasks/cancel":
		meta, _ := p["metadata"].(map[string]any)
		sup, _ := meta["argus_supervisor"].(map[string]any)
		if sup == nil {
			return nil, -32602
		}
		l, code := r.guard(ws, sup)
		if code != 0 {
			return nil, code
		}
		if str(p, "id") != l.task {
			return nil, -32001 // only the bound task
		}
		r.tasks[l.task] = "canceled"
		return r.task(l.task), 0
	case "tasks/get":
		if _, ok := r.tasks[str(p, "id")]; !ok {
			return nil, -32001
		}
		return r.task(str(p, "id")), 0
	}
	return nil, -32601
}

func (r *campaignRemote) task(id string) map[string]any {
	return map[string]any{"kind": "task", "id": id, "contextId": "campaign", "status": map[string]any{"state": r.tasks[id]},
		"metadata": map[string]any{"argus_supervisor": map[string]any{"revision": 1, "stage": "run"}}}
}

// advance moves the remote's clock.
func (r *campaignRemote) advance(seconds int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.now += seconds
}

func (r *campaignRemote) callCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls
}
