// Package redact holds what keeps secrets out of logs, errors and headers: a
// secret value that never formats, the fingerprint logged in place of a key,
// and the checks and cuts applied to text that travels in headers or logs.
package redact

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strings"
)

// Text replaces a secret wherever it would be shown.
const Text = "[REDACTED]"

// Secret is a key or token held by the SDK. The value lives in a closure, so
// nothing that formats a struct holding it can reach it (fmt prints a func as an
// address, even through unexported fields and bad verbs); formatting the secret
// itself, with fmt, slog or JSON, gives "[REDACTED]". Code that needs the value
// calls Value.
type Secret struct{ get func() string }

// New holds s as a Secret.
func New(s string) Secret { return Secret{get: func() string { return s }} }

// Value returns the secret ("" for the zero Secret).
func (s Secret) Value() string {
	if s.get == nil {
		return ""
	}
	return s.get()
}

// IsZero reports whether s holds no value at all (not even "").
func (s Secret) IsZero() bool { return s.get == nil }

func (Secret) String() string                { return Text }
func (Secret) GoString() string              { return Text }
func (Secret) LogValue() slog.Value          { return slog.StringValue(Text) }
func (Secret) MarshalText() ([]byte, error)  { return []byte(Text), nil }
func (Secret) Format(f fmt.State, verb rune) { _, _ = f.Write([]byte(Text)) }

// Fingerprint is what the SDK logs in place of a key: the first 12
// hexadecimal characters of its SHA-256 digest.
func Fingerprint(key string) string {
	d := sha256.Sum256([]byte(key))
	return hex.EncodeToString(d[:6])
}

// HeaderSafe reports whether s is printable ASCII (spaces allowed), so that it
// can travel in a header value unchanged.
func HeaderSafe(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e {
			return false
		}
	}
	return true
}

// Mask replaces every non-empty secret in s with [Text].
func Mask(s string, secrets ...string) string {
	for _, k := range secrets {
		if k != "" {
			s = strings.ReplaceAll(s, k, Text)
		}
	}
	return s
}

// Truncate cuts s to at most n runes, marking a cut with "…".
func Truncate(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[:i] + "…"
		}
		n--
	}
	return s
}
