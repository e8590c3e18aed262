package cardserve_test

import (
	"context"
	"fmt"
	"sync"
	"unsafe"

	"github.com/openiwarp/openiwarp/host/driver"
)

// fakePhys is the driver's physical view of the card through fakeQEMU:
// what host/driver/vfio gives the driver in a guest, without the guest.
// Every register access is a proxy message; DMA memory comes from the top
// half of guest RAM (above 4 GiB), buffers for memory regions from the
// bottom half (ramBuf), at their guest-physical addresses.
type fakePhys struct {
	q *fakeQEMU

	mu         sync.Mutex
	next, high uint64 // bump allocators: DMA memory (top half), buffers (bottom half)
	live       map[uint64]int
	poisoned   map[*byte]bool // Map says these are at fakeHole
	holeAlloc  int            // Alloc says its holeAlloc-th buffer (from 1) is at fakeHole
	allocs     int
}

// fakeHole is a guest-physical address in the hole below 4 GiB.
const fakeHole = 0xc000_0000

// poison makes Map place buf at fakeHole, outside guest RAM.
func (p *fakePhys) poison(buf []byte) {
	p.mu.Lock()
	p.poisoned[&buf[0]] = true
	p.mu.Unlock()
}

func newFakePhys(q *fakeQEMU) *fakePhys {
	return &fakePhys{q: q, next: q.reg[0][1], high: 4096, live: map[uint64]int{}, poisoned: map[*byte]bool{}}
}

func (p *fakePhys) Regs() driver.Regs { return fakeRegs{p.q} }
func (p *fakePhys) DMA() driver.DMA   { return fakeDMA{p} }

// ramBuf is n bytes of the bottom half of guest RAM (what a guest
// process's memory is: guest RAM).
func (p *fakePhys) ramBuf(n int) []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	off := p.high
	p.high += (uint64(n) + 4095) &^ 4095
	if p.high > p.q.reg[0][1] {
		panic("fake guest RAM exhausted")
	}
	return p.q.ram[off : off+uint64(n) : off+uint64(n)]
}

// offsetOf is buf's offset in guest RAM, or false.
func (p *fakePhys) offsetOf(buf []byte) (uint64, bool) {
	base := uintptr(unsafe.Pointer(&p.q.ram[0]))
	a := uintptr(unsafe.Pointer(&buf[0]))
	if a < base || a+uintptr(len(buf)) > base+uintptr(len(p.q.ram)) {
		return 0, false
	}
	return uint64(a - base), true
}

func (p *fakePhys) Map(buf []byte) (driver.Mapping, error) {
	p.mu.Lock()
	bad := p.poisoned[&buf[0]]
	p.mu.Unlock()
	if bad {
		return driver.NewMapping(fakeHole, nil, 0, len(buf), uint64(fakeHole)), nil
	}
	off, ok := p.offsetOf(buf)
	if !ok || off/p.q.reg[0][1] != (off+uint64(len(buf))-1)/p.q.reg[0][1] {
		return driver.Mapping{}, fmt.Errorf("%w: a buffer outside one region of guest RAM", driver.ErrInvalid)
	}
	gpa := p.q.gpa(off)
	return driver.NewMapping(gpa, nil, 0, len(buf), gpa), nil
}

func (p *fakePhys) Unmap(driver.Mapping) error { return nil }
func (p *fakePhys) Vectors() int               { return len(p.q.irq) }
func (p *fakePhys) WaitInterrupt(ctx context.Context, v int) error {
	return p.q.waitIRQ(ctx, v)
}
func (p *fakePhys) Describe() string { return "the card through cardserve and a fake QEMU" }
func (p *fakePhys) Close() error     { return nil }

type fakeDMA struct{ p *fakePhys }

// Alloc hands out memory aligned to its size rounded up to a power of two
// (rings want that), from the top half of guest RAM.
func (d fakeDMA) Alloc(n int) (*driver.Buffer, error) {
	p := d.p
	p.mu.Lock()
	defer p.mu.Unlock()
	align := uint64(4096)
	for align < uint64(n) {
		align <<= 1
	}
	off := (p.next + align - 1) &^ (align - 1)
	if off+uint64(n) > uint64(len(p.q.ram)) {
		return nil, fmt.Errorf("%w: fake guest RAM exhausted", driver.ErrInvalid)
	}
	p.next = off + uint64(n)
	b := p.q.ram[off : off+uint64(n) : off+uint64(n)]
	clear(b)
	iova := p.q.gpa(off)
	if p.allocs++; p.allocs == p.holeAlloc {
		iova = fakeHole
	}
	p.live[iova] = n
	return &driver.Buffer{Bytes: b, IOVA: iova}, nil
}

func (d fakeDMA) Free(b *driver.Buffer) error {
	d.p.mu.Lock()
	defer d.p.mu.Unlock()
	if d.p.live[b.IOVA] != len(b.Bytes) {
		return fmt.Errorf("%w: not a live DMA buffer", driver.ErrInvalid)
	}
	delete(d.p.live, b.IOVA)
	return nil
}

// fakeRegs is BAR0 through the proxy: each access one message.
type fakeRegs struct{ q *fakeQEMU }

func (r fakeRegs) Read32(off uint32) (uint32, error) { return uint32(r.q.barRead(off, 4)), nil }
func (r fakeRegs) Write32(off uint32, v uint32) error {
	r.q.barWrite(off, uint64(v), 4)
	return nil
}
func (r fakeRegs) Read64(off uint32) (uint64, error) { return r.q.barRead(off, 8), nil }
func (r fakeRegs) Write64(off uint32, v uint64) error {
	r.q.barWrite(off, v, 8)
	return nil
}
