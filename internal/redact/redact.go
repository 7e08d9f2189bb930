package supervaizer

import (
	"fmt"
	"log/slog"
)

// secret is a key or token held by the SDK. The value lives in a closure, so
// nothing that formats a struct holding it can reach it (fmt prints a func as an
// address, even through unexported fields and bad verbs); formatting the secret
// itself, with fmt, slog or JSON, gives "[REDACTED]". Code that needs the value
// calls value().
type secret struct{ get func() string }

func newSecret(s string) secret { return secret{get: func() string { return s }} }

// value returns the secret ("" for the zero secret).
func (s secret) value() string {
	if s.get == nil {
		return ""
	}
	return s.get()
}

const redactedText = "[REDACTED]"

func (secret) String() string                { return redactedText }
func (secret) GoString() string              { return redactedText }
func (secret) LogValue() slog.Value          { return slog.StringValue(redactedText) }
func (secret) MarshalText() ([]byte, error)  { return []byte(redactedText), nil }
func (secret) Format(f fmt.State, verb rune) { _, _ = f.Write([]byte(redactedText)) }
