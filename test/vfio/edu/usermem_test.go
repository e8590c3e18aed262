//go:build vfioguest

package edu

import (
	"fmt"
	"math/rand"
	"runtime"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Go slices (ordinary heap memory) mapped with MapMemory are reached by
// the device at their IOVAs, contiguous and page by page through Pages4K;
// once unmapped, the device's write faults in the IOMMU and the slice is
// untouched.
func TestEduMapMemory(t *testing.T) {
	e := openEdu(t)
	require.NoError(t, e.dev.EnableBusMaster())
	rng := rand.New(rand.NewSource(seed + 9))
	c := e.dev.Container()
	pinned := c.Pinned()

	const n = 3000
	srcBack := make([]byte, 4*4096)
	src := srcBack[1234 : 1234+n] // across a page boundary
	copy(src, pattern(rng, n))
	ms, err := e.dev.MapMemory(src)
	require.NoError(t, err)
	assert.Equal(t, pinned+ms.MappedLen(), c.Pinned())
	off, pages := ms.Pages4K()
	assert.Equal(t, uint64(uintptr(unsafe.Pointer(&src[0])))&4095, off)
	assert.Len(t, pages, int((off+n+4095)/4096))
	require.Less(t, ms.IOVA()+n, uint64(eduDMALimit))
	runtime.GC()
	e.dma(ms.IOVA(), 0, n, false, false) // slice -> edu

	dstBack := make([]byte, 3*4096)
	dst := dstBack[4000 : 4000+n]
	md, err := e.dev.MapMemory(dst)
	require.NoError(t, err)
	runtime.GC()
	e.dma(md.IOVA(), 0, n, true, false) // edu -> slice, one contiguous IOVA range
	require.Equal(t, src, dst)

	// Page by page, through the page list the card would be given.
	clear(dst)
	doff, dpages := md.Pages4K()
	done := 0
	for k, pg := range dpages {
		start := uint64(0)
		if k == 0 {
			start = doff
		}
		chunk := min(4096-int(start), n-done)
		e.dma(pg+start, uint64(done), chunk, true, false)
		done += chunk
	}
	require.Equal(t, n, done)
	require.Equal(t, src, dst)
	assert.Equal(t, make([]byte, 4000), dstBack[:4000], "bytes before the slice")
	assert.Equal(t, make([]byte, len(dstBack)-4000-n), dstBack[4000+n:], "bytes after the slice")

	// Unmapped: the device's write faults and the slice stays as it was.
	old := md.IOVA()
	require.NoError(t, md.Unmap())
	require.NoError(t, md.Unmap(), "twice")
	clear(dst)
	log := tailKmsg(t)
	e.dma(old, 0, n, true, false)
	line := log.waitFor(t, "DMA Write", fmt.Sprintf("fault addr 0x%x", old&^4095))
	t.Logf("unmapped slice: %s", line)
	assert.Equal(t, make([]byte, n), dst, "the device wrote an unmapped slice")
	require.NoError(t, ms.Unmap())
	assert.Equal(t, pinned, c.Pinned())
	_, err = e.dev.MapMemory(nil)
	assert.Error(t, err)
}
