//go:build vfioguest

package edu

import (
	"encoding/binary"
	"errors"
	"math/rand"
	"os"
	"runtime"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/openiwarp/openiwarp/host/driver/vfio"
)

const noiommuParam = "/sys/module/vfio/parameters/enable_unsafe_noiommu_mode"

// physOf reads the physical address of the page holding p from
// /proc/self/pagemap, independently of the package under test.
func physOf(t *testing.T, p *byte) uint64 { return physAt(t, uint64(uintptr(unsafe.Pointer(p)))) }

func physAt(t *testing.T, va uint64) uint64 {
	t.Helper()
	f, err := os.Open("/proc/self/pagemap")
	require.NoError(t, err)
	defer f.Close()
	var b [8]byte
	_, err = f.ReadAt(b[:], int64(va/4096*8))
	require.NoError(t, err)
	e := binary.LittleEndian.Uint64(b[:])
	require.NotZero(t, e&(1<<63), "page at %#x not present", va)
	return (e&(1<<55-1))*4096 + va%4096
}

// A guest without a vIOMMU, vfio (rebuilt with CONFIG_VFIO_NOIOMMU) with
// its no-IOMMU mode off at first: the error says how to turn it on; then
// edu is driven through /dev/vfio/noiommu-N, by DMA at physical addresses.
func TestNoIOMMUMode(t *testing.T) {
	addr := eduAddr(t)
	_, err := vfio.Open(addr)
	require.ErrorIs(t, err, vfio.ErrNoIOMMU)
	assert.Contains(t, err.Error(), "echo 1 > "+noiommuParam)
	t.Logf("mode off: %v", err)
	require.NoError(t, os.WriteFile(noiommuParam, []byte("1"), 0o644))
	bindByRecipe(t, addr)
	g, err := os.Readlink("/sys/bus/pci/devices/" + addr + "/iommu_group")
	require.NoError(t, err)
	t.Logf("group %s; /dev/vfio: %v", g, lsDir(t, "/dev/vfio"))

	e := openEdu(t)
	require.True(t, e.dev.Container().NoIOMMU())
	require.Equal(t, uint32(0x010000ed), e.r32(regID))
	require.NoError(t, e.dev.EnableBusMaster())
	rng := rand.New(rand.NewSource(seed + 20))

	// DMA buffers: one page each, at their physical address.
	out, err := e.dev.AllocDMA(eduMaxDMA, vfio.IOVALimit(eduDMALimit))
	require.NoError(t, err)
	defer out.Free()
	in, err := e.dev.AllocDMA(eduMaxDMA, vfio.IOVALimit(eduDMALimit))
	require.NoError(t, err)
	defer in.Free()
	assert.Equal(t, physOf(t, &out.Bytes()[0]), out.IOVA(), "the device address is the physical address")
	assert.Equal(t, physOf(t, &in.Bytes()[0]), in.IOVA())
	p := pattern(rng, eduMaxDMA)
	copy(out.Bytes(), p)
	e.dma(out.IOVA(), 0, eduMaxDMA, false, false)
	e.dma(in.IOVA(), 0, eduMaxDMA, true, false)
	require.Equal(t, p, in.Bytes(), "DMA both ways at physical addresses")
	_, err = e.dev.AllocDMA(8192)
	assert.ErrorIs(t, err, vfio.ErrNotSupported, "larger than a page without huge pages")

	// Mapped memory (a Go buffer): a page list; edu writes into its
	// second page at the physical address listed.
	buf := make([]byte, 3*4096)
	m, err := e.dev.MapMemory(buf)
	require.NoError(t, err)
	require.True(t, m.Physical())
	off, pages := m.Pages4K()
	require.GreaterOrEqual(t, len(pages), 3)
	first := uint64(uintptr(unsafe.Pointer(&buf[0]))) &^ 4095
	for i, pg := range pages {
		assert.Equal(t, physAt(t, first+uint64(i)*4096), pg, "page %d", i)
	}
	target := pages[1] + 64
	e.dma(target, 0, 1000, true, false)
	at := 4096 - off + 64
	require.Equal(t, p[:1000], buf[at:at+1000], "edu wrote the mapped page at its physical address")
	require.NoError(t, m.Unmap())

	// Without CAP_SYS_ADMIN the kernel hides physical addresses.
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
		var b *vfio.DMABuffer
		if b, got = e.dev.AllocDMA(64); got == nil {
			b.Free()
			got = errors.New("a DMA buffer got a physical address without CAP_SYS_ADMIN")
		}
	}()
	<-done
	require.ErrorIs(t, got, vfio.ErrPFNHidden)
	t.Logf("without CAP_SYS_ADMIN: %v", got)
}

func lsDir(t *testing.T, dir string) []string {
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}
