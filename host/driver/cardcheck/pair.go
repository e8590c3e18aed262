package cardcheck

import (
	"errors"
	"fmt"
	"os"

	"github.com/openiwarp/openiwarp/host/driver/cardmodel"
	cs "github.com/openiwarp/openiwarp/host/driver/cardspec"
)

// Device is the card checked: the Verilated iwcard top (hw/sim.Card) or
// anything standing in for it, reached through its BAR0 (each access
// complete when it returns) and clocked by Run; its DMA and interrupts go
// through the Bus it was made with. Only the Pair's owner calls it.
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

// Bus is the host side of a Device: DMA (an error is the host refusing
// the access: the card sees an error response and reports a DMA fault)
// and interrupts.
type Bus interface {
	ReadMem(addr uint64, p []byte) error
	WriteMem(addr uint64, p []byte) error
	Interrupt(vector int)
}

// Host is the machine the pair sits in: the device's Bus, and two
// questions the model beside it asks without being the card.
type Host interface {
	Bus
	// ModelReadMem reads memory for the model, as ReadMem would for the
	// card, but is not the card's access (not counted, not reported).
	ModelReadMem(addr uint64, p []byte) error
	// Reachable reports why a DMA write of n bytes at addr would be
	// refused, or nil if it would be accepted.
	Reachable(addr uint64, n int) error
}

// SimFailure marks a Device error that is a failure of the simulation
// itself (an AXI protocol violation of the RTL, an access never answered),
// not the answer to one access: the Pair stops the device for good.
type SimFailure struct{ Err error }

func (e *SimFailure) Error() string { return e.Err.Error() }
func (e *SimFailure) Unwrap() error { return e.Err }

// Config shapes a Pair.
type Config struct {
	// Width is the card's data path width in bits (64 or 512; 0: 64).
	Width int
	// QuietCycles is how many cycles without DMA the device must run
	// before it counts as idle (the checker then reports what the model
	// wrote and the device did not). 0: 4096.
	QuietCycles int
	// Batch is the cycles one Step clocks (0: 64).
	Batch int
}

// Pair is a device with the card's transaction-level model
// (host/driver/cardmodel) beside it, checking it. The model is fed the
// same register writes in the same order and runs to idle at each one, so
// it is ahead of the device; what it writes is kept as expectations, and
// every DMA write of the device must match one before it reaches host
// memory (see the package doc). Not safe for concurrent use: one owner
// goroutine makes every call.
type Pair struct {
	cfg    Config
	host   Host
	dev    Device
	model  *cardmodel.Card
	chk    *checker
	quiet  int
	runErr error
}

// New makes the model and the device (nd, on the checked bus) on host.
func New(cfg Config, host Host, nd func(width int, bus Bus) (Device, error)) (*Pair, error) {
	if cfg.Width == 0 {
		cfg.Width = 64
	}
	if cfg.QuietCycles <= 0 {
		cfg.QuietCycles = 4096
	}
	if cfg.Batch <= 0 {
		cfg.Batch = 64
	}
	p := &Pair{cfg: cfg, host: host, quiet: cfg.QuietCycles}
	p.chk = newChecker(host.Reachable)
	m, err := cardmodel.New(cardmodel.Config{Width: cfg.Width, Host: (*modelHost)(p), Observe: p.chk.expect})
	if err != nil {
		return nil, fmt.Errorf("cardcheck: the card model: %w", err)
	}
	p.model = m
	dev, err := nd(cfg.Width, (*bus)(p))
	if err != nil {
		return nil, err
	}
	p.dev = dev
	return p, nil
}

// OnMismatch sets the function told each disagreement (the first per QP):
// the QP it concerns (0: the card) and a *MismatchError. It runs on the
// owner's goroutine, inside the call that found it.
func (p *Pair) OnMismatch(fail func(qpn uint32, err error)) { p.chk.fail = fail }

// Device is the device checked.
func (p *Pair) Device() Device { return p.dev }

// Cycles is the number of device cycles simulated.
func (p *Pair) Cycles() uint64 { return p.dev.Cycles() }

// Counts are the transactions checked so far (a copy).
func (p *Pair) Counts() Counts {
	c := p.chk.counts
	c.Checked = make(map[string]uint64, len(p.chk.counts.Checked))
	for k, v := range p.chk.counts.Checked {
		c.Checked[k] = v
	}
	return c
}

// Mismatches are the first disagreements reported (one per QP), at most
// 64 (a copy).
func (p *Pair) Mismatches() []*MismatchError { return append([]*MismatchError(nil), p.chk.reported...) }

// Stopped is why the device stopped for good (a simulation failure), or
// nil.
func (p *Pair) Stopped() error { return p.runErr }

// Close frees the device.
func (p *Pair) Close() { p.dev.Close() }

// Read32 reads a register of the device (the model is not read: reads
// have no effect on it the checker needs).
func (p *Pair) Read32(off uint32) (uint32, error) {
	if p.runErr != nil {
		return 0, fmt.Errorf("cardcheck: the simulation stopped: %w", p.runErr)
	}
	v, err := p.dev.Read32(off)
	if traceOn {
		trace("%p read %#x = %#x (%v) cycle %d", p, off, v, err, p.dev.Cycles())
	}
	p.simFailed(err)
	p.quiet = 0
	if err == nil {
		switch off {
		case cs.CmdStatus:
			p.cmdStatus(v)
		case cs.Status, cs.DMAFaultAddrLo, cs.DMAFaultAddrHi, cs.DMAFaultInfo:
			p.faultRegs(off, v)
		}
	}
	return v, err
}

// faultRegs compares STATUS.FATAL and the DMA_FAULT_* registers with the
// model's. The RTL learns of a fault a write response after the model: it
// may not have stopped yet, or counted the fault yet; but a stop the
// model did not make, or a fault of the same count named differently, is
// a disagreement.
func (p *Pair) faultRegs(off, v uint32) {
	mv, err := p.model.Read32(off)
	if err != nil {
		return
	}
	if off == cs.Status {
		if v>>cs.StatusFatalShift&1 != 0 && mv>>cs.StatusFatalShift&1 == 0 {
			p.chk.mismatch(&MismatchError{Kind: "register", Addr: cs.Status, What: fmt.Sprintf("STATUS %#x: the RTL stopped (FATAL), the model did not (%#x)", v, mv)})
		}
		return
	}
	info, minfo := v, mv
	if off != cs.DMAFaultInfo {
		if info, err = p.dev.Read32(cs.DMAFaultInfo); err != nil {
			return
		}
		if minfo, err = p.model.Read32(cs.DMAFaultInfo); err != nil {
			return
		}
	}
	count := func(x uint32) uint32 { return x >> cs.DMAFaultInfoCountShift & cs.DMAFaultInfoCountMask }
	if count(info) == count(minfo) && v != mv {
		p.chk.mismatch(&MismatchError{QPN: minfo & cs.DMAFaultInfoQPNMask, Kind: "register", Addr: uint64(off),
			What: fmt.Sprintf("%s %#x after %d DMA faults: the model's is %#x", faultRegName[off], v, count(info), mv)})
	}
}

var faultRegName = map[uint32]string{cs.DMAFaultAddrLo: "DMA_FAULT_ADDR_LO", cs.DMAFaultAddrHi: "DMA_FAULT_ADDR_HI", cs.DMAFaultInfo: "DMA_FAULT_INFO"}

// modelRun runs the model to idle and notes whether it stopped.
func (p *Pair) modelRun() {
	p.model.Run()
	p.chk.stopped = p.chk.stopped || p.model.Fatal()
}

// cmdStatus compares the RTL's CMD_STATUS with the model's: the RTL may
// not have decided the model's last commands yet (its SEQ behind), but a
// verdict it has given must be the model's.
func (p *Pair) cmdStatus(v uint32) {
	mv, err := p.model.Read32(cs.CmdStatus)
	if err != nil {
		return
	}
	seq := func(x uint32) uint16 { return uint16(x >> cs.CmdStatusSeqShift & cs.CmdStatusSeqMask) }
	switch behind := seq(mv) - seq(v); {
	case behind == 0 && v != mv:
		p.chk.mismatch(&MismatchError{Kind: "register", Addr: cs.CmdStatus,
			What: fmt.Sprintf("CMD_STATUS %#x: the model's is %#x (WHY %v, the RTL's %v)", v, mv,
				cs.CmdWhy(mv>>cs.CmdStatusWhyShift&cs.CmdStatusWhyMask), cs.CmdWhy(v>>cs.CmdStatusWhyShift&cs.CmdStatusWhyMask))})
	case behind > 1<<15:
		p.chk.mismatch(&MismatchError{Kind: "register", Addr: cs.CmdStatus,
			What: fmt.Sprintf("CMD_STATUS %#x: the RTL decided more commands (SEQ %d) than were written (%d)", v, seq(v), seq(mv))})
	}
}

// Write32 writes a register of the model, which runs to idle, and then
// of the device; a write one of them refuses and the other takes is a
// mismatch.
func (p *Pair) Write32(off, v uint32) error {
	if p.runErr != nil {
		return fmt.Errorf("cardcheck: the simulation stopped: %w", p.runErr)
	}
	if traceOn {
		trace("%p write %#x %#x cycle %d", p, off, v, p.dev.Cycles())
	}
	if orderSensitive(off, v) {
		p.catchUp()
	}
	// The model first, to idle: what it writes is expected before the
	// device, clocked through the access, can write anything.
	mv := v
	if off == cs.EQDB {
		mv = v&^cs.EQDBCIMask | p.chk.modelEQ&cs.EQDBCIMask
	}
	merr := p.model.Write32(off, mv)
	p.chk.snoop(off, v, errors.Is(merr, cardmodel.ErrRefused))
	p.modelRun()
	err := p.dev.Write32(off, v)
	p.quiet = 0
	if p.simFailed(err) {
		return err
	}
	// The RTL answers every whole-word write OKAY (a refused command
	// too: its verdict is in CMD_STATUS, which Read32 compares).
	if err != nil {
		qpn := uint32(0)
		if off == cs.QPCmd {
			qpn = p.chk.stage[cs.QPNum] & cs.QPNumQPNMask
		}
		p.chk.mismatch(&MismatchError{QPN: qpn, Kind: "register", Addr: uint64(off),
			What: fmt.Sprintf("write of %#x to %#x: the RTL answered %v, the model %v", v, off, err, merr)})
	}
	return err
}

// Step clocks the device for one batch of cycles and reports whether it
// is still working: false once it has been quiet (no DMA) for
// QuietCycles since the last access, when the checker reports whatever
// the model wrote and the device did not. After false, Step does nothing
// until the next register access.
func (p *Pair) Step() bool {
	if p.quiet >= p.cfg.QuietCycles || p.runErr != nil {
		return false
	}
	busy, err := p.dev.Run(p.cfg.Batch)
	if err != nil {
		p.halt(err)
		p.quiet = p.cfg.QuietCycles
		return false
	}
	if busy {
		p.quiet = 0
		return true
	}
	if p.quiet += p.cfg.Batch; p.quiet >= p.cfg.QuietCycles {
		p.chk.idle()
		return false
	}
	return true
}

// halt stops the device for good after a simulation error (an AXI
// protocol violation of the RTL, a library failure).
func (p *Pair) halt(err error) {
	if p.runErr == nil {
		p.runErr = err
		p.chk.mismatch(&MismatchError{Kind: "simulation", What: err.Error()})
	}
}

// simFailed stops the device if err is a failure of the simulation
// rather than an answer to the access.
func (p *Pair) simFailed(err error) bool {
	var se *SimFailure
	if errors.As(err, &se) {
		p.halt(se.Err)
		return true
	}
	return false
}

// orderSensitive: a register write whose effect depends on how far the
// card has got with the work it was given before (a command, the STag
// table, the end of the peer's stream), unlike the doorbells that only
// hand it more work or room. The model, which runs to idle at every
// write, takes it after all of that work; the device must too, or the two
// would answer different questions. RX_FIN is one: the stream end flushes
// the Reads outstanding when it is taken, so a Read posted before it that
// the device has not started yet would be flushed by the model and left
// outstanding (until the driver's ERROR) by the device.
func orderSensitive(off, v uint32) bool {
	if off < cs.CQDBBase {
		return true
	}
	if off >= cs.QPDBBase && (off-cs.QPDBBase)%cs.QPDBStride == cs.QPDBStream {
		return v&(1<<cs.QPDBStreamRXLostShift|1<<cs.QPDBStreamRXFinShift) != 0
	}
	return false
}

// catchUp clocks the device until it has written everything the model
// has, or has been idle for QuietCycles (the checker then reports what is
// missing).
func (p *Pair) catchUp() {
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

// Describe says what runs.
func (p *Pair) Describe() string {
	return p.dev.Describe() + "; the card model (host/driver/cardmodel) checks every DMA write"
}

// bus is the device's side of the host: its DMA writes are checked
// against the model's before they reach memory.
type bus Pair

func (b *bus) ReadMem(addr uint64, p []byte) error {
	err := b.host.ReadMem(addr, p)
	if traceOn {
		trace("%p RTL read %#x %d bytes (%v)", b, addr, len(p), err)
	}
	return err
}

func (b *bus) WriteMem(addr uint64, p []byte) error {
	if traceOn {
		trace("%p RTL write %#x %d bytes %x", b, addr, len(p), p[:min(len(p), 32)])
	}
	if err := b.host.Reachable(addr, len(p)); err != nil {
		return b.host.WriteMem(addr, p) // refused there, and reported as the host reports it; the model faulted too
	}
	if w := b.chk.write(addr, p); w != nil {
		return b.host.WriteMem(addr, w)
	}
	return nil
}

func (b *bus) Interrupt(v int) { b.host.Interrupt(v) }

// modelHost is the model's side of the host: it reads memory as the
// device would, and its writes go to the checker (Observe) only.
type modelHost Pair

func (h *modelHost) ReadMem(addr uint64, p []byte) error { return h.host.ModelReadMem(addr, p) }
func (h *modelHost) WriteMem(addr uint64, p []byte) error {
	return h.host.Reachable(addr, len(p))
}
func (h *modelHost) Interrupt(int) {}

// traceOn: SIMCARD_TRACE=1 in the environment logs every register access,
// and every DMA write of the model and of the device, to stderr.
var traceOn = os.Getenv("SIMCARD_TRACE") != ""

func trace(format string, a ...any) { fmt.Fprintf(os.Stderr, "cardcheck: "+format+"\n", a...) }

// Total is the number of the device's DMA writes found equal to the
// model's.
func (c Counts) Total() uint64 {
	var n uint64
	for _, v := range c.Checked {
		n += v
	}
	return n
}
