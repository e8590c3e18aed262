package vfio

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// iommuReply builds a vfio_iommu_type1_info reply with a capability chain:
// the IOVA ranges, then (if avail >= 0) a dma_avail capability.
func iommuReply(pgsizes uint64, ranges []IOVARange, avail int64) []byte {
	b := make([]byte, iommuInfoSize)
	caps := []byte{}
	if ranges != nil {
		c := make([]byte, capHeaderSize+8+16*len(ranges))
		ne.PutUint16(c[0:], iommuCapIOVARange)
		ne.PutUint16(c[2:], 1)
		ne.PutUint32(c[8:], uint32(len(ranges)))
		for i, r := range ranges {
			ne.PutUint64(c[16+16*i:], r.Start)
			ne.PutUint64(c[24+16*i:], r.End)
		}
		caps = append(caps, c...)
	}
	if avail >= 0 {
		if len(caps) > 0 {
			ne.PutUint32(caps[4:], uint32(iommuInfoSize+len(caps)))
		}
		c := make([]byte, capHeaderSize+4)
		ne.PutUint16(c[0:], iommuCapDMAAvail)
		ne.PutUint32(c[8:], uint32(avail))
		caps = append(caps, c...)
	}
	flags := uint32(iommuInfoFlagPgsizes)
	if len(caps) > 0 {
		flags |= iommuInfoFlagCaps
		ne.PutUint32(b[16:], iommuInfoSize)
	}
	b = append(b, caps...)
	ne.PutUint32(b[0:], uint32(len(b)))
	ne.PutUint32(b[4:], flags)
	ne.PutUint64(b[8:], pgsizes)
	return b
}

// The reply the emulated VT-d of QEMU 7.2 gives under Linux 6.1: 4K/2M/1G
// pages, the MSI window cut out of a 39-bit space.
var vtdRanges = []IOVARange{{0, 0xfedfffff}, {0xfef00000, 0x7fffffffff}}

func TestParseIOMMUInfo(t *testing.T) {
	info, need, err := parseIOMMUInfo(iommuReply(0x40201000, vtdRanges, 65535))
	require.NoError(t, err)
	assert.Zero(t, need)
	assert.Equal(t, uint64(0x40201000), info.PageSizes)
	assert.Equal(t, uint64(4096), info.MinPageSize())
	assert.Equal(t, vtdRanges, info.IOVARanges)
	assert.True(t, info.HasDMAAvail)
	assert.Equal(t, uint32(65535), info.DMAAvail)

	// The first call has room for the header only: the kernel raises argsz.
	full := iommuReply(0x1000, vtdRanges, -1)
	short := append([]byte(nil), full[:iommuInfoSize]...)
	_, need, err = parseIOMMUInfo(short)
	require.NoError(t, err)
	assert.Equal(t, uint32(len(full)), need)

	// No capabilities at all (an old kernel).
	info, need, err = parseIOMMUInfo(iommuReply(0x1000, nil, -1))
	require.NoError(t, err)
	assert.Zero(t, need)
	assert.Empty(t, info.IOVARanges)
	assert.False(t, info.HasDMAAvail)
	assert.Equal(t, uint64(4096), IOMMUInfo{}.MinPageSize(), "default without page sizes")
}

func TestParseIOMMUInfoMalformed(t *testing.T) {
	good := iommuReply(0x1000, vtdRanges, 10)
	for _, tc := range []struct {
		name string
		edit func(b []byte) []byte
	}{
		{"short header", func(b []byte) []byte { return b[:20] }},
		{"chain starts inside header", func(b []byte) []byte { ne.PutUint32(b[16:], 8); return b }},
		{"chain past end", func(b []byte) []byte { ne.PutUint32(b[16:], uint32(len(b))); return b }},
		{"next points backwards (a loop)", func(b []byte) []byte { ne.PutUint32(b[iommuInfoSize+4:], iommuInfoSize); return b }},
		{"next past end", func(b []byte) []byte { ne.PutUint32(b[iommuInfoSize+4:], 1<<20); return b }},
		{"too many ranges", func(b []byte) []byte { ne.PutUint32(b[iommuInfoSize+8:], 1000); return b }},
		{"range end before start", func(b []byte) []byte {
			ne.PutUint64(b[iommuInfoSize+24:], 0)
			ne.PutUint64(b[iommuInfoSize+16:], 5)
			return b
		}},
		{"ranges out of order", func(b []byte) []byte { ne.PutUint64(b[iommuInfoSize+32:], 0x100); return b }},
		{"dma_avail truncated", func(b []byte) []byte { return b[:len(b)-2] }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.edit(append([]byte(nil), good...))
			ne.PutUint32(b[0:], uint32(len(b)))
			_, _, err := parseIOMMUInfo(b)
			require.Error(t, err)
			assert.True(t, errors.Is(err, errBadReply), "%v", err)
		})
	}
}

// regionReply builds a vfio_region_info reply, with a sparse-mmap
// capability if areas is not nil and an MSI-X-mappable one if msix.
func regionReply(index, flags uint32, size, offset uint64, areas []SparseArea, msix bool) []byte {
	b := make([]byte, regionInfoSize)
	var caps []byte
	if areas != nil {
		c := make([]byte, capHeaderSize+8+16*len(areas))
		ne.PutUint16(c[0:], regionCapSparse)
		ne.PutUint32(c[8:], uint32(len(areas)))
		for i, a := range areas {
			ne.PutUint64(c[16+16*i:], a.Offset)
			ne.PutUint64(c[24+16*i:], a.Size)
		}
		caps = append(caps, c...)
	}
	if msix {
		if len(caps) > 0 {
			ne.PutUint32(caps[4:], uint32(regionInfoSize+len(caps)))
		}
		c := make([]byte, capHeaderSize)
		ne.PutUint16(c[0:], regionCapMSIXMap)
		caps = append(caps, c...)
	}
	if len(caps) > 0 {
		flags |= regionFlagCaps
		ne.PutUint32(b[regionOffCapOff:], regionInfoSize)
	}
	b = append(b, caps...)
	ne.PutUint32(b[0:], uint32(len(b)))
	ne.PutUint32(b[regionOffFlags:], flags)
	ne.PutUint32(b[regionOffIndex:], index)
	ne.PutUint64(b[regionOffSize:], size)
	ne.PutUint64(b[regionOffOffset:], offset)
	return b
}

func TestParseRegionInfo(t *testing.T) {
	rw := uint32(regionFlagRead | regionFlagWrite)
	// edu's BAR0: 1 MiB, mappable, no capabilities.
	ri, need, err := parseRegionInfo(regionReply(0, rw|regionFlagMmap, 1<<20, 0, nil, false))
	require.NoError(t, err)
	assert.Zero(t, need)
	assert.Equal(t, RegionInfo{Index: 0, Flags: rw | regionFlagMmap, Size: 1 << 20}, ri)
	assert.True(t, ri.Readable())
	assert.True(t, ri.Writable())
	assert.True(t, ri.Mappable())
	assert.Equal(t, []SparseArea{{0, 1 << 20}}, ri.mmapAreas())

	// A BAR with an MSI-X table at 0x2000 (one page) mapped around it.
	areas := []SparseArea{{0, 0x2000}, {0x3000, 0x1000}, {0x4000, 0}}
	ri, _, err = parseRegionInfo(regionReply(2, rw|regionFlagMmap, 0x8000, 2<<40, areas, true))
	require.NoError(t, err)
	assert.Equal(t, uint32(2), ri.Index)
	assert.Equal(t, uint64(2<<40), ri.Offset)
	assert.Equal(t, []SparseArea{{0, 0x2000}, {0x3000, 0x1000}}, ri.Sparse, "empty areas dropped")
	assert.True(t, ri.MSIXMappable)
	assert.Equal(t, ri.Sparse, ri.mmapAreas())

	// An I/O port BAR: readable and writable, never mappable.
	ri, _, err = parseRegionInfo(regionReply(4, rw, 0x20, 4<<40, nil, false))
	require.NoError(t, err)
	assert.Nil(t, ri.mmapAreas())
	// An unimplemented BAR.
	ri, _, err = parseRegionInfo(regionReply(1, 0, 0, 1<<40, nil, false))
	require.NoError(t, err)
	assert.Nil(t, ri.mmapAreas())

	// Room for the header only: the kernel asks for more.
	full := regionReply(2, rw|regionFlagMmap, 0x8000, 0, areas, false)
	_, need, err = parseRegionInfo(append([]byte(nil), full[:regionInfoSize]...))
	require.NoError(t, err)
	assert.Equal(t, uint32(len(full)), need)

	// A sparse area outside the region.
	_, _, err = parseRegionInfo(regionReply(2, rw|regionFlagMmap, 0x8000, 0, []SparseArea{{0x7000, 0x2000}}, false))
	assert.ErrorIs(t, err, errBadReply)
	_, _, err = parseRegionInfo(regionReply(2, rw|regionFlagMmap, 0x8000, 0, []SparseArea{{^uint64(0), 2}}, false))
	assert.ErrorIs(t, err, errBadReply)
	_, _, err = parseRegionInfo(make([]byte, 31))
	assert.ErrorIs(t, err, errBadReply)
}

func TestParseSmallReplies(t *testing.T) {
	b := make([]byte, 24)
	ne.PutUint32(b[4:], deviceFlagReset|deviceFlagPCI)
	ne.PutUint32(b[8:], 9)
	ne.PutUint32(b[12:], 5)
	di, err := parseDeviceInfo(b)
	require.NoError(t, err)
	assert.Equal(t, DeviceInfo{Flags: 3, NumRegions: 9, NumIRQs: 5}, di)
	assert.True(t, di.CanReset())
	assert.True(t, di.IsPCI())
	_, err = parseDeviceInfo(b[:15])
	assert.ErrorIs(t, err, errBadReply)

	q := make([]byte, 16)
	ne.PutUint32(q[4:], irqFlagEventfd|irqFlagMaskable|irqFlagAutomasked)
	ne.PutUint32(q[8:], 0)
	ne.PutUint32(q[12:], 1)
	ii, err := parseIRQInfo(q)
	require.NoError(t, err)
	assert.Equal(t, IRQInfo{Index: 0, Flags: 7, Count: 1}, ii)
	assert.True(t, ii.Eventfd() && ii.Maskable() && ii.Automasked())
	_, err = parseIRQInfo(q[:8])
	assert.ErrorIs(t, err, errBadReply)
}

func FuzzParseIOMMUInfo(f *testing.F) {
	f.Add(iommuReply(0x40201000, vtdRanges, 65535))
	f.Add(iommuReply(0x1000, nil, -1))
	f.Fuzz(func(t *testing.T, b []byte) {
		info, need, err := parseIOMMUInfo(b)
		if err != nil || need != 0 {
			return
		}
		for i, r := range info.IOVARanges {
			if r.End < r.Start || (i > 0 && r.Start <= info.IOVARanges[i-1].End) {
				t.Fatalf("accepted bad ranges %v", info.IOVARanges)
			}
		}
	})
}

func FuzzParseRegionInfo(f *testing.F) {
	f.Add(regionReply(0, 7, 1<<20, 0, nil, false))
	f.Add(regionReply(2, 7, 0x8000, 0, []SparseArea{{0, 0x2000}, {0x3000, 0x1000}}, true))
	f.Fuzz(func(t *testing.T, b []byte) {
		ri, need, err := parseRegionInfo(b)
		if err != nil || need != 0 {
			return
		}
		for _, a := range ri.mmapAreas() {
			if a.Offset > ri.Size || a.Size > ri.Size-a.Offset {
				t.Fatalf("area %+v outside region of %#x", a, ri.Size)
			}
		}
	})
}
