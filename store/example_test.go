package store_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strconv"

	"github.com/supervaize/supervaizer-go/store"
)

func ExampleNewMemory() {
	ctx := context.Background()
	s := store.NewMemory()
	defer s.Close()

	key := store.Key("idempotency", "research-agent", "job.start", "setup-7f3c")
	_, stored, _ := s.PutIfAbsent(ctx, key, []byte(`{"job_id":"job-77"}`))
	fmt.Println("first start stored:", stored)

	existing, stored, _ := s.PutIfAbsent(ctx, key, []byte(`{"job_id":"job-78"}`))
	fmt.Println("retry stored:", stored, "original:", string(existing))
	// Output:
	// first start stored: true
	// retry stored: false original: {"job_id":"job-77"}
}

func ExampleOpen() {
	dir, err := os.MkdirTemp("", "store-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "data", "supervaizer.db") // Open creates data/

	ctx := context.Background()
	s, err := store.Open(path)
	if err != nil {
		log.Fatal(err)
	}
	if _, _, err := s.PutIfAbsent(ctx, "greeting", []byte("hello")); err != nil {
		log.Fatal(err)
	}
	if err := s.Close(); err != nil {
		log.Fatal(err)
	}

	s, err = store.Open(path) // after a restart
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	v, found, err := s.Get(ctx, "greeting")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(found, string(v))
	// Output: true hello
}

// A read-modify-write loop over CompareAndSwap never loses an update, even
// with several writers.
func ExampleStore_compareAndSwap() {
	ctx := context.Background()
	var s store.Store = store.NewMemory()
	defer s.Close()

	increment := func(key string) (int, error) {
		if _, _, err := s.PutIfAbsent(ctx, key, []byte("0")); err != nil {
			return 0, err
		}
		for {
			old, _, err := s.Get(ctx, key)
			if err != nil {
				return 0, err
			}
			n, err := strconv.Atoi(string(old))
			if err != nil {
				return 0, err
			}
			swapped, err := s.CompareAndSwap(ctx, key, old, []byte(strconv.Itoa(n+1)))
			if err != nil || swapped {
				return n + 1, err
			}
		}
	}
	increment("visits")
	n, _ := increment("visits")
	fmt.Println(n)
	// Output: 2
}

func ExampleKey() {
	fmt.Println(store.Key("checkpoints", "case-1", "send-brief:before"))
	fmt.Println(store.Key("a/b", "c"), store.Key("a", "b/c"))
	// Output:
	// checkpoints/case-1/send-brief%3Abefore
	// a%2Fb/c a/b%2Fc
}

func ExamplePrefix() {
	ctx := context.Background()
	s := store.NewMemory()
	defer s.Close()
	for _, id := range []string{"occ-2", "occ-1"} {
		s.PutIfAbsent(ctx, store.Key("checkpoints", "case-1", id), []byte("pending"))
	}
	s.PutIfAbsent(ctx, store.Key("checkpoints", "case-10", "occ-9"), []byte("allow"))

	s.Scan(ctx, store.Prefix("checkpoints", "case-1"), func(key string, value []byte) error {
		parts, err := store.ParseKey(key)
		if err != nil {
			return err
		}
		fmt.Println(parts[2], string(value))
		return nil
	})
	// Output:
	// occ-1 pending
	// occ-2 pending
}

func ExampleParseKey() {
	parts, err := store.ParseKey("checkpoints/case%2F1/occ-1")
	fmt.Printf("%q %v\n", parts, err)
	_, err = store.ParseKey("not a key")
	fmt.Println(err)
	// Output:
	// ["checkpoints" "case/1" "occ-1"] <nil>
	// store: invalid key: unescaped byte 0x20 at offset 3
}

// A component that keeps state per process asks whether the store is its
// process's alone before trusting what it remembers.
func ExampleIsExclusive() {
	fmt.Println(store.IsExclusive(store.NewMemory()))
	// Output: true
}

// ExampleWriteAtomic completes a pending record and creates the record of
// its result in one write: both or neither.
func ExampleWriteAtomic() {
	ctx := context.Background()
	s := store.NewMemory()
	defer s.Close()

	pending, done := []byte(`{"state":"pending"}`), []byte(`{"state":"done"}`)
	_, _, _ = s.PutIfAbsent(ctx, "idempotency/setup-7f3c", pending)

	applied, err := store.WriteAtomic(ctx, s, []store.Op{
		store.CompareAndSwapOp("idempotency/setup-7f3c", pending, done),
		store.PutIfAbsentOp("jobs/job-77", []byte(`{"status":"running"}`)),
	})
	fmt.Println("applied:", applied, err)

	// Again: the first op's condition no longer holds, so nothing is written.
	applied, err = store.WriteAtomic(ctx, s, []store.Op{
		store.CompareAndSwapOp("idempotency/setup-7f3c", pending, done),
		store.PutIfAbsentOp("jobs/job-78", []byte(`{"status":"running"}`)),
	})
	_, found, _ := s.Get(ctx, "jobs/job-78")
	fmt.Println("applied:", applied, err, "job-78 stored:", found)
	// Output:
	// applied: true <nil>
	// applied: false <nil> job-78 stored: false
}
