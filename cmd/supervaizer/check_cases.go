package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/errcode"
	"github.com/supervaize/supervaizer-go/internal/wstoken"
)

// errNoAPIKey: a case needs the transport key.
var errNoAPIKey = errors.New("no -api-key: the controller's X-API-Key is needed")

// Codes and answers of the spec (controller.md §3.1 and §9).
const (
	codeParseError     = int(errcode.ParseError)
	codeInvalidRequest = int(errcode.InvalidRequest)
	codeMethodNotFound = int(errcode.MethodNotFound)
	codeInvalidParams  = int(errcode.InvalidParams)
	codeUnauthorized   = int(errcode.Unauthorized)
	codeNoSurface      = int(errcode.SurfaceNotRegistered)
	invalidKeyDetail   = "Invalid or missing API key"
	bootstrapSurface   = "workspace_binding.create"
	methodSurfaceLoad  = "supervaizer/surface.load"
	methodActionInvoke = "supervaizer/action.invoke"
)

// versionedCard matches the path of a versioned Agent Card route.
var versionedCard = regexp.MustCompile(`^/\.well-known/agents/v([^/]+)/([^/]+)_agent\.json$`)

// checkDiscovery: GET /.well-known/agents.json, then both card routes of
// every agent, the registration validated against the contracts.
func (c *checker) checkDiscovery() {
	var doc struct {
		SchemaVersion string `json:"schema_version"`
		Agents        []struct {
			Name         string `json:"name"`
			Developer    any    `json:"developer"`
			Version      string `json:"version"`
			AgentCardURL string `json:"agent_card_url"`
		} `json:"agents"`
	}
	const name = "discovery.agents"
	if _, err := c.getJSON("/.well-known/agents.json", &doc); err != nil {
		c.fail(name, "%v", err)
		return
	}
	if doc.SchemaVersion != "a2a_2023_v1" {
		c.fail(name, "schema_version %q, want a2a_2023_v1", doc.SchemaVersion)
		return
	}
	if len(doc.Agents) == 0 {
		c.fail(name, "no agents listed")
		return
	}
	var problems []string
	for i, a := range doc.Agents {
		if _, ok := a.Developer.(string); !ok || a.Name == "" || a.Version == "" {
			problems = append(problems, fmt.Sprintf("agents[%d]: name, version and developer must be non-empty strings", i))
			continue
		}
		u, err := parseURL(a.AgentCardURL)
		m := versionedCard.FindStringSubmatch(u)
		if err != nil || m == nil || m[1] != a.Version {
			problems = append(problems, fmt.Sprintf("agents[%d].agent_card_url %q: not the versioned card route /.well-known/agents/v%s/<slug>_agent.json", i, a.AgentCardURL, a.Version))
			continue
		}
		c.agents = append(c.agents, &agentInfo{slug: m[2], version: a.Version, cardURL: u})
	}
	if len(problems) > 0 {
		c.fail(name, "%s", strings.Join(problems, "; "))
	} else {
		c.pass(name, "%d agent(s)", len(doc.Agents))
	}
	for _, a := range c.agents {
		c.checkCards(a)
	}
}

// parseURL returns the path of an absolute http(s) URL.
func parseURL(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil {
		return "", err
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("not an absolute http(s) URL")
	}
	return u.Path, nil
}

// checkCards fetches both card routes of a.
func (c *checker) checkCards(a *agentInfo) {
	vname, uname := "card.versioned:"+a.slug, "card.unversioned:"+a.slug
	var card map[string]json.RawMessage
	vbody, err := c.getJSON(a.cardURL, &card)
	if err != nil {
		c.fail(vname, "%v", err)
		c.skip(uname, "the versioned card failed")
		return
	}
	var head struct {
		Name        string `json:"name"`
		Version     string `json:"version"`
		Supervaizer *struct {
			V2 json.RawMessage `json:"v2"`
		} `json:"supervaizer"`
	}
	_ = json.Unmarshal(vbody, &head)
	switch {
	case head.Name == "" || head.Version != a.version:
		c.fail(vname, "name %q, version %q: want a name and the version %q of agents.json", head.Name, head.Version, a.version)
	case head.Supervaizer == nil || len(head.Supervaizer.V2) == 0:
		c.pass(vname, "no supervaizer.v2 registration: nothing more to check for this agent")
	default:
		var reg contracts.Registration
		if err := contracts.DefaultValidator().Decode(contracts.ModelRegistration, head.Supervaizer.V2, &reg); err != nil {
			c.fail(vname, "supervaizer.v2 breaks the Registration contract: %v", err)
			break
		}
		if reg.Agent.Slug != a.slug {
			c.fail(vname, "supervaizer.v2.agent.slug %q, but the card's route names %q", reg.Agent.Slug, a.slug)
			break
		}
		a.surfaces = reg.Capabilities.Surfaces
		for _, act := range reg.Capabilities.Actions {
			a.actions = append(a.actions, act.ID)
		}
		c.pass(vname, "registration valid: %d surface(s), %d action(s)", len(a.surfaces), len(a.actions))
	}
	var other map[string]json.RawMessage
	ubody, err := c.getJSON("/.well-known/agents/"+a.slug+"_agent.json", &other)
	switch {
	case err != nil:
		c.fail(uname, "%v", err)
	case !jsonEqual(vbody, ubody):
		c.fail(uname, "its body differs from the versioned card's")
	default:
		c.pass(uname, "same body as the versioned card")
	}
}

// jsonEqual reports whether two JSON documents are equal as values.
func jsonEqual(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}

// checkHealth: GET /.well-known/health and its agents.
func (c *checker) checkHealth() {
	const name = "health"
	var doc struct {
		SchemaVersion string `json:"schema_version"`
		Status        string `json:"status"`
		Timestamp     string `json:"timestamp"`
		Agents        map[string]struct {
			AgentID       string         `json:"agent_id"`
			AgentServerID *string        `json:"agent_server_id"`
			Name          string         `json:"name"`
			Status        string         `json:"status"`
			Version       string         `json:"version"`
			Statistics    map[string]any `json:"statistics"`
		} `json:"agents"`
	}
	if _, err := c.getJSON("/.well-known/health", &doc); err != nil {
		c.fail(name, "%v", err)
		return
	}
	var problems []string
	if doc.SchemaVersion != "a2a_2023_v1" || doc.Status == "" || doc.Timestamp == "" {
		problems = append(problems, fmt.Sprintf("schema_version %q, status %q, timestamp %q: want a2a_2023_v1 and non-empty strings", doc.SchemaVersion, doc.Status, doc.Timestamp))
	}
	for id, h := range doc.Agents {
		if h.AgentID != id {
			problems = append(problems, fmt.Sprintf("agents[%q].agent_id is %q", id, h.AgentID))
		}
		if !slices.Contains([]string{"available", "unavailable", "degraded", "busy"}, h.Status) {
			problems = append(problems, fmt.Sprintf("agents[%q].status %q is none of available, unavailable, degraded, busy", id, h.Status))
		}
		for _, k := range []string{"total_jobs", "completed_jobs", "failed_jobs", "in_progress_jobs", "success_rate"} {
			if _, ok := h.Statistics[k].(float64); !ok {
				problems = append(problems, fmt.Sprintf("agents[%q].statistics.%s is not a number", id, k))
			}
		}
	}
	if len(doc.Agents) < len(c.agents) {
		problems = append(problems, fmt.Sprintf("%d agent(s), but agents.json lists %d", len(doc.Agents), len(c.agents)))
	}
	// The Studio agent id of each agent (agent_server_id), for its tokens:
	// health is keyed by legacy id, matched here by version and the card's name.
	for _, a := range c.agents {
		for _, h := range doc.Agents {
			if h.Version == a.version && h.AgentServerID != nil && slugOf(h.Name) == a.slug {
				a.studioAgentID = *h.AgentServerID
			}
		}
	}
	if len(problems) > 0 {
		c.fail(name, "%s", strings.Join(problems, "; "))
		return
	}
	c.pass(name, "status %s, %d agent(s)", doc.Status, len(doc.Agents))
}

// slugOf approximates the protocol's slug of an agent name for matching
// health entries (ASCII names; registration.md §2.1 has the full rule).
func slugOf(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	return strings.TrimSuffix(b.String(), "-")
}

// checkTransport: POST /a2a and GET /a2a/events refuse a missing or unknown
// key with HTTP 401 and the spec's body.
func (c *checker) checkTransport() {
	body := []byte(`{"jsonrpc":"2.0","id":"check-key","method":"supervaizer/check.unknown","params":{}}`)
	for _, tc := range []struct{ name, key string }{
		{"rpc.missing-key", ""},
		{"rpc.wrong-key", "supervaizer-check-wrong-key"},
	} {
		a, err := c.postRaw(body, tc.key, "")
		if err != nil {
			c.fail(tc.name, "%v", err)
			continue
		}
		c.expect401(tc.name, a.http)
	}
	a, err := c.get("/a2a/events")
	if err != nil {
		c.fail("events.missing-key", "%v", err)
		return
	}
	c.expect401("events.missing-key", a)
}

func (c *checker) expect401(name string, a *httpAnswer) {
	var d struct {
		Detail string `json:"detail"`
	}
	if a.status != http.StatusUnauthorized || json.Unmarshal(a.body, &d) != nil || d.Detail != invalidKeyDetail {
		c.fail(name, "HTTP %d %s, want 401 {\"detail\": %q}", a.status, clip(a.body), invalidKeyDetail)
		return
	}
	c.pass(name, "HTTP 401 %q", invalidKeyDetail)
}

// checkEnvelope: the JSON-RPC refusals of controller.md §4 and §9.
func (c *checker) checkEnvelope() {
	cases := []struct {
		name   string
		bodies []string
		code   int
		id     string // the id the answer must echo; "" for none (null)
		msg    string // the exact message, when the spec gives one
	}{
		{"rpc.parse-error", []string{`{"jsonrpc":"2.0","id":"check-1",`}, codeParseError, "", "Parse error"},
		{"rpc.invalid-request", []string{`[{"jsonrpc":"2.0","id":"check-2","method":"supervaizer/surface.load"}]`, `{"jsonrpc":"1.0","id":"check-3","method":"supervaizer/surface.load"}`}, codeInvalidRequest, "", ""},
		{"rpc.unknown-method", []string{`{"jsonrpc":"2.0","id":"check-4","method":"supervaizer/check.unknown","params":{}}`}, codeMethodNotFound, "check-4", "Method not found: supervaizer/check.unknown"},
		{"rpc.invalid-params", []string{`{"jsonrpc":"2.0","id":"check-5","method":"supervaizer/surface.load","params":{"surface_request":{"request_id":"check-5"}}}`}, codeInvalidParams, "check-5", "Invalid Supervaizer v2 surface request"},
	}
	for _, tc := range cases {
		if c.apiKey == "" {
			c.skip(tc.name, "%v", errNoAPIKey)
			continue
		}
		var problem string
		for i, body := range tc.bodies {
			a, err := c.postRaw([]byte(body), c.apiKey, "")
			switch {
			case err != nil:
				problem = err.Error()
			case a.http.status != http.StatusOK:
				problem = fmt.Sprintf("HTTP %d, want 200 with a JSON-RPC error", a.http.status)
			case a.err == nil:
				problem = "a result, want a JSON-RPC error"
			case a.err.Code != tc.code:
				problem = fmt.Sprintf("error %d %q, want %d", a.err.Code, a.err.Message, tc.code)
			case tc.msg != "" && a.err.Message != tc.msg:
				problem = fmt.Sprintf("message %q, want %q", a.err.Message, tc.msg)
			case tc.name == "rpc.invalid-request" && i == 1 && string(a.members["id"]) != `"check-3"`:
				problem = fmt.Sprintf("id %s, want the request's \"check-3\" echoed", a.members["id"])
			case tc.id != "" && string(a.members["id"]) != `"`+tc.id+`"`:
				problem = fmt.Sprintf("id %s, want %q echoed", a.members["id"], tc.id)
			case tc.code == codeParseError && a.members["id"] != nil && string(a.members["id"]) != "null":
				problem = fmt.Sprintf("id %s, want null or absent", a.members["id"])
			case tc.code == codeInvalidParams && !hasErrors(a.err.Data):
				problem = fmt.Sprintf("data %s, want {\"errors\": [{\"loc\", \"msg\", \"type\"}, …]}", a.err.Data)
			}
			if problem != "" {
				problem = fmt.Sprintf("body %d of %d: %s", i+1, len(tc.bodies), problem)
				break
			}
		}
		if problem != "" {
			c.fail(tc.name, "%s", problem)
		} else {
			c.pass(tc.name, "error %d", tc.code)
		}
	}
}

// hasErrors reports whether data is {"errors": [...]} with at least one
// problem, each with loc, msg and type (controller.md §9).
func hasErrors(data json.RawMessage) bool {
	var d struct {
		Errors []struct {
			Loc  []any  `json:"loc"`
			Msg  string `json:"msg"`
			Type string `json:"type"`
		} `json:"errors"`
	}
	if json.Unmarshal(data, &d) != nil || len(d.Errors) == 0 {
		return false
	}
	for _, e := range d.Errors {
		if len(e.Loc) == 0 || e.Msg == "" || e.Type == "" {
			return false
		}
	}
	return true
}

// tokenTarget returns the agent and surface the token cases load: job.start
// when an agent declares it, else the first surface the agent serves itself.
func (c *checker) tokenTarget() (*agentInfo, string) {
	for _, a := range c.agents {
		if slices.Contains(a.surfaces, "job.start") {
			return a, "job.start"
		}
	}
	for _, a := range c.agents {
		for _, s := range a.surfaces {
			if !studioGenerated(s) && s != bootstrapSurface {
				return a, s
			}
		}
	}
	return nil, ""
}

// tokenCases are the token refusals check mints, each with the code the
// spec gives it (authorization.md §10).
var tokenCases = []struct {
	name string
	code string
	edit func(c *wstoken.Claims, scopes []string)
}{
	{"token.expired", "workspace_authorization_expired", func(c *wstoken.Claims, _ []string) {
		c.IssuedAt, c.ExpiresAt = c.IssuedAt.Add(-2*time.Hour), c.IssuedAt.Add(-time.Hour)
	}},
	{"token.wrong-audience", "workspace_authorization_wrong_audience", func(c *wstoken.Claims, _ []string) {
		c.Audience = "supervaizer-check:not-this-controller"
	}},
	{"token.wrong-scope", "workspace_authorization_missing_scope", func(c *wstoken.Claims, scopes []string) {
		c.Scopes = []string{scopes[0], "supervaizer-check.other-surface"}
	}},
	{"token.other-workspace", "workspace_authorization_wrong_workspace", func(c *wstoken.Claims, _ []string) {
		c.WorkspaceID += "-other"
	}},
}

// checkTokens: with -key, a good token is accepted first, then the token
// cases and a call without a token are refused with their codes.
func (c *checker) checkTokens() {
	names := []string{"token.good", "token.missing"}
	for _, tc := range tokenCases {
		names = append(names, tc.name)
	}
	skipAll := func(format string, args ...any) {
		for _, n := range names {
			c.skip(n, format, args...)
		}
	}
	if c.key == nil {
		skipAll("no -key FILE: the token cases mint tokens with the private key the controller trusts")
		return
	}
	failAll := func(format string, args ...any) {
		for _, n := range names {
			c.fail(n, format, args...)
		}
	}
	if c.apiKey == "" {
		failAll("-key given but %v", errNoAPIKey)
		return
	}
	a, surface := c.tokenTarget()
	if a == nil {
		failAll("-key given but no agent declares a surface to call with a token")
		return
	}
	scopes := []string{methodSurfaceLoad, surface}
	load := func(edit func(*wstoken.Claims), noToken bool) (*rpcAnswer, error) {
		tok := ""
		if !noToken {
			var err error
			if tok, err = c.token(a, scopes, edit); err != nil {
				return nil, err
			}
		}
		return c.call(methodSurfaceLoad, c.surfaceRequest(a.slug, surface), tok)
	}
	ans, err := load(nil, false)
	switch {
	case err != nil:
		failAll("the good token's call failed: %v", err)
		return
	case ans.err != nil:
		c.fail("token.good", "a good token for %s/%s was refused: %s (check -issuer, -audience, -server-id, -agent-id, -workspace and the controller's key)", a.slug, surface, ans.err)
		for _, n := range names[1:] {
			c.fail(n, "not tried: the good token was refused, so a refusal would prove nothing")
		}
		return
	}
	c.pass("token.good", "surface.load %s/%s accepted", a.slug, surface)
	refused := func(name, want string, ans *rpcAnswer, err error) {
		switch {
		case err != nil:
			c.fail(name, "%v", err)
		case ans.err == nil:
			c.fail(name, "accepted, want -32030 %s", want)
		case ans.err.Code != codeUnauthorized || ans.err.authCode() != want:
			c.fail(name, "error %s, want -32030 %s", ans.err, want)
		default:
			c.pass(name, "-32030 %s", want)
		}
	}
	ans, err = load(nil, true)
	refused("token.missing", "workspace_authorization_missing", ans, err)
	for _, tc := range tokenCases {
		ans, err := load(func(cl *wstoken.Claims) { tc.edit(cl, scopes) }, false)
		refused(tc.name, tc.code, ans, err)
	}
}

// studioGenerated reports whether Studio generates the surface itself
// (surfaces.md §1): an agent registers a handler for it only if it wants.
func studioGenerated(surface string) bool {
	return strings.HasPrefix(surface, "mission.agent.resource.") || strings.HasPrefix(surface, "mission.agent.dataset.")
}

// needsContext reports whether the surface shows a job, case or step, which
// a bare request of the check does not name.
func needsContext(surface string) bool {
	return strings.HasPrefix(surface, "case.") || strings.HasPrefix(surface, "job.") && surface != "job.start"
}

// checkSurfaces loads every declared surface of every agent and validates
// the result against the SurfaceResult contract (and its document against
// its type's, for the types the contracts define).
func (c *checker) checkSurfaces() {
	for _, a := range c.agents {
		for _, s := range a.surfaces {
			name := "surface.load:" + a.slug + "/" + s
			if c.apiKey == "" {
				c.skip(name, "%v", errNoAPIKey)
				continue
			}
			tok, err := c.token(a, []string{methodSurfaceLoad, s}, nil)
			if err != nil {
				c.fail(name, "%v", err)
				continue
			}
			ans, err := c.call(methodSurfaceLoad, c.surfaceRequest(a.slug, s), tok)
			switch {
			case err != nil:
				c.fail(name, "%v", err)
			case ans.err != nil && ans.err.Code == codeUnauthorized && c.key == nil && s != bootstrapSurface:
				c.skip(name, "the controller verifies workspace tokens (%s): pass -key FILE to mint them", ans.err)
			case ans.err != nil && ans.err.Code == codeNoSurface && studioGenerated(s):
				c.skip(name, "Studio generates this surface; the agent serves none (-32011)")
			case ans.err != nil && needsContext(s):
				c.skip(name, "it shows a job, case or step the check cannot name (answered %s)", ans.err)
			case ans.err != nil:
				c.fail(name, "error %s, want a surface result", ans.err)
			default:
				if problem := validateSurface(s, ans.result); problem != "" {
					c.fail(name, "%s", problem)
					continue
				}
				if s == "job.start" {
					var r contracts.SurfaceResult
					if json.Unmarshal(ans.result, &r) == nil {
						a.startForm = r.Document
					}
				}
				c.pass(name, "%s document", contracts.DocumentType(surfaceDocument(ans.result)))
			}
		}
	}
}

// surfaceDocument returns the document member of a surface result.
func surfaceDocument(result json.RawMessage) json.RawMessage {
	var r struct {
		Document json.RawMessage `json:"document"`
	}
	_ = json.Unmarshal(result, &r)
	return r.Document
}

// validateSurface returns what is wrong with a surface result, "" if nothing.
func validateSurface(surface string, result json.RawMessage) string {
	var r contracts.SurfaceResult
	if err := contracts.DefaultValidator().Decode(contracts.ModelSurfaceResult, result, &r); err != nil {
		return "the result breaks the SurfaceResult contract: " + err.Error()
	}
	if r.Surface != surface {
		return fmt.Sprintf("result.surface %q, want %q", r.Surface, surface)
	}
	var members map[string]json.RawMessage
	_ = json.Unmarshal(result, &members)
	for _, k := range []string{"a2ui_version", "a2ui_catalog_version"} {
		if _, ok := members[k]; !ok {
			return fmt.Sprintf("result.%s is absent, want a string or null (controller.md §8)", k)
		}
	}
	typ := contracts.DocumentType(r.Document)
	if typ == "" {
		return "result.document has no type"
	}
	if m, ok := contracts.DocumentModel(typ); ok { // a typed document of the contracts registry
		if err := contracts.DefaultValidator().Validate(m, r.Document); err != nil {
			return fmt.Sprintf("the %s document breaks its contract: %v", typ, err)
		}
	}
	return ""
}
