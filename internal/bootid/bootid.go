// Package bootid names one boot of a controller process: the idempotency
// layer and the rule-checkpoint runtime tell this process's records from
// those of an earlier boot of the same instance by it.
package bootid

import (
	"crypto/rand"
	"encoding/hex"
)

// New returns a random identifier of this process's boot: 24 hex digits.
func New() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
