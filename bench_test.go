package supervaizer_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	supervaizer "github.com/supervaize/supervaizer-go"
	svtest "github.com/supervaize/supervaizer-go/testing"
)

// newBenchServer serves the research agent with a typed job.start action and
// a job.start surface, and nothing that records calls; outside local mode it
// returns a workspace token the server accepts.
func newBenchServer(b *testing.B, local bool) (srv *supervaizer.Server, token string) {
	b.Helper()
	studio := svtest.NewFakeStudio(b)
	opts := []supervaizer.Option{
		supervaizer.WithEnv(emptyEnv),
		supervaizer.WithServerID(testServerID),
		supervaizer.WithAPIKey(testWriteKey, supervaizer.ScopeWrite),
	}
	if local {
		opts = append(opts, supervaizer.WithLocalMode(true))
	} else {
		opts = append(opts, supervaizer.WithWorkspaceAuth(testWorkspaceAuth(studio)))
		token = "Bearer " + mintToken(studio, nil)
	}
	a := newTestAgent(b, testAgentName)
	studio.Link(a, testStudioAgentID)
	srv, err := supervaizer.NewServer([]*supervaizer.Agent{a}, opts...)
	if err != nil {
		b.Fatal(err)
	}
	supervaizer.HandleActionFor(srv, "job.start", func(_ context.Context, req *supervaizer.ActionRequest, in jobStartInput) (*supervaizer.ActionResult, error) {
		return supervaizer.OK(supervaizer.JobStarted(req.JobID, map[string]any{"topic_id": in.TopicID})), nil
	})
	doc := map[string]any{"type": "Form", "fields": []any{}, "submit": map[string]any{"action": "job.start", "label": "Start"}}
	srv.HandleSurface("job.start", func(ctx context.Context, req *supervaizer.SurfaceRequest) (*supervaizer.SurfaceResult, error) {
		return supervaizer.NewSurfaceResult(ctx, req.Surface, doc)
	})
	return srv, token
}

// benchServe runs body through ServeHTTP b.N times and checks each answer.
func benchServe(b *testing.B, srv *supervaizer.Server, body []byte, token string) {
	b.Helper()
	serve := func() {
		r := httptest.NewRequest(http.MethodPost, "http://localhost/a2a", bytes.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set(supervaizer.HeaderAPIKey, testWriteKey)
		if token != "" {
			r.Header.Set(supervaizer.HeaderWorkspaceAuthorization, token)
		}
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, r)
		if w.Code != http.StatusOK || !bytes.Contains(w.Body.Bytes(), []byte(`"result"`)) {
			b.Fatalf("HTTP %d: %s", w.Code, w.Body)
		}
	}
	serve() // warm up: the token is verified once, then served from the cache
	b.ReportAllocs()
	for b.Loop() {
		serve()
	}
}

// BenchmarkServeInvoke measures one typed action through the whole pipeline: API
// key, envelope, request model, workspace token (cache hit), input
// validation, handler, result validation, SSE publish, response.
func BenchmarkServeInvoke(b *testing.B) {
	srv, token := newBenchServer(b, false)
	body := rpcBody(b, "rpc-1", supervaizer.MethodActionInvoke, map[string]any{"action_request": actionParams("job.start", nil)})
	benchServe(b, srv, body, token)
}

// BenchmarkServeInvokeLocal is BenchmarkServeInvoke in local mode, without a token.
func BenchmarkServeInvokeLocal(b *testing.B) {
	srv, _ := newBenchServer(b, true)
	body := rpcBody(b, "rpc-1", supervaizer.MethodActionInvoke, map[string]any{"action_request": actionParams("job.start", nil)})
	benchServe(b, srv, body, "")
}

// BenchmarkServeSurfaceLoad measures one surface load with a verified token.
func BenchmarkServeSurfaceLoad(b *testing.B) {
	srv, token := newBenchServer(b, false)
	body := rpcBody(b, "rpc-1", supervaizer.MethodSurfaceLoad, map[string]any{"surface_request": surfaceParams("job.start", nil)})
	benchServe(b, srv, body, token)
}
