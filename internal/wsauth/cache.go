package wsauth

import (
	"encoding/binary"
	"math/bits"
	"sync"
)

// DefaultCacheSize is the default number of verified tokens kept; see
// [WithCacheSize].
const DefaultCacheSize = 4096

// maxSeenSlots bounds the admission table of a large cache (512 KiB).
const maxSeenSlots = 1 << 16

// evictionSample is how many entries an insertion into a full cache looks at
// to pick a victim (the one expiring first).
const evictionSample = 8

// tokenCache maps the SHA-256 of a token to its verified claims. An entry
// exists only for a token whose signature, alg, claim types, issuer,
// audience and server id were verified; it never records a failure.
//
// A token enters the cache on its second verification, not its first: the
// first only records a 64-bit tag of its key in seen, a direct-mapped table
// of twice the cache's size (a "doorkeeper"). A token reused for its
// lifetime (5 to 15 minutes, as the spec recommends) costs one signature
// check more than with admission on first sight; a token used once (a
// caller minting one per call) never takes an entry, never evicts a reused
// token, and leaves nothing on the heap (an entry holds about 1 KB). A tag overwritten
// by another token's before the second verification only delays the
// admission; a tag that matches another token's (two keys equal in 64 bits
// at the same slot) only admits a token that was itself fully verified.
type tokenCache struct {
	mu   sync.RWMutex
	max  int
	gen  uint64 // bumped by clear; stale insertions are dropped
	m    map[[32]byte]cachedToken
	seen []uint64 // tags of keys verified once and not cached (0: none); a power of two long
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
	slots := min(1<<bits.Len(uint(2*size-1)), maxSeenSlots) // the power of two ≥ 2 × size
	return &tokenCache{max: size, m: make(map[[32]byte]cachedToken, min(size, 256)), seen: make([]uint64, slots)}
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
// when key was verified before (admit) and the cache was not cleared since
// gen was read. A full cache first evicts the entry expiring first among a
// few sampled ones (map iteration order is randomized), so expired entries
// go first.
func (c *tokenCache) put(key [32]byte, cl *tokenClaims, keyGen uint64, expires int64, gen uint64) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return
	}
	_, ok := c.m[key]
	if !ok && !c.admit(key) {
		return
	}
	if !ok && len(c.m) >= c.max {
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

// admit reports whether key's tag is in seen (its token was verified
// before), and takes it out; otherwise it records the tag, overwriting the
// slot's. c.mu must be held for writing.
func (c *tokenCache) admit(key [32]byte) bool {
	slot := binary.LittleEndian.Uint64(key[8:16]) & uint64(len(c.seen)-1)
	tag := binary.LittleEndian.Uint64(key[:8]) | 1 // never 0, the empty slot
	if c.seen[slot] == tag {
		c.seen[slot] = 0
		return true
	}
	c.seen[slot] = tag
	return false
}

// clear drops every entry and every recorded tag, and invalidates
// in-flight insertions.
func (c *tokenCache) clear() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	clear(c.m)
	clear(c.seen)
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
