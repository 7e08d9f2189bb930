package contracts

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestChecksResetLeavesNoPath: a checks given back to the pool holds no
// path segment of its check, in its arena's buffer or in small, whether the
// paths fit in small, outgrew it in this check, or were built in the buffer
// an earlier check grew; so that no string is kept alive by the pool.
func TestChecksResetLeavesNoPath(t *testing.T) {
	clean := func(t *testing.T, c *checks) {
		t.Helper()
		for i, s := range c.small {
			require.Empty(t, s, "small[%d]", i)
		}
		buf := c.arena.buf
		for i, s := range buf[:cap(buf)] {
			require.Empty(t, s, "buf[%d]", i)
		}
	}
	build := func(c *checks, n int) {
		p := c.root()
		for i := range n {
			p = p.key(fmt.Sprintf("seg-%d", i))
			_ = p.idx(i) // a sibling: copied to the end of the buffer
		}
	}
	for _, tc := range []struct {
		name string
		runs []int // segments built by successive checks on one checks
	}{
		{"fits in small", []int{5, 3}},
		{"outgrows small", []int{60}},
		{"outgrows small, then uses the grown buffer", []int{60, 10, 2}},
		{"small, then outgrows it", []int{5, 60, 5}},
		{"a buffer too large to keep, then small again", []int{600, 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := new(checks)
			for _, n := range tc.runs {
				build(c, n)
				c.reset()
				clean(t, c)
			}
			assert.Nil(t, c.v)
			assert.Nil(t, c.problems)
		})
	}
}
