package wsauth

import "sync"

// DefaultCacheSize is the default number of verified tokens kept; see
// [WithCacheSize].
const DefaultCacheSize = 4096

// evictionSample is how many entries an insertion into a full cache looks at
// to pick a victim (the one expiring first).
const evictionSample = 8

// tokenCache maps the SHA-256 of a token to its verified claims. An entry
// exists only for a token whose signature, alg, claim types, issuer,
// audience and server id were verified; it never records a failure.
type tokenCache struct {
	mu  sync.RWMutex
	max int
	gen uint64 // bumped by clear; stale insertions are dropped
	m   map[[32]byte]cachedToken
}

type cachedToken struct {
	claims  *tokenClaims
	keyGen  uint64 // generation of the JWKS key set that verified it; 0 for a PEM key
	expires int64  // exp + leeway, Unix seconds (saturating)
}

func newTokenCache(size int) *tokenCache {
	if size <= 0 {
		return nil
	}
	return &tokenCache{max: size, m: make(map[[32]byte]cachedToken, min(size, 256))}
}

// get returns the claims cached for key and the generation of the key set
// that verified them. A nil cache always misses.
func (c *tokenCache) get(key [32]byte) (*tokenClaims, uint64, bool) {
	if c == nil {
		return nil, 0, false
	}
	c.mu.RLock()
	e, ok := c.m[key]
	c.mu.RUnlock()
	return e.claims, e.keyGen, ok
}

// generation returns the current generation, to pass to put.
func (c *tokenCache) generation() uint64 {
	if c == nil {
		return 0
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.gen
}

// put caches cl, verified with the key set of generation keyGen, under key
// unless the cache was cleared since gen was read.
// A full cache first evicts the entry expiring first among a few sampled
// ones (map iteration order is randomized), so expired entries go first.
func (c *tokenCache) put(key [32]byte, cl *tokenClaims, keyGen uint64, expires int64, gen uint64) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return
	}
	if _, ok := c.m[key]; !ok && len(c.m) >= c.max {
		var victim [32]byte
		first, n := true, 0
		var soonest int64
		for k, e := range c.m {
			if first || e.expires < soonest {
				victim, soonest, first = k, e.expires, false
			}
			if n++; n == evictionSample {
				break
			}
		}
		delete(c.m, victim)
	}
	c.m[key] = cachedToken{claims: cl, keyGen: keyGen, expires: expires}
}

// clear drops every entry and invalidates in-flight insertions.
func (c *tokenCache) clear() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	clear(c.m)
}

// len returns the number of entries.
func (c *tokenCache) len() int {
	if c == nil {
		return 0
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.m)
}
