package testing_test

import (
	"testing"

	supervaizer "github.com/supervaize/supervaizer-go"
	svtest "github.com/supervaize/supervaizer-go/testing"
)

// BenchmarkInvoke measures one action call through the whole pipeline,
// minting included.
func BenchmarkInvoke(b *testing.B) {
	ts := svtest.NewTestServer(b, []*supervaizer.Agent{newServedAgent(b, startIdempotent)})
	req := ts.Request(echoAction, nil)
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ts.Invoke(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMint measures minting one workspace token.
func BenchmarkMint(b *testing.B) {
	studio := svtest.NewFakeStudio(b)
	c := studio.Claims(svtest.Grant{AgentSlug: agentSlug, Scopes: []string{supervaizer.MethodActionInvoke, echoAction}})
	b.ReportAllocs()
	for b.Loop() {
		_ = studio.Mint(c)
	}
}

// BenchmarkAssertConfirmIdempotent measures the helper with every check.
func BenchmarkAssertConfirmIdempotent(b *testing.B) {
	ts := svtest.NewTestServer(b, []*supervaizer.Agent{newServedAgent(b, startIdempotent)})
	req := startRequest(ts, launchAction, "t-1")
	opt := svtest.RecommendedChecks(map[string]any{"topic_id": "t-2"})
	b.ReportAllocs()
	for b.Loop() {
		if !svtest.AssertConfirmIdempotent(b, ts, req, opt) {
			b.FailNow()
		}
	}
}
