package studio

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/supervaize/supervaizer-go/contracts"
)

// Defaults of the context client.
const (
	DefaultContextSearchLimit = 5    // results of a search
	DefaultContextMaxChars    = 3000 // characters of an opened item
)

// ContextAssignAction is the action id of a context assignment.
const ContextAssignAction = "context.assign"

// EffectContextAssigned is the effect type of a successful context assignment;
// its items are the provenance records.
const EffectContextAssigned = "context.assigned"

// ContextClient reads Studio-managed context. Get it from
// [Client.Context].
type ContextClient struct{ a *Client }

// Context returns the account's context client.
func (a *Client) Context() *ContextClient { return &ContextClient{a: a} }

// SearchRequest is a context search. Query and Limit are always sent; the
// other members only when set.
type SearchRequest struct {
	Query     string
	Limit     int      // 0: DefaultContextSearchLimit; negative is an error
	MissionID string   // optional; whitespace only is an error
	Scope     string   // optional: contracts.ContextScopeWorkspace or contracts.ContextScopeMission
	Tags      []string // optional
	// ExpectedWorkspaceID, when set, must equal the account's workspace: a
	// guard against using the wrong account. It is not sent.
	ExpectedWorkspaceID string
}

// OpenRequest opens one context item. Ref and MaxChars are always sent; the
// other members only when set.
type OpenRequest struct {
	Ref                 string // required
	MaxChars            int    // 0: DefaultContextMaxChars; negative is an error
	MissionID           string // optional (required by Studio for mission items); whitespace only is an error
	Query               string // optional
	ExpectedWorkspaceID string // as in SearchRequest
}

// ContextCitation cites a context item.
type ContextCitation struct {
	Ref        string `json:"ref"`
	Title      string `json:"title"`
	SourceType string `json:"source_type"`
	Version    int    `json:"version"`
}

// ContextSearchResult is one search hit. Absent keys take their defaults:
// Tags [], Excerpt "", Score 0, Citation nil.
type ContextSearchResult struct {
	Ref        string           `json:"ref"`
	Title      string           `json:"title"`
	Scope      string           `json:"scope"`
	SourceType string           `json:"source_type"`
	Version    int              `json:"version"`
	Tags       []string         `json:"tags"`
	Excerpt    string           `json:"excerpt"`
	Score      float64          `json:"score"`
	Citation   *ContextCitation `json:"citation"`
}

// ContextSearchResponse is the answer to a search.
type ContextSearchResponse struct {
	Query   string                `json:"query"`
	Results []ContextSearchResult `json:"results"`
}

// ContextDocument is an opened context item. Absent keys take their
// defaults: Instructions "", Tags [], Citations [].
type ContextDocument struct {
	Ref          string            `json:"ref"`
	Title        string            `json:"title"`
	Scope        string            `json:"scope"`
	SourceType   string            `json:"source_type"`
	Version      int               `json:"version"`
	Instructions string            `json:"instructions"`
	Tags         []string          `json:"tags"`
	Content      string            `json:"content"`
	Citations    []ContextCitation `json:"citations"`
}

type wireSearch struct {
	Query     string   `json:"query"`
	Limit     int      `json:"limit"`
	MissionID string   `json:"mission_id,omitempty"`
	Scope     string   `json:"scope,omitempty"`
	Tags      []string `json:"tags,omitempty"`
}

type wireOpen struct {
	Ref       string `json:"ref"`
	MaxChars  int    `json:"max_chars"`
	MissionID string `json:"mission_id,omitempty"`
	Query     string `json:"query,omitempty"`
}

// checkCommon makes the client-side checks shared by search and open.
func (c *ContextClient) checkCommon(missionID, expected string) error {
	if c.a == nil {
		return ErrNotAttached
	}
	if missionID != "" && strings.TrimSpace(missionID) == "" {
		return errors.New("supervaizer: context: mission_id must be a non-empty string")
	}
	if expected != "" && expected != c.a.workspaceID {
		return fmt.Errorf("supervaizer: context: expected workspace %q, but the account belongs to workspace %q", expected, c.a.workspaceID)
	}
	return nil
}

// Search posts {workspace API}/context/search/. The client-side checks
// (blank mission id, workspace mismatch, limit, scope) run before anything is
// sent; a non-2xx answer is an error.
func (c *ContextClient) Search(ctx context.Context, req SearchRequest) (*ContextSearchResponse, error) {
	if err := c.checkCommon(req.MissionID, req.ExpectedWorkspaceID); err != nil {
		return nil, err
	}
	switch {
	case req.Limit < 0:
		return nil, fmt.Errorf("supervaizer: context search: limit must be positive, got %d", req.Limit)
	case req.Limit == 0:
		req.Limit = DefaultContextSearchLimit
	}
	if req.Scope != "" && req.Scope != contracts.ContextScopeWorkspace && req.Scope != contracts.ContextScopeMission {
		return nil, fmt.Errorf("supervaizer: context search: scope must be %q or %q, got %q", contracts.ContextScopeWorkspace, contracts.ContextScopeMission, req.Scope)
	}
	body, err := c.a.call(ctx, http.MethodPost, "/context/search/", wireSearch{
		Query: req.Query, Limit: req.Limit, MissionID: req.MissionID, Scope: req.Scope, Tags: req.Tags,
	})
	if err != nil {
		return nil, err
	}
	var resp ContextSearchResponse
	if err := decodeObject(body, &resp); err != nil {
		return nil, fmt.Errorf("supervaizer: context search response: %w", err)
	}
	if resp.Results == nil {
		resp.Results = []ContextSearchResult{}
	}
	for i := range resp.Results {
		if resp.Results[i].Tags == nil {
			resp.Results[i].Tags = []string{}
		}
	}
	return &resp, nil
}

// Open posts {workspace API}/context/open/. The client-side checks (blank
// ref or mission id, workspace mismatch, max_chars) run before anything is
// sent; a non-2xx answer is an error.
func (c *ContextClient) Open(ctx context.Context, req OpenRequest) (*ContextDocument, error) {
	if err := c.checkCommon(req.MissionID, req.ExpectedWorkspaceID); err != nil {
		return nil, err
	}
	if strings.TrimSpace(req.Ref) == "" {
		return nil, errors.New("supervaizer: context open: ref is required")
	}
	switch {
	case req.MaxChars < 0:
		return nil, fmt.Errorf("supervaizer: context open: max_chars must be positive, got %d", req.MaxChars)
	case req.MaxChars == 0:
		req.MaxChars = DefaultContextMaxChars
	}
	body, err := c.a.call(ctx, http.MethodPost, "/context/open/", wireOpen{
		Ref: req.Ref, MaxChars: req.MaxChars, MissionID: req.MissionID, Query: req.Query,
	})
	if err != nil {
		return nil, err
	}
	var doc ContextDocument
	if err := decodeObject(body, &doc); err != nil {
		return nil, fmt.Errorf("supervaizer: context open response: %w", err)
	}
	if doc.Tags == nil {
		doc.Tags = []string{}
	}
	if doc.Citations == nil {
		doc.Citations = []ContextCitation{}
	}
	return &doc, nil
}

// decodeObject decodes body, which must be a JSON object, into dst.
func decodeObject(body []byte, dst any) error {
	if _, ok := jsonObject(body); !ok {
		return errors.New("not a JSON object")
	}
	if err := contracts.Unmarshal(body, dst); err != nil {
		return fmt.Errorf("unexpected shape: %w", err)
	}
	return nil
}

// ContextOpener opens one Studio context item; *[ContextClient] implements it.
type ContextOpener interface {
	Open(ctx context.Context, req OpenRequest) (*ContextDocument, error)
}

// ContextProvenance records where a frozen context snapshot came from.
type ContextProvenance struct {
	Ref      string `json:"ref"`
	Version  int    `json:"version"`
	Hash     string `json:"hash"`      // "sha256:<lowercase hex>" of the UTF-8 content
	SyncedAt string `json:"synced_at"` // RFC 3339, UTC
	MaxChars int    `json:"max_chars"` // the max_chars the content was opened with
}

// ContextSnapshot is one context item frozen for a job: the content opened
// from Studio and its provenance.
type ContextSnapshot struct {
	Ref          string            `json:"ref"`
	Title        string            `json:"title"`
	Scope        string            `json:"scope"`
	SourceType   string            `json:"source_type"`
	Version      int               `json:"version"`
	Instructions string            `json:"instructions"`
	Tags         []string          `json:"tags"`
	Content      string            `json:"content"`
	Citations    []ContextCitation `json:"citations"`
	Provenance   ContextProvenance `json:"provenance"`
}

// ContextSaver persists the frozen context of assignment.JobID: snapshots
// replace the job's previous context entirely (an empty list means "no
// context"). The agent chooses its storage; the SDK never re-reads Studio
// context during the job.
type ContextSaver func(ctx context.Context, assignment *ContextAssignment, snapshots []ContextSnapshot) error

// ContextAssignment is the input of context.assign: the context Studio
// assigned and the snapshots to save (see [ContextSaver]).
type ContextAssignment = contracts.ContextAssignment

// ContextAssigner implements the context.assign action: it
// validates the assignment, opens each item once, refuses the whole
// assignment when any version changed, and hands the frozen snapshots to
// Save. Register it with agent.HandleAction(ContextAssignAction, assigner.Handle).
type ContextAssigner struct {
	// Opener opens the items, usually account.Context(). Required.
	Opener ContextOpener
	// Save persists the snapshots. Required.
	Save ContextSaver
	// MaxChars is sent with every open and recorded in the provenance; content
	// longer than it is truncated by Studio, so set it large enough for the
	// agent's context. Default: DefaultContextMaxChars.
	MaxChars int
	// Now stamps synced_at. Default: time.Now.
	Now func() time.Time
}

// Handle is the context.assign ActionHandler; see [ContextAssigner.Assign].
func (c *ContextAssigner) Handle(ctx context.Context, req *contracts.ActionRequest) (*contracts.ActionResult, error) {
	return c.Assign(ctx, req.Input)
}

// Assign runs the context.assign duties for the action input:
//   - an input that is not a valid V2ContextAssignment (including a missing
//     mission_id beside a mission item) → status "error", code
//     invalid_context_assignment;
//   - each distinct ref is opened once (mission_id only for mission items);
//     if any returned version differs from the assigned one → status "error",
//     code context_version_mismatch listing the refs, and nothing is saved;
//   - otherwise the snapshots are saved and the result is "ok" with one
//     context.assigned effect whose items are the provenance records.
//
// A failure to open an item or to save is returned as an error.
func (c *ContextAssigner) Assign(ctx context.Context, input json.RawMessage) (*contracts.ActionResult, error) {
	if c.Opener == nil || c.Save == nil {
		return nil, errors.New("supervaizer: ContextAssigner needs an Opener and a Save function")
	}
	var ca contracts.ContextAssignment
	if err := contracts.DefaultValidator().Decode(contracts.ModelContextAssignment, input, &ca); err != nil {
		return failed(contracts.ErrorInvalidContextAssignment, fmt.Sprintf("invalid context assignment: %v", err)), nil
	}
	maxChars := c.MaxChars
	if maxChars <= 0 {
		maxChars = DefaultContextMaxChars
	}
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	opened := make(map[string]*ContextDocument, len(ca.Items))
	snaps := make([]ContextSnapshot, 0, len(ca.Items))
	var mismatched, refs []string
	for _, it := range ca.Items {
		doc, seen := opened[it.Ref]
		if !seen {
			req := OpenRequest{Ref: it.Ref, MaxChars: maxChars}
			if it.Scope == contracts.ContextScopeMission {
				req.MissionID = ca.MissionID
			}
			d, err := c.Opener.Open(ctx, req)
			if err != nil {
				return nil, fmt.Errorf("context.assign: open %q: %w", it.Ref, err)
			}
			if d == nil {
				return nil, fmt.Errorf("context.assign: open %q returned nothing", it.Ref)
			}
			doc, opened[it.Ref] = d, d
		}
		if doc.Version != it.Version {
			mismatched = append(mismatched, fmt.Sprintf("%s (assigned version %d, current %d)", it.Ref, it.Version, doc.Version))
			refs = append(refs, it.Ref)
			continue
		}
		if seen {
			continue
		}
		sum := sha256.Sum256([]byte(doc.Content))
		snaps = append(snaps, ContextSnapshot{
			Ref: it.Ref, Title: cmp.Or(doc.Title, it.Title), Scope: it.Scope, SourceType: doc.SourceType,
			Version: doc.Version, Instructions: doc.Instructions, Tags: doc.Tags, Content: doc.Content, Citations: doc.Citations,
			Provenance: ContextProvenance{
				Ref: it.Ref, Version: doc.Version, Hash: "sha256:" + hex.EncodeToString(sum[:]),
				SyncedAt: now().UTC().Format(time.RFC3339), MaxChars: maxChars,
			},
		})
	}
	if len(mismatched) > 0 {
		res := failed(contracts.ErrorContextVersionMismatch,
			"context items changed since they were assigned; nothing was stored, re-assign the context: "+strings.Join(mismatched, "; "))
		raw, _ := json.Marshal(refs)
		res.Errors[0].Extra = contracts.Extra{"refs": raw}
		return res, nil
	}
	if err := c.Save(ctx, &ca, snaps); err != nil {
		return nil, fmt.Errorf("context.assign: save the context of job %q: %w", ca.JobID, err)
	}
	items := make([]map[string]any, len(snaps))
	for i, s := range snaps {
		p := s.Provenance
		items[i] = map[string]any{"ref": p.Ref, "version": p.Version, "hash": p.Hash, "synced_at": p.SyncedAt, "max_chars": p.MaxChars}
	}
	n := len(snaps)
	return &contracts.ActionResult{Status: contracts.StatusOK, Effects: []contracts.Effect{
		{Type: EffectContextAssigned, JobID: ca.JobID, Count: &n, Items: items}}}, nil
}

// failed is an error result with one error.
func failed(code, msg string) *contracts.ActionResult {
	return &contracts.ActionResult{Status: contracts.StatusError, Effects: []contracts.Effect{},
		Errors: []contracts.ResultError{{Code: code, Message: msg}}}
}
