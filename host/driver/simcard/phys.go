package simcard

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/openiwarp/openiwarp/host/driver"
	"github.com/openiwarp/openiwarp/host/driver/cardmodel"
	cs "github.com/openiwarp/openiwarp/host/driver/cardspec"
	"github.com/openiwarp/openiwarp/host/driver/simhost"
	hwsim "github.com/openiwarp/openiwarp/hw/sim"
)

// Device is the card the backend runs and checks: the Verilated iwcard
// top, reached through its BAR0 (each access an AXI4-Lite transaction the
// simulation clocks until it completes) and clocked by Run; its AXI4
// master reaches host memory, and its interrupts the host, through the Bus
// it was made with. Only the card's goroutine calls it.
type Device interface {
	Read32(off uint32) (uint32, error)
	Write32(off, v uint32) error
	// Run clocks the card for up to cycles cycles and reports whether it
	// is busy (DMA bursts in flight or started during the run).
	Run(cycles int) (busy bool, err error)
	// Cycles is the number of cycles simulated so far.
	Cycles() uint64
	// Describe says what the device is, for humans.
	Describe() string
	Close()
}

// Bus is the host side of a Device: DMA (an error is the IOMMU refusing
// the access: the card sees an error response) and interrupts.
type Bus interface {
	ReadMem(addr uint64, p []byte) error
	WriteMem(addr uint64, p []byte) error
	Interrupt(vector int)
}

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

// traceOn: SIMCARD_TRACE=1 in the environment logs every BAR0 access, and
// every DMA write of the model and of the RTL, to stderr.
var traceOn = os.Getenv("SIMCARD_TRACE") != ""

func trace(format string, a ...any) { fmt.Fprintf(os.Stderr, "simcard: "+format+"\n", a...) }

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
	dev           Device
	model         *cardmodel.Card
	chk           *checker
	reqs          chan *busReq
	stop          chan struct{}
	done          chan struct{}
	cpu           atomic.Int64
	cyc           atomic.Uint64
	fail          atomic.Pointer[func(uint32, error)]

	totals *processTotals // the process's sums, or nil
	added  Totals         // what this card added to them
	runErr error          // why the simulation stopped (the card's goroutine only)

	statMu   sync.Mutex // the copies Counts and Mismatches read
	counts   Counts
	reported []*MismatchError
}

// NewPhys starts a device made by nd with the card model beside it.
func NewPhys(cfg Config, nd NewDevice) (*Phys, error) {
	if cfg.Width == 0 {
		cfg.Width = 64
	}
	if cfg.QuietCycles <= 0 {
		cfg.QuietCycles = 4096
	}
	if cfg.Batch <= 0 {
		cfg.Batch = 64
	}
	p := &Phys{cfg: cfg, Host: simhost.NewHost(), reqs: make(chan *busReq),
		stop: make(chan struct{}), done: make(chan struct{})}
	p.chk = newChecker(p.Space)
	p.chk.fail = func(qpn uint32, err error) {
		if f := p.fail.Load(); f != nil {
			(*f)(qpn, err)
		}
	}
	m, err := cardmodel.New(cardmodel.Config{Width: cfg.Width, Host: (*modelHost)(p), Observe: p.chk.expect})
	if err != nil {
		return nil, err
	}
	p.model = m
	p.chk.model = m
	t := DefaultTiming
	if cfg.Timing != nil {
		t = *cfg.Timing
	}
	dev, err := nd(cfg.Width, (*bus)(p), t, cfg.Seed)
	if err != nil {
		return nil, err
	}
	p.dev = dev
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
	quiet := p.cfg.QuietCycles // idle from the start: wait for an access
	for {
		var r *busReq
		if quiet >= p.cfg.QuietCycles {
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
			quiet = 0
			continue
		}
		busy, err := p.dev.Run(p.cfg.Batch)
		p.cyc.Store(p.dev.Cycles())
		if err != nil {
			p.halt(err)
			quiet = p.cfg.QuietCycles
			continue
		}
		if busy {
			quiet = 0
		} else {
			quiet += p.cfg.Batch
		}
		if quiet >= p.cfg.QuietCycles {
			p.chk.idle()
			p.snapshot()
		}
	}
}

// halt stops the card for good after a simulation error (an AXI protocol
// violation of the RTL, a library failure).
func (p *Phys) halt(err error) {
	if p.runErr == nil {
		p.runErr = err
		p.chk.mismatch(&MismatchError{Kind: "simulation", What: err.Error()})
	}
}

// simFailed stops the card if err is a failure of the simulation rather
// than an answer to the access.
func (p *Phys) simFailed(err error) bool {
	var se *simError
	if errors.As(err, &se) {
		p.halt(se.err)
		return true
	}
	return false
}

// serve does one BAR0 access on the device and, for a write, on the
// model, which then runs until idle.
func (p *Phys) serve(r *busReq) {
	defer close(r.done)
	if p.runErr != nil {
		r.err = fmt.Errorf("simcard: the simulation stopped: %w", p.runErr)
		return
	}
	if !r.write {
		r.v, r.err = p.dev.Read32(r.off)
		if traceOn {
			trace("%p read %#x = %#x (%v) cycle %d", p, r.off, r.v, r.err, p.dev.Cycles())
		}
		p.simFailed(r.err)
		return
	}
	if traceOn {
		trace("%p write %#x %#x cycle %d", p, r.off, r.v, p.dev.Cycles())
	}
	if orderSensitive(r.off, r.v) {
		p.catchUp()
	}
	// The model first, to idle: what it writes is expected before the
	// device, clocked through the access, can write anything.
	mv := r.v
	if r.off == cs.EQDB {
		mv = r.v&^cs.EQDBCIMask | p.chk.modelEQ&cs.EQDBCIMask
	}
	merr := p.model.Write32(r.off, mv)
	p.chk.snoop(r.off, r.v)
	p.model.Run()
	r.err = p.dev.Write32(r.off, r.v)
	if p.simFailed(r.err) {
		return
	}
	if refused := errors.Is(merr, cardmodel.ErrRefused); refused != (r.err != nil) {
		qpn := uint32(0)
		if r.off == cs.QPCmd {
			qpn = p.chk.stage[cs.QPNum] & cs.QPNumQPNMask
		}
		p.chk.mismatch(&MismatchError{QPN: qpn, Kind: "register", Addr: uint64(r.off),
			What: fmt.Sprintf("write of %#x to %#x: the RTL answered %v, the model %v", r.v, r.off, r.err, merr)})
	}
	p.snapshot()
}

// orderSensitive: a register write whose effect depends on how far the
// card has got with the work it was given before (a command, the STag
// table, a lost connection), unlike the doorbells that only hand it more
// work or room. The model, which runs to idle at every write, takes it
// after all of that work; the RTL must too, or the two would answer
// different questions.
func orderSensitive(off, v uint32) bool {
	if off < cs.CQDBBase {
		return true
	}
	if off >= cs.QPDBBase && (off-cs.QPDBBase)%cs.QPDBStride == cs.QPDBStream {
		return v>>cs.QPDBStreamRXLostShift&1 != 0
	}
	return false
}

// catchUp clocks the device until it has written everything the model
// has, or has been idle for QuietCycles (the checker then reports what is
// missing).
func (p *Phys) catchUp() {
	quiet := 0
	for !p.chk.quiet() && p.runErr == nil {
		busy, err := p.dev.Run(p.cfg.Batch)
		if err != nil {
			p.halt(err)
			return
		}
		if busy {
			quiet = 0
			continue
		}
		if quiet += p.cfg.Batch; quiet >= p.cfg.QuietCycles {
			p.chk.idle()
			return
		}
	}
}

func (p *Phys) snapshot() {
	if t := p.totals; t != nil {
		now := Totals{Cycles: p.dev.Cycles(), Checked: p.chk.counts.total(), Bytes: p.chk.counts.Bytes, Mismatches: p.chk.counts.Mismatches}
		t.cycles.Add(now.Cycles - p.added.Cycles)
		t.checked.Add(now.Checked - p.added.Checked)
		t.bytes.Add(now.Bytes - p.added.Bytes)
		t.mismatches.Add(now.Mismatches - p.added.Mismatches)
		p.added = now
	}
	p.statMu.Lock()
	p.counts.Checked = make(map[string]uint64, len(p.chk.counts.Checked))
	for k, v := range p.chk.counts.Checked {
		p.counts.Checked[k] = v
	}
	p.counts.Bytes, p.counts.Loose, p.counts.Mismatches, p.counts.Unchecked = p.chk.counts.Bytes, p.chk.counts.Loose, p.chk.counts.Mismatches, p.chk.counts.Unchecked
	p.reported = append(p.reported[:0], p.chk.reported...)
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

// Total is the number of the RTL's DMA writes found equal to the
// model's.
func (c Counts) Total() uint64 { return c.total() }

func (c *Counts) total() uint64 {
	var n uint64
	for _, v := range c.Checked {
		n += v
	}
	return n
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
	return p.dev.Describe() + ", on its own thread, with host memory behind an IOMMU model; the card model (host/driver/cardmodel) checks every DMA write"
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
	p.dev.Close()
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

// bus is the device's side of the host: its DMA writes are checked
// against the model's before they reach memory; its interrupts are the
// embedded Host's.
type bus Phys

func (b *bus) ReadMem(addr uint64, p []byte) error {
	err := b.Host.ReadMem(addr, p)
	if traceOn {
		trace("%p RTL read %#x %d bytes (%v)", b, addr, len(p), err)
	}
	return err
}

func (b *bus) WriteMem(addr uint64, p []byte) error {
	if traceOn {
		trace("%p RTL write %#x %d bytes %x", b, addr, len(p), p[:min(len(p), 32)])
	}
	if _, err := b.Lookup(addr, len(p)); err != nil {
		return err // the IOMMU refuses it; the card reports a DMA fault (and the model did too)
	}
	if w := b.chk.write(addr, p); w != nil {
		return b.Host.WriteMem(addr, w)
	}
	return nil
}

// modelHost is the model's side of the host: it reads host memory
// through the same IOMMU (the embedded Host's ReadMem), and its writes go
// to the checker (Observe) only.
type modelHost Phys

func (h *modelHost) WriteMem(addr uint64, p []byte) error {
	_, err := h.Lookup(addr, len(p))
	return err
}

func (h *modelHost) Interrupt(int) {}
