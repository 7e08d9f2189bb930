package wsauth

import (
	"context"
	"testing"
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
			if _, err := v.Verify(ctx, r); err != nil {
				b.Fatal(err)
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
