package vfio

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// memfdDevice is a Device whose "device file" is a memfd: BAR mmaps and
// the pread/pwrite fallback then work on ordinary memory, which lets the
// accessors be checked without VFIO.
func memfdDevice(t *testing.T, size int) *Device {
	fd, err := unix.MemfdCreate("fake-bar", unix.MFD_CLOEXEC)
	require.NoError(t, err)
	require.NoError(t, unix.Ftruncate(fd, int64(size)))
	t.Cleanup(func() { unix.Close(fd) })
	return &Device{fd: fd, bars: make([]*BAR, 6)}
}

func TestBARAccessors(t *testing.T) {
	d := memfdDevice(t, 0x5000)
	rw := uint32(regionFlagRead | regionFlagWrite | regionFlagMmap)
	// BAR2 lives at file offset 0x1000; its page 0x1000-0x1fff (think of an
	// MSI-X table) may not be mmapped.
	ri := RegionInfo{Index: 2, Flags: rw, Size: 0x3000, Offset: 0x1000, Sparse: []SparseArea{{0, 0x1000}, {0x2000, 0x1000}}}
	b, err := d.mapBAR(2, ri)
	require.NoError(t, err)
	again, err := d.mapBAR(2, ri)
	require.NoError(t, err)
	assert.Same(t, b, again, "a BAR is mapped once")
	assert.Equal(t, uint64(0x3000), b.Size())
	assert.Equal(t, 2, b.Index())

	file := func(off int64, n int) []byte {
		p := make([]byte, n)
		_, err := unix.Pread(d.fd, p, off)
		require.NoError(t, err)
		return p
	}
	// Direct (mmapped) registers land in the file at Offset+off.
	require.NoError(t, b.Write32(0x10, 0xdeadbeef))
	assert.Equal(t, uint32(0xdeadbeef), binary.LittleEndian.Uint32(file(0x1010, 4)))
	require.NoError(t, b.Write64(0x2008, 0x0123456789abcdef))
	assert.Equal(t, uint64(0x0123456789abcdef), binary.LittleEndian.Uint64(file(0x3008, 8)))
	v, err := b.Read64(0x2008)
	require.NoError(t, err)
	assert.Equal(t, uint64(0x0123456789abcdef), v)

	// The hole goes through pwrite/pread, transparently.
	r, err := b.Reg32(0x1004)
	require.NoError(t, err)
	assert.Nil(t, r.p, "outside the sparse areas: file access")
	r.Store(0xcafef00d)
	assert.Equal(t, uint32(0xcafef00d), binary.LittleEndian.Uint32(file(0x2004, 4)))
	assert.Equal(t, uint32(0xcafef00d), r.Load())
	r64, err := b.Reg64(0x1ff8)
	require.NoError(t, err)
	r64.Store(42)
	assert.Equal(t, uint64(42), r64.Load())

	// Bounds and alignment.
	for _, tc := range []struct {
		off   uint64
		width int
	}{{0x3000, 4}, {0x2ffe, 4}, {0x2, 4}, {0x4, 8}, {0x2ffc, 8}, {^uint64(0) - 3, 4}} {
		var err error
		if tc.width == 4 {
			_, err = b.Reg32(tc.off)
		} else {
			_, err = b.Reg64(tc.off)
		}
		assert.ErrorIs(t, err, ErrOutOfRange, "%d-byte at %#x", tc.width, tc.off)
	}
	_, err = b.Read32(0x3000)
	assert.ErrorIs(t, err, ErrOutOfRange)
	assert.ErrorIs(t, b.Write32(1, 0), ErrOutOfRange)

	// After Close: all ones, stores dropped, new registers refused.
	direct, err := b.Reg32(0x10)
	require.NoError(t, err)
	require.NoError(t, b.Close())
	assert.Equal(t, ^uint32(0), direct.Load())
	assert.Equal(t, ^uint32(0), r.Load())
	assert.Equal(t, ^uint64(0), r64.Load())
	direct.Store(1)
	assert.Equal(t, uint32(0xdeadbeef), binary.LittleEndian.Uint32(file(0x1010, 4)))
	_, err = b.Reg32(0)
	assert.ErrorIs(t, err, ErrClosed)
	assert.NoError(t, b.Close(), "Close is idempotent")
	assert.Equal(t, ^uint32(0), Reg32{}.Load(), "zero Reg32")
}

func TestBARWholeMapping(t *testing.T) {
	d := memfdDevice(t, 0x2000)
	b, err := d.mapBAR(0, RegionInfo{Flags: regionFlagRead | regionFlagWrite | regionFlagMmap, Size: 0x2000})
	require.NoError(t, err)
	defer b.Close()
	r, err := b.Reg32(0x1ffc)
	require.NoError(t, err)
	assert.NotNil(t, r.p)
	r.Store(7)
	assert.Equal(t, uint32(7), r.Load())
}

func TestBARReadOnly(t *testing.T) {
	d := memfdDevice(t, 0x1000)
	_, err := unix.Pwrite(d.fd, []byte{1, 2, 3, 4}, 0x10)
	require.NoError(t, err)
	b, err := d.mapBAR(0, RegionInfo{Flags: regionFlagRead | regionFlagMmap, Size: 0x1000})
	require.NoError(t, err)
	defer b.Close()
	v, err := b.Read32(0x10)
	require.NoError(t, err)
	assert.Equal(t, uint32(0x04030201), v)
	assert.ErrorIs(t, b.Write32(0x10, 0), ErrOutOfRange)
	assert.ErrorIs(t, b.Write64(0x10, 0), ErrOutOfRange)
	r, err := b.Reg32(0x10)
	require.NoError(t, err)
	r.Store(0xffffffff) // through the file, not the read-only mapping: no fault
	assert.Equal(t, uint32(0xffffffff), r.Load(), "a memfd accepts the write; vfio-pci refuses it")
}

func TestBARNotMappable(t *testing.T) {
	d := memfdDevice(t, 0x1000)
	_, err := d.mapBAR(1, RegionInfo{Index: 1})
	assert.ErrorIs(t, err, ErrBARNotMappable)
	assert.Contains(t, err.Error(), "does not implement BAR1")
	_, err = d.mapBAR(4, RegionInfo{Index: 4, Flags: regionFlagRead | regionFlagWrite, Size: 0x20})
	assert.ErrorIs(t, err, ErrBARNotMappable)
	assert.Contains(t, err.Error(), "I/O port")
	_, err = d.mapBAR(3, RegionInfo{Index: 3, Flags: regionFlagMmap | regionFlagRead, Size: 0x1000, Sparse: []SparseArea{}})
	assert.ErrorIs(t, err, ErrBARNotMappable, "a sparse capability with no areas")
	_, err = d.MapBAR(6)
	assert.ErrorIs(t, err, ErrOutOfRange)
}
