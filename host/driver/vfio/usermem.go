package vfio

import (
	"fmt"
	"sync"
	"unsafe"
)

// MappedMemory is memory the caller owns (an ordinary Go byte slice, a
// registered memory region) mapped into the container's IOMMU so the device
// can reach it.
//
// VFIO pins the pages for as long as they are mapped, so the kernel neither
// swaps nor migrates them; the Go garbage collector never moves heap
// memory, and MappedMemory keeps the slice referenced until Unmap, so it is
// not freed either. The IOMMU works in whole pages: every page holding a
// byte of the slice is mapped, neighbours included, so the device must be
// told the slice's bounds (the card's STag table does that).
type MappedMemory struct {
	c     *Container
	alloc *IOVAAllocator // the IOMMU set-up it was mapped in
	span  pageSpan
	iova  uint64
	mu    sync.Mutex
	buf   []byte   // referenced while mapped
	phys  []uint64 // no IOMMU: the physical address of each 4 KiB page
}

// pageSpan is the whole pages of size page that hold n bytes at addr.
type pageSpan struct {
	vaddr, length uint64 // first page and length of the mapping
	addr          uint64 // the first byte
	n             uint64
}

func spanOf(addr, n, page uint64) (pageSpan, bool) {
	start := addr &^ (page - 1)
	end, ok := alignUp(addr+n, page)
	if !ok || addr+n < addr {
		return pageSpan{}, false
	}
	return pageSpan{vaddr: start, length: end - start, addr: addr, n: n}, true
}

// pages4K is the device address of every 4 KiB page holding a byte of the
// span, given the IOVA of its first page, and the offset of the first byte
// in the first of them.
func (s pageSpan) pages4K(iova uint64) (offset uint64, pages []uint64) {
	first := s.addr &^ (4096 - 1)
	last := (s.addr + s.n - 1) &^ (4096 - 1)
	for p := first; ; p += 4096 {
		pages = append(pages, iova+(p-s.vaddr))
		if p == last {
			break
		}
	}
	return s.addr - first, pages
}

// MapMemory maps the pages holding buf into the IOMMU (read and write for
// the device unless DeviceReadOnly or DeviceWriteOnly says otherwise) at an
// IOVA inside the IOMMU's ranges and below IOVALimit if given. HugePages
// does not apply.
func (c *Container) MapMemory(buf []byte, opts ...DMAOption) (*MappedMemory, error) {
	cfg := dmaConfig{devRead: true, devWrite: true}
	for _, o := range opts {
		o(&cfg)
	}
	op := fmt.Sprintf("map %d bytes of memory for DMA", len(buf))
	if len(buf) == 0 {
		return nil, newErr(op, "", ErrOutOfRange, "nothing to map", nil)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, newErr(op, "", ErrClosed, "container", nil)
	}
	if c.noiommu {
		return c.mapPhys(op, buf)
	}
	if c.iommu == nil {
		return nil, newErr(op, "", ErrNoIOMMU, "open a device in the container first: the IOMMU is set up by the first one", nil)
	}
	page := c.iova.PageSize()
	span, ok := spanOf(uint64(uintptr(unsafe.Pointer(&buf[0]))), uint64(len(buf)), page)
	if !ok {
		return nil, newErr(op, "", ErrOutOfRange, "the buffer wraps the address space", nil)
	}
	iova, err := c.iova.Alloc(span.length, max(cfg.align, page), cfg.limit)
	if err != nil {
		return nil, err
	}
	if err := ioctlBuf(c.fd, ioctlIOMMUMapDMA, encodeDMAMap(span.vaddr, iova, span.length, cfg.mapFlags())); err != nil {
		c.iova.Free(iova)
		return nil, c.mapError(op, span.length, err)
	}
	c.pinned += span.length
	return &MappedMemory{c: c, alloc: c.iova, span: span, iova: iova, buf: buf}, nil
}

// mapFlags are the VFIO_IOMMU_MAP_DMA flags of the device's access.
func (c dmaConfig) mapFlags() uint32 {
	var flags uint32
	if c.devRead {
		flags |= dmaMapFlagRead
	}
	if c.devWrite {
		flags |= dmaMapFlagWrit
	}
	return flags
}

// MapMemory is d.Container().MapMemory.
func (d *Device) MapMemory(buf []byte, opts ...DMAOption) (*MappedMemory, error) {
	return d.c.MapMemory(buf, opts...)
}

// IOVA is the device address of the slice's first byte. Without an IOMMU
// (Physical) the pages are not contiguous and IOVA is 0: use Pages4K.
func (m *MappedMemory) IOVA() uint64 {
	if m.phys != nil {
		return 0
	}
	return m.iova + (m.span.addr - m.span.vaddr)
}

// Physical reports whether the mapping is without an IOMMU: Pages4K lists
// physical pages.
func (m *MappedMemory) Physical() bool { return m.phys != nil }

// MappedLen is the length of the mapping: whole IOMMU pages.
func (m *MappedMemory) MappedLen() uint64 { return m.span.length }

// Pages4K describes the slice as a page list: the IOVA of every 4 KiB page
// holding one of its bytes, and the offset of its first byte in the first
// page (what the card's page-list translation takes, whatever the IOMMU's
// page size).
func (m *MappedMemory) Pages4K() (offset uint64, pages []uint64) {
	if m.phys != nil {
		return m.span.addr - m.span.vaddr, m.phys
	}
	return m.span.pages4K(m.iova)
}

// Unmap removes the mapping: once it returns the device can no longer
// reach the memory, and the slice is no longer referenced. It is
// idempotent; after the container (or its last device) closed, the
// mapping is already gone and Unmap only forgets it.
func (m *MappedMemory) Unmap() error {
	m.c.mu.Lock()
	defer m.c.mu.Unlock()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.buf == nil {
		return nil
	}
	m.buf = nil
	if m.phys != nil {
		return m.unmapPhys()
	}
	if m.c.closed || m.c.iova != m.alloc {
		return nil // the IOMMU this was mapped in was torn down with everything in it
	}
	req := encodeDMAUnmap(m.iova, m.span.length)
	if err := ioctlBuf(m.c.fd, ioctlIOMMUUnmapDMA, req); err != nil {
		return newErr("unmap memory", "", ErrOutOfRange, fmt.Sprintf("iova %#x", m.iova), err)
	}
	if got := ne.Uint64(req[16:]); got != m.span.length {
		return newErr("unmap memory", "", ErrOutOfRange, fmt.Sprintf("iova %#x: kernel unmapped %d of %d bytes", m.iova, got, m.span.length), nil)
	}
	m.c.pinned -= m.span.length
	return m.c.iova.Free(m.iova)
}
