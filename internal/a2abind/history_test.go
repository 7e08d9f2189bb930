package a2abind

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/conversation"
	"github.com/supervaize/supervaizer-go/store"
)

func turns(s ...string) (conversation.Turn, conversation.Turn) {
	return conversation.Turn{Role: conversation.RoleUser, Content: s[0]}, conversation.Turn{Role: conversation.RoleAssistant, Content: s[1]}
}

func contents(ts []conversation.Turn) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Content
	}
	return out
}

func TestHistoryBounds(t *testing.T) {
	tests := []struct {
		name string
		lim  conversation.Limits
		want []string // the history after three exchanges q1/a1 … q3/a3
	}{
		{"defaults keep all", conversation.Limits{}, []string{"q1", "a1", "q2", "a2", "q3", "a3"}},
		{"turns", conversation.Limits{Turns: 3}, []string{"a2", "q3", "a3"}},
		{"bytes", conversation.Limits{Bytes: 5}, []string{"q3", "a3"}},
		{"bytes keep the last exchange", conversation.Limits{Bytes: 1}, []string{"q3", "a3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			h := NewHistory(store.NewMemory(), tt.lim)
			for i := 1; i <= 3; i++ {
				u, a := turns(fmt.Sprintf("q%d", i), fmt.Sprintf("a%d", i))
				require.NoError(t, h.Append(ctx, "ws", "agent", "ctx", fmt.Sprintf("m%d", i), u, a))
			}
			got, seen, err := h.Load(ctx, "ws", "agent", "ctx", "m4")
			require.NoError(t, err)
			assert.False(t, seen)
			assert.Equal(t, tt.want, contents(got))
		})
	}
}

func TestHistoryRetryAndScope(t *testing.T) {
	ctx := t.Context()
	h := NewHistory(store.NewMemory(), conversation.Limits{})
	u, a := turns("q1", "a1")
	require.NoError(t, h.Append(ctx, "ws", "agent", "ctx", "m1", u, a))
	u2, a2 := turns("q2", "a2")
	require.NoError(t, h.Append(ctx, "ws", "agent", "ctx", "m2", u2, a2))
	require.NoError(t, h.Append(ctx, "ws", "agent", "ctx", "m2", u2, a2), "a retried message")
	got, seen, err := h.Load(ctx, "ws", "agent", "ctx", "m2")
	require.NoError(t, err)
	assert.True(t, seen, "m2 was answered")
	assert.Equal(t, []string{"q1", "a1"}, contents(got), "the history before m2")
	got, _, err = h.Load(ctx, "ws", "agent", "ctx", "m3")
	require.NoError(t, err)
	assert.Equal(t, []string{"q1", "a1", "q2", "a2"}, contents(got), "the retry appended nothing")
	for _, other := range [][3]string{{"ws-2", "agent", "ctx"}, {"ws", "agent-2", "ctx"}, {"ws", "agent", "ctx-2"}} {
		got, _, err := h.Load(ctx, other[0], other[1], other[2], "m3")
		require.NoError(t, err)
		assert.Empty(t, got, "%v sees none of it", other)
	}
}

func TestHistoryRetentionAndContexts(t *testing.T) {
	ctx := t.Context()
	st := store.NewMemory()
	h := NewHistory(st, conversation.Limits{Retention: time.Hour, Contexts: 2})
	now := time.Unix(1_700_000_000, 0)
	h.now = func() time.Time { return now }
	for i := 1; i <= 3; i++ {
		u, a := turns("q", "a")
		require.NoError(t, h.Append(ctx, "ws", "agent", fmt.Sprintf("ctx-%d", i), "m", u, a))
		now = now.Add(time.Minute)
	}
	count := 0
	require.NoError(t, st.Scan(ctx, workspacePrefix("ws"), func(string, []byte) error { count++; return nil }))
	assert.Equal(t, 2, count, "at most two conversations per workspace")
	got, _, err := h.Load(ctx, "ws", "agent", "ctx-1", "m2")
	require.NoError(t, err)
	assert.Empty(t, got, "the least recently used went")
	got, _, err = h.Load(ctx, "ws", "agent", "ctx-3", "m2")
	require.NoError(t, err)
	assert.Len(t, got, 2)
	now = now.Add(2 * time.Hour)
	got, _, err = h.Load(ctx, "ws", "agent", "ctx-3", "m2")
	require.NoError(t, err)
	assert.Empty(t, got, "past the retention")
}

func TestHistoryConcurrentAppends(t *testing.T) {
	ctx := t.Context()
	h := NewHistory(store.NewMemory(), conversation.Limits{})
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			u, a := turns(fmt.Sprintf("q%d", i), "a")
			assert.NoError(t, h.Append(ctx, "ws", "agent", "ctx", fmt.Sprintf("m%d", i), u, a))
		})
	}
	wg.Wait()
	got, _, err := h.Load(ctx, "ws", "agent", "ctx", "none")
	require.NoError(t, err)
	assert.Len(t, got, 32, "no turn lost")
	assert.Equal(t, 16, strings.Count(strings.Join(contents(got), ","), "q"))
}
