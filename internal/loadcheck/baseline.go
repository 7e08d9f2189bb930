package main

import (
	"encoding/json"
	"io"
	"net/http"
)

// baselineRequest is the JSON-RPC call the baseline decodes: the same body
// the controller receives, into plain structs.
type baselineRequest struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  struct {
		RequestID string `json:"request_id"`
		Actor     struct {
			UserID string `json:"user_id"`
		} `json:"actor"`
		Workspace struct {
			ID   string `json:"id"`
			Slug string `json:"slug"`
		} `json:"workspace"`
		MissionID string          `json:"mission_id"`
		AgentSlug string          `json:"agent_slug"`
		Surface   string          `json:"surface"`
		Action    string          `json:"action"`
		JobID     string          `json:"job_id"`
		Input     json.RawMessage `json:"input"`
		Mission   *struct {
			ID       string          `json:"id"`
			Name     string          `json:"name"`
			Metadata json.RawMessage `json:"metadata"`
		} `json:"mission"`
	} `json:"params"`
}

// baselineHandler is the floor the controller is compared with: bare
// net/http that reads the body (bounded), decodes it with encoding/json and
// writes a fixed response (the controller's own answer to the same call, so
// both send the same bytes).
func baselineHandler(response []byte) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 4<<20))
		if err != nil {
			http.Error(w, "cannot read the body", http.StatusBadRequest)
			return
		}
		var req baselineRequest
		if err := json.Unmarshal(body, &req); err != nil || req.Method != "supervaizer/action.invoke" {
			http.Error(w, "invalid request", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(response)
	})
}
