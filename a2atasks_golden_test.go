package supervaizer_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	supervaizer "github.com/supervaize/supervaizer-go"
	svtest "github.com/supervaize/supervaizer-go/testing"
)

// a2aGoldenStep is one call of the A2A golden sequences: the request body
// is testdata/a2a/<name>.request.json, the answer
// testdata/a2a/<name>.response.json (for a stream, the JSON array of its
// events' data).
type a2aGoldenStep struct {
	name    string
	version string // the A2A-Version header; "" sends none
	stream  bool
	code    int // the JSON-RPC error code expected; 0: a result
}

// a2aGoldenSequences are run in order, each against a fresh task agent in
// local mode: later steps read the tasks earlier ones started.
var a2aGoldenSequences = map[string][]a2aGoldenStep{
	"v03": {
		{name: "v03_send_start"},
		{name: "v03_send_start_replayed"},
		{name: "v03_get"},
		{name: "v03_cancel"},
		{name: "v03_cancel_terminal", code: -32002},
		{name: "v03_get_unknown", code: -32001},
		{name: "v03_send_help"},
		{name: "v03_send_note_fail"},
		{name: "v03_send_start_rejected"},
		{name: "v03_send_text_part", code: -32602},
		{name: "v03_push_config", code: -32003},
		{name: "v03_unknown_method", code: -32601},
		{name: "v03_stream_awaiting", stream: true},
		{name: "v03_resubscribe_terminal", stream: true},
	},
	"v10": {
		{name: "v10_send_start", version: "1.0"},
		{name: "v10_send_start_replayed", version: "1.0"},
		{name: "v10_get", version: "1.0"},
		{name: "v10_cancel", version: "1.0"},
		{name: "v10_cancel_terminal", version: "1.0", code: -32002},
		{name: "v10_get_unknown", version: "1.0", code: -32001},
		{name: "v10_send_help", version: "1.0"},
		{name: "v10_send_note_fail", version: "1.0"},
		{name: "v10_send_start_rejected", version: "1.0"},
		{name: "v10_send_text_part", version: "1.0", code: -32602},
		{name: "v10_send_media_type", version: "1.0", code: -32005},
		{name: "v10_push_config", version: "1.0", code: -32003},
		{name: "v10_list_tasks", version: "1.0", code: -32004},
		{name: "v10_extended_card", version: "1.0", code: -32004},
		{name: "v10_unknown_method", version: "1.0", code: -32601},
		{name: "v10_version_not_supported", version: "2.1", code: -32009},
		{name: "v10_stream_awaiting", version: "1.0", stream: true},
		{name: "v10_subscribe_terminal", version: "1.0", stream: true, code: -32004},
		{name: "v10_subscribe_awaiting", version: "1.0", stream: true},
		{name: "v10_stream_help", stream: true},
	},
}

// TestA2AGolden runs the golden sequences. The answers must equal the
// golden files byte for byte once compacted: the 0.3 binding does not move.
func TestA2AGolden(t *testing.T) {
	for seq, steps := range a2aGoldenSequences {
		t.Run(seq, func(t *testing.T) {
			srv, _ := newTaskServer(t, supervaizer.WithLocalMode(true))
			for _, st := range steps {
				t.Run(st.name, func(t *testing.T) {
					body, err := os.ReadFile(filepath.Join("testdata", "a2a", st.name+".request.json"))
					require.NoError(t, err)
					got := serveGoldenA2A(t, srv, body, st)
					path := filepath.Join("testdata", "a2a", st.name+".response.json")
					if !svtest.Golden(t, path, got) {
						return
					}
					want, err := os.ReadFile(path)
					require.NoError(t, err)
					var compact bytes.Buffer
					require.NoError(t, json.Compact(&compact, want))
					assert.Equal(t, compact.String(), string(got), "byte for byte")
					checkGoldenCode(t, got, st)
				})
			}
		})
	}
}

// TestA2AGoldenFilesMatchSequences: every file of testdata/a2a belongs to a
// step, and every step has its two files.
func TestA2AGoldenFilesMatchSequences(t *testing.T) {
	onDisk := goldenPairs(t, filepath.Join("testdata", "a2a"))
	steps := map[string]bool{}
	for _, seq := range a2aGoldenSequences {
		for _, st := range seq {
			steps[st.name] = true
			assert.Equal(t, 2, onDisk[st.name], "%s needs a request and a response file", st.name)
		}
	}
	for name := range onDisk {
		assert.True(t, steps[name], "testdata/a2a/%s.* belongs to no step", name)
	}
}

// serveGoldenA2A posts body and returns the answer, or for a stream the JSON
// array of its events' data.
func serveGoldenA2A(t *testing.T, srv http.Handler, body []byte, st a2aGoldenStep) []byte {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, "http://localhost/a2a", bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set(supervaizer.HeaderAPIKey, testWriteKey)
	if st.version != "" {
		r.Header.Set("A2A-Version", st.version)
	}
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, r) // a stream ends at its final event
	require.Equal(t, http.StatusOK, w.Code, "body: %s", w.Body)
	if !st.stream {
		require.Equal(t, "application/json", w.Header().Get("Content-Type"))
		return w.Body.Bytes()
	}
	require.Equal(t, "text/event-stream", w.Header().Get("Content-Type"))
	events := []byte{'['}
	sc := bufio.NewScanner(w.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			if len(events) > 1 {
				events = append(events, ',')
			}
			events = append(events, data...)
		}
	}
	return append(events, ']')
}

// checkGoldenCode checks that the answer (each event of a stream) is a
// result, or the step's error.
func checkGoldenCode(t *testing.T, got []byte, st a2aGoldenStep) {
	t.Helper()
	answers := []json.RawMessage{got}
	if st.stream {
		answers = nil
		require.NoError(t, json.Unmarshal(got, &answers))
		require.NotEmpty(t, answers)
	}
	for i, a := range answers {
		var resp rpcResponse
		require.NoError(t, json.Unmarshal(a, &resp))
		assert.Equal(t, "2.0", resp.JSONRPC)
		if st.code == 0 || i < len(answers)-1 {
			assert.Nil(t, resp.Error, "answer: %s", a)
			assert.NotEmpty(t, resp.Result)
			continue
		}
		require.NotNil(t, resp.Error, "answer: %s", a)
		assert.Equal(t, st.code, resp.Error.Code)
	}
}
