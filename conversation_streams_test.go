package supervaizer_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/conversation"
)

// newHeldChatServer serves a conversation action that emits a chunk and
// then holds its stream open until release is closed (or the call ends).
func newHeldChatServer(tb testing.TB, release <-chan struct{}, opts ...supervaizer.Option) *httptest.Server {
	tb.Helper()
	a, err := supervaizer.NewAgent(supervaizer.AgentSpec{
		Name: "Chat Agent", Version: "1.0.0", Description: "Answers questions.", Conversation: "chat.ask",
		Registration: supervaizer.RegistrationSpec{Actions: supervaizer.Actions("chat.ask")},
	})
	require.NoError(tb, err)
	supervaizer.HandleActionFor(a, "chat.ask", func(ctx context.Context, _ *supervaizer.ActionRequest, in conversation.Input) (*supervaizer.ActionResult, error) {
		conversation.Emit(ctx, "thinking")
		select {
		case <-release:
		case <-ctx.Done():
		}
		return conversation.Reply(&conversation.Output{Response: "done"}), nil
	})
	opts = append([]supervaizer.Option{supervaizer.WithEnv(emptyEnv), supervaizer.WithServerID(testServerID),
		supervaizer.WithAPIKey(testWriteKey, supervaizer.ScopeWrite), supervaizer.WithLocalMode(true)}, opts...)
	srv, err := supervaizer.NewServer([]*supervaizer.Agent{a}, opts...)
	require.NoError(tb, err)
	hs := httptest.NewServer(srv)
	tb.Cleanup(hs.Close)
	return hs
}

// TestConversationStreamsCountInLimits: a streamed conversation holds one
// of MaxEventStreams and of its API key's MaxStreamsPerKey while it is
// open, like a task stream, and gives it back when it ends. The code
// before the fix opened conversation streams past both bounds: this test
// failed.
func TestConversationStreamsCountInLimits(t *testing.T) {
	const otherKey = "second-write-key"
	open := func(t *testing.T, base, key string, i int) *http.Response {
		t.Helper()
		events, resp := openStreamAs(t, base, "message/stream", textMessage("0.3", fmt.Sprintf("held-%s-%d", key, i), "ctx-held", "wait"), streamOpts{key: key})
		if resp.StatusCode == http.StatusOK {
			ev := <-events
			require.Equal(t, "task", ev.Kind, "the stream's first event")
		}
		return resp
	}
	events := func(t *testing.T, base string) int {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, base+"/a2a/events", nil)
		require.NoError(t, err)
		req.Header.Set(supervaizer.HeaderAPIKey, testWriteKey)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		return resp.StatusCode
	}

	t.Run("MaxEventStreams", func(t *testing.T) {
		release := make(chan struct{})
		defer close(release)
		hs := newHeldChatServer(t, release, supervaizer.WithHTTPSettings(supervaizer.HTTPSettings{MaxEventStreams: 2}))
		require.Equal(t, http.StatusOK, open(t, hs.URL, testWriteKey, 1).StatusCode)
		require.Equal(t, http.StatusOK, open(t, hs.URL, testWriteKey, 2).StatusCode)
		third := open(t, hs.URL, testWriteKey, 3)
		assert.Equal(t, http.StatusServiceUnavailable, third.StatusCode, "the third conversation stream")
		assert.NotEmpty(t, third.Header.Get("Retry-After"))
		assert.Equal(t, http.StatusServiceUnavailable, events(t, hs.URL), "/a2a/events counts with conversation streams")
	})

	t.Run("MaxStreamsPerKey", func(t *testing.T) {
		release := make(chan struct{})
		hs := newHeldChatServer(t, release, supervaizer.WithAPIKey(otherKey, supervaizer.ScopeWrite),
			supervaizer.WithHTTPSettings(supervaizer.HTTPSettings{MaxStreamsPerKey: 1}))
		first := open(t, hs.URL, testWriteKey, 1)
		require.Equal(t, http.StatusOK, first.StatusCode)
		second := open(t, hs.URL, testWriteKey, 2)
		assert.Equal(t, http.StatusServiceUnavailable, second.StatusCode, "the key's second stream")
		assert.NotEmpty(t, second.Header.Get("Retry-After"))
		assert.Equal(t, http.StatusOK, open(t, hs.URL, otherKey, 1).StatusCode, "another key")

		close(release) // the streams end: their slots come back
		_ = first.Body.Close()
		require.Eventually(t, func() bool {
			resp := open(t, hs.URL, testWriteKey, 3)
			_ = resp.Body.Close()
			return resp.StatusCode == http.StatusOK
		}, 5e9, 1e7, "an ended conversation stream gives its slot back")
	})
}
