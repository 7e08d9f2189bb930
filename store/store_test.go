package store_test

import (
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/store"
	"github.com/supervaize/supervaizer-go/store/storetest"
)

// openBolt opens a durable store in a fresh temporary directory and closes it
// when the test ends.
func openBolt(t testing.TB) *store.Bolt {
	t.Helper()
	s, err := store.Open(filepath.Join(t.TempDir(), "store.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// implementations lists the stores of this package for the tests that check
// guarantees beyond the Store contract.
var implementations = []struct {
	name string
	open func(t testing.TB) store.Store
}{
	{"memory", func(testing.TB) store.Store { return store.NewMemory() }},
	{"bolt", func(t testing.TB) store.Store { return openBolt(t) }},
}

func TestConformance(t *testing.T) {
	for _, impl := range implementations {
		t.Run(impl.name, func(t *testing.T) {
			storetest.Run(t, func(t *testing.T) store.Store { return impl.open(t) })
		})
	}
}

// TestScanSnapshot checks the snapshot that Memory and Bolt promise: writes
// made by fn during the scan are not visited, and deleted keys still are.
func TestScanSnapshot(t *testing.T) {
	for _, impl := range implementations {
		t.Run(impl.name, func(t *testing.T) {
			s := impl.open(t)
			ctx := t.Context()
			for i := range 5 {
				_, _, err := s.PutIfAbsent(ctx, "k"+strconv.Itoa(i), []byte("old"))
				require.NoError(t, err)
			}
			var visited []string
			err := s.Scan(ctx, "k", func(k string, v []byte) error {
				visited = append(visited, k+"="+string(v))
				if k != "k0" {
					return nil
				}
				if err := s.Delete(ctx, "k3"); err != nil {
					return err
				}
				if _, err := s.CompareAndSwap(ctx, "k4", []byte("old"), []byte("new")); err != nil {
					return err
				}
				_, _, err := s.PutIfAbsent(ctx, "k2a", []byte("added"))
				return err
			})
			require.NoError(t, err)
			assert.Equal(t, []string{"k0=old", "k1=old", "k2=old", "k3=old", "k4=old"}, visited)

			visited = visited[:0]
			err = s.Scan(ctx, "k", func(k string, v []byte) error {
				visited = append(visited, k+"="+string(v))
				return nil
			})
			require.NoError(t, err)
			assert.Equal(t, []string{"k0=old", "k1=old", "k2=old", "k2a=added", "k4=new"}, visited)
		})
	}
}

// TestScanStopsWhenClosed checks that a scan in progress ends with ErrClosed
// once the store is closed.
func TestScanStopsWhenClosed(t *testing.T) {
	for _, impl := range implementations {
		t.Run(impl.name, func(t *testing.T) {
			s := impl.open(t)
			for i := range 3 {
				_, _, err := s.PutIfAbsent(t.Context(), "k"+strconv.Itoa(i), nil)
				require.NoError(t, err)
			}
			calls := 0
			err := s.Scan(t.Context(), "", func(string, []byte) error {
				calls++
				return s.Close()
			})
			require.ErrorIs(t, err, store.ErrClosed)
			assert.Equal(t, 1, calls)
		})
	}
}

func TestInvalidKeyMessage(t *testing.T) {
	s := store.NewMemory()
	_, _, err := s.Get(t.Context(), "")
	require.EqualError(t, err, "store: invalid key: empty")
	_, _, err = s.Get(t.Context(), string(make([]byte, store.MaxKeyLen+1)))
	require.EqualError(t, err, "store: invalid key: 1025 bytes, limit 1024")
}

// TestModel runs a random sequence of operations against each store and
// against a plain map, and compares every result and scan.
func TestModel(t *testing.T) {
	for _, impl := range implementations {
		t.Run(impl.name, func(t *testing.T) {
			s := impl.open(t)
			ctx := t.Context()
			rng := rand.New(rand.NewPCG(1, 2))
			model := map[string]string{}
			randKey := func() string { return "k" + strconv.Itoa(rng.IntN(300)) }
			for op := range 3000 {
				key, val := randKey(), strconv.Itoa(op)
				switch r := rng.IntN(10); {
				case r < 4:
					existing, stored, err := s.PutIfAbsent(ctx, key, []byte(val))
					require.NoError(t, err)
					old, had := model[key]
					require.Equal(t, !had, stored, "op %d PutIfAbsent %s", op, key)
					if had {
						require.Equal(t, old, string(existing), "op %d", op)
					} else {
						model[key] = val
					}
				case r < 6:
					old := model[key]
					if rng.IntN(2) == 0 {
						old += "x" // a mismatch
					}
					swapped, err := s.CompareAndSwap(ctx, key, []byte(old), []byte(val))
					require.NoError(t, err)
					cur, had := model[key]
					require.Equal(t, had && cur == old, swapped, "op %d CompareAndSwap %s", op, key)
					if swapped {
						model[key] = val
					}
				case r < 9:
					require.NoError(t, s.Delete(ctx, key))
					delete(model, key)
				default:
					prefix := key[:1+rng.IntN(len(key))]
					var want []string
					for _, k := range slices.Sorted(maps.Keys(model)) {
						if strings.HasPrefix(k, prefix) {
							want = append(want, k+"="+model[k])
						}
					}
					var got []string
					require.NoError(t, s.Scan(ctx, prefix, func(k string, v []byte) error {
						got = append(got, k+"="+string(v))
						return nil
					}))
					require.Equal(t, want, got, "op %d Scan %q", op, prefix)
				}
			}
		})
	}
}

// TestNoDatabaseDriverInSDK keeps the PostgreSQL driver out of the SDK's
// module: it belongs to the module store/postgres, so that agents that do not
// use PostgreSQL never download or build it.
func TestNoDatabaseDriverInSDK(t *testing.T) {
	gomod, err := os.ReadFile(filepath.Join("..", "go.mod"))
	require.NoError(t, err)
	require.Contains(t, string(gomod), "module github.com/supervaize/supervaizer-go\n")
	assert.NotContains(t, string(gomod), "github.com/jackc/", "the SDK's go.mod requires the PostgreSQL driver")
}

// notExclusive hides Exclusive behind the Store interface, as a wrapper that
// does not forward it does; sharedStore says false.
type (
	notExclusive struct{ store.Store }
	sharedStore  struct{ store.Store }
)

func (sharedStore) Exclusive() bool { return false }

func TestIsExclusive(t *testing.T) {
	bolt, err := store.Open(filepath.Join(t.TempDir(), "x.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = bolt.Close() })
	for name, tc := range map[string]struct {
		s    store.Store
		want bool
	}{
		"memory":         {store.NewMemory(), true},
		"bbolt":          {bolt, true},
		"wrapper":        {notExclusive{store.NewMemory()}, false},
		"says it is not": {sharedStore{store.NewMemory()}, false},
	} {
		assert.Equal(t, tc.want, store.IsExclusive(tc.s), name)
	}
}
