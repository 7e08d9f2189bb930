package store_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/store"
)

// The bolt writes fsync: their time is the disk's.

// value is a typical record: an idempotency entry with its result.
var value = []byte(`{"mission_id":"mis-3","job_id":"job-77","input_hash":"0f1e2d3c4b5a69788796a5b4c3d2e1f0","result":{"status":"ok","effects":[{"type":"job.started"}]}}`)

func BenchmarkGet(b *testing.B) {
	for _, impl := range implementations {
		b.Run(impl.name, func(b *testing.B) {
			s := impl.open(b)
			key := store.Key("idempotency", "research-agent", "job.start", "setup-7f3c")
			_, _, err := s.PutIfAbsent(b.Context(), key, value)
			require.NoError(b, err)
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := s.Get(b.Context(), key); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkPutIfAbsent stores a new key each time.
func BenchmarkPutIfAbsent(b *testing.B) {
	for _, impl := range implementations {
		b.Run(impl.name, func(b *testing.B) {
			s := impl.open(b)
			buf := []byte("idempotency/research-agent/job.start/setup-")
			n := len(buf)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				buf = strconv.AppendInt(buf[:n], int64(i), 10)
				if _, stored, err := s.PutIfAbsent(b.Context(), string(buf), value); err != nil || !stored {
					b.Fatal(stored, err)
				}
			}
		})
	}
}

// BenchmarkPutIfAbsentExisting is the replay of a request already recorded.
func BenchmarkPutIfAbsentExisting(b *testing.B) {
	for _, impl := range implementations {
		b.Run(impl.name, func(b *testing.B) {
			s := impl.open(b)
			_, _, err := s.PutIfAbsent(b.Context(), "k", value)
			require.NoError(b, err)
			b.ReportAllocs()
			for b.Loop() {
				if _, stored, err := s.PutIfAbsent(b.Context(), "k", value); err != nil || stored {
					b.Fatal(stored, err)
				}
			}
		})
	}
}

// BenchmarkCompareAndSwap swaps between two values.
func BenchmarkCompareAndSwap(b *testing.B) {
	for _, impl := range implementations {
		b.Run(impl.name, func(b *testing.B) {
			s := impl.open(b)
			values := [2][]byte{value, append([]byte("x"), value...)}
			_, _, err := s.PutIfAbsent(b.Context(), "k", values[0])
			require.NoError(b, err)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if ok, err := s.CompareAndSwap(b.Context(), "k", values[i%2], values[(i+1)%2]); err != nil || !ok {
					b.Fatal(ok, err)
				}
			}
		})
	}
}

func BenchmarkKey(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = store.Key("idempotency", "research-agent", "job.start", "setup/7f3c")
	}
}

// BenchmarkPutIfAbsentParallel stores a new key each time from 16
// goroutines per core: on bbolt, overlapping writes share commits.
func BenchmarkPutIfAbsentParallel(b *testing.B) {
	for _, impl := range implementations {
		b.Run(impl.name, func(b *testing.B) {
			s := impl.open(b)
			var next atomic.Int64
			b.ReportAllocs()
			b.SetParallelism(16)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					key := "idempotency/research-agent/job.start/setup-" + strconv.FormatInt(next.Add(1), 10)
					if _, stored, err := s.PutIfAbsent(context.Background(), key, value); err != nil || !stored {
						b.Error(stored, err)
						return
					}
				}
			})
		})
	}
}
