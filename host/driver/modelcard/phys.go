// Package modelcard is the "model" card, the default: the one driver of
// the openiwarp card (host/driver/rnic) over the card's transaction-level
// model (host/driver/cardmodel), in process and in pure Go, so every
// `go test` drives the real driver's rings, doorbells, STag table
// programming and stream bridge. The verbs suite and the fault-injection
// runs (verbstest.Run, verbstest.RunFaults) pass on it.
//
// Phys is the physical view it gives the driver: BAR0 accesses call the
// model (serialised, as a bus does), a goroutine steps the model after
// every doorbell (each burst of steps locked to its OS thread, whose CPU
// time Phys.ModelCPU reports so that host-side costs can be measured
// without it), DMA memory
// and mapped user buffers are reached through an IOVA table that refuses
// any address not mapped (the model sees a refused DMA as an error
// response and reports a DMA fault, as an IOMMU makes a real card do),
// and interrupts are channels.
package modelcard

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/openiwarp/openiwarp/host/driver"
	"github.com/openiwarp/openiwarp/host/driver/cardmodel"
)

// ErrUnmapped: a DMA to an address the IOVA table does not hold.
var ErrUnmapped = errors.New("modelcard: DMA outside every mapping (IOMMU fault)")

// iovaBase is the first IOVA handed out, so that 0 is never a valid one.
const iovaBase = 1 << 32

// Phys is the card model behind driver.Phys.
type Phys struct {
	busMu sync.Mutex // the model: Write32, Read32 and Step
	card  *cardmodel.Card

	mapMu sync.RWMutex
	spans []span // sorted by IOVA, disjoint
	next  uint64

	inline int // model steps a register write runs in the writer's goroutine

	irq  chan struct{} // vector 0
	kick chan struct{}
	stop chan struct{}
	done chan struct{}
	cpu  atomic.Int64 // the model thread's CPU time, in ns
}

// span is one mapping: DMA memory or a user buffer.
type span struct {
	iova uint64
	buf  []byte
}

// Config shapes a card model behind its physical view.
type Config struct {
	// Width is the data path width in bits (0: 64).
	Width int
	// InlineSteps is how many steps of the model a register write runs in
	// the writer's goroutine before it hands the rest to the model's
	// goroutine (0: DefaultInlineSteps; negative: none, so that every step
	// runs on the model's thread and ModelCPU accounts for all of the
	// card's work).
	InlineSteps int
}

// DefaultInlineSteps is Config.InlineSteps's default: a doorbell's first
// FPDU or completion comes without a goroutine handoff, a long transfer
// runs beside the bridge.
const DefaultInlineSteps = 4

// NewPhys returns a card model of the given data path width with its
// physical view, and starts the goroutine that steps it.
func NewPhys(width int) (*Phys, error) { return NewPhysWith(Config{Width: width}) }

// NewPhysWith is NewPhys with a Config.
func NewPhysWith(cfg Config) (*Phys, error) {
	p := &Phys{next: iovaBase, irq: make(chan struct{}, 1), kick: make(chan struct{}, 1),
		stop: make(chan struct{}), done: make(chan struct{}), inline: max(cfg.InlineSteps, 0)}
	if cfg.InlineSteps == 0 {
		p.inline = DefaultInlineSteps
	}
	c, err := cardmodel.New(cardmodel.Config{Width: cfg.Width, Host: (*host)(p)})
	if err != nil {
		return nil, err
	}
	p.card = c
	go p.run()
	return p, nil
}

// run steps the model whenever a register write may have given it work,
// until it is idle. Each such burst runs locked to its OS thread, whose CPU
// time it adds to ModelCPU; between bursts the goroutine is unlocked, so
// waking it costs no handoff of a locked thread.
func (p *Phys) run() {
	defer close(p.done)
	for {
		select {
		case <-p.kick:
		case <-p.stop:
			return
		}
		runtime.LockOSThread()
		t0 := threadCPU()
		for {
			p.busMu.Lock()
			did := p.card.Step()
			p.busMu.Unlock()
			if !did {
				break
			}
		}
		if t1 := threadCPU(); t0 >= 0 && t1 >= t0 {
			p.cpu.Add(t1 - t0)
		}
		runtime.UnlockOSThread()
	}
}

// threadCPU is the CPU time of the calling OS thread in ns, or -1 if it
// cannot be read.
func threadCPU() int64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts) != nil {
		return -1
	}
	return ts.Nano()
}

// ModelCPU is the CPU time the model's goroutine has used stepping the
// model (added up at the end of each burst of steps; the steps a register
// write runs inline, Config.InlineSteps, are not in it): the card's work,
// which a board does in hardware, to subtract from the host's.
func (p *Phys) ModelCPU() time.Duration { return time.Duration(p.cpu.Load()) }

func (p *Phys) wake() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// Regs is BAR0.
func (p *Phys) Regs() driver.Regs { return (*bar)(p) }

// DMA hands out memory the model reaches.
func (p *Phys) DMA() driver.DMA { return (*dma)(p) }

// Map makes buf reachable by the card, contiguous at a fresh IOVA.
func (p *Phys) Map(buf []byte) (driver.Mapping, error) {
	if len(buf) == 0 {
		return driver.Mapping{}, fmt.Errorf("%w: mapping an empty buffer", driver.ErrInvalid)
	}
	iova := p.insert(buf)
	return driver.NewMapping(iova, nil, 0, len(buf), iova), nil
}

// Unmap revokes a Map: a later DMA to it is refused.
func (p *Phys) Unmap(m driver.Mapping) error {
	iova, ok := m.Handle().(uint64)
	if !ok || !p.remove(iova) {
		return fmt.Errorf("%w: unmapping a buffer that is not mapped", driver.ErrInvalid)
	}
	return nil
}

// insert maps buf at the next IOVA (page aligned, a guard page after it).
func (p *Phys) insert(buf []byte) uint64 {
	p.mapMu.Lock()
	defer p.mapMu.Unlock()
	iova := p.next
	p.next += (uint64(len(buf)) + 2*4096 - 1) &^ 4095
	p.spans = append(p.spans, span{iova: iova, buf: buf}) // IOVAs only grow: still sorted
	return iova
}

func (p *Phys) remove(iova uint64) bool {
	p.mapMu.Lock()
	defer p.mapMu.Unlock()
	i := sort.Search(len(p.spans), func(i int) bool { return p.spans[i].iova >= iova })
	if i == len(p.spans) || p.spans[i].iova != iova {
		return false
	}
	p.spans = slices.Delete(p.spans, i, i+1) // clears the vacated slot: no stale buffer stays referenced
	return true
}

// lookup is the host memory of [addr, addr+n), or ErrUnmapped.
func (p *Phys) lookup(addr uint64, n int) ([]byte, error) {
	p.mapMu.RLock()
	defer p.mapMu.RUnlock()
	i := sort.Search(len(p.spans), func(i int) bool { return p.spans[i].iova > addr }) - 1
	if i >= 0 {
		s := p.spans[i]
		if off := addr - s.iova; off+uint64(n) <= uint64(len(s.buf)) && off+uint64(n) >= off {
			return s.buf[off : off+uint64(n)], nil
		}
	}
	return nil, fmt.Errorf("%w: %d bytes at %#x", ErrUnmapped, n, addr)
}

// Vectors is the number of interrupt vectors.
func (p *Phys) Vectors() int { return 1 }

// WaitInterrupt blocks until vector v fires or ctx ends.
func (p *Phys) WaitInterrupt(ctx context.Context, v int) error {
	if v != 0 {
		return fmt.Errorf("%w: interrupt vector %d (the model has 1)", driver.ErrInvalid, v)
	}
	select {
	case <-p.irq:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Describe says what runs where.
func (p *Phys) Describe() string {
	return "the card's Go transaction-level model (host/driver/cardmodel) in process, stepped by its own goroutine"
}

// Close stops the model's goroutine.
func (p *Phys) Close() error {
	select {
	case <-p.stop:
	default:
		close(p.stop)
	}
	<-p.done
	p.mapMu.Lock()
	p.spans = nil // what the driver did not free goes with the model
	p.mapMu.Unlock()
	return nil
}

// bar is BAR0: each access is one bus transaction on the model.
type bar Phys

func (b *bar) Read32(off uint32) (uint32, error) {
	b.busMu.Lock()
	v, err := b.card.Read32(off)
	b.busMu.Unlock()
	if err != nil {
		return 0, fmt.Errorf("%w: %w", driver.ErrInvalid, err)
	}
	return v, nil
}

func (b *bar) Write32(off, v uint32) error {
	b.busMu.Lock()
	err := b.card.Write32(off, v)
	busy := true
	for range b.inline {
		if !b.card.Step() {
			busy = false
			break
		}
	}
	b.busMu.Unlock()
	if busy {
		(*Phys)(b).wake()
	}
	if err != nil {
		return fmt.Errorf("%w: %w", driver.ErrInvalid, err)
	}
	return nil
}

func (b *bar) Read64(off uint32) (uint64, error) {
	lo, err := b.Read32(off)
	if err != nil {
		return 0, err
	}
	hi, err := b.Read32(off + 4)
	return uint64(hi)<<32 | uint64(lo), err
}

func (b *bar) Write64(off uint32, v uint64) error {
	if err := b.Write32(off, uint32(v)); err != nil {
		return err
	}
	return b.Write32(off+4, uint32(v>>32))
}

// dma allocates Go memory and maps it.
type dma Phys

// MaxDMA bounds one allocation.
const MaxDMA = 1 << 30

func (d *dma) Alloc(n int) (*driver.Buffer, error) {
	if n <= 0 || n > MaxDMA {
		return nil, fmt.Errorf("%w: DMA buffer of %d bytes (1 to %d)", driver.ErrInvalid, n, MaxDMA)
	}
	b := make([]byte, n)
	return &driver.Buffer{Bytes: b, IOVA: (*Phys)(d).insert(b)}, nil
}

func (d *dma) Free(b *driver.Buffer) error {
	if b == nil || !(*Phys)(d).remove(b.IOVA) {
		return fmt.Errorf("%w: freeing a buffer that is not live DMA memory", driver.ErrInvalid)
	}
	return nil
}

// host is the model's side of the bus: DMA through the IOVA table.
type host Phys

func (h *host) ReadMem(addr uint64, b []byte) error {
	m, err := (*Phys)(h).lookup(addr, len(b))
	if err != nil {
		return err
	}
	copy(b, m)
	return nil
}

// WriteMem writes host memory. A record (32 bytes or less, word aligned)
// goes as ascending 32-bit atomic stores, as driver.Phys asks, so that the
// driver's atomic load of its flag word orders everything written before.
func (h *host) WriteMem(addr uint64, b []byte) error {
	m, err := (*Phys)(h).lookup(addr, len(b))
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

func (h *host) Interrupt(vector int) {
	if vector == 0 {
		select {
		case h.irq <- struct{}{}:
		default:
		}
	}
}
