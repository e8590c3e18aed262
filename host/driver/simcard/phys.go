package simcard

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/openiwarp/openiwarp/host/driver"
	"github.com/openiwarp/openiwarp/host/driver/cardcheck"
	"github.com/openiwarp/openiwarp/host/driver/simhost"
	hwsim "github.com/openiwarp/openiwarp/hw/sim"
)

// Device is the card the backend runs and checks (cardcheck.Device): the
// Verilated iwcard top, reached through its BAR0 (each access an
// AXI4-Lite transaction the simulation clocks until it completes) and
// clocked by Run; its AXI4 master reaches host memory, and its interrupts
// the host, through the Bus it was made with. Only the card's goroutine
// calls it.
type Device = cardcheck.Device

// Bus is the host side of a Device: DMA (an error is the IOMMU refusing
// the access: the card sees an error response) and interrupts.
type Bus = cardcheck.Bus

// MismatchError names the transaction on which the RTL card and the card
// model disagreed (cardcheck.MismatchError).
type MismatchError = cardcheck.MismatchError

// ErrMismatch is wrapped by every *MismatchError.
var ErrMismatch = cardcheck.ErrMismatch

// Counts are the transactions the checker compared (cardcheck.Counts).
type Counts = cardcheck.Counts

// NewDevice makes a Device on bus, with its DMA answered with timing t;
// seed drives the random parts of t.
type NewDevice func(width int, bus Bus, t hwsim.AXITiming, seed uint64) (Device, error)

// Config shapes the simulated host.
type Config struct {
	// Width is the card's data path width in bits (64 or 512; 0: 64).
	Width int
	// Timing is how host memory answers the card's DMA: latency and its
	// jitter, reordering across AXI IDs, backpressure (nil:
	// DefaultTiming).
	Timing *hwsim.AXITiming
	// Seed drives the random parts of Timing.
	Seed uint64
	// QuietCycles is how many cycles without DMA the card must run before
	// it counts as idle (the backend then stops clocking it until the next
	// register access, and the checker reports what the model wrote and
	// the card did not). 0: 4096.
	QuietCycles int
	// Batch is the cycles clocked between two looks for register
	// accesses (0: 64).
	Batch int
}

// DefaultTiming is the simulated host's default: 100 to 300 cycles of
// read latency and 20 to 60 of write latency, as a PCIe host gives, bursts
// reordered across IDs, no backpressure.
var DefaultTiming = hwsim.AXITiming{ReadLatency: 100, ReadJitter: 201, WriteLatency: 20, WriteJitter: 41, Reorder: true}

// busReq is one BAR0 access, served by the card's goroutine.
type busReq struct {
	write bool
	off   uint32
	v     uint32
	err   error
	done  chan struct{}
}

// Phys is the RTL card behind driver.Phys, with the card model checking
// it. BAR0 accesses, the clock, the model and the checker all run on one
// goroutine locked to its OS thread, whose CPU time CardCPU reports.
type Phys struct {
	cfg           Config
	*simhost.Host // DMA, Map, Unmap, Vectors, WaitInterrupt
	pair          *cardcheck.Pair
	reqs          chan *busReq
	stop          chan struct{}
	done          chan struct{}
	cpu           atomic.Int64
	cyc           atomic.Uint64
	fail          atomic.Pointer[func(uint32, error)]

	totals *processTotals // the process's sums, or nil
	added  Totals         // what this card added to them
	// addedReported: how many of its reported mismatches it added to the
	// process's list.
	addedReported int

	statMu   sync.Mutex // the copies Counts and Mismatches read
	counts   Counts
	reported []*MismatchError
}

// NewPhys starts a device made by nd with the card model beside it.
func NewPhys(cfg Config, nd NewDevice) (*Phys, error) {
	if cfg.Width == 0 {
		cfg.Width = 64
	}
	p := &Phys{cfg: cfg, Host: simhost.NewHost(), reqs: make(chan *busReq),
		stop: make(chan struct{}), done: make(chan struct{})}
	t := DefaultTiming
	if cfg.Timing != nil {
		t = *cfg.Timing
	}
	pair, err := cardcheck.New(cardcheck.Config{Width: cfg.Width, QuietCycles: cfg.QuietCycles, Batch: cfg.Batch}, (*pairHost)(p),
		func(width int, bus cardcheck.Bus) (cardcheck.Device, error) { return nd(width, bus, t, cfg.Seed) })
	if err != nil {
		return nil, err
	}
	pair.OnMismatch(func(qpn uint32, err error) {
		if f := p.fail.Load(); f != nil {
			(*f)(qpn, err)
		}
	})
	p.pair = pair
	go p.run()
	return p, nil
}

// OnMismatch is driver.Checker: the driver's function for ending a QP (or
// the card) the checker found wrong.
func (p *Phys) OnMismatch(fail func(qpn uint32, err error)) { p.fail.Store(&fail) }

// run is the card's goroutine: it serves BAR0 accesses and clocks the
// device while it is busy, for a while after each access, and while the
// model has writes the device has not matched yet.
func (p *Phys) run() {
	defer close(p.done)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	t0 := simhost.ThreadCPU()
	idle := true // from the start: wait for an access
	for {
		var r *busReq
		if idle {
			p.account(t0)
			select {
			case r = <-p.reqs:
			case <-p.stop:
				return
			}
		} else {
			select {
			case r = <-p.reqs:
			case <-p.stop:
				return
			default:
			}
		}
		if r != nil {
			p.serve(r)
			idle = false
			continue
		}
		idle = !p.pair.Step()
		p.cyc.Store(p.pair.Cycles())
		if idle {
			p.snapshot()
		}
	}
}

// serve does one BAR0 access on the pair (a write: on the model, to
// idle, then on the device).
func (p *Phys) serve(r *busReq) {
	defer close(r.done)
	if r.write {
		r.err = p.pair.Write32(r.off, r.v)
		p.snapshot()
	} else {
		r.v, r.err = p.pair.Read32(r.off)
	}
	p.cyc.Store(p.pair.Cycles())
}

func (p *Phys) snapshot() {
	counts := p.pair.Counts()
	if t := p.totals; t != nil {
		now := Totals{Cycles: p.pair.Cycles(), Checked: counts.Total(), Bytes: counts.Bytes, Mismatches: counts.Mismatches}
		t.cycles.Add(now.Cycles - p.added.Cycles)
		t.checked.Add(now.Checked - p.added.Checked)
		t.bytes.Add(now.Bytes - p.added.Bytes)
		t.mismatches.Add(now.Mismatches - p.added.Mismatches)
		p.added = now
	}
	reported := p.pair.Mismatches()
	if t := p.totals; t != nil && len(reported) > p.addedReported {
		t.mu.Lock()
		for _, e := range reported[p.addedReported:] {
			if len(t.reported) < maxProcessReported {
				t.reported = append(t.reported, e)
			}
		}
		t.mu.Unlock()
		p.addedReported = len(reported)
	}
	p.statMu.Lock()
	p.counts, p.reported = counts, reported
	p.statMu.Unlock()
}

func (p *Phys) account(t0 int64) {
	if t := simhost.ThreadCPU(); t0 >= 0 && t >= t0 {
		p.cpu.Store(t - t0)
	}
}

// CardCPU is the CPU time the card's goroutine has used (the RTL
// simulation, the model and the checker), up to its last idle point: the
// card's work, to subtract from the host's.
func (p *Phys) CardCPU() time.Duration { return time.Duration(p.cpu.Load()) }

// Cycles is the number of RTL cycles simulated.
func (p *Phys) Cycles() uint64 { return p.cyc.Load() }

// Counts are the transactions checked so far.
func (p *Phys) Counts() Counts {
	p.statMu.Lock()
	defer p.statMu.Unlock()
	c := p.counts
	c.Checked = make(map[string]uint64, len(p.counts.Checked))
	for k, v := range p.counts.Checked {
		c.Checked[k] = v
	}
	return c
}

// Mismatches are the first disagreements reported (one per QP), at most
// 64.
func (p *Phys) Mismatches() []*MismatchError {
	p.statMu.Lock()
	defer p.statMu.Unlock()
	return append([]*MismatchError(nil), p.reported...)
}

func (p *Phys) access(r *busReq) error {
	r.done = make(chan struct{})
	select {
	case p.reqs <- r:
	case <-p.done:
		return fmt.Errorf("%w: the sim card is closed", driver.ErrClosed)
	}
	<-r.done
	return r.err
}

// Regs is BAR0.
func (p *Phys) Regs() driver.Regs { return driver.Split64{Regs32: (*bar)(p)} }

// Describe says what runs where.
func (p *Phys) Describe() string {
	return p.pair.Device().Describe() + ", on its own thread, with host memory behind an IOMMU model; the card model (host/driver/cardmodel) checks every DMA write"
}

// Close stops the card's goroutine and frees the device.
func (p *Phys) Close() error {
	select {
	case <-p.stop:
		return nil
	default:
		close(p.stop)
	}
	<-p.done
	p.pair.Close()
	p.Clear()
	return nil
}

// bar is BAR0: each access one bus transaction on the card's goroutine.
type bar Phys

func (b *bar) Read32(off uint32) (uint32, error) {
	r := &busReq{off: off}
	if err := (*Phys)(b).access(r); err != nil {
		return 0, fmt.Errorf("%w: %w", driver.ErrInvalid, err)
	}
	return r.v, nil
}

func (b *bar) Write32(off, v uint32) error {
	if err := (*Phys)(b).access(&busReq{write: true, off: off, v: v}); err != nil {
		return fmt.Errorf("%w: %w", driver.ErrInvalid, err)
	}
	return nil
}

// pairHost is the host as the checked pair sees it: the embedded Host
// (DMA through the IOMMU model, interrupts), which the model reads through
// too.
type pairHost Phys

// ReadMem, WriteMem and Interrupt are the embedded Host's, promoted.

func (h *pairHost) ModelReadMem(addr uint64, p []byte) error { return h.Host.ReadMem(addr, p) }
func (h *pairHost) Reachable(addr uint64, n int) error {
	_, err := h.Lookup(addr, n)
	return err
}
