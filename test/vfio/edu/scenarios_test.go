//go:build vfioguest

package edu

import (
	"errors"
	"fmt"
	"math/rand"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/openiwarp/openiwarp/host/driver"
	"github.com/openiwarp/openiwarp/host/driver/vfio"
)

// The main guest. Tests run in this order; the first binds edu to vfio-pci.

func TestEduBind(t *testing.T) {
	_, err := vfio.Open("0000:03:00")
	require.ErrorIs(t, err, vfio.ErrBadAddress)
	_, err = vfio.Open("0000:42:00.0")
	require.ErrorIs(t, err, vfio.ErrNoDevice)
	bindByRecipe(t, eduAddr(t))
}

func TestEduInfo(t *testing.T) {
	e := openEdu(t)
	d := e.dev
	t.Logf("edu %s in IOMMU group %d, device info %+v", d, d.IOMMUGroup(), d.Info())
	assert.True(t, d.Info().IsPCI())
	assert.False(t, d.Info().CanReset(), "edu has no reset")
	assert.GreaterOrEqual(t, d.Info().NumRegions, uint32(vfio.RegionConfig+1))

	vendor, device, err := d.IDs()
	require.NoError(t, err)
	assert.Equal(t, uint16(eduVendor), vendor)
	assert.Equal(t, uint16(eduDevice), device)

	info, err := d.Container().IOMMUInfo()
	require.NoError(t, err)
	t.Logf("IOMMU page sizes %#x, IOVA ranges %v, DMA mappings available %d", info.PageSizes, info.IOVARanges, info.DMAAvail)
	assert.NotZero(t, info.PageSizes&0x1000, "4 KiB pages")
	require.NotEmpty(t, info.IOVARanges)
	for _, r := range info.IOVARanges {
		assert.False(t, r.Start <= 0xfee00000 && 0xfee00000 <= r.End, "range %v includes the MSI window", r)
	}
	assert.True(t, info.HasDMAAvail)

	bar0, err := d.RegionInfo(vfio.RegionBAR0)
	require.NoError(t, err)
	assert.Equal(t, uint64(1<<20), bar0.Size)
	assert.True(t, bar0.Mappable() && bar0.Readable() && bar0.Writable())
	cfg, err := d.RegionInfo(vfio.RegionConfig)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, cfg.Size, uint64(256))
	_, err = d.RegionInfo(99)
	assert.ErrorIs(t, err, vfio.ErrOutOfRange)
	_, err = d.Config32(int64(cfg.Size) - 2)
	assert.ErrorIs(t, err, vfio.ErrOutOfRange)
}

func TestEduRegisters(t *testing.T) {
	e := openEdu(t)
	id := e.r32(regID)
	t.Logf("edu id register %#08x", id)
	assert.Equal(t, uint32(0xed), id&0xffff, "id low half")
	assert.Equal(t, uint32(0x010000ed), id)

	rng := rand.New(rand.NewSource(seed))
	live, err := e.bar.Reg32(regLiveness)
	require.NoError(t, err)
	for i := 0; i < 100; i++ {
		v := rng.Uint32()
		live.Store(v)
		require.Equal(t, ^v, live.Load(), "liveness of %#x", v)
	}

	// Factorial: 10! = 3628800.
	e.w32(regFactorial, 10)
	e.waitIdle(regStatus, statusBusy)
	assert.Equal(t, uint32(3628800), e.r32(regFactorial))

	// 64-bit registers (edu takes 8-byte accesses from 0x80 on).
	src, err := e.bar.Reg64(regDMASrc)
	require.NoError(t, err)
	src.Store(0x0123456789abcdef)
	assert.Equal(t, uint64(0x0123456789abcdef), src.Load())

	_, err = e.bar.Reg32(1 << 20)
	assert.ErrorIs(t, err, vfio.ErrOutOfRange)
	_, err = e.bar.Reg64(0x84)
	assert.ErrorIs(t, err, vfio.ErrOutOfRange, "unaligned")
}

// DMA of random patterns both ways, several sizes and offsets, through
// IOMMU mappings below edu's 28-bit limit; the host buffer comes back
// exactly, and nothing beyond the transfer is touched.
func TestEduDMA(t *testing.T) {
	e := openEdu(t)
	rng := rand.New(rand.NewSource(seed + 1))

	// vfio-pci leaves bus mastering off: no DMA happens.
	cmd, err := e.dev.Config16(0x04)
	require.NoError(t, err)
	t.Logf("PCI command after open: %#04x", cmd)
	require.NoError(t, e.dev.DisableBusMaster())
	out, err := e.dev.AllocDMA(eduMaxDMA, vfio.IOVALimit(eduDMALimit))
	require.NoError(t, err)
	in, err := e.dev.AllocDMA(eduMaxDMA, vfio.IOVALimit(eduDMALimit))
	require.NoError(t, err)
	require.Less(t, out.IOVA()+uint64(out.MappedLen()), uint64(eduDMALimit))
	copy(out.Bytes(), pattern(rng, eduMaxDMA))
	e.dma(out.IOVA(), 0, eduMaxDMA, false, false)
	e.dma(in.IOVA(), 0, eduMaxDMA, true, false)
	assert.Equal(t, make([]byte, eduMaxDMA), in.Bytes(), "DMA happened without bus mastering")

	require.NoError(t, e.dev.EnableBusMaster())
	cmd, err = e.dev.Config16(0x04)
	require.NoError(t, err)
	assert.NotZero(t, cmd&0x4, "bus master bit")

	for _, tc := range []struct{ size, off int }{{eduMaxDMA, 0}, {1, 0}, {7, 13}, {1000, 3000}, {4000, 95}} {
		p := pattern(rng, tc.size)
		copy(out.Bytes(), pattern(rng, eduMaxDMA))
		copy(out.Bytes()[tc.off:], p)
		clear(in.Bytes())
		e.dma(out.IOVA()+uint64(tc.off), uint64(tc.off), tc.size, false, false)
		e.dma(in.IOVA(), uint64(tc.off), tc.size, true, false)
		require.Equal(t, p, in.Bytes()[:tc.size], "%d bytes at edu offset %d", tc.size, tc.off)
		require.Equal(t, make([]byte, eduMaxDMA-tc.size), in.Bytes()[tc.size:], "bytes past the transfer")
	}
	require.NoError(t, out.Free())
	require.NoError(t, in.Free())
	require.NoError(t, out.Free(), "Free is idempotent")
}

func TestEduDMAHugePages(t *testing.T) {
	require.NoError(t, os.WriteFile("/proc/sys/vm/nr_hugepages", []byte("2\n"), 0))
	e := openEdu(t)
	require.NoError(t, e.dev.EnableBusMaster())
	huge, err := e.dev.AllocDMA(vfio.HugePageSize, vfio.HugePages(), vfio.IOVALimit(eduDMALimit))
	require.NoError(t, err)
	defer huge.Free()
	assert.True(t, huge.Huge())
	assert.Zero(t, huge.IOVA()%vfio.HugePageSize, "huge buffers get huge-page-aligned IOVAs")
	rng := rand.New(rand.NewSource(seed + 2))
	p := pattern(rng, eduMaxDMA)
	far := vfio.HugePageSize - eduMaxDMA // the far end of the huge page
	copy(huge.Bytes()[far:], p)
	e.dma(huge.IOVA()+uint64(far), 0, eduMaxDMA, false, false)
	e.dma(huge.IOVA(), 0, eduMaxDMA, true, false)
	require.Equal(t, p, huge.Bytes()[:eduMaxDMA])

	// Without huge pages reserved, the error says how to reserve them.
	require.NoError(t, os.WriteFile("/proc/sys/vm/nr_hugepages", []byte("0\n"), 0))
	_, err = e.dev.AllocDMA(4*vfio.HugePageSize, vfio.HugePages())
	require.ErrorIs(t, err, vfio.ErrNotSupported)
	assert.Contains(t, err.Error(), "nr_hugepages")
}

// A DMA to an IOVA that is not mapped, or to a mapping the device may only
// read, is stopped by the IOMMU (and logged by DMAR); the device keeps
// working afterwards.
func TestEduDMABlocked(t *testing.T) {
	e := openEdu(t)
	require.NoError(t, e.dev.EnableBusMaster())
	rng := rand.New(rand.NewSource(seed + 3))
	src, err := e.dev.AllocDMA(eduMaxDMA, vfio.IOVALimit(eduDMALimit))
	require.NoError(t, err)
	p := pattern(rng, eduMaxDMA)
	copy(src.Bytes(), p)
	e.dma(src.IOVA(), 0, eduMaxDMA, false, false)

	// A mapping the device may only read, made first so that its IOVA is
	// not the one freed below.
	ro, err := e.dev.AllocDMA(eduMaxDMA, vfio.IOVALimit(eduDMALimit), vfio.DeviceReadOnly())
	require.NoError(t, err)

	// An IOVA that was mapped and is not any more.
	gone, err := e.dev.AllocDMA(eduMaxDMA, vfio.IOVALimit(eduDMALimit))
	require.NoError(t, err)
	goneIOVA := gone.IOVA()
	require.NoError(t, gone.Free())
	log := tailKmsg(t)
	e.dma(goneIOVA, 0, eduMaxDMA, true, false)
	line := log.waitFor(t, "DMA Write", fmt.Sprintf("fault addr 0x%x", goneIOVA))
	t.Logf("unmapped IOVA: %s", line)

	// The read-only mapping.
	require.NotEqual(t, goneIOVA, ro.IOVA())
	e.dma(ro.IOVA(), 0, eduMaxDMA, true, false)
	line = log.waitFor(t, "DMA Write", fmt.Sprintf("fault addr 0x%x", ro.IOVA()))
	t.Logf("read-only mapping: %s", line)
	assert.Equal(t, make([]byte, eduMaxDMA), ro.Bytes(), "the device wrote a read-only mapping")
	// ...which the device may still read.
	clear(src.Bytes())
	copy(ro.Bytes(), p[:100])
	e.dma(ro.IOVA(), 0, 100, false, false)

	// The device still works.
	e.dma(src.IOVA(), 0, eduMaxDMA, true, false)
	require.Equal(t, p[:100], src.Bytes()[:100])
	require.Equal(t, p[100:], src.Bytes()[100:])
}

// INTx: automasked by VFIO, delivered on the eventfd, re-armed by Unmask.
func TestEduINTx(t *testing.T) {
	e := openEdu(t)
	it, err := e.dev.EnableInterrupts(vfio.INTx, 1)
	require.NoError(t, err)
	assert.True(t, it.Info().Automasked())
	for i, cause := range []uint32{0x1, 0x8000} {
		e.w32(regIRQRaise, cause)
		ev := waitIRQ(t, it.C(), fmt.Sprintf("INTx raise %#x", cause))
		assert.Equal(t, 0, ev.Vector)
		assert.Equal(t, cause, e.r32(regIRQStatus), "interrupt %d status", i)
		e.w32(regIRQAck, cause)
		require.NoError(t, it.Unmask())
	}
	// The factorial-done interrupt.
	e.w32(regStatus, statusFactIRQ)
	e.w32(regFactorial, 5)
	waitIRQ(t, it.C(), "factorial done")
	assert.Equal(t, uint32(120), e.r32(regFactorial))
	e.w32(regIRQAck, e.r32(regIRQStatus))
	require.NoError(t, it.Unmask())
	e.w32(regStatus, 0)

	_, err = e.dev.EnableInterrupts(vfio.MSI, 1)
	assert.ErrorIs(t, err, vfio.ErrNotSupported, "one interrupt type at a time")
	require.NoError(t, it.Close())
	_, open := <-it.C()
	assert.False(t, open)
}

// MSI: a DMA-completion interrupt and a raised one, on a channel and on a
// handler.
func TestEduMSI(t *testing.T) {
	e := openEdu(t)
	require.NoError(t, e.dev.EnableBusMaster())
	info, err := e.dev.IRQInfo(vfio.MSI)
	require.NoError(t, err)
	t.Logf("MSI: %+v", info)
	it, err := e.dev.EnableInterrupts(vfio.MSI, 1)
	require.NoError(t, err)
	buf, err := e.dev.AllocDMA(64, vfio.IOVALimit(eduDMALimit))
	require.NoError(t, err)
	e.dma(buf.IOVA(), 0, 64, false, true)
	waitIRQ(t, it.C(), "MSI at DMA completion")
	assert.Equal(t, uint32(dmaIRQStatus), e.r32(regIRQStatus))
	e.w32(regIRQAck, dmaIRQStatus)
	require.NoError(t, it.Close())

	got := make(chan vfio.Interrupt, 4)
	it, err = e.dev.EnableInterruptsFunc(vfio.MSI, 1, func(ev vfio.Interrupt) { got <- ev })
	require.NoError(t, err)
	e.w32(regIRQRaise, 0x42)
	waitIRQ(t, got, "MSI raised")
	assert.Equal(t, uint32(0x42), e.r32(regIRQStatus))
	e.w32(regIRQAck, 0x42)
	require.NoError(t, it.Close())

	_, err = e.dev.EnableInterrupts(vfio.MSI, 33)
	assert.ErrorIs(t, err, vfio.ErrOutOfRange)
}

// Every error path the guest can produce with edu bound and viable.
func TestEduErrors(t *testing.T) {
	addr := eduAddr(t)
	e := openEdu(t)

	err := e.dev.Reset()
	require.ErrorIs(t, err, vfio.ErrNotSupported)
	t.Logf("reset: %v", err)

	_, err = e.dev.EnableInterrupts(vfio.MSIX, 1)
	require.ErrorIs(t, err, vfio.ErrNotSupported)
	t.Logf("MSI-X: %v", err)

	_, err = e.dev.MapBAR(1)
	require.ErrorIs(t, err, vfio.ErrBARNotMappable)
	t.Logf("BAR1: %v", err)

	_, err = vfio.Open(addr)
	require.ErrorIs(t, err, vfio.ErrGroupBusy)
	t.Logf("second open: %v", err)

	// IOVA exhausted under the device's limit: 64 KiB below 64 KiB leaves
	// room for 15 pages only (page 0 is kept back).
	_, err = e.dev.AllocDMA(64<<10, vfio.IOVALimit(64<<10))
	require.ErrorIs(t, err, vfio.ErrIOVAExhausted)
	t.Logf("IOVA limit: %v", err)
	b, err := e.dev.AllocDMA(60<<10, vfio.IOVALimit(64<<10))
	require.NoError(t, err)
	require.NoError(t, b.Free())

	_, err = e.dev.AllocDMA(0)
	require.ErrorIs(t, err, vfio.ErrOutOfRange)
}

// The kernel refuses more mappings than vfio_iommu_type1's dma_entry_limit.
func TestEduDMAEntryLimit(t *testing.T) {
	const param = "/sys/module/vfio_iommu_type1/parameters/dma_entry_limit"
	old, err := os.ReadFile(param)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(param, []byte("3\n"), 0)) // read when a container opens
	defer os.WriteFile(param, old, 0)
	e := openEdu(t)
	info, err := e.dev.Container().IOMMUInfo()
	require.NoError(t, err)
	assert.Equal(t, uint32(3), info.DMAAvail)
	var bufs []*vfio.DMABuffer
	for i := 0; i < 3; i++ {
		b, err := e.dev.AllocDMA(4096)
		require.NoError(t, err)
		bufs = append(bufs, b)
	}
	_, err = e.dev.AllocDMA(4096)
	require.ErrorIs(t, err, vfio.ErrIOVAExhausted)
	require.ErrorIs(t, err, unix.ENOSPC)
	t.Logf("fourth mapping: %v", err)
	require.NoError(t, bufs[0].Free())
	b, err := e.dev.AllocDMA(4096)
	require.NoError(t, err, "a freed mapping is available again")
	require.NoError(t, b.Free())
}

// Pinning DMA memory over RLIMIT_MEMLOCK fails with ErrMemlock. Root is not
// limited (CAP_IPC_LOCK), so the allocation runs on a thread that dropped
// that capability (capabilities are per thread) with a 64 KiB limit.
func TestEduMemlock(t *testing.T) {
	e := openEdu(t)
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
		caps[0].Effective &^= 1 << unix.CAP_IPC_LOCK
		if got = unix.Capset(&hdr, &caps[0]); got != nil {
			return
		}
		var old unix.Rlimit
		if got = unix.Getrlimit(unix.RLIMIT_MEMLOCK, &old); got != nil {
			return
		}
		if got = unix.Setrlimit(unix.RLIMIT_MEMLOCK, &unix.Rlimit{Cur: 64 << 10, Max: old.Max}); got != nil {
			return
		}
		defer unix.Setrlimit(unix.RLIMIT_MEMLOCK, &old)
		var b *vfio.DMABuffer
		b, got = e.dev.AllocDMA(1 << 20)
		if got == nil {
			b.Free()
			got = errors.New("a 1 MiB mapping succeeded under a 64 KiB RLIMIT_MEMLOCK")
		}
	}()
	<-done
	require.ErrorIs(t, got, vfio.ErrMemlock)
	assert.Contains(t, got.Error(), "65536 bytes")
	assert.Contains(t, got.Error(), "ulimit -l")
	t.Logf("memlock: %v", got)
	b, err := e.dev.AllocDMA(1 << 20)
	require.NoError(t, err, "with CAP_IPC_LOCK the same mapping works")
	require.NoError(t, b.Free())
}

// After Close the device's group is free again, and registers read as a
// gone device does.
func TestEduClose(t *testing.T) {
	d, err := vfio.Open(eduAddr(t))
	require.NoError(t, err)
	bar, err := d.MapBAR(0)
	require.NoError(t, err)
	id, err := bar.Reg32(regID)
	require.NoError(t, err)
	require.Equal(t, uint32(0x010000ed), id.Load())
	buf, err := d.AllocDMA(4096)
	require.NoError(t, err)
	require.NoError(t, d.Close())
	assert.Equal(t, ^uint32(0), id.Load())
	_, err = d.MapBAR(0)
	assert.ErrorIs(t, err, vfio.ErrClosed)
	require.NoError(t, buf.Free(), "a buffer outliving its container is freed without error")
	d2, err := vfio.Open(eduAddr(t))
	require.NoError(t, err, "reopen after close")
	require.NoError(t, d2.Close())
}

// The "vfio" backend of the Card interface, opened by name as any card is,
// drives edu through Regs and DMA.
func TestEduCard(t *testing.T) {
	card, err := driver.Open("vfio:" + eduAddr(t))
	require.NoError(t, err)
	info := card.Info()
	t.Logf("card: %+v", info)
	assert.Equal(t, "vfio", info.Kind)
	assert.Equal(t, "vfio:"+eduAddr(t), info.Name)
	regs := card.Regs()
	id, err := regs.Read32(regID)
	require.NoError(t, err)
	assert.Equal(t, uint32(0x010000ed), id)
	require.NoError(t, regs.Write32(regLiveness, 0x5a5a0000))
	live, err := regs.Read32(regLiveness)
	require.NoError(t, err)
	assert.Equal(t, uint32(0xa5a5ffff), live)
	_, err = regs.Read32(1 << 20)
	assert.ErrorIs(t, err, driver.ErrInvalid)

	// A round trip through the card's DMA buffers (Open enabled bus mastering).
	out, err := card.DMA().Alloc(eduMaxDMA)
	require.NoError(t, err)
	in, err := card.DMA().Alloc(eduMaxDMA)
	require.NoError(t, err)
	require.Less(t, in.IOVA+eduMaxDMA, uint64(eduDMALimit))
	rng := rand.New(rand.NewSource(seed + 4))
	p := pattern(rng, eduMaxDMA)
	copy(out.Bytes, p)
	for _, step := range []struct {
		src, dst, cmd uint64
	}{{out.IOVA, eduBuffer, dmaStart}, {eduBuffer, in.IOVA, dmaStart | dmaToRAM}} {
		require.NoError(t, regs.Write64(regDMASrc, step.src))
		require.NoError(t, regs.Write64(regDMADst, step.dst))
		require.NoError(t, regs.Write64(regDMACount, eduMaxDMA))
		require.NoError(t, regs.Write64(regDMACmd, step.cmd))
		for {
			v, err := regs.Read32(regDMACmd)
			require.NoError(t, err)
			if v&dmaStart == 0 {
				break
			}
		}
	}
	require.Equal(t, p, in.Bytes)
	require.NoError(t, card.DMA().Free(out))
	assert.ErrorIs(t, card.DMA().Free(out), driver.ErrInvalid, "double free")

	// What the register map does not define yet says so.
	_, err = card.AllocPD()
	assert.ErrorIs(t, err, vfio.ErrNotSupported)
	_, err = card.CreateCQ(16)
	assert.ErrorIs(t, err, vfio.ErrNotSupported)

	require.NoError(t, card.Close())
	_, err = regs.Read32(regID)
	assert.ErrorIs(t, err, driver.ErrClosed)
	_, err = card.DMA().Alloc(64)
	assert.ErrorIs(t, err, driver.ErrClosed)
	_, open := <-card.Events()
	assert.False(t, open)
}

// Guest without an IOMMU: edu has no IOMMU group.
func TestNoIOMMU(t *testing.T) {
	_, err := vfio.Open(eduAddr(t))
	require.ErrorIs(t, err, vfio.ErrNoIOMMU)
	assert.Contains(t, err.Error(), "intel_iommu=on")
	// Debian's 6.1 kernel is built without CONFIG_VFIO_NOIOMMU: the error
	// says that the no-IOMMU mode is not there either.
	assert.Contains(t, err.Error(), "CONFIG_VFIO_NOIOMMU")
	t.Logf("%v", err)
}

// Guest whose VT-d has no interrupt remapping: VFIO refuses the IOMMU.
func TestNoIntremap(t *testing.T) {
	addr := eduAddr(t)
	bindByRecipe(t, addr)
	_, err := vfio.Open(addr)
	require.ErrorIs(t, err, vfio.ErrNoIOMMU)
	require.ErrorIs(t, err, unix.EPERM)
	assert.Contains(t, err.Error(), "interrupt remapping")
	t.Logf("%v", err)
}

// Guest where edu sits behind a PCIe-to-PCI bridge with a virtio device
// bound to virtio-pci: one IOMMU group, not viable until that device is
// handed over too, with the commands the error gives.
func TestNotViable(t *testing.T) {
	addr := eduAddr(t)
	bindByRecipe(t, addr)
	_, err := vfio.Open(addr)
	require.ErrorIs(t, err, vfio.ErrGroupNotViable)
	assert.Contains(t, err.Error(), "(bound to virtio-pci)")
	t.Logf("%v", err)
	// The message ends with the commands that release the other device.
	runRecipe(t, err.Error()[strings.Index(err.Error(), "bind it to vfio-pci"):])
	d, err := vfio.Open(addr)
	require.NoError(t, err)
	defer d.Close()
	bar, err := d.MapBAR(0)
	require.NoError(t, err)
	id, err := bar.Read32(regID)
	require.NoError(t, err)
	assert.Equal(t, uint32(0x010000ed), id)
	// The other devices of the group, now bound to vfio-pci, open in the
	// same container (a second container could not take the group).
	members, err := os.ReadDir("/sys/bus/pci/devices/" + addr + "/iommu_group/devices")
	require.NoError(t, err)
	opened := 0
	for _, m := range members {
		drv, _ := os.Readlink("/sys/bus/pci/devices/" + m.Name() + "/driver")
		if m.Name() == addr || !strings.HasSuffix(drv, "/vfio-pci") {
			continue
		}
		_, err := vfio.Open(m.Name())
		require.ErrorIs(t, err, vfio.ErrGroupBusy, "%s in its own container", m.Name())
		other, err := d.Container().Open(m.Name())
		require.NoError(t, err, m.Name())
		assert.Equal(t, d.IOMMUGroup(), other.IOMMUGroup())
		require.NoError(t, other.Close())
		opened++
	}
	assert.NotZero(t, opened, "no other vfio-pci device in the group")
}

// The card's physical view identifies the card by its own ID register:
// edu's reads 0x010000ed, so OpenPhys refuses it, says what it read, and
// leaves the device free.
func TestEduPhys(t *testing.T) {
	_, err := vfio.OpenPhys(eduAddr(t))
	require.ErrorIs(t, err, vfio.ErrNotCard)
	var ie *vfio.IdentityError
	require.True(t, errors.As(err, &ie), "%v", err)
	assert.Equal(t, uint32(0x010000ed), ie.ID)
	assert.Contains(t, err.Error(), "ID register reads 0x010000ed")
	t.Logf("%v", err)
	d, err := vfio.Open(eduAddr(t))
	require.NoError(t, err, "the refused device is released")
	require.NoError(t, d.Close())
}
