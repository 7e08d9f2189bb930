package main

import (
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"net/http"
	"strings"
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
func baselineHandler(response []byte) http.Handler { return verifyingBaselineHandler(response, nil) }

// workspaceHeader carries the workspace token ("Bearer <JWS>").
const workspaceHeader = "X-Supervaize-Workspace-Authorization"

// verifyingBaselineHandler is the baseline that also checks, with
// ed25519.Verify and key, the signature of each request's workspace token
// before answering (401 when it is missing or does not verify); a nil key
// checks nothing. It parses no claims and caches nothing: what it costs above
// the baseline is one signature check under the same load, the fresh-token
// floor as the server sees it.
func verifyingBaselineHandler(response []byte, key ed25519.PublicKey) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if key != nil && !signatureVerifies(key, r.Header.Get(workspaceHeader)) {
			http.Error(w, "invalid workspace token", http.StatusUnauthorized)
			return
		}
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

// signatureVerifies reports whether header is "Bearer " and a compact JWS
// whose signature (its third segment, base64url without padding) key
// verifies over the first two segments.
func signatureVerifies(key ed25519.PublicKey, header string) bool {
	token, ok := strings.CutPrefix(header, "Bearer ")
	if !ok {
		return false
	}
	dot := strings.LastIndexByte(token, '.')
	if dot < 0 || strings.Count(token[:dot], ".") != 1 {
		return false
	}
	// A 64-byte signature is exactly 86 characters: any other length is
	// refused before decoding (Decode writes past a too-small destination).
	seg := token[dot+1:]
	if len(seg) != base64.RawURLEncoding.EncodedLen(ed25519.SignatureSize) {
		return false
	}
	var sig [ed25519.SignatureSize]byte
	n, err := base64.RawURLEncoding.Decode(sig[:], []byte(seg))
	if err != nil || n != ed25519.SignatureSize {
		return false
	}
	return ed25519.Verify(key, []byte(token[:dot]), sig[:])
}

// parseVerifyKey reads an Ed25519 public key from PEM (SubjectPublicKeyInfo),
// as the controller's SUPERVAIZER_WORKSPACE_AUTH_PUBLIC_KEY holds it.
func parseVerifyKey(pemText []byte) (ed25519.PublicKey, error) {
	block, _ := pem.Decode(pemText)
	if block == nil {
		return nil, errors.New("no PEM block in the verify key")
	}
	k, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, err
	}
	pub, ok := k.(ed25519.PublicKey)
	if !ok {
		return nil, errors.New("the verify key is not an Ed25519 public key")
	}
	return pub, nil
}
