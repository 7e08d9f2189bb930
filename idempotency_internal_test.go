package supervaizer

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/store"
)

// gatedStore holds the next PutIfAbsent, once armed, until release is closed.
type gatedStore struct {
	store.Store
	armed   atomic.Bool
	entered chan struct{}
	release chan struct{}
}

func (g *gatedStore) PutIfAbsent(ctx context.Context, key string, value []byte) ([]byte, bool, error) {
	if g.armed.CompareAndSwap(true, false) {
		close(g.entered)
		<-g.release
	}
	return g.Store.PutIfAbsent(ctx, key, value)
}

// TestIdempotencyWaiterDoesNotShareAnotherInputsOutcome: a retry with the
// recorded input that arrives while a conflicting request with the same key is
// in flight gets the original result, not that request's conflict.
func TestIdempotencyWaiterDoesNotShareAnotherInputsOutcome(t *testing.T) {
	st := &gatedStore{Store: store.NewMemory(), entered: make(chan struct{}), release: make(chan struct{})}
	l := newIdempotency(st, slog.New(slog.DiscardHandler))
	var runs atomic.Int64
	exec := func(context.Context) ([]byte, *Error) {
		runs.Add(1)
		return []byte(`{"status":"ok","effects":[]}`), nil
	}
	request := func(input string) *ActionRequest {
		return &ActionRequest{AgentSlug: "a", Action: "job.start", IdempotencyKey: "k", MissionID: "m", JobID: "j", Input: json.RawMessage(input)}
	}
	ctx := t.Context()

	original, rpcErr := l.run(ctx, request(`{"x":1}`), exec)
	require.Nil(t, rpcErr)

	st.armed.Store(true)
	conflicting := make(chan []byte, 1)
	go func() {
		raw, _ := l.run(ctx, request(`{"x":2}`), exec)
		conflicting <- raw
	}()
	<-st.entered // the conflicting request is in flight

	retried := make(chan []byte, 1)
	go func() {
		raw, _ := l.run(ctx, request(`{"x":1}`), exec)
		retried <- raw
	}()
	var retry []byte
	select {
	case retry = <-retried:
	case <-time.After(2 * time.Second): // it waited on the conflicting attempt
	}
	close(st.release)
	if retry == nil {
		retry = <-retried
	}
	assert.Equal(t, string(original), string(retry))
	assert.Contains(t, string(<-conflicting), contracts.ErrorIdempotencyConflict)
	assert.EqualValues(t, 1, runs.Load())
}

// TestIdempotencyFailuresCarryActionData: the layer's own -32603 errors carry
// the data of controller.md §5.1 step 6, like a failed handler's.
func TestIdempotencyFailuresCarryActionData(t *testing.T) {
	l := newIdempotency(store.NewMemory(), slog.New(slog.DiscardHandler))
	req := &ActionRequest{AgentSlug: "a", Action: "job.start", IdempotencyKey: "k", MissionID: "m", JobID: "j", Input: json.RawMessage(`{`)}
	_, rpcErr := l.run(t.Context(), req, func(context.Context) ([]byte, *Error) { return nil, nil })
	require.NotNil(t, rpcErr)
	assert.Equal(t, CodeInternalError, rpcErr.Code)
	assert.Equal(t, "Action handler failed", rpcErr.Message)
	assert.Equal(t, map[string]any{"agent_slug": "a", "action": "job.start"}, rpcErr.Data)
	assert.Error(t, rpcErr.Err)
}
