package supervaizer_test

import (
	"bytes"
	"io"
	"net/http"
	"testing"
	"time"

	supervaizer "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/internal/tools/loadcheck/fixture"
	"github.com/supervaize/supervaizer-go/internal/validate"
)

// benchWriter is the cheapest ResponseWriter: it keeps the status and the
// body of the last response and reuses its header map.
type benchWriter struct {
	header http.Header
	status int
	body   []byte
}

func (w *benchWriter) Header() http.Header { return w.header }
func (w *benchWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}

func (w *benchWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.body = append(w.body, p...)
	return len(p), nil
}

func (w *benchWriter) reset() {
	clear(w.header)
	w.status = 0
	w.body = w.body[:0]
}

// benchCall is one POST /a2a request that can be served again and again: the
// request is built once and only its body is rewound.
type benchCall struct {
	req  *http.Request
	body *bytes.Reader
	raw  []byte
}

func newBenchCall(tb testing.TB, raw []byte, token string) *benchCall {
	tb.Helper()
	c := &benchCall{body: bytes.NewReader(raw), raw: raw}
	req, err := http.NewRequest(http.MethodPost, "http://127.0.0.1/a2a", io.NopCloser(c.body))
	if err != nil {
		tb.Fatal(err)
	}
	req.ContentLength = int64(len(raw))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(supervaizer.HeaderAPIKey, fixture.APIKey)
	req.Header.Set(supervaizer.HeaderWorkspaceAuthorization, "Bearer "+token)
	c.req = req
	return c
}

func (c *benchCall) serve(h http.Handler, w *benchWriter) {
	c.body.Reset(c.raw)
	w.reset()
	h.ServeHTTP(w, c.req)
}

// succeeded reports whether the last response was a JSON-RPC result.
func (w *benchWriter) succeeded() bool {
	return w.status == http.StatusOK && bytes.Contains(w.body, []byte(`"result":{"status":"ok"`))
}

// BenchmarkInvoke measures one supervaizer/action.invoke served in process:
// API key, body limit, envelope, request model, workspace token (a real
// Ed25519 token, verified once and then a cache hit), typed input, handler,
// result validation, SSE publish (no subscriber) and the response.
func BenchmarkInvoke(b *testing.B) {
	benchInvoke(b, fixture.Body(), 1024, nil)
}

// BenchmarkInvokeJobState is BenchmarkInvoke on a realistic result: job.sync
// answering the research agent's job_state of a job awaiting review (the job
// and its display texts, the setup case, the awaiting step and its fields),
// its sync cursor and replay safety.
func BenchmarkInvokeJobState(b *testing.B) {
	benchInvoke(b, fixture.SyncBody(), 4096, []byte(`"job_state":{"job":`))
}

// benchInvoke serves the action.invoke request body of the loadcheck fixture
// controller in a loop, after checking that a first call succeeds and that
// its result contains want (when not nil); bodyCap presizes the response.
func benchInvoke(b *testing.B, body []byte, bodyCap int, want []byte) {
	srv, err := fixture.NewController()
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	token, err := fixture.Token("bench", now.Add(-time.Minute), now.Add(time.Hour))
	if err != nil {
		b.Fatal(err)
	}
	call := newBenchCall(b, body, token)
	w := &benchWriter{header: make(http.Header, 4), body: make([]byte, 0, bodyCap)}
	call.serve(srv, w)
	if !w.succeeded() || (want != nil && !bytes.Contains(w.body, want)) {
		b.Fatalf("status %d: %s", w.status, w.body)
	}
	b.SetBytes(int64(len(call.raw)))
	b.ReportAllocs()
	for b.Loop() {
		call.serve(srv, w)
		if w.status != http.StatusOK {
			b.Fatalf("status %d: %s", w.status, w.body)
		}
	}
	if !w.succeeded() {
		b.Fatalf("last response: %s", w.body)
	}
}

// BenchmarkEncodeValidateJobState measures what the pipeline does with the
// result of BenchmarkInvokeJobState: encode it once and validate those bytes
// (compiled schema, then the Go rules).
func BenchmarkEncodeValidateJobState(b *testing.B) {
	v := validate.Default()
	res := fixture.SyncResult("job-77")
	buf, err := v.AppendValue(nil, contracts.ModelActionResult, res)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		if buf, _, err = v.AppendResult(buf[:0], res); err != nil {
			b.Fatal(err)
		}
	}
}
