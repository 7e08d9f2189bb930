//go:build crashpoint && unix

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/supervaize/supervaizer-go/store"
)

// A crashpoint build (go build -tags crashpoint) kills itself with SIGKILL
// just before a chosen write of a governed delivery: the real kill -9 of the
// crash tests (TestGovernedDeliveryRealKill). Without the tag none of this is
// compiled.

// envCrashAtWrite is the 1-based write, counted from the approval of a
// brief, before which the process kills itself.
const envCrashAtWrite = "RESEARCH_AGENT_CRASH_AT_WRITE"

func init() {
	crashpoints = func(getenv func(string) string, st store.Store) store.Store {
		n, err := strconv.Atoi(getenv(envCrashAtWrite))
		if err != nil || n <= 0 {
			return st
		}
		return &killAtWrite{Store: st, at: n}
	}
}

// killAtWrite counts the delivery's writes (deliveryKey) made once a job is
// approved and sends SIGKILL to its own process before the at-th.
type killAtWrite struct {
	store.Store
	at int

	mu    sync.Mutex
	armed bool
	n     int
}

// Exclusive forwards to the wrapped store.
func (s *killAtWrite) Exclusive() bool { return store.IsExclusive(s.Store) }

// before counts a write and dies at the chosen one.
func (s *killAtWrite) before(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.armed || !deliveryKey(key) {
		return
	}
	s.n++
	if s.n == s.at {
		fmt.Fprintf(os.Stderr, "crashpoint: SIGKILL before write %d (%s)\n", s.n, key)
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal ends the process
	}
}

func (s *killAtWrite) PutIfAbsent(ctx context.Context, key string, value []byte) ([]byte, bool, error) {
	s.before(key)
	return s.Store.PutIfAbsent(ctx, key, value)
}

func (s *killAtWrite) CompareAndSwap(ctx context.Context, key string, old, new []byte) (bool, error) {
	s.before(key)
	swapped, err := s.Store.CompareAndSwap(ctx, key, old, new)
	if err == nil && swapped && strings.Contains(key, "jobs") && bytes.Contains(new, []byte(`"approved":true`)) {
		s.mu.Lock()
		s.armed = true // the delivery starts with the approval
		s.mu.Unlock()
	}
	return swapped, err
}

func (s *killAtWrite) Delete(ctx context.Context, key string) error {
	s.before(key)
	return s.Store.Delete(ctx, key)
}
