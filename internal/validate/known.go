package validate

import (
	"hash/maphash"
	"sync"

	"github.com/supervaize/supervaizer-go/contracts"
)

// knownValid remembers documents the compiled schema judged valid, by a
// 128-bit digest of their model and bytes, so that a handler answering the
// same bytes again (a job.sync poll that finds nothing new) is not walked
// again: a schema's verdict is a function of the bytes alone. It is a
// direct-mapped table: a document whose slot another took is judged again.
// Only the schema's verdict is remembered; the Go rules, which read the typed
// value, run on every result.
type knownValid struct {
	mu    sync.Mutex
	slots [knownSlots][2]uint64
}

const knownSlots = 1024

var knownSeeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}

func knownDigest(m contracts.Model, raw []byte) [2]uint64 {
	var d [2]uint64
	for i, seed := range knownSeeds {
		var h maphash.Hash
		h.SetSeed(seed)
		_, _ = h.WriteString(string(m))
		_ = h.WriteByte(0)
		_, _ = h.Write(raw)
		d[i] = h.Sum64()
	}
	if d == [2]uint64{} {
		d[1] = 1 // the zero digest marks an empty slot
	}
	return d
}

// has reports whether d is remembered.
func (k *knownValid) has(d [2]uint64) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.slots[d[0]%knownSlots] == d
}

// add remembers d.
func (k *knownValid) add(d [2]uint64) {
	k.mu.Lock()
	k.slots[d[0]%knownSlots] = d
	k.mu.Unlock()
}
