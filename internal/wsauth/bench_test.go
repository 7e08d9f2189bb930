package wsauth

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func BenchmarkVerify(b *testing.B) {
	tok := mintWith(b, nil)
	r := testRequest(tok)
	ctx := context.Background()
	for _, bc := range []struct {
		name string
		size int
	}{{"cache_miss", 0}, {"cache_hit", DefaultCacheSize}} {
		b.Run(bc.name, func(b *testing.B) {
			v := newPEMVerifier(b, WithCacheSize(bc.size))
			for range 2 { // a token is cached from its second verification
				if _, err := v.Verify(ctx, r); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := v.Verify(ctx, r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkVerifyRejectForged(b *testing.B) {
	v := newPEMVerifier(b)
	r := testRequest(mint(b, otherKey.priv, validHeader(), validClaims()))
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v.Verify(ctx, r); err == nil {
			b.Fatal("forged token verified")
		}
	}
}

// BenchmarkVerifyFloor measures, side by side, the floor of an uncached
// verification (ed25519.Verify of the token's signing input alone) and the
// full uncached verification of the same token: their difference is what
// the verifier costs above the signature check (issue 40 item 3: at most
// 10 µs of CPU). verify_fresh_cached is a fresh token with the cache on (a
// miss, then an insertion that evicts), verify_cache_hit a reused token.
func BenchmarkVerifyFloor(b *testing.B) {
	tok := mintWith(b, nil)
	dot := strings.LastIndexByte(tok, '.')
	sig, err := base64.RawURLEncoding.DecodeString(tok[dot+1:])
	require.NoError(b, err)
	input := []byte(tok[:dot])
	pub := mainKey.priv.Public().(ed25519.PublicKey)
	b.Run("ed25519_verify", func(b *testing.B) {
		b.ReportAllocs()
		cpu := processCPU(b)
		for b.Loop() {
			if !ed25519.Verify(pub, input, sig) {
				b.Fatal("signature rejected")
			}
		}
		reportCPU(b, cpu)
	})
	b.Run("verify_uncached", func(b *testing.B) {
		benchVerify(b, newPEMVerifier(b, WithCacheSize(0)), testRequest(tok))
	})
	// Both in alternating blocks, so that on a loaded machine both see the
	// same contention: the difference of their CPU is the verifier's cost
	// above the signature check.
	b.Run("interleaved", func(b *testing.B) {
		v := newPEMVerifier(b, WithCacheSize(0))
		r := testRequest(tok)
		ctx := context.Background()
		const block = 100
		var floor, full int64
		b.ReportAllocs()
		for done := 0; done < b.N; done += block {
			n := min(block, b.N-done)
			start := processCPU(b)
			for range n {
				if !ed25519.Verify(pub, input, sig) {
					b.Fatal("signature rejected")
				}
			}
			mid := processCPU(b)
			for range n {
				if _, err := v.Verify(ctx, r); err != nil {
					b.Fatal(err)
				}
			}
			floor, full = floor+mid-start, full+processCPU(b)-mid
		}
		b.ReportMetric(float64(floor)/float64(b.N), "floor-cpu-ns/op")
		b.ReportMetric(float64(full)/float64(b.N), "uncached-cpu-ns/op")
		b.ReportMetric(float64(full-floor)/float64(b.N), "above-cpu-ns/op")
	})
	// A fresh token as a controller sees it, with the cache on: 256 tokens
	// take turns in a one-entry cache whose admission table has two slots,
	// so every call misses, verifies and records the token's tag, which the
	// next tokens overwrite before its turn comes again (a token enters the
	// cache on its second verification).
	b.Run("verify_fresh_cached", func(b *testing.B) {
		reqs := make([]Request, 256)
		for i := range reqs {
			reqs[i] = testRequest(mintWith(b, setClaim("jti", fmt.Sprint("tok-", i))))
		}
		v := newPEMVerifier(b, WithCacheSize(1))
		benchVerify(b, v, reqs...)
		if n := v.cache.len(); n != 0 {
			b.Fatalf("%d token(s) cached: the calls were not all fresh", n)
		}
	})
	// The reused token: a cache hit. fresh − hit − ed25519_verify is what
	// a fresh token costs above the reused path and the signature check
	// (the load check's measure).
	b.Run("verify_cache_hit", func(b *testing.B) {
		v, r := newPEMVerifier(b), testRequest(tok)
		for range 2 { // a token is cached from its second verification
			_, err := v.Verify(context.Background(), r)
			require.NoError(b, err)
		}
		require.Equal(b, 1, v.cache.len())
		benchVerify(b, v, r)
	})
}

// benchVerify verifies reqs in turn with v, each call expected to pass,
// and reports the process CPU per call (reportCPU) beside ns/op.
func benchVerify(b *testing.B, v *Verifier, reqs ...Request) {
	ctx := context.Background()
	b.ReportAllocs()
	cpu := processCPU(b)
	i := 0
	for b.Loop() {
		if _, err := v.Verify(ctx, reqs[i%len(reqs)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
	reportCPU(b, cpu)
}

// reportCPU reports the process CPU time used since start per iteration
// (cpu-ns/op): unlike ns/op, it does not count the time the benchmark
// waited for a core on a loaded machine.
func reportCPU(b *testing.B, start int64) {
	b.ReportMetric(float64(processCPU(b)-start)/float64(b.N), "cpu-ns/op")
}

// BenchmarkClaimsDecode decodes the claims of a valid token's payload as
// golang-jwt's parser has the verifier do it (encoding/json, then the tape).
func BenchmarkClaimsDecode(b *testing.B) {
	payload := []byte(mustJSON(b, validClaims()))
	b.ReportAllocs()
	cpu := processCPU(b)
	for b.Loop() {
		if _, e := tapeClaims(payload); e != nil {
			b.Fatal(e)
		}
	}
	reportCPU(b, cpu)
}
