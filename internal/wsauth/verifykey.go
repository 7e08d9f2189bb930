package wsauth

import (
	"crypto/ed25519"

	voi "github.com/oasisprotocol/curve25519-voi/primitives/ed25519"
)

// stdlibOptions makes curve25519-voi verify exactly as crypto/ed25519 does:
// cofactorless equation, S < L required, small-order and non-canonical A
// accepted, R compared by its encoding.
var stdlibOptions = &voi.Options{Verify: voi.VerifyOptionsStdLib}

// verifyKey is a trusted Ed25519 public key with its curve25519-voi
// expansion, computed once when the key enters a key set so that a
// signature check does not decompress the key again.
type verifyKey struct {
	raw ed25519.PublicKey
	// expanded is nil when raw does not decode to a curve point: such a key
	// verifies no signature, as with crypto/ed25519.
	expanded *voi.ExpandedPublicKey
}

// newVerifyKey expands raw; raw must not be modified afterwards.
func newVerifyKey(raw ed25519.PublicKey) *verifyKey {
	k := &verifyKey{raw: raw}
	if len(raw) == ed25519.PublicKeySize {
		if x, err := voi.NewExpandedPublicKey(voi.PublicKey(raw)); err == nil {
			k.expanded = x
		}
	}
	return k
}

// equal reports whether k and o hold the same public key.
func (k *verifyKey) equal(o *verifyKey) bool { return k.raw.Equal(o.raw) }

// verify is step 8: the Ed25519 signature sig of msg, with the outcome
// crypto/ed25519.Verify would give and the codes the golang-jwt EdDSA
// method mapped to before: a key that is not 32 bytes is invalid_key, any
// other failure (a key that is not a curve point included) bad_signature.
func (k *verifyKey) verify(msg string, sig []byte) *Error {
	if len(k.raw) != ed25519.PublicKeySize {
		return fail(CodeInvalidKey)
	}
	if k.expanded == nil || !voi.VerifyExpandedWithOptions(k.expanded, []byte(msg), sig, stdlibOptions) {
		return fail(CodeBadSignature)
	}
	return nil
}
