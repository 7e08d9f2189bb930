package postgres

import (
	"context"
	"strconv"
	"testing"
)

// BenchmarkStore measures one round trip per operation on a local server.
func BenchmarkStore(b *testing.B) {
	db := openTest(b)
	s := db.Store()
	ctx := context.Background()
	value := make([]byte, 512)
	if _, _, err := s.PutIfAbsent(ctx, "bench/get", value); err != nil {
		b.Fatal(err)
	}
	b.Run("Get", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := s.Get(ctx, "bench/get"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("PutIfAbsent", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i++
			if _, _, err := s.PutIfAbsent(ctx, "bench/put/"+strconv.Itoa(i), value); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("PutIfAbsentExisting", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, stored, err := s.PutIfAbsent(ctx, "bench/get", value); err != nil || stored {
				b.Fatal(err, stored)
			}
		}
	})
	b.Run("CompareAndSwap", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if ok, err := s.CompareAndSwap(ctx, "bench/get", value, value); err != nil || !ok {
				b.Fatal(err, ok)
			}
		}
	})
}
