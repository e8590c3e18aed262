package vfio

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// HugePageSize is the huge-page size DMA buffers use when asked for
// (MAP_HUGETLB with the 2 MiB size, the one every x86-64 and arm64 host has).
const HugePageSize = 2 << 20

// DMAOption adjusts AllocDMA.
type DMAOption func(*dmaConfig)

type dmaConfig struct {
	huge      bool
	limit     uint64
	align     uint64
	devRead   bool
	devWrite  bool
	direction bool // set by DeviceReadOnly/DeviceWriteOnly
}

// HugePages backs the buffer with 2 MiB huge pages (fewer IOTLB misses for
// large rings and data buffers). The host must have huge pages reserved:
// echo N > /proc/sys/vm/nr_hugepages.
func HugePages() DMAOption { return func(c *dmaConfig) { c.huge = true } }

// IOVALimit places the whole buffer below limit in IOVA space, for devices
// that cannot address all 64 bits (a 32-bit DMA engine: IOVALimit(1<<32)).
func IOVALimit(limit uint64) DMAOption { return func(c *dmaConfig) { c.limit = limit } }

// IOVAAlign aligns the buffer's IOVA to align, a power of two.
func IOVAAlign(align uint64) DMAOption { return func(c *dmaConfig) { c.align = align } }

// DeviceReadOnly maps the buffer so the device may only read it (host to
// card); a device write to it is an IOMMU fault.
func DeviceReadOnly() DMAOption {
	return func(c *dmaConfig) { c.devRead, c.devWrite, c.direction = true, false, true }
}

// DeviceWriteOnly maps the buffer so the device may only write it (card to
// host).
func DeviceWriteOnly() DMAOption {
	return func(c *dmaConfig) { c.devRead, c.devWrite, c.direction = false, true, true }
}

// DMABuffer is host memory the device reaches through the IOMMU at IOVA.
//
// The memory comes from an anonymous mmap, outside the Go heap: the garbage
// collector never moves or frees it, and VFIO pins its pages for as long as
// it is mapped (pinning is what RLIMIT_MEMLOCK limits). It is not locked
// with mlock on top of that: the kernel would count the same pages twice
// against the limit. It is excluded from fork (MADV_DONTFORK) so that a
// child never shares pages with a running DMA.
type DMABuffer struct {
	c      *Container
	mem    []byte // the whole mapping, a multiple of the page size
	n      int    // bytes asked for
	iova   uint64
	huge   bool
	mu     sync.Mutex
	mapped bool // in the IOMMU; false once freed or its container closed
	closed bool // memory released
	phys   bool // no IOMMU: pinned with mlock, iova is the physical address
}

// Bytes is the buffer's memory as the host sees it: len is the size asked
// for. It must not be used after Free. Once the container is closed (or its
// last device), the device can no longer reach the buffer, but its memory
// stays valid until Free.
func (b *DMABuffer) Bytes() []byte { return b.mem[:b.n] }

// Len is the size asked for; MappedLen the size mapped (whole pages).
func (b *DMABuffer) Len() int       { return b.n }
func (b *DMABuffer) MappedLen() int { return len(b.mem) }

// IOVA is the address the device uses for the first byte of the buffer.
func (b *DMABuffer) IOVA() uint64 { return b.iova }

// Huge reports whether the buffer is backed by huge pages.
func (b *DMABuffer) Huge() bool { return b.huge }

// AllocDMA allocates size bytes of page-aligned host memory and maps it into
// the container's IOMMU at an IOVA chosen inside the ranges the IOMMU
// reports (and the limit, if IOVALimit is given). The device may read and
// write it unless DeviceReadOnly or DeviceWriteOnly says otherwise.
func (c *Container) AllocDMA(size int, opts ...DMAOption) (*DMABuffer, error) {
	cfg := dmaConfig{devRead: true, devWrite: true}
	for _, o := range opts {
		o(&cfg)
	}
	op := fmt.Sprintf("allocate %d-byte DMA buffer", size)
	if size <= 0 {
		return nil, newErr(op, "", ErrOutOfRange, "size must be positive", nil)
	}
	page := uint64(os.Getpagesize())
	flags := unix.MAP_PRIVATE | unix.MAP_ANONYMOUS | unix.MAP_POPULATE
	if cfg.huge {
		page = HugePageSize
		flags |= unix.MAP_HUGETLB | unix.MAP_HUGE_2MB
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, newErr(op, "", ErrClosed, "container", nil)
	}
	if c.noiommu {
		return c.allocPhys(op, size, cfg)
	}
	if c.iommu == nil {
		return nil, newErr(op, "", ErrNoIOMMU, "open a device in the container first: the IOMMU is set up by the first one", nil)
	}
	page = max(page, c.iova.PageSize())
	length, ok := alignUp(uint64(size), page)
	if !ok || length > 1<<46 {
		return nil, newErr(op, "", ErrOutOfRange, "size too large", nil)
	}
	mem, err := unix.Mmap(-1, 0, int(length), unix.PROT_READ|unix.PROT_WRITE, flags)
	if err != nil {
		if cfg.huge {
			return nil, newErr(op, "", ErrNotSupported, fmt.Sprintf("no %d free 2 MiB huge pages (reserve them: echo N > /proc/sys/vm/nr_hugepages; see HugePages_Free in /proc/meminfo)", length/HugePageSize), err)
		}
		return nil, newErr(op, "", ErrOutOfRange, "mmap of anonymous memory", err)
	}
	// Best effort: a kernel without it still works, fork is only riskier.
	_ = unix.Madvise(mem, unix.MADV_DONTFORK)
	iova, err := c.iova.Alloc(length, max(cfg.align, page), cfg.limit)
	if err != nil {
		unix.Munmap(mem)
		return nil, err
	}
	var mflags uint32
	if cfg.devRead {
		mflags |= dmaMapFlagRead
	}
	if cfg.devWrite {
		mflags |= dmaMapFlagWrit
	}
	req := encodeDMAMap(uint64(uintptr(unsafe.Pointer(&mem[0]))), iova, length, mflags)
	if err := ioctlBuf(c.fd, ioctlIOMMUMapDMA, req); err != nil {
		c.iova.Free(iova)
		unix.Munmap(mem)
		return nil, c.mapError(op, length, err)
	}
	b := &DMABuffer{c: c, mem: mem, n: size, iova: iova, huge: cfg.huge, mapped: true}
	c.bufs[iova] = b
	c.pinned += length
	return b, nil
}

// mapError explains a failed VFIO_IOMMU_MAP_DMA.
func (c *Container) mapError(op string, length uint64, err error) error {
	switch {
	case errors.Is(err, unix.ENOMEM):
		var lim unix.Rlimit
		cur := "unknown"
		if unix.Getrlimit(unix.RLIMIT_MEMLOCK, &lim) == nil {
			cur = fmt.Sprintf("%d bytes", lim.Cur)
			if lim.Cur == unix.RLIM_INFINITY {
				cur = "unlimited"
			}
		}
		return newErr(op, "", ErrMemlock, fmt.Sprintf(
			"pinning %d more bytes (%d already pinned by this container) exceeds RLIMIT_MEMLOCK (now %s); "+
				"raise it: ulimit -l unlimited in the shell, LimitMEMLOCK=infinity in a systemd unit, "+
				"or a memlock line in /etc/security/limits.conf; root with CAP_IPC_LOCK is not limited",
			length, c.pinned, cur), err)
	case errors.Is(err, unix.ENOSPC):
		return newErr(op, "", ErrIOVAExhausted, "the IOMMU refuses more mappings (vfio_iommu_type1 dma_entry_limit reached)", err)
	case errors.Is(err, unix.EEXIST):
		return newErr(op, "", ErrIOVAExhausted, "the IOVA range is already mapped", err)
	}
	return newErr(op, "", ErrOutOfRange, "VFIO_IOMMU_MAP_DMA", err)
}

// Free unmaps the buffer from the IOMMU, releases its IOVA and frees the
// memory. The device must no longer use it. Free is idempotent.
func (b *DMABuffer) Free() error {
	b.c.mu.Lock()
	defer b.c.mu.Unlock()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	b.closed = true
	if b.phys {
		b.c.pinned -= uint64(len(b.mem))
	}
	err := b.c.unmapLocked(b)
	// Even if the unmap failed, munmap is safe: pages the IOMMU still maps
	// stay pinned by the kernel and are never handed to anyone else.
	if e := unix.Munmap(b.mem); e != nil {
		err = errors.Join(err, newErr("free DMA buffer", "", ErrOutOfRange, "munmap", e))
	}
	b.mem = nil
	return err
}

// unmapLocked removes b's IOMMU mapping (if it still has one) and returns
// its IOVA. Called with c.mu and b.mu held.
func (c *Container) unmapLocked(b *DMABuffer) error {
	if !b.mapped {
		return nil
	}
	b.mapped = false
	delete(c.bufs, b.iova)
	req := encodeDMAUnmap(b.iova, uint64(len(b.mem)))
	if err := ioctlBuf(c.fd, ioctlIOMMUUnmapDMA, req); err != nil {
		return newErr("unmap DMA", "", ErrOutOfRange, fmt.Sprintf("iova %#x", b.iova), err)
	}
	if got := ne.Uint64(req[16:]); got != uint64(len(b.mem)) {
		return newErr("unmap DMA", "", ErrOutOfRange, fmt.Sprintf("iova %#x: kernel unmapped %d of %d bytes", b.iova, got, len(b.mem)), nil)
	}
	// The IOVA is reusable only once nothing is mapped there.
	c.pinned -= uint64(len(b.mem))
	return c.iova.Free(b.iova)
}

// unmapAllLocked removes every IOMMU mapping of the container, before its
// last group leaves (which would tear the IOMMU down under them). The
// buffers' memory stays valid until their Free. Called with c.mu held.
func (c *Container) unmapAllLocked() error {
	var errs []error
	for _, b := range c.bufs {
		b.mu.Lock()
		errs = append(errs, c.unmapLocked(b))
		b.mu.Unlock()
	}
	return errors.Join(errs...)
}
