package testing

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/studio"
)

// Defaults of a [ContextItem].
const (
	DefaultContextSourceType = "text"
	// excerptRunes is the length of a default search excerpt.
	excerptRunes = 160
)

// ContextItem is a Studio-managed context item the fake serves to the
// context client.
type ContextItem struct {
	Ref          string   // required, unique; e.g. "supervaize.context.workspace.billing"
	Title        string   // the item's title
	Scope        string   // contracts.ContextScopeWorkspace (default) or contracts.ContextScopeMission
	MissionID    string   // the mission of a mission item; required for them
	SourceType   string   // default DefaultContextSourceType
	Version      int      // default 1
	Tags         []string // matched by the tags of a search
	Excerpt      string   // the search excerpt; default: the start of Content
	Instructions string   // sent by open
	Content      string   // sent by open, cut to max_chars
}

// ContextCall is one context request the fake answered.
type ContextCall struct {
	Seq       int    // position among all the requests (see [RecordedRequest])
	Op        string // "search" or "open"
	Query     string
	Limit     int    // search
	Scope     string // search, when sent
	Tags      []string
	Ref       string // open
	MaxChars  int    // open
	MissionID string // when sent
}

// AddContext adds context items, replacing those with the same ref. An item
// without a ref or with an invalid scope ends the test.
//
// A search matches the items whose ref, title, tags, excerpt or content
// contain every word of the query (case-insensitive; an empty query matches
// all), restricted to the requested scope and tags; mission items are visible
// only to a search or an open with their mission_id. Opening a mission item
// without mission_id is answered 400, an unknown ref 404; the content is cut
// to max_chars code points.
func (f *FakeStudioAPI) AddContext(items ...ContextItem) {
	f.t.Helper()
	for _, it := range items {
		switch {
		case strings.TrimSpace(it.Ref) == "":
			f.t.Fatalf("svtest: AddContext: an item has no ref")
			return
		case it.Scope != "" && it.Scope != contracts.ContextScopeWorkspace && it.Scope != contracts.ContextScopeMission:
			f.t.Fatalf("svtest: AddContext(%q): unknown scope %q", it.Ref, it.Scope)
			return
		case it.Scope == contracts.ContextScopeMission && strings.TrimSpace(it.MissionID) == "":
			f.t.Fatalf("svtest: AddContext(%q): a mission item needs its MissionID", it.Ref)
			return
		}
		if it.Scope == "" {
			it.Scope = contracts.ContextScopeWorkspace
		}
		if it.SourceType == "" {
			it.SourceType = DefaultContextSourceType
		}
		if it.Version == 0 {
			it.Version = 1
		}
		it.Tags = slices.Clone(it.Tags)
		f.mu.Lock()
		if i := slices.IndexFunc(f.contextItems, func(c ContextItem) bool { return c.Ref == it.Ref }); i >= 0 {
			f.contextItems[i] = it
		} else {
			f.contextItems = append(f.contextItems, it)
		}
		f.mu.Unlock()
	}
}

// ContextCalls returns the context searches and opens answered so far, in order.
func (f *FakeStudioAPI) ContextCalls() []ContextCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]ContextCall, len(f.contextCalls))
	for i, c := range f.contextCalls {
		c.Tags = slices.Clone(c.Tags)
		out[i] = c
	}
	return out
}

type wireSearch struct {
	Query     *string   `json:"query"`
	Limit     *int      `json:"limit"`
	MissionID *string   `json:"mission_id"`
	Scope     *string   `json:"scope"`
	Tags      *[]string `json:"tags"`
}

type wireOpen struct {
	Ref       *string `json:"ref"`
	MaxChars  *int    `json:"max_chars"`
	MissionID *string `json:"mission_id"`
	Query     *string `json:"query"`
}

func citation(it ContextItem) map[string]any {
	return map[string]any{"ref": it.Ref, "title": it.Title, "source_type": it.SourceType, "version": it.Version}
}

func optional(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// checkMission checks an optional mission_id: sent means non-blank.
func checkMission(p *string) error {
	if p != nil && strings.TrimSpace(*p) == "" {
		return badRequest("mission_id must be a non-empty string")
	}
	return nil
}

// handleSearch answers a context search.
func (f *FakeStudioAPI) handleSearch(body []byte, seq int) (int, any, error) {
	var w wireSearch
	if err := decodeBody(body, &w); err != nil {
		return 0, nil, err
	}
	switch {
	case w.Query == nil:
		return 0, nil, badRequest("query is required")
	case w.Limit == nil || *w.Limit <= 0:
		return 0, nil, badRequest("limit must be a positive integer")
	case w.Scope != nil && *w.Scope != contracts.ContextScopeWorkspace && *w.Scope != contracts.ContextScopeMission:
		return 0, nil, badRequest("scope must be %q or %q", contracts.ContextScopeWorkspace, contracts.ContextScopeMission)
	}
	if err := checkMission(w.MissionID); err != nil {
		return 0, nil, err
	}
	call := ContextCall{Seq: seq, Op: "search", Query: *w.Query, Limit: *w.Limit, Scope: optional(w.Scope), MissionID: optional(w.MissionID)}
	if w.Tags != nil {
		call.Tags = slices.Clone(*w.Tags)
	}
	terms := strings.Fields(strings.ToLower(call.Query))
	f.mu.Lock()
	defer f.mu.Unlock()
	results := []any{}
	for _, it := range f.contextItems {
		if len(results) == call.Limit {
			break
		}
		if !visible(it, call.MissionID) || (call.Scope != "" && it.Scope != call.Scope) ||
			!hasTags(it, call.Tags) {
			continue
		}
		score, ok := matchScore(it, terms)
		if !ok {
			continue
		}
		excerpt := it.Excerpt
		if excerpt == "" {
			excerpt = truncate(it.Content, excerptRunes)
		}
		results = append(results, map[string]any{
			"ref": it.Ref, "title": it.Title, "scope": it.Scope, "source_type": it.SourceType, "version": it.Version,
			"tags": nonNil(it.Tags), "excerpt": excerpt, "score": score, "citation": citation(it),
		})
	}
	f.contextCalls = append(f.contextCalls, call)
	f.notifyLocked()
	return http.StatusOK, map[string]any{"query": call.Query, "results": results}, nil
}

// visible reports whether a search or open with missionID sees it.
func visible(it ContextItem, missionID string) bool {
	return it.Scope != contracts.ContextScopeMission || it.MissionID == missionID
}

func hasTags(it ContextItem, tags []string) bool {
	for _, t := range tags {
		if !slices.Contains(it.Tags, t) {
			return false
		}
	}
	return true
}

// matchScore reports whether every term occurs in the item, and the number of
// occurrences.
func matchScore(it ContextItem, terms []string) (int, bool) {
	hay := strings.ToLower(strings.Join(append([]string{it.Ref, it.Title, it.Excerpt, it.Content}, it.Tags...), "\n"))
	score := 0
	for _, t := range terms {
		n := strings.Count(hay, t)
		if n == 0 {
			return 0, false
		}
		score += n
	}
	return score, true
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return slices.Clone(s)
}

// truncate cuts s to at most n code points.
func truncate(s string, n int) string {
	i := 0
	for pos := range s {
		if i == n {
			return s[:pos]
		}
		i++
	}
	return s
}

// handleOpen answers a context open.
func (f *FakeStudioAPI) handleOpen(body []byte, seq int) (int, any, error) {
	var w wireOpen
	if err := decodeBody(body, &w); err != nil {
		return 0, nil, err
	}
	switch {
	case w.Ref == nil || strings.TrimSpace(*w.Ref) == "":
		return 0, nil, badRequest("ref is required")
	case w.MaxChars == nil || *w.MaxChars <= 0:
		return 0, nil, badRequest("max_chars must be a positive integer")
	}
	if err := checkMission(w.MissionID); err != nil {
		return 0, nil, err
	}
	call := ContextCall{Seq: seq, Op: "open", Ref: *w.Ref, MaxChars: *w.MaxChars, MissionID: optional(w.MissionID), Query: optional(w.Query)}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.contextCalls = append(f.contextCalls, call)
	f.notifyLocked()
	i := slices.IndexFunc(f.contextItems, func(c ContextItem) bool { return c.Ref == call.Ref })
	if i < 0 {
		return 0, nil, &apiError{status: http.StatusNotFound, detail: "context item not found"}
	}
	it := f.contextItems[i]
	if it.Scope == contracts.ContextScopeMission && call.MissionID == "" {
		return 0, nil, badRequest("mission_id is required to open a mission item")
	}
	if !visible(it, call.MissionID) {
		return 0, nil, &apiError{status: http.StatusNotFound, detail: "context item not found in this mission"}
	}
	return http.StatusOK, map[string]any{
		"ref": it.Ref, "title": it.Title, "scope": it.Scope, "source_type": it.SourceType, "version": it.Version,
		"instructions": it.Instructions, "tags": nonNil(it.Tags), "content": truncate(it.Content, call.MaxChars),
		"citations": []any{citation(it)},
	}, nil
}

// BillingRecord is one consumption record the fake received, with the
// receipt it answered (the SDK's provisional wire format, see
// [studio.Client.ReportConsumption]).
type BillingRecord struct {
	Seq            int // position among all the requests (see [RecordedRequest])
	AgentSlug      string
	SKU            string
	Quantity       float64
	JobID          string
	CaseID         string
	OccurredAt     string // as sent, RFC 3339
	IdempotencyKey string
	Metadata       map[string]any

	Status    string // the receipt: studio.ReceiptAccepted, or ReceiptDuplicate for a key already reported
	ReceiptID string // the same for every report of a key
}

// billingRec is a recorded consumption record; the metadata is kept as JSON
// so that every accessor returns a fresh copy.
type billingRec struct {
	rec      BillingRecord
	metadata json.RawMessage
}

// BillingRecords returns every consumption record received so far, in order,
// duplicates included (see BillingRecord.Status).
func (f *FakeStudioAPI) BillingRecords() []BillingRecord {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]BillingRecord, len(f.billing))
	for i, b := range f.billing {
		r := b.rec
		if b.metadata != nil {
			_ = json.Unmarshal(b.metadata, &r.Metadata) // it decoded when it was recorded
		}
		out[i] = r
	}
	return out
}

// WaitBilling waits until at least n consumption records were received and
// returns them all; after [WaitTimeout] it ends the test. Call it from the
// test's goroutine.
func (f *FakeStudioAPI) WaitBilling(t testing.TB, n int) []BillingRecord {
	t.Helper()
	f.wait(t, fmt.Sprintf("%d consumption record(s)", n), func() bool { return len(f.billing) >= n })
	return f.BillingRecords()
}

type wireReport struct {
	AgentSlug *string      `json:"agent_slug"`
	Records   []wireRecord `json:"records"`
}

type wireRecord struct {
	SKU            *string         `json:"sku"`
	Quantity       *float64        `json:"quantity"`
	JobID          *string         `json:"job_id"`
	CaseID         *string         `json:"case_id"`
	OccurredAt     *string         `json:"occurred_at"`
	IdempotencyKey *string         `json:"idempotency_key"`
	Metadata       json.RawMessage `json:"metadata"`
}

// handleBilling records a consumption report and answers its receipts. The
// whole report is refused (400) when a record is invalid: a missing field, a
// quantity that is not > 0, an occurred_at that is not RFC 3339, a key
// repeated in the report, or a SKU outside the billing catalog the agent sent
// in its last server.register (agents never registered are not checked).
func (f *FakeStudioAPI) handleBilling(body []byte, seq int) (int, any, error) {
	var w wireReport
	if err := decodeBody(body, &w); err != nil {
		return 0, nil, err
	}
	if w.AgentSlug == nil || strings.TrimSpace(*w.AgentSlug) == "" {
		return 0, nil, badRequest("agent_slug is required")
	}
	if len(w.Records) == 0 {
		return 0, nil, badRequest("records must be a non-empty array")
	}
	slug := *w.AgentSlug
	f.mu.Lock()
	defer f.mu.Unlock()
	catalog, registered := f.catalogLocked(slug)
	recs := make([]billingRec, len(w.Records))
	keys := map[string]bool{}
	for i, r := range w.Records {
		for _, fld := range []struct {
			name string
			v    *string
		}{{"sku", r.SKU}, {"job_id", r.JobID}, {"occurred_at", r.OccurredAt}, {"idempotency_key", r.IdempotencyKey}} {
			if fld.v == nil || strings.TrimSpace(*fld.v) == "" {
				return 0, nil, badRequest("records[%d].%s is required", i, fld.name)
			}
		}
		switch {
		case r.Quantity == nil || math.IsNaN(*r.Quantity) || *r.Quantity <= 0:
			return 0, nil, badRequest("records[%d].quantity must be a number > 0", i)
		case r.CaseID != nil && strings.TrimSpace(*r.CaseID) == "":
			return 0, nil, badRequest("records[%d].case_id is blank", i)
		case r.Metadata != nil && !isPlainObject(r.Metadata):
			return 0, nil, badRequest("records[%d].metadata must be a JSON object of ordinary values", i)
		case keys[*r.IdempotencyKey]:
			return 0, nil, badRequest("records[%d].idempotency_key is repeated in the report", i)
		case registered && !slices.Contains(catalog, *r.SKU):
			return 0, nil, badRequest("records[%d].sku %q is not in the billing catalog of agent %q", i, *r.SKU, slug)
		}
		if _, err := time.Parse(time.RFC3339Nano, *r.OccurredAt); err != nil {
			return 0, nil, badRequest("records[%d].occurred_at must be RFC 3339", i)
		}
		keys[*r.IdempotencyKey] = true
		recs[i] = billingRec{rec: BillingRecord{Seq: seq, AgentSlug: slug, SKU: *r.SKU, Quantity: *r.Quantity,
			JobID: *r.JobID, CaseID: optional(r.CaseID), OccurredAt: *r.OccurredAt, IdempotencyKey: *r.IdempotencyKey},
			metadata: slices.Clone(r.Metadata)}
	}
	receipts := make([]any, len(recs))
	for i := range recs {
		rec := &recs[i].rec
		rec.Status, rec.ReceiptID = studio.ReceiptAccepted, fmt.Sprintf("rcpt-%d", len(f.receipts)+1)
		if id, dup := f.receipts[rec.IdempotencyKey]; dup {
			rec.Status, rec.ReceiptID = studio.ReceiptDuplicate, id
		} else {
			f.receipts[rec.IdempotencyKey] = rec.ReceiptID
		}
		receipts[i] = map[string]any{"idempotency_key": rec.IdempotencyKey, "status": rec.Status, "receipt_id": rec.ReceiptID}
	}
	f.billing = append(f.billing, recs...)
	f.notifyLocked()
	return http.StatusOK, map[string]any{"receipts": receipts}, nil
}

// catalogLocked returns the SKUs agent slug registered last, and whether it
// was registered. Callers hold mu.
func (f *FakeStudioAPI) catalogLocked(slug string) ([]string, bool) {
	for i := len(f.regs) - 1; i >= 0; i-- {
		for _, a := range f.regs[i].Agents {
			if a.Slug == slug {
				return a.BillingSKUs, true
			}
		}
	}
	return nil, false
}

// isPlainObject reports whether raw decodes with encoding/json into a
// map[string]any (a JSON object whose numbers fit a float64).
func isPlainObject(raw json.RawMessage) bool {
	var m map[string]any
	return json.Unmarshal(raw, &m) == nil && m != nil
}
