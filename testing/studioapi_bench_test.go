package testing_test

import (
	"net/http"
	"testing"

	supervaizer "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/studio"
	svtest "github.com/supervaize/supervaizer-go/testing"
)

// BenchmarkFakeStudioAPICheckpoint measures one rule checkpoint answered by
// the fake, in memory: header checks, decoding, canonical hashing, recording.
func BenchmarkFakeStudioAPICheckpoint(b *testing.B) {
	api := svtest.NewFakeStudioAPI(b, svtest.NewFakeStudio(b))
	withToken := header(studio.HeaderRuleCheckpointToken, api.RuleSnapshot(snapshotHash)["checkpoint_token"].(string))
	if w := apiRequest(b, api, http.MethodPost, api.WorkspacePath(svtest.EventsPath),
		eventBody(api, string(studio.EventCaseStart), `{"job":"job-1","case":"case-1"}`, `{}`)); w.Code != http.StatusOK {
		b.Fatal(w.Body.String())
	}
	const body = `{"occurrence_id":"occ-1","phase":"before","snapshot_hash":"` + snapshotHash +
		`","job_id":"job-1","case_id":"case-1","step_id":"s-1","context":{"operation":"send_brief","channel":"email"},"secret_refs":[]}`
	b.ReportAllocs()
	for b.Loop() {
		if w := apiRequest(b, api, http.MethodPost, studio.RuleCheckpointsPath, body, withToken); w.Code != http.StatusOK {
			b.Fatal(w.Body.String())
		}
	}
}

// BenchmarkConnectInvoke measures one action call to a running controller
// over HTTP (loopback), minting included.
func BenchmarkConnectInvoke(b *testing.B) {
	local := svtest.NewTestServer(b, []*supervaizer.Agent{newServedAgent(b, startIdempotent)})
	remote := svtest.Connect(b, local.URL(), local.APIKey, local.Studio)
	req := remote.Request(echoAction, nil)
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := remote.Invoke(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}
