package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/supervaize/supervaizer-go/internal/wstoken"
)

// maxBody caps what check reads of one answer.
const maxBody = 8 << 20

// httpAnswer is an HTTP answer read in full.
type httpAnswer struct {
	status      int
	contentType string
	body        []byte
}

// do sends req and reads the answer.
func (c *checker) do(req *http.Request) (*httpAnswer, error) {
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return nil, err
	}
	return &httpAnswer{status: resp.StatusCode, contentType: resp.Header.Get("Content-Type"), body: body}, nil
}

// get fetches path (absolute, from the controller's root).
func (c *checker) get(path string) (*httpAnswer, error) {
	req, err := http.NewRequestWithContext(c.ctx, http.MethodGet, c.base+path, nil)
	if err != nil {
		return nil, err
	}
	return c.do(req)
}

// getJSON fetches path and decodes a 200 JSON answer into v.
func (c *checker) getJSON(path string, v any) ([]byte, error) {
	a, err := c.get(path)
	if err != nil {
		return nil, err
	}
	if a.status != http.StatusOK {
		return nil, fmt.Errorf("GET %s: HTTP %d, want 200", path, a.status)
	}
	if !isJSON(a.contentType) {
		return nil, fmt.Errorf("GET %s: Content-Type %q, want application/json", path, a.contentType)
	}
	if err := json.Unmarshal(a.body, v); err != nil {
		return nil, fmt.Errorf("GET %s: %v", path, err)
	}
	return a.body, nil
}

// isJSON reports whether a Content-Type is JSON (application/json or +json).
func isJSON(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json"))
}

// rpcError is a JSON-RPC error object.
type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// authCode returns data.code of a -32030 error, "" otherwise.
func (e *rpcError) authCode() string {
	if e == nil || e.Code != -32030 {
		return ""
	}
	var d struct {
		Code string `json:"code"`
	}
	_ = json.Unmarshal(e.Data, &d)
	return d.Code
}

func (e *rpcError) String() string {
	if code := e.authCode(); code != "" {
		return fmt.Sprintf("%d %s", e.Code, code)
	}
	return fmt.Sprintf("%d %q", e.Code, e.Message)
}

// rpcAnswer is the answer to POST /a2a.
type rpcAnswer struct {
	http    *httpAnswer
	members map[string]json.RawMessage // the JSON-RPC response's members
	result  json.RawMessage
	err     *rpcError
}

// postRaw sends body to POST /a2a with the transport key and token (each
// omitted when empty).
func (c *checker) postRaw(body []byte, apiKey, token string) (*rpcAnswer, error) {
	req, err := http.NewRequestWithContext(c.ctx, http.MethodPost, c.base+"/a2a", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if apiKey != "" {
		req.Header.Set("X-API-Key", apiKey)
	}
	if token != "" {
		req.Header.Set(headerName, "Bearer "+token)
	}
	a, err := c.do(req)
	if err != nil {
		return nil, err
	}
	out := &rpcAnswer{http: a}
	if a.status != http.StatusOK {
		return out, nil
	}
	if err := json.Unmarshal(a.body, &out.members); err != nil {
		return nil, fmt.Errorf("HTTP 200 whose body is not a JSON object: %v", err)
	}
	if e, ok := out.members["error"]; ok {
		if err := json.Unmarshal(e, &out.err); err != nil || out.err == nil {
			return nil, fmt.Errorf("an error member that is not a JSON-RPC error object: %s", e)
		}
	} else if r, ok := out.members["result"]; ok {
		out.result = r
	} else {
		return nil, fmt.Errorf("a JSON-RPC response with neither result nor error: %s", clip(a.body))
	}
	return out, nil
}

// call sends one JSON-RPC call with the -api-key and token; it fails on
// anything but HTTP 200.
func (c *checker) call(method string, params any, token string) (*rpcAnswer, error) {
	c.seq++
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": fmt.Sprintf("check-%d", c.seq), "method": method, "params": params})
	if err != nil {
		return nil, err
	}
	a, err := c.postRaw(body, c.apiKey, token)
	if err != nil {
		return nil, err
	}
	if a.http.status != http.StatusOK {
		return nil, fmt.Errorf("HTTP %d: %s", a.http.status, clip(a.http.body))
	}
	return a, nil
}

// clip shortens a body for a report line.
func clip(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// requestID returns a new request id.
func (c *checker) requestID() string {
	c.seq++
	return fmt.Sprintf("supervaizer-check-%d", c.seq)
}

// surfaceRequest is the params of a surface.load of surface on agent slug.
func (c *checker) surfaceRequest(slug, surface string) map[string]any {
	return map[string]any{"surface_request": map[string]any{
		"request_id": c.requestID(), "actor": map[string]any{"user_id": "supervaizer-check"},
		"workspace": map[string]any{"id": c.tf.workspace}, "mission_id": "supervaizer-check",
		"agent_slug": slug, "surface": surface, "input": map[string]any{},
	}}
}

// token mints a token for agent a with scopes; edit changes the claims of a
// good one. It returns "" without -key.
func (c *checker) token(a *agentInfo, scopes []string, edit func(*wstoken.Claims)) (string, error) {
	if c.key == nil {
		return "", nil
	}
	tf := c.tf
	if !c.agentIDSet && a.studioAgentID != "" {
		tf.agentID = a.studioAgentID
	}
	cl := tf.claims(a.slug, scopes, time.Now())
	if edit != nil {
		edit(&cl)
	}
	return wstoken.Sign(c.key, c.tf.kid, cl)
}

// sseEvent is one event of GET /a2a/events.
type sseEvent struct {
	id, name string
	data     json.RawMessage
	at       time.Time
}

// eventStream is the stream check opened first, read in the background.
type eventStream struct {
	err    error // the stream could not be opened, or answered badly
	events chan sseEvent
}

// openEvents opens GET /a2a/events with the -api-key and reads it until the
// check ends.
func (c *checker) openEvents() *eventStream {
	s := &eventStream{events: make(chan sseEvent, 256)}
	if c.apiKey == "" {
		s.err = errNoAPIKey
		return s
	}
	req, err := http.NewRequestWithContext(c.ctx, http.MethodGet, c.base+"/a2a/events", nil)
	if err != nil {
		s.err = err
		return s
	}
	req.Header.Set("X-API-Key", c.apiKey)
	req.Header.Set("Accept", "text/event-stream")
	hc := *c.hc
	hc.Timeout = 0 // a stream; the check's context ends it
	resp, err := hc.Do(req)
	if err != nil {
		s.err = err
		return s
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); resp.StatusCode != http.StatusOK || mt != "text/event-stream" {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		_ = resp.Body.Close()
		s.err = fmt.Errorf("HTTP %d, Content-Type %q, want 200 text/event-stream: %s", resp.StatusCode, resp.Header.Get("Content-Type"), clip(body))
		return s
	}
	go func() {
		defer func() { _ = resp.Body.Close() }()
		defer close(s.events)
		readEvents(resp.Body, func(e sseEvent) bool {
			select {
			case s.events <- e:
				return true
			case <-c.ctx.Done():
				return false
			}
		})
	}()
	return s
}

// readEvents parses a text/event-stream (LF or CRLF line ends, comment
// lines ignored) and calls emit for each event until it returns false or the
// stream ends.
func readEvents(r io.Reader, emit func(sseEvent) bool) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxBody)
	var e sseEvent
	var data []string
	for sc.Scan() {
		line := strings.TrimSuffix(sc.Text(), "\r")
		if line == "" {
			if e.name != "" || len(data) > 0 {
				if e.name == "" {
					e.name = "message"
				}
				e.data, e.at = json.RawMessage(strings.Join(data, "\n")), time.Now()
				if !emit(e) {
					return
				}
			}
			e, data = sseEvent{}, nil
			continue
		}
		if strings.HasPrefix(line, ":") {
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "id":
			e.id = value
		case "event":
			e.name = value
		case "data":
			data = append(data, value)
		}
	}
}
