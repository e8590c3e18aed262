package vfio

import (
	"errors"
	"fmt"
	"math/rand"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestIOVAAllocatorBasics(t *testing.T) {
	a, err := NewIOVAAllocator(vtdRanges, 4096)
	require.NoError(t, err)
	assert.Equal(t, []IOVARange{{0x1000, 0xfedfffff}, {0xfef00000, 0x7fffffffff}}, a.FreeRanges(), "page 0 kept back")

	for _, tc := range []struct {
		name               string
		size, align, limit uint64
		want               uint64
	}{
		{"first page", 1, 0, 0, 0x1000},
		{"rounded to pages", 0x1001, 0, 0, 0x2000},
		{"aligned", 0x1000, 0x10000, 0, 0x10000},
		{"fills the gap", 0x1000, 0, 0, 0x4000},
		{"2 MiB aligned", 2 << 20, 2 << 20, 0, 2 << 20},
		{"below a 28-bit limit", 0x1000, 0, 1 << 28, 0x5000},
		{"skips the MSI window", 0x200000, 0x100000, 0, 0x400000},
	} {
		got, err := a.Alloc(tc.size, tc.align, tc.limit)
		require.NoError(t, err, tc.name)
		assert.Equal(t, tc.want, got, tc.name)
	}

	// A range that only fits above the MSI window.
	big, err := a.Alloc(0x100000, 0x100000, 0)
	require.NoError(t, err)
	assert.Equal(t, uint64(0x100000), big, "the hole between 0x11000 and 2 MiB")
	iova, err := a.Alloc(0xff000000, 0x100000, 0)
	require.NoError(t, err)
	assert.Equal(t, uint64(0xfef00000), iova, "too big for the space below the MSI window")

	// Exhaustion under a limit.
	_, err = a.Alloc(1<<28, 0, 1<<28)
	require.ErrorIs(t, err, ErrIOVAExhausted)
	assert.Contains(t, err.Error(), "below 0x10000000")
	assert.Contains(t, err.Error(), "free ranges: [")

	// Free merges neighbours back.
	require.NoError(t, a.Free(0x4000))
	require.NoError(t, a.Free(0x5000))
	got, err := a.Alloc(0x2000, 0, 0)
	require.NoError(t, err)
	assert.Equal(t, uint64(0x4000), got, "two freed pages merged")
	assert.ErrorIs(t, a.Free(0x4000+0x1000), ErrOutOfRange, "not the start of an allocation")
	require.NoError(t, a.Free(0x4000))
	assert.ErrorIs(t, a.Free(0x4000), ErrOutOfRange, "double free")

	_, err = a.Alloc(0, 0, 0)
	assert.ErrorIs(t, err, ErrOutOfRange)
	_, err = a.Alloc(0x1000, 0x3000, 0)
	assert.ErrorIs(t, err, ErrOutOfRange)
	_, err = a.Alloc(^uint64(0), 0, 0)
	assert.ErrorIs(t, err, ErrIOVAExhausted)
}

func TestIOVAAllocatorEdges(t *testing.T) {
	_, err := NewIOVAAllocator(vtdRanges, 3000)
	assert.ErrorIs(t, err, ErrOutOfRange)
	_, err = NewIOVAAllocator([]IOVARange{{0, 0xfff}}, 4096)
	assert.ErrorIs(t, err, ErrIOVAExhausted, "only page 0")
	_, err = NewIOVAAllocator([]IOVARange{{0x1800, 0x27ff}}, 4096)
	assert.ErrorIs(t, err, ErrIOVAExhausted, "no whole page")

	// The whole 64-bit space: the top page is usable and nothing overflows.
	a, err := NewIOVAAllocator([]IOVARange{{0, ^uint64(0)}}, 4096)
	require.NoError(t, err)
	top, err := a.Alloc(0x1000, 0, 0)
	require.NoError(t, err)
	assert.Equal(t, uint64(0x1000), top)
	rest, err := a.Alloc(^uint64(0)-0x2000+1, 0, 0)
	require.NoError(t, err, "all the pages left, up to the top of the space")
	assert.Equal(t, uint64(0x2000), rest)
	_, err = a.Alloc(0x1000, 0, 0)
	assert.ErrorIs(t, err, ErrIOVAExhausted)
	require.NoError(t, a.Free(rest))
	require.NoError(t, a.Free(top))
	assert.Equal(t, []IOVARange{{0x1000, ^uint64(0)}}, a.FreeRanges())

	// Unsorted, unaligned input ranges are sorted and trimmed to pages.
	a, err = NewIOVAAllocator([]IOVARange{{0x10800, 0x20fff}, {0x2000, 0x2fff}}, 4096)
	require.NoError(t, err)
	assert.Equal(t, []IOVARange{{0x2000, 0x2fff}, {0x11000, 0x20fff}}, a.FreeRanges())
	assert.Equal(t, uint64(4096), a.PageSize())
}

// A random sequence of allocations and frees: live allocations never
// overlap, stay inside the ranges and under their limits, and freeing
// everything restores the initial free list.
func TestIOVAAllocatorRandom(t *testing.T) {
	seed := rand.Int63()
	rng := rand.New(rand.NewSource(seed))
	defer func() {
		if t.Failed() {
			t.Logf("seed %d", seed)
		}
	}()
	ranges := []IOVARange{{0, 0xfedfffff}, {0xfef00000, 0x1ffffffff}}
	a, err := NewIOVAAllocator(ranges, 4096)
	require.NoError(t, err)
	initial := a.FreeRanges()
	type alloc struct{ iova, size uint64 }
	var live []alloc
	inRanges := func(x alloc) bool {
		for _, r := range ranges {
			if x.iova >= r.Start && x.iova+x.size-1 <= r.End {
				return true
			}
		}
		return false
	}
	for i := 0; i < 5000; i++ {
		if len(live) > 0 && rng.Intn(3) == 0 {
			k := rng.Intn(len(live))
			require.NoError(t, a.Free(live[k].iova))
			live = append(live[:k], live[k+1:]...)
			continue
		}
		size := uint64(rng.Intn(64)+1) << 12 << uint(rng.Intn(8))
		align := uint64(1) << uint(12+rng.Intn(10))
		limit := uint64(0)
		if rng.Intn(2) == 0 {
			limit = 1 << 28
		}
		iova, err := a.Alloc(size, align, limit)
		if err != nil {
			require.ErrorIs(t, err, ErrIOVAExhausted)
			continue
		}
		x := alloc{iova, size}
		require.Zero(t, iova%align, "alignment")
		require.True(t, inRanges(x), "%#x+%#x outside the ranges", iova, size)
		require.NotZero(t, iova)
		if limit != 0 {
			require.LessOrEqual(t, iova+size, limit)
		}
		live = append(live, x)
	}
	sort.Slice(live, func(i, j int) bool { return live[i].iova < live[j].iova })
	for i := 1; i < len(live); i++ {
		require.Less(t, live[i-1].iova+live[i-1].size-1, live[i].iova, "overlap")
	}
	for _, x := range live {
		require.NoError(t, a.Free(x.iova))
	}
	assert.Equal(t, initial, a.FreeRanges())
}

func ExampleIOVAAllocator() {
	// QEMU's edu device masks DMA addresses to 28 bits: keep its buffers
	// below 256 MiB.
	a, _ := NewIOVAAllocator([]IOVARange{{0, 0xfedfffff}, {0xfef00000, 0x7fffffffff}}, 4096)
	ring, _ := a.Alloc(64<<10, 0, 1<<28)
	data, _ := a.Alloc(2<<20, 2<<20, 1<<28)
	fmt.Printf("ring at %#x, data at %#x\n", ring, data)
	_, err := a.Alloc(256<<20, 0, 1<<28)
	fmt.Println(errors.Is(err, ErrIOVAExhausted))
	// Output:
	// ring at 0x1000, data at 0x200000
	// true
}
