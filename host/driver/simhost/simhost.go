// Package simhost is the simulated host of the in-process cards (the
// model card and the sim card). Its IOMMU is an IOVA space (Space) in
// which DMA memory (driver.DMA) and the
// buffers the driver maps (driver.Phys Map) live, each at a fresh
// page-aligned IOVA with an unmapped guard page after it, and which
// refuses every card access outside them with ErrUnmapped, as a real
// IOMMU does (reads see a mapping's last page whole, as an IOMMU's do;
// writes must stay inside the buffer). Its ReadMem and WriteMem are the card's side of the bus;
// WriteMem stores a record (32 bytes or less, word aligned) as ascending
// atomic 32-bit words, as driver.Phys promises the driver. Host adds
// the interrupt vector, and ThreadCPU measures the card's own thread.
package simhost

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/openiwarp/openiwarp/host/driver"
)

// ErrUnmapped: a DMA to an address no mapping holds (an IOMMU fault).
var ErrUnmapped = errors.New("simhost: DMA outside every mapping (IOMMU fault)")

// Base is the first IOVA handed out, so that 0 is never a valid one.
const Base = 1 << 32

// MaxDMA bounds one DMA allocation.
const MaxDMA = 1 << 30

// Space is one card's IOVA space. It is safe for concurrent use. The
// card's accesses (one or more per DMA record, from the card's thread
// while the driver maps and polls on others) read an immutable table
// through an atomic pointer; Map, Unmap and the fault hooks replace it
// under mu. A read-write lock here cost about 0.8 µs of a model card's
// 64-byte round trip (docs/driver.md): its reader count's cache line
// moved between the card's thread and the driver's on every access.
type Space struct {
	mu   sync.Mutex // serialises the writers
	tab  atomic.Pointer[table]
	next uint64 // under mu
}

// table is one version of the space's mappings; it is never modified.
type table struct {
	spans   []span      // sorted by IOVA, disjoint
	refused [][2]uint64 // [start, end) the IOMMU refuses though mapped (Refuse)
}

// span is one mapping: DMA memory or a user buffer.
type span struct {
	iova uint64
	buf  []byte
}

// New returns an empty IOVA space.
func New() *Space {
	s := &Space{next: Base}
	s.tab.Store(&table{})
	return s
}

// update replaces the table with f's copy of it. Called with mu held.
func (s *Space) update(f func(t *table)) {
	old := s.tab.Load()
	t := &table{spans: slices.Clone(old.spans), refused: slices.Clone(old.refused)}
	f(t)
	s.tab.Store(t)
}

// Map makes buf reachable by the card, contiguous at a fresh IOVA.
func (s *Space) Map(buf []byte) (driver.Mapping, error) {
	if len(buf) == 0 {
		return driver.Mapping{}, fmt.Errorf("%w: mapping an empty buffer", driver.ErrInvalid)
	}
	iova := s.insert(buf)
	return driver.NewMapping(iova, nil, 0, len(buf), iova), nil
}

// Unmap revokes a Map: a later DMA to it is refused.
func (s *Space) Unmap(m driver.Mapping) error {
	iova, ok := m.Handle().(uint64)
	if !ok || !s.remove(iova) {
		return fmt.Errorf("%w: unmapping a buffer that is not mapped", driver.ErrInvalid)
	}
	return nil
}

// DMA hands out memory mapped in the space.
func (s *Space) DMA() driver.DMA { return (*dma)(s) }

// Revoke removes the mapping holding buf[0] behind its owner's back, as
// an IOMMU entry that went away (for fault tests); it reports whether
// there was one.
func (s *Space) Revoke(buf []byte) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, sp := range s.tab.Load().spans {
		if len(sp.buf) > 0 && unsafe.SliceData(sp.buf) == unsafe.SliceData(buf) {
			s.update(func(t *table) { t.spans = slices.Delete(t.spans, i, i+1) })
			return true
		}
	}
	return false
}

// Refuse makes the IOMMU refuse every DMA that touches [iova, iova+n)
// from now on, mapped or not, as an IOMMU entry gone bad behind the
// driver's back (for fault tests: the card must report the fault, and the
// driver must not hang on what it never gets).
func (s *Space) Refuse(iova uint64, n int) {
	s.mu.Lock()
	s.update(func(t *table) { t.refused = append(t.refused, [2]uint64{iova, iova + uint64(n)}) })
	s.mu.Unlock()
}

// Clear drops every mapping (the card is gone: what the driver did not
// free goes with it).
func (s *Space) Clear() {
	s.mu.Lock()
	s.update(func(t *table) { t.spans = nil })
	s.mu.Unlock()
}

// insert maps buf at the next IOVA (page aligned, a guard page after it).
func (s *Space) insert(buf []byte) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	iova := s.next
	s.next += (uint64(len(buf)) + 2*4096 - 1) &^ 4095
	// IOVAs only grow, so the new span goes last, and in place: older
	// tables end before it, so the backing array is shared rather than
	// copied (a copy per Map is quadratic in the mappings of 10,000
	// connections).
	old := s.tab.Load()
	s.tab.Store(&table{spans: append(old.spans, span{iova: iova, buf: buf}), refused: old.refused})
	return iova
}

func (s *Space) remove(iova uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	spans := s.tab.Load().spans
	i := sort.Search(len(spans), func(i int) bool { return spans[i].iova >= iova })
	if i == len(spans) || spans[i].iova != iova {
		return false
	}
	s.update(func(t *table) { t.spans = slices.Delete(t.spans, i, i+1) })
	return true
}

// Lookup is the host memory of [addr, addr+n), or an error wrapping
// ErrUnmapped.
func (s *Space) Lookup(addr uint64, n int) ([]byte, error) {
	if buf, off, ok := s.tab.Load().find(addr, n, false); ok {
		return buf[off : off+uint64(n)], nil
	}
	return nil, fmt.Errorf("%w: %d bytes at %#x", ErrUnmapped, n, addr)
}

// ReadMem is a card's DMA read. Reads see whole pages, as through a real
// IOMMU, which maps a buffer's last page whole: a card that reads full
// bus beats (64 bytes at 512 bits) may read past a buffer's end up to
// its page's, and those bytes read as zeros. Writes (WriteMem) stay
// inside the buffer, stricter than an IOMMU, so that a card writing past
// a region is caught.
func (s *Space) ReadMem(addr uint64, b []byte) error {
	buf, off, ok := s.tab.Load().find(addr, len(b), true)
	if !ok {
		return fmt.Errorf("%w: %d bytes at %#x", ErrUnmapped, len(b), addr)
	}
	n := 0
	if off < uint64(len(buf)) {
		n = copy(b, buf[off:])
	}
	clear(b[n:])
	return nil
}

// find is the mapping holding [addr, addr+n) and addr's offset in it
// (with wholePage, its last page counts to its end).
func (t *table) find(addr uint64, n int, wholePage bool) (buf []byte, off uint64, ok bool) {
	for _, r := range t.refused {
		if addr < r[1] && addr+uint64(n) > r[0] {
			return nil, 0, false
		}
	}
	i := sort.Search(len(t.spans), func(i int) bool { return t.spans[i].iova > addr }) - 1
	if i < 0 {
		return nil, 0, false
	}
	sp := t.spans[i]
	end := uint64(len(sp.buf))
	if wholePage {
		end = (end + 4095) &^ 4095
	}
	off = addr - sp.iova
	return sp.buf, off, off+uint64(n) <= end && off+uint64(n) >= off
}

// WriteMem is a card's DMA write. A record (32 bytes or less, word
// aligned) goes as ascending 32-bit atomic stores, as driver.Phys asks, so
// that the driver's atomic load of its flag word orders everything written
// before.
func (s *Space) WriteMem(addr uint64, b []byte) error {
	m, err := s.Lookup(addr, len(b))
	if err != nil {
		return err
	}
	if len(b) > 32 || addr%4 != 0 || len(b)%4 != 0 {
		copy(m, b)
		return nil
	}
	for i := 0; i < len(b); i += 4 {
		v := uint32(b[i]) | uint32(b[i+1])<<8 | uint32(b[i+2])<<16 | uint32(b[i+3])<<24
		atomic.StoreUint32((*uint32)(unsafe.Pointer(&m[i])), v)
	}
	return nil
}

// dma allocates Go memory and maps it.
type dma Space

func (d *dma) Alloc(n int) (*driver.Buffer, error) {
	if n <= 0 || n > MaxDMA {
		return nil, fmt.Errorf("%w: DMA buffer of %d bytes (1 to %d)", driver.ErrInvalid, n, MaxDMA)
	}
	b := make([]byte, n)
	return &driver.Buffer{Bytes: b, IOVA: (*Space)(d).insert(b)}, nil
}

func (d *dma) Free(b *driver.Buffer) error {
	if b == nil || !(*Space)(d).remove(b.IOVA) {
		return fmt.Errorf("%w: freeing a buffer that is not live DMA memory", driver.ErrInvalid)
	}
	return nil
}

// Host is the host side of an in-process card: its IOVA space and one
// interrupt vector. A backend's Phys embeds it for DMA, Map, Unmap,
// Vectors and WaitInterrupt, and hands it to the card as its bus
// (ReadMem, WriteMem, Interrupt).
type Host struct {
	*Space
	irq chan struct{}
}

// NewHost returns a host with an empty IOVA space.
func NewHost() *Host { return &Host{Space: New(), irq: make(chan struct{}, 1)} }

// Vectors is the number of interrupt vectors: 1.
func (h *Host) Vectors() int { return 1 }

// Interrupt raises vector v (0; others do not exist and are ignored).
func (h *Host) Interrupt(v int) {
	if v == 0 {
		select {
		case h.irq <- struct{}{}:
		default:
		}
	}
}

// WaitInterrupt blocks until vector v fires (or fired since the last
// call returned) or ctx ends.
func (h *Host) WaitInterrupt(ctx context.Context, v int) error {
	if v != 0 {
		return fmt.Errorf("%w: interrupt vector %d (the card has 1)", driver.ErrInvalid, v)
	}
	select {
	case <-h.irq:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ThreadCPU is the CPU time of the calling OS thread in ns, or -1 if it
// cannot be read: a card's goroutine, locked to its thread, measures its
// own work with it, so that the host's can be told apart.
func ThreadCPU() int64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts) != nil {
		return -1
	}
	return ts.Nano()
}
