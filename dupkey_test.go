package supervaizer_test

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	sv "github.com/supervaize/supervaizer-go"
)

// TestDuplicateParamsKeyRefused: a request naming its action twice is refused
// before any authorization decision, so the bootstrap exemption cannot be
// smuggled past a proxy that reads the first occurrence.
func TestDuplicateParamsKeyRefused(t *testing.T) {
	a, err := sv.NewAgent(sv.AgentSpec{Name: "Research Agent", Version: "1", Registration: mustRegistration(t, researchAgentSpec())})
	assert.NoError(t, err)
	srv := newLocalServer(t, a)
	body := `{"jsonrpc":"2.0","id":1,"method":"supervaizer/action.invoke","params":{"request_id":"r","actor":{"user_id":"u"},` +
		`"workspace":{"id":"w"},"mission_id":"m","agent_slug":"research-agent","surface":"job.start",` +
		`"action":"job.sync","action":"workspace_binding.options"}}`
	r := httptest.NewRequest("POST", "http://localhost/a2a", strings.NewReader(body))
	r.Header.Set("x-api-key", sv.LocalModeAPIKey) // header names are case-insensitive
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, r)
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Invalid Supervaizer v2 action request",
		"data":{"errors":[{"loc":["action"],"msg":"the key appears twice in the same object","type":"duplicate_key","path":"/action"}]}}}`, w.Body.String())
}
