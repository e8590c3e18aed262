package sim

import (
	"errors"
	"fmt"
	"io"

	"github.com/openiwarp/openiwarp/hw/gen"
)

// ErrCard is wrapped by every error of the whole-card harness.
var ErrCard = errors.New("sim: iwcard")

// ErrRegResp is wrapped by a *RegRespError.
var ErrRegResp = errors.New("sim: iwcard: BAR0 error response")

// ErrStuck is wrapped when a BAR0 access or RunUntil does not finish in
// its bound of cycles.
var ErrStuck = errors.New("sim: iwcard: no progress")

// RegRespError is a BAR0 access the card answered with SLVERR (2) or
// DECERR (3).
type RegRespError struct {
	Write bool
	Off   uint32
	Resp  uint32
}

func (e *RegRespError) Error() string {
	op := "read"
	if e.Write {
		op = "write"
	}
	return fmt.Sprintf("sim: iwcard: BAR0 %s at %#x answered %s", op, e.Off, respName(e.Resp))
}

// Is matches ErrRegResp.
func (e *RegRespError) Is(target error) bool { return target == ErrRegResp }

func respName(r uint32) string {
	switch r {
	case 0:
		return "OKAY"
	case 2:
		return "SLVERR"
	case 3:
		return "DECERR"
	}
	return fmt.Sprintf("resp %d", r)
}

// The card's DMA sources: m_axi_*id's top two bits name the engine whose
// master issued a burst (gen.CardRdMaster*, gen.CardWrMaster*).
const (
	CardReadTx     = gen.CardRdMasterTx // card_tx: WQE reads
	CardReadRx     = gen.CardRdMasterRx // card_rx: receive stream ring reads
	CardReadRQ     = gen.CardRdMasterRQ // card_rx: RQ WQE reads
	CardWriteTx    = gen.CardWrMasterTx // card_tx: transmit stream ring writes
	CardWritePl    = gen.CardWrMasterPl // card_rx: placed payload (placement's and the Sends')
	CardWriteCQ    = gen.CardWrMasterCQ // card_cq: CQEs and EQEs
	CardWriteSt    = gen.CardWrMasterSt // card_stat: QP status records
	CardIDSrcShift = 6                  // m_axi_*id >> CardIDSrcShift is the source
)

// CardConfig is the simulated host around the card.
type CardConfig struct {
	Width int    // data path: 64 or 512
	Seed  uint64 // the host's randomness (latency, order, backpressure)
	// Mem is host memory as the card's DMA reaches it; an access it
	// refuses (an IOMMU fault) is answered SLVERR and reported to Fault.
	Mem Memory
	// Timing is how host memory answers the card's AXI4 master: read and
	// write latency with jitter, reordering and interleaving across IDs,
	// backpressure (AXIHost).
	Timing AXITiming
	// Interrupt is called (inside the call that clocks the card) for each
	// interrupt the card raises, with its vector; IRQBackpressure is the
	// chance out of 256 that irq_ready is low in a cycle.
	Interrupt       func(vector int)
	IRQBackpressure int
	// Fault is called (inside the call that clocks the card) for each
	// access Mem refused.
	Fault func(AXIFault)
	// Vectors, if not nil, gets every cycle's inputs and the card's
	// outputs, reset included, in the format of the GHDL test bench
	// (Bench.RunGHDL): the Verilated card becomes the reference its VHDL
	// is run against. Flush it with FlushVectors.
	Vectors io.Writer
}

// Card is the Verilated card iwcard_w<Width> with a simulated host: BAR0
// accesses as blocking AXI4-Lite transactions, host memory behind an
// AXIHost (latency, reordering, backpressure, IOMMU faults), interrupts
// by callback, and the AXI rules the card promises checked every cycle
// (INCR bursts of whole beats, beat aligned, never crossing 4 KiB, payload
// held under valid until taken, W after its address, wlast). A Card is not
// safe for concurrent use: a wrapper serialises calls; the callbacks run
// inside the calls that clock the card and must not call the Card.
type Card struct {
	cfg   CardConfig
	lanes int
	inst  *Instance
	p     cardPorts
	in    []uint32
	out   []uint32
	rng   Rand
	host  *AXIHost
	st    CardStats

	// AXI4-Lite master state: the access in progress.
	lw, lr              bool
	lwAW, lwW, lrAR     bool
	lAddr, lData, lStrb uint32
	lDone               bool
	lResp, lRData       uint32

	// Payload of a valid the host did not take last cycle.
	holdAR, holdAW, holdW bool
	prevAR, prevAW        [4]uint64
	prevW, beat           []byte
	prevWStrb, prevWLast  uint64
	faults                int
	busy                  bool // a burst was started since the last Run
	vec                   *vectorRecorder

	err error // sticky protocol error
}

// CardStats counts what the host saw.
type CardStats struct {
	Cycles                  uint64
	ReadBursts, ReadBeats   uint64
	WriteBursts, WriteBeats uint64
	Interrupts              uint64
	Faults                  uint64
}

type cardPorts struct {
	rst                                                 Port
	awAddr, awValid, awReady, wData, wStrb, wValid      Port
	wReady, bResp, bValid, bReady, arAddr, arValid      Port
	arReady, rData, rResp, rValid, rReady               Port
	mARID, mARAddr, mARLen, mARSize, mARBurst, mARValid Port
	mARRdy, mAWID, mAWAddr, mAWLen, mAWSize, mAWBurst   Port
	mAWValid, mAWRdy, mWData, mWStrb, mWLast, mWValid   Port
	mWReady                                             Port
	irqValid, irqReady, irqVector                       Port
}

// CardRegTimeout bounds a BAR0 access, in cycles.
const CardRegTimeout = 1 << 16

// NewCard loads iwcard_w<cfg.Width> (built by make hw-sim-libs) and holds
// it in reset for 8 cycles; the card then clears its tables (STATUS
// INIT_DONE), which a driver polls as on a board.
func NewCard(cfg CardConfig) (*Card, error) {
	m, err := gen.CardTop(cfg.Width)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCard, err)
	}
	if cfg.Mem == nil {
		return nil, fmt.Errorf("%w: no host memory (CardConfig.Mem)", ErrCard)
	}
	l := LayoutOf(m)
	lib, err := loadFor(m.Name, l)
	if err != nil {
		return nil, err
	}
	host, err := NewAXIHost(l, "m_axi_", cfg.Mem, cfg.Timing, cfg.Seed)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCard, err)
	}
	s := &portSet{l: l}
	var p cardPorts
	p.rst = s.in("rst")
	p.awAddr, p.awValid, p.awReady = s.in("s_axil_awaddr"), s.in("s_axil_awvalid"), s.out("s_axil_awready")
	p.wData, p.wStrb, p.wValid, p.wReady = s.in("s_axil_wdata"), s.in("s_axil_wstrb"), s.in("s_axil_wvalid"), s.out("s_axil_wready")
	p.bResp, p.bValid, p.bReady = s.out("s_axil_bresp"), s.out("s_axil_bvalid"), s.in("s_axil_bready")
	p.arAddr, p.arValid, p.arReady = s.in("s_axil_araddr"), s.in("s_axil_arvalid"), s.out("s_axil_arready")
	p.rData, p.rResp, p.rValid, p.rReady = s.out("s_axil_rdata"), s.out("s_axil_rresp"), s.out("s_axil_rvalid"), s.in("s_axil_rready")
	p.mARID, p.mARAddr, p.mARLen, p.mARSize, p.mARBurst = s.out("m_axi_arid"), s.out("m_axi_araddr"), s.out("m_axi_arlen"), s.out("m_axi_arsize"), s.out("m_axi_arburst")
	p.mARValid, p.mARRdy = s.out("m_axi_arvalid"), s.in("m_axi_arready")
	p.mAWID, p.mAWAddr, p.mAWLen, p.mAWSize, p.mAWBurst = s.out("m_axi_awid"), s.out("m_axi_awaddr"), s.out("m_axi_awlen"), s.out("m_axi_awsize"), s.out("m_axi_awburst")
	p.mAWValid, p.mAWRdy = s.out("m_axi_awvalid"), s.in("m_axi_awready")
	p.mWData, p.mWStrb, p.mWLast, p.mWValid, p.mWReady = s.out("m_axi_wdata"), s.out("m_axi_wstrb"), s.out("m_axi_wlast"), s.out("m_axi_wvalid"), s.in("m_axi_wready")
	p.irqValid, p.irqReady, p.irqVector = s.out("irq_valid"), s.in("irq_ready"), s.out("irq_vector")
	if s.err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCard, s.err)
	}
	L := cfg.Width / 8
	c := &Card{cfg: cfg, lanes: L, inst: lib.New(), p: p, in: make([]uint32, l.InWords), out: make([]uint32, l.OutWords),
		rng: NewRand(cfg.Seed ^ 0x5eed), host: host, beat: make([]byte, L), prevW: make([]byte, L)}
	if cfg.Vectors != nil {
		c.vec = newVectorRecorder(cfg.Vectors, l)
	}
	p.rst.Set(c.in, 1)
	for i := 0; i < 8; i++ {
		if err := c.run(c.in); err != nil {
			c.inst.Close()
			return nil, err
		}
	}
	p.rst.Set(c.in, 0)
	return c, nil
}

// run clocks the card once with inputs in, and records the cycle if asked
// (CardConfig.Vectors).
func (c *Card) run(in []uint32) error {
	if err := c.inst.Run(in, c.out); err != nil {
		return err
	}
	return c.vec.record(in, c.out)
}

// FlushVectors writes out the cycles recorded for CardConfig.Vectors.
func (c *Card) FlushVectors() error {
	return c.vec.flush()
}

// Close frees the simulation.
func (c *Card) Close() {
	if c.inst != nil {
		c.inst.Close()
		c.inst = nil
	}
}

// Width is the data path width in bits.
func (c *Card) Width() int { return c.cfg.Width }

// Describe says what runs, for humans.
func (c *Card) Describe() string {
	return fmt.Sprintf("iwcard_w%d (Verilator, hw/sim.Card)", c.cfg.Width)
}

// Stats returns the counts so far.
func (c *Card) Stats() CardStats {
	s := c.st
	h := c.host
	s.ReadBursts, s.ReadBeats, s.WriteBursts, s.WriteBeats = h.ReadBursts, h.ReadBeats, h.WriteBursts, h.WriteBeats
	s.Faults = uint64(len(h.Faults))
	return s
}

// Cycles is the number of cycles run since NewCard (reset excluded).
func (c *Card) Cycles() uint64 { return c.st.Cycles }

// Outstanding is the DMA bursts the card has issued and the host has not
// finished answering.
func (c *Card) Outstanding() int { return c.host.Outstanding() }

// Step runs n cycles. It returns the first AXI protocol violation the
// card made (an ErrAXI, sticky: every later call returns it too).
func (c *Card) Step(n int) error {
	for ; n > 0; n-- {
		if err := c.cycle(); err != nil {
			return err
		}
	}
	return nil
}

// Run clocks the card for cycles cycles and reports whether it was busy:
// DMA bursts in flight, or started, during the run (simcard's Device).
func (c *Card) Run(cycles int) (busy bool, err error) {
	c.busy = c.host.Outstanding() > 0
	err = c.Step(cycles)
	return c.busy || c.host.Outstanding() > 0, err
}

// RunUntil steps until done() is true (checked before each cycle), at most
// limit cycles.
func (c *Card) RunUntil(done func() bool, limit uint64) error {
	for k := uint64(0); !done(); k++ {
		if k >= limit {
			return fmt.Errorf("%w: condition not met in %d cycles", ErrStuck, limit)
		}
		if err := c.cycle(); err != nil {
			return err
		}
	}
	return nil
}

// RegWrite writes a BAR0 register (all four byte strobes) and clocks the
// card until the write's response; SLVERR or DECERR is a *RegRespError.
func (c *Card) RegWrite(off, v uint32) error { return c.RegWriteStrb(off, v, 0xf) }

// Write32 is RegWrite (simcard's Device).
func (c *Card) Write32(off, v uint32) error { return c.RegWrite(off, v) }

// Read32 is RegRead (simcard's Device).
func (c *Card) Read32(off uint32) (uint32, error) { return c.RegRead(off) }

// RegWriteStrb writes a BAR0 register with byte strobes strb.
func (c *Card) RegWriteStrb(off, v uint32, strb uint8) error {
	if c.err != nil {
		return c.err
	}
	c.lw, c.lwAW, c.lwW, c.lDone = true, false, false, false
	c.lAddr, c.lData, c.lStrb = off, v, uint32(strb&0xf)
	if err := c.access("write", off); err != nil {
		return err
	}
	if c.lResp != 0 {
		return &RegRespError{Write: true, Off: off, Resp: c.lResp}
	}
	return nil
}

// RegRead reads a BAR0 register, clocking the card until the data comes.
func (c *Card) RegRead(off uint32) (uint32, error) {
	if c.err != nil {
		return 0, c.err
	}
	c.lr, c.lrAR, c.lDone = true, false, false
	c.lAddr = off
	if err := c.access("read", off); err != nil {
		return 0, err
	}
	if c.lResp != 0 {
		return c.lRData, &RegRespError{Off: off, Resp: c.lResp}
	}
	return c.lRData, nil
}

// access clocks the card until the AXI4-Lite access set up completes.
func (c *Card) access(op string, off uint32) error {
	for k := 0; !c.lDone; k++ {
		if k >= CardRegTimeout {
			c.lw, c.lr = false, false
			return fmt.Errorf("%w: BAR0 %s at %#x not answered in %d cycles", ErrStuck, op, off, CardRegTimeout)
		}
		if err := c.cycle(); err != nil {
			return err
		}
	}
	return nil
}

func (c *Card) protoErr(format string, a ...any) error {
	if c.err == nil {
		c.err = fmt.Errorf("%w: iwcard cycle %d: %s", ErrAXI, c.st.Cycles, fmt.Sprintf(format, a...))
	}
	return c.err
}

// cycle drives one cycle: the inputs from the host's state, the RTL's
// step, then what was taken.
func (c *Card) cycle() error {
	if c.err != nil {
		return c.err
	}
	p, in := &c.p, c.in
	c.st.Cycles++

	// AXI4-Lite master.
	p.awValid.Set(in, b2u(c.lw && !c.lwAW))
	p.wValid.Set(in, b2u(c.lw && !c.lwW))
	p.awAddr.Set(in, uint64(c.lAddr))
	p.wData.Set(in, uint64(c.lData))
	p.wStrb.Set(in, uint64(c.lStrb))
	p.bReady.Set(in, b2u(c.lw))
	p.arValid.Set(in, b2u(c.lr && !c.lrAR))
	p.arAddr.Set(in, uint64(c.lAddr))
	p.rReady.Set(in, b2u(c.lr))
	p.irqReady.Set(in, b2u(c.cfg.IRQBackpressure <= 0 || !c.rng.Chance(c.cfg.IRQBackpressure)))
	c.host.Drive(in)

	if err := c.run(in); err != nil {
		return err
	}
	out := c.out

	if c.lw {
		c.lwAW = c.lwAW || p.awValid.Get(in) != 0 && p.awReady.Get(out) != 0
		c.lwW = c.lwW || p.wValid.Get(in) != 0 && p.wReady.Get(out) != 0
		if p.bValid.Get(out) != 0 {
			c.lw, c.lDone, c.lResp = false, true, uint32(p.bResp.Get(out))
		}
	}
	if c.lr {
		c.lrAR = c.lrAR || p.arValid.Get(in) != 0 && p.arReady.Get(out) != 0
		if p.rValid.Get(out) != 0 {
			c.lr, c.lDone, c.lResp, c.lRData = false, true, uint32(p.rResp.Get(out)), uint32(p.rData.Get(out))
		}
	}
	if p.irqValid.Get(out) != 0 && p.irqReady.Get(in) != 0 {
		c.st.Interrupts++
		if c.cfg.Interrupt != nil {
			c.cfg.Interrupt(int(p.irqVector.Get(out)))
		}
	}
	if err := c.check(in, out); err != nil {
		return err
	}
	if err := c.host.Observe(in, out); err != nil {
		if c.err == nil {
			c.err = fmt.Errorf("iwcard: %w", err)
		}
		return c.err
	}
	for ; c.faults < len(c.host.Faults); c.faults++ {
		if c.cfg.Fault != nil {
			c.cfg.Fault(c.host.Faults[c.faults])
		}
	}
	return nil
}

// check applies the AXI rules the card promises beyond AXIHost's own:
// a raised valid holds its payload until taken; INCR bursts of whole
// beats, aligned to a beat (AXIHost checks 4 KiB, W order and wlast).
func (c *Card) check(in, out []uint32) error {
	p := &c.p
	arv := p.mARValid.Get(out) != 0
	ar := [4]uint64{p.mARID.Get(out), p.mARAddr.Get(out), p.mARLen.Get(out), p.mARSize.Get(out)<<8 | p.mARBurst.Get(out)}
	if c.holdAR && (!arv || ar != c.prevAR) {
		return c.protoErr("AR changed or dropped before it was taken (was ID %#x addr %#x len %d)", c.prevAR[0], c.prevAR[1], c.prevAR[2])
	}
	c.holdAR, c.prevAR = arv && p.mARRdy.Get(in) == 0, ar
	if arv {
		c.busy = true
		if err := c.checkBurst("read", ar); err != nil {
			return err
		}
	}
	awv := p.mAWValid.Get(out) != 0
	aw := [4]uint64{p.mAWID.Get(out), p.mAWAddr.Get(out), p.mAWLen.Get(out), p.mAWSize.Get(out)<<8 | p.mAWBurst.Get(out)}
	if c.holdAW && (!awv || aw != c.prevAW) {
		return c.protoErr("AW changed or dropped before it was taken (was ID %#x addr %#x len %d)", c.prevAW[0], c.prevAW[1], c.prevAW[2])
	}
	c.holdAW, c.prevAW = awv && p.mAWRdy.Get(in) == 0, aw
	if awv {
		c.busy = true
		if err := c.checkBurst("write", aw); err != nil {
			return err
		}
	}
	wv := p.mWValid.Get(out) != 0
	if c.holdW {
		p.mWData.Bytes(out, c.beat)
		if !wv || string(c.beat) != string(c.prevW) || p.mWStrb.Get(out) != c.prevWStrb || p.mWLast.Get(out) != c.prevWLast {
			return c.protoErr("W beat changed or dropped before it was taken")
		}
	}
	c.holdW = wv && p.mWReady.Get(in) == 0
	if c.holdW {
		p.mWData.Bytes(out, c.prevW)
		c.prevWStrb, c.prevWLast = p.mWStrb.Get(out), p.mWLast.Get(out)
	}
	return nil
}

func (c *Card) checkBurst(what string, a [4]uint64) error {
	L := uint64(c.lanes)
	id, addr, sizeBurst := a[0], a[1], a[3]
	switch {
	case sizeBurst&3 != 1:
		return c.protoErr("%s ID %#x at %#x: burst type %d, not INCR", what, id, addr, sizeBurst&3)
	case 1<<(sizeBurst>>8) != L:
		return c.protoErr("%s ID %#x at %#x: beats of %d bytes on a %d-byte bus", what, id, addr, 1<<(sizeBurst>>8), L)
	case addr%L != 0:
		return c.protoErr("%s ID %#x at %#x: not aligned to a beat", what, id, addr)
	}
	return nil
}
