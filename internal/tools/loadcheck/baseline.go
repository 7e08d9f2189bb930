package main

import (
	"encoding/json"
	"io"
	"net/http"
)

// baselineAction is the action request the baseline decodes, into plain
// structs.
type baselineAction struct {
	RequestID string `json:"request_id"`
	Actor     struct {
		UserID string `json:"user_id"`
	} `json:"actor"`
	Workspace struct {
		ID   string `json:"id"`
		Slug string `json:"slug"`
	} `json:"workspace"`
	MissionID      string          `json:"mission_id"`
	AgentSlug      string          `json:"agent_slug"`
	Surface        string          `json:"surface"`
	Action         string          `json:"action"`
	JobID          string          `json:"job_id"`
	IdempotencyKey string          `json:"idempotency_key"`
	Input          json.RawMessage `json:"input"`
	Mission        *struct {
		ID       string          `json:"id"`
		Name     string          `json:"name"`
		Metadata json.RawMessage `json:"metadata"`
	} `json:"mission"`
}

// baselineRequest is the JSON-RPC call the baseline decodes: the same body
// the controller receives, with the action request flat in params or wrapped
// in params.action_request.
type baselineRequest struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  struct {
		ActionRequest *baselineAction `json:"action_request"`
		baselineAction
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
		action := &req.Params.baselineAction
		if req.Params.ActionRequest != nil {
			action = req.Params.ActionRequest
		}
		if action.Action == "" || action.AgentSlug == "" {
			http.Error(w, "invalid request", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(response)
	})
}
