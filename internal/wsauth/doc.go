// Package wsauth verifies the workspace authorization tokens that Supervaize
// Studio sends on every Studio-to-agent call (spec: authorization.md).
//
// Studio proves that a workspace admin accepted an agent with a short-lived
// Ed25519-signed JWT carried in the X-Supervaize-Workspace-Authorization
// header. A [Verifier] checks that token in the normative order of the spec
// (§8), fails closed with one of the spec's error codes ([Code]) and, on
// success, returns the verified [Context] that handlers must use instead of
// any caller-supplied workspace data.
//
// # Keys
//
// The public key comes either from a PEM (SubjectPublicKeyInfo, Ed25519 only)
// or from a JWKS endpoint. JWKS keys are cached by (URL, kid) in a small LRU;
// an unknown kid triggers a refetch, which is how key rotation is picked up.
// Refetches are coalesced and rate limited (see [WithJWKSRefetchInterval]) so
// that forged kids cannot turn every request into a fetch.
//
// # Caching
//
// A successful signature and the token-intrinsic claim checks are cached per
// token (keyed by the token's SHA-256). Every time-dependent and per-request
// check still runs on a cache hit; the cache can only save work, never turn a
// failure into a success.
//
// The package never logs a token or puts it in an error; logs carry at most a
// short SHA-256 fingerprint.
package wsauth
