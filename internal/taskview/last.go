package taskview

import (
	"hash/maphash"
	"sync"
)

// The view skips a job's record when a result repeats it: it remembers, per
// record key, a digest of the record this process's last result for the job
// made (written, or found stored already). A job.sync poll answering the
// state it answered before then costs no store round trip for the view
// (issue 40 item 2); the record is read and compared, and written when it
// differs, only when the result differs from this process's last one. The
// first result for a job in a process (a job.start) creates the record
// without reading it first (put-if-absent, which returns the stored record
// when there is one): a start costs the view one store call.
//
// What another writer did in between (another instance on a shared store,
// or another Server on the same store) is kept: a result that repeats this
// process's last one does not overwrite a newer record written since by
// another, so an instance whose agent lags behind never takes the view back
// to a state it reported before (TestA2ATaskViewAcrossInstances). A record
// this process changes otherwise (an effect's status) forgets the digest, so
// the next result is compared with the stored record again.

// maxLastRecords bounds the digests kept (32 bytes and a key each); past it
// an arbitrary one is forgotten, which costs that job one read.
const maxLastRecords = 1 << 14

// recordDigest is a 128-bit digest of a record's status, text and state:
// two independently seeded 64-bit hashes.
type recordDigest [2]uint64

var digestSeeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}

func digestRecord(status, text, state []byte) recordDigest {
	var d recordDigest
	for i, seed := range digestSeeds {
		var h maphash.Hash
		h.SetSeed(seed)
		_, _ = h.Write(status)
		_ = h.WriteByte(0)
		_, _ = h.Write(text)
		_ = h.WriteByte(0)
		_, _ = h.Write(state)
		d[i] = h.Sum64()
	}
	if d == (recordDigest{}) {
		d[1] = 1 // the zero digest marks a record whose digest is forgotten
	}
	return d
}

// lastRecords holds the digests.
type lastRecords struct {
	mu sync.Mutex
	m  map[string]recordDigest
}

// same reports whether d is the digest remembered for key.
func (l *lastRecords) same(key []byte, d recordDigest) bool {
	l.mu.Lock()
	got, ok := l.m[string(key)]
	l.mu.Unlock()
	return ok && got == d
}

// known reports whether this process knows key's record (its digest, or
// that it exists).
func (l *lastRecords) known(key []byte) bool {
	l.mu.Lock()
	_, ok := l.m[string(key)]
	l.mu.Unlock()
	return ok
}

// remember records d for key.
func (l *lastRecords) remember(key string, d recordDigest) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[string]recordDigest{}
	}
	if _, ok := l.m[key]; !ok && len(l.m) >= maxLastRecords {
		for k := range l.m {
			delete(l.m, k)
			break
		}
	}
	l.m[key] = d
}

// forget drops key's digest, keeping that the record exists: the next
// result for the job is compared with the stored record (same never holds
// for the zero digest, which digestRecord never returns).
func (l *lastRecords) forget(key string) {
	l.mu.Lock()
	if _, ok := l.m[key]; ok {
		l.m[key] = recordDigest{}
	}
	l.mu.Unlock()
}
