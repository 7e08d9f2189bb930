// Package wsauth verifies the workspace authorization tokens that Supervaize
// Studio sends on every Studio-to-agent call.
//
// Studio proves that a workspace admin accepted an agent with a short-lived
// Ed25519-signed JWT carried in the X-Supervaize-Workspace-Authorization
// header. A [Verifier] checks that token in the normative order of the spec,
// fails closed with one of the spec's error codes ([Code]) and, on
// success, returns the verified [Context] that handlers must use instead of
// any caller-supplied workspace data.
//
// The token is parsed, its Ed25519 signature checked and its registered
// claims validated by github.com/golang-jwt/jwt/v5's parser; this package
// adds what the protocol asks beyond it (base64url alphabet, UTF-8 JSON
// objects, crit, strict claim types, key sources, the codes and their
// order).
//
// # Keys
//
// The public key comes either from a PEM (SubjectPublicKeyInfo, Ed25519 only)
// or from a JWKS endpoint. The keys trusted for a JWKS URL are exactly those
// of its last successful fetch, for at most a maximum age (see
// [WithJWKSKeyMaxAge]): an unknown kid or an aged set triggers a refetch,
// which is how key rotation is picked up, and a kid Studio removed stops
// verifying at the next fetch. Refetches are coalesced and rate limited (see
// [WithJWKSRefetchInterval]) so that forged kids cannot turn every request
// into a fetch.
//
// # Caching
//
// A successful signature and the token-intrinsic claim checks are cached per
// token (keyed by the token's SHA-256), from the token's second
// verification on: the first only records a 64-bit tag of its key, so a
// token used once (a caller minting one per call) takes no entry and evicts
// none. Every time-dependent and per-request check still runs on a cache
// hit, and a hit counts only while the JWKS key that verified the token is
// still trusted; the cache can only save work, never turn a failure into a
// success.
//
// The package never logs a token or puts it in an error; logs carry at most a
// short SHA-256 fingerprint.
package wsauth
