package vfio

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The no-IOMMU path. With vfio's enable_unsafe_noiommu_mode=1, vfio-pci
// gives a device without an IOMMU a group of its own, /dev/vfio/noiommu-N.
// Nothing translates or confines the device's DMA: it uses physical
// addresses, which this package finds in /proc/self/pagemap for memory it
// has pinned with mlock. DMA buffers must be physically contiguous, so a
// buffer is one 4 KiB page or, with HugePages, one 2 MiB huge page; mapped
// memory (memory regions) is handed to the device page by page.

// noiommuParam is vfio's module parameter that enables the mode.
const noiommuParam = "module/vfio/parameters/enable_unsafe_noiommu_mode"

// noiommuHint says how to reach the no-IOMMU mode on this host, for a
// device that has no IOMMU group.
func (h host) noiommuHint() string {
	p := filepath.Join(h.sys, noiommuParam)
	v, err := os.ReadFile(p)
	switch {
	case err != nil && errors.Is(err, os.ErrNotExist):
		if _, err := os.Stat(filepath.Join(h.sys, "module/vfio")); err != nil {
			return "or, without an IOMMU, load vfio in no-IOMMU mode: modprobe vfio enable_unsafe_noiommu_mode=1, then modprobe vfio-pci"
		}
		return "and this kernel's vfio has no no-IOMMU mode (" + p + " is missing: built without CONFIG_VFIO_NOIOMMU), " +
			"so without an IOMMU the device cannot be used through VFIO; use a kernel with CONFIG_VFIO_NOIOMMU=y"
	case err != nil:
		return "(" + p + ": " + err.Error() + ")"
	case strings.TrimSpace(string(v)) != "Y":
		return "or, without an IOMMU (unsafe: the device can reach all memory), turn on vfio's no-IOMMU mode and rebind the device: " +
			"echo 1 > " + p + "; then unbind it and write its address to " + filepath.Join(h.sys, "bus/pci/drivers_probe")
	}
	return "although vfio's no-IOMMU mode is on: the device was bound to vfio-pci before the mode was turned on; unbind it and " +
		"write its address to " + filepath.Join(h.sys, "bus/pci/drivers_probe")
}

// noiommuOn reports whether vfio's no-IOMMU mode is on.
func (h host) noiommuOn() bool {
	v, err := os.ReadFile(filepath.Join(h.sys, noiommuParam))
	return err == nil && strings.TrimSpace(string(v)) == "Y"
}

// groupPath is the group file of IOMMU group n and whether it is a
// no-IOMMU group.
func (h host) groupPath(n int) (string, bool) {
	p := filepath.Join(h.dev, "vfio", strconv.Itoa(n))
	if _, err := os.Stat(p); err != nil {
		np := filepath.Join(h.dev, "vfio", "noiommu-"+strconv.Itoa(n))
		if _, err := os.Stat(np); err == nil {
			return np, true
		}
	}
	return p, false
}

// NoIOMMU reports whether the container runs without an IOMMU: DMA
// addresses are physical and DMA is not confined.
func (c *Container) NoIOMMU() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.noiommu
}

func addrOf(b []byte) uintptr { return uintptr(unsafe.Pointer(&b[0])) }

// allocPhys is AllocDMA without an IOMMU: one 4 KiB page, or one 2 MiB
// huge page with HugePages, pinned, at its physical address. Called with
// c.mu held.
func (c *Container) allocPhys(op string, size int, cfg dmaConfig) (*DMABuffer, error) {
	page, flags := pmPage, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE
	if cfg.huge {
		page, flags = HugePageSize, flags|unix.MAP_HUGETLB|unix.MAP_HUGE_2MB
	}
	if size > page {
		return nil, newErr(op, "", ErrNotSupported, fmt.Sprintf("without an IOMMU a DMA buffer must be physically contiguous: "+
			"at most one 4 KiB page, or one 2 MiB huge page with HugePages (asked for %d bytes)", size), nil)
	}
	mem, err := unix.Mmap(-1, 0, page, unix.PROT_READ|unix.PROT_WRITE, flags)
	if err != nil {
		if cfg.huge {
			return nil, newErr(op, "", ErrNotSupported, "no free 2 MiB huge page (reserve them: echo N > /proc/sys/vm/nr_hugepages)", err)
		}
		return nil, newErr(op, "", ErrOutOfRange, "mmap of anonymous memory", err)
	}
	_ = unix.Madvise(mem, unix.MADV_DONTFORK)
	pages, err := pinPages(mem)
	if err != nil {
		unix.Munmap(mem)
		return nil, err
	}
	for i := 1; i < len(pages); i++ { // a huge page is contiguous; say so if not
		if pages[i] != pages[0]+uint64(i)*pmPage {
			unix.Munmap(mem)
			return nil, newErr(op, "", ErrNotSupported, fmt.Sprintf("page %d of the huge page is at %#x, not %#x", i, pages[i], pages[0]+uint64(i)*pmPage), nil)
		}
	}
	if cfg.limit != 0 && pages[0]+uint64(page) > cfg.limit {
		unix.Munmap(mem)
		return nil, newErr(op, "", ErrIOVAExhausted, fmt.Sprintf("the memory the kernel gave is at physical %#x, above the device's limit %#x", pages[0], cfg.limit), nil)
	}
	c.pinned += uint64(page)
	return &DMABuffer{c: c, mem: mem, n: size, iova: pages[0], huge: cfg.huge, phys: true}, nil
}

// mapPhys is MapMemory without an IOMMU: the pages holding buf pinned and
// listed by physical address. Called with c.mu held.
func (c *Container) mapPhys(op string, buf []byte) (*MappedMemory, error) {
	span, ok := spanOf(uint64(addrOf(buf)), uint64(len(buf)), pmPage)
	if !ok {
		return nil, newErr(op, "", ErrOutOfRange, "the buffer wraps the address space", nil)
	}
	locked := unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(&buf[0]), -int(span.addr-span.vaddr))), span.length)
	for p := span.vaddr; p < span.vaddr+span.length; p += pmPage {
		c.locks[p]++
	}
	pages, err := pinPages(locked)
	if err != nil {
		return nil, errors.Join(err, c.unpin(span))
	}
	c.pinned += span.length
	return &MappedMemory{c: c, span: span, buf: buf, phys: pages}, nil
}

// unmapPhys unpins mapped memory. mlock does not count, and two regions
// of the Go heap may share a page, so a page is unlocked only when no
// mapping holds it any more. Called with c.mu and m.mu held.
func (m *MappedMemory) unmapPhys() error {
	m.c.pinned -= m.span.length
	return m.c.unpin(m.span)
}

// unpin drops the span's hold on its pages, unlocking those no mapping
// holds any more. Called with c.mu held.
func (c *Container) unpin(span pageSpan) error {
	var errs []error
	for p := span.vaddr; p < span.vaddr+span.length; p += pmPage {
		if c.locks[p]--; c.locks[p] > 0 {
			continue
		}
		delete(c.locks, p)
		if _, _, e := unix.Syscall(unix.SYS_MUNLOCK, uintptr(p), pmPage, 0); e != 0 {
			errs = append(errs, newErr("unpin memory", "", ErrOutOfRange, fmt.Sprintf("munlock %#x", p), e))
		}
	}
	return errors.Join(errs...)
}
