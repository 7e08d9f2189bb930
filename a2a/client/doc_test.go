package client_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/a2a/client"
	"github.com/supervaize/supervaizer-go/a2atask"
)

// TestPackageDocDelegate runs the package comment's delegation as written
// against the example remote (on loopback, hence AllowLoopback between the
// comment's lines): the send answers a task.
func TestPackageDocDelegate(t *testing.T) {
	remote := exampleRemote()
	t.Cleanup(remote.Close)
	ctx, base, key, requestID := t.Context(), remote.URL, "k-1", "brief-ev-batteries-1"
	parts := []a2atask.Part{{Kind: "data", Data: json.RawMessage(`{"action":"job.start","input":{"topic_id":"ev-batteries"}}`)}}
	var got *client.Answer
	delegate := func() error {
		c, err := client.New(ctx, base, // such as https://research.example.com
			client.AllowLoopback(), // the example remote listens on 127.0.0.1
			client.WithHeader("X-API-Key", key))
		if err != nil {
			return err // no card, an invalid card, a refused address, ...
		}
		ans, err := c.Send(ctx, client.SendRequest{RequestID: requestID, Parts: parts})
		var amb *client.AmbiguousError
		if errors.As(err, &amb) {
			return err // unknown outcome: read back (GetTask), never resend blindly
		}
		got = ans
		return err
	}
	require.NoError(t, delegate())
	require.NotNil(t, got.Task, "the remote answers a task")
	require.NotEmpty(t, got.Task.ID)
}
