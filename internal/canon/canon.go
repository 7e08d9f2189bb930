// Package canon hashes JSON values canonically, for the records the SDK
// compares across calls (idempotency, rule checkpoints).
package canon

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// Hash hashes input so that key order and insignificant white space do not
// matter (map keys are sorted on encoding; numbers keep their literal form).
// Empty input hashes as {}. The result is lowercase hexadecimal SHA-256.
func Hash(input json.RawMessage) (string, error) {
	if len(bytes.TrimSpace(input)) == 0 {
		input = json.RawMessage("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(input))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", err
	}
	canon, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	d := sha256.Sum256(canon)
	return hex.EncodeToString(d[:]), nil
}
