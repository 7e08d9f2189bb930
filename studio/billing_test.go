package studio

import (
	"context"
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/internal/tools/studiotest"
)

const billingPath = "/w/ws-1/api/v1/billing/consumption/"

var billingCatalog = contracts.BillingCatalog{{SKU: "brief_generated", Unit: "brief"}, {SKU: "source_read", Unit: "source"}}

var billingTime = time.Date(2026, 10, 11, 9, 30, 0, 0, time.FixedZone("CEST", 2*3600))

func TestReportConsumption(t *testing.T) {
	t.Parallel()
	f := studiotest.New(t)
	f.Answer("POST /billing/consumption/", http.StatusOK, `{"receipts":[
		{"idempotency_key":"job-1:sources","status":"duplicate","receipt_id":"rcpt-1"},
		{"idempotency_key":"job-1:brief","status":"accepted","receipt_id":"rcpt-2"}]}`)
	receipts, err := testClient(t, f).ReportConsumption(context.Background(), studiotest.AgentSlug, billingCatalog,
		Consumption{SKU: "brief_generated", Quantity: 1, JobID: "job-1", OccurredAt: billingTime, IdempotencyKey: "job-1:brief"},
		Consumption{SKU: "source_read", Quantity: 12.5, JobID: "job-1", CaseID: "case-7", OccurredAt: billingTime,
			IdempotencyKey: "job-1:sources", Metadata: map[string]any{"provider": "web"}},
	)
	require.NoError(t, err)
	assert.Equal(t, []Receipt{
		{IdempotencyKey: "job-1:brief", Status: ReceiptAccepted, ReceiptID: "rcpt-2"},
		{IdempotencyKey: "job-1:sources", Status: ReceiptDuplicate, ReceiptID: "rcpt-1"},
	}, receipts, "receipts in record order")
	reqs := f.Recorded()
	require.Len(t, reqs, 1)
	assert.Equal(t, billingPath, reqs[0].Path)
	assert.JSONEq(t, `{"agent_slug":"research-agent","records":[
		{"sku":"brief_generated","quantity":1,"job_id":"job-1","occurred_at":"2026-10-11T07:30:00Z","idempotency_key":"job-1:brief"},
		{"sku":"source_read","quantity":12.5,"job_id":"job-1","case_id":"case-7","occurred_at":"2026-10-11T07:30:00Z",
		 "idempotency_key":"job-1:sources","metadata":{"provider":"web"}}]}`, string(reqs[0].Body))
}

func TestReportConsumptionRejectsBeforeSending(t *testing.T) {
	t.Parallel()
	ok := Consumption{SKU: "brief_generated", Quantity: 1, JobID: "job-1", OccurredAt: billingTime, IdempotencyKey: "k1"}
	with := func(mod func(*Consumption)) Consumption { c := ok; mod(&c); return c }
	tests := []struct {
		name    string
		records []Consumption
		want    string
	}{
		{"no records", nil, "no records"},
		{"unknown sku", []Consumption{with(func(c *Consumption) { c.SKU = "gold_plating" })},
			`sku "gold_plating" is not in the billing catalog of agent "research-agent" (catalog: [brief_generated, source_read])`},
		{"zero quantity", []Consumption{with(func(c *Consumption) { c.Quantity = 0 })}, "quantity must be a finite number > 0"},
		{"NaN quantity", []Consumption{with(func(c *Consumption) { c.Quantity = math.NaN() })}, "quantity"},
		{"no job", []Consumption{with(func(c *Consumption) { c.JobID = " " })}, "job_id is required"},
		{"blank case", []Consumption{with(func(c *Consumption) { c.CaseID = " " })}, "case_id is blank"},
		{"no time", []Consumption{with(func(c *Consumption) { c.OccurredAt = time.Time{} })}, "occurred_at is required"},
		{"no idempotency key", []Consumption{with(func(c *Consumption) { c.IdempotencyKey = "" })}, "idempotency_key is required"},
		{"duplicate idempotency keys", []Consumption{ok, ok}, "records[1]: idempotency_key is the same as records[0]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := studiotest.New(t)
			_, err := testClient(t, f).ReportConsumption(context.Background(), studiotest.AgentSlug, billingCatalog, tt.records...)
			require.ErrorContains(t, err, tt.want)
			assert.Empty(t, f.Recorded(), "nothing is sent")
		})
	}
}

func TestReportConsumptionChecksReceipts(t *testing.T) {
	t.Parallel()
	rec := Consumption{SKU: "brief_generated", Quantity: 1, JobID: "job-1", OccurredAt: billingTime, IdempotencyKey: "k1"}
	tests := []struct {
		name, answer, want string
	}{
		{"missing receipt", `{"receipts":[]}`, `no consumption receipt for idempotency key "k1"`},
		{"unknown status", `{"receipts":[{"idempotency_key":"k1","status":"billed","receipt_id":"r"}]}`, `status "billed"`},
		{"no receipt id", `{"receipts":[{"idempotency_key":"k1","status":"accepted"}]}`, "no receipt_id"},
		{"not an object", `[]`, "not a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := studiotest.New(t)
			f.Answer("POST /billing/consumption/", http.StatusOK, tt.answer)
			_, err := testClient(t, f).ReportConsumption(context.Background(), studiotest.AgentSlug, billingCatalog, rec)
			require.ErrorContains(t, err, tt.want)
		})
	}
}

// memoryBilling is a BillingTransport with the idempotency rule of
// a project decision: a known key returns the original receipt.
type memoryBilling struct{ seen map[string]Receipt }

func (m *memoryBilling) SendConsumption(_ context.Context, _ string, records []Consumption) ([]Receipt, error) {
	out := make([]Receipt, 0, len(records))
	for _, r := range records {
		if old, ok := m.seen[r.IdempotencyKey]; ok {
			old.Status = ReceiptDuplicate
			out = append(out, old)
			continue
		}
		rc := Receipt{IdempotencyKey: r.IdempotencyKey, Status: ReceiptAccepted, ReceiptID: "rcpt-" + r.IdempotencyKey}
		m.seen[r.IdempotencyKey] = rc
		out = append(out, rc)
	}
	return out, nil
}

func TestBillingTransportIsReplaceable(t *testing.T) {
	t.Parallel()
	f := studiotest.New(t)
	acct := testClient(t, f, func(c *Config) { c.Billing = &memoryBilling{seen: map[string]Receipt{}} })
	rec := Consumption{SKU: "brief_generated", Quantity: 1, JobID: "job-1", OccurredAt: billingTime, IdempotencyKey: "k1"}
	first, err := acct.ReportConsumption(context.Background(), studiotest.AgentSlug, billingCatalog, rec)
	require.NoError(t, err)
	again, err := acct.ReportConsumption(context.Background(), studiotest.AgentSlug, billingCatalog, rec)
	require.NoError(t, err)
	assert.Equal(t, ReceiptAccepted, first[0].Status)
	assert.Equal(t, ReceiptDuplicate, again[0].Status)
	assert.Equal(t, first[0].ReceiptID, again[0].ReceiptID, "a retried report returns the original receipt")
	assert.Empty(t, f.Recorded())
}
