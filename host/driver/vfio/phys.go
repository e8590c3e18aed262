package vfio

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/openiwarp/openiwarp/host/driver"
	"github.com/openiwarp/openiwarp/host/driver/cardspec"
)

// ErrNotCard: the device's ID register does not read as the openiwarp
// card's, or its host interface major version is one this driver does not
// know. The *Error's Err is an *IdentityError with what was read.
var ErrNotCard = errors.New("not an openiwarp card")

// IdentityError is what a device's identification registers read when they
// are not the card's (cardspec.ID and cardspec.Version of BAR0).
type IdentityError struct {
	ID      uint32 // BAR0 cardspec.ID: device << 16 | vendor
	Version uint32 // BAR0 cardspec.Version: major << 16 | minor
}

func (e *IdentityError) Error() string {
	want := uint32(cardspec.DeviceID)<<cardspec.IDDeviceShift | uint32(cardspec.VendorID)<<cardspec.IDVendorShift
	switch {
	case e.ID == 0xffffffff:
		return fmt.Sprintf("ID register reads %#08x: the device does not answer on BAR0 "+
			"(memory decoding off, a link down, or a bitstream without the card's registers)", e.ID)
	case e.ID != want:
		return fmt.Sprintf("ID register reads %#08x (vendor %#04x, device %#04x), the card's is %#08x (vendor %#04x, device %#04x)",
			e.ID, e.ID>>cardspec.IDVendorShift&cardspec.IDVendorMask, e.ID>>cardspec.IDDeviceShift&cardspec.IDDeviceMask,
			want, cardspec.VendorID, cardspec.DeviceID)
	}
	return fmt.Sprintf("host interface version %d.%d (VERSION register %#08x); this driver speaks major version %d",
		e.Version>>cardspec.VersionMajorShift&cardspec.VersionMajorMask, e.Version>>cardspec.VersionMinorShift&cardspec.VersionMinorMask,
		e.Version, cardspec.InterfaceVersion>>cardspec.VersionMajorShift)
}

// checkIdentity accepts the card's ID register and any minor version of
// the major version this driver speaks.
func checkIdentity(dev string, id, version uint32) error {
	want := uint32(cardspec.DeviceID)<<cardspec.IDDeviceShift | uint32(cardspec.VendorID)<<cardspec.IDVendorShift
	major := func(v uint32) uint32 { return v >> cardspec.VersionMajorShift & cardspec.VersionMajorMask }
	if id == want && major(version) == major(cardspec.InterfaceVersion) {
		return nil
	}
	return newErr("identify", dev, ErrNotCard, "", &IdentityError{ID: id, Version: version})
}

// Phys is the openiwarp card's physical view (driver.Phys) through VFIO:
// Regs is BAR0 through the mmapped accessors, DMA allocates buffers mapped
// for the card, Map maps a caller's buffer (a memory region) and Unmap
// revokes it, interrupt vectors are MSI-X (or MSI) vectors on eventfds. The
// driver of the card (host/driver/rnic) runs on it.
//
// OpenPhys identifies the card by its own registers, not by its PCI IDs:
// a device whose ID register is not the card's, or whose host interface
// has another major version, is refused with ErrNotCard before anything is
// written to it.
type Phys struct {
	dev     *Device
	bar     *BAR
	dma     *dmaSet
	irqs    *Interrupts // nil: the device has no MSI-X or MSI
	irqDev  *Device     // PhysOptions.Interrupts: the device irqs are on; nil: dev
	vec     *vectorWaiter
	id, ver uint32

	mu     sync.Mutex
	maps   map[*MappedMemory]bool
	closed bool
}

var _ driver.Phys = (*Phys)(nil)

// OpenPhys opens the card at the PCI address addr (bound to vfio-pci),
// turns bus mastering on, maps BAR0, checks the identification registers
// and enables its interrupt vectors (MSI-X if the device has it, else MSI,
// as many as it offers).
func OpenPhys(addr string) (*Phys, error) { return OpenPhysWith(addr, PhysOptions{}) }

// PhysOptions adjust OpenPhysWith.
type PhysOptions struct {
	// Interrupts, if set, is the PCI address of another device (bound to
	// vfio-pci) whose MSI-X vectors are the card's: the card's vector v
	// is that device's MSI-X vector v. It is how a QEMU guest takes the
	// interrupts of a card served by test/cardserve, whose proxy device
	// cannot raise any: cardserve rings the guest's ivshmem-doorbell
	// device instead. Without it the card's own MSI-X (else MSI) are used.
	Interrupts string
}

// OpenPhysWith is OpenPhys with options.
func OpenPhysWith(addr string, o PhysOptions) (*Phys, error) {
	dev, err := Open(addr)
	if err != nil {
		return nil, err
	}
	var irqDev *Device
	if o.Interrupts != "" {
		if irqDev, err = Open(o.Interrupts); err != nil {
			dev.Close()
			return nil, fmt.Errorf("the device whose MSI-X vectors are the card's: %w", err)
		}
	}
	p, err := newPhys(dev, irqDev)
	if err != nil {
		dev.Close()
		if irqDev != nil {
			irqDev.Close()
		}
		return nil, err
	}
	return p, nil
}

func newPhys(dev, irqDev *Device) (*Phys, error) {
	if err := dev.EnableBusMaster(); err != nil {
		return nil, err
	}
	bar, err := dev.MapBAR(0)
	if err != nil {
		return nil, err
	}
	p := &Phys{dev: dev, bar: bar, dma: newDMASet(dev, "vfio card"), maps: map[*MappedMemory]bool{}, irqDev: irqDev}
	if p.id, err = bar.Read32(cardspec.ID); err != nil {
		return nil, err
	}
	if p.ver, err = bar.Read32(cardspec.Version); err != nil {
		return nil, err
	}
	if err := checkIdentity(dev.String(), p.id, p.ver); err != nil {
		return nil, err
	}
	types := []IRQType{MSIX, MSI}
	src := dev
	if irqDev != nil {
		// An MSI is a memory write of the device: without bus mastering
		// (off once vfio-pci has the device) it never leaves it.
		if err := irqDev.EnableBusMaster(); err != nil {
			return nil, err
		}
		types, src = []IRQType{MSIX}, irqDev
	}
	for _, t := range types {
		info, err := src.IRQInfo(t)
		if err != nil || info.Count == 0 || !info.Eventfd() {
			continue
		}
		p.vec = newVectorWaiter(int(info.Count))
		if p.irqs, err = src.EnableInterruptsFunc(t, int(info.Count), p.vec.notify); err != nil {
			return nil, err
		}
		break
	}
	if p.vec == nil {
		if irqDev != nil {
			return nil, newErr("interrupts", irqDev.String(), ErrNotSupported, "the device named for the card's interrupts has no MSI-X", nil)
		}
		p.vec = newVectorWaiter(0)
	}
	return p, nil
}

// Device is the VFIO device under the card.
func (p *Phys) Device() *Device { return p.dev }

// Regs is BAR0.
func (p *Phys) Regs() driver.Regs { return barRegs{p.bar} }

// DMA allocates buffers the card reaches (IOMMU-mapped). Without an IOMMU
// a buffer must be physically contiguous: up to 4 KiB it is one pinned
// page, up to 2 MiB one huge page (reserved in vm.nr_hugepages), larger
// fails with ErrNotSupported; so every ring the driver keeps must fit in
// 2 MiB.
func (p *Phys) DMA() driver.DMA { return p.dma }

// Map maps the pages holding buf into the IOMMU for the card (read and
// write) and returns the contiguous IOVA range it sees them at. Without an
// IOMMU it pins the pages and returns them as a page list of physical
// addresses (Mapping.Pages).
func (p *Phys) Map(buf []byte) (driver.Mapping, error) {
	if err := p.live(); err != nil {
		return driver.Mapping{}, err
	}
	m, err := p.dev.MapMemory(buf)
	if err != nil {
		return driver.Mapping{}, cardErr(err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		m.Unmap()
		return driver.Mapping{}, fmt.Errorf("%w: vfio card %s", driver.ErrClosed, p.dev)
	}
	p.maps[m] = true
	if m.Physical() {
		off, pages := m.Pages4K()
		return driver.NewMapping(0, pages, off, len(buf), m), nil
	}
	return driver.NewMapping(m.IOVA(), nil, 0, len(buf), m), nil
}

// Unmap revokes a mapping Map returned; once it returns the card can no
// longer reach the buffer.
func (p *Phys) Unmap(mp driver.Mapping) error {
	m, _ := mp.Handle().(*MappedMemory)
	p.mu.Lock()
	ok := m != nil && p.maps[m]
	delete(p.maps, m)
	p.mu.Unlock()
	if !ok {
		return fmt.Errorf("%w: vfio card %s: mapping of %d bytes at IOVA %#x is not a live mapping of this card",
			driver.ErrInvalid, p.dev, mp.Len, mp.IOVA)
	}
	return cardErr(m.Unmap())
}

// Vectors is the number of interrupt vectors enabled (0 if the device has
// neither MSI-X nor MSI).
func (p *Phys) Vectors() int { return p.vec.vectors() }

// WaitInterrupt blocks until vector v fires, or fired since the last call
// returned, or ctx ends (its error, wrapped) or Phys closes (ErrClosed).
func (p *Phys) WaitInterrupt(ctx context.Context, v int) error {
	return p.vec.wait(ctx, v, p.dev.String())
}

// Describe names the card, where it is and how it is reached.
func (p *Phys) Describe() string {
	irq := "no interrupts"
	if p.irqs != nil {
		irq = fmt.Sprintf("%d %s vectors", p.irqs.Vectors(), p.irqs.Type())
		if p.irqDev != nil {
			irq += " of " + p.irqDev.String()
		}
	}
	group := fmt.Sprintf("IOMMU group %d", p.dev.IOMMUGroup())
	if p.dev.c.NoIOMMU() {
		group = fmt.Sprintf("no-IOMMU group %d, physical addresses", p.dev.IOMMUGroup())
	}
	return fmt.Sprintf("openiwarp card [%04x:%04x] interface %d.%d at %s through VFIO (%s), BAR0 %d KiB, %s",
		p.id&0xffff, p.id>>16, p.ver>>16, p.ver&0xffff, p.dev, group, p.bar.Size()>>10, irq)
}

func (p *Phys) live() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return fmt.Errorf("%w: vfio card %s", driver.ErrClosed, p.dev)
	}
	return nil
}

// Close wakes interrupt waiters with ErrClosed, unmaps what the driver left
// mapped, frees its DMA buffers and closes the device (interrupts off,
// BAR0 unmapped). It is idempotent.
func (p *Phys) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	maps := p.maps
	p.maps = nil
	p.mu.Unlock()
	p.vec.close()
	var errs []error
	if p.irqs != nil {
		errs = append(errs, p.irqs.Close())
	}
	for m := range maps {
		errs = append(errs, m.Unmap())
	}
	errs = append(errs, p.dma.close(), p.dev.Close())
	if p.irqDev != nil {
		errs = append(errs, p.irqDev.Close())
	}
	return errors.Join(errs...)
}

// barRegs is driver.Regs over a BAR.
type barRegs struct{ b *BAR }

func (r barRegs) Read32(off uint32) (uint32, error) {
	v, err := r.b.Read32(uint64(off))
	return v, cardErr(err)
}

func (r barRegs) Write32(off uint32, v uint32) error { return cardErr(r.b.Write32(uint64(off), v)) }

func (r barRegs) Read64(off uint32) (uint64, error) {
	v, err := r.b.Read64(uint64(off))
	return v, cardErr(err)
}

func (r barRegs) Write64(off uint32, v uint64) error { return cardErr(r.b.Write64(uint64(off), v)) }

// vectorWaiter turns interrupts delivered by Interrupts into
// WaitInterrupt: one pending flag per vector (a channel of one), set by
// the delivery and consumed by the waiter, so an interrupt that fired
// while nobody waited is not lost and several coalesce into one wake-up.
type vectorWaiter struct {
	fired []chan struct{}
	done  chan struct{}
	once  sync.Once
}

func newVectorWaiter(n int) *vectorWaiter {
	w := &vectorWaiter{fired: make([]chan struct{}, n), done: make(chan struct{})}
	for i := range w.fired {
		w.fired[i] = make(chan struct{}, 1)
	}
	return w
}

func (w *vectorWaiter) vectors() int { return len(w.fired) }

// notify marks ev's vector as fired.
func (w *vectorWaiter) notify(ev Interrupt) {
	if ev.Vector < 0 || ev.Vector >= len(w.fired) {
		return
	}
	select {
	case w.fired[ev.Vector] <- struct{}{}:
	default: // already pending
	}
}

func (w *vectorWaiter) wait(ctx context.Context, v int, dev string) error {
	if v < 0 || v >= len(w.fired) {
		return fmt.Errorf("%w: vfio card %s: interrupt vector %d of %d", driver.ErrInvalid, dev, v, len(w.fired))
	}
	select {
	case <-w.done:
		return fmt.Errorf("%w: vfio card %s: waiting for interrupt vector %d", driver.ErrClosed, dev, v)
	default:
	}
	select {
	case <-w.fired[v]:
		return nil
	case <-w.done:
		return fmt.Errorf("%w: vfio card %s: waiting for interrupt vector %d", driver.ErrClosed, dev, v)
	case <-ctx.Done():
		return fmt.Errorf("vfio card %s: waiting for interrupt vector %d: %w", dev, v, ctx.Err())
	}
}

func (w *vectorWaiter) close() { w.once.Do(func() { close(w.done) }) }
