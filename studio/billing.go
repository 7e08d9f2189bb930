package studio

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/supervaize/supervaizer-go/contracts"
)

// Billable consumption. The Studio "Billable consumption"
// guide is not available: the wire format below is the provisional one of
// a project decision, kept behind [BillingTransport] so that it can be
// corrected without changing this API.

// BillingConsumptionPath is the provisional endpoint of consumption reports,
// relative to the workspace API base ({api_url}/w/{workspace_id}/api/v1).
const BillingConsumptionPath = "/billing/consumption/"

// Receipt statuses.
const (
	ReceiptAccepted  = "accepted"  // the record was billed
	ReceiptDuplicate = "duplicate" // the idempotency key was already reported; nothing new was billed
)

// Consumption is one billable consumption record.
type Consumption struct {
	SKU            string         // required; a SKU of the agent's billing catalog
	Quantity       float64        // required; finite and > 0
	JobID          string         // required
	CaseID         string         // optional
	OccurredAt     time.Time      // required; sent as RFC 3339 in UTC
	IdempotencyKey string         // required; stable per billable unit of work, so a retried report is not billed twice
	Metadata       map[string]any // optional
}

// Receipt is Studio's answer for one record.
type Receipt struct {
	IdempotencyKey string
	Status         string // ReceiptAccepted or ReceiptDuplicate
	ReceiptID      string
}

// BillingTransport carries validated consumption records for the agent slug
// to Studio and returns the receipts Studio gave, in any order. The default
// (used when [Config].Billing is nil) posts the provisional wire format
// of [Client.ReportConsumption].
type BillingTransport interface {
	SendConsumption(ctx context.Context, agentSlug string, records []Consumption) ([]Receipt, error)
}

// ReportConsumption reports billable consumption of agent. Every record is
// checked before anything is sent: the SKU must belong to the agent's billing
// catalog (the agent's registered BillingCatalog), the quantity must be finite and positive, job id, occurrence time
// and idempotency key are required and idempotency keys are unique in the
// report. It returns one receipt per record, in record order; a report whose
// receipts do not match the records is an error.
//
// PROVISIONAL wire format (a project decision, to be confirmed with
// Studio): POST {workspace API}/billing/consumption/ with
// {"agent_slug": …, "records": [{"sku", "quantity", "job_id", "case_id"?,
// "occurred_at", "idempotency_key", "metadata"?}]}, answered by
// {"receipts": [{"idempotency_key", "status": "accepted"|"duplicate",
// "receipt_id"}]}. Re-sending a record with the same idempotency key returns
// the original receipt and bills nothing new.
func (a *Client) ReportConsumption(ctx context.Context, agentSlug string, catalog contracts.BillingCatalog, records ...Consumption) ([]Receipt, error) {
	if a == nil {
		return nil, ErrNotAttached
	}
	if strings.TrimSpace(agentSlug) == "" {
		return nil, errors.New("supervaizer: ReportConsumption: the agent slug is required")
	}
	if err := checkConsumption(agentSlug, catalog, records); err != nil {
		return nil, err
	}
	receipts, err := a.billing.SendConsumption(ctx, agentSlug, records)
	if err != nil {
		return nil, fmt.Errorf("supervaizer: report consumption of agent %q: %w", agentSlug, err)
	}
	return matchReceipts(records, receipts)
}

// checkConsumption validates the records against the agent's catalog.
func checkConsumption(agentSlug string, catalog contracts.BillingCatalog, records []Consumption) error {
	if len(records) == 0 {
		return errors.New("supervaizer: ReportConsumption: no records")
	}
	known := make(map[string]bool, len(catalog))
	skus := make([]string, 0, len(catalog))
	for _, it := range catalog {
		known[it.SKU] = true
		skus = append(skus, it.SKU)
	}
	keys := make(map[string]int, len(records))
	var errs []error
	for i, r := range records {
		bad := func(format string, args ...any) {
			errs = append(errs, fmt.Errorf("records[%d]: "+format, append([]any{i}, args...)...))
		}
		if !known[r.SKU] {
			bad("sku %q is not in the billing catalog of agent %q (catalog: [%s])", r.SKU, agentSlug, strings.Join(skus, ", "))
		}
		if math.IsNaN(r.Quantity) || math.IsInf(r.Quantity, 0) || r.Quantity <= 0 {
			bad("quantity must be a finite number > 0")
		}
		if strings.TrimSpace(r.JobID) == "" {
			bad("job_id is required")
		}
		if r.CaseID != "" && strings.TrimSpace(r.CaseID) == "" {
			bad("case_id is blank")
		}
		if r.OccurredAt.IsZero() {
			bad("occurred_at is required")
		}
		switch j, dup := keys[r.IdempotencyKey]; {
		case strings.TrimSpace(r.IdempotencyKey) == "":
			bad("idempotency_key is required")
		case dup:
			bad("idempotency_key is the same as records[%d]", j)
		default:
			keys[r.IdempotencyKey] = i
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("supervaizer: ReportConsumption (nothing sent): %w", errors.Join(errs...))
	}
	return nil
}

// matchReceipts orders the receipts like the records and checks them.
func matchReceipts(records []Consumption, receipts []Receipt) ([]Receipt, error) {
	byKey := make(map[string]Receipt, len(receipts))
	for _, r := range receipts {
		if r.Status != ReceiptAccepted && r.Status != ReceiptDuplicate {
			return nil, fmt.Errorf("supervaizer: consumption receipt for %q has status %q, want %q or %q", r.IdempotencyKey, r.Status, ReceiptAccepted, ReceiptDuplicate)
		}
		if strings.TrimSpace(r.ReceiptID) == "" {
			return nil, fmt.Errorf("supervaizer: consumption receipt for %q has no receipt_id", r.IdempotencyKey)
		}
		byKey[r.IdempotencyKey] = r
	}
	out := make([]Receipt, len(records))
	for i, rec := range records {
		r, ok := byKey[rec.IdempotencyKey]
		if !ok {
			return nil, fmt.Errorf("supervaizer: Studio returned no consumption receipt for idempotency key %q", rec.IdempotencyKey)
		}
		out[i] = r
	}
	return out, nil
}

// httpBilling is the provisional HTTP wire format.
type httpBilling struct{ a *Client }

type wireConsumption struct {
	SKU            string         `json:"sku"`
	Quantity       float64        `json:"quantity"`
	JobID          string         `json:"job_id"`
	CaseID         string         `json:"case_id,omitempty"`
	OccurredAt     string         `json:"occurred_at"`
	IdempotencyKey string         `json:"idempotency_key"`
	Metadata       map[string]any `json:"metadata,omitempty"`
}

type wireConsumptionReport struct {
	AgentSlug string            `json:"agent_slug"`
	Records   []wireConsumption `json:"records"`
}

type wireReceipts struct {
	Receipts []struct {
		IdempotencyKey string `json:"idempotency_key"`
		Status         string `json:"status"`
		ReceiptID      string `json:"receipt_id"`
	} `json:"receipts"`
}

// SendConsumption implements BillingTransport.
func (h httpBilling) SendConsumption(ctx context.Context, agentSlug string, records []Consumption) ([]Receipt, error) {
	report := wireConsumptionReport{AgentSlug: agentSlug, Records: make([]wireConsumption, len(records))}
	for i, r := range records {
		report.Records[i] = wireConsumption{
			SKU: r.SKU, Quantity: r.Quantity, JobID: r.JobID, CaseID: r.CaseID,
			OccurredAt: r.OccurredAt.UTC().Format(time.RFC3339Nano), IdempotencyKey: r.IdempotencyKey, Metadata: r.Metadata,
		}
	}
	body, err := h.a.call(ctx, http.MethodPost, BillingConsumptionPath, report)
	if err != nil {
		return nil, err
	}
	var resp wireReceipts
	if err := decodeObject(body, &resp); err != nil {
		return nil, fmt.Errorf("consumption response: %w", err)
	}
	out := make([]Receipt, len(resp.Receipts))
	for i, r := range resp.Receipts {
		out[i] = Receipt{IdempotencyKey: r.IdempotencyKey, Status: r.Status, ReceiptID: r.ReceiptID}
	}
	return out, nil
}
