package vfio

import (
	"encoding/binary"
	"errors"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/openiwarp/openiwarp/host/driver"
)

func pagemapEntries(es ...uint64) []byte {
	b := make([]byte, 8*len(es))
	for i, e := range es {
		binary.LittleEndian.PutUint64(b[8*i:], e)
	}
	return b
}

func TestDecodePagemap(t *testing.T) {
	pages, err := decodePagemap(pagemapEntries(pmPresent|0x1234, pmPresent|1<<40|0x10, pmPresent|1<<55|0x20), 0x7000)
	require.NoError(t, err)
	assert.Equal(t, []uint64{0x1234000, 0x10000 | 1<<52, 0x20000}, pages, "flag bits 55..61 are not part of the PFN")
	for _, tc := range []struct {
		name    string
		entries []byte
		says    string
		hidden  bool
	}{
		{"short", []byte{1, 2, 3}, "not a multiple of 8", false},
		{"absent", pagemapEntries(pmPresent|1, 0), "page at 0x8000 is not in memory", false},
		{"swapped", pagemapEntries(pmSwapped | 5), "page at 0x7000 is swapped out", false},
		{"beyond 64 bits", pagemapEntries(pmPresent | 1<<52), "beyond a 64-bit address", false},
		{"PFN hidden", pagemapEntries(pmPresent|1, pmPresent), "CAP_SYS_ADMIN", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decodePagemap(tc.entries, 0x7000)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.says)
			assert.Equal(t, tc.hidden, errors.Is(err, errPFNZero))
		})
	}
}

func FuzzDecodePagemap(f *testing.F) {
	f.Add(pagemapEntries(pmPresent|0x1234, pmPresent|7), uint64(0x7000))
	f.Add([]byte{1, 2, 3}, uint64(0))
	f.Fuzz(func(t *testing.T, b []byte, va uint64) {
		pages, err := decodePagemap(b, va&^(pmPage-1))
		if err != nil {
			return
		}
		require.Len(t, pages, len(b)/8)
		for _, p := range pages {
			require.NotZero(t, p)
			require.Zero(t, p%pmPage)
		}
	})
}

// physOrSkip reads the physical pages of mem, skipping the test where the
// kernel hides them from this process (not root).
func physOrSkip(t *testing.T, mem []byte) []uint64 {
	t.Helper()
	pages, err := physPages(addrOf(mem), len(mem)/pmPage)
	if errors.Is(err, errPFNZero) {
		t.Skipf("this process may not see physical addresses: %v", err)
	}
	require.NoError(t, err)
	return pages
}

func TestPhysPages(t *testing.T) {
	mem, err := unix.Mmap(-1, 0, 4*pmPage, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE)
	require.NoError(t, err)
	defer unix.Munmap(mem)
	pages := physOrSkip(t, mem)
	require.Len(t, pages, 4)
	seen := map[uint64]bool{}
	for _, p := range pages {
		assert.NotZero(t, p)
		assert.Zero(t, p%pmPage)
		assert.False(t, seen[p], "two virtual pages on one physical page %#x", p)
		seen[p] = true
	}

	// A page never touched is not in memory.
	lazy, err := unix.Mmap(-1, 0, pmPage, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	require.NoError(t, err)
	defer unix.Munmap(lazy)
	_, err = physPages(addrOf(lazy), 1)
	require.ErrorIs(t, err, ErrOutOfRange)
	assert.Contains(t, err.Error(), "not in memory")

	_, err = physPages(addrOf(mem)+1, 1)
	assert.ErrorIs(t, err, ErrOutOfRange)
}

// A thread without CAP_SYS_ADMIN opens pagemap and reads frame numbers 0,
// as a program not run as root does: the error says so and how to fix it.
func TestPhysPagesWithoutCapability(t *testing.T) {
	mem, err := unix.Mmap(-1, 0, pmPage, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE)
	require.NoError(t, err)
	defer unix.Munmap(mem)
	physOrSkip(t, mem)
	var got error
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
		hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		var caps [2]unix.CapUserData
		if got = unix.Capget(&hdr, &caps[0]); got != nil {
			return
		}
		caps[0].Effective &^= 1 << unix.CAP_SYS_ADMIN
		if got = unix.Capset(&hdr, &caps[0]); got != nil {
			return
		}
		_, got = physPages(addrOf(mem), 1)
		if got == nil {
			got = errors.New("physical addresses read without CAP_SYS_ADMIN")
		}
	}()
	<-done
	require.ErrorIs(t, got, ErrPFNHidden)
	require.ErrorIs(t, got, errPFNZero)
	assert.Contains(t, got.Error(), "setcap cap_sys_admin")
	t.Logf("%v", got)
}

// noiommuContainer is a container set up as for a no-IOMMU group (no
// VFIO file needed: nothing is asked of the kernel but mlock and pagemap).
func noiommuContainer() *Container {
	return &Container{fd: -1, noiommu: true, groups: map[int]*group{}, bufs: map[uint64]*DMABuffer{}, locks: map[uint64]int{}}
}

func TestNoIOMMUAllocDMA(t *testing.T) {
	c := noiommuContainer()
	b, err := c.AllocDMA(100)
	if errors.Is(err, errPFNZero) {
		t.Skipf("this process may not see physical addresses: %v", err)
	}
	require.NoError(t, err)
	assert.Equal(t, physOrSkip(t, b.mem)[0], b.IOVA(), "the IOVA is the physical address")
	assert.Equal(t, uint64(pmPage), c.Pinned())
	require.NoError(t, b.Free())
	assert.Zero(t, c.Pinned())

	_, err = c.AllocDMA(pmPage + 1)
	require.ErrorIs(t, err, ErrNotSupported)
	assert.Contains(t, err.Error(), "physically contiguous")
	_, err = c.AllocDMA(HugePageSize+1, HugePages())
	require.ErrorIs(t, err, ErrNotSupported)

	if b, err := c.AllocDMA(HugePageSize, HugePages()); err == nil { // where huge pages are reserved
		assert.Zero(t, b.IOVA()%HugePageSize)
		require.NoError(t, b.Free())
	} else {
		assert.ErrorIs(t, err, ErrNotSupported)
		assert.Contains(t, err.Error(), "nr_hugepages")
	}
	_, err = c.AllocDMA(64, IOVALimit(pmPage))
	assert.ErrorIs(t, err, ErrIOVAExhausted, "no RAM below 4 KiB")
}

func TestNoIOMMUMapMemory(t *testing.T) {
	seed := rand.Int63()
	rng := rand.New(rand.NewSource(seed))
	t.Logf("seed %d", seed)
	c := noiommuContainer()
	backing := make([]byte, 8*pmPage)
	for i := 0; i < 20; i++ {
		off := rng.Intn(3 * pmPage)
		n := 1 + rng.Intn(4*pmPage)
		buf := backing[off : off+n]
		m, err := c.MapMemory(buf)
		if errors.Is(err, errPFNZero) {
			t.Skipf("this process may not see physical addresses: %v", err)
		}
		require.NoError(t, err, "seed %d", seed)
		require.True(t, m.Physical())
		assert.Zero(t, m.IOVA())
		offset, pages := m.Pages4K()
		assert.Equal(t, uint64(addrOf(buf))%pmPage, offset)
		first := addrOf(buf) &^ (pmPage - 1)
		want, err := physPages(first, len(pages))
		require.NoError(t, err)
		assert.Equal(t, want, pages, "seed %d", seed)
		assert.Equal(t, (uint64(off%pmPage)+uint64(n)+pmPage-1)/pmPage, uint64(len(pages)), "seed %d: off %d n %d", seed, off, n)
		require.NoError(t, m.Unmap())
		require.NoError(t, m.Unmap(), "idempotent")
	}
	assert.Zero(t, c.Pinned())
	assert.Empty(t, c.locks)

	// Two regions sharing a page: unmapping one keeps the page pinned.
	a, err := c.MapMemory(backing[:pmPage+10])
	require.NoError(t, err)
	b, err := c.MapMemory(backing[pmPage+10 : 2*pmPage])
	require.NoError(t, err)
	shared := uint64(addrOf(backing[pmPage:]) &^ (pmPage - 1))
	assert.Equal(t, 2, c.locks[shared])
	require.NoError(t, a.Unmap())
	assert.Equal(t, 1, c.locks[shared], "still held by the second region")
	require.NoError(t, b.Unmap())
	assert.Empty(t, c.locks)
}

func TestNoIOMMUHints(t *testing.T) {
	for _, tc := range []struct {
		name  string
		param string // "" : no parameter file
		vfio  bool
		says  string
	}{
		{"vfio not loaded", "", false, "modprobe vfio enable_unsafe_noiommu_mode=1"},
		{"built without it", "", true, "CONFIG_VFIO_NOIOMMU"},
		{"parameter off", "N\n", true, "echo 1 > "},
		{"bound before", "Y\n", true, "before the mode was turned on"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			h := host{sys: filepath.Join(root, "sys"), dev: filepath.Join(root, "dev")}
			if tc.vfio {
				require.NoError(t, os.MkdirAll(filepath.Join(h.sys, "module/vfio/parameters"), 0o755))
			}
			if tc.param != "" {
				require.NoError(t, os.WriteFile(filepath.Join(h.sys, noiommuParam), []byte(tc.param), 0o644))
			}
			assert.Contains(t, h.noiommuHint(), tc.says)
			assert.Contains(t, h.noIOMMUHint(), tc.says, "the no-IOMMU error carries it")
		})
	}
}

func TestGroupPath(t *testing.T) {
	root := t.TempDir()
	h := host{sys: filepath.Join(root, "sys"), dev: filepath.Join(root, "dev")}
	require.NoError(t, os.MkdirAll(filepath.Join(h.dev, "vfio"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(h.dev, "vfio/3"), nil, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(h.dev, "vfio/noiommu-4"), nil, 0o644))
	p, no := h.groupPath(3)
	assert.Equal(t, filepath.Join(h.dev, "vfio/3"), p)
	assert.False(t, no)
	p, no = h.groupPath(4)
	assert.Equal(t, filepath.Join(h.dev, "vfio/noiommu-4"), p)
	assert.True(t, no)
	p, no = h.groupPath(5)
	assert.Equal(t, filepath.Join(h.dev, "vfio/5"), p, "neither: the IOMMU group's name, for the error")
	assert.False(t, no)
}

// The card's physical view without an IOMMU: Map gives page lists, DMA
// gives physically contiguous buffers.
func TestPhysNoIOMMU(t *testing.T) {
	dev := &Device{c: noiommuContainer()}
	p := &Phys{dev: dev, dma: newDMASet(dev, "vfio card"), maps: map[*MappedMemory]bool{}}
	buf := make([]byte, 3*pmPage)
	m, err := p.Map(buf[100:])
	if errors.Is(err, errPFNZero) {
		t.Skipf("this process may not see physical addresses: %v", err)
	}
	require.NoError(t, err)
	assert.False(t, m.Contiguous())
	assert.Equal(t, len(buf)-100, m.Len)
	assert.Equal(t, (uint64(addrOf(buf))+100)%pmPage, m.Offset)
	want, err := physPages(addrOf(buf[100:])&^(pmPage-1), len(m.Pages))
	require.NoError(t, err)
	assert.Equal(t, want, m.Pages)
	require.NoError(t, p.Unmap(m))
	assert.ErrorIs(t, p.Unmap(m), driver.ErrInvalid, "twice")

	ring, err := p.DMA().Alloc(pmPage)
	require.NoError(t, err)
	assert.Equal(t, physOrSkip(t, ring.Bytes)[0], ring.IOVA)
	require.NoError(t, p.DMA().Free(ring))
	if big, err := p.DMA().Alloc(64 << 10); err == nil { // a huge page, where reserved
		assert.Zero(t, big.IOVA%HugePageSize)
		require.NoError(t, p.DMA().Free(big))
	} else {
		assert.ErrorIs(t, err, ErrNotSupported)
		assert.Contains(t, err.Error(), "nr_hugepages")
	}
	_, err = p.DMA().Alloc(HugePageSize + 1)
	assert.ErrorIs(t, err, ErrNotSupported)
	assert.Zero(t, dev.c.Pinned())
}

// With the no-IOMMU mode on, a device without a group is one vfio-pci has
// not bound yet (binding makes its group): the error is the binding recipe.
func TestLookupNoIOMMUMode(t *testing.T) {
	f := newFakeHost(t)
	require.NoError(t, os.MkdirAll(filepath.Join(f.h.sys, "module/vfio/parameters"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(f.h.sys, noiommuParam), []byte("Y\n"), 0o644))
	f.device("0000:03:00.0", 0x10ee, 0x1e1a, -1, "")
	_, err := f.h.lookup(Address{0, 3, 0, 0})
	require.ErrorIs(t, err, ErrNotBoundToVFIO)
	assert.Contains(t, err.Error(), "driver_override")
	f.device("0000:04:00.0", 0x10ee, 0x1e1a, -1, "vfio-pci")
	_, err = f.h.lookup(Address{0, 4, 0, 0})
	require.ErrorIs(t, err, ErrNoIOMMU)
	assert.Contains(t, err.Error(), "before the mode was turned on")
}
