package client

import (
	"encoding/json"
	"testing"
)

// FuzzDecodeCard: any document is a card or an ErrInvalidCard, never a
// panic; a card has a non-blank name and skills.
func FuzzDecodeCard(f *testing.F) {
	for _, s := range []string{
		`{"name":"Remote","skills":[],"url":"https://a.example/a2a","protocolVersion":"0.3.0"}`,
		`{"name":"Remote","skills":[{"id":"s","name":"S","description":"d","tags":["t"]}],"supportedInterfaces":[{"url":"https://a.example/a2a","protocolBinding":"JSONRPC","protocolVersion":"1.0"}],"capabilities":{"extensions":[{"uri":"urn:x","params":{"a":1}}]}}`,
		`{"name":"","skills":[]}`, `{"skills":null}`, `[]`, `{`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := DecodeCard(data)
		if err != nil {
			return
		}
		if c.Name == "" || c.Skills == nil {
			t.Fatalf("accepted a card without a name or skills: %q", data)
		}
		_, _, _ = c.chooseBinding("")
	})
}

// FuzzDecodeResponse: any answer is a result, an *Error or an
// ErrInvalidAnswer; a result is only accepted with the request's id.
func FuzzDecodeResponse(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{"task":{"id":"t","status":{"state":"TASK_STATE_WORKING"}}}}`,
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"x"}}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32700}}`,
		`{"jsonrpc":"2.0","id":2,"result":null}`, `{"jsonrpc":"2.0","id":1,"error":{"code":1.5}}`, `null`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		res, err := decodeResponse(data, 1)
		if err == nil && !json.Valid(res) {
			t.Fatalf("accepted an invalid result: %q", data)
		}
	})
}

// FuzzDecodeSendResult: any result of either binding is an answer with
// exactly one of a task (with a bounded id) and a message, or an error.
func FuzzDecodeSendResult(f *testing.F) {
	for _, s := range []string{
		`{"task":{"id":"t","contextId":"c","status":{"state":"TASK_STATE_COMPLETED"},"artifacts":[{"artifactId":"a","parts":[{"url":"https://x/f"},{"data":{}},{"text":"t"},{"raw":"AA=="}]}]}}`,
		`{"message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"hi"}]}}`,
		`{"kind":"task","id":"t","status":{"state":"working"},"artifacts":[{"artifactId":"a","parts":[{"kind":"file","file":{"uri":"https://x/f"}}]}]}`,
		`{"kind":"message","role":"agent","messageId":"m","parts":[{"kind":"data","data":{"a":1}}]}`,
		`{"task":{},"message":{}}`, `{}`,
	} {
		f.Add([]byte(s), true)
		f.Add([]byte(s), false)
	}
	f.Fuzz(func(t *testing.T, data []byte, v10 bool) {
		b := Binding03
		if v10 {
			b = Binding10
		}
		ans, err := decodeSendResult(data, b, 4)
		if err != nil {
			return
		}
		if (ans.Task == nil) == (ans.Message == nil) {
			t.Fatalf("not exactly one of task and message: %q", data)
		}
		if ans.Task != nil {
			if checkID("id", ans.Task.ID) != nil || len(ans.Task.Artifacts) > 4 || ans.Task.History != nil {
				t.Fatalf("accepted an unchecked task: %q", data)
			}
			if !knownStates[ans.Task.Status.State] {
				t.Fatalf("state %q passed on: %q", ans.Task.Status.State, data)
			}
		}
	})
}

// FuzzDecodeControlAnswers: a lease answer is a checked lease (or null
// where allowed) or an ErrInvalidAnswer; a request status names the
// request asked about and a known state.
func FuzzDecodeControlAnswers(f *testing.F) {
	for _, s := range []string{
		`{"lease":{"controller_id":"sup-a","epoch":2,"expires_at":1000060}}`, `{"lease":null}`,
		`{"lease":{"controller_id":"","epoch":-1,"expires_at":0}}`, `{"lease":{"epoch":1.5}}`,
		`{"request_id":"req-1","state":"applied","task_id":"t"}`, `{"request_id":"req-1","state":"unknown"}`,
		`{"request_id":"req-2","state":"applied"}`, `[]`,
	} {
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, data []byte, nullable bool) {
		if l, err := decodeLease(data, nullable); err == nil {
			if l == nil && !nullable {
				t.Fatalf("a null lease accepted: %q", data)
			}
			if l != nil && (checkID("c", l.ControllerID) != nil || l.Epoch < 0 || l.ExpiresAt <= 0) {
				t.Fatalf("an unchecked lease: %q", data)
			}
		}
		if st, err := decodeRequestStatus(data, "req-1"); err == nil {
			switch st.State {
			case RequestApplied, RequestNotApplied, RequestPending, RequestUnknown:
			default:
				t.Fatalf("state %q accepted", st.State)
			}
			if st.RequestID != "req-1" {
				t.Fatalf("another request's status accepted: %q", data)
			}
		}
	})
}
