package postgres

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/store"
	"github.com/supervaize/supervaizer-go/store/storetest"
)

func TestConformance(t *testing.T) {
	testURL(t)
	storetest.Run(t, func(t *testing.T) store.Store { return openTest(t).Store() })
}

// TestConformanceSmallPool runs the suite with a single connection: Scan must
// not hold it while its callback calls back into the store.
func TestConformanceSmallPool(t *testing.T) {
	testURL(t)
	storetest.Run(t, func(t *testing.T) store.Store { return openTest(t, WithMaxConns(1)).Store() })
}

func TestPrefixEnd(t *testing.T) {
	tests := []struct {
		prefix  string
		end     string
		bounded bool
	}{
		{"", "", false},
		{"a", "b", true},
		{"a/b", "a/c", true},
		{"a\xff", "b", true},
		{"a\xff\xff", "b", true},
		{"\xff", "", false},
		{"\xff\xff", "", false},
		{"\x00", "\x01", true},
		{"é", "\xc3\xaa", true},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%q", tt.prefix), func(t *testing.T) {
			end, bounded := prefixEnd(tt.prefix)
			assert.Equal(t, tt.bounded, bounded)
			assert.Equal(t, tt.end, string(end))
			if bounded {
				assert.Greater(t, string(end), tt.prefix+strings.Repeat("\xff", 8))
			}
		})
	}
}

// TestScanPages checks a scan that spans several pages, cut by rows and by
// bytes, under a prefix whose successor exists and one whose does not.
func TestScanPages(t *testing.T) {
	db := openTest(t)
	s := db.Store()
	ctx := t.Context()
	const n = 3*scanPageRows + 7
	var want []string
	for i := range n {
		want = append(want, fmt.Sprintf("p/%05d", i))
	}
	_, err := db.pool.Exec(ctx, "INSERT INTO "+pgx.Identifier{db.Schema()}.Sanitize()+".kv (key, value) "+
		"SELECT convert_to(k, 'UTF8'), 'v' FROM unnest($1::text[]) AS k", want)
	require.NoError(t, err)
	big := make([]byte, scanPageBytes/3+1)
	for i := range 7 {
		k := fmt.Sprintf("\xff/%d", i)
		_, _, err := s.PutIfAbsent(ctx, k, big)
		require.NoError(t, err)
	}
	tests := []struct {
		prefix string
		want   int
	}{
		{"p/", n},
		{"\xff", 7},
		{"", n + 7},
	}
	for _, tt := range tests {
		var got []string
		require.NoError(t, s.Scan(ctx, tt.prefix, func(k string, v []byte) error {
			got = append(got, k)
			return nil
		}))
		assert.Len(t, got, tt.want, "prefix %q", tt.prefix)
		assert.IsIncreasing(t, got, "prefix %q", tt.prefix)
		if tt.prefix == "p/" {
			assert.Equal(t, want, got)
		}
	}
}

// TestPreparedStatements checks that the store's statements are prepared on
// the pooled connection rather than parsed on each call.
func TestPreparedStatements(t *testing.T) {
	db := openTest(t, WithMaxConns(1))
	_, _, err := db.Store().Get(t.Context(), "k")
	require.NoError(t, err)
	rows, err := db.pool.Query(t.Context(), "SELECT name FROM pg_prepared_statements WHERE name LIKE 'sv_%' ORDER BY name")
	require.NoError(t, err)
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	var want []string
	for _, s := range db.sql.pooled() {
		want = append(want, s.name)
	}
	assert.ElementsMatch(t, want, names)
}

// TestStoresShareTheDatabase checks atomicity across two pools, as two
// instances of a controller would have: concurrent PutIfAbsent of one key
// through either stores once, and both see the winner.
func TestStoresShareTheDatabase(t *testing.T) {
	schema := testSchema(t)
	url := testURL(t)
	var dbs [2]*DB
	for i := range dbs {
		db, err := Open(t.Context(), url, WithSchema(schema), WithMaxConns(4))
		require.NoError(t, err)
		t.Cleanup(db.Close)
		dbs[i] = db
	}
	const keys, callers = 20, 6
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		stored = map[string]int{}
		seen   = map[string]map[string]bool{}
	)
	for c := range callers {
		wg.Go(func() {
			s := dbs[c%2].Store()
			for k := range keys {
				key := fmt.Sprintf("idem/%d", k)
				val := fmt.Sprintf("caller %d", c)
				existing, ok, err := s.PutIfAbsent(context.Background(), key, []byte(val))
				if !assert.NoError(t, err) {
					return
				}
				mu.Lock()
				if seen[key] == nil {
					seen[key] = map[string]bool{}
				}
				if ok {
					stored[key]++
					seen[key][val] = true
				} else {
					seen[key][string(existing)] = true
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for k := range keys {
		key := fmt.Sprintf("idem/%d", k)
		assert.Equal(t, 1, stored[key], key)
		assert.Len(t, seen[key], 1, "%s: every caller sees the one stored value", key)
	}
}

func TestDBClose(t *testing.T) {
	db := openTest(t)
	s := db.Store()
	db.Close()
	db.Close()
	_, _, err := s.Get(t.Context(), "k")
	assert.ErrorIs(t, err, store.ErrClosed)
	assert.ErrorIs(t, s.Close(), store.ErrClosed)
}

func TestOpenErrors(t *testing.T) {
	ctx := t.Context()
	_, err := Open(ctx, "postgres://user:secret@127.0.0.1:5432/db?sslmode=nonsense")
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "secret", "the password leaks into the error")
	_, err = Open(ctx, "postgres://127.0.0.1/db", WithSchema(" "))
	assert.Error(t, err)
}
